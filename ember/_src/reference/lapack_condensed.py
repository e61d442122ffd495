"""LAPACK-like NumPy routines for the condensed forms: Hessenberg reduction (gehrd),
Hermitian tridiagonal reduction (sytrd/hetrd), the Schur decomposition (gees), tridiagonal
solves (gtsv) and applying Householder reflectors (ormqr/unmqr). Each takes (attrs,
*arrays) and returns the target's results, as reference/lapack.py's routines do; this module
adds its targets to `lapack.CUSTOM_CALL_TARGETS` (JAX's FFI names, `lapack_dgees_ffi`, ...).

NumPy has none of these, so they are written here: Householder reflectors with LAPACK's
larfg convention (so the packed outputs read as LAPACK's do), and the Schur form by the
shifted QR algorithm on the Hessenberg form (Francis double shifts for real matrices, with
LAPACK's lanv2 standardization of the 2x2 blocks; Wilkinson single shifts for complex).
Matrices of a batch are reduced one at a time.
"""
from __future__ import annotations

import numpy as np

from ember._src.reference import lapack

_MAX_SWEEPS = 30     # QR iterations per eigenvalue before giving up (LAPACK's itmax)


def _each_matrix(fn, a, n_out):
  """Run fn(matrix) -> n_out arrays over a's leading batch dimensions."""
  batch = a.shape[:-2]
  flat = a.reshape((-1,) + a.shape[-2:])
  results = [fn(m) for m in flat]
  outs = []
  for i in range(n_out):
    parts = [r[i] for r in results]
    stacked = np.stack(parts) if parts else np.zeros((0,), a.dtype)
    outs.append(stacked.reshape(batch + stacked.shape[1:]) if parts else None)
  return outs, results


# --------------------------------------------------------------------------------------
# Householder reflectors (LAPACK's larfg)
# --------------------------------------------------------------------------------------

def larfg(alpha, x):
  """(beta, tau, v): H = I - tau v v^H with v[0] = 1 and H^H (alpha; x) = (beta; 0),
  beta real; tau = 0 (H = I) when x is zero and alpha real."""
  xnorm = np.linalg.norm(x) if x.size else 0.0
  v = np.concatenate([[1], np.zeros_like(x)]).astype(np.result_type(alpha, x))
  if xnorm == 0 and np.imag(alpha) == 0:
    return np.real(alpha), 0 * v[0], v
  beta = -np.copysign(np.sqrt(np.abs(alpha) ** 2 + xnorm ** 2), np.real(alpha))
  tau = (beta - alpha) / beta
  v[1:] = x / (alpha - beta)
  return beta, tau, v


def _reflect_left(a, v, tau):
  """a := (I - tau v v^H) a, in place."""
  a -= tau * np.outer(v, np.conj(v) @ a)


def _reflect_right(a, v, tau):
  """a := a (I - tau v v^H), in place."""
  a -= tau * np.outer(a @ v, np.conj(v))


def _gehrd_one(a):
  h = np.array(a, dtype=a.dtype)
  n = h.shape[-1]
  taus = np.zeros(max(n - 1, 0), a.dtype)
  for j in range(n - 1):     # the last step only makes a complex subdiagonal entry real
    beta, tau, v = larfg(h[j + 1, j], h[j + 2:, j])
    _reflect_right(h[:, j + 1:], v, tau)                   # A H
    _reflect_left(h[j + 1:, j:], v, np.conj(tau))         # H^H A H
    h[j + 1, j], h[j + 2:, j] = beta, v[1:]
    taus[j] = tau
  return h, taus


def gehrd(attrs, a):
  """(a, taus, info): the upper Hessenberg form H = Q^H A Q on and above the subdiagonal,
  Q = H_1 ... H_{n-1}'s Householder vectors below it (LAPACK's packing)."""
  (h, taus), _ = _each_matrix(_gehrd_one, a, 2)
  if h is None:
    h, taus = a.copy(), np.zeros(a.shape[:-2] + (max(a.shape[-1] - 1, 0),), a.dtype)
  return [h, taus, np.zeros(a.shape[:-2], np.int32)]


