"""Record the ecosystem programs' results with real JAX into tests/data/ecosystem/<name>.json.

Run from the repository root with an interpreter that has real JAX 0.12 and the libraries
pinned in requirements-ecosystem.txt (see docs/ecosystem.md):

    /work/jaxvenv312/bin/python tests/ecosystem/record.py            # every program
    /work/jaxvenv312/bin/python tests/ecosystem/record.py cnn_flax   # some

tests/test_ecosystem.py runs the same programs under ember (`python -m ember <program>`)
and compares with these files.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "ecosystem")
HELPERS = ("report", "record", "missing_names")


def programs():
  """The program names: every .py here but the helpers."""
  names = (f[:-3] for f in os.listdir(HERE) if f.endswith(".py"))
  return sorted(n for n in names if n not in HELPERS)


def run(name, out):
  """Run one program with this interpreter on the CPU; it writes its JSON to `out`."""
  env = dict(os.environ, JAX_PLATFORMS="cpu")
  subprocess.run([sys.executable, os.path.join(HERE, name + ".py"), out], env=env, check=True)


def main(names):
  import jax
  os.makedirs(DATA, exist_ok=True)
  for name in names or programs():
    out = os.path.join(DATA, name + ".json")
    run(name, out)
    with open(out) as f:
      results = json.load(f)
    results["recorded_with"] = {"jax": jax.__version__, "python": sys.version.split()[0]}
    with open(out, "w") as f:
      f.write(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print("recorded", os.path.relpath(out))


if __name__ == "__main__":
  main(sys.argv[1:])
