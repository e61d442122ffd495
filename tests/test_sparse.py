"""jax.experimental.sparse (BCOO): todense of each result against the dense computation in
NumPy float64, on tricky layouts (n_batch=1, n_dense=1, duplicates, padding indices)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental import sparse

TOL = dict(rtol=1e-6, atol=1e-6)
M = np.array([[0, 1.5, 0, 2], [3, 0, 0, 0], [0, 0, -4, 5]], np.float32)
V = np.arange(8, dtype=np.float32).reshape(4, 2) / 3
B3 = np.array([[[0, 1, 0], [2, 0, 0]], [[0, 0, 3], [4, 5, 0]]], np.float32)


def close(x, want):
  np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(want, np.float64), **TOL)


def dup():
  """(3, 4) with a duplicated index and a padding entry (index == shape)."""
  data = jnp.array([1., 2., 3., 9.])
  idx = jnp.array([[0, 1], [0, 1], [2, 3], [3, 4]])
  return sparse.BCOO((data, idx), shape=(3, 4))


@pytest.mark.parametrize("n_batch,n_dense", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_fromdense_todense_layouts(n_batch, n_dense):
  A = sparse.BCOO.fromdense(B3, n_batch=n_batch, n_dense=n_dense)
  assert (A.n_batch, A.n_dense) == (n_batch, n_dense)
  close(A.todense(), B3)
  close(sparse.bcoo_todense(sparse.bcoo_fromdense(B3, nse=6, n_batch=n_batch,
                                                  n_dense=n_dense)), B3)


def test_fromdense_matches_jax_layout():
  A = sparse.BCOO.fromdense(M, nse=7)
  # JAX 0.12.1: nonzeros in row-major order, padding indices = shape, data 0
  np.testing.assert_array_equal(A.indices, [[0, 1], [0, 3], [1, 0], [2, 2], [2, 3], [3, 4],
                                            [3, 4]])
  close(A.data, [1.5, 2, 3, -4, 5, 0, 0])
  assert A.nse == 7 and A.indices.dtype == np.int32


def test_duplicates_padding_sum_sort():
  D = dup()
  want = np.zeros((3, 4)); want[0, 1] = 3; want[2, 3] = 3
  close(D.todense(), want)
  S = sparse.bcoo_sum_duplicates(D)
  assert S.nse == 2
  np.testing.assert_array_equal(S.indices, [[0, 1], [2, 3]])
  close(S.data, [3, 3])
  S4 = sparse.bcoo_sum_duplicates(D, nse=4)
  np.testing.assert_array_equal(S4.indices[2:], [[3, 4], [3, 4]])
  close(S4.todense(), want)
  T = sparse.bcoo_sort_indices(sparse.BCOO((jnp.array([1., 2.]), jnp.array([[2, 0], [0, 1]])),
                                           shape=(3, 4)))
  np.testing.assert_array_equal(T.indices, [[0, 1], [2, 0]])
  close(T.data, [2, 1])
  E = sparse.bcoo_extract(D, jnp.asarray(M))
  close(E.data, [1.5, 0, 5, 0])   # a duplicate reads the value once; padding reads 0


def test_dot_general_sparse_dense_and_matmul():
  A = sparse.BCOO.fromdense(M)
  close(A @ V, M.astype(np.float64) @ V)
  close(V.T @ A.T, V.T.astype(np.float64) @ M.T)
  close(sparse.bcoo_dot_general(A, V, dimension_numbers=(((1,), (0,)), ((), ()))), M @ V)
  close(A @ V[:, 0], M @ V[:, 0])
  B = sparse.BCOO.fromdense(B3, n_batch=1)
  Vb = np.ones((2, 3, 2), np.float32)
  close(sparse.bcoo_dot_general(B, Vb, dimension_numbers=(((2,), (1,)), ((0,), (0,)))),
        np.einsum("bij,bjk->bik", B3, Vb))
  C = sparse.BCOO.fromdense(B3, n_dense=1)
  close(sparse.bcoo_dot_general(C, np.ones((2, 4)), dimension_numbers=(((1,), (0,)), ((), ()))),
        np.einsum("ijk,jl->ikl", B3, np.ones((2, 4))))
  close(dup() @ V, np.asarray(dup().todense()) @ V)


def test_spdot_multiply_and_sampled():
  A = sparse.BCOO.fromdense(M)
  close((A @ A.T).todense(), M @ M.T)
  close((A * A).todense(), M * M)
  close((A * 2).todense(), 2 * M)
  close(sparse.bcoo_multiply_dense(A, M), M[M != 0] ** 2)
  W = np.arange(16, dtype=np.float32).reshape(4, 4) / 7
  S = sparse.bcoo_dot_general_sampled(M, W, A.indices,
                                      dimension_numbers=(((1,), (0,)), ((), ())))
  full = M.astype(np.float64) @ W
  close(S, [full[i, j] for i, j in np.asarray(A.indices)])


def test_structural_ops():
  A = sparse.BCOO.fromdense(M)
  close(sparse.bcoo_transpose(A, permutation=(1, 0)).todense(), M.T)
  close(sparse.bcoo_reduce_sum(A, axes=(0,)).todense(), M.sum(0))
  close(sparse.BCOO.fromdense(B3, n_batch=1).sum(0).todense(), B3.sum(0))
  close(sparse.bcoo_slice(A, start_indices=(1, 1), limit_indices=(3, 4)).todense(), M[1:, 1:])
  close(sparse.bcoo_slice(A, start_indices=(0, 0), limit_indices=(3, 4), strides=(2, 3))
        .todense(), M[::2, ::3])
  close(sparse.bcoo_dynamic_slice(A, (1, 2), (2, 2)).todense(), M[1:3, 2:4])
  close(sparse.bcoo_rev(A, (0, 1)).todense(), M[::-1, ::-1])
  close(sparse.bcoo_reshape(A, new_sizes=(2, 6)).todense(), M.reshape(2, 6))
  close(sparse.bcoo_concatenate([A, A], dimension=1).todense(), np.concatenate([M, M], 1))
  close(sparse.bcoo_concatenate([A, A], dimension=0).todense(), np.concatenate([M, M], 0))
  X = sparse.bcoo_broadcast_in_dim(A, shape=(2, 3, 4), broadcast_dimensions=(1, 2))
  close(X.todense(), np.broadcast_to(M, (2, 3, 4)))
  close(sparse.bcoo_squeeze(sparse.BCOO.fromdense(M[None]), dimensions=(0,)).todense(), M)
  U = sparse.bcoo_update_layout(A, n_batch=1, on_inefficient=None)
  assert U.n_batch == 1
  close(U.todense(), M)
  with pytest.raises(sparse.SparseEfficiencyError):
    sparse.bcoo_update_layout(A, n_batch=1)


def test_jit_grad_vmap():
  A = sparse.BCOO.fromdense(M)
  close(ember.jit(lambda a, v: a @ v)(A, V), M @ V)
  out = ember.jit(lambda m: sparse.BCOO.fromdense(m, nse=5))(M)
  assert isinstance(out, sparse.BCOO)
  close(out.todense(), M)
  gd, gv = ember.grad(lambda d, v: (sparse.BCOO((d, A.indices), shape=A.shape) @ v).sum(),
                      argnums=(0, 1))(A.data, V)
  rows, cols = np.asarray(A.indices).T
  close(gd, V.sum(1)[cols])
  close(gv, np.broadcast_to(M.sum(0)[:, None], V.shape))
  gj = ember.jit(ember.grad(lambda d: sparse.BCOO((d, A.indices), shape=A.shape)
                            .todense().sum()))(A.data)
  close(gj, np.ones(5))
  close(ember.vmap(lambda v: A @ v, in_axes=1)(V), (M @ V).T)


def test_sparsify_and_constructors():
  A = sparse.BCOO.fromdense(M)
  f = sparse.sparsify(lambda a, v: (2 * a) @ v + (a.T @ a.T.T).sum() - (-a).sum(0) @ v)
  close(f(A, V), (2 * M) @ V + (M.T @ M).sum() + M.sum(0) @ V)
  r = sparse.sparsify(lambda a, b: a + b)(A, A)
  assert isinstance(r, sparse.BCOO)
  close(r.todense(), 2 * M)
  close(sparse.todense(A), M)
  close(sparse.empty((2, 3)).todense(), np.zeros((2, 3)))
  close(sparse.eye(3, 4, k=1).todense(), np.eye(3, 4, k=1))
  R = sparse.random_bcoo(ember.random.key(0), (2, 4, 5), nse=3, n_batch=1)
  # JAX 0.12.1's draw, bit for bit (the same keys, the same samplers)
  np.testing.assert_array_equal(R.indices, [[[0, 0], [0, 3], [1, 4]], [[3, 1], [1, 2], [0, 4]]])
  np.testing.assert_allclose(R.data, [[0.842314, 0.182379, 0.227178],
                                      [0.120726, 0.191813, 0.722015]], rtol=1e-5)
  R = sparse.random_bcoo(ember.random.key(0), (4, 5, 2), nse=0.3, n_dense=1,
                         sorted_indices=True)
  assert R.nse == 6 and R.indices_sorted
  np.testing.assert_array_equal(R.indices[:, 0], [0, 0, 1, 1, 2, 3])
  with pytest.raises(ValueError, match="nse"):
    sparse.random_bcoo(ember.random.key(0), (2, 2), nse=5)


def test_errors():
  A = sparse.BCOO.fromdense(M)
  with pytest.raises(ValueError, match="shape"):
    sparse.BCOO((jnp.ones(3), jnp.zeros((2, 2), int)), shape=(3, 4))
  with pytest.raises(TypeError, match="bcoo_dot_general"):
    sparse.bcoo_dot_general(A, np.ones((3, 2)), dimension_numbers=(((1,), (0,)), ((), ())))
  with pytest.raises(ember.errors.ConcretizationTypeError):
    ember.jit(lambda m: sparse.bcoo_fromdense(m))(M)
  with pytest.raises(ValueError, match="bcoo_extract"):
    sparse.bcoo_extract(A, np.ones((2, 2)))


def test_layouts_match_jax():
  """Stored data and indices as JAX 0.12.1 builds them (not only the dense values)."""
  A = sparse.BCOO.fromdense(M)
  D = sparse.BCOO((jnp.array([1., 2., 3., 9., 4.]),
                   jnp.array([[2, 3], [0, 1], [2, 3], [3, 4], [0, 0]])), shape=(3, 4))
  S = sparse.bcoo_sum_duplicates(D, nse=6)
  close(S.data, [4, 2, 4, 9, 0, 0])   # padding's data sits at the sentinel, as in JAX
  np.testing.assert_array_equal(S.indices, [[0, 0], [0, 1], [2, 3], [3, 4], [3, 4], [3, 4]])
  P = sparse.bcoo_slice(A, start_indices=(1, 1), limit_indices=(3, 4))
  close(P.data, [0, 0, 0, -4, 5])
  np.testing.assert_array_equal(P.indices, [[2, 3], [2, 3], [2, 3], [1, 1], [1, 2]])
  Q = sparse.bcoo_dynamic_slice(A, (1, 2), (2, 2))
  close(Q.data, [-4, 5, 0, 0])
  np.testing.assert_array_equal(Q.indices, [[1, 0], [1, 1], [2, 2], [2, 2]])
  U = sparse.bcoo_update_layout(A, n_batch=1, on_inefficient=None)
  close(U.data, [[1.5, 2, 0, 0, 0], [0, 0, 3, 0, 0], [0, 0, 0, -4, 5]])
  np.testing.assert_array_equal(U.indices[2, :, 0], [1, 3, 0, 2, 3])
  Ud = sparse.bcoo_update_layout(A, n_dense=1, on_inefficient=None)
  np.testing.assert_array_equal(Ud.indices[:, 0], [0, 0, 1, 2, 2])
  close(Ud.data[3], [0, 0, -4, 0])
  C = sparse.bcoo_fromdense(B3, n_batch=1, n_dense=1)
  U0 = sparse.bcoo_update_layout(C, n_batch=0)
  np.testing.assert_array_equal(U0.indices, [[0, 0], [0, 1], [1, 0], [1, 1]])
  U2 = sparse.bcoo_update_layout(C, n_batch=2, n_dense=0, on_inefficient=None)
  assert U2.data.shape == (2, 2, 6)
  close(U2.data[1, 1], [0, 0, 0, 4, 5, 0])
  close(U2.todense(), B3)
  sq = A @ A.T
  assert sq.nse == 9
  np.testing.assert_array_equal(sq.indices[:, 0], [0, 0, 0, 1, 1, 1, 2, 2, 2])
  close(sq.data, [6.25, 0, 10, 0, 9, 0, 10, 0, 41])
  mul = A * A
  assert mul.nse == 25
  close(mul.data[:6], [2.25, 4, 9, 16, 25, 0])
  np.testing.assert_array_equal(mul.indices[5], [4, 4])


def test_gather():
  A = sparse.BCOO.fromdense(M)
  dn = ember.lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                        start_index_map=(0,))
  r = sparse.bcoo_gather(A, jnp.array([[2], [0]]), dn, (1, 4))
  # JAX 0.12.1: the gathered axis becomes a batch axis
  assert r.n_batch == 1 and r.nse == 4
  close(r.todense(), M[[2, 0]])
  close(r.data, [[-4, 5, 0, 0], [1.5, 2, 0, 0]])
  dn2 = ember.lax.GatherDimensionNumbers(offset_dims=(0,), collapsed_slice_dims=(1,),
                                         start_index_map=(1,))
  close(sparse.bcoo_gather(A, jnp.array([[3], [1], [0]]), dn2, (3, 1)).todense(),
        M[:, [3, 1, 0]])


def test_conv_general_dilated():
  x = np.array([[[0, 1., 0, 0, 2, 0, 3]]], np.float32)
  k = np.array([[[1., 0, -2]]], np.float32)
  for pad in ("SAME", "VALID", [(2, 1)]):
    r = sparse.bcoo_conv_general_dilated(sparse.BCOO.fromdense(x), k, window_strides=(1,),
                                         padding=pad)
    close(r.todense(), ember.lax.conv_general_dilated(x, k, (1,), pad))
  r = sparse.bcoo_conv_general_dilated(sparse.BCOO.fromdense(x), sparse.BCOO.fromdense(k),
                                       window_strides=(1,), padding="SAME")
  # JAX 0.12.1: one stored element per pair of stored elements
  close(r.data.ravel(), [1, -2, 2, -4, 3, -6])
  np.testing.assert_array_equal(r.indices.ravel(), [2, 0, 5, 3, 7, 5])


def test_sparsify_structural_and_elementwise():
  A = sparse.BCOO.fromdense(M)
  f = lambda x: (jnp.abs(x) ** 2, jnp.sin(x) / 2., x.reshape(6, 2), x[1:3], jnp.flip(x, 0),
                 jnp.concatenate([x, x]), jnp.broadcast_to(x, (2, 3, 4)), jnp.tanh(x),
                 ember.lax.dynamic_slice(x, (1, 1), (2, 2)), jnp.exp(x))
  outs = sparse.sparsify(f)(A)
  for o, w in zip(outs, f(jnp.asarray(M))):
    close(sparse.todense(o), w)
  assert all(isinstance(o, sparse.BCOO) for o in outs[:-1])   # exp(0) != 0: dense
  close(ember.jit(sparse.sparsify(lambda a, v: a @ v))(A, V), M @ V)


def test_sparsify_with_tracer():
  A = sparse.BCOO.fromdense(M)
  f = lambda a, v: ((2 * a) @ v + (a.T @ a.T.T).sum() - (-a).sum(0) @ v, jnp.sin(a), a + a)
  seen = []

  def g(a, v):
    seen.append(a)
    return f(a, v)
  outs = sparse.sparsify(g, use_tracer=True)(A, V)
  assert isinstance(seen[0], sparse.SparseTracer) and seen[0].shape == (3, 4)
  assert [type(o).__name__ for o in outs] == ["Array", "BCOO", "BCOO"]
  for o, w in zip(outs, f(M, V)):
    close(sparse.todense(o), w)
  close(sparse.sparsify(lambda a: a.sum(), use_tracer=True)(A), M.sum())   # 0-d: dense
  close(A.sum(), M.sum())


def test_vmap_over_sparse_arrays():
  B = sparse.bcoo_fromdense(B3, n_batch=1)
  close(ember.vmap(lambda a: a.todense())(B), B3)
  r = ember.vmap(lambda m: sparse.BCOO.fromdense(m, nse=3))(B3)
  assert isinstance(r, sparse.BCOO) and r.shape == (2, 2, 3) and r.n_batch == 1
  close(r.todense(), B3)
  close(ember.vmap(lambda a, v: a @ v)(B, np.ones((2, 3), np.float32)), B3.sum(-1))
  close(ember.jit(ember.vmap(lambda a: a.T))(B).todense(), B3.transpose(0, 2, 1))
  close(ember.vmap(lambda a: a.todense())(sparse.bcsr_fromdense(B3, n_batch=1)), B3)


def test_getitem_and_from_scipy():
  A = sparse.BCOO.fromdense(M)
  for item in (1, -1, (slice(None), 2), (slice(1, None), slice(None, None, 2))):
    r = A[item]
    assert isinstance(r, sparse.BCOO)
    close(r.todense(), M[item])
  close(A[jnp.array([0, 2])].todense(), M[[0, 2]])
  ss = pytest.importorskip("scipy.sparse")
  S = sparse.BCOO.from_scipy_sparse(ss.csr_matrix(M))
  assert S.indices_sorted and S.nse == 5
  close(S.todense(), M)
