"""Vectorization that is checked: the CPU backend's kernels for representative fusions hold
packed vector instructions for the host (read from the generated assembly), and compute
what NumPy computes in float64; reductions are bitwise deterministic run to run and for any
split of the outer loop (the runtime may split it across threads).

Host ISA: x86-64 kernels use ymm (AVX2) or zmm (AVX-512) registers in packed `v...ps` forms,
xmm registers in SSE's `...ps` forms on a host without AVX or under --cpu_max_isa=SSE4_2;
aarch64 kernels use NEON `v<n>.4s` registers. Other hosts skip the assembly checks.
"""
import platform
import re

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.backends.cpu import host

_MACHINE = platform.machine().lower()
_X86 = _MACHINE in ("x86_64", "amd64")
_ARM = _MACHINE in ("aarch64", "arm64")

# A packed float32 op on a 256/512-bit register (x86) or a 4 x f32 NEON register (aarch64).
_PACKED = {
    "x86": r"\bv(add|sub|mul|div|max|min|fn?m(add|sub)\d*)ps\s[^\n]*%[yz]mm",
    "arm": r"\bf(add|sub|mul|div|max|min|maxnm|minnm|mla|mls|fmla|fmls)\s+v\d+\.4s",
    "sse": r"\b(add|sub|mul|div|max|min)ps\s[^\n]*%xmm",   # --cpu_max_isa=SSE4_2
}
_ADD = {"x86": r"\bvaddps\s[^\n]*%[yz]mm", "arm": r"\bfadd\s+v\d+\.4s",
        "sse": r"\baddps\s[^\n]*%xmm"}
_MAX = {"x86": r"\bvmaxps\s[^\n]*%[yz]mm", "arm": r"\bfmax\s+v\d+\.4s",
        "sse": r"\bmaxps\s[^\n]*%xmm"}
# SSE4.2 has no fused multiply-add: a packed multiply (then an add)
_FMA = {"x86": r"\bvfn?m(add|sub)\d+ps\s[^\n]*%[yz]mm", "arm": r"\bfml[as]\s+v\d+\.4s",
        "sse": r"\bmulps\s[^\n]*%xmm"}
_DIV = {"x86": r"\b(div|idiv)[bwlq]?\s", "arm": r"\b[su]div\s",   # integer division
        "sse": r"\b(div|idiv)[bwlq]?\s"}


def isa() -> str:
  """The patterns' key for the code ember generates: the host's, or the level
  EMBER_FLAGS=--cpu_max_isa caps it to (CI runs these tests under AVX2 and SSE4_2)."""
  if _X86:
    return "x86" if host.has("avx") else "sse"
  if _ARM:
    return "arm"
  pytest.skip(f"no vector-instruction patterns for host {_MACHINE!r}")


def kernel_asm(f, *args) -> dict[str, str]:
  """The assembly of each kernel of jit(f) on args: {kernel name: its function body}."""
  exe = ember.jit(f).lower(*args).compile().runtime_executable()
  asm = exe.asm
  out = {}
  for t in exe.thunks:
    if t.kind != "kernel":
      continue
    m = re.search(rf"^{re.escape(t.name)}:\n(.*?)^\.Lfunc_end", asm, re.S | re.M)
    assert m, f"kernel {t.name} not found in the assembly"
    out[t.name] = m.group(1)
  return out


def rng_data(*shape, seed=0, lo=-2.0, hi=2.0):
  return np.random.default_rng(seed).uniform(lo, hi, shape).astype(np.float32)


def softmax(x):
  e = jnp.exp(x - x.max(axis=-1, keepdims=True))
  return e / e.sum(axis=-1, keepdims=True)


def np_softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def layernorm(x, g, b):
  mu = x.mean(axis=-1, keepdims=True)
  var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
  return (x - mu) / jnp.sqrt(var + 1e-5) * g + b


def np_layernorm(x, g, b):
  mu = x.mean(-1, keepdims=True)
  return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5) * g + b


def logsumexp(x):
  m = x.max(axis=-1, keepdims=True)
  return jnp.log(jnp.exp(x - m).sum(axis=-1)) + m[:, 0]


def np_logsumexp(x):
  m = x.max(-1, keepdims=True)
  return np.log(np.exp(x - m).sum(-1)) + m[:, 0]


