"""The persistent compilation cache (ember/_src/base/persistent_cache.py): entries shared by
processes, JAX's min compile time / min entry size semantics, bad entries, concurrent
writers, least-recently-used eviction."""
import logging
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.driver import compilation
from ember._src.base import persistent_cache
from ember._src.base.config import config

LOGGER = "ember._src.compiler"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compile_fresh(f, *args):
  """Lower and compile `f` as a new process would (no in-memory executable)."""
  compilation._executables.clear()
  return ember.jit(f).lower(*args).compile()


def entries(d):
  return sorted(n for n in os.listdir(d) if not n.startswith("."))


def messages(caplog):
  msgs = [r.getMessage() for r in caplog.records if r.name == LOGGER]
  caplog.clear()
  return msgs


def misses(msgs, name):
  return sum(m.startswith(f"PERSISTENT COMPILATION CACHE MISS for '{name}'") for m in msgs)


def hits(msgs, name):
  return sum(m.startswith(f"Persistent compilation cache hit for '{name}'") for m in msgs)


# Functions whose executables use every kind of thunk: kernels, dot, sort (with a
# recorded key count), top-k, scatter, copy; f32 and i32.
def mixed(x, y):
  z = jnp.sin(x) * y + 1.0
  s = jnp.sort(z, axis=-1)
  d = s @ y.T
  v, i = ember.lax.top_k(x, 2)
  u = jnp.zeros(5, x.dtype).at[jnp.array([0, 2, 2])].add(x[0, :3])
  return d, jnp.cumsum(z, axis=0), v, i, u


def mixed_ref(x, y):
  x64, y64 = x.astype(np.float64), y.astype(np.float64)
  z = np.sin(x64) * y64 + 1.0
  d = np.sort(z, axis=-1) @ y64.T
  i = np.argsort(-x64, axis=-1, kind="stable")[:, :2]
  u = np.zeros(5)
  np.add.at(u, [0, 2, 2], x64[0, :3])
  return d, np.cumsum(z, axis=0), np.take_along_axis(x64, i, -1), i, u


X = np.linspace(-2, 3, 12, dtype=np.float32).reshape(3, 4)
Y = np.cos(X).astype(np.float32)


def check_mixed(outs):
  for o, r in zip(outs, mixed_ref(X, Y)):
    o = np.asarray(o)
    if o.dtype.kind == "f":
      assert o.dtype == np.float32
      np.testing.assert_allclose(o, r, rtol=1e-5, atol=1e-5)
    else:
      assert o.dtype == np.int32
      np.testing.assert_array_equal(o, r)


def test_hit_loads_an_equivalent_executable(cache, caplog, monkeypatch):
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  first = compile_fresh(mixed, X, Y)
  msgs = messages(caplog)
  assert misses(msgs, "jit_mixed") == 1 and hits(msgs, "jit_mixed") == 0
  [name] = entries(cache)
  assert name.startswith("jit_mixed-") and len(name) == len("jit_mixed-") + 64
  from ember._src.backends.cpu import compiler
  from ember._src.backends.cpu.codegen import kernels

  def no_llvm(*a, **k):
    raise AssertionError("a cache hit must not generate or optimize LLVM IR")
  with monkeypatch.context() as m:
    m.setattr(compiler, "_jit", no_llvm)
    m.setattr(kernels.KernelBuilder, "__init__", no_llvm)
    m.setattr(compiler, "sort_num_keys", no_llvm)
    second = compile_fresh(mixed, X, Y)
  msgs = messages(caplog)
  assert hits(msgs, "jit_mixed") == 1 and misses(msgs, "jit_mixed") == 0
  check_mixed(first(X, Y))
  check_mixed(second(X, Y))
  a, b = first.runtime_executable(), second.runtime_executable()
  assert a is not b and a.code_size == b.code_size > 0
  assert b.llvm_ir == a.llvm_ir and b.llvm_ir_optimized == a.llvm_ir_optimized
  assert b.asm == a.asm
  assert [type(t).__name__ for t in a.thunks] == [type(t).__name__ for t in b.thunks]


