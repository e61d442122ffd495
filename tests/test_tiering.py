"""Tiered compilation (backends/cpu/tiering.py): quick-tier code first, optimized code swapped
in by a background compile, with results that never depend on the tier."""
import os
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags
from ember._src.backends.cpu import denormals, tiering


def _executable(f, *args):
  return ember.jit(f).lower(*args).compile()._computation.executable


def _bits(a):
  a = np.asarray(a)
  return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "f" else a


# Every math-library function and the structural ops kernels are made of: quick (opt 0)
# and optimized (O1 + vectorizers) code must agree bit for bit.
UNARY = [jnp.exp, jnp.exp2, jnp.expm1, jnp.log, jnp.log2, jnp.log10, jnp.log1p, jnp.sin,
         jnp.cos, jnp.tan, jnp.arcsin, jnp.arccos, jnp.arctan, jnp.sinh, jnp.cosh, jnp.tanh,
         jnp.arcsinh, jnp.arccosh, jnp.arctanh, jnp.cbrt, jnp.sqrt, lax.logistic, lax.erf,
         lax.erfc, lax.erf_inv, lax.lgamma, lax.digamma]


def _unary_input(dt):
  rng = np.random.default_rng(0)
  x = np.concatenate([rng.uniform(-1, 1, 200), rng.uniform(-30, 30, 200),
                      [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, 1e30, 0.5, 1.0, -1.0]])
  return x.astype(dt)


@pytest.mark.parametrize("fn", UNARY, ids=lambda f: f.__name__)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_quick_and_optimized_code_give_the_same_bits(fn, dt):
  with ember.enable_x64(dt == np.float64):
    x = _unary_input(dt)
    with np.errstate(all="ignore"):
      def f(v):
        return fn(v) * 2 + 1
      exe = _executable(f, x)
      assert exe.tier_up_pending is not None          # this module started at the quick tier
      quick = exe.execute([x])[0].copy()
      exe.tier_up_pending.wait()
      optimized = exe.execute([x])[0]
      with flags.override(tiered_compilation=False):
        plain = _executable(f, x)
      assert plain.tier_up_pending is None
      np.testing.assert_array_equal(_bits(quick), _bits(optimized))
      np.testing.assert_array_equal(_bits(plain.execute([x])[0]), _bits(optimized))


def test_binary_structural_and_small_dot_kernels_give_the_same_bits():
  rng = np.random.default_rng(1)
  a = rng.standard_normal((40, 48)).astype(np.float32)
  b = rng.standard_normal((48, 40)).astype(np.float32)

  def f(a, b):
    c = b[:40].T
    return jnp.tanh(a @ b) + jnp.arctan2(a[:, :40], c) ** 2 - jnp.power(jnp.abs(a[:, :40]), c)
  exe = _executable(f, a, b)
  assert exe.tier_up_pending is not None
  quick = exe.execute([a, b])[0].copy()
  exe.tier_up_pending.wait()
  np.testing.assert_array_equal(_bits(quick), _bits(exe.execute([a, b])[0]))
  np.testing.assert_allclose(quick, np.asarray(f(a, b)), rtol=1e-5, atol=1e-5)


def test_jitted_calls_are_correct_before_and_after_the_swap():
  x = np.linspace(-3, 3, 5000, dtype=np.float32)
  f = ember.jit(lambda v: jnp.sin(v) * jnp.exp(-v * v))
  want = np.sin(x.astype(np.float64)) * np.exp(-x.astype(np.float64) ** 2)
  outs = [np.asarray(f(x)) for _ in range(30)]       # some before, some after the swap
  f.lower(x).compile()._computation.executable.tier_up_pending.wait()
  outs.append(np.asarray(f(x)))
  for o in outs:
    np.testing.assert_array_equal(_bits(o), _bits(outs[-1]))
  np.testing.assert_allclose(outs[-1], want, rtol=1e-6, atol=1e-7)