# name -> (function, NumPy float64 reference, args, the patterns every kernel must hold,
#          rtol). Tolerances: f32 sums of n terms are within n*eps of the float64 sum in the
# worst case and ~sqrt(n)*eps in practice (eps = 6e-8); transcendentals are a few ulp.
CASES = {
    "exp_log_elementwise": (lambda x, y: jnp.exp(jnp.log(x) + y),
                            lambda x, y: np.exp(np.log(x) + y),
                            (rng_data(64, 256, lo=0.5), rng_data(64, 256, seed=1)),
                            (_FMA,), 4e-6),
    "row_sum": (lambda x: x.sum(axis=1), lambda x: x.sum(1), (rng_data(64, 512),),
                (_ADD,), 2e-5),
    "row_max": (lambda x: x.max(axis=1), lambda x: x.max(1), (rng_data(64, 512),),
                (_MAX,), 0),
    "column_sum": (lambda x: x.sum(axis=0), lambda x: x.sum(0), (rng_data(512, 64),),
                   (_ADD,), 2e-5),
    "broadcast_row_plus_column": (lambda r, c: r[None, :] * 2.0 + c[:, None],
                                  lambda r, c: r[None, :] * 2.0 + c[:, None],
                                  (rng_data(256), rng_data(64, seed=1)), (_PACKED,), 1e-6),
    "softmax": (softmax, np_softmax, (rng_data(64, 256),), (_PACKED,), 2e-6),
    "logsumexp": (logsumexp, np_logsumexp, (rng_data(64, 256),), (_PACKED,), 2e-6),
    "layernorm": (layernorm, np_layernorm,
                  (rng_data(64, 256), rng_data(256, seed=1), rng_data(256, seed=2)),
                  (_PACKED,), 2e-5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_kernels_hold_packed_vector_instructions(name):
  f, ref, args, patterns, _ = CASES[name]
  host = isa()
  kernels = kernel_asm(f, *args)
  assert kernels
  for kname, body in kernels.items():
    for pat in patterns:
      assert re.search(pat[host], body), f"{name}: kernel {kname} has no {pat[host]!r}\n{body[:4000]}"


@pytest.mark.parametrize("name", ["broadcast_row_plus_column", "softmax", "layernorm"])
def test_no_integer_division_in_kernels(name):
  # index maps of broadcasts and row reductions are loop variables, not div/mod of a flat
  # index per element
  f, _, args, _, _ = CASES[name]
  host = isa()
  for kname, body in kernel_asm(f, *args).items():
    assert not re.search(_DIV[host], body), f"{name}: {kname} divides integers"


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_match_numpy_float64(name):
  f, ref, args, _, rtol = CASES[name]
  expected = ref(*[a.astype(np.float64) for a in args])
  got = np.asarray(ember.jit(f)(*args))
  assert got.dtype == np.float32 and got.shape == expected.shape
  np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol * np.abs(expected).max())


def test_row_reductions_fuse_into_their_consumers():
  # softmax, logsumexp and layernorm: one kernel each, their row statistics computed once per
  # row (hoisted out of the minor loop), softmax's exp once per row into a row buffer
  for f, args, n in ((softmax, (rng_data(8, 32),), 1), (logsumexp, (rng_data(8, 32),), 1),
                     (layernorm, (rng_data(8, 32), rng_data(32), rng_data(32)), 1)):
    exe = ember.jit(f).lower(*args).compile().runtime_executable()
    assert [t.kind for t in exe.thunks] == ["kernel"] * n


REDUCTIONS = {
    "row_sum": lambda x: x.sum(axis=1),
    "column_sum": lambda x: x.sum(axis=0),
    "sum_3d_middle": lambda x: x.reshape(8, 64, 64).sum(axis=1),
    "softmax": softmax,
    "logsumexp": logsumexp,
    "mean_all": lambda x: x.mean(),
    "argmax_rows": lambda x: jnp.argmax(x, axis=1),
    "argmax_columns": lambda x: jnp.argmax(x, axis=0),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_are_deterministic_for_any_outer_split(name):
  """The same module on the same data gives the same bits every run, and for any split of
  the outer loop into sub-ranges (what a thread pool does): vector accumulators reassociate
  the sum in a fixed order per output element, never across the outer dimension."""
  x = rng_data(512, 64, seed=3) * 1e3
  f = REDUCTIONS[name]
  jf = ember.jit(f)
  first = np.asarray(jf(x))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(jf(x)), first)
  exe = jf.lower(x).compile().runtime_executable()
  (out,) = exe.execute([x])
  np.testing.assert_array_equal(out, first)
  frame = exe._frame([x])
  for t in exe.thunks:                        # every kernel over uneven sub-ranges
    if t.kind == "kernel" and t.splittable:
      cuts = sorted({0, 1, t.outer // 3, t.outer // 2 + 1, t.outer})
      for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
        t.run(frame, lo, hi)
    else:
      t.run(frame)
  np.testing.assert_array_equal(exe._results(frame)[0], first)


@pytest.mark.parametrize("shape,perm", [((300, 257), (1, 0)), ((256, 256), (1, 0)),
                                        ((4, 130, 70), (0, 2, 1)), ((70, 4, 260), (2, 1, 0)),
                                        ((70, 260, 4), (1, 0, 2))])
def test_tiled_transpose_matches_numpy_for_any_split(shape, perm):
  x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  f = lambda x: jnp.transpose(x, perm) + 0.5
  exe = ember.jit(f).lower(x).compile().runtime_executable()
  expected = np.transpose(x, perm) + np.float32(0.5)
  (out,) = exe.execute([x])
  np.testing.assert_array_equal(out, expected)
  (t,) = [t for t in exe.thunks if t.kind == "kernel"]
  frame = exe._frame([x])
  cuts = sorted({0, 1, t.outer // 3, t.outer // 2 + 1, t.outer})
  for lo, hi in reversed(list(zip(cuts, cuts[1:]))):
    t.run(frame, lo, hi)
  np.testing.assert_array_equal(exe._results(frame)[0], expected)


@pytest.mark.parametrize("row", [True, False])
def test_expensive_value_read_through_broadcast(row):
  # sin(x)[:, None] + y: sin is computed once per row, hoisted out of the minor loop, so
  # it fuses (one kernel); sin(x)[None, :] + y.T would be computed once per element of the
  # output, so sin stays a kernel of its own. Both compute the same values.
  x, y = rng_data(5), rng_data(5, 7)
  f = (lambda x, y: jnp.sin(x)[:, None] + y) if row else (lambda x, y: jnp.sin(x)[None, :] + y.T)
  exe = ember.jit(f).lower(x, y).compile().runtime_executable()
  assert len(exe.thunks) == (1 if row else 2)
  s, y64 = np.sin(x.astype(np.float64)), y.astype(np.float64)
  expected = s[:, None] + y64 if row else s[None, :] + y64.T
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x, y)), expected, rtol=1e-6, atol=1e-6)


def _softmax_plus_total(np_, x):
  e = np_.exp(x - x.max(1, keepdims=True))
  return e / e.sum(1, keepdims=True) + e.sum()


# Fixed-order float sums (codegen.reductions: `fixed_lanes`): a sum/product along the minor
# dim of a short prologue is explicit vector IR (4 vectors of 64 bytes of accumulators), no
# `reassoc`.
FIXED = {   # name -> (function, NumPy float64 reference, whether it is fixed-order)
    "row_sum": (lambda x: x.sum(axis=1), lambda x: x.sum(1), True),
    "sum_of_squares": (lambda x: (x * x).sum(axis=1), lambda x: (x * x).sum(1), True),
    "variance": (lambda x: ((x - x.mean(1, keepdims=True)) ** 2).mean(1),
                 lambda x: x.var(1), True),
    "sum_all": (lambda x: x.sum(), lambda x: x.sum(), True),
    "row_product": (lambda x: jnp.prod(1 + x / 64, axis=1), lambda x: np.prod(1 + x / 64, 1),
                    True),
    "softmax": (softmax, np_softmax, True),
    "sum_of_exp": (lambda x: jnp.exp(x).sum(axis=1), lambda x: np.exp(x).sum(1), True),
    "logsumexp": (logsumexp, np_logsumexp, True),
    "logsumexp_all": (lambda x: ember.nn.logsumexp(x),   # split in 8 stages, reshaped
                      lambda x: np.log(np.exp(x - x.max()).sum()) + x.max(), True),
    # the row buffer of exp holds one row: the total over all rows recomputes it
    "softmax_plus_total": (lambda x: _softmax_plus_total(jnp, x),
                           lambda x: _softmax_plus_total(np, x), True),
    "reshaped_rows": (lambda x: x.reshape(3, 11, -1).sum(axis=(1, 2)),
                      lambda x: x.reshape(3, 11, -1).sum(axis=(1, 2)), True),
    "long_prologue": (lambda x: ((((x + 1) * 2 - 3) * x + 4) * x - 5).sum(axis=1) * x[:, 0],
                      lambda x: ((((x + 1) * 2 - 3) * x + 4) * x - 5).sum(1) * x[:, 0],
                      False),
    "column_broadcast": (lambda x: (x * x[0]).sum(axis=1), lambda x: (x * x[0]).sum(1),
                         False),   # x[0] varies along the minor dim: not a hoisted value
}


@pytest.mark.parametrize("n", [64, 65, 127, 300, 2000])
@pytest.mark.parametrize("name", sorted(FIXED))
def test_fixed_order_sums_match_numpy(name, n):
  """Every length around the block of 4 x 16 float32 lanes (64: one block, no tail; 65,
  127: a tail; 300, 2000), eager and jitted; fixed-order sums carry no `reassoc` flag."""
  f, ref, fixed = FIXED[name]
  x = rng_data(33, n, seed=n)
  want = ref(x.astype(np.float64))
  rtol = 4e-6 * np.sqrt(n)     # f32 sums of n terms: ~sqrt(n) eps in practice
  for got in (f(x), ember.jit(f)(x)):
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol,
                               atol=rtol * np.abs(want).max())
  ir_text = ember.jit(f).lower(x).compile().runtime_executable().llvm_ir
  assert ("reassoc" not in ir_text) == fixed
  assert ("<16 x float>" in ir_text) == fixed


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_and_min_reductions_take_vector_lanes_and_keep_nans_and_signed_zeros(op):
  """Exact in any order, they take the fixed-order lanes for the quick tier's speed."""
  f = getattr(jnp, op)
  x = rng_data(6, 300, seed=9)
  x[1, 299] = np.nan                     # in the tail
  x[2, 5] = np.nan                       # in a vector block
  x[3] = 0.0
  x[3, ::3] = -0.0
  x[4, 100] = np.inf
  x[4, 101] = -np.inf
  got = np.asarray(ember.jit(lambda v: f(v, axis=1))(x))
  want = getattr(np, op)(x, axis=1)
  np.testing.assert_array_equal(got, want)
  assert np.signbit(got[3]) == (op == "min")   # max(-0, +0) = +0, min(-0, +0) = -0
  ir_text = ember.jit(lambda v: f(v, axis=1)).lower(x).compile().runtime_executable().llvm_ir
  assert f"llvm.{op}imum.v16f32" in ir_text


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [64, 67, 129, 1000])
def test_vector_lane_max_and_min_match_numpy_with_nans_in_any_lane(n, dtype):
  """The fixed-order max/min lanes (on AVX-512DQ: vrange per vector, NaNs tracked in lanes
  of their own): every row holds one NaN at another position (each accumulator and lane,
  the tail), or signed zeros in both orders, or infinities; values equal NumPy's."""
  with ember.enable_x64(dtype == np.float64):
    x = rng_data(n + 8, n, seed=n, lo=-3.0, hi=-1.0).astype(dtype)
    for r in range(n):
      x[r, r] = np.nan                    # row r: NaN at position r
    x[n] = 0.0
    x[n, ::2] = -0.0
    x[n + 1] = -0.0
    x[n + 1, -1] = 0.0                    # the one +0 last (in the tail when there is one)
    x[n + 2, 3] = np.inf
    x[n + 3, n // 2] = -np.inf
    x[n + 4] = np.nan                     # all NaN
    for op in ("max", "min"):
      got = np.asarray(ember.jit(lambda v: getattr(v, op)(axis=1))(x))
      want = getattr(np, op)(x, axis=1)
      np.testing.assert_array_equal(got, want)
      assert got.dtype == dtype
      zeros = got[n:n + 2]
      assert list(np.signbit(zeros)) == ([False, False] if op == "max" else [True, True])
      np.testing.assert_array_equal(np.asarray(ember.jit(lambda v: getattr(v, op)())(x[n:])),
                                    getattr(np, op)(x[n:]))


def test_vector_lane_max_uses_vrange_on_avx512dq():
  """Structure: on hosts with AVX-512DQ the lanes' max is one vrange per vector
  (codegen.reductions.range_lanes_ok), elsewhere llvm.maximum only."""
  from ember._src.backends.cpu import host
  x = rng_data(8, 256)
  ir_text = ember.jit(lambda v: v.max(axis=1)).lower(x).compile().runtime_executable().llvm_ir
  fast = host.is_x86() and host.has("avx512dq")
  assert ("llvm.x86.avx512.mask.range.ps.512" in ir_text) == fast
  if fast:
    body = kernel_asm(lambda v: v.max(axis=1), x)
    assert any(re.search(r"\bvrangeps\s+\$5,[^\n]*%zmm", a) for a in body.values())


@pytest.mark.parametrize("n", [1000, 1001, 2000, 2047])
def test_fixed_order_sums_end_in_vectors_without_a_scalar_tail(n):
  """A row's tail (after the blocks of 4 x 16 lanes) adds its whole vectors, then one vector
  ending at the row's end with the lanes already counted masked to -0: no scalar add is
  left in the kernel; sums within float32 rounding of NumPy's float64 sum (also eager)."""
  x = rng_data(9, n, seed=n)
  f = lambda v: v.sum(axis=1)
  ir_text = ember.jit(f).lower(x).compile().runtime_executable().llvm_ir
  assert "fadd float " not in ir_text and "fadd <16 x float>" in ir_text
  want = x.astype(np.float64).sum(1)
  rtol = 4e-6 * np.sqrt(n)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), want, rtol=rtol,
                             atol=rtol * np.abs(want).max())
  x[3, n - 1] = np.nan                   # in the overlapping vector's own lanes
  x[4, n - 14] = np.inf                  # in a lane that vector masks (for 1000, 1001)
  got = np.asarray(ember.jit(f)(x))
  assert np.isnan(got[3]) and got[4] == np.inf and np.isfinite(np.delete(got, [3, 4])).all()


