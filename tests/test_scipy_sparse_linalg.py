"""ember.scipy.sparse.linalg (cg, bicgstab, gmres) against scipy.sparse.linalg and dense
solves in float64, eager and under jit/vmap; pytree operands, preconditioners, and gradients
by implicit differentiation (JAX's custom_linear_solve rule)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.scipy.sparse.linalg as el

ssl = pytest.importorskip("scipy.sparse.linalg")   # (the oldest-dependencies venv has no SciPy)

RNG = np.random.default_rng(0)
N = 6
_Q = RNG.normal(size=(N, N))
SPD = _Q @ _Q.T + N * np.eye(N)
GEN = RNG.normal(size=(N, N)) + N * np.eye(N)
B = RNG.normal(size=N)


def close(a, b, tol=1e-10):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_solvers_match_dense_and_scipy():
  with ember.enable_x64():
    x_spd, x_gen = np.linalg.solve(SPD, B), np.linalg.solve(GEN, B)
    close(el.cg(SPD, B, tol=1e-12)[0], x_spd)
    close(el.cg(lambda v: jnp.dot(SPD, v), B, tol=1e-12)[0], x_spd)
    close(el.cg(SPD, B, tol=1e-12, M=np.diag(1 / np.diag(SPD)))[0], x_spd)
    close(el.bicgstab(GEN, B, tol=1e-12)[0], x_gen)
    # (each gmres variant costs a ~2 s compile: batched is tested on pytrees below)
    x, info = el.gmres(GEN, B, tol=1e-12, restart=3, solve_method="incremental")
    close(x, x_gen)
    assert int(info) == 0
    # a loose tolerance stops early, where SciPy's iteration stops
    close(el.cg(SPD, B, tol=1e-2)[0], ssl.cg(SPD, B, rtol=1e-2)[0], 1e-8)
    z = B + 1j * RNG.normal(size=N)
    close(el.bicgstab(GEN + 1j * np.eye(N), z, tol=1e-12)[0],
          np.linalg.solve(GEN + 1j * np.eye(N), z))


def test_pytree_operands():
  def matvec(t):
    return {"a": SPD[:3, :3] @ t["a"] + SPD[:3, 3:] @ t["b"],
            "b": SPD[3:, :3] @ t["a"] + SPD[3:, 3:] @ t["b"]}
  with ember.enable_x64():
    x_ref = np.linalg.solve(SPD, B)
    for solver in (el.cg, el.bicgstab, el.gmres):
      x, _ = solver(matvec, {"a": B[:3], "b": B[3:]}, tol=1e-12)
      close(np.concatenate([x["a"], x["b"]]), x_ref)


def test_jit_vmap_grad():
  with ember.enable_x64():
    x_gen = np.linalg.solve(GEN, B)
    close(ember.jit(lambda a, b: el.cg(a, b, tol=1e-12)[0])(SPD, B), np.linalg.solve(SPD, B))
    batched = ember.vmap(lambda b: el.bicgstab(GEN, b, tol=1e-12)[0])(np.stack([B, 2 * B]))
    close(batched[1], 2 * x_gen)
    ones = np.ones(N)
    close(ember.grad(lambda b: el.cg(SPD, b, tol=1e-12)[0].sum())(B),
          np.linalg.solve(SPD.T, ones))
    lam = np.linalg.solve(GEN.T, ones)
    grad_a = ember.jit(ember.grad(lambda a: el.bicgstab(lambda v: a @ v, B, tol=1e-12)[0].sum()))
    close(grad_a(GEN), -np.outer(lam, x_gen))
  x32, _ = el.cg(SPD.astype(np.float32), B.astype(np.float32))
  assert x32.dtype == np.float32
  close(x32, np.linalg.solve(SPD, B), 1e-4)   # tol=1e-5 is the solver's own stopping rule


def test_errors():
  with pytest.raises(ValueError, match="square matrix"):
    el.cg(np.ones((2, 3)), np.ones(2))
  with pytest.raises(TypeError, match="function or ndarray"):
    el.cg("A", np.ones(2))
  with pytest.raises(ValueError, match="matching shapes"):
    el.cg(SPD, B, x0=np.zeros(3))
  with pytest.raises(ValueError, match="solve_method"):
    el.gmres(GEN, B, solve_method="qr")
