"""Seed 002 §2.5 (avoiding recompilation) and §2.7 (asynchronous dispatch), statement by
statement, where tests/test_jit_cache.py, test_async_dispatch.py and test_persistent_cache.py
do not already cover them. Each test quotes the seed; expected values not stated by the seed
were checked against JAX 0.12.0.1.

Compilations are counted with seed 002's CompileCounter (a handler on logger "jax").
"""
import functools
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember._src.driver import compilation
from ember._src.base import persistent_cache
from ember._src.base.config import config

from test_async_dispatch import _heavy, _heavy_np, mats  # noqa: F401 - fixtures (gate: conftest)
from test_jit_cache import CompileCounter

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = jax.random.normal(jax.random.key(0), (10,))


# --- §2.5 avoiding recompilation --------------------------------------------------------------

def test_python_if_on_traced_argument_raises_tracer_bool_conversion_error():
  # §2.5 block A: "a Python if on a traced argument can't be traced, so the very first call
  # errors" -- assert err_a == "TracerBoolConversionError"
  @jax.jit
  def example_function(x, size_param):
    if size_param > 5:
      return jnp.sum(x * 2.0)
    return jnp.sum(x + 1.0)
  with CompileCounter("example_function") as cc:
    with pytest.raises(jax.errors.TracerBoolConversionError,
                       match="depends on the value of the argument size_param"):
      example_function(DATA, 3).block_until_ready()
  assert cc.count == 0          # it failed while tracing: nothing compiled


def test_static_argnums_compiles_once_per_static_value_and_traces_only_then(capsys):
  # §2.5 block B: "@jax.jit(static_argnums=(1,))" (decorator-factory form); the print "runs
  # only during tracing"; for sp in [3, 3, 7, 7]: assert cc.count == 2
  @jax.jit(static_argnums=(1,))
  def example_function_static(x, size_param):
    print(f"Compiling for size_param = {size_param}")
    if size_param > 5:
      return jnp.sum(x * 2.0)
    return jnp.sum(x + 1.0)
  outs = []
  with CompileCounter("example_function_static") as cc:
    for sp in [3, 3, 7, 7]:
      outs.append(example_function_static(DATA, sp).block_until_ready())
  assert cc.count == 2
  assert capsys.readouterr().out.splitlines() == ["Compiling for size_param = 3",
                                                  "Compiling for size_param = 7"]
  d = np.asarray(DATA, np.float64)
  np.testing.assert_allclose([float(o) for o in outs],
                             [np.sum(d + 1)] * 2 + [np.sum(d * 2)] * 2, rtol=1e-6)
  assert outs[0].dtype == np.float32 and not outs[0].weak_type


def test_x64_is_off_by_default_as_config_attribute():
  # §2.5 Strategy 2: "assert not jax.config.jax_enable_x64" (the default x32 mode in which a
  # float64 NumPy array hits the float32 entry: tests/test_jit_cache.py
  # test_weak_types_are_three_keys_and_f64_hits_f32)
  if "JAX_ENABLE_X64" not in os.environ:
    assert jax.config.jax_enable_x64 is False
  with jax.enable_x64():
    assert jax.config.jax_enable_x64 is True


def test_lax_cond_value_change_compiles_once():
  # §2.5 Strategy 3 (block C): lax.cond on a traced predicate; jnp.array(3) then jnp.array(7)
  # -> assert cc.count == 1; r3 == sum(data + 1), r7 == sum(data * 2) (rtol=1e-5)
  @jax.jit
  def example_function_lax(x, size_param_val):
    pred = size_param_val > 5
    return lax.cond(pred, lambda o: jnp.sum(o * 2.0), lambda o: jnp.sum(o + 1.0), x)
  with CompileCounter("example_function_lax") as cc:
    r3 = example_function_lax(DATA, jnp.array(3)).block_until_ready()
    r7 = example_function_lax(DATA, jnp.array(7)).block_until_ready()
  assert cc.count == 1
  d = np.asarray(DATA, np.float64)
  np.testing.assert_allclose(float(r3), np.sum(d + 1.0), rtol=1e-5)
  np.testing.assert_allclose(float(r7), np.sum(d * 2.0), rtol=1e-5)