@pytest.mark.parametrize("op", ["max", "min"])
def test_vector_lane_max_and_min_have_no_scalar_tail(op):
  """max/min are exact in any order and idempotent: a row of 1000 (15 blocks of 4 x 16
  lanes, then 40) ends in whole vectors and one vector overlapping the last block, no
  scalar loop (40 dependent steps per row doubled a row max's time)."""
  x = rng_data(8, 1000)
  f = lambda v: getattr(v, op)(axis=1)
  ir_text = ember.jit(f).lower(x).compile().runtime_executable().llvm_ir
  assert f"llvm.{op}imum.f32" not in ir_text and f"llvm.{op}imum.v16f32" in ir_text
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(x)), getattr(np, op)(x, axis=1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [7, 16, 17, 100, 1001])
def test_softmax_row_buffer_filled_in_vectors_matches_numpy(n, dtype):
  """softmax's exp(x - max) row buffer is filled in 64-byte vectors (explicit vector IR,
  the math library's vector forms) then the tail element by element; values as NumPy's
  float64 softmax within float32/float64 rounding, -inf and NaN rows included."""
  def softmax(v):
    e = jnp.exp(v - v.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
  with ember.enable_x64(dtype == np.float64):
    x = (rng_data(6, n, seed=n, lo=-20.0, hi=20.0)).astype(dtype)
    x[1, n // 2] = -np.inf
    x[2, n - 1] = np.nan
    got = np.asarray(ember.jit(softmax)(x))
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    tol = 4e-6 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-3)
    lanes = 64 // np.dtype(dtype).itemsize
    ir_text = ember.jit(softmax).lower(x).compile().runtime_executable().llvm_ir
    vec = "<16 x float>" if dtype == np.float32 else "<8 x double>"
    assert (f"store {vec}" in ir_text) == (n >= lanes)


def test_fixed_order_sums_keep_signed_zeros_infinities_and_nans():
  x = np.full((4, 200), -0.0, np.float32)
  x[1, 7] = np.inf
  x[2, 150] = np.nan
  x[3] = 1.0
  got = np.asarray(ember.jit(lambda v: v.sum(axis=1))(x))
  np.testing.assert_array_equal(got, [0.0, np.inf, np.nan, 200.0])
  assert not np.signbit(got[0])   # jnp.sum starts from +0: +0 + -0 = +0
  with ember.enable_x64():
    x64 = rng_data(5, 100).astype(np.float64)
    got = np.asarray(ember.jit(lambda v: (v * v).sum(axis=1))(x64))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, (x64 * x64).sum(1), rtol=1e-14)


def test_sums_of_a_few_terms_run_in_order():
  """At most SEQUENTIAL_MAX terms per output: no reassoc (tier-stable), still correct."""
  x = rng_data(100, 12, seed=4)
  f = lambda v: (v * 3).sum(axis=1)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), (x.astype(np.float64) * 3).sum(1),
                             rtol=1e-6, atol=1e-6)
  assert "reassoc" not in ember.jit(f).lower(x).compile().runtime_executable().llvm_ir