def _hermitian_from(a, lower: bool):
  """The Hermitian matrix whose `lower` (or upper) triangle is a's (diagonal real)."""
  t = np.tril(a) if lower else np.triu(a)
  full = t + np.conj(np.swapaxes(np.tril(a, -1) if lower else np.triu(a, 1), -1, -2))
  idx = np.arange(a.shape[-1])
  full[idx, idx] = np.real(full[idx, idx])
  return full


def _sytrd_one(a, lower: bool):
  n = a.shape[-1]
  h = _hermitian_from(a, lower)
  out = np.array(a)
  rdt = lapack.real_dtype(a.dtype)
  e = np.zeros(n - 1, rdt)
  taus = np.zeros(n - 1, a.dtype)
  steps = range(n - 1) if lower else reversed(range(n - 1))
  for i in steps:
    if lower:     # annihilate column i below the subdiagonal
      beta, tau, v = larfg(h[i + 1, i], h[i + 2:, i])
      rows = slice(i + 1, n)
    else:         # annihilate column i+1 above the superdiagonal (reflector ends at row i)
      beta, tau, v = larfg(h[i, i + 1], h[:i, i + 1][::-1])
      v = v[::-1]
      rows = slice(0, i + 1)
    block = h[rows, rows]     # a view: reflected in place from both sides
    _reflect_right(block, v, tau)
    _reflect_left(block, v, np.conj(tau))
    if lower:
      h[i + 1, i], h[i + 2:, i] = beta, 0
      h[i, i + 1], h[i, i + 2:] = beta, 0
      out[i + 1, i], out[i + 2:, i] = beta, v[1:]
    else:
      h[i, i + 1], h[:i, i + 1] = beta, 0
      h[i + 1, i], h[i + 1, :i] = beta, 0
      out[i, i + 1], out[:i, i + 1] = beta, v[:-1]
    e[i], taus[i] = np.real(beta), tau
  d = np.real(np.diagonal(h)).astype(rdt)
  out[np.arange(n), np.arange(n)] = d
  return out, d, e, taus


def sytrd(attrs, a):
  """(a, d, e, taus, info): Q^H A Q = T tridiagonal (diagonal d, off-diagonal e, both
  real) for the Hermitian A whose `uplo` triangle is given; a holds d, e and the Householder
  vectors in that triangle (LAPACK's packing), the other triangle untouched."""
  lower = dict(attrs).get("uplo", 76) == 76
  n = a.shape[-1]
  rdt = lapack.real_dtype(a.dtype)
  (out, d, e, taus), _ = _each_matrix(lambda m: _sytrd_one(m, lower), a, 4)
  if out is None:
    b = a.shape[:-2]
    out, d = a.copy(), np.zeros(b + (n,), rdt)
    e, taus = np.zeros(b + (n - 1,), rdt), np.zeros(b + (n - 1,), a.dtype)
  return [out, d, e, taus, np.zeros(a.shape[:-2], np.int32)]


# --------------------------------------------------------------------------------------
# Applying reflectors: ormqr / unmqr
# --------------------------------------------------------------------------------------

def ormqr(attrs, a, taus, c):
  """Q c, Q^H c (left) or c Q, c Q^H (right) for Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H
  with v_i the unit-diagonal column i of a's lower part (geqrf's packing)."""
  cfg = dict(attrs)
  left, transpose = bool(cfg.get("left", True)), bool(cfg.get("transpose", False))
  k = taus.shape[-1]
  out = np.array(c, copy=True)
  t = np.conj(taus) if transpose else taus
  # Q c and c Q^H apply H_k first; Q^H c and c Q apply H_1 first
  order = reversed(range(k)) if left != transpose else range(k)
  for i in order:
    v = np.array(a[..., :, i])
    v[..., :i] = 0
    v[..., i] = 1
    tau = t[..., i, None, None]
    if left:
      out -= tau * v[..., :, None] * np.einsum("...m,...mc->...c", np.conj(v), out)[..., None, :]
    else:
      out -= tau * np.einsum("...rm,...m->...r", out, v)[..., :, None] * np.conj(v)[..., None, :]
  return [out.astype(c.dtype, copy=False)]


# --------------------------------------------------------------------------------------
# Tridiagonal solve: gtsv (Gaussian elimination with partial pivoting)
# --------------------------------------------------------------------------------------