def test_calls_from_threads_during_the_swap():
  x = np.linspace(0.1, 2, 3000, dtype=np.float32)
  f = ember.jit(lambda v: jnp.log(v) + jnp.cbrt(v))
  want = np.log(x.astype(np.float64)) + np.cbrt(x.astype(np.float64))
  errors = []

  def work():
    try:
      for _ in range(20):
        np.testing.assert_allclose(np.asarray(f(x)), want, rtol=2e-6, atol=1e-6)
    except Exception as e:  # noqa: BLE001
      errors.append(e)
  threads = [threading.Thread(target=work) for _ in range(4)]
  for t in threads:
    t.start()
  for t in threads:
    t.join()
  assert not errors


def test_machine_code_attributes_describe_the_optimized_code():
  x = np.ones(4096, np.float32)
  exe = _executable(lambda v: jnp.exp(v) + 1, x)
  assert exe.tier_up_pending is not None
  # these wait for the tier-up: the assembly is the vectorized code, not the quick code
  assert exe.cache_payload["opt_level"] == 3
  assert exe.code_size > 0 and exe.tier_up_pending.is_set()
  assert "vector.body" in exe.llvm_ir_optimized


def _polynomial(v):
  return ((((((v * 2 + 1) * v + 3) * v + 4) * v + 5) * v + 6) * v + 7) * v


@pytest.mark.parametrize("case", ["reduction", "flag_off", "disable_most_optimizations",
                                  "large"])
def test_modules_that_compile_at_the_full_tier_at_once(case, two_core_cost_model):
  x = np.ones((64, 64), np.float32)
  f = lambda v: jnp.exp(v) + 1
  if case == "reduction":     # a reassociated float sum: its order depends on the tier
    f = _reassociated_sum
  elif case == "large":       # quick code would run longer than the compile it saves, and
    x = np.ones((3000, 3000), np.float32)   # without math the vector-call tier saves nothing
    f = _polynomial
  if case == "flag_off":
    with flags.override(tiered_compilation=False):
      exe = _executable(f, x)
  elif case == "disable_most_optimizations":
    ember.config.update("jax_disable_most_optimizations", True)
    try:
      exe = _executable(f, x)
    finally:
      ember.config.update("jax_disable_most_optimizations", False)
  else:
    exe = _executable(f, x)
  assert exe.tier_up_pending is None and exe.first_tier is None


def _reassociated_sum(v):
  """A float sum LLVM vectorizes by reassociating it: a prologue too long for codegen's
  fixed-order lanes (FIXED_LANES_MAX_OPS)."""
  return jnp.sum((((((v + 1) * 2 - 3) * v + 4) * v - 5) * v + 6) * v, axis=1)


def _quick_optimized_plain(f, *args):
  """The outputs of `f`'s executable before and after its tier-up, and of a compile that
  never tiers."""
  exe = _executable(f, *args)
  assert exe.tier_up_pending is not None
  quick = [o.copy() for o in exe.execute(list(args))]
  exe.tier_up_pending.wait()
  optimized = exe.execute(list(args))
  with flags.override(tiered_compilation=False):
    plain = _executable(f, *args)
  return exe, quick, optimized, plain.execute(list(args))


def test_a_module_with_reductions_compiles_mixed_and_gives_the_same_bits(monkeypatch):
  """The reductions' kernels compile at the full tier, the others at the quick tier (one
  module each, on two threads); every output keeps its bits through the tier-up."""
  from ember._src.backends.cpu import compiler, llvm_jit
  tiers = []
  real = llvm_jit.compile_parts
  monkeypatch.setattr(llvm_jit, "compile_parts",
                      lambda jobs, times: tiers.append([t for _, t, _ in jobs]) or
                      real(jobs, times))
  rng = np.random.default_rng(3)
  x = rng.standard_normal((64, 300)).astype(np.float32)
  y = rng.standard_normal((300, 40)).astype(np.float32)
  def f(v, w):   # a reassociated reduction, a transcendental, a dot whose epilogue reduces
    return (jnp.tanh(v) * 2 + 1, _reassociated_sum(v),
            jnp.sin(v @ w) + jnp.sum(w * w, axis=0))
  exe, quick, optimized, plain = _quick_optimized_plain(f, x, y)
  kernels = compiler._kernel_closures(exe.llvm_ir)
  mixed = compiler._quick_kernels(exe.llvm_ir, 3)
  assert mixed and len(mixed) < len(kernels)
  assert not any("reassoc" in compiler._functions(exe.llvm_ir)[k][0] for k in mixed)
  assert tiers == [[llvm_jit.LLVM_TIERS[0], llvm_jit.LLVM_TIERS[3]]]
  for q, o, p in zip(quick, optimized, plain):
    np.testing.assert_array_equal(_bits(q), _bits(o))
    np.testing.assert_array_equal(_bits(p), _bits(o))
  x64 = x.astype(np.float64)
  want = (np.tanh(x64) * 2 + 1, (((((x64 + 1) * 2 - 3) * x64 + 4) * x64 - 5) * x64 + 6) * x64,
          np.sin(x64 @ y) + (y.astype(np.float64) ** 2).sum(0))
  want = (want[0], want[1].sum(1), want[2])
  for got, ref in zip(optimized, want):   # f32 sums of 300 terms
    np.testing.assert_allclose(got, ref, rtol=2e-5, atol=2e-5 * np.abs(ref).max())