def test_no_cache_dir_writes_nothing(tmp_path, caplog):
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  old = config.read("jax_compilation_cache_dir")
  config.update("jax_compilation_cache_dir", None)
  try:
    out = compile_fresh(lambda x: x * 3.0, np.ones(3, np.float32))(np.ones(3, np.float32))
  finally:
    config.update("jax_compilation_cache_dir", old)
  np.testing.assert_array_equal(np.asarray(out), [3, 3, 3])
  assert not any("PERSISTENT" in m.upper() for m in messages(caplog))


def test_min_compile_time(cache, caplog):
  # JAX: an entry is written only when compiling took at least min_compile_time_secs
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  config.update("jax_persistent_cache_min_compile_time_secs", 1e6)
  f = lambda x: jnp.exp(x) - 1.0
  x = np.arange(4, dtype=np.float32)
  np.testing.assert_allclose(np.asarray(compile_fresh(f, x)(x)), np.expm1(x), rtol=1e-6)
  msgs = messages(caplog)
  assert misses(msgs, "jit__lambda") == 1
  assert any(m.startswith("Not writing persistent cache entry for 'jit__lambda' because it "
                          "took < 1000000.00 seconds to compile") for m in msgs)
  assert entries(cache) == []
  config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  compile_fresh(f, x)
  assert misses(messages(caplog), "jit__lambda") == 1 and len(entries(cache)) == 1
  compile_fresh(f, x)
  assert hits(messages(caplog), "jit__lambda") == 1


def test_default_options_match_jax():
  from ember._src.base.config import Config
  defaults = {k: f() for k, f in Config._defaults.items()}
  if "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ:
    assert defaults["jax_persistent_cache_min_compile_time_secs"] == 1.0
  if "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES" not in os.environ:
    assert defaults["jax_persistent_cache_min_entry_size_bytes"] == 0
  assert defaults["jax_enable_compilation_cache"] is True
  assert defaults["jax_compilation_cache_include_metadata_in_key"] is False
  if "JAX_COMPILATION_CACHE_MAX_SIZE" not in os.environ:
    assert defaults["jax_compilation_cache_max_size"] == -1
  assert defaults["ember_persistent_cache_max_size_bytes"] > 0


@pytest.mark.parametrize("min_size, written", [(0, True), (-1, True), (1 << 40, False)])
def test_min_entry_size(cache, caplog, min_size, written):
  # 0: no minimum (JAX's default), -1: no minimum, > 0: smaller entries are not written
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  config.update("jax_persistent_cache_min_entry_size_bytes", min_size)
  x = np.arange(6, dtype=np.int32)
  out = compile_fresh(lambda x: x * 2 + 1, x)(x)
  np.testing.assert_array_equal(np.asarray(out), x * 2 + 1)
  assert len(entries(cache)) == int(written)
  msgs = messages(caplog)
  assert any("since its size" in m for m in msgs) == (not written)


def test_entry_size_threshold_is_the_file_size(cache):
  x = np.arange(6, dtype=np.float32)
  f = lambda x: jnp.tanh(x)
  compile_fresh(f, x)
  [name] = entries(cache)
  size = os.path.getsize(cache / name)
  os.remove(cache / name)
  config.update("jax_persistent_cache_min_entry_size_bytes", size)       # == size: written
  compile_fresh(f, x)
  assert entries(cache) == [name]
  os.remove(cache / name)
  config.update("jax_persistent_cache_min_entry_size_bytes", size + 1)
  compile_fresh(f, x)
  assert entries(cache) == []