def _gtsv_one(dl, d, du, b, perturb: bool = False):
  """LAPACK gtsv's elimination for one system (dl[0] and du[-1] unused): (x, info), info
  k+1 (x NaN) when the k-th pivot is exactly zero. `perturb`: tiny pivots become
  eps * max|U| instead (JAX's perturb_singular)."""
  n = d.shape[0]
  mag = (lambda x: abs(x.real) + abs(x.imag)) if b.dtype.kind == "c" else abs  # LAPACK's cabs1
  b = b.astype(b.dtype).copy()
  sub, dg, sup = dl[1:].astype(b.dtype).copy(), d.astype(b.dtype), du[:-1].astype(b.dtype).copy()
  sup2 = np.zeros(max(n - 2, 0), b.dtype)
  with np.errstate(all="ignore"):
    for i in range(n - 1):
      if mag(dg[i]) >= mag(sub[i]):         # no row interchange
        if dg[i] == 0:                        # then sub[i] is zero too: nothing to eliminate
          if not perturb:
            return b * np.nan, i + 1
          continue
        f = sub[i] / dg[i]
        dg[i + 1] -= f * sup[i]
        b[i + 1] -= f * b[i]
      else:                                   # interchange rows i and i+1
        f = dg[i] / sub[i]
        dg[i], temp = sub[i], dg[i + 1]
        dg[i + 1] = sup[i] - f * temp
        if i < n - 2:
          sup2[i] = sup[i + 1]
          sup[i + 1] = -f * sup2[i]
        sup[i] = temp
        b[[i, i + 1]] = b[[i + 1, i]]
        b[i + 1] -= f * b[i]
    if perturb and n:
      eps = np.finfo(b.dtype).eps
      umax = max(np.abs(dg).max(), np.abs(sup).max(initial=0), np.abs(sup2).max(initial=0))
      tiny = eps * umax if umax else np.finfo(b.dtype).tiny
      small = np.abs(dg) < tiny
      dg[small] = tiny
    elif n and dg[n - 1] == 0:
      return b * np.nan, n
    x = b
    for i in reversed(range(n)):
      acc = x[i].copy()
      if i + 1 < n:
        acc -= sup[i] * x[i + 1]
      if i + 2 < n:
        acc -= sup2[i] * x[i + 2]
      x[i] = acc / dg[i]
  return x, 0


def gtsv_solve(dl, d, du, b, perturb: bool):
  """(x, info) of gtsv's elimination for each system of the batch."""
  batch = b.shape[:-2]
  flat = [x.reshape((-1,) + x.shape[len(batch):]) for x in (dl, d, du, b)]
  xs = np.empty_like(flat[3])
  info = np.zeros(len(xs), np.int32)
  for i in range(len(xs)):
    xs[i], info[i] = _gtsv_one(flat[0][i], flat[1][i], flat[2][i], flat[3][i], perturb)
  return xs.reshape(b.shape), info.reshape(batch)


def gtsv(attrs, dl, d, du, b):
  """(dl, d, du, x, info): x solving the tridiagonal system (sub-diagonal dl[1:], diagonal
  d, super-diagonal du[:-1]) for each column of b; info k > 0 (x NaN) for a singular
  system."""
  x, info = gtsv_solve(dl, d, du, b, perturb=False)
  return [dl, d, du, x, info]


def gtsv_perturbed(attrs, dl, d, du, b):
  """(x,): gtsv's solution, tiny pivots perturbed to eps * max|U| (never NaN)."""
  return [gtsv_solve(dl, d, du, b, perturb=True)[0]]


def cholesky_update(attrs, r, w):
  """(r',): the upper Cholesky factor of r^T r + w w^T, by one Givens rotation per row
  (LAPACK's drotg/drot, as JAX's rule)."""
  r, z = np.array(r, copy=True), np.array(w, copy=True)
  with np.errstate(all="ignore"):
    for k in range(r.shape[-1]):
      x, y = r[k, k], z[k]
      if y == 0:
        continue
      norm = np.hypot(x, y)
      c, s = x / norm, -y / norm
      row = r[k].copy()
      r[k], z = c * row - s * z, c * z + s * row
  return [r]


# --------------------------------------------------------------------------------------
# Schur decomposition: gees
# --------------------------------------------------------------------------------------

