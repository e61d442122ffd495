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