def _damage_truncate(data):
  return data[:len(data) // 2]


def _damage_flip(data):
  b = bytearray(data)
  b[len(b) * 2 // 3] ^= 0xFF
  return bytes(b)


def _damage_foreign(data):
  return b"not a cache entry at all"


def _damage_empty(data):
  return b""


def _damage_header_only(data):
  return data[:len(persistent_cache.MAGIC) + 5]


def _damage_valid_checksum_bad_payload(data):
  import hashlib
  payload = b"\x00" * 64
  return persistent_cache.MAGIC + hashlib.sha256(payload).digest() + payload


def _damage_old_version(data):
  return data.replace(b"EMBER-PCC\x00v1", b"EMBER-PCC\x00v0", 1)


@pytest.mark.parametrize("damage", [_damage_truncate, _damage_flip, _damage_foreign,
                                    _damage_empty, _damage_header_only,
                                    _damage_valid_checksum_bad_payload, _damage_old_version])
def test_bad_entry_is_ignored_and_replaced(cache, caplog, damage):
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  compile_fresh(mixed, X, Y)
  [name] = entries(cache)
  good = (cache / name).read_bytes()
  (cache / name).write_bytes(damage(good))
  messages(caplog)
  check_mixed(compile_fresh(mixed, X, Y)(X, Y))
  msgs = messages(caplog)
  assert misses(msgs, "jit_mixed") == 1 and hits(msgs, "jit_mixed") == 0
  assert any(name in m and ("bad entry" in m or "cannot load" in m) for m in msgs), msgs
  assert (cache / name).read_bytes() == good               # replaced by the fresh compile
  check_mixed(compile_fresh(mixed, X, Y)(X, Y))
  assert hits(messages(caplog), "jit_mixed") == 1


def test_key_covers_constants_and_flags(cache):
  # two modules whose text may be equal (large constants are elided) get distinct entries
  from ember._src.base import flags as flags_lib
  x = np.ones((64,), np.float32)
  c1, c2 = np.arange(64, dtype=np.float32) ** 2, np.arange(64, dtype=np.float32) ** 3

  def g(c):
    k = 2.0 if c is c1 else 3.0

    def f(x):
      return x * jnp.arange(64.0) ** k       # folded into a constant({...})
    return f
  np.testing.assert_array_equal(np.asarray(compile_fresh(g(c1), x)(x)), c1)
  np.testing.assert_array_equal(np.asarray(compile_fresh(g(c2), x)(x)), c2)
  assert len(entries(cache)) == 2
  with flags_lib.override(opt_level=1):
    np.testing.assert_array_equal(np.asarray(compile_fresh(g(c1), x)(x)), c1)
  assert len(entries(cache)) == 3


def test_key_covers_attributes_the_text_leaves_out(cache):
  # a triangular solve's side, triangle and diagonal live in its custom call's
  # backend_config, which the module's text does not print: four variants, four entries
  from ember.lax import linalg as L
  a = np.array([[2.0, 0.0], [1.0, 4.0]], np.float32)
  b = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
  for unit in (False, True):
    for lower in (False, True):
      t = np.tril(a) if lower else np.triu(a)
      if unit:
        t = t - np.diag(np.diag(t)) + np.eye(2, dtype=np.float32)
      fn = lambda a, b, lower=lower, unit=unit: L.triangular_solve(
          a, b, left_side=True, lower=lower, unit_diagonal=unit)
      np.testing.assert_allclose(np.asarray(compile_fresh(fn, a, b)(a, b)),
                                 np.linalg.solve(t, b), rtol=1e-6)
  assert len(entries(cache)) == 4


def test_lru_eviction(cache, caplog):
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  x = np.arange(8, dtype=np.float32)
  fa, fb, fc = (lambda x: x + 1.0), (lambda x: x * 5.0), (lambda x: x - 7.0)
  fa.__name__, fb.__name__, fc.__name__ = "fa", "fb", "fc"
  compile_fresh(fa, x)
  compile_fresh(fb, x)
  [a, b] = entries(cache)
  os.utime(cache / a, (1000, 1000))
  os.utime(cache / b, (2000, 2000))
  compile_fresh(fa, x)                   # a hit refreshes fa: fb is now least recently used
  assert hits(messages(caplog), "jit_fa") == 1
  sizes = [os.path.getsize(cache / n) for n in (a, b)]
  # room for two entries of about this size, not three (entry sizes vary a little with
  # the compressed object code, so leave half an entry of slack)
  cap = sum(sizes) + min(sizes) // 2
  config.update("ember_persistent_cache_max_size_bytes", cap)
  np.testing.assert_array_equal(np.asarray(compile_fresh(fc, x)(x)), x - 7)
  names = entries(cache)
  assert a in names and b not in names and len(names) == 2
  assert any(n.startswith("jit_fc-") for n in names)
  # fb recompiles (miss) and the cache stays within its cap
  np.testing.assert_array_equal(np.asarray(compile_fresh(fb, x)(x)), x * 5)
  assert misses(messages(caplog), "jit_fb") == 1
  assert sum(os.path.getsize(cache / n) for n in entries(cache)) <= cap
  assert len(entries(cache)) == 2


def test_jax_max_size(cache, caplog):
  # JAX's cap wins over ember's when set; 0 turns the cache off
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  x = np.arange(3, dtype=np.float32)
  config.update("jax_compilation_cache_max_size", 0)
  compile_fresh(lambda x: x * 9.0, x)
  assert entries(cache) == [] and not any("CACHE MISS" in m for m in messages(caplog))
  config.update("jax_compilation_cache_max_size", 1)
  compile_fresh(lambda x: x * 9.0, x)
  compile_fresh(lambda x: x * 8.0, x)
  assert len(entries(cache)) == 1


def test_source_lines_are_not_in_the_key_unless_asked(cache):
  x = np.arange(3, dtype=np.float32)
  f1 = lambda x: x * 4.0
  f2 = \
      lambda x: x * 4.0                    # the same function on another line
  compile_fresh(f1, x)
  compile_fresh(f2, x)
  assert len(entries(cache)) == 1
  config.update("jax_compilation_cache_include_metadata_in_key", True)
  compile_fresh(f1, x)
  compile_fresh(f2, x)
  assert len(entries(cache)) == 3


def test_log_levels_follow_jax_options(cache, caplog):
  caplog.set_level(logging.WARNING, logger=LOGGER)
  x = np.arange(3, dtype=np.float32)
  f = lambda x: x / 3.0
  compile_fresh(f, x)
  compile_fresh(f, x)
  assert messages(caplog) == []                       # DEBUG by default
  config.update("jax_log_compiles", True)
  config.update("jax_explain_cache_misses", True)
  compile_fresh(f, x)
  compile_fresh(lambda x: x / 5.0, x)
  msgs = messages(caplog)
  assert hits(msgs, "jit__lambda") == 1 and misses(msgs, "jit__lambda") == 1


def test_cap_smaller_than_one_entry_keeps_the_newest(cache):
  config.update("ember_persistent_cache_max_size_bytes", 1)
  x = np.arange(3, dtype=np.float32)
  compile_fresh(lambda x: x - 1.0, x)
  compile_fresh(lambda x: x - 2.0, x)
  [name] = entries(cache)
  out = compile_fresh(lambda x: x - 2.0, x)(x)      # still a hit on the kept entry
  np.testing.assert_array_equal(np.asarray(out), x - 2)


def test_unusable_directory_only_costs_the_cache(cache, caplog):
  caplog.set_level(logging.DEBUG, logger=LOGGER)
  not_a_dir = cache / "file"
  not_a_dir.write_text("x")
  config.update("jax_compilation_cache_dir", str(not_a_dir))
  x = np.arange(5, dtype=np.int32)
  np.testing.assert_array_equal(np.asarray(compile_fresh(lambda x: x - 4, x)(x)), x - 4)
  assert any("cannot write" in m for m in messages(caplog))


def test_stale_temporary_files_are_removed(cache):
  stale, fresh = cache / ".tmp-stale", cache / ".tmp-fresh"
  stale.write_bytes(b"partial")
  fresh.write_bytes(b"being written")
  os.utime(stale, (1000, 1000))
  compile_fresh(lambda x: x + 2.0, np.ones(2, np.float32))
  assert not stale.exists() and fresh.exists()


# --------------------------------------------------------------------------------------
# Fresh processes sharing a directory
# --------------------------------------------------------------------------------------

SCRIPT = textwrap.dedent("""
    import logging, sys
    import numpy as np
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s|%(message)s")
    logging.getLogger("ember._src.compiler").setLevel(logging.DEBUG)
    import ember, ember.numpy as jnp

    def twenty_ops(x, y):
      for k in range(5):
        x = jnp.tanh(x * y + k) - jnp.sort(x, axis=-1)
        y = jnp.maximum(y, x) @ jnp.ones((4, 4), x.dtype)
      return x, jnp.sum(y, axis=0)

    x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    a, b = ember.jit(twenty_ops)(x, x + 0.5)
    np.save(sys.argv[1], np.concatenate([np.asarray(a).ravel(), np.asarray(b).ravel()]))
""")


def _twenty_ops_ref():
  x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4).astype(np.float64)
  y = x + 0.5
  for k in range(5):
    x = np.tanh(x * y + k) - np.sort(x, axis=-1)
    y = np.maximum(y, x) @ np.ones((4, 4))
  return np.concatenate([x.ravel(), y.sum(axis=0)])


def _run(tmp_path, out, cache_var, cache_dir):
  script = tmp_path / "script.py"
  script.write_text(SCRIPT)
  env = {k: v for k, v in os.environ.items()
         if k not in ("JAX_COMPILATION_CACHE_DIR", "EMBER_COMPILATION_CACHE_DIR")}
  env.update({cache_var: str(cache_dir), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
              "PYTHONPATH": REPO})
  return subprocess.Popen([sys.executable, str(script), str(out)], env=env, cwd=REPO,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(p):
  stdout, stderr = p.communicate(timeout=120)
  assert p.returncode == 0, stderr
  return stderr


def test_two_processes_share_the_cache(tmp_path):
  d = tmp_path / "cache"
  log1 = _finish(_run(tmp_path, tmp_path / "a.npy", "EMBER_COMPILATION_CACHE_DIR", d))
  log2 = _finish(_run(tmp_path, tmp_path / "b.npy", "JAX_COMPILATION_CACHE_DIR", d))
  assert "PERSISTENT COMPILATION CACHE MISS for 'jit_twenty_ops'" in log1
  assert "Persistent compilation cache hit" not in log1
  assert "Persistent compilation cache hit for 'jit_twenty_ops'" in log2
  assert "PERSISTENT COMPILATION CACHE MISS" not in log2
  a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
  np.testing.assert_array_equal(a, b)
  # f32 through 5 rounds of tanh/sort/matmul: error grows a little past 1e-6
  np.testing.assert_allclose(a, _twenty_ops_ref(), rtol=1e-5, atol=1e-5)
  assert [n.startswith("jit_twenty_ops-") for n in os.listdir(d)] == [True]


def test_concurrent_writers(tmp_path):
  d = tmp_path / "cache"
  procs = [_run(tmp_path, tmp_path / f"{k}.npy", "EMBER_COMPILATION_CACHE_DIR", d)
           for k in range(3)]
  logs = [_finish(p) for p in procs]
  assert all("Traceback" not in log and "bad entry" not in log for log in logs)
  outs = [np.load(tmp_path / f"{k}.npy") for k in range(3)]
  for o in outs[1:]:
    np.testing.assert_array_equal(o, outs[0])
  assert len(os.listdir(d)) == 1                   # one entry, no temporary files left
  log = _finish(_run(tmp_path, tmp_path / "last.npy", "EMBER_COMPILATION_CACHE_DIR", d))
  assert "Persistent compilation cache hit for 'jit_twenty_ops'" in log
  np.testing.assert_array_equal(np.load(tmp_path / "last.npy"), outs[0])


def _repeated_layers(x):
  for _ in range(6):
    x = jnp.tanh(x @ x) + 0.1      # small dots with a fused epilogue
    x = jnp.sin(x) * 0.5           # an elementwise fusion
  return x


def test_identical_fusions_share_one_kernel_and_replay(cache):
  # repeated layers compile one kernel per distinct program (not one per layer); the
  # thunks keep their own instruction names, and a cache hit replays the sharing
  import re
  x = (np.random.default_rng(3).standard_normal((16, 16)) * 0.3).astype(np.float32)
  ref = x.astype(np.float64)
  for _ in range(6):
    ref = np.sin(np.tanh(ref @ ref) + 0.1) * 0.5
  first = compile_fresh(_repeated_layers, x)
  exe = first.runtime_executable()
  entry_points = re.findall(r"^define void @\"?([\w.]+)", exe.llvm_ir, re.M)
  assert len(entry_points) <= 4, entry_points
  names = [t.name for t in exe.thunks]
  assert len(set(names)) == len(names) == 6   # one output fusion per layer
  second = compile_fresh(_repeated_layers, x)
  assert second.runtime_executable() is not exe
  for c in (first, second):
    np.testing.assert_allclose(np.asarray(c(x)), ref, rtol=2e-6, atol=1e-6)
