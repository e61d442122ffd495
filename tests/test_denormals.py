"""Subnormal floats as JAX 0.12's CPU backend treats them: flushed to zero while a
computation runs (XLA:CPU runs with the processor's flush-to-zero and denormals-are-zero
modes on; ember's kernels and its NumPy paths that compute what a kernel would do the same:
ember/_src/base/denormals.py).

`CASES` holds what real JAX 0.12.1 gives: (name, function source, argument source, x64,
result dtype, result bits, the eager result's bits where they differ from jit's). The bits
are the result's as unsigned integers (complex: real and imaginary parts), one integer for an
array of one repeated value. Generated with /work/jaxvenv (`jax.jit(f)(*args)` and
`f(*map(jnp.asarray, args))`, the names below bound to jax's modules).

The rest: the caller's thread keeps its modes (its NumPy keeps subnormals), host callbacks
run with IEEE subnormals, kernels flush on any thread (the pool's workers, a thread of the
user's, the executor), the HLO evaluator that checks compiled code flushes as it does,
constant folding does not (as XLA's)."""
import ctypes
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import denormals
from ember._src.backends.cpu import compiler as cpu_compiler
from ember._src.backends.cpu import denormals as native_modes
from ember._src.backends.cpu import executable as exm
from tests.fuzz import eager_alone

SUB, TINY = np.float32(1e-39), np.float32(2.0 ** -126)
HALF_TINY = np.float32(2.0 ** -127)    # a subnormal NumPy computes from TINY on an IEEE thread
ENV = {"jnp": jnp, "lax": lax, "np": np, "jax": ember, "SUB": SUB, "TINY": TINY}