def _base(v, a):
  return v * a


def test_partial_and_lambda_in_a_loop_recompile_exactly_as_the_seed():
  # §2.5 Strategy 4, run exactly as the seed (no cache clearing between blocks):
  # assert (c_lambda, c_partial, c_rejit, c_once) == (3, 3, 1, 1); "jax.jit(base) hits the
  # cache even when it's recreated ... because the cache is indexed by the underlying function"
  v3 = jnp.ones(3)
  with CompileCounter("<lambda>") as c_lambda:
    for _ in range(3):
      jax.jit(lambda v: v * 2)(v3)
  with CompileCounter("_base") as c_partial:
    for _ in range(3):
      jax.jit(functools.partial(_base, a=2.0))(v3)
  with CompileCounter("_base") as c_rejit:
    for _ in range(3):
      out = jax.jit(_base)(v3, 2.0)
  p_once = jax.jit(functools.partial(_base, a=2.0))
  with CompileCounter("_base") as c_once:
    for _ in range(3):
      p_once(v3)
  assert (c_lambda.count, c_partial.count, c_rejit.count, c_once.count) == (3, 3, 1, 1)
  np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0, 2.0])


def _by_shape(f):
  return f(jnp.ones((10, 5))), f(jnp.ones((20, 5)))


def _by_dtype(f):
  with jax.enable_x64():
    return f(np.ones(3, np.float32)), f(np.ones(3, np.float64))


def _by_python_type(f):
  return f(1), f(1.0)


def _same(f):
  return f(jnp.ones(3)), f(jnp.zeros(3)), f(np.ones(3, np.float64))


# §2.5's causes of recompilation: "Argument shape: first (10,5), then (20,5)"; "Argument
# dtype: float32 to float64 (... only with x64 enabled is float64 a separate type)"; "Python
# type of an argument: passing an int at one point and a float at another"; and (quiz 3)
# what does not recompile: only the values differ / float64 NumPy in x32 mode.
@pytest.mark.parametrize("calls, compiles, dtypes", [
    (_by_shape, 2, ["float32", "float32"]),
    (_by_dtype, 2, ["float32", "float64"]),
    (_by_python_type, 2, ["int32", "float32"]),
    (_same, 1, ["float32"] * 3),
])
def test_recompilation_triggers(calls, compiles, dtypes):
  @jax.jit
  def trig(v):
    return v * 2
  with CompileCounter("trig") as cc:
    outs = calls(trig)
  assert cc.count == compiles and trig._cache_size() == compiles
  assert [o.dtype.name for o in outs] == dtypes


def test_recreated_closure_recompiles_and_mutated_global_does_not():
  # §2.5 causes: "Functions as arguments: a different function object on each call" and
  # "Closures and globals: when their values affect the graph structure". A new closure is a
  # new function object, so it compiles again with its new size. A global changed after the
  # first call is not part of the key: JAX 0.12 keeps the cached trace (checked with the
  # oracle: shape (3,) and _cache_size() == 1 after the global became 4), and so does ember.
  def make(n):
    def closure(x):
      return jnp.sum(x) + jnp.zeros(n)
    return jax.jit(closure)
  with CompileCounter("closure") as cc:
    shapes = [make(n)(jnp.ones(3)).shape for n in (2, 3, 3)]
  assert shapes == [(2,), (3,), (3,)] and cc.count == 3
  global _SIZE
  _SIZE = 3
  glob = jax.jit(lambda x: x + jnp.zeros(_SIZE))
  assert glob(jnp.ones(3)).shape == (3,)
  _SIZE = 4
  assert glob(jnp.ones(3)).shape == (3,) and glob._cache_size() == 1


_SIZE = 3


@pytest.fixture
def jax_log():
  """The seed's _Grab: collect every record handed to logger "jax"."""
  import logging

  class Grab(logging.Handler):
    def __init__(self):
      super().__init__()
      self.msgs = []

    def emit(self, record):
      self.msgs.append(record.getMessage())
  grab = Grab()
  logging.getLogger("jax").addHandler(grab)
  jax.config.update("jax_explain_cache_misses", True)
  try:
    yield grab.msgs
  finally:
    jax.config.update("jax_explain_cache_misses", False)
    logging.getLogger("jax").removeHandler(grab)


