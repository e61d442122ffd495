"""jax.experimental.sparse's other formats (BCSR, COO, CSR, CSC), the sparse-aware
derivatives and the format-generic api (todense/empty/eye): results against dense NumPy
float64, layouts checked against what JAX 0.12.1 builds."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental import sparse

TOL = dict(rtol=1e-6, atol=1e-6)
M = np.array([[0, 1.5, 0, 2], [3, 0, 0, 0], [0, 0, -4, 5]], np.float32)
B3 = np.array([[[0, 1, 0], [2, 0, 0]], [[0, 0, 3], [4, 5, 0]]], np.float32)
V = np.arange(4, dtype=np.float32) / 3
W = np.arange(8, dtype=np.float32).reshape(4, 2) / 5


def close(x, want):
  np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(want, np.float64), **TOL)


@pytest.mark.parametrize("cls", [sparse.COO, sparse.CSR, sparse.CSC])
def test_coo_csr_csc(cls):
  A = cls.fromdense(M)
  close(A.todense(), M)
  close(A @ V, M @ V)
  close(A @ W, M @ W)
  close(A.T.todense(), M.T)
  close(cls.fromdense(M, nse=8).todense(), M)
  close(cls._eye(3, 4, 1).todense(), np.eye(3, 4, 1))
  close(ember.jit(lambda a, b: a @ b)(A, W), M @ W)


def test_coo_csr_layouts_and_transposed_products():
  # JAX 0.12.1: COO pads (row, col) with (0, 0); CSR pads rows past indptr[-1]
  np.testing.assert_array_equal(sparse.COO.fromdense(M, nse=7).row, [0, 0, 1, 2, 2, 0, 0])
  C = sparse.CSR.fromdense(M, nse=7)
  np.testing.assert_array_equal(C.indptr, [0, 2, 3, 5])
  np.testing.assert_array_equal(C.indices, [1, 3, 0, 2, 3, 0, 0])
  A = sparse.COO.fromdense(M)
  w3 = np.arange(3, dtype=np.float32)
  close(sparse.coo_matvec(A, w3, transpose=True), M.T @ w3)
  close(sparse.coo_matmat(A, W[:3], transpose=True), M.T @ W[:3])
  close(sparse.csr_matvec(C, w3, transpose=True), M.T @ w3)
  close(sparse.csr_matmat(C, W[:3], transpose=True), M.T @ W[:3])
  close(sparse.coo_todense(A), M)
  close(sparse.csr_todense(sparse.csr_fromdense(M)), M)
  g = ember.grad(lambda d: (sparse.CSR((d, C.indices, C.indptr), shape=C.shape) @ V).sum())
  close(g(C.data), [V[1], V[3], V[0], V[2], V[3], V[0], V[0]])
  with pytest.raises(ValueError, match="coo_matvec"):
    sparse.coo_matvec(A, np.ones(3))


def test_bcsr():
  A = sparse.BCSR.fromdense(M, nse=7)
  # JAX 0.12.1's padding: column index = number of columns, after indptr[-1]
  np.testing.assert_array_equal(A.indices, [1, 3, 0, 2, 3, 4, 4])
  np.testing.assert_array_equal(A.indptr, [0, 2, 3, 5])
  close(A.todense(), M)
  close(A @ V, M @ V)
  close(sparse.bcsr_dot_general(A, W, dimension_numbers=(((1,), (0,)), ((), ()))), M @ W)
  Bb = sparse.bcsr_fromdense(B3, n_batch=1)
  assert Bb.n_batch == 1
  close(Bb.todense(), B3)
  close(sparse.bcsr_extract(A.indices, A.indptr, 2 * M), [3, 4, 6, -8, 10, 0, 0])
  close(sparse.bcsr_concatenate([A, A], dimension=0).todense(), np.concatenate([M, M]))
  close(sparse.bcsr_broadcast_in_dim(A, shape=(2, 3, 4), broadcast_dimensions=(1, 2))
        .todense(), np.broadcast_to(M, (2, 3, 4)))
  S = sparse.bcsr_sum_duplicates(A)
  assert S.nse == 5
  close(S.todense(), M)
  close(sparse.BCSR.from_bcoo(sparse.BCOO.fromdense(M)).to_bcoo().todense(), M)
  close(ember.jit(sparse.bcsr_todense)(A), M)
  g = ember.grad(lambda d: (sparse.BCSR((d, A.indices, A.indptr), shape=A.shape) @ V).sum())
  close(g(A.data), [V[1], V[3], V[0], V[2], V[3], 0, 0])


def test_sparse_ad():
  X = sparse.BCOO.fromdense(jnp.arange(6.))
  y = jnp.ones(6)
  val, g = sparse.value_and_grad(lambda X, y: X @ y)(X, y)
  close(val, 15)
  assert isinstance(g, sparse.BCOO) and g.nse == 5
  close(g.data, np.ones(5))
  gx, gy = sparse.grad(lambda X, y: X @ y, argnums=(0, 1))(X, y)
  close(gy, np.arange(6.))
  A = sparse.BCOO.fromdense(M[:2])
  for jac in (sparse.jacfwd, sparse.jacrev, sparse.jacobian):
    J = jac(lambda a, v: a @ v)(A, jnp.ones(4))
    assert isinstance(J, sparse.BCOO) and J.shape == (2, 2, 4) and J.n_batch == 1
    want = np.zeros((2, 2, 4))
    want[0, 0, [1, 3]] = 1
    want[1, 1, 0] = 1
    close(J.todense(), want)
  gs = sparse.grad(lambda a: ((a @ V) ** 2).sum())(A)
  close(gs.todense(), (2 * (M[:2] @ V))[:, None] * V[None, :] * (M[:2] != 0))


def test_api_formats_and_todense_p():
  for fmt in ("bcoo", "bcsr", "coo", "csr", "csc"):
    close(sparse.todense(sparse.eye(3, 4, k=1, sparse_format=fmt)), np.eye(3, 4, k=1))
    close(sparse.empty((2, 3), sparse_format=fmt).todense(), np.zeros((2, 3)))
  with pytest.raises(ValueError, match="sparse_format"):
    sparse.empty((2, 3), sparse_format="dia")
  A = sparse.BCOO.fromdense(M)
  close(ember.jit(sparse.todense)(A), M)
  close(sparse.todense(M), M)
  assert "todense" in str(ember.make_jaxpr(sparse.todense)(A))
  close(ember.grad(lambda d: sparse.todense(sparse.BCOO((d, A.indices), shape=A.shape))
                   .sum())(A.data), np.ones(5))
  assert sparse.todense_p.name == "todense"
  assert issubclass(sparse.CuSparseEfficiencyWarning, sparse.SparseEfficiencyWarning)
  assert issubclass(sparse.SparseEfficiencyError, ValueError)
  assert isinstance(A, sparse.JAXSparse)
  assert sparse.bcoo.BCOO is sparse.BCOO and sparse.csr.CSC is sparse.CSC


def test_linalg_lobpcg_and_spsolve():
  rng = np.random.default_rng(0)
  n = 40
  Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
  ev = np.linspace(1, 10, n)
  ev[-3:] = [20, 30, 50]
  A = ((Q * ev) @ Q.T).astype(np.float32)
  X = rng.normal(size=(n, 3)).astype(np.float32)
  theta, U, i = sparse.linalg.lobpcg_standard(A, X, m=200)
  # JAX 0.12.1: 6 iterations, theta [50.0000076, 30.0000038, 20.0000019]; f32 eigh rounding
  # makes the last digits differ, hence rtol 1e-6 on values of order 50
  np.testing.assert_allclose(np.asarray(theta), [50, 30, 20], rtol=1e-6)
  assert int(i) == 6
  np.testing.assert_allclose(np.abs(np.asarray(U).T @ Q[:, [-1, -2, -3]]), np.eye(3),
                             atol=1e-4)
  # (the callable form runs the same loop: one compile of it is enough for the suite)
  with pytest.raises(ValueError, match="must be"):
    sparse.linalg.lobpcg_standard(lambda x: jnp.ones((n - 1, 1)), X)
  with pytest.raises(ValueError, match="search dim"):
    sparse.linalg.lobpcg_standard(A, X[:, :0])
  Ms = np.array([[4, 1., 0], [1, 3, 0], [0, 2, 5]], np.float32)
  C = sparse.CSR.fromdense(Ms)
  b = np.array([1., 2, 3], np.float32)
  close(sparse.linalg.spsolve(C.data, C.indices, C.indptr, b), np.linalg.solve(Ms, b))
  g = ember.grad(lambda b: sparse.linalg.spsolve(C.data, C.indices, C.indptr, b).sum())(b)
  close(g, np.linalg.solve(Ms.T.astype(np.float64), np.ones(3)))
  with pytest.raises(ValueError, match="data types"):
    sparse.linalg.spsolve(C.data, C.indices, C.indptr, b.astype(np.int32))