CASES = [
    # arithmetic reads subnormals as zero (DAZ) and writes subnormal results as zero (FTZ)
    ('mul_sub_operand', 'lambda x, y: x * y', '(SUB, np.float32(1.0001))',
     False, 'float32', [0]),
    ('mul_sub_result', 'lambda x, y: x * y', '(TINY, np.float32(0.5))',
     False, 'float32', [0]),
    ('add_subs', 'lambda x, y: x + y', '(SUB, -SUB * np.float32(0.5))',
     False, 'float32', [0]),
    ('div_sub_result', 'lambda x, y: x / y', '(TINY, np.float32(4))',
     False, 'float32', [0]),
    ('one_over_sub', 'lambda x, y: x / y', '(np.float32(1), SUB)',
     False, 'float32', [2139095040]),
    ('sqrt_sub', 'jnp.sqrt', '(SUB,)',
     False, 'float32', [0]),
    ('square_underflow', 'jnp.square', '(np.float32(1e-20),)',
     False, 'float32', [0]),
    ('exp_underflow', 'jnp.exp', '(np.float32([-88.5, -87.0, -100.0]),)',
     False, 'float32', [0, 11744903, 0]),
    ('log_sub', 'jnp.log', '(SUB,)',
     False, 'float32', [4286578688]),
    ('logistic_underflow', 'jax.nn.sigmoid', '(np.float32(-100),)',
     False, 'float32', [0]),
    ('softmax_underflow', 'jax.nn.softmax', '(np.float32([0.0, -90.0]),)',
     False, 'float32', [1065353216, 0]),
    ('sum_subs', 'jnp.sum', '(np.full(8, np.float32(1e-39)),)',
     False, 'float32', [0]),
    ('sum_subs_long', 'jnp.sum', '(np.full(10000, np.float32(1e-39)),)',
     False, 'float32', [0]),
    ('cumsum_subs', 'jnp.cumsum', '(np.full(4, np.float32(1e-39)),)',
     False, 'float32', 0),
    ('dot_underflow', 'jnp.dot',
     '(np.full((4, 4), np.float32(1e-20)), np.full((4, 4), np.float32(1e-20)))',
     False, 'float32', 0),
    ('dot_underflow_large', 'jnp.dot',
     '(np.full((128, 128), np.float32(1e-22)), np.full((128, 128), np.float32(1e-22)))',
     False, 'float32', 0),
    ('complex_mul', 'lambda x, y: x * y', '(np.complex64(1e-39 + 1e-39j), np.complex64(1))',
     False, 'complex64', 0),
    ('integer_pow', 'lambda x: x ** 3', '(np.float32(1e-13),)',
     False, 'float32', [0]),
    ('exp2_underflow', 'jnp.exp2', '(np.float32(-140),)',
     False, 'float32', [0]),
    ('ldexp_underflow', 'jnp.ldexp', '(np.float32(1), np.int32(-140))',
     False, 'float32', [0]),
    ('fori_halving', 'lambda x: lax.fori_loop(0, 3, lambda i, c: c * 0.5, x)',
     '(np.float32(4e-38),)',
     False, 'float32', [0]),
    ('scan_halving', 'lambda x: lax.scan(lambda c, _: (c * 0.5, c), x, None, length=4)[1]',
     '(np.float32(4e-38),)',
     False, 'float32', [22661085, 14272477, 0, 0]),
    # comparisons, max/min, sign: a subnormal is a zero of its sign
    ('gt_zero', 'lambda x: x > 0', '(SUB,)',
     False, 'bool', [0]),
    ('eq_zero', 'lambda x: x == 0', '(SUB,)',
     False, 'bool', [1]),
    ('to_bool', 'lambda x: x.astype(bool)', '(SUB,)',
     False, 'bool', [0]),
    ('where_positive', 'lambda x: jnp.where(x > 0, 1.0, 2.0)', '(SUB,)',
     False, 'float32', [1073741824]),
    ('max_sub_zero', 'jnp.maximum', '(SUB, np.float32(0))',
     False, 'float32', [0]),
    ('max_zero_sub', 'jnp.maximum', '(np.float32(0), SUB)',
     False, 'float32', [0]),
    ('min_sub_zero', 'jnp.minimum', '(SUB, np.float32(0))',
     False, 'float32', [0]),
    ('reduce_max_subs', 'jnp.max', '(np.float32([1e-39, 1e-39]),)',
     False, 'float32', [0]),
    ('argmax_sub', 'jnp.argmax', '(np.float32([0, 1e-39, 0]),)',
     False, 'int32', [0]),
    ('clip_sub', 'lambda x: jnp.clip(x, -1.0, 1.0)', '(SUB,)',
     False, 'float32', [0]),
    ('sign_subs', 'jnp.sign', '(np.float32([1e-39, -1e-39, 0.0, -0.0, 2.0]),)',
     False, 'float32', [0, 2147483648, 0, 2147483648, 1065353216]),
    ('floor_neg_sub', 'jnp.floor', '(-SUB,)',
     False, 'float32', [2147483648]),
    ('round_sub', 'jnp.round', '(SUB,)',
     False, 'float32', [0]),
    ('sort_subs_and_zeros', 'jnp.sort', '(np.float32([1e-39, 0.0, -1e-39, -0.0]),)',
     False, 'float32', [713624, 0, 2148197272, 2147483648]),
    ('argsort_subs_and_zeros', 'jnp.argsort', '(np.float32([1e-39, 0.0, -1e-39, -0.0]),)',
     False, 'int32', [0, 1, 2, 3]),
    ('remainder_sub', 'lambda x, y: x % y', '(SUB, np.float32(-1.5))',
     False, 'float32', [713624]),
    ('nextafter_from_sub', 'jnp.nextafter',
     '(SUB * np.float32([1, 1, -1, 1, 0, 0]), np.float32([1, 0, 1, -1, 1e-39, -1]))',
     False, 'float32', [713625, 0, 2148197271, 713623, 713624, 2147483649]),
    ('vmap_softmax_remainder', 'lambda x: jax.vmap(jax.nn.softmax)(x) % -1.5',
     '(np.float32([[0.0, -90.0]]),)',
     False, 'float32', [3204448256, 0]),
    # casts: float32 <-> float64 flush; float32 -> bfloat16 rounds the bits (kept); bfloat16
    # computes in float32 (flushed); float16 too, where its subnormals are normal (kept)
    ('f32_sub_to_f64', 'lambda x: x.astype(jnp.float64)', '(SUB,)',
     True, 'float64', [0]),
    ('f64_to_f32_sub', 'lambda x: x.astype(jnp.float32)', '(np.float64([1e-39, 2.0 ** -130]),)',
     True, 'float32', 0),
    ('f64_to_bf16_sub', 'lambda x: x.astype(jnp.bfloat16)', '(np.float64([1e-40, -1e-39]),)',
     True, 'bfloat16', [0, 32768]),
    ('f32_sub_to_bf16', 'lambda x: x.astype(jnp.bfloat16)', '(np.float32([1e-39, -1e-40]),)',
     False, 'bfloat16', [11, 32769]),
    ('f32_sub_to_f16', 'lambda x: x.astype(jnp.float16)', '(SUB,)',
     False, 'float16', [0]),
    ('bf16_sub_times_one', 'lambda x, y: x * y', '(jnp.bfloat16(1e-39), jnp.bfloat16(1))',
     False, 'bfloat16', [0]),
    ('f16_sub_times_one', 'lambda x, y: x * y', '(np.float16(1e-6), np.float16(1))',
     False, 'float16', [17]),
    ('f16_sub_sum', 'jnp.sum', '(np.full(4, np.float16(1e-6)),)',
     False, 'float16', [68]),
    ('f64_sub_times_one', 'lambda x, y: x * y', '(np.float64(1e-310), np.float64(1))',
     True, 'float64', [0]),
    ('f64_sub_result', 'lambda x, y: x * y', '(np.float64(2.0 ** -1022), np.float64(0.5))',
     True, 'float64', [0]),
    ('f64_sum_subs', 'jnp.sum', '(np.full(8, np.float64(1e-310)),)',
     True, 'float64', [0]),
    # moving bits without arithmetic keeps them
    ('identity', 'lambda x: x', '(SUB,)',
     False, 'float32', [713624]),
    ('reshape', 'lambda x: x.reshape(1, 1)', '(SUB,)',
     False, 'float32', [713624]),
    ('neg', 'lambda x: -x', '(SUB,)',
     False, 'float32', [2148197272]),
    ('abs', 'jnp.abs', '(-SUB,)',
     False, 'float32', [713624]),
    ('select', 'lambda c, x, y: jnp.where(c, x, y)', '(np.bool_(True), SUB, np.float32(1))',
     False, 'float32', [713624]),
    ('copysign', 'jnp.copysign', '(SUB, np.float32(-1))',
     False, 'float32', [2148197272]),
    ('concatenate', 'lambda x: jnp.concatenate([x[None], -x[None]])', '(SUB,)',
     False, 'float32', [713624, 2148197272]),
    ('gather', 'lambda x, i: x[i]', '(np.full(3, np.float32(1e-39)), np.int32(1))',
     False, 'float32', [713624]),
    ('scatter_set', 'lambda x, y: x.at[0].set(y)', '(np.zeros(2, np.float32), SUB)',
     False, 'float32', [713624, 0]),
    ('scatter_add', 'lambda x, y: x.at[0].add(y)', '(np.zeros(2, np.float32), SUB)',
     False, 'float32', 0),
    ('pad', 'lambda x: jnp.pad(x, 1)', '(np.full(1, np.float32(1e-39)),)',
     False, 'float32', [0, 713624, 0]),
    ('times_one_literal', 'lambda x: x * 1.0', '(SUB,)',
     False, 'float32', [713624], [0]),
    ('reduce_precision', 'lambda x: lax.reduce_precision(x, 8, 7)', '(SUB,)',
     False, 'float32', [720896]),
    ('bitcast_from_int', 'lambda x: lax.bitcast_convert_type(x, jnp.float32)', '(np.uint32(1),)',
     False, 'float32', [1]),
    ('bitcast_then_mul', 'lambda x, y: lax.bitcast_convert_type(x, jnp.float32) * y',
     '(np.uint32(1), np.float32(1))',
     False, 'float32', [0]),
    ('cond_passes', 'lambda p, x: lax.cond(p, lambda x: x, lambda x: -x, x)',
     '(np.bool_(True), SUB)',
     False, 'float32', [713624]),
    # host-side conversions keep them; the argument's is host-side
    ('f64_argument_canonicalized', 'lambda x: x', '(np.float64(1e-40),)',
     False, 'float32', [71362]),
    # constant folding (compile time, on the caller's thread) keeps them
    ('folded_product', 'lambda: jnp.float32(2.0 ** -126) * jnp.float32(0.5)', '()',
     False, 'float32', [4194304], [0]),
]
NAMES = [c[0] for c in CASES]