def _negligible(h, k, eps) -> bool:
  """Whether the subdiagonal entry h[k, k-1] can be set to zero (deflation)."""
  scale = abs(h[k - 1, k - 1]) + abs(h[k, k])
  if scale == 0:
    scale = np.abs(h).max()
  return abs(h[k, k - 1]) <= eps * scale


def _active_start(h, hi, eps) -> int:
  """The first row of the unreduced block that ends at row hi."""
  lo = hi
  while lo > 0 and not _negligible(h, lo, eps):
    lo -= 1
  if lo > 0:
    h[lo, lo - 1] = 0
  return lo


def _rotate(h, z, i, j, c, s, cols_from: int, rows_to: int):
  """Apply the plane rotation G = [[c, s], [-conj(s), c]] to rows i, j of h (columns from
  cols_from on) and its inverse G^H to columns i, j of h (rows up to rows_to) and of z."""
  ri, rj = h[i, cols_from:].copy(), h[j, cols_from:].copy()
  h[i, cols_from:], h[j, cols_from:] = c * ri + s * rj, c * rj - np.conj(s) * ri
  for m, stop in ((h, rows_to + 1), (z, z.shape[0])):
    ci, cj = m[:stop, i].copy(), m[:stop, j].copy()
    m[:stop, i], m[:stop, j] = c * ci + np.conj(s) * cj, c * cj - s * ci


def _givens(x, y):
  """(c real, s) with [[c, s], [-conj(s), c]] @ (x, y) = (r, 0)."""
  ax, norm = abs(x), np.hypot(abs(x), abs(y))
  if norm == 0:
    return 1.0, 0 * x
  if ax == 0:
    return 0.0, 1 + 0 * x
  return ax / norm, (x / ax) * np.conj(y) / norm


def _complex_schur(h, z, eps):
  n = h.shape[0]
  hi, its = n - 1, 0
  while hi > 0:
    lo = _active_start(h, hi, eps)
    if lo == hi:
      hi, its = hi - 1, 0
      continue
    its += 1
    if its > _MAX_SWEEPS * max(n, 1):
      return 1
    a, b, c, d = h[hi - 1, hi - 1], h[hi - 1, hi], h[hi, hi - 1], h[hi, hi]
    if its % 10 == 0:      # exceptional shift: break a cycle
      mu = d + abs(np.real(c)) + abs(np.real(h[hi - 1, hi - 2] if hi >= 2 else 0))
    else:                  # Wilkinson shift: the eigenvalue of the trailing 2x2 nearer d
      half = (a - d) / 2
      root = np.sqrt(half * half + b * c)
      mu1, mu2 = d + half + root, d + half - root
      mu = mu1 if abs(mu1 - d) <= abs(mu2 - d) else mu2
    x, y = h[lo, lo] - mu, h[lo + 1, lo]
    for k in range(lo, hi):
      if k > lo:
        x, y = h[k, k - 1], h[k + 1, k - 1]
      cs, sn = _givens(x, y)
      _rotate(h, z, k, k + 1, cs, sn, max(lo, k - 1) if k > lo else lo, min(k + 2, hi))
      if k > lo:
        h[k + 1, k - 1] = 0
  return 0


def _sign(x):
  return 1.0 if x >= 0 else -1.0


