"""Settings read before the first JAX operation, and the module-level names libraries' test
suites import (issue 32): jax_num_cpu_devices (and XLA_FLAGS set after import, as
chex.set_n_cpu_devices does) fixed at the CPU backend's first use, jax._src.xla_bridge,
jax.lib, jax.experimental.mesh_utils, config.parse_flags_with_absl, jax.checking_leaks /
jax.check_tracer_leaks, jax._src.util.

The device count is fixed once per process, so those tests run in a subprocess. Expected
values and messages are JAX 0.12.1's (CPU)."""
import gc
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
from unittest import mock

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import compat
from ember._src.base.config import config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(code: str, as_jax: bool = False, **env_extra) -> list[str]:
  """Run `code` in a fresh process (under `python -m ember` when as_jax); its stdout lines."""
  env = dict(os.environ, PYTHONPATH=REPO)
  for k in ("EMBER_AS_JAX", "EMBER_NUM_CPU_DEVICES", "XLA_FLAGS", "JAX_NUM_CPU_DEVICES",
            "JAX_CHECK_TRACER_LEAKS"):
    env.pop(k, None)
  env.update(env_extra)
  with tempfile.TemporaryDirectory() as tmp:
    script = os.path.join(tmp, "prog.py")
    with open(script, "w") as f:
      f.write(textwrap.dedent(code))
    args = ["-m", "ember", script] if as_jax else [script]
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                         timeout=300, cwd=tmp)
  assert out.returncode == 0, out.stderr[-3000:]
  return out.stdout.strip().splitlines()


# --- jax_num_cpu_devices ---------------------------------------------------------------

def test_num_cpu_devices_before_first_use():
  lines = run("""
      import numpy as np
      import ember as jax, ember.numpy as jnp
      from ember._src.base import flags
      print(flags.cpu_backend_started())
      f = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")  # making one starts nothing
      print(flags.cpu_backend_started())
      jax.config.update("jax_num_cpu_devices", 2)
      print(jax.devices(), jax.device_count(), jax.local_device_count())
      print(f(jnp.arange(2.0)).tolist())
      print(jax.jit(lambda x: f(x) * 2)(jnp.arange(2.0)).tolist())
      jax.config.update("jax_num_cpu_devices", 2)   # the same value: allowed, as in JAX
      try:
        jax.config.update("jax_num_cpu_devices", 3)
      except RuntimeError as e:
        print(str(e).split(":")[0])
      print(jax.config.jax_num_cpu_devices, len(jax.devices()))
      """)
  assert lines == [
      "False", "False", "[CpuDevice(id=0), CpuDevice(id=1)] 2 2", "[1.0, 1.0]", "[2.0, 2.0]",
      "jax_num_cpu_devices config should be updated before backends are initialized, i.e. "
      "before any JAX operation is executed", "2 2"]


def test_num_cpu_devices_after_a_jitted_call_raises():
  lines = run("""
      import ember as jax, ember.numpy as jnp
      jax.jit(lambda x: x + 1)(jnp.ones(3)).block_until_ready()
      try:
        jax.config.update("jax_num_cpu_devices", 2)
      except RuntimeError as e:
        print("RuntimeError", "right after `import jax`" in str(e))
      print(len(jax.devices()))
      """)
  assert lines == ["RuntimeError True", "1"]


def test_num_cpu_devices_wins_over_xla_flags_and_env():
  code = """
      import ember as jax
      jax.config.update("jax_num_cpu_devices", 2)
      print(len(jax.devices()))
      """
  assert run(code, XLA_FLAGS="--xla_force_host_platform_device_count=4") == ["2"]
  assert run("import ember as jax; print(len(jax.devices()), jax.config.jax_num_cpu_devices)",
             JAX_NUM_CPU_DEVICES="3") == ["3 3"]
  assert run("import ember as jax; print(len(jax.devices()))",
             XLA_FLAGS="--xla_force_host_platform_device_count=4") == ["4"]


@pytest.mark.parametrize("value, error", [
    ("2", "must be None or an int"), (2.0, "must be None or an int"),
    (True, "must be None or an int"), (0, "at least one device")])
def test_num_cpu_devices_bad_values(value, error):
  with pytest.raises(ValueError, match=error):
    jax.config.update("jax_num_cpu_devices", value)


def test_num_cpu_devices_once_started_in_this_process():
  jax.devices()   # started
  assert jax.config.jax_num_cpu_devices == -1
  jax.config.update("jax_num_cpu_devices", -1)   # unchanged: no error
  with pytest.raises(RuntimeError, match="before backends are initialized"):
    jax.config.update("jax_num_cpu_devices", len(jax.devices()) + 1)


def test_pmap_too_many_devices_names_the_option():
  with pytest.raises(ValueError, match="jax_num_cpu_devices"):
    jax.pmap(lambda x: x)(jnp.ones((len(jax.devices()) + 1, 2)))