def test_mixed_parts_hold_only_what_their_kernels_are_made_of():
  from ember._src.backends.cpu import compiler, llvm_jit
  x = np.ones((8, 40), np.float32)
  exe = _executable(lambda v: (_reassociated_sum(v), jnp.exp(v)), x)
  ir = exe.llvm_ir
  quick = compiler._quick_kernels(ir, 3)
  rest = [k for k in compiler._kernel_closures(ir) if k not in quick]
  assert quick and rest
  text, tier, internal = compiler._part_job(ir, quick, rest, llvm_jit.LLVM_TIERS[0])
  assert tier.speed_level == 0 and "reassoc" not in text and internal == []
  assert all(f'@"{k}"(' not in text for k in rest) and "ember.exp" in text
  text, _, _ = compiler._part_job(ir, rest, quick, llvm_jit.LLVM_TIERS[3])
  assert "reassoc" in text and "ember.exp" not in text
  # opt level 1 has no quick tier below it
  assert compiler._quick_kernels(ir, 1) == []


def test_dots_do_not_keep_a_module_from_the_quick_tier():
  """An MLP layer's 0.13 GFLOP of dot would count ~7 ms of run time; its loops are the same
  code at every tier, so only the rest (a bias and a relu) decides."""
  rng = np.random.default_rng(4)
  x = rng.standard_normal((128, 512)).astype(np.float32)
  w = rng.standard_normal((512, 1024)).astype(np.float32)
  b = rng.standard_normal(1024).astype(np.float32)
  exe, quick, optimized, plain = _quick_optimized_plain(
      lambda x, w, b: jnp.maximum(x @ w + b, 0.0), x, w, b)
  np.testing.assert_array_equal(_bits(quick[0]), _bits(optimized[0]))
  np.testing.assert_array_equal(_bits(plain[0]), _bits(optimized[0]))


def test_tiered_compilation_flag_parses():
  assert flags.parse("--tiered_compilation=false").tiered_compilation is False
  with pytest.raises(ValueError, match="--tiered_compilation"):
    flags.parse("--tiered_compilation=maybe")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_keeps_its_quick_code():
  x = np.linspace(0, 1, 1000, dtype=np.float32)
  f = ember.jit(lambda v: jnp.tanh(v) * 3)
  np.asarray(f(x))
  pid = os.fork()
  if pid == 0:   # the child: calls work and the machine-code attributes do not hang
    code = 1
    import faulthandler     # a hang fails the test (exit code 1) with the child's stacks
    faulthandler.dump_traceback_later(60, exit=True)
    try:
      exe = f.lower(x).compile()._computation.executable
      ok = np.allclose(np.asarray(f(x)), np.tanh(x) * 3, rtol=1e-6)
      exe.code_size
      code = 0 if ok else 2
    finally:
      os._exit(code)
  _, status = os.waitpid(pid, 0)
  assert os.waitstatus_to_exitcode(status) == 0


