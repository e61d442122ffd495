"""LAPACK-like NumPy routines: the semantics of each custom-call target that the matrix
decompositions lower to (`lapack_spotrf_ffi`, `lapack_dgesdd_ffi`, ...; see
`CUSTOM_CALL_TARGETS`). Every routine takes (attrs, *arrays) and returns the list of the
target's results. The decomposition primitives' impls, hlo_eval's `custom-call` and the CPU
backend's custom-call thunks (backends/cpu/linalg_thunks.py) all run these.

NumPy has no LU or triangular solve: getrf is a partial-pivoting elimination over the
batch in NumPy (one vectorized step per column, LAPACK's pivot choice), trsm is
np.linalg.solve on the masked triangle (substitution when the diagonal has a zero, giving
inf/NaN as trsm does).
"""
from __future__ import annotations

import numpy as np


def real_dtype(dt) -> np.dtype:
  return np.empty(0, dt).real.dtype


def _guarded(fn, a, likes):
  """fn(a) -> list of arrays, plus info (int32 per matrix): 0, or 1 where NumPy's routine
  fails for that matrix (LinAlgError), whose outputs are then NaN. `likes`: each
  output's (trailing shape, dtype)."""
  batch = a.shape[:-2]
  with np.errstate(all="ignore"):
    try:
      return [np.asarray(o) for o in fn(a)] + [np.zeros(batch, np.int32)]
    except np.linalg.LinAlgError:
      pass
    flat = a.reshape((-1,) + a.shape[-2:])
    outs = [np.full((len(flat),) + tuple(s), np.nan, dt) for s, dt in likes]
    info = np.zeros(len(flat), np.int32)
    for i, m in enumerate(flat):
      try:
        for o, r in zip(outs, fn(m)):
          o[i] = r
      except np.linalg.LinAlgError:
        info[i] = 1
  return [o.reshape(batch + o.shape[1:]) for o in outs] + [info.reshape(batch)]


def potrf(attrs, a):
  """(factor, info): the lower (uplo 'L') Cholesky factor, zeros above the diagonal; info
  1 (factor NaN) for a matrix that is not positive definite."""
  lower = dict(attrs).get("uplo", 76) == 76
  x = a if lower else np.conj(np.swapaxes(a, -1, -2))
  f, info = _guarded(lambda m: [np.linalg.cholesky(m)], x, [(a.shape[-2:], a.dtype)])
  f = f.astype(a.dtype, copy=False)
  return [f if lower else np.conj(np.swapaxes(f, -1, -2)), info]


def _substitute(t, b, lower: bool):
  """Solve t @ x = b for triangular t by substitution (inf/NaN where the diagonal has
  zeros, as LAPACK's trsm)."""
  n = t.shape[-1]
  x = np.zeros(np.broadcast_shapes(t.shape[:-2], b.shape[:-2]) + b.shape[-2:], b.dtype)
  for i in (range(n) if lower else reversed(range(n))):
    done = slice(0, i) if lower else slice(i + 1, n)
    acc = b[..., i, :] - np.einsum("...k,...kj->...j", t[..., i, done], x[..., done, :])
    x[..., i, :] = acc / t[..., i, i][..., None]
  return x


def trsm(attrs, a, b):
  """op(A) X = B (side 'L') or X op(A) = B (side 'R') for the `uplo` triangle of A,
  op = transpose 'T' / conjugate transpose 'C' / none 'N'; diag 'U': unit diagonal."""
  cfg = dict(attrs)
  left, lower = cfg["side"] == 76, cfg["uplo"] == 76
  trans, unit = cfg["trans_x"], cfg["diag"] == 85
  n = a.shape[-1]
  t = np.tril(a) if lower else np.triu(a)
  if unit:
    t = t.copy()
    t[..., np.arange(n), np.arange(n)] = 1
  if trans != 78:       # 'T' or 'C'
    t = np.swapaxes(t, -1, -2)
    t = np.conj(t) if trans == 67 else t
    lower = not lower
  if not left:          # X t = B  <=>  t^T X^T = B^T
    t, b, lower = np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2), not lower
  with np.errstate(all="ignore"):
    if n and np.all(np.diagonal(t, axis1=-2, axis2=-1) != 0):
      try:
        x = np.linalg.solve(t, b)
      except np.linalg.LinAlgError:
        x = _substitute(t, b, lower)
    else:
      x = _substitute(t, b, lower)
  x = x if left else np.swapaxes(x, -1, -2)
  return [np.asarray(x).astype(a.dtype, copy=False)]