# --- chex.set_n_cpu_devices: XLA_FLAGS after import, jax._src.xla_bridge ----------------

def test_xla_flags_set_after_import_count_until_first_use():
  lines = run("""
      import os, re
      import jax
      xb = jax._src.xla_bridge   # an attribute, as chex reads it, before any import of it
      print(xb._backends, xb.backends_are_initialized())
      os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=3"
      print(len(jax.devices()), list(xb._backends), xb.backends_are_initialized())
      os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=5"
      print(len(jax.devices()), xb.get_backend().device_count(), xb.device_count())
      import jax.lib
      print(jax.lib.__version__ == jax.__version__)
      """, as_jax=True)
  assert lines == ["{} False", "3 ['cpu'] True", "3 3 3", "True"]


def test_chex_set_n_cpu_devices():
  if importlib.util.find_spec("chex") is None:   # not imported here: it imports jax
    pytest.skip("chex is not installed")
  lines = run("""
      import jax, chex
      chex.set_n_cpu_devices(3)
      chex.set_n_cpu_devices(4)   # before the first use: may change
      print(len(jax.devices()))
      try:
        chex.set_n_cpu_devices(2)
      except RuntimeError as e:
        print(str(e)[:41])
      """, as_jax=True)
  assert lines == ["4", "Attempted to set 2 devices, but 4 CPUs al"]


# --- jax.experimental.mesh_utils ------------------------------------------------------

def test_create_device_mesh_on_four_devices():
  lines = run("""
      import ember as jax
      from ember.experimental import mesh_utils
      jax.config.update("jax_num_cpu_devices", 4)
      m = mesh_utils.create_device_mesh((2, 2))
      print(m.shape, m.dtype, [d.id for d in m.ravel()])
      print([d.id for d in mesh_utils.create_device_mesh([2, 2], jax.devices()[::-1]).ravel()])
      print(mesh_utils.create_hybrid_device_mesh((2, 2), (1, 1), jax.devices(),
                                                 process_is_granule=True).shape)
      mesh = jax.sharding.Mesh(mesh_utils.create_device_mesh((4,)), ("data",))
      x = jax.device_put(jax.numpy.arange(8.0), jax.sharding.NamedSharding(
          mesh, jax.sharding.PartitionSpec("data")))
      print(len(x.addressable_shards), float(jax.jit(lambda v: (v * 2).sum())(x)))
      """)
  assert lines == ["(2, 2) object [0, 1, 2, 3]", "[3, 2, 1, 0]", "(2, 2)", "4 56.0"]


def test_create_device_mesh_errors():
  from ember.experimental import mesh_utils
  n = len(jax.devices())
  with pytest.raises(ValueError, match=rf"Number of devices {n} must equal the product of "
                                       r"mesh_shape \(7,\)"):
    mesh_utils.create_device_mesh((7,))
  with pytest.raises(ValueError, match="should be a sequence of ints"):
    mesh_utils.create_device_mesh(("a",))
  # JAX's CPU devices have no slice_index either
  with pytest.raises(ValueError, match="does not have attribute slice_index"):
    mesh_utils.create_hybrid_device_mesh((n,), (1,))
  with pytest.raises(ValueError, match=r"Number of slices 1 must equal the product of "
                                       r"dcn_mesh_shape \(2,\)"):
    mesh_utils.create_hybrid_device_mesh((n,), (2,), process_is_granule=True)
  assert mesh_utils.create_device_mesh((n,)).tolist() == jax.devices()


class _FakeDevice:
  device_kind, platform = "cpu", "cpu"

  def __init__(self, id, process_index):
    self.id, self.process_index = id, process_index

  def __repr__(self):
    return f"D{self.id}"