FORK_WHILE_LLVM_IS_BUSY = """
import gc, os, signal, threading, time
import llvmlite.binding as llvm
from ember._src.backends.cpu import llvm_jit
llvm_jit.init()
held = threading.Event()
def busy():   # another thread inside llvmlite (as the tier-up worker often is)
  with llvm.ffi.lib._lock:
    held.set()
    time.sleep(0.5)
threading.Thread(target=busy).start()
held.wait()
pid = os.fork()                      # waits for the lock, then forks
if pid == 0:
  signal.alarm(20)                   # a hang kills the child: the test fails, never hangs
  tm = llvm_jit.host_target_machine()
  del tm
  gc.collect()                       # disposing of it takes llvmlite's lock
  os._exit(0)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_fork_while_another_thread_is_inside_llvmlite():
  import subprocess
  import sys
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  r = subprocess.run([sys.executable, "-c", FORK_WHILE_LLVM_IS_BUSY], capture_output=True,
                     text=True, timeout=120, env=dict(os.environ, PYTHONPATH=root))
  assert r.returncode == 0 and r.stdout.strip() == "0", (r.stdout, r.stderr)


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs Linux /proc")
def test_the_tier_up_worker_runs_at_a_lower_priority(start_nice):
  """Its compile must not take a core from the quick code a first call runs."""
  from ember._src.backends.cpu import tiering
  exe = _executable(lambda v: jnp.cos(v) * 3, np.ones(16, np.float32))
  exe.tier_up_pending.wait()
  tid = tiering._worker.native_id
  with open(f"/proc/self/task/{tid}/stat") as f:
    nice = int(f.read().rsplit(")", 1)[1].split()[16])
  assert nice == tiering.WORKER_NICE
  assert os.getpriority(os.PRIO_PROCESS, 0) == start_nice   # the rest of the process


# the flush-to-zero switches every kernel brackets its work with (backends/cpu/denormals.py;
# internal, always inlined)
_FLUSH_SWITCHES = (denormals.ON, denormals.RESTORE)


def test_quick_code_calls_the_library_copies_of_math_functions():
  """Tiered quick code calls math functions compiled once per process at the full tier
  (compiler._library_math): no unoptimized inlined copy, none of sin's out-of-line huge path
  (a quick module of a fifth of the IR), and no second library compile of the same IR."""
  from llvmlite import binding as llvm
  from ember._src.backends.cpu import compiler, llvm_jit
  x = _unary_input(np.float32)
  exe = _executable(lambda v: jnp.sin(v) * 2 + jnp.exp(v), x)
  ir = exe.llvm_ir
  assert "ember.sin.huge.v" in ir and "ember.sin.huge.v" in "".join(
      compiler._closure(compiler._functions(ir), ["fusion"]))   # vector variants followed
  quick = compiler._library_math(ir)
  fns = compiler._functions(quick)
  assert set(fns) == {"fusion", "fusion.body", "ember.sin.f32", "ember.exp.f32", *_FLUSH_SWITCHES}
  symbols = []
  for name in ("ember.sin.f32", "ember.exp.f32"):
    body = fns[name][0]
    assert body.count("\n") == 6 and f'call float @"{name}.lib.' in body   # one call
    symbols.append(body.split('@"')[2].split('"')[0])
  assert all(s in llvm_jit._library and llvm.address_of_symbol(s) for s in symbols)
  assert len(quick) * 3 < len(ir)   # (plus the ~1.5 KB of flush switches every module has)
  n = len(llvm_jit._library)
  assert compiler._library_math(ir) == quick and len(llvm_jit._library) == n
  # what may be stored (opt level 0, the persistent cache) keeps its own copies
  with flags.override(opt_level=0):
    plain = _executable(lambda v: jnp.sin(v) * 2 + jnp.exp(v), x)
  assert ".lib." not in plain.llvm_ir_optimized
  exe.tier_up_pending.wait()
  np.testing.assert_array_equal(_bits(plain.execute([x])[0]), _bits(exe.execute([x])[0]))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_large_math_starts_vectorized_with_library_calls_and_gives_the_same_bits(
    dt, two_core_cost_model):
  """Math whose quick code would run too long starts at the vector-call tier: the loop
  vectorizer widens calls of the library's vector copies (llvm_jit.VECTOR_CALL_TIER), no
  inlined copy of a math function; the tier-up's code gives the same bits."""
  from ember._src.backends.cpu import tiering
  with ember.enable_x64(dt == np.float64):
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-30, 30, 1_500_000), _unary_input(dt)]).astype(dt)
    y = np.abs(x) + 0.5
    with np.errstate(all="ignore"):
      f = lambda a, b: jnp.exp(jnp.log(b) + a) + jnp.sin(a) * jnp.tanh(b) - a ** 2.5
      exe = _executable(f, x, y)
      assert exe.first_tier == tiering.VECTOR_CALLS and exe.tier_up_pending is not None
      first = exe.execute([x, y])[0].copy()
      exe.tier_up_pending.wait()
      np.testing.assert_array_equal(_bits(first), _bits(exe.execute([x, y])[0]))
      with flags.override(tiered_compilation=False):
        plain = _executable(f, x, y)
      np.testing.assert_array_equal(_bits(plain.execute([x, y])[0]), _bits(first))


