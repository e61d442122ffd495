"""Small dots (issue 18): matrix-vector products (`G @ v`, `G.T @ v`), vector-matrix products
(`v @ G`, `v @ G.T`) and square matmuls of every size 1..128, eager and jitted, against NumPy
float64 at float32's rounding (tolerance: tests/test_dot_fusion.py's K-term bound); which
generated kernel runs them (dot_kernels: the matrix-vector body, the vector-matrix body,
never a NumPy/BLAS thunk, at any size); and the same bits whatever the threads' split."""
import re

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.backends.cpu import cost_model, dot_kernels, executable as ex, host
from ember._src.backends.cpu.compiler import compile_module
from ember._src.driver.compilation import clone_module
from ember._src.passes.buffer_assignment import assign_buffers
from ember._src.passes.pipeline import optimize

F32, F64 = np.float32, np.float64
SIZES = [1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 100, 127, 128]

pytestmark = pytest.mark.usefixtures("check_compiled")
_rng = [np.random.default_rng(0)]


@pytest.fixture(autouse=True)
def _seeded(request):
  """The same data for a test whatever ran before it in this process."""
  _rng[0] = np.random.default_rng(list(request.node.nodeid.encode()))


def data(*shape, dtype=F32):
  return _rng[0].standard_normal(shape).astype(dtype)


def check(f, args, k, dtype=F32):
  """`f(*args, xp)` eager and jitted against NumPy in float64 (K-term dot rounding)."""
  ref = np.asarray(f(*[np.asarray(a, F64) for a in args], np), F64)
  eps = np.finfo(dtype).eps
  atol = 8 * max(k, 1) * eps * np.prod([np.max(np.abs(a)) for a in args])
  for fn in (lambda *a: f(*a, jnp), ember.jit(lambda *a: f(*a, jnp))):
    out = fn(*args)
    assert out.dtype == dtype and out.shape == ref.shape
    np.testing.assert_allclose(np.asarray(out, F64), ref, rtol=4 * eps, atol=atol)


VECTOR_DOTS = {
    "G @ v": (lambda G, v, xp: G @ v, lambda m, k: [data(m, k), data(k)]),
    "G.T @ v": (lambda G, v, xp: G.T @ v, lambda m, k: [data(k, m), data(k)]),
    "v @ G": (lambda G, v, xp: v @ G, lambda m, k: [data(k, m), data(k)]),
    "v @ G.T": (lambda G, v, xp: v @ G.T, lambda m, k: [data(m, k), data(k)]),
    "tanh(G @ v) + b": (lambda G, v, b, xp: xp.tanh(G @ v) + b,
                        lambda m, k: [data(m, k), data(k), data(m)]),
    "2 * (v @ G) - b": (lambda G, v, b, xp: 2 * (v @ G) - b,
                        lambda m, k: [data(k, m), data(k), data(m)]),
    "G @ x[:, None]": (lambda G, x, xp: G @ x[:, None], lambda m, k: [data(m, k), data(k)]),
}


@pytest.mark.parametrize("name", list(VECTOR_DOTS))
@pytest.mark.parametrize("n", SIZES)
def test_vector_dots_square(name, n):
  f, make = VECTOR_DOTS[name]
  check(f, make(n, n), n)


@pytest.mark.parametrize("name", list(VECTOR_DOTS))
@pytest.mark.parametrize("m, k", [(1, 100), (100, 1), (3, 129), (130, 7), (37, 64), (5, 600)])
def test_vector_dots_rectangular(name, m, k):
  f, make = VECTOR_DOTS[name]
  check(f, make(m, k), k)


@pytest.mark.parametrize("name", ["G @ v", "v @ G", "G.T @ v", "tanh(G @ v) + b"])
def test_vector_dots_f64(name):
  f, make = VECTOR_DOTS[name]
  with ember.enable_x64():
    check(f, [a.astype(F64) for a in make(45, 77)], 77, dtype=F64)


@pytest.mark.parametrize("n", SIZES)
def test_square_matmuls(n):
  check(lambda a, b, xp: a @ b, [data(n, n), data(n, n)], n)