def test_explain_cache_misses_through_the_jax_logger(jax_log):
  # §2.5 extra: a handler on logging.getLogger("jax") sees the explanation;
  # assert "at w, now f32[4,8] and before f32[4,4]" in miss[-1]
  @jax.jit
  def explain_me(v, w):
    return v @ w
  explain_me(jnp.ones((4, 4)), jnp.ones((4, 4)))
  explain_me(jnp.ones((4, 4)), jnp.ones((4, 8)))
  miss = [m for m in jax_log if "CACHE MISS" in m and "explain_me" in m]
  assert len(miss) == 2
  assert "at w, now f32[4,8] and before f32[4,4]" in miss[-1]


def test_explain_static_value_change_is_unavailable(jax_log):
  # §2.5 extra: "the case where a change in a static argument's value only prints
  # explanation unavailable". JAX 0.12's message ends:
  # "all previously seen cache keys differ. For the closest previous key:\n  cache miss
  # explanation unavailable"
  @functools.partial(jax.jit, static_argnames="mode")
  def st(x, mode="a"):
    return x * 2 if mode == "a" else x + 1
  st(jnp.ones(3), mode="a")
  st(jnp.ones(3), mode="b")
  miss = [m for m in jax_log if "CACHE MISS" in m and " st " in m]
  assert miss[-1].endswith("all previously seen cache keys differ. For the closest previous "
                           "key:\n  cache miss explanation unavailable")


# The seed's persistent-cache script, unchanged but for `import ember as jax`: configured with
# jax.config.update, HIT/MISS read from logger "jax._src.compiler". The print in model shows
# that "tracing and lowering still run" in the second process.
CACHE_SRC = textwrap.dedent("""
    import sys, time, logging
    import ember as jax, ember.numpy as jnp
    jax.config.update("jax_compilation_cache_dir", sys.argv[1])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    logging.getLogger("jax._src.compiler").setLevel(logging.DEBUG)
    def model(x):
      print("TRACING model")
      for _ in range(20):
        x = jnp.tanh(x @ x) + 0.1
      return x
    t0 = time.perf_counter()
    exe = jax.jit(model).lower(jnp.ones((64, 64))).compile()
    print("COMPILE_SECONDS", time.perf_counter() - t0)
    print("VALUE", float(exe(jnp.ones((64, 64)))[0, 0]))
""")


def _run_cache_script(tmp_path, cache_dir):
  script = tmp_path / "cache_src.py"
  script.write_text(CACHE_SRC)
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "EMBER_COMPILATION_CACHE_DIR")}
  env["PYTHONPATH"] = REPO
  p = subprocess.run([sys.executable, str(script), str(cache_dir)], capture_output=True,
                     text=True, env=env, cwd=str(tmp_path), timeout=300)
  assert p.returncode == 0, p.stderr
  return p.stdout + p.stderr


def test_persistent_cache_second_process_hits_via_jax_logger(tmp_path):
  # §2.5 extra: assert "PERSISTENT COMPILATION CACHE MISS for 'jit_model'" in out1;
  # "Persistent compilation cache hit for 'jit_model'" in out2; a file "jit_model-..." in the
  # directory; "The persistent cache only saves XLA compilation; tracing and lowering still run"
  cache_dir = tmp_path / "jax_cache"
  out1 = _run_cache_script(tmp_path, cache_dir)
  out2 = _run_cache_script(tmp_path, cache_dir)
  assert "PERSISTENT COMPILATION CACHE MISS for 'jit_model'" in out1
  assert "Persistent compilation cache hit for 'jit_model'" in out2
  assert "Persistent compilation cache hit" not in out1 and "CACHE MISS" not in out2
  assert any(f.startswith("jit_model-") for f in os.listdir(cache_dir))
  assert out1.count("TRACING model") == out2.count("TRACING model") == 1
  x = np.ones((64, 64))
  for _ in range(20):
    x = np.tanh(x @ x) + 0.1
  values = [float(line.split()[1]) for out in (out1, out2) for line in out.splitlines()
            if line.startswith("VALUE")]
  assert values[0] == values[1]
  np.testing.assert_allclose(values[0], x[0, 0], rtol=1e-6)


