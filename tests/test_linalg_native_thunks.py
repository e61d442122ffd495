"""The LAPACK custom calls that run as native thunks (backends/cpu/linalg_thunks.py:
potrf, trsm, getrf through OpenBLAS's LAPACK) or generated kernels (linalg_kernels.py:
real orders <= MAX_N, getrf and left-side trsm <= LU_MAX_N, lu_pivots_to_permutation):
values against
NumPy float64 for sizes around LAPACK's and OpenBLAS's block edges, batched, every trsm
variant, every dtype, eager and jit; the thunks the executables hold; failures (not
positive definite, singular) as the reference reports them; the NumPy fallback.

Tolerances: backward-stable factorizations and substitutions have errors ~ n * eps *
cond; the matrices here are well conditioned (SPD: a a^H / n + I, cond < ~10; triangular:
2 I plus off-diagonals of size 0.5 / sqrt(n)), so a bound of c * n * eps relative to the
largest magnitude of the result holds with c = 8 (float32 results: 8 * 200 * 6e-8 = 1e-4
at n = 200, 5e-6 at n = 7)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.lax import linalg as L
from ember.scipy import linalg as sl
from ember._src.backends.cpu import linalg_kernels, linalg_thunks

SIZES = (1, 2, 7, 33, 64, 65, 200, linalg_kernels.LU_MAX_N + 1)
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
needs_lapack = pytest.mark.skipif(linalg_thunks._lapack() is None,
                                  reason="no OpenBLAS with LAPACK loaded")


def rng_for(*key):
  return np.random.default_rng(abs(hash(key)) % 2 ** 32)


def rand(rng, shape, dtype):
  x = rng.standard_normal(shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x


def spd(rng, shape, dtype):
  a = rand(rng, shape, dtype)
  n = shape[-1]
  return (a @ np.conj(np.swapaxes(a, -1, -2)) / n + np.eye(n)).astype(dtype)


def tri(rng, shape, dtype, lower):
  n = shape[-1]
  t = rand(rng, shape, dtype) * (0.5 / np.sqrt(n)) + 2 * np.eye(n)
  return (np.tril(t) if lower else np.triu(t)).astype(dtype)


def close(got, want, dtype, n):
  got, want = np.asarray(got), np.asarray(want)
  eps = np.finfo(np.dtype(dtype)).eps
  scale = max(np.abs(want).max(initial=0), 1.0)
  assert got.dtype == np.dtype(dtype)
  np.testing.assert_allclose(got, want, rtol=0, atol=8 * max(n, 4) * eps * scale)


def wide(dtype):
  return np.complex128 if np.dtype(dtype).kind == "c" else np.float64


@pytest.fixture(params=DTYPES, ids=lambda d: np.dtype(d).name)
def dtype(request):
  if np.dtype(request.param).itemsize * (2 if np.dtype(request.param).kind != "c" else 1) \
      == 16:     # float64 / complex128 need x64
    with ember.enable_x64():
      yield request.param
  else:
    yield request.param


def thunk_types(f, *args):
  return [type(t).__name__ for t in ember.jit(f).lower(*args).compile()
          .runtime_executable().thunks]


@needs_lapack
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("jit", [False, True])
def test_cholesky(n, jit, dtype):
  a = spd(rng_for("chol", n), (n, n), dtype)
  f = ember.jit(jnp.linalg.cholesky) if jit else jnp.linalg.cholesky
  close(f(a), np.linalg.cholesky(a.astype(wide(dtype))), dtype, n)


@needs_lapack
@pytest.mark.parametrize("n", (1, 33, 65))    # 33: full potrf panels and a partial one
def test_cholesky_batched_and_upper(n, dtype):
  a = spd(rng_for("cholb", n), (3, 2, n, n), dtype)
  want = np.linalg.cholesky(a.astype(wide(dtype)))
  close(ember.jit(jnp.linalg.cholesky)(a), want, dtype, n)
  up = ember.jit(lambda x: jnp.linalg.cholesky(x, upper=True))(a)
  close(up, np.conj(np.swapaxes(want, -1, -2)), dtype, n)


@needs_lapack
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("left_side", [True, False])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("transpose_a,conjugate_a", [(False, False), (True, False),
                                                     (True, True), (False, True)])
@pytest.mark.parametrize("unit_diagonal", [False, True])
def test_triangular_solve_variants(n, left_side, lower, transpose_a, conjugate_a,
                                   unit_diagonal, dtype):
  rng = rng_for("trsm", n, left_side, lower, transpose_a, conjugate_a, unit_diagonal)
  a = tri(rng, (n, n), dtype, lower)
  b = rand(rng, (n, 5) if left_side else (5, n), dtype).astype(dtype)
  kw = dict(left_side=left_side, lower=lower, transpose_a=transpose_a,
            conjugate_a=conjugate_a, unit_diagonal=unit_diagonal)
  t = a.astype(wide(dtype))
  if unit_diagonal:
    t = t - np.diag(np.diag(t)) + np.eye(n)
  if conjugate_a:
    t = np.conj(t)
  if transpose_a:
    t = t.T
  want = np.linalg.solve(t, b) if left_side else np.linalg.solve(t.T, b.T).T
  for f in (lambda a, b: L.triangular_solve(a, b, **kw),
            ember.jit(lambda a, b: L.triangular_solve(a, b, **kw))):
    close(f(a, b), want, dtype, n)


@needs_lapack
@pytest.mark.parametrize("n", (2, 33))
def test_triangular_solve_batched(n):
  rng = rng_for("trsmb", n)
  a = tri(rng, (4, n, n), np.float32, True)
  cols = 3 if n == 2 else 70      # 70: a group of 4 vector chunks and a masked one
  b = rand(rng, (4, n, cols), np.float32).astype(np.float32)
  got = ember.jit(lambda a, b: sl.solve_triangular(a, b, lower=True))(a, b)
  close(got, np.linalg.solve(a.astype(np.float64), b), np.float32, n)


@needs_lapack
@pytest.mark.parametrize("n", SIZES)
def test_inv_and_lu(n, dtype):
  rng = rng_for("inv", n)
  a = (rand(rng, (n, n), dtype) / np.sqrt(n) + 3 * np.eye(n)).astype(dtype)
  want = np.linalg.inv(a.astype(wide(dtype)))
  for f in (jnp.linalg.inv, ember.jit(jnp.linalg.inv)):
    close(f(a), want, dtype, n)
  lu_, piv, perm = ember.jit(L.lu)(a)
  lu_ = np.asarray(lu_).astype(wide(dtype))
  low = np.tril(lu_, -1) + np.eye(n)
  close((low @ np.triu(lu_)).astype(dtype), a[np.asarray(perm)].astype(wide(dtype)),
        dtype, n)
  ref_piv, ref_perm = L.lu(a)[1:]     # eager: the NumPy reference's pivots
  np.testing.assert_array_equal(np.asarray(piv), np.asarray(ref_piv))
  np.testing.assert_array_equal(np.asarray(perm), np.asarray(ref_perm))


@needs_lapack
def test_lu_rectangular_and_batched():
  rng = rng_for("lurect")
  # (full getrf panels too; past MAX_N: generated up to LU_MAX_N)
  for shape in ((2, 5, 3), (2, 3, 5), (2, 40, 19), (19, 40), (130, 70), (2, 70, 130)):
    a = rand(rng, shape, np.float32).astype(np.float32)
    lu_, piv, perm = ember.jit(L.lu)(a)
    ref = L.lu(a)
    np.testing.assert_array_equal(np.asarray(piv), np.asarray(ref[1]))
    np.testing.assert_array_equal(np.asarray(perm), np.asarray(ref[2]))
    close(lu_, np.asarray(ref[0]).astype(np.float64), np.float32, max(shape[-2:]))


@needs_lapack
def test_failures_read_as_the_reference_reports_them():
  not_pd = np.array([[[1., 2.], [2., 1.]], [[2., 0.], [0., 2.]]], np.float32)
  got = np.asarray(ember.jit(jnp.linalg.cholesky)(not_pd))
  np.testing.assert_array_equal(got, np.asarray(jnp.linalg.cholesky(not_pd)))  # eager
  assert np.isnan(got[0][np.tril_indices(2)]).all()   # (cholesky zeroes the upper part)
  close(got[1], np.linalg.cholesky(not_pd[1].astype(np.float64)), np.float32, 2)
  late = spd(rng_for("late"), (20, 20), np.float32)
  late[13, 13] = -1.0       # a pivot in the generated kernel's second panel
  for upper in (False, True):
    f = lambda x: jnp.linalg.cholesky(x, upper=upper)
    got = np.asarray(ember.jit(f)(late))
    np.testing.assert_array_equal(got, np.asarray(f(late)))       # eager
    assert np.isnan(got[(np.triu_indices if upper else np.tril_indices)(20)]).all()
  singular = np.array([[1., 2.], [2., 4.]], np.float32)
  assert not np.isfinite(np.asarray(ember.jit(jnp.linalg.inv)(singular))).all()
  zero_diag = np.array([[0., 0.], [1., 1.]], np.float32)
  x = np.asarray(ember.jit(lambda a, b: L.triangular_solve(a, b, left_side=True,
                                                           lower=True))(zero_diag,
                                                                        np.ones((2, 1), np.float32)))
  assert not np.isfinite(x).all()


@needs_lapack
def test_jitted_linalg_runs_the_native_thunks():
  """Order > MAX_N (potrf, right-side trsm), > LU_MAX_N (getrf, left-side trsm) or complex:
  LAPACK thunks; real orders up to those: generated kernels."""
  n = linalg_kernels.MAX_N + 1
  a = spd(rng_for("struct"), (n, n), np.float32)
  b = np.ones((n, 16), np.float32)
  assert "PotrfThunk" in thunk_types(jnp.linalg.cholesky, a)
  assert "PotrfThunk" in thunk_types(jnp.linalg.cholesky, a[:8, :8].astype(np.complex64))
  right = lambda a, b: L.triangular_solve(a, b, left_side=False, lower=True)
  assert thunk_types(right, a, b.T) == ["TrsmThunk"]
  left = lambda a, b: sl.solve_triangular(a, b, lower=True)
  assert thunk_types(left, a, b) == ["KernelThunk"]
  assert set(thunk_types(jnp.linalg.inv, a)) == {"KernelThunk"}
  n = linalg_kernels.LU_MAX_N + 1
  a = spd(rng_for("struct", n), (n, n), np.float32)
  assert thunk_types(left, a, np.ones((n, 16), np.float32)) == ["TrsmThunk"]
  kinds = thunk_types(jnp.linalg.inv, a)
  assert {"GetrfThunk", "TrsmThunk"} <= set(kinds)     # (the permutation: generated)
  assert not {"NumpyCustomCallThunk", "PivotsToPermutationThunk"} & set(kinds)


@pytest.mark.parametrize("n", (1, 50, linalg_kernels.MAX_N))
def test_small_real_cholesky_and_solves_are_generated_kernels(n):
  a = spd(rng_for("gen", n), (n, n), np.float32)
  b = np.ones((n, 3), np.float32)
  f = lambda a, b: sl.cho_solve((jnp.linalg.cholesky(a), True), b)
  ex = ember.jit(f).lower(a, b).compile().runtime_executable()
  assert {type(t).__name__ for t in ex.thunks} == {"KernelThunk"}
  names = [t.name for t in ex.thunks]
  assert sum("custom-call" in s or "triangular_solve" in s for s in names) == 3
  ex.execute([a, b])
  assert len(ex._steps) == 1         # one native call for the whole module
  close(ember.jit(f)(a, b), np.linalg.solve(a.astype(np.float64), b), np.float32, n)


def test_without_lapack_the_numpy_thunks_give_the_same_values(monkeypatch):
  a = spd(rng_for("fallback"), (2, 33, 33), np.float32)
  want = [np.asarray(o) for o in ember.jit(lambda x: (jnp.linalg.cholesky(x),
                                                      jnp.linalg.inv(x)))(a)]
  monkeypatch.setattr(linalg_thunks, "_lapack", lambda: None)
  f = lambda x: (jnp.linalg.cholesky(x), jnp.linalg.inv(x)) + (x[0, 0, 0] * 2,)  # new key
  assert set(thunk_types(f, a)) <= {"NumpyCustomCallThunk", "KernelThunk",
                                    "PivotsToPermutationThunk", "CopyThunk"}
  got = ember.jit(f)(a)
  for g, w in zip(got, want):
    close(g, w.astype(np.float64), np.float32, 33)


@needs_lapack
def test_gp_nll_gradient_matches_finite_differences():
  """cholesky + cho_solve and their derivative rules (triangular solves) under jit."""
  rng = rng_for("gp")
  X, y = rng.standard_normal((20, 3)), rng.standard_normal(20)

  def nll(p, X, y):
    d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    K = jnp.exp(p[1]) * jnp.exp(-0.5 * d2 / jnp.exp(p[0]) ** 2) + \
        (jnp.exp(p[2]) + 1e-3) * jnp.eye(X.shape[0])
    Lf = jnp.linalg.cholesky(K)
    return 0.5 * y @ sl.cho_solve((Lf, True), y) + jnp.sum(jnp.log(jnp.diag(Lf)))

  with ember.enable_x64():
    p = np.array([0.1, -0.2, -1.0])
    g = np.asarray(ember.jit(ember.grad(nll))(p, X, y))
    h = 1e-6
    fd = [(float(nll(p + h * e, X, y)) - float(nll(p - h * e, X, y))) / (2 * h)
          for e in np.eye(3)]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


@needs_lapack
def test_small_cholesky_uses_the_unblocked_routine():
  # (complex: real orders <= MAX_N run generated kernels)
  for n, routine in ((64, "potf2"), (65, "potrf")):
    a = spd(rng_for("routine", n), (n, n), np.complex64)
    ex = ember.jit(jnp.linalg.cholesky).lower(a).compile().runtime_executable()
    potrf, = [t for t in ex.thunks if type(t).__name__ == "PotrfThunk"]
    assert potrf.fn is linalg_thunks._lapack()[0]("c" + routine)


@pytest.mark.parametrize("rows", (1, 5, 64, 70, 131))
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("lower", [True, False])
def test_generated_right_side_solves_in_row_blocks(rows, transpose_a, lower):
  """The generated kernel solves X op(A) = B in transposed blocks of MAX_N rows of X;
  a left-side solve with one right-hand side runs in blocks of scalar chains
  with the bits of a column of a many-column solve."""
  n = 33
  rng = rng_for("right", rows, transpose_a, lower)
  a = tri(rng, (2, n, n), np.float32, lower)
  b = rand(rng, (2, rows, n), np.float32).astype(np.float32)
  f = ember.jit(lambda a, b: L.triangular_solve(a, b, left_side=False, lower=lower,
                                                transpose_a=transpose_a))
  assert [type(t).__name__ for t in f.lower(a, b).compile().runtime_executable().thunks] \
      == ["KernelThunk"]
  t = a.astype(np.float64)
  t = np.swapaxes(t, -1, -2) if transpose_a else t
  want = np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)
  close(f(a, b), want, np.float32, n)
  v = b[:, :, :1][:, :n]
  g = ember.jit(lambda a, v: L.triangular_solve(a, v, left_side=True, lower=lower,
                                                transpose_a=transpose_a))
  if v.shape[1] == n:
    close(g(a, v), np.linalg.solve(t, v), np.float32, n)
    two = np.concatenate([v, v[:, ::-1]], axis=-1)
    np.testing.assert_array_equal(g(a, v), g(a, two)[..., :1])


def test_generated_kernels_replay_from_a_serialized_executable():
  from ember._src.backends.cpu.compiler import (compile_module, deserialize_executable,
                                                serialize_executable)
  from ember._src.driver.compilation import clone_module
  from ember._src.passes.buffer_assignment import assign_buffers
  from ember._src.passes.pipeline import optimize
  a = spd(rng_for("replay"), (3, 20, 20), np.float32)
  b = np.ones((3, 20, 2), np.float32)
  f = lambda a, b: sl.cho_solve((jnp.linalg.cholesky(a), True), b)
  module = optimize(clone_module(ember.jit(f).lower(a, b).compiler_ir()))
  assignment = assign_buffers(module)
  exe = compile_module(module, assignment)
  again = deserialize_executable(module, assignment, serialize_executable(exe))
  assert {type(t).__name__ for t in again.thunks} == {"KernelThunk"}
  np.testing.assert_array_equal(again.execute([a, b])[0], exe.execute([a, b])[0])
  close(again.execute([a, b])[0], np.linalg.solve(a.astype(np.float64), b), np.float32, 20)


GETRF_SIZES = (1, 2, 3, 7, 16, 33, 64, 100, linalg_kernels.LU_MAX_N)


def lu_factor64(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """LAPACK's getrf in float64 NumPy, written out (scipy.linalg.lu_factor's (lu, piv) with
  0-based pivots; scipy is not in every test venv): the pivot is the first row of largest
  |a| in the column; a zero pivot leaves the column unscaled."""
  lu, n = np.array(a, np.float64), min(a.shape)
  piv = np.zeros(n, np.int32)
  for j in range(n):
    p = j + int(np.argmax(np.abs(lu[j:, j])))
    piv[j] = p
    lu[[j, p]] = lu[[p, j]]
    if lu[j, j] != 0:
      lu[j + 1:, j] /= lu[j, j]
    lu[j + 1:, j + 1:] -= np.outer(lu[j + 1:, j], lu[j, j + 1:])
  return lu, piv


@pytest.mark.parametrize("dt", (np.float32, np.float64), ids=("f32", "f64"))
def test_generated_lu_matches_lapack_and_inv_solve_det_match_numpy(dt):
  """Real LU of order <= LU_MAX_N runs generated kernels (getrf and the permutation): pivots
  exactly LAPACK's (getrf's rule, lu_factor64) on random matrices, LU to rounding; inv,
  solve and det against NumPy float64, batched, eager and jit."""
  with ember.enable_x64(dt == np.float64):
    for n in GETRF_SIZES:
      rng = rng_for("getrf", n, np.dtype(dt).name)
      a = rand(rng, (n, n), dt).astype(dt)
      lu_, piv, perm = ember.jit(L.lu)(a)
      want_lu, want_piv = lu_factor64(a)
      np.testing.assert_array_equal(np.asarray(piv), want_piv)
      assert np.asarray(piv).dtype == np.int32 and np.asarray(perm).dtype == np.int32
      np.testing.assert_array_equal(np.asarray(perm), np.asarray(L.lu(a)[2]))
      close(lu_, want_lu, dt, n)
      batch = (rand(rng, (2, 3, n, n), dt) / np.sqrt(n) + 3 * np.eye(n)).astype(dt)
      wide_b = batch.astype(np.float64)
      rhs = rand(rng, (2, 3, n, 2), dt).astype(dt)
      for f in (lambda x: x, ember.jit):
        close(f(jnp.linalg.inv)(batch), np.linalg.inv(wide_b), dt, n)
        close(f(jnp.linalg.solve)(batch, rhs), np.linalg.solve(wide_b, rhs), dt, n)
        # (over 3: det 3^n overflows float32 from n = 81)
        close(f(jnp.linalg.det)(batch / 3), np.linalg.det(wide_b / 3), dt, n)
      assert thunk_types(jnp.linalg.inv, batch) == ["KernelThunk"] * 7


def test_generated_lu_ties_and_singular_matrices_read_as_lapack():
  """Ties: the first row of largest |a| is the pivot; a zero pivot: info names its column,
  the factor goes on unscaled, inv gives inf/NaN as NumPy's LAPACK does."""
  ties = np.array([[1., 2., 0.], [-2., 1., 1.], [2., 3., 1.]], np.float32)
  _, piv, perm = ember.jit(L.lu)(ties)
  np.testing.assert_array_equal(np.asarray(piv), [1, 2, 2])
  np.testing.assert_array_equal(np.asarray(perm), np.asarray(L.lu(ties)[2]))
  np.testing.assert_array_equal(np.asarray(piv), lu_factor64(ties)[1])
  singular = np.array([[[1., 2., 3.], [2., 4., 6.], [1., 0., 1.]],
                       [[0., 1., 2.], [0., 3., 4.], [0., 5., 7.]]], np.float32)
  zero_columns = rand(rng_for("zero columns"), (21, 21), np.float32).astype(np.float32)
  zero_columns[:, [8, 11]] = 0     # zero pivots at a getrf panel's start and inside one
  getrf = lambda x: ember.lax.linalg.lu(x)
  for a in (singular, zero_columns):
    lu_, piv, _ = ember.jit(getrf)(a)
    ref = getrf(a)    # eager: the NumPy reference
    np.testing.assert_array_equal(np.asarray(piv), np.asarray(ref[1]))
    close(lu_, np.asarray(ref[0]).astype(np.float64), np.float32, a.shape[-1])
  with np.errstate(all="ignore"):
    assert not np.isfinite(np.asarray(ember.jit(jnp.linalg.inv)(singular))).all(axis=(1, 2)).any()