def geqrf(attrs, a):
  """(a_fact, taus): R on and above the diagonal, the Householder vectors below it."""
  if 0 in a.shape[-2:]:
    return [a.copy(), np.zeros(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype)]
  h, tau = np.linalg.qr(a, mode="raw")
  return [np.swapaxes(h, -1, -2).astype(a.dtype), tau.astype(a.dtype)]


def orgqr(attrs, a, tau):
  """Q = H_1 ... H_k applied to the first columns of the identity (H_i = I - tau_i v_i
  v_i^H, v_i = e_i + the part of column i of `a` below the diagonal)."""
  m, c = a.shape[-2:]
  q = np.broadcast_to(np.eye(m, c, dtype=a.dtype), a.shape).copy()
  for i in reversed(range(tau.shape[-1])):
    v = a[..., :, i].copy()
    v[..., :i] = 0
    v[..., i] = 1
    w = np.einsum("...m,...mc->...c", np.conj(v), q)
    q -= tau[..., i, None, None] * v[..., :, None] * w[..., None, :]
  return [q]


def syevd(attrs, a):
  """(eigenvectors, eigenvalues ascending, info); info 1 (NaN results) on failure."""
  uplo = "L" if dict(attrs).get("uplo", 76) == 76 else "U"
  n, rdt = a.shape[-1], real_dtype(a.dtype)
  w, v, info = _guarded(lambda m: np.linalg.eigh(m, UPLO=uplo), a,
                        [((n,), rdt), ((n, n), a.dtype)])
  return [v.astype(a.dtype, copy=False), w.astype(rdt, copy=False), info]


def gesdd(attrs, a):
  """(a, s, u, vt, info) for job mode 'A' (full u, vt), 'S' (reduced) or 'N' (s only: u
  and vt are left zero); info 1 (NaN results) on failure."""
  mode = dict(attrs)["mode"]
  m, n = a.shape[-2:]
  k, rdt = min(m, n), real_dtype(a.dtype)
  ushape, vshape = ((m, k), (k, n)) if mode == 83 else ((m, m), (n, n))
  if mode == 78:
    s, info = _guarded(lambda x: [np.linalg.svd(x, compute_uv=False)], a, [((k,), rdt)])
    u, vt = np.zeros(a.shape[:-2] + ushape, a.dtype), np.zeros(a.shape[:-2] + vshape, a.dtype)
  else:
    u, s, vt, info = _guarded(lambda x: np.linalg.svd(x, full_matrices=mode == 65), a,
                              [(ushape, a.dtype), ((k,), rdt), (vshape, a.dtype)])
  return [a.copy(), s.astype(rdt, copy=False), u.astype(a.dtype, copy=False),
          vt.astype(a.dtype, copy=False), info]


def getrf(attrs, a):
  """(lu, ipiv (1-based, int32), info): LAPACK's partial pivoting (the first row of
  largest |value| in the column; complex: largest |re| + |im|, as LAPACK's i?amax);
  info j+1 for the first zero pivot (singular)."""
  m, n = a.shape[-2:]
  k = min(m, n)
  batch = a.shape[:-2]
  x = np.array(a.reshape((int(np.prod(batch, dtype=np.int64)), m, n)), copy=True)
  bsz = x.shape[0]
  piv = np.zeros((bsz, k), np.int32)
  info = np.zeros(bsz, np.int32)
  rows = np.arange(bsz)
  with np.errstate(all="ignore"):
    for j in range(k):
      col = x[:, j:, j]
      mag = np.abs(col.real) + np.abs(col.imag) if x.dtype.kind == "c" else np.abs(col)
      mag = np.where(np.isnan(mag), np.inf, mag)   # LAPACK's isamax stops at a NaN
      p = j + np.argmax(mag, axis=1)
      piv[:, j] = p
      rj, rp = x[rows, j].copy(), x[rows, p].copy()
      x[rows, j], x[rows, p] = rp, rj
      pivot = x[:, j, j]
      zero = pivot == 0
      info = np.where(zero & (info == 0), j + 1, info)
      scale = np.where(zero, 1, pivot)
      x[:, j + 1:, j] = np.where(zero[:, None], x[:, j + 1:, j], x[:, j + 1:, j] / scale[:, None])
      x[:, j + 1:, j + 1:] -= x[:, j + 1:, j, None] * x[:, j, None, j + 1:]
  return [x.reshape(a.shape), (piv + 1).reshape(batch + (k,)), info.reshape(batch)]