def test_persistent_cache_defaults_match_the_table():
  # §2.5 table: jax_compilation_cache_dir "unset, i.e. disabled";
  # jax_persistent_cache_min_compile_time_secs 1.0; jax_persistent_cache_min_entry_size_bytes 0
  from ember._src.base.config import Config
  defaults = {k: f() for k, f in Config._defaults.items()}
  if not {"JAX_COMPILATION_CACHE_DIR", "EMBER_COMPILATION_CACHE_DIR"} & set(os.environ):
    assert defaults["jax_compilation_cache_dir"] is None
  if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
    assert defaults["jax_persistent_cache_min_compile_time_secs"] == 1.0
  if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in os.environ:
    assert defaults["jax_persistent_cache_min_entry_size_bytes"] == 0
  old = config.read("jax_compilation_cache_dir")
  config.update("jax_compilation_cache_dir", None)
  try:
    assert persistent_cache.cache_dir() is None
  finally:
    config.update("jax_compilation_cache_dir", old)


def test_persistent_cache_key_includes_the_version(tmp_path, monkeypatch):
  # §2.5: "The cache key includes ... the jax/jaxlib versions ..., so upgrading JAX or
  # changing flags automatically invalidates old entries" (flags: tests/test_persistent_cache.py
  # test_key_covers_constants_and_flags)
  from ember._src.base import version
  from ember._src.backends.cpu import runtime_cache
  names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs")
  old = {n: config.read(n) for n in names}
  config.update("jax_compilation_cache_dir", str(tmp_path))
  config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  x = np.arange(4, dtype=np.float32)
  f = lambda v: v * 5.0 + 1.0  # noqa: E731
  try:
    for v in (version.__version__, version.__version__ + ".post-upgrade"):
      monkeypatch.setattr(version, "__version__", v)
      runtime_cache.environment.cache_clear()
      compilation._executables.clear()
      out = jax.jit(f).lower(x).compile()(x)
      np.testing.assert_array_equal(np.asarray(out), x * 5 + 1)
  finally:
    for n, v in old.items():
      config.update(n, v)
    monkeypatch.undo()
    runtime_cache.environment.cache_clear()
    compilation._executables.clear()
  assert len([n for n in os.listdir(tmp_path) if n.startswith("jit__lambda-")]) == 2


# --- §2.7 asynchronous dispatch ---------------------------------------------------------------

def test_first_call_compiles_once_then_dispatches_only():
  # §2.7 block A: "assert cc.count == 1  # the first call includes tracing + compilation";
  # after warm-up a call only dispatches (no compilation)
  @jax.jit
  def compute_heavy(m):
    return jnp.dot(m, m.T)
  x = np.random.default_rng(0).standard_normal((200, 200)).astype(np.float32)
  with CompileCounter("compute_heavy") as cc:
    first = compute_heavy(x)
    n_first = cc.count
    result = compute_heavy(x)
    result.block_until_ready()
  assert n_first == 1 and cc.count == 1 and result.is_ready()
  x64 = x.astype(np.float64)
  for r in (first, result):
    np.testing.assert_allclose(np.asarray(r), x64 @ x64.T, rtol=1e-5, atol=1e-4)


def test_block_until_ready_pytree_with_jax_spellings(mats):
  # §2.7: out_tree = jax.block_until_ready(pending); assert out_tree is pending and
  # out_tree["step"] == 7; all(leaf.is_ready() for leaf in jax.tree.leaves(out_tree) if
  # isinstance(leaf, jax.Array)) -- with the seed's jax.tree.leaves and jax.Array spellings
  m, x = mats
  pending = {"a": _heavy(x), "b": [_heavy(x)[0]], "step": 7}
  out_tree = jax.block_until_ready(pending)
  assert out_tree is pending and out_tree["step"] == 7
  arrays = [leaf for leaf in jax.tree.leaves(out_tree) if isinstance(leaf, jax.Array)]
  assert len(arrays) == 2 and all(a.is_ready() for a in arrays)
  np.testing.assert_allclose(np.asarray(out_tree["b"][0]), _heavy_np(m)[0], rtol=1e-4, atol=1e-5)


