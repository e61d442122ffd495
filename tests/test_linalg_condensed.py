"""The condensed forms and what is built on them: lax.linalg's schur, hessenberg,
tridiagonal, tridiagonal_solve, ormqr, cholesky_update, symmetric_product, qdwh and the
implementation enums; scipy.linalg's schur, rsf2csf, hessenberg, sqrtm, funm,
solve_sylvester, eigh_tridiagonal, qr_multiply; numpy.linalg's multi_dot, tensorinv,
tensorsolve.

Checked eagerly and under jit: LAPACK's packed outputs (gehrd, sytrd/hetrd) against SciPy's
LAPACK wrappers in float64 (the Householder convention fixes them), Schur forms through
their defining identities (Z T Z^H = A, Z unitary, T's shape; the form itself is unique
only up to the order of eigenvalues), the rest against SciPy/NumPy in float64. Tolerances:
backward-stable factorizations reconstruct A to ~ n eps |A|: float32 2e-5 on n <= 6
matrices of norm ~ 1-10, float64 1e-12."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy.linalg as SL
from ember._src.base.config import config
from ember.lax import linalg as L

RNG = np.random.default_rng(34)
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12}


@pytest.fixture
def x64():
  with ember.enable_x64():
    yield


def rand(shape, dtype=np.float64):
  x = RNG.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * RNG.standard_normal(shape)
  return x.astype(dtype)


def both(f, **kw):
  return [f, ember.jit(f, **kw)]


def H(x):
  return np.conj(np.swapaxes(x, -1, -2))


def check_schur(a, t, z, tol):
  t, z = np.asarray(t), np.asarray(z)
  n = a.shape[-1]
  scale = max(1.0, np.abs(a).max())
  np.testing.assert_allclose(z @ t @ H(z), a, atol=tol * scale * n)
  np.testing.assert_allclose(H(z) @ z, np.eye(n), atol=tol * n)
  if np.iscomplexobj(a):
    assert np.all(np.tril(t, -1) == 0)
    return
  assert np.all(np.tril(t, -2) == 0)
  sub = np.diagonal(t, -1, axis1=-2, axis2=-1)
  assert not np.any((sub[..., 1:] != 0) & (sub[..., :-1] != 0))   # 2x2 blocks only
  for k in np.flatnonzero(sub):   # standardized blocks: equal diagonal, complex pair
    assert t[k, k] == pytest.approx(t[k + 1, k + 1], abs=tol * scale)
    assert t[k, k + 1] * t[k + 1, k] < 0


# --------------------------------------------------------------------------------------
# lax.linalg.schur
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_lax_schur(dtype):
  a = rand((6, 6), dtype)
  for f in both(L.schur):
    t, z = f(a)
    assert t.dtype == dtype and z.dtype == dtype
    check_schur(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), t, z,
                TOL[dtype])
  w = np.linalg.eigvals(np.asarray(t, np.complex128))
  want = np.linalg.eigvals(a.astype(np.complex128))
  assert max(np.abs(want - x).min() for x in w) < 1e-4    # the same spectrum


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lax_schur_float64(x64, dtype):
  for a in (rand((7, 7), dtype), np.diag([1.0, 2, 3]).astype(dtype),
            np.array([[0.0, 1], [-1, 0]], dtype), np.zeros((3, 3), dtype),
            np.triu(np.ones((4, 4)), 1).astype(dtype)):     # nilpotent (defective)
    t, z = L.schur(a)
    check_schur(a, t, z, TOL[dtype])


def test_lax_schur_without_vectors_and_batched(x64):
  a = rand((3, 4, 4))
  out = ember.jit(lambda x: L.schur(x, compute_schur_vectors=False))(a)
  assert len(out) == 1 and out[0].shape == (3, 4, 4)
  t, z = ember.vmap(L.schur)(a)
  for i in range(3):
    check_schur(a[i], t[i], z[i], 1e-12)
    np.testing.assert_allclose(out[0][i], t[i], atol=1e-12)


def test_lax_schur_errors():
  with pytest.raises(ValueError, match="square"):
    L.schur(np.ones((2, 3), np.float32))
  with pytest.raises(TypeError, match="rank at least 2"):
    L.schur(np.ones(3, np.float32))
  with pytest.raises(TypeError, match="dtype int32"):
    L.schur(np.ones((2, 2), np.int32))
  with pytest.raises(NotImplementedError, match="sort"):
    L.schur(np.eye(2, dtype=np.float32), sort_eig_vals=True)


# --------------------------------------------------------------------------------------
# hessenberg, tridiagonal: LAPACK's packing
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lax_hessenberg_matches_lapack(x64, dtype):
  lapack = pytest.importorskip("scipy.linalg.lapack")
  a = rand((5, 5), dtype)
  want_a, want_tau, _ = getattr(lapack, ("d" if dtype == np.float64 else "z") + "gehrd")(a)
  for f in both(L.hessenberg):
    h, taus = f(a)
    np.testing.assert_allclose(h, want_a, atol=1e-12)
    np.testing.assert_allclose(taus, want_tau[:4], atol=1e-12)


def test_lax_hessenberg_float32_batched():
  a = rand((2, 5, 5), np.float32)
  h, taus = ember.vmap(L.hessenberg)(a)
  assert h.shape == (2, 5, 5) and taus.shape == (2, 4) and h.dtype == np.float32
  hs, qs = SL.hessenberg(a[1], calc_q=True)
  np.testing.assert_allclose(np.triu(h[1], -1), hs, atol=1e-6)
  with pytest.raises(ValueError, match=r"\[..., n, n\]"):
    L.hessenberg(np.ones((2, 3), np.float32))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("lower", [True, False])
def test_lax_tridiagonal_matches_lapack(x64, dtype, lower):
  lapack = pytest.importorskip("scipy.linalg.lapack")
  a = rand((5, 5), dtype)
  a = a + H(a)
  routine = "dsytrd" if dtype == np.float64 else "zhetrd"
  want = getattr(lapack, routine)(a, lower=int(lower))[:4]
  got = ember.jit(lambda x: L.tridiagonal(x, lower=lower))(a)
  assert got[1].dtype == np.float64 and got[3].dtype == dtype
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, atol=1e-12)


def test_lax_tridiagonal_float32_and_errors():
  a = rand((4, 4), np.float32)
  a = a + a.T
  _, d, e, _ = L.tridiagonal(a)
  t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
  np.testing.assert_allclose(np.linalg.eigvalsh(t), np.linalg.eigvalsh(a), atol=2e-5)
  with pytest.raises(ValueError, match="square"):
    L.tridiagonal(np.ones((2, 3), np.float32))


# --------------------------------------------------------------------------------------
# tridiagonal_solve
# --------------------------------------------------------------------------------------

def tridiag(dl, d, du):
  return np.diag(d) + np.diag(dl[1:], -1) + np.diag(du[:-1], 1)


@pytest.mark.parametrize("dtype", [np.float32, np.complex64])
def test_tridiagonal_solve(dtype):
  n = 6
  dl, d, du = (rand(n, dtype) for _ in range(3))
  d = d + 4                                  # keep it well conditioned
  b = rand((n, 3), dtype)
  want = np.linalg.solve(tridiag(dl, d, du).astype(np.complex128), b)
  for f in both(L.tridiagonal_solve):
    x = f(dl, d, du, b)
    assert x.dtype == dtype
    np.testing.assert_allclose(x, want, atol=10 * TOL[dtype])


def test_tridiagonal_solve_pivots_batches_and_vmaps(x64):
  # a zero leading diagonal entry needs gtsv's row interchange
  dl = np.array([[0.0, 1, 2, 3], [0.0, 5, 1, 2]])
  d = np.array([[0.0, 1, 5, 1], [2.0, 0, 1, 3]])
  du = np.array([[1.0, 2, 1, 0], [1.0, 2, 3, 0]])
  b = rand((2, 4, 2))
  want = np.stack([np.linalg.solve(tridiag(dl[i], d[i], du[i]), b[i]) for i in range(2)])
  np.testing.assert_allclose(L.tridiagonal_solve(dl, d, du, b), want, atol=1e-12)
  np.testing.assert_allclose(ember.vmap(L.tridiagonal_solve)(dl, d, du, b), want, atol=1e-12)
  shared = ember.vmap(L.tridiagonal_solve, in_axes=(None, None, None, 0))(dl[0], d[0], du[0], b)
  np.testing.assert_allclose(shared[1], np.linalg.solve(tridiag(dl[0], d[0], du[0]), b[1]),
                             atol=1e-12)


def test_tridiagonal_solve_singular(x64):
  dl, d, du = np.zeros(3), np.array([1.0, 0, 1]), np.zeros(3)
  b = np.ones((3, 1))
  assert np.all(np.isnan(ember.jit(L.tridiagonal_solve)(dl, d, du, b)))
  x = L.tridiagonal_solve(dl, d, du, b, perturb_singular=True)
  assert np.all(np.isfinite(x)) and abs(x[1, 0]) > 1e10
  np.testing.assert_allclose(x[[0, 2], 0], [1, 1])


def test_tridiagonal_solve_gradients(x64):
  n = 5
  dl, d, du = rand(n), rand(n) + 4, rand(n)
  b = rand((n, 2))
  a = tridiag(dl, d, du)

  def loss(dl, d, du, b):
    return (L.tridiagonal_solve(dl, d, du, b) ** 2).sum()

  grads = ember.jit(ember.grad(loss, argnums=(0, 1, 2, 3)))(dl, d, du, b)
  x = np.linalg.solve(a, b)
  gb = np.linalg.solve(a.T, 2 * x)          # d loss / d b
  ga = -gb @ x.T                            # d loss / d A
  np.testing.assert_allclose(grads[3], gb, atol=1e-10)
  np.testing.assert_allclose(grads[1], np.diag(ga), atol=1e-10)
  np.testing.assert_allclose(grads[0][1:], np.diag(ga, -1), atol=1e-10)
  np.testing.assert_allclose(grads[2][:-1], np.diag(ga, 1), atol=1e-10)
  assert grads[0][0] == 0 and grads[2][-1] == 0


def test_tridiagonal_solve_errors():
  v = np.ones(3, np.float32)
  with pytest.raises(TypeError, match="same shape"):
    L.tridiagonal_solve(v, v, np.ones(4, np.float32), np.ones((3, 1), np.float32))
  with pytest.raises(TypeError, match="leading ndim-1"):
    L.tridiagonal_solve(v, v, v, np.ones((4, 1), np.float32))
  with pytest.raises(TypeError, match="dtype int32"):
    L.tridiagonal_solve(v, v, v, np.ones((3, 1), np.int32))


# --------------------------------------------------------------------------------------
# ormqr, cholesky_update, symmetric_product, qdwh
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr(x64, left, transpose):
  a = rand((5, 3), np.complex128)
  raw, taus = np.linalg.qr(a, mode="raw")
  packed = raw.T
  q = np.linalg.qr(a, mode="complete")[0]
  q = H(q) if transpose else q
  c = rand((5, 4) if left else (4, 5), np.complex128)
  want = q @ c if left else c @ q
  got = ember.jit(lambda a, t, c: L.ormqr(a, t, c, left=left, transpose=transpose))(
      packed, taus, c)
  np.testing.assert_allclose(got, want, atol=1e-12)


def test_ormqr_errors():
  a, t = np.ones((5, 3), np.float32), np.ones(3, np.float32)
  with pytest.raises(ValueError, match="same number of rows"):
    L.ormqr(a, t, np.ones((4, 2), np.float32))
  with pytest.raises(ValueError, match="same number of columns"):
    L.ormqr(a, t, np.ones((4, 2), np.float32), left=False)


def test_cholesky_update(x64):
  a = rand((4, 4))
  r = np.linalg.cholesky(a @ a.T + np.eye(4)).T
  w = rand(4)
  for f in both(L.cholesky_update):
    r2 = np.asarray(f(r, w))
    np.testing.assert_allclose(r2.T @ r2, r.T @ r + np.outer(w, w), atol=1e-12)
    np.testing.assert_allclose(np.abs(r2), np.abs(np.linalg.cholesky(
        r.T @ r + np.outer(w, w)).T), atol=1e-12)
  with pytest.raises(ValueError, match="square matrix and a vector"):
    L.cholesky_update(r, np.ones(3))


def test_symmetric_product():
  a, c = rand((2, 3, 4), np.float32), rand((2, 3, 3), np.float32)
  want = 2 * a @ np.swapaxes(a, -1, -2) + 0.5 * c
  for f in both(lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=0.5)):
    np.testing.assert_allclose(f(a, c), want, rtol=1e-5, atol=1e-5)
  sym = ember.jit(lambda a, c: L.symmetric_product(a, c, alpha=2.0, beta=0.5,
                                                   symmetrize_output=True))(a, c)
  low = np.tril(want)
  np.testing.assert_allclose(sym, low + np.swapaxes(np.tril(want, -1), -1, -2), rtol=1e-5,
                             atol=1e-5)
  np.testing.assert_allclose(ember.vmap(L.symmetric_product)(a, c)[1], a[1] @ a[1].T,
                             rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="square matrix of shape"):
    L.symmetric_product(a[0], a[0])


def test_qdwh():
  x = np.array([[1.0, 2, 0], [0, 1, 3], [4, 0, 1], [1, 1, 1]], np.float32)
  u, h, k, ok = L.qdwh(x)
  # JAX 0.12.1: 4 iterations, converged, and this h
  assert int(k) == 4 and bool(ok)
  np.testing.assert_allclose(h, [[4.175015, 0.39448333, 0.6431431],
                                 [0.39448333, 2.3196192, 0.6809921],
                                 [0.6431431, 0.6809921, 3.1816058]], rtol=2e-6)
  np.testing.assert_allclose(np.asarray(u) @ np.asarray(h), x, atol=2e-5)
  np.testing.assert_allclose(np.asarray(u).T @ np.asarray(u), np.eye(3), atol=2e-6)
  u2, h2, _, _ = L.qdwh(np.pad(x, ((0, 1), (0, 1))), dynamic_shape=(4, 3))
  np.testing.assert_allclose(u2[:4, :3], u, atol=1e-6)
  assert np.all(np.asarray(u2)[4:] == 0) and np.all(np.asarray(h2)[3:] == 0)
  with pytest.raises(ValueError, match="M >= N"):
    L.qdwh(x.T)


def test_implementation_enums():
  a = rand((3, 3), np.float32)
  s = a + a.T
  v, w = L.eigh(s, implementation=L.EighImplementation.QR)
  np.testing.assert_allclose(w, np.linalg.eigvalsh(s), atol=2e-5)
  with pytest.raises(NotImplementedError, match="Jacobi"):
    L.eigh(s, implementation=L.EighImplementation.JACOBI)
  for alg in (L.SvdAlgorithm.DEFAULT, L.SvdAlgorithm.QR, L.SvdAlgorithm.DIVIDE_AND_CONQUER):
    np.testing.assert_allclose(L.svd(a, algorithm=alg)[1], np.linalg.svd(a)[1], atol=2e-5)
  with pytest.raises(NotImplementedError, match="Polar"):
    L.svd(a, algorithm=L.SvdAlgorithm.POLAR)
  w = L.eig(a, implementation=L.EigImplementation.LAPACK, compute_left_eigenvectors=False,
            compute_right_eigenvectors=False)[0]
  np.testing.assert_allclose(np.sort_complex(w), np.sort_complex(np.linalg.eigvals(a)),
                             atol=2e-5)
  with pytest.raises(ValueError, match="lapack"):
    L.eig(a, implementation=L.EigImplementation.MAGMA)
  assert L.SvdAlgorithm("QR") is L.SvdAlgorithm.QR


# --------------------------------------------------------------------------------------
# scipy.linalg
# --------------------------------------------------------------------------------------

def test_scipy_schur_and_rsf2csf(x64):
  sl = pytest.importorskip("scipy.linalg")
  a = rand((5, 5))
  t, z = ember.jit(SL.schur)(a)
  check_schur(a, t, z, 1e-12)
  tc, zc = SL.schur(a, "complex")
  assert tc.dtype == np.complex128
  check_schur(a.astype(np.complex128), tc, zc, 1e-12)
  ts, zs = sl.schur(a)
  for f in both(SL.rsf2csf):
    t2, z2 = f(ts, zs)
    w2, wz = sl.rsf2csf(ts, zs)
    np.testing.assert_allclose(t2, w2, atol=1e-12)
    np.testing.assert_allclose(z2, wz, atol=1e-12)
  with pytest.raises(ValueError, match="output"):
    SL.schur(a, "bad")
  with pytest.raises(ValueError, match="must match"):
    SL.rsf2csf(ts, zs[:3, :3])


def test_scipy_hessenberg(x64):
  sl = pytest.importorskip("scipy.linalg")
  a = rand((5, 5), np.complex128)
  h, q = ember.jit(SL.hessenberg, static_argnames="calc_q")(a, calc_q=True)
  wh, wq = sl.hessenberg(a, calc_q=True)
  np.testing.assert_allclose(h, wh, atol=1e-12)
  np.testing.assert_allclose(q, wq, atol=1e-12)
  np.testing.assert_allclose(SL.hessenberg(a.real), sl.hessenberg(a.real), atol=1e-12)


def test_scipy_sqrtm_funm(x64):
  sl = pytest.importorskip("scipy.linalg")
  a = rand((5, 5))
  spd = a @ a.T + np.eye(5)
  for f in both(SL.sqrtm):
    np.testing.assert_allclose(f(spd), sl.sqrtm(spd), atol=1e-12)
    shifted = a + 4 * np.eye(5)     # no eigenvalue near the negative real axis (principal root)
    np.testing.assert_allclose(f(shifted), sl.sqrtm(shifted), atol=1e-11)
  f_exp = SL.funm(a, jnp.exp)
  np.testing.assert_allclose(f_exp, sl.expm(a), atol=1e-11)
  f2, err = SL.funm(a, jnp.exp, disp=False)
  assert float(err) == pytest.approx(sl.funm(a, np.exp, disp=False)[1], rel=1e-6)
  with pytest.raises(ValueError, match="square"):
    SL.funm(a[:3], jnp.exp)
  with pytest.raises(ValueError, match="square"):
    SL.sqrtm(a[:3])


def test_scipy_sqrtm_float32():
  a = rand((4, 4), np.float32)
  spd = a @ a.T + np.eye(4, dtype=np.float32)
  r = SL.sqrtm(spd)
  assert r.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(r) @ np.asarray(r), spd, atol=1e-4)


def test_scipy_solve_sylvester(x64):
  sl = pytest.importorskip("scipy.linalg")
  a, b, c = rand((4, 4)), rand((3, 3)), rand((4, 3))
  want = sl.solve_sylvester(a, b, c)
  np.testing.assert_allclose(ember.jit(SL.solve_sylvester)(a, b, c), want, atol=1e-11)
  np.testing.assert_allclose(SL.solve_sylvester(a, b, c, method="eigen"), want, atol=1e-10)
  batched = SL.solve_sylvester(np.stack([a, 2 * a]), np.stack([b, b]), np.stack([c, c]))
  np.testing.assert_allclose(batched[1], sl.solve_sylvester(2 * a, b, c), atol=1e-11)
  # A and -B share the eigenvalue 1: no unique solution
  assert np.all(np.isnan(SL.solve_sylvester(np.eye(2), -np.eye(2), np.ones((2, 2)))))
  with pytest.raises(ValueError, match="Incompatible shapes"):
    SL.solve_sylvester(a, b, c.T)
  with pytest.raises(ValueError, match="method"):
    SL.solve_sylvester(a, b, c, method="bad")


def test_scipy_eigh_tridiagonal(x64):
  sl = pytest.importorskip("scipy.linalg")
  d, e = rand(6), rand(5)
  np.testing.assert_allclose(ember.jit(SL.eigh_tridiagonal, static_argnames="eigvals_only")(
      d, e, eigvals_only=True), sl.eigh_tridiagonal(d, e, eigvals_only=True), atol=1e-12)
  got = SL.eigh_tridiagonal(d, e, eigvals_only=True, select="i", select_range=(1, 3))
  np.testing.assert_allclose(got, sl.eigh_tridiagonal(d, e, eigvals_only=True, select="i",
                                                      select_range=(1, 3)), atol=1e-12)
  w, v = SL.eigh_tridiagonal(d, e)
  t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
  np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-12)
  with pytest.raises(TypeError, match="same dtype"):
    SL.eigh_tridiagonal(d, e.astype(np.float32))
  with pytest.raises(ValueError, match="select_range"):
    SL.eigh_tridiagonal(d, e, select="i")


def test_scipy_qr_multiply(x64):
  sl = pytest.importorskip("scipy.linalg")
  a = rand((5, 3), np.complex128)
  for mode, c in (("right", rand((4, 5), np.complex128)), ("left", rand((3, 2), np.complex128)),
                  ("right", rand(5, np.complex128))):
    for conjugate in (False, True):
      got = SL.qr_multiply(a, c, mode=mode, conjugate=conjugate)
      want = sl.qr_multiply(a, c, mode=mode, conjugate=conjugate)
      np.testing.assert_allclose(got[0], want[0], atol=1e-12)
      np.testing.assert_allclose(got[1], want[1], atol=1e-12)
  with pytest.raises(ValueError, match="c @ Q"):
    SL.qr_multiply(a, rand((2, 3)))
  with pytest.raises(ValueError, match="mode"):
    SL.qr_multiply(a, rand((2, 5)), mode="up")


# --------------------------------------------------------------------------------------
# numpy.linalg
# --------------------------------------------------------------------------------------

def test_multi_dot():
  arrs = [rand(s, np.float32) for s in [(3,), (3, 5), (5, 2), (2, 4)]]
  for f in both(jnp.linalg.multi_dot):
    np.testing.assert_allclose(f(arrs), np.linalg.multi_dot(arrs), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(f(arrs[1:]), np.linalg.multi_dot(arrs[1:]), rtol=1e-5,
                               atol=1e-5)
  with pytest.raises(ValueError, match="at least two"):
    jnp.linalg.multi_dot(arrs[:1])
  with pytest.raises(ValueError, match="must match"):
    jnp.linalg.multi_dot([arrs[1], arrs[1]])
  with pytest.raises(ValueError, match="two-dimensional"):
    jnp.linalg.multi_dot([arrs[1], rand((5, 2, 2)), arrs[3]])


def test_tensorinv_tensorsolve(x64):
  a = rand((6, 2, 3))
  for f in both(jnp.linalg.tensorinv, static_argnames="ind"):
    np.testing.assert_allclose(f(a, ind=1), np.linalg.tensorinv(a, 1), atol=1e-12)
  a, b = rand((2, 3, 6)), rand((2, 3))
  np.testing.assert_allclose(ember.jit(jnp.linalg.tensorsolve)(a, b),
                             np.linalg.tensorsolve(a, b), atol=1e-12)
  a = rand((2, 6, 3))
  np.testing.assert_allclose(jnp.linalg.tensorsolve(a, b, axes=(1,)),
                             np.linalg.tensorsolve(a, b, axes=(1,)), atol=1e-12)
  with pytest.raises(ValueError, match="product of the first"):
    jnp.linalg.tensorinv(rand((2, 3)), 1)
  with pytest.raises(ValueError, match="leading shape"):
    jnp.linalg.tensorsolve(rand((3, 6)), rand(2))


# --------------------------------------------------------------------------------------
# Compilation: JAX's LAPACK targets; checked mode runs them through the reference evaluator
# --------------------------------------------------------------------------------------

def _all_forms(a, b):
  s = a + a.T
  dl, d, du = a[0], a[1] + 4, a[2]
  return (L.schur(a), L.hessenberg(a), L.tridiagonal(s, lower=False),
          L.tridiagonal_solve(dl, d, du, b), L.symmetric_product(a, s))


def test_lowered_targets_and_checked_mode():
  a, b = rand((4, 4), np.float32), rand((4, 2), np.float32)
  text = ember.jit(_all_forms).lower(a, b).as_text()
  for target in ("lapack_sgees_ffi", "lapack_sgehrd_ffi", "lapack_ssytrd_ffi",
                 "lapack_sgtsv_ffi"):
    assert f"stablehlo.custom_call @{target}" in text
  t = ember.jit(lambda a: L.schur(a.astype(np.complex64))).lower(a).as_text()
  assert "@lapack_cgees_ffi" in t
  old = config.read("ember_check_compiled")
  config.update("ember_check_compiled", True)
  try:
    outs = ember.jit(_all_forms)(a, b)
  finally:
    config.update("ember_check_compiled", old)
  check_schur(a.astype(np.float64), *outs[0], 2e-5)