def _case(name):
  (entry,) = [c for c in CASES if c[0] == name]
  name, fn, args, x64, dtype, want, eager = (entry + (None,))[:7]
  return eval(fn, ENV), eval(args, ENV), x64, np.dtype(dtype), want, eager


def _bits(a) -> list:
  a = np.asarray(a)
  if a.dtype.kind == "c":
    a = np.stack([a.real, a.imag], -1)
  u = a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind in "fV" else a.astype(np.int64)
  return [int(v) for v in u.ravel()]


def _check(got, dtype, want):
  got = np.asarray(got)
  assert got.dtype == dtype
  bits = _bits(got)
  assert bits == (want if isinstance(want, list) else [want] * len(bits)), bits[:8]


def _ieee_here() -> bool:
  """Whether this thread computes with subnormals (its modes are the IEEE default)."""
  return np.float32(TINY) * np.float32(0.5) == HALF_TINY and np.float32(SUB) > 0


@pytest.mark.parametrize("name", NAMES)
def test_jit_gives_jax_bits(name):
  fn, args, x64, dtype, want, _ = _case(name)
  with ember.enable_x64(x64):
    _check(ember.jit(fn)(*args), dtype, want)
  assert _ieee_here()


@pytest.mark.parametrize("name", NAMES)
def test_eager_gives_jax_bits(name):
  """Op by op: each eager primitive runs its NumPy reference or a one-op compile
  (driver/eager.py); either flushes."""
  fn, args, x64, dtype, want, eager = _case(name)
  with ember.enable_x64(x64):
    _check(fn(*[jnp.asarray(a) for a in args]), dtype, want if eager is None else eager)
  assert _ieee_here()