@pytest.mark.parametrize("n", (linalg_kernels.MAX_N, 100, linalg_kernels.LU_MAX_N))
def test_small_inv_is_one_native_call(n):
  """inv of order <= LU_MAX_N: no Python LU or pivot thunk; the executable is one native
  call."""
  a = spd(rng_for("inv1", n), (n, n), np.float32)
  ex = ember.jit(jnp.linalg.inv).lower(a).compile().runtime_executable()
  assert {type(t).__name__ for t in ex.thunks} == {"KernelThunk"}
  out = ex.execute([a])
  assert len(ex._steps) == 1
  close(out[0], np.linalg.inv(a.astype(np.float64)), np.float32, n)


@pytest.mark.parametrize("dt", (np.float32, np.float64), ids=("f32", "f64"))
def test_order_100_inv_and_solve_eager_is_jit(dt):
  """Order 100 (a generated LU and solves, past MAX_N): eager runs the compiled code, so
  its bits are jit's; values against NumPy float64; a batch's matrices as each alone."""
  with ember.enable_x64(dt == np.float64):
    rng = rng_for("order100", np.dtype(dt).name)
    a = (rand(rng, (3, 100, 100), dt) / 10 + 3 * np.eye(100)).astype(dt)
    b, v = rand(rng, (3, 100, 7), dt).astype(dt), rand(rng, (100,), dt).astype(dt)
    wide_a = a.astype(np.float64)
    for name, f, args, want in (
        ("inv", jnp.linalg.inv, (a,), np.linalg.inv(wide_a)),
        ("solve", jnp.linalg.solve, (a, b), np.linalg.solve(wide_a, b)),
        ("solve1", jnp.linalg.solve, (a[0], v), np.linalg.solve(wide_a[0], v))):
      eager = np.asarray(f(*args))
      np.testing.assert_array_equal(eager, np.asarray(ember.jit(f)(*args)), err_msg=name)
      close(eager, want, dt, 100)
    np.testing.assert_array_equal(np.asarray(jnp.linalg.inv(a[1])),
                                  np.asarray(jnp.linalg.inv(a))[1])


