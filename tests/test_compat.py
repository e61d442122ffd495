"""ember.compat: programs written for JAX run on ember through `python -m ember`,
ember.compat.install() or EMBER_AS_JAX=1 (each in a fresh process: the alias is global)."""
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(args, tmp_path, env_extra=None, code=None):
  env = dict(os.environ, PYTHONPATH=REPO)
  env.pop("EMBER_AS_JAX", None)
  env.update(env_extra or {})
  if code is not None:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(code))
    args = [a.replace("{script}", str(script)) for a in args]
  return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                        cwd=tmp_path, timeout=300)


JAX_PROGRAM = """
import sys
import jax, jax.numpy as jnp
from jax import lax, random
import jax.scipy.linalg
from jax.tree_util import tree_map
from jax.sharding import PartitionSpec as P
from jax.experimental import disable_x64
import ember

@jax.jit
def f(x):
  return lax.fori_loop(0, 3, lambda i, c: c + jnp.sin(x), jnp.zeros_like(x))

print("out", f(jnp.arange(3.0)).tolist())
print("grad", float(jax.grad(lambda x: jnp.sum(x ** 2))(jnp.float32(3.0))))
print("modules", jnp is ember.numpy, lax is ember.lax, jax.scipy.linalg is ember.scipy.linalg,
      jax.jit is ember.jit, tree_map is ember.tree_util.tree_map)
print("version", jax.__version__, jax.__version_info__, jax.version.__version__,
      jax.version.__version_info__)
print("ember", ember.__version__, ember.numpy.__spec__.name, ember.numpy.__name__)
print("argv", sys.argv[1:], __name__)
with jax.enable_x64(True):   # JAX 0.12's spelling
  with disable_x64():         # older JAX's jax.experimental one
    print("x64", jnp.zeros(1).dtype, end=",")
  print(jnp.zeros(1).dtype)
"""


def check_program_output(out: str):
  import ember
  lines = dict(line.split(" ", 1) for line in out.strip().splitlines())
  import numpy as np
  np.testing.assert_allclose(eval(lines["out"]), 3 * np.sin(np.arange(3.0)), rtol=1e-6)
  assert lines["grad"] == "6.0"
  assert lines["modules"] == "True True True True True"
  assert lines["version"] == "0.12.0 (0, 12, 0) 0.12.0 (0, 12, 0)"
  assert lines["ember"] == f"{ember.__version__} ember.numpy ember.numpy"
  assert lines["x64"] == "float32,float64"
  return lines


def test_python_m_ember_runs_a_jax_script(tmp_path):
  r = run_python(["-m", "ember", "{script}", "a", "--b"], tmp_path, code=JAX_PROGRAM)
  assert r.returncode == 0, r.stderr[-3000:]
  lines = check_program_output(r.stdout)
  assert lines["argv"] == "['a', '--b'] __main__"


def test_python_m_ember_runs_a_module(tmp_path):
  (tmp_path / "jaxprog.py").write_text(textwrap.dedent(JAX_PROGRAM))
  r = run_python(["-m", "ember", "-m", "jaxprog", "x"], tmp_path,
                 env_extra={"PYTHONPATH": f"{REPO}{os.pathsep}{tmp_path}"})
  assert r.returncode == 0, r.stderr[-3000:]
  assert check_program_output(r.stdout)["argv"] == "['x'] __main__"


def test_install_in_process_and_env_var(tmp_path):
  code = "import ember.compat; ember.compat.install()\n" + JAX_PROGRAM
  r = run_python(["{script}"], tmp_path, code=code)
  assert r.returncode == 0, r.stderr[-3000:]
  check_program_output(r.stdout)
  r = run_python(["{script}"], tmp_path, env_extra={"EMBER_AS_JAX": "1"},
                 code="import ember\n" + JAX_PROGRAM)
  assert r.returncode == 0, r.stderr[-3000:]
  check_program_output(r.stdout)


def test_usage_without_a_script(tmp_path):
  r = run_python(["-m", "ember"], tmp_path)
  assert r.returncode == 2 and "usage: python -m ember script.py" in r.stderr


def test_private_jax_modules_fail_with_a_clear_error(tmp_path):
  # jax._src.core has a stand-in (ember._jax_src.core); these have none
  r = run_python(["-m", "ember", "{script}"], tmp_path, code="""
      for name in ("jax._src.lax.lax", "jax._src.api"):
        try:
          __import__(name)
        except ImportError as e:
          print(type(e).__name__, e.name, "|", e)
      import jax
      try:
        jax._src.pjit
      except AttributeError as e:
        print("AttributeError jax._src.pjit |", e)
      try:
        import jax.no_such_module
      except ImportError as e:
        print(type(e).__name__, e)
      """)
  assert r.returncode == 0, r.stderr[-3000:]
  lines = r.stdout.strip().splitlines()
  # the missing parent package is the one named
  starts = ["ImportError jax._src.lax |", "ImportError jax._src.api |",
            "AttributeError jax._src.pjit |"]
  for line, start in zip(lines[:3], starts):
    assert line.startswith(start)
    assert "private module of JAX" in line and "does not provide JAX's internals" in line
  assert lines[3] == ("ModuleNotFoundError No module named 'jax.no_such_module': ember stands "
                      "in for jax (ember.compat) and has no ember.no_such_module")


def test_install_after_real_jax_was_imported_names_the_cause(tmp_path):
  r = run_python(["{script}"], tmp_path, code="""
      import sys, types
      sys.modules["jax"] = types.ModuleType("jax")   # stands in for the real JAX
      import ember.compat
      try:
        ember.compat.install()
      except RuntimeError as e:
        print(e)
      """)
  assert r.returncode == 0, r.stderr[-3000:]
  assert "the real JAX is already imported" in r.stdout
  assert "sys.modules['jax'] is <module 'jax'" in r.stdout
  assert "python -m ember script.py" in r.stdout


def test_a_real_jax_array_reaching_ember_says_jax_was_imported_beside_it():
  import ember
  import ember.numpy as jnp
  ArrayImpl = type("ArrayImpl", (), {"__module__": "jaxlib._jax"})  # a real JAX array's type
  hint = (r"real JAX, which was imported beside ember .*`import ember.numpy as jnp`.*"
          r"python -m ember script.py")
  with pytest.raises(TypeError, match=r"sin: the argument at position 0, of type ArrayImpl "
                     r"\(from jaxlib._jax\), is not a valid ember type: it is an array of the "
                     + hint):
    jnp.sin(ArrayImpl())
  with pytest.raises(TypeError, match=r"ArrayImpl \(from jaxlib._jax\) is not a valid ember "
                     r"type: it is an array of the " + hint):
    ember.jit(lambda x: x)(ArrayImpl())
  for transform in (ember.grad, ember.vmap):
    with pytest.raises(TypeError, match="is not a valid JAX type: it is an array of the " + hint):
      transform(lambda x: x)(ArrayImpl())


def test_versions():
  import ember
  from ember._src.base.version import __version__
  assert ember.__version__ == __version__
  assert ember.__version_info__ == tuple(int(p) for p in __version__.split("."))
  assert ember.__jax_version__ == "0.12.0"