@pytest.mark.parametrize("name", [c[0] for c in CASES if len(c) == 6])
def test_eager_reference_and_jit_agree_op_by_op(name):
  """The fuzzer's eager_alone check on subnormal operands: each primitive's eager result,
  its NumPy reference (exact primitives) and its jit give the same bits. (Not the cases
  whose eager and jitted results differ in JAX too: a jitted `x * 1.0` is x, an eager one
  a multiplication; a jitted product of constants is folded.)"""
  fn, args, x64, *_ = _case(name)
  with ember.enable_x64(x64):
    assert eager_alone.failures(fn, [jnp.asarray(a) for a in args]) == []


def test_vmap_softmax_underflow_reaches_remainder_as_zero():
  """The issue's case: a softmax entry that underflows is 0, not a subnormal, so % -1.5
  keeps it 0 (it was -1.5: 0 < v, and the remainder takes the divisor's sign)."""
  x = np.float32([[0.0, -90.0], [0.0, -1.0]])
  f = lambda x: ember.vmap(ember.nn.softmax)(x) % -1.5
  want = np.float32([[-0.5, 0.0], [-0.768941, -1.231059]])
  for got in (f(x), ember.jit(f)(x)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    assert np.asarray(got)[0, 1] == 0


# --- the caller's modes ---------------------------------------------------------------

def test_calls_leave_the_callers_numpy_with_subnormals():
  x = np.full(5, TINY)
  ember.jit(lambda x: x * 0.5)(x).block_until_ready()
  assert _ieee_here()
  np.asarray(jnp.asarray(x) * 0.5)            # eager: a reference or a compiled op
  np.asarray(jnp.sin(jnp.asarray(x)))
  assert _ieee_here()
  assert (np.asarray(x) * np.float32(0.5) == HALF_TINY).all()


def test_a_caller_that_flushes_keeps_flushing():
  """ember restores the modes it found, whatever they were."""
  token = denormals.flush_on()
  try:
    assert token >= 0 and not _ieee_here()
    assert np.asarray(ember.jit(lambda x: x * 0.5)(np.full(3, TINY))).max() == 0
    np.asarray(jnp.asarray(np.full(3, TINY)) + 0)
    assert not _ieee_here()
    assert denormals.flush_on() == -1          # on already: nothing to restore
  finally:
    denormals.restore(token)
  assert _ieee_here()


def test_switch_tokens():
  off = denormals.flush_off()
  assert off == -1                              # (off already on an IEEE thread)
  on = denormals.flush_on()
  assert on >= 0 and on & native_modes.FLUSH_BITS == 0
  assert denormals.flush_off() == on | native_modes.FLUSH_BITS   # the register it cleared
  assert _ieee_here()
  denormals.restore(on | native_modes.FLUSH_BITS)
  assert not _ieee_here()
  denormals.restore(on)
  assert _ieee_here()
  with denormals.flushed():
    assert not _ieee_here()
    with denormals.flushed(False):
      assert _ieee_here()
    assert not _ieee_here()
  assert _ieee_here()


def test_restore_keeps_exception_flags_raised_meanwhile():
  """Only the flush bits go back: a flag an operation raised inside stays raised (NumPy's
  own warnings read flags around each of its loops, not across ember's calls)."""
  token = denormals.flush_on()
  with np.errstate(all="ignore"):
    np.float32(1) / np.float32(0)               # (raises divide-by-zero in the register)
  denormals.restore(token)
  assert _ieee_here()


# --- host callbacks -------------------------------------------------------------------

def test_callbacks_run_the_users_python_with_subnormals():
  seen = []

  def cb(x):
    seen.append((float(np.float32(TINY) * np.float32(0.5)), float(np.asarray(x))))
    return np.asarray(x)
  f = lambda x: ember.pure_callback(cb, ember.ShapeDtypeStruct((), jnp.float32), x)
  assert np.asarray(ember.jit(f)(SUB)).view(np.uint32) == SUB.view(np.uint32)  # passed through
  f(jnp.asarray(SUB))
  ember.debug.callback(lambda: seen.append((float(np.float32(TINY) * np.float32(0.5)), 0.0)))
  ember.jit(lambda x: ember.debug.callback(
      lambda v: seen.append((float(np.float32(TINY) * np.float32(0.5)), float(v))), x))(SUB)
  ember.effects_barrier()
  # JAX 0.12.1: 2**-127 in every callback; the subnormal argument arrives unchanged
  assert [s[0] for s in seen] == [float(HALF_TINY)] * 4
  assert [s[1] for s in seen][:2] == [float(SUB)] * 2
  assert _ieee_here()


# --- every thread that runs a kernel --------------------------------------------------

def _half(n):
  return ember.jit(lambda x: x * 0.5).lower(np.full(n, TINY)).compile().runtime_executable()


def test_a_kernel_flushes_on_a_thread_of_the_users():
  """A kernel called through ctypes on a fresh thread (IEEE modes): flushed results, and
  the thread's modes as they were."""
  exe = _half(64)
  out = {}

  def work():
    x = np.full(64, TINY)
    out["res"] = np.array(exe.execute([x])[0])
    out["ieee_after"] = _ieee_here()
  t = threading.Thread(target=work)
  t.start()
  t.join()
  assert out["ieee_after"] and (out["res"] == 0).all() and not np.signbit(out["res"]).any()


def test_split_kernels_flush_on_the_pools_workers():
  from ember._src.backends.cpu import cost_model, threadpool
  from ember._src.driver.compilation import compile_executable
  from ember._src.lower import lower_jaxpr
  from ember._src.passes.pipeline import optimize
  x = np.full(1 << 16, TINY)
  module = optimize(lower_jaxpr(ember.make_jaxpr(lambda x: x * 0.5)(x), "f"))
  with cost_model.forced_chunks(64):
    exe = compile_executable(module)
  assert any(t.nchunks > 1 for t in exe.thunks if t.kind == "kernel")
  for _ in range(20):
    before = threadpool.stats()[1]
    assert not np.asarray(exe.execute([x])[0]).any()
    if threadpool.stats()[1] > before:      # a worker ran chunks (the pool may be busy)
      break
  assert _ieee_here()


def test_asynchronous_calls_flush_on_the_executor():
  x = np.full((512, 512), TINY)
  f = ember.jit(lambda x: (x * 0.5).sum() + x[0, 0] * 0.5)
  outs = [f(x) for _ in range(4)]
  assert all(float(o) == 0 for o in outs)
  assert _ieee_here()


def _thunk_types(f, *args):
  return {type(t) for t in ember.jit(f).lower(*args).compile().runtime_executable().thunks}


def test_numpy_thunks_flush():
  """Thunks that compute in NumPy or BLAS (a large dot, sort) flush as kernels do."""
  # (A of 16 MB: above the AVX-512 large body's 12 MB, so BLAS runs it on every machine)
  a = np.full((2048, 2048), np.float32(1e-22))
  assert exm.DotThunk in _thunk_types(jnp.dot, a, a)
  assert not np.asarray(ember.jit(jnp.dot)(a, a)).any()     # 2048 * 1e-44: flushed
  x = np.float32([1e-39, 0.0, -1e-39, -0.0, -1.0])
  assert exm.SortThunk in _thunk_types(lax.sort, x)
  # JAX 0.12.1: the subnormals compare equal to the zeros and keep their places (stable)
  assert np.asarray(ember.jit(lax.sort)(x)).view(np.uint32).tolist() == \
      [0xbf800000, 713624, 0, 0x800ae398, 0x80000000]


@pytest.mark.skipif(not native_modes.FLUSH_BITS, reason="no flush modes on this processor")
def test_kernel_entries_bracket_the_modes():
  """A generated kernel reads, sets and restores the control register (its optimized IR)."""
  ir_text = _half(64).llvm_ir_optimized
  if native_modes.X86:
    assert "llvm.x86.sse.stmxcsr" in ir_text and ir_text.count("llvm.x86.sse.ldmxcsr") >= 3
  else:
    assert "llvm.aarch64.set.fpcr" in ir_text


# --- the checker and constant folding -------------------------------------------------

def test_hlo_evaluator_runs_a_module_as_compiled_code_does():
  """A module run flushes; a single instruction (constant folding's call) computes in the
  caller's modes."""
  from ember._src.hlo import evaluator as hlo_eval
  from ember._src.lower import lower_jaxpr
  x = np.full(3, TINY)
  module = lower_jaxpr(ember.make_jaxpr(lambda x: x * 0.5)(x), "f")
  (out,) = hlo_eval.evaluate(module, [x])
  assert not out.any() and _ieee_here()
  (mul,) = [i for i in module.entry.instrs if i.opcode == "multiply"]
  assert (hlo_eval.eval_instr(mul, [x, np.full(3, np.float32(0.5))]) == HALF_TINY).all()


def test_checked_mode_accepts_flushed_results():
  """ember_check_compiled runs the module on the HLO evaluator, which flushes as the
  kernels do: no false difference (the IEEE values would be [-1, 0.5 - 1.5 ...])."""
  f = lambda x: jnp.sign(x * 1e-30 * 1e-10) % -1.5
  x = np.float32([-88.5, 3.0, 1e12])
  with ember.config._override("ember_check_compiled", True):
    got = np.asarray(ember.jit(f)(x))
  # JAX 0.12.1: [-0. 0. -0.5]
  assert got.view(np.uint32).tolist() == [0x80000000, 0, 0xbf000000]


def test_constant_folding_keeps_subnormals():
  """XLA folds on the compiling thread (IEEE): jit(lambda: f32(2**-126) * 0.5)() is
  2**-127 in JAX 0.12.1, and the folding pass gives it here whatever thread compiles."""
  f = ember.jit(lambda: jnp.float32(2.0 ** -126) * jnp.float32(0.5))
  with denormals.flushed():
    assert np.asarray(f()) == HALF_TINY


def test_persistent_cache_key_names_the_modes():
  """Objects compiled before kernels set the modes must not load."""
  assert b"flush-denormals:%d" % native_modes.FLUSH_BITS in cpu_compiler.environment()