def test_order_100_singular_lu_reads_as_the_reference():
  """Zero pivots in a late panel of an order-100 generated LU: the reference's pivots and
  info, a non-finite inverse (as NumPy's LAPACK), eager as jit."""
  a = rand(rng_for("singular100"), (100, 100), np.float32).astype(np.float32)
  a[:, [57, 90]] = 0
  lu_, piv, perm = ember.jit(L.lu)(a)
  ref = L.lu(a)     # eager: the NumPy reference
  np.testing.assert_array_equal(np.asarray(piv), np.asarray(ref[1]))
  np.testing.assert_array_equal(np.asarray(perm), np.asarray(ref[2]))
  close(lu_, np.asarray(ref[0]).astype(np.float64), np.float32, 100)
  with np.errstate(all="ignore"):
    got = np.asarray(jnp.linalg.inv(a))
    assert not np.isfinite(got).all()
    np.testing.assert_array_equal(got, np.asarray(ember.jit(jnp.linalg.inv)(a)))


def test_complex_lu_pivots_by_the_sum_of_magnitudes():
  """Complex LU pivots on the largest |re| + |im| (LAPACK's icamax), not the modulus: the
  reference (eager lu) and LAPACK (jit) agree on a column where the two rules differ."""
  c = np.array([1.7609576 - 0.57132834j, 0.36818916 - 1.9211677j])  # |c|: 1.85 < 1.96
  a = np.stack([c, [0.5, 2.0]], axis=1).astype(np.complex64)
  assert np.argmax(np.abs(c)) == 1
  for f in (L.lu, ember.jit(L.lu)):
    np.testing.assert_array_equal(np.asarray(f(a)[1]), [0, 1])