def lanv2(a, b, c, d):
  """LAPACK's dlanv2: the rotation (cs, sn) bringing the real 2x2 block [[a, b], [c, d]]
  to standard form: upper triangular when its eigenvalues are real, else equal diagonal
  entries and off-diagonal entries of opposite signs. Returns (a, b, c, d, cs, sn)."""
  eps = np.finfo(np.float64).eps
  if c == 0:
    return a, b, c, d, 1.0, 0.0
  if b == 0:
    return d, -c, 0.0, a, 0.0, 1.0
  if a - d == 0 and _sign(b) != _sign(c):
    return a, b, c, d, 1.0, 0.0
  temp = a - d
  p = temp / 2
  bcmax, bcmis = max(abs(b), abs(c)), min(abs(b), abs(c)) * _sign(b) * _sign(c)
  scale = max(abs(p), bcmax)
  z = p / scale * p + bcmax / scale * bcmis
  if z >= 4 * eps:          # real eigenvalues: make the block upper triangular
    z = p + _sign(p) * np.sqrt(scale) * np.sqrt(z)
    a, d = d + z, d - bcmax / z * bcmis
    tau = np.hypot(c, z)
    return a, b - c, 0.0, d, z / tau, c / tau
  sigma = b + c             # complex (or nearly equal) eigenvalues: equalize the diagonal
  tau = np.hypot(sigma, temp)
  cs = np.sqrt(0.5 * (1 + abs(sigma) / tau))
  sn = -(p / (tau * cs)) * _sign(sigma)
  aa, bb = a * cs + b * sn, -a * sn + b * cs
  cc, dd = c * cs + d * sn, -c * sn + d * cs
  a, b = aa * cs + cc * sn, bb * cs + dd * sn
  c, d = -aa * sn + cc * cs, -bb * sn + dd * cs
  mid = (a + d) / 2
  a = d = mid
  if c != 0 and b != 0 and _sign(b) == _sign(c):     # real after all: triangularize
    sab, sac = np.sqrt(abs(b)), np.sqrt(abs(c))
    p = _sign(c) * sab * sac
    tau = 1 / np.sqrt(abs(b + c))
    a, d = mid + p, mid - p
    b, c = b - c, 0.0
    cs1, sn1 = sab * tau, sac * tau
    cs, sn = cs * cs1 - sn * sn1, cs * sn1 + sn * cs1
  elif c != 0 and b == 0:
    b, c = -c, 0.0
    cs, sn = -sn, cs
  return a, b, c, d, cs, sn


def _house3(x):
  """(v, beta) with (I - beta v v^T) x = (+-|x|, 0, ...)."""
  v = np.array(x, dtype=np.float64)
  norm = np.linalg.norm(v)
  if norm == 0:
    return v, 0.0
  v[0] += _sign(v[0]) * norm
  return v, 2 / (v @ v)


def _apply_house(h, z, v, beta, k, lo_col, hi_row):
  """P = I - beta v v^T on rows k.. of h (columns lo_col..), on columns k.. of h (rows up to
  hi_row) and of z."""
  r = slice(k, k + len(v))
  h[r, lo_col:] -= beta * np.outer(v, v @ h[r, lo_col:])
  h[:hi_row + 1, r] -= beta * np.outer(h[:hi_row + 1, r] @ v, v)
  z[:, r] -= beta * np.outer(z[:, r] @ v, v)


def _francis_step(h, z, lo, hi, its):
  """One implicit double-shift QR step on the unreduced block h[lo:hi+1, lo:hi+1]."""
  if its % 10 == 0:     # exceptional shifts (EISPACK's hqr)
    ex = abs(h[hi, hi - 1]) + abs(h[hi - 1, hi - 2])
    s, t = 1.5 * ex, ex * ex
  else:
    s = h[hi - 1, hi - 1] + h[hi, hi]
    t = h[hi - 1, hi - 1] * h[hi, hi] - h[hi - 1, hi] * h[hi, hi - 1]
  x = h[lo, lo] * h[lo, lo] + h[lo, lo + 1] * h[lo + 1, lo] - s * h[lo, lo] + t
  y = h[lo + 1, lo] * (h[lo, lo] + h[lo + 1, lo + 1] - s)
  w = h[lo + 1, lo] * h[lo + 2, lo + 1]
  for k in range(lo, hi - 1):
    v, beta = _house3([x, y, w])
    _apply_house(h, z, v, beta, k, max(lo, k - 1), min(k + 3, hi))
    x, y = h[k + 1, k], h[k + 2, k]
    if k < hi - 2:
      w = h[k + 3, k]
  v, beta = _house3([x, y])
  _apply_house(h, z, v, beta, hi - 1, hi - 2, hi)


def _real_schur(h, z, eps):
  n = h.shape[0]
  hi, its = n - 1, 0
  while hi >= 0:
    lo = _active_start(h, hi, eps) if hi > 0 else 0
    if lo == hi:
      hi, its = hi - 1, 0
      continue
    if lo == hi - 1:        # a 2x2 block: standardize it
      i = hi - 1
      a, b, c, d, cs, sn = lanv2(h[i, i], h[i, hi], h[hi, i], h[hi, hi])
      _rotate(h, z, i, hi, cs, sn, hi + 1, i - 1)
      h[i, i], h[i, hi], h[hi, i], h[hi, hi] = a, b, c, d
      hi, its = hi - 2, 0
      continue
    its += 1
    if its > _MAX_SWEEPS * max(n, 1):
      return 1
    _francis_step(h, z, lo, hi, its)
  return 0