def test_vector_call_module_holds_calls_and_the_variants_they_name():
  from ember._src.backends.cpu import compiler
  x = np.ones((8, 40), np.float32)
  ir = _executable(lambda v: jnp.tanh(v) + jnp.sin(v), x).llvm_ir
  text = compiler._library_math(ir, vector_calls=True)
  fns = compiler._functions(text)
  assert set(fns) == {"fusion", "fusion.body", "ember.tanh.f32", "ember.sin.f32", *_FLUSH_SWITCHES}
  for name in ("ember.tanh.f32", "ember.sin.f32"):
    body = fns[name][0]
    assert body.count("\n") == 6 and '"vector-function-abi-variant"="_ZGV_LLVM_N' in body
    for variant in compiler._VARIANT.findall(body):    # declared and kept for the vectorizer
      assert f'declare <' in text and f'ptr @"{variant}"' in text
  assert len(text) * 3 < len(ir)


def test_exit_waits_for_the_tier_up_in_progress(tmp_path):
  """A tier-up still compiling when the program ends is waited for, however long it takes
  (here 6 s, past the 5 s exit used to wait): LLVM's static destructors run at exit, and a
  compile running under them aborted the process after the program's last line."""
  import subprocess
  import sys
  done = tmp_path / "done"
  script = (
      "import threading, time\n"
      "from ember._src.backends.cpu import tiering\n"
      "class Exe:\n"
      "  module_name = 'slow'\n"
      "  def upgrade(self):\n"
      f"    open({str(done)!r}, 'w').write('upgraded')\n"
      "def job():\n"
      "  time.sleep(6)\n"
      "  return {}\n"
      "tiering.submit(Exe(), job)\n"
      "time.sleep(0.2)\n"
      "print('program done', flush=True)\n")
  env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(
      __file__))))
  r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                     timeout=120, env=env)
  assert r.returncode == 0, r.stderr
  assert r.stdout == "program done\n"
  assert done.read_text() == "upgraded"


class _RecordingExe:
  """An executable whose upgrade records its name (the order the worker took the jobs in)."""

  def __init__(self, name, order):
    self.module_name, self.order = name, order

  def upgrade(self):
    self.order.append(self.module_name)


def _hold_the_worker(order):
  """Submit a tier-up that runs until the returned event is set, once the worker took it."""
  gate, started = threading.Event(), threading.Event()
  blocker = _RecordingExe("blocker", order)
  tiering.submit(blocker, lambda: (started.set(), gate.wait(30), {})[2])
  assert started.wait(30)
  return blocker, gate


def test_newest_tier_up_first_and_drop_pending():
  """The worker takes the newest submission first (the function being called now), and
  drop_pending forgets those not started: their executables keep their code, settled."""
  order = []
  tiering.drop_pending()                  # earlier tests' tier-ups
  _, gate = _hold_the_worker(order)
  for i in range(4):
    tiering.submit(_RecordingExe(f"f{i}", order), dict)
  gate.set()
  assert tiering.wait_idle(timeout=60)
  assert order == ["blocker", "f3", "f2", "f1", "f0"]

  del order[:]
  blocker, gate = _hold_the_worker(order)
  late = [_RecordingExe(f"g{i}", order) for i in range(3)]
  for e in late:
    tiering.submit(e, dict)
  threading.Timer(0.2, gate.set).start()
  assert tiering.drop_pending() == 3      # and it waited for the blocker in progress
  assert order == ["blocker"] and blocker.tier_up_settled.is_set()
  assert all(e.tier_up_pending.is_set() and e.tier_up_settled.is_set() for e in late)
  assert tiering.wait_idle(timeout=0)