def test_create_hybrid_device_mesh_granules():
  # expected: JAX 0.12.1 on the same device lists
  from ember.experimental import mesh_utils
  ds = [_FakeDevice(i, i // 2) for i in range(4)]
  hybrid = lambda *a, **k: [[repr(d) for d in row] for row in
                            mesh_utils.create_hybrid_device_mesh(
                                *a, process_is_granule=True, **k).tolist()]
  assert hybrid((2, 1), (2, 1), ds) == [["D0"], ["D1"], ["D2"], ["D3"]]
  assert hybrid((1, 2), (1, 2), ds) == [["D0", "D1", "D2", "D3"]]
  assert hybrid((1, 2), (2, 1), ds[::-1]) == [["D1", "D0"], ["D3", "D2"]]
  assert hybrid((1, 2), (2, 1), ds[::-1], should_sort_granules_by_key=False) == [
      ["D3", "D2"], ["D1", "D0"]]


# --- parse_flags_with_absl ------------------------------------------------------------

def test_parse_flags_with_absl():
  saved = config.values()
  try:
    config.parse_flags_with_absl([
        "--jax_enable_x64", "--other", "--jax_numpy_rank_promotion=raise",
        "--jax_default_matmul_precision", "highest", "--nojax_disable_jit",
        "--jax_no_such_option=1", "--", "--jax_disable_jit"])
    assert config.jax_enable_x64 is True
    assert config.jax_numpy_rank_promotion == "raise"
    assert config.jax_default_matmul_precision == "highest"
    assert config.jax_disable_jit is False
    config.parse_flags_with_absl(["--jax_enable_x64=false"])
    assert config.jax_enable_x64 is False
    with pytest.raises(ValueError, match="jax_numpy_rank_promotion must be"):
      config.parse_flags_with_absl(["--jax_numpy_rank_promotion=sometimes"])
    with pytest.raises(ValueError, match="expected true or false"):
      config.parse_flags_with_absl(["--jax_enable_x64=maybe"])
    config.parse_flags_with_absl()   # pytest's argv: nothing to set
  finally:
    for k, v in saved.items():
      config._set(k, v)


def test_parse_flags_with_absl_from_the_command_line():
  lines = run("""
      import sys
      sys.argv[1:] = ["--jax_enable_x64", "--jax_num_cpu_devices=2"]
      import ember as jax
      jax.config.parse_flags_with_absl()
      print(jax.config.jax_enable_x64, len(jax.devices()), jax.numpy.ones(2).dtype)
      """)
  assert lines == ["True 2 float64"]


# --- checking_leaks --------------------------------------------------------------------

def test_checking_leaks_finds_a_leaked_tracer():
  leak = []

  def f(x):
    leak.append(x)
    return x * 2

  for transform in (jax.jit, jax.vmap, jax.grad):
    leak.clear()
    with pytest.raises(jax.errors.UnexpectedTracerError,
                       match=r"(?s)Leaked trace .*referred to by a list, at index 0"):
      with jax.checking_leaks():
        transform(f)(jnp.ones(()) if transform is not jax.vmap else jnp.ones(3))
  leak.clear()
  assert config.jax_check_tracer_leaks is False
  jax.jit(f)(1.0)   # the check is off again: no error
  leak.clear()


def test_no_leak_reported_for_clean_code_even_without_gc():
  # flax's test patches gc.collect out: ember's own reference cycles must not keep tracers
  def g(x):
    return jnp.sin(x) * 2

  @jax.custom_jvp
  def softplus(x):
    return jnp.log1p(jnp.exp(x))
  softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * jax.nn.sigmoid(p[0])))

  with mock.patch.object(gc, "collect", return_value=0), jax.checking_leaks():
    for _ in range(2):
      jax.jit(jax.vmap(softplus))(jnp.ones(3))   # (flax's LeakTests: a custom_jvp in a jit)
      jax.jit(g)(1.0)
      jax.grad(g)(1.0)
      jax.jit(jax.grad(g))(2.0)
      jax.jit(jax.vmap(jax.grad(g)))(jnp.ones(3))
      jax.linearize(g, 1.0)
      jax.lax.scan(lambda c, x: (c + g(x), c), 0.0, jnp.ones(3))
      jax.jit(lambda x: jax.lax.fori_loop(0, 3, lambda i, c: c + g(c), x))(1.0)


def test_check_tracer_leaks_off_inside_checking():
  leak = []
  with jax.checking_leaks():
    with jax.check_tracer_leaks(False):
      jax.jit(lambda x: leak.append(x) or x)(1.0)
    assert config.jax_check_tracer_leaks is True


# --- jax._src.util ---------------------------------------------------------------------

@pytest.fixture
def alias():
  compat.install()
  yield
  compat.uninstall()


def test_jax_src_util(alias):
  from jax._src.util import (merge_lists, partition_list, safe_map, safe_zip, split_list,
                             unzip2, unzip3)
  assert safe_map(lambda a, b: a + b, [1, 2], (3, 4)) == [4, 6]
  assert safe_zip([1, 2], "ab") == [(1, "a"), (2, "b")]
  with pytest.raises(ValueError, match="argument 1 has length 1 but argument 0 has length 2"):
    safe_zip([1, 2], [3])
  with pytest.raises(ValueError, match="safe_map"):
    safe_map(lambda a, b: a, [1, 2], [3])
  assert unzip2([]) == ((), ()) and unzip2([(1, 2), (3, 4)]) == ((1, 3), (2, 4))
  assert unzip3([(1, 2, 3)]) == ((1,), (2,), (3,))
  assert split_list([1, 2, 3], [1, 1]) == [[1], [2], [3]]
  assert split_list([1, 2, 3], [5]) == [[1, 2, 3], []]
  assert partition_list([True, False, True], [1, 2, 3]) == ([2], [1, 3])
  assert merge_lists([True, False, True], [2], [1, 3]) == [1, 2, 3]
  with pytest.raises(ValueError):
    merge_lists([True, False], [1], [2, 3])


def test_jax_lib_version(alias):
  import jax
  import jax.lib
  assert jax.lib.__version__ == jax.__version__
  assert np.all([hasattr(jax, n) for n in ("checking_leaks", "check_tracer_leaks")])