def _gees_one(a, vectors: bool):
  n = a.shape[-1]
  h, taus = _gehrd_one(a)
  q = np.eye(n, dtype=a.dtype)
  if n > 1:     # Q = H_1 ... H_{n-1}: the reflectors stored below the subdiagonal
    q[1:, 1:] = lapack.orgqr((), h[1:, :-1], taus)[0]
  h = np.triu(h, -1)
  work = np.complex128 if a.dtype.kind == "c" else np.float64
  h, q = h.astype(work), q.astype(work)
  eps = np.finfo(work).eps     # iterate in float64: float32 results are rounded from it
  info = (_complex_schur if a.dtype.kind == "c" else _real_schur)(h, q, eps)
  h = np.triu(h, -1 if a.dtype.kind != "c" else 0)
  if info:
    h[...], q[...] = np.nan, np.nan
  if not vectors:
    q = np.zeros_like(q)
  return h.astype(a.dtype), q.astype(a.dtype), info


def gees(attrs, a):
  """(t, vs, w..., sdim, info): the Schur form A = Z T Z^H: T upper triangular (complex)
  or quasi-triangular with standardized 2x2 blocks (real), Z unitary (zero when
  mode is 'N'); the eigenvalues w (real input: wr and wi apart), sdim 0 (no sorting),
  info > 0 (T, Z NaN) where the QR algorithm did not converge."""
  vectors = dict(attrs).get("mode", 86) == 86
  batch, n = a.shape[:-2], a.shape[-1]
  (t, vs, info), _ = _each_matrix(lambda m: _gees_one(m, vectors), a, 3)
  if t is None:
    t, vs, info = a.copy(), np.zeros_like(a), np.zeros(batch, np.int32)
  info = np.asarray(info, np.int32).reshape(batch)
  w = _schur_eigenvalues(t)
  sdim = np.zeros(batch, np.int32)
  if a.dtype.kind == "c":
    return [t, vs, w.astype(a.dtype), sdim, info]
  return [t, vs, w.real.astype(a.dtype), w.imag.astype(a.dtype), sdim, info]


def _schur_eigenvalues(t):
  """The eigenvalues on T's diagonal (and of its 2x2 blocks)."""
  n = t.shape[-1]
  w = np.diagonal(t, axis1=-2, axis2=-1).astype(lapack.complex_dtype(t.dtype))
  if t.dtype.kind == "c" or n < 2:
    return w
  w = w.copy()
  sub = np.diagonal(t, -1, axis1=-2, axis2=-1)
  sup = np.diagonal(t, 1, axis1=-2, axis2=-1)
  im = np.sqrt(np.abs(sub * sup)) * (sub != 0)
  w[..., :-1] = w[..., :-1] + 1j * im
  w[..., 1:] = w[..., 1:] - 1j * im
  return w


for _p in "sdcz":
  lapack.CUSTOM_CALL_TARGETS[f"lapack_{_p}gehrd_ffi"] = gehrd
  lapack.CUSTOM_CALL_TARGETS[f"lapack_{_p}gees_ffi"] = gees
  lapack.CUSTOM_CALL_TARGETS[f"lapack_{_p}gtsv_ffi"] = gtsv
lapack.CUSTOM_CALL_TARGETS["tridiagonal_solve_perturbed_ffi"] = gtsv_perturbed
lapack.CUSTOM_CALL_TARGETS["ember_cholesky_update"] = cholesky_update
for _p, _name in [("s", "sytrd"), ("d", "sytrd"), ("c", "hetrd"), ("z", "hetrd"),
                  ("s", "ormqr"), ("d", "ormqr"), ("c", "unmqr"), ("z", "unmqr")]:
  lapack.CUSTOM_CALL_TARGETS[f"lapack_{_p}{_name}_ffi"] = sytrd if "trd" in _name else ormqr
