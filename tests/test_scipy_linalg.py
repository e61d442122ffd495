"""ember.scipy.linalg against SciPy in float64, eager and under jit."""
import numpy as np
import pytest

sl = pytest.importorskip("scipy.linalg")   # the reference (a test dependency of jaxlib's)

import ember
import ember.scipy.linalg as el

RNG = np.random.default_rng(0)
A = RNG.standard_normal((5, 5))
B = RNG.standard_normal((5, 3))
SPD = A @ A.T + 5 * np.eye(5)
TRI = np.triu(A) + 5 * np.eye(5)
C = A + 1j * RNG.standard_normal((5, 5))
CTRI = np.triu(C) + 5 * np.eye(5)
RTOL = 2e-5    # float32 factorizations of well-conditioned 5x5 matrices


def run(f, *args, jit=False, **kw):
  g = (lambda *a: f(*a, **kw))
  out = (ember.jit(g) if jit else g)(*[np.asarray(x, np.complex64 if np.iscomplexobj(x)
                                                  else np.float32) for x in args])
  return ember.tree_util.tree_map(np.asarray, out)


def close(got, want):
  np.testing.assert_allclose(got, want, rtol=RTOL, atol=RTOL * np.abs(want).max())


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("trans", [0, 1, 2, "N", "T", "C"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular(jit, trans, lower):
  t = TRI.T if lower else TRI
  close(run(el.solve_triangular, t, B, jit=jit, trans=trans, lower=lower),
        sl.solve_triangular(t, B, trans=trans, lower=lower))
  close(run(el.solve_triangular, t, B[:, 0], jit=jit, trans=trans, lower=lower),
        sl.solve_triangular(t, B[:, 0], trans=trans, lower=lower))


@pytest.mark.parametrize("trans", [0, 1, 2])
def test_solve_triangular_complex(trans):
  close(run(el.solve_triangular, CTRI, B, trans=trans),
        sl.solve_triangular(CTRI, B, trans=trans))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_cholesky_and_cho_solve(jit, lower):
  close(run(el.cholesky, SPD, jit=jit, lower=lower), sl.cholesky(SPD, lower=lower))
  solve = lambda a, b: el.cho_solve(el.cho_factor(a, lower=lower), b)   # noqa: E731
  close(run(solve, SPD, B, jit=jit), sl.cho_solve(sl.cho_factor(SPD, lower=lower), B))


@pytest.mark.parametrize("jit", [False, True])
def test_lu_factor_and_lu_solve(jit):
  lu_, piv = run(el.lu_factor, A, jit=jit)
  slu, spiv = sl.lu_factor(A)
  close(lu_, slu)
  np.testing.assert_array_equal(piv, spiv)
  for trans in (0, 1, 2):
    got = run(lambda a, b: el.lu_solve(el.lu_factor(a), b, trans=trans), A, B, jit=jit)
    close(got, sl.lu_solve((slu, spiv), B, trans=trans))


@pytest.mark.parametrize("shape", [(5, 5), (3, 5), (5, 3)])
def test_lu_returns_scipys_permutation_matrix(shape):
  a = RNG.standard_normal(shape)
  p, l, u = run(el.lu, a)
  sp, sl_, su = sl.lu(a)
  np.testing.assert_array_equal(p, sp)
  close(l, sl_)
  close(u, su)
  pl, u2 = run(el.lu, a, permute_l=True)
  close(pl, sp @ sl_)


def test_batched_lu_solve():
  a = RNG.standard_normal((2, 4, 4))
  b = RNG.standard_normal((2, 4, 3))
  x = run(lambda a, b: el.lu_solve(el.lu_factor(a), b, trans=1), a, b)
  close(x, np.stack([sl.solve(a[i].T, b[i]) for i in range(2)]))


def test_bad_trans_is_a_value_error():
  with pytest.raises(ValueError, match="trans must be"):
    el.solve_triangular(np.eye(2, dtype=np.float32), np.ones(2, np.float32), trans=3)
  with pytest.raises(ValueError, match="trans must be"):
    el.lu_solve(el.lu_factor(np.eye(2, dtype=np.float32)), np.ones(2, np.float32), trans="X")


# --- solve, inv, det, eigh, qr, svd, block_diag, polar, expm, expm_frechet --------------

@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("assume_a", ["gen", "sym", "her", "pos"])
@pytest.mark.parametrize("lower", [False, True])
def test_solve(jit, assume_a, lower):
  close(run(el.solve, SPD, B, jit=jit, assume_a=assume_a, lower=lower),
        sl.solve(SPD, B, assume_a=assume_a, lower=lower))
  close(run(el.solve, SPD, B[:, 0], jit=jit, assume_a=assume_a, lower=lower),
        sl.solve(SPD, B[:, 0], assume_a=assume_a, lower=lower))


@pytest.mark.parametrize("jit", [False, True])
def test_inv_det(jit):
  close(run(el.inv, A, jit=jit), sl.inv(A))
  close(run(el.det, A, jit=jit), sl.det(A))
  close(run(el.inv, C, jit=jit), sl.inv(C))


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("lower", [False, True])
def test_eigh(jit, lower):
  # only the `lower` triangle is read: the other holds garbage
  garbage = np.tril(SPD) + np.triu(A, 1) if lower else np.triu(SPD) + np.tril(A, -1)
  w, v = run(el.eigh, garbage, jit=jit, lower=lower)
  ws, vs = sl.eigh(garbage, lower=lower)
  close(w, ws)
  close(np.abs(v), np.abs(vs))   # eigenvectors up to sign
  close(run(el.eigh, garbage, jit=jit, lower=lower, eigvals_only=True), ws)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("mode", ["full", "economic", "r"])
def test_qr(jit, mode):
  tall = RNG.standard_normal((6, 4))
  got, want = run(el.qr, tall, jit=jit, mode=mode), sl.qr(tall, mode=mode)
  assert len(got) == len(want)
  for g, w in zip(got, want):
    assert g.shape == w.shape
  r = got[-1]
  close(np.abs(r), np.abs(want[-1]))   # rows of r up to sign
  if mode != "r":
    close(got[0] @ r, tall)


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(jit, full_matrices):
  tall = RNG.standard_normal((6, 4))
  u, s, vh = run(el.svd, tall, jit=jit, full_matrices=full_matrices)
  us, ss, vhs = sl.svd(tall, full_matrices=full_matrices)
  assert u.shape == us.shape and vh.shape == vhs.shape
  close(s, ss)
  close((u[:, :4] * s) @ vh[:4], tall)
  close(run(el.svd, tall, jit=jit, compute_uv=False), ss)


def test_block_diag():
  args = (np.ones((2, 2)), 3.0, np.arange(3.0), np.zeros((1, 0)))
  close(run(el.block_diag, *args), sl.block_diag(*args))
  close(run(el.block_diag, *args, jit=True), sl.block_diag(*args))
  assert el.block_diag().shape == (1, 0)
  with pytest.raises(ValueError, match="block_diag: arguments must have dimension <= 2"):
    el.block_diag(np.ones((1, 2, 2)))


@pytest.mark.parametrize("side", ["right", "left"])
def test_polar(side):
  for a in (A, C, RNG.standard_normal((5, 3))):
    u, p = run(el.polar, a, side=side)
    us, ps = sl.polar(a, side=side)
    close(u, us)
    close(p, ps)
  with pytest.raises(ValueError, match="side must be 'left' or 'right'"):
    el.polar(A, side="up")


@pytest.mark.parametrize("jit", [False, True])
@pytest.mark.parametrize("scale", [0.01, 0.3, 1.5, 3.0, 20.0])
def test_expm(jit, scale):
  # every Pade degree and squaring count; float32 relative error ~ eps * cond(scaling)
  a = A * scale / 5
  got = run(el.expm, a, jit=jit)
  want = sl.expm(a.astype(np.float32).astype(np.float64))
  np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
  with ember.enable_x64():
    got64 = np.asarray((ember.jit(el.expm) if jit else el.expm)(a))
  np.testing.assert_allclose(got64, sl.expm(a), rtol=1e-11, atol=1e-11 * np.abs(want).max())


def test_expm_batched_upper_triangular_and_overflow():
  stack = np.stack([A / 3, TRI / 10])
  close(run(el.expm, stack), np.stack([sl.expm(m) for m in stack]))
  close(run(el.expm, TRI / 10, upper_triangular=True), sl.expm(TRI / 10))
  close(run(el.expm, C / 4), sl.expm(C / 4))
  assert np.isnan(run(el.expm, np.full((2, 2), 1e6), max_squarings=4)).all()   # JAX: NaN
  with pytest.raises(ValueError, match=r"Expected A to be a \(batched\) square matrix"):
    el.expm(np.ones((2, 3)))


def test_expm_frechet():
  e = RNG.standard_normal((5, 5))
  with ember.enable_x64():
    x, f = el.expm_frechet(A / 3, e)
    f_only = el.expm_frechet(A / 3, e, compute_expm=False)
  xs, fs = sl.expm_frechet(A / 3, e)
  np.testing.assert_allclose(np.asarray(x), xs, rtol=1e-11)
  np.testing.assert_allclose(np.asarray(f), fs, rtol=1e-10, atol=1e-10)
  np.testing.assert_allclose(np.asarray(f_only), fs, rtol=1e-10, atol=1e-10)
  with pytest.raises(ValueError, match="expected A and E to be square matrices"):
    el.expm_frechet(A, e[:3])


@pytest.mark.parametrize("call,err,match", [
    (lambda: el.solve(A, B, assume_a="banded"), ValueError, "expected assume_a in"),
    (lambda: el.qr(A, mode="raw"), ValueError, "Unsupported QR decomposition mode 'raw'"),
    (lambda: el.qr(A, pivoting=True), NotImplementedError, "pivoting=True"),
    (lambda: el.eigh(A, SPD), NotImplementedError, "b=None"),
])
def test_errors(call, err, match):
  with pytest.raises(err, match=match):
    call()