def pivots_to_permutation(pivots, permutation_size: int):
  batch = pivots.shape[:-1]
  p = pivots.reshape((int(np.prod(batch, dtype=np.int64)), pivots.shape[-1]))
  perm = np.broadcast_to(np.arange(permutation_size, dtype=np.int32),
                         (p.shape[0], permutation_size)).copy()
  rows = np.arange(p.shape[0])
  for j in range(p.shape[-1]):
    pj = p[:, j]
    a, b = perm[rows, j].copy(), perm[rows, pj].copy()
    perm[rows, j], perm[rows, pj] = b, a
  return perm.reshape(batch + (permutation_size,))


def lu_pivots_to_permutation(attrs, pivots):
  return [pivots_to_permutation(pivots, dict(attrs)["permutation_size"])]


def complex_dtype(dt) -> np.dtype:
  return np.result_type(dt, np.complex64)


def _unit_columns(v):
  """Columns scaled to unit 2-norm with their largest-magnitude entry real (LAPACK geev's
  normalization of eigenvectors)."""
  v = v / np.linalg.norm(v, axis=-2, keepdims=True)
  big = np.take_along_axis(v, np.argmax(np.abs(v), axis=-2)[..., None, :], axis=-2)
  phase = np.where(big == 0, 1, np.conj(big) / np.where(big == 0, 1, np.abs(big)))
  return v * phase


def geev(attrs, a):
  """(w, vl, vr, info): complex eigenvalues, left eigenvectors (vl^H a = w vl^H) and right
  ones (a vr = vr w) as unit complex columns; vl/vr zero when not requested ('N'). A real
  `a` gives (wr, wi, vl, vr, info), w's real and imaginary parts apart, as sgeev/dgeev's
  FFI targets do."""
  w, vl, vr, info = geev_complex(attrs, a)
  if a.dtype.kind == "c":
    return [w, vl, vr, info]
  return [w.real.copy(), w.imag.copy(), vl, vr, info]


def geev_complex(attrs, a):
  cfg = dict(attrs)
  n, cdt = a.shape[-1], complex_dtype(a.dtype)
  w, vr, info = _guarded(lambda m: np.linalg.eig(m), a, [((n,), cdt), ((n, n), cdt)])
  w, vr = w.astype(cdt), vr.astype(cdt)
  vl = np.zeros_like(vr)
  if cfg.get("compute_left") == 86 and n:
    with np.errstate(all="ignore"):
      try:
        vl = _unit_columns(np.conj(np.swapaxes(np.linalg.inv(vr), -1, -2))).astype(cdt)
      except np.linalg.LinAlgError:
        vl = np.full_like(vr, np.nan)
  if cfg.get("compute_right") != 86:
    vr = np.zeros_like(vr)
  return [w, vl, vr, info]


CUSTOM_CALL_TARGETS: dict = {}
for _name, _fn in [("potrf", potrf), ("trsm", trsm), ("geqrf", geqrf), ("orgqr", orgqr),
                   ("gesdd", gesdd), ("getrf", getrf), ("geev", geev)]:
  for _p in "sdcz":
    CUSTOM_CALL_TARGETS[f"lapack_{_p}{_name}_ffi"] = _fn
for _p, _name in [("s", "syevd"), ("d", "syevd"), ("c", "heevd"), ("z", "heevd"),
                  ("c", "ungqr"), ("z", "ungqr")]:
  CUSTOM_CALL_TARGETS[f"lapack_{_p}{_name}_ffi"] = syevd if "evd" in _name else orgqr
CUSTOM_CALL_TARGETS["lu_pivots_to_permutation"] = lu_pivots_to_permutation


def run_custom_call(target: str, attrs, *arrays) -> list:
  fn = CUSTOM_CALL_TARGETS.get(target)
  if fn is None:
    raise ValueError(f"unknown custom call target {target!r}")
  return fn(attrs, *arrays)