# §2.7 implicit synchronization: "Copying to the host: np.asarray(arr) / np.array(arr),
# .item(), float(arr), .tolist()" and "Printing: print(arr) has to format concrete values"
# (arrays under 1 MiB). The other ops are in tests/test_async_dispatch.py test_implicit_sync_points.
SMALL_SYNC_OPS = {
    "np.array": lambda r: np.array(r),
    "print": print,
    "format": lambda r: f"{r}",
}


@pytest.mark.parametrize("op", SMALL_SYNC_OPS)
def test_implicit_sync_np_array_and_print_small(mats, gate, op, capsys):
  m, x = mats
  r = jax.jit(lambda a: _heavy(a)[:2, :2])(x)     # 16 bytes, still queued behind the gate
  assert not r.is_ready()
  gate.set()
  SMALL_SYNC_OPS[op](r)
  assert r.is_ready()
  if op == "print":
    assert capsys.readouterr().out.startswith("[[")
  np.testing.assert_allclose(np.asarray(r), _heavy_np(m)[:2, :2], rtol=1e-4, atol=1e-5)


def test_print_of_a_large_array_does_not_synchronize(mats, gate, capsys):
  # §2.7: "print/repr of large arrays doesn't synchronize ... for arrays of 1 MiB or more
  # (nbytes >= 1 << 20), it prints only Array(shape=..., dtype=...)"; quiz 7: "print(y)
  # doesn't [wait]". JAX 0.12: str(big) == "Array(shape=(600, 600), dtype=float32)".
  m, x = mats
  big = _heavy(x)                                 # 600*600*4 bytes >= 1 MiB
  release = threading.Timer(0.5, gate.set)        # a print that waits is freed, then fails
  release.start()
  print(big)
  release.cancel()
  assert capsys.readouterr().out == "Array(shape=(600, 600), dtype=float32)\n"
  assert not big.is_ready()


def test_device_get_collects_pending_arrays_at_the_end(mats, gate):
  # §2.7 extra: "collect the arrays and jax.device_get them all at the end" -- device_get of
  # a pytree waits for its arrays and returns NumPy arrays, other leaves as they are
  m, x = mats
  losses = [jax.jit(lambda a, k=k: jnp.sum(_heavy(a)) * k)(x) for k in (1.0, 2.0)]
  assert not any(l.is_ready() for l in losses)
  gate.set()
  got = jax.device_get({"loss": losses, "step": 3})
  assert got["step"] == 3 and all(type(v) is np.ndarray for v in got["loss"])
  assert all(l.is_ready() for l in losses)
  want = _heavy_np(m).sum()
  np.testing.assert_allclose([float(v) for v in got["loss"]], [want, 2 * want], rtol=1e-4)


def test_host_work_overlaps_with_a_pending_call(mats, gate):
  # §2.7 "Exploiting asynchrony": r_async = heavy(x_h) returns right after dispatch; the host
  # does its own NumPy work meanwhile; r_async.block_until_ready() then gives the result
  m, x = mats
  r_async = _heavy(x)
  a = np.random.default_rng(0).random((200, 200))
  host = float((a @ a).sum())                     # runs while the call is still queued
  assert not r_async.is_ready() and host > 0
  gate.set()
  assert r_async.block_until_ready() is r_async and r_async.is_ready()
  np.testing.assert_allclose(np.asarray(r_async), _heavy_np(m), rtol=1e-4, atol=1e-5)


def test_cpu_async_dispatch_is_on_by_default():
  # §2.7 extra: "jax_cpu_enable_async_dispatch (default True)"; turning it off is
  # tests/test_async_dispatch.py test_sync_mode_switch
  if "JAX_CPU_ENABLE_ASYNC_DISPATCH" not in os.environ:
    assert jax.config.jax_cpu_enable_async_dispatch is True