@pytest.mark.parametrize("dtype", [F32, F64])
def test_b_rows_one_panel_apart(dtype):
  """B with exactly one column panel per row (N = NR vectors: 64 float32 on AVX-512) is read
  in place rather than packed: more rows than one micro-tile, several K blocks, batched,
  with a fused epilogue."""
  nrw = dot_kernels.micro_tile()[1] * host.vector_lanes(dtype)
  kc = dot_kernels.PANEL_BYTES // (nrw * np.dtype(dtype).itemsize)
  k = 2 * kc + 3
  a, b = data(2, 20, k, dtype=dtype), data(2, k, nrw, dtype=dtype)
  with ember.enable_x64(dtype == F64):
    check(lambda a, b, xp: xp.tanh(a @ b) + 0.1, [a, b], k, dtype=dtype)
    check(lambda a, b, xp: a[0] @ b[1], [a, b], k, dtype=dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("vectors", [0.6, 1, 1.25, 1.9, 2, 2.5])
def test_narrow_panels(vectors, dtype):
  """Outputs one or two vectors wide (a convolution's 16 or 32 features, a classifier's
  logits) run the one- and two-vector micro-kernels on panels packed that wide: from B's
  rows, or its columns when transposed (`x @ w.T`), batched, over several K blocks."""
  n = max(1, int(vectors * host.vector_lanes(dtype)))
  nrw = dot_kernels.micro_tile()[1] * host.vector_lanes(dtype)
  k = 2 * (dot_kernels.PANEL_BYTES // (nrw * np.dtype(dtype).itemsize)) + 5
  m = 45
  # (A scaled by 1/sqrt(k): results of order 1, whose rounding differences from the checked
  # mode's reference evaluator stay within its absolute float32 tolerance, 1e-5)
  a = lambda *shape: (data(*shape, dtype=dtype) / np.sqrt(k)).astype(dtype)
  with ember.enable_x64(dtype == F64):
    check(lambda a, b, xp: a @ b, [a(m, k), data(k, n, dtype=dtype)], k, dtype)
    check(lambda a, b, xp: a @ b.T, [a(m, k), data(n, k, dtype=dtype)], k, dtype)
    check(lambda a, b, xp: xp.matmul(a.transpose(0, 2, 1), b),
          [a(3, k, m), data(3, k, n, dtype=dtype)], k, dtype)


@pytest.mark.parametrize("b, m, k", [(3, 5, 7), (4, 33, 20), (2, 1, 9)])
def test_batched_matrix_vector(b, m, k):
  check(lambda A, x, xp: xp.einsum("bmk,bk->bm", A, x), [data(b, m, k), data(b, k)], k)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("b, m, k", [(8, 250, 1000), (3, 129, 517), (2, 1, 2000)])
def test_batched_matrix_vector_large(b, m, k, dtype):
  """einsum puts the vector first (`v[b] @ A[b].T`, one row of C per batch): the
  matrix-vector body runs it as its transpose, at any size; fused too."""
  A, x = (data(b, m, k) / np.sqrt(k)).astype(dtype), data(b, k, dtype=dtype)
  exe = executable(lambda A, x: jnp.einsum("bmk,bk->bm", A, x), A, x)
  assert [type(t) for t in exe.thunks] == [ex.KernelThunk]
  assert bodies(exe) == {"ember_gemv_body"}
  with ember.enable_x64(dtype == F64):
    check(lambda A, x, xp: xp.einsum("bmk,bk->bm", A, x), [A, x], k, dtype)
    check(lambda A, x, xp: xp.tanh(xp.einsum("bmk,bk->bm", A, x)) + 1, [A, x], k, dtype)


def test_momentum_step():
  """bench/cpu_workloads.py's momentum step: G @ v, then the transposed product r @ G."""
  def step(G, y, v, m, xp):
    if xp is np:
      g = G.T @ (G @ v - y)
    else:
      g = ember.grad(lambda v: 0.5 * jnp.sum((G @ v - y) ** 2))(v)
    return v - 0.01 * (0.9 * m + g)
  check(step, [data(100, 100), data(100), data(100), data(100)], 100 * 100)


# --------------------------------------------------------------------------------------
# Structure: which kernel runs them
# --------------------------------------------------------------------------------------

def executable(f, *args, chunks=None):
  module = optimize(clone_module(ember.jit(f).lower(*args).compiler_ir()))
  if chunks is None:
    return compile_module(module, assign_buffers(module))
  with cost_model.forced_chunks(chunks):
    return compile_module(module, assign_buffers(module))


def bodies(exe) -> set:
  return set(re.findall(r"declare void @\"?(ember_\w+_body)_", exe.llvm_ir))


@pytest.mark.parametrize("f, body", [
    (lambda G, v: G @ v, "ember_gemv_body"),
    (lambda G, v: v @ G.T, "ember_gemv_body"),            # transposed: G @ v
    (lambda G, v: jnp.tanh(G @ v) * 2, "ember_gemv_body"),
    (lambda G, v: v @ G, "ember_gevm_body"),              # column units of one row
    (lambda G, v: G.T @ v, "ember_gevm_body"),            # transposed: v @ G
    (lambda G, v: jnp.sin(v @ G) + 1, "ember_gevm_body"),
])
def test_small_vector_dots_run_generated_kernels(f, body):
  """Every small vector dot is one generated kernel thunk (no NumPy matmul, no
  DotEpilogueThunk) calling the intended shared body."""
  G, v = data(100, 100), data(100)
  exe = executable(f, G, v)
  assert [type(t) for t in exe.thunks] == [ex.KernelThunk]
  assert bodies(exe) == {body}


def test_layouts():
  def layout(f, *shapes):
    module = optimize(clone_module(ember.jit(f).lower(*[data(*s) for s in shapes])
                                   .compiler_ir()))
    (dot,) = [i for c in module.computations for i in c.instrs if i.opcode == "dot"]
    return dot_kernels.dot_layout(dot)
  gemv = layout(lambda G, v: G @ v, (30, 20), (20,))
  assert (gemv.M, gemv.K, gemv.N, gemv.rows_per_unit, gemv.cols_per_unit) == (30, 20, 1, 1, None)
  assert dot_kernels.is_gemv(gemv)
  vecmat = layout(lambda G, v: v @ G, (20, 30), (20,))
  assert (vecmat.M, vecmat.N, vecmat.rows_per_unit, vecmat.cols_per_unit) == (1, 30, None, 1)
  assert dot_kernels.generated_kernel_ok(vecmat) and not dot_kernels.is_gemv(vecmat)
  assert dot_kernels.is_gevm(vecmat)
  assert dot_kernels.is_gemv(dot_kernels.transposed(layout(lambda G, v: v @ G.T, (30, 20),
                                                           (20,))))
  tensor = layout(lambda T, v: jnp.tensordot(v, T, 1), (20, 6, 5), (20,))  # 5 columns a unit
  assert (tensor.outer, tensor.cols_per_unit) == (6, 5)


@pytest.mark.parametrize("f, ref", [
    (lambda G, v, b: jnp.tanh(G @ v) + b, lambda G, v, b: np.tanh(G @ v) + b),
    (lambda G, v, b: jnp.tanh(v @ G) + b, lambda G, v, b: np.tanh(v @ G) + b),
    # the dot's value in a stack tile (the output is another dtype)
    (lambda G, v, b: (G.T @ v + b).astype(jnp.float16), lambda G, v, b: G.T @ v + b),
    (lambda G, v, b: (v @ G + b).astype(jnp.float16), lambda G, v, b: v @ G + b),
])
def test_split_across_threads_same_bits(f, ref):
  """The pool's chunks start mid-matrix: any split gives the bits of one call."""
  G, v, b = data(300, 300), data(300), data(300)
  outs = []
  for chunks in (1, 3, 7):
    exe = executable(f, G, v, b, chunks=chunks)
    assert [(type(t), t.nchunks) for t in exe.thunks] == [(ex.KernelThunk, chunks)]
    outs.append(np.asarray(exe.execute([G, v, b])[0]))
  for o in outs[1:]:
    np.testing.assert_array_equal(o, outs[0])
  want = ref(*(a.astype(F64) for a in (G, v, b)))
  np.testing.assert_allclose(outs[0].astype(F64), want, rtol=1e-3, atol=2e-2)


def test_tensor_vector_product():
  """v @ T with T of rank 3: the output's dimension 0 holds runs of columns."""
  check(lambda T, v, xp: xp.tanh(xp.tensordot(v, T, 1)) - 1.0, [data(20, 6, 5), data(20)], 20)


LARGE_VECTOR_DOTS = [
    (lambda G, v, xp: G @ v, "ember_gemv_body", False),
    (lambda G, v, xp: v @ G, "ember_gevm_body", False),
    (lambda G, v, xp: G.T @ v, "ember_gevm_body", False),     # as v @ G
    (lambda G, v, xp: v @ G.T, "ember_gemv_body", False),     # as G @ v
    (lambda G, v, xp: xp.tanh(G @ v + v), "ember_gemv_body", True),
    (lambda G, v, xp: xp.tanh(v @ G) * 2 - v, "ember_gevm_body", True),
]


@pytest.mark.parametrize("f, body, fused", LARGE_VECTOR_DOTS)
@pytest.mark.parametrize("n", [1000, 1024, 1031])
def test_large_vector_dots_stream_the_matrix(f, body, fused, n):
  """A vector dot over a matrix larger than L2 (4 MB and more) still runs a generated body
  that reads the matrix once in memory order (as BLAS's gemv: no DotThunk, no Python on
  the call), split across threads; a 4 KiB row stride (n = 1024) included. (G scaled by
  1/sqrt(n): results of order 1, within the checked mode's absolute float32 tolerance.)"""
  G, v = data(n, n) / np.float32(np.sqrt(n)), data(n)
  exe = executable(lambda G, v: f(G, v, jnp), G, v)
  assert [type(t) for t in exe.thunks] == [ex.KernelThunk]
  assert bodies(exe) == {body}
  check(f, [G, v], n)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("name", ["G @ v", "v @ G", "G.T @ v", "v @ G.T", "tanh(G @ v) + b",
                                  "2 * (v @ G) - b"])
@pytest.mark.parametrize("m, k", [(1000, 1000), (4000, 33), (33, 4000), (517, 1029)])
def test_large_vector_dots(name, m, k, dtype):
  f, make = VECTOR_DOTS[name]
  G, *rest = make(m, k)
  with ember.enable_x64(dtype == F64):
    check(f, [(G / np.sqrt(k)).astype(dtype)] + [a.astype(dtype) for a in rest], k, dtype)


@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("f", [
    lambda G, v: v @ G, lambda G, v: G @ v,
    lambda G, v: jnp.tanh(v @ G) + v, lambda G, v: (G.T @ v).astype(jnp.float16)])
def test_large_vector_dots_same_bits_split(f, dtype):
  """Column ranges of the vector-matrix body that start mid-vector and mid-block (odd
  chunk counts over 1500 columns, blocks of GEVM_BLOCK_BYTES) give the bits of one call."""
  G, v = data(1500, 1500, dtype=dtype), data(1500, dtype=dtype)
  outs = []
  with ember.enable_x64(dtype == F64):
    for chunks in (1, 2, 3, 7):
      exe = executable(f, G, v, chunks=chunks)
      assert [(type(t), t.nchunks) for t in exe.thunks] == [(ex.KernelThunk, chunks)]
      outs.append(np.asarray(exe.execute([G, v])[0]))
  for o in outs[1:]:
    np.testing.assert_array_equal(o, outs[0])


def test_vector_dot_cost_analysis():
  """cost_analysis counts the dot's 2MK flops and the bytes it moves, not BLAS's."""
  G, v = data(1000, 1000), data(1000)
  for f in (lambda G, v: G @ v, lambda G, v: v @ G):
    cost = ember.jit(f).lower(G, v).compile().cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    assert cost["flops"] == 2 * 1000 * 1000
    assert cost["bytes accessed"] == 4 * (1000 * 1000 + 2 * 1000)
