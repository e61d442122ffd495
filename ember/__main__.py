"""`python -m ember script.py [args]` / `python -m ember -m module [args]`: run a JAX program
on ember. Every `import jax` (and `jax.numpy`, `jax.lax`, ...) inside it resolves to ember's
modules (ember.compat); the script runs as `__main__` with `sys.argv` = [script, *args]."""
import os
import runpy
import sys

from ember import compat

USAGE = ("usage: python -m ember script.py [args ...]\n"
         "       python -m ember -m module [args ...]\n"
         "Runs a program written for JAX with `import jax` resolved to ember.")


def main(argv: list[str]) -> None:
  if not argv or argv[0] in ("-h", "--help"):
    print(USAGE, file=sys.stderr if not argv else sys.stdout)
    sys.exit(2 if not argv else 0)
  compat.install()
  if argv[0] == "-m":
    if len(argv) < 2:
      sys.exit(USAGE)
    sys.argv = argv[1:]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py` does
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
  main(sys.argv[1:])
