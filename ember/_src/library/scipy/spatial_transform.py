"""jax.scipy.spatial.transform: Rotation (3-d rotations stored as unit quaternions
(x, y, z, w), single or stacked along leading axes) and Slerp (spherical linear
interpolation between key rotations), NamedTuples and so pytrees, as in JAX 0.12.

Conversions are written on the quaternion's last axis, so stacks of any batch shape work.
Beyond JAX (whose versions raise or assert there): Rotation.random(key, num) draws
uniformly distributed rotations (normalized 4-d normal samples) and Rotation.identity(num)
makes a stack of num identities."""
from __future__ import annotations

import re
import typing

import numpy as np

from ember._src.library.numpy import util
from ember._src.library.random import samplers
from ember._src.library.scipy import _jnp as jnp

__all__ = ["Rotation", "Slerp"]

_AXIS = {"x": 0, "y": 1, "z": 2}


def _norm(v):
  return jnp.sqrt(jnp.sum(v * v, axis=-1))


def _normalize(q):
  return q / _norm(q)[..., None]


def _parts(q):
  return q[..., 0], q[..., 1], q[..., 2], q[..., 3]


def _compose(p, q):
  """Quaternion product p q (the rotation q, then p)."""
  p, q = jnp.broadcast_arrays(p, q)
  cross = jnp.cross(p[..., :3], q[..., :3])
  vec = p[..., 3:] * q[..., :3] + q[..., 3:] * p[..., :3] + cross
  w = p[..., 3] * q[..., 3] - jnp.sum(p[..., :3] * q[..., :3], axis=-1)
  return jnp.concatenate([vec, w[..., None]], axis=-1)


def _as_matrix(q):
  x, y, z, w = _parts(q)
  x2, y2, z2, w2 = x * x, y * y, z * z, w * w
  xy, zw, xz, yw, yz, xw = x * y, z * w, x * z, y * w, y * z, x * w
  rows = [[x2 - y2 - z2 + w2, 2 * (xy - zw), 2 * (xz + yw)],
          [2 * (xy + zw), -x2 + y2 - z2 + w2, 2 * (yz - xw)],
          [2 * (xz - yw), 2 * (yz + xw), -x2 - y2 + z2 + w2]]
  return jnp.stack([jnp.stack(r, axis=-1) for r in rows], axis=-2)


def _from_matrix(m):
  """Shepperd's method: build the quaternion from the largest of the diagonal and trace."""
  trace = m[..., 0, 0] + m[..., 1, 1] + m[..., 2, 2]
  decision = jnp.stack([m[..., 0, 0], m[..., 1, 1], m[..., 2, 2], trace], axis=-1)
  choice = jnp.argmax(decision, axis=-1)
  candidates = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    q = [None] * 4
    q[i] = 1 - trace + 2 * m[..., i, i]
    q[j] = m[..., j, i] + m[..., i, j]
    q[k] = m[..., k, i] + m[..., i, k]
    q[3] = m[..., k, j] - m[..., j, k]
    candidates.append(jnp.stack(q, axis=-1))
  candidates.append(jnp.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                               m[..., 1, 0] - m[..., 0, 1], 1 + trace], axis=-1))
  quat = candidates[3]
  for i in range(3):
    quat = jnp.where((choice == i)[..., None], candidates[i], quat)
  return _normalize(quat)


def _from_rotvec(rotvec, degrees):
  if degrees:
    rotvec = jnp.deg2rad(rotvec)
  angle = _norm(rotvec)
  angle2 = angle * angle
  small = 0.5 - angle2 / 48 + angle2 * angle2 / 3840   # sin(a/2)/a by its series near 0
  large = jnp.sin(angle / 2) / jnp.where(angle == 0, 1, angle)
  scale = jnp.where(angle <= 1e-3, small, large)
  return jnp.concatenate([scale[..., None] * rotvec, jnp.cos(angle / 2)[..., None]], axis=-1)


def _as_rotvec(q, degrees):
  q = jnp.where((q[..., 3] < 0)[..., None], -q, q)   # w >= 0: angle in [0, pi]
  angle = 2.0 * jnp.arctan2(_norm(q[..., :3]), q[..., 3])
  angle2 = angle * angle
  small = 2 + angle2 / 12 + 7 * angle2 * angle2 / 2880
  large = angle / jnp.where(angle == 0, 1, jnp.sin(angle / 2))
  scale = jnp.where(angle <= 1e-3, small, large)
  if degrees:
    scale = jnp.rad2deg(scale)
  return scale[..., None] * q[..., :3]


def _from_mrp(mrp):
  sq1 = jnp.sum(mrp * mrp, axis=-1)[..., None] + 1
  return jnp.concatenate([2 * mrp, 2 - sq1], axis=-1) / sq1


def _as_mrp(q):
  sign = jnp.where(q[..., 3] < 0, -1.0, 1.0)
  return (sign / (1.0 + sign * q[..., 3]))[..., None] * q[..., :3]


def _canonical(q):
  neg, zero = q < 0, q == 0
  flip = (neg[..., 3] | (zero[..., 3] & neg[..., 0])
          | (zero[..., 3] & zero[..., 0] & neg[..., 1])
          | (zero[..., 3] & zero[..., 0] & zero[..., 1] & neg[..., 2]))
  return jnp.where(flip[..., None], -q, q)


def _check_seq(seq: str, exact3: bool):
  if exact3 and len(seq) != 3:
    raise ValueError(f"Expected 3 axes, got {seq}.")
  if not 1 <= len(seq) <= 3:
    raise ValueError("Expected axis specification to be a non-empty string of upto 3 "
                     f"characters, got {seq}")
  intrinsic = re.match(r"^[XYZ]{1,3}$", seq) is not None
  extrinsic = re.match(r"^[xyz]{1,3}$", seq) is not None
  if not (intrinsic or extrinsic):
    raise ValueError("Expected axes from `seq` to be from ['x', 'y', 'z'] or ['X', 'Y', "
                     f"'Z'], got {seq}")
  if any(seq[i] == seq[i + 1] for i in range(len(seq) - 1)):
    raise ValueError(f"Expected consecutive axes to be different, got {seq}")
  return intrinsic


def _elementary(axis: int, angle):
  half = angle / 2.0
  zero = jnp.zeros_like(angle)
  parts = [zero, zero, zero, jnp.cos(half)]
  parts[axis] = jnp.sin(half)
  return jnp.stack(parts, axis=-1)


def _from_euler(seq, angles, degrees):
  intrinsic = _check_seq(seq, exact3=False)
  angles = _inexact(angles)
  if angles.ndim == 0:
    angles = angles[None]   # one angle for a one-axis seq
  if angles.shape[-1] != len(seq):
    raise ValueError(f"Expected angles to have {len(seq)} values along the last axis for "
                     f"seq {seq!r}, got shape {angles.shape}")
  if degrees:
    angles = jnp.deg2rad(angles)
  axes = [_AXIS[c] for c in seq.lower()]
  quat = _elementary(axes[0], angles[..., 0])
  for n in range(1, len(axes)):
    step = _elementary(axes[n], angles[..., n])
    quat = _compose(quat, step) if intrinsic else _compose(step, quat)
  return quat


def _as_euler(q, seq, degrees):
  """Euler angles by Bernardes & Viollet's quaternion method (SciPy's), axes fixed by seq."""
  extrinsic = not _check_seq(seq, exact3=True)
  axes = [_AXIS[c] for c in seq.lower()]
  if not extrinsic:
    axes = axes[::-1]
  i, j, k = axes
  symmetric = i == k
  if symmetric:
    k = 3 - i - j
  sign = (i - j) * (j - k) * (k - i) // 2
  x = [q[..., n] for n in range(4)]
  if symmetric:
    a, b, c, d = x[3], x[i], x[j], x[k] * sign
  else:
    a, b = x[3] - x[j], x[i] + x[k] * sign
    c, d = x[j] + x[3], x[k] * sign - x[i]
  eps = 1e-7
  middle = 2 * jnp.arctan2(jnp.hypot(c, d), jnp.hypot(a, b))
  case = jnp.where(jnp.abs(middle - np.pi) <= eps, 2, 0)
  case = jnp.where(jnp.abs(middle) <= eps, 1, case)
  half_sum, half_diff = jnp.arctan2(b, a), jnp.arctan2(d, c)
  first = 0 if extrinsic else 2
  third = 2 - first
  out = [None, middle, None]
  degenerate = jnp.where(case == 1, 2 * half_sum, 2 * half_diff * (-1 if extrinsic else 1))
  out[0] = degenerate
  out[2] = jnp.zeros_like(middle)
  if first == 0:
    out[0] = jnp.where(case == 0, half_sum - half_diff, out[0])
    out[2] = jnp.where(case == 0, half_sum + half_diff, out[2])
  else:
    out[2] = jnp.where(case == 0, half_sum - half_diff, out[2])
    out[0] = jnp.where(case == 0, half_sum + half_diff, out[0])
  if not symmetric:
    out[third] = out[third] * sign
    out[1] = out[1] - np.pi / 2
  angles = (jnp.stack(out, axis=-1) + np.pi) % (2 * np.pi) - np.pi
  return jnp.rad2deg(angles) if degrees else angles


class Rotation(typing.NamedTuple):
  """Rotations in 3 dimensions (scipy.spatial.transform.Rotation): `quat` holds unit
  quaternions (x, y, z, w) on its last axis."""
  quat: typing.Any

  @classmethod
  def concatenate(cls, rotations):
    return cls(jnp.concatenate([jnp.atleast_2d(r.quat) for r in rotations]))

  @classmethod
  def from_euler(cls, seq: str, angles, degrees: bool = False):
    return cls(_from_euler(seq, angles, degrees))

  @classmethod
  def from_matrix(cls, matrix):
    matrix = _inexact(matrix)
    if matrix.shape[-2:] != (3, 3):
      raise ValueError(f"Expected `matrix` to have shape (..., 3, 3), got {matrix.shape}")
    return cls(_from_matrix(matrix))

  @classmethod
  def from_mrp(cls, mrp):
    return cls(_from_mrp(_vectors("Rotation.from_mrp", mrp, 3)))

  @classmethod
  def from_quat(cls, quat):
    return cls(_normalize(_vectors("Rotation.from_quat", quat, 4)))

  @classmethod
  def from_rotvec(cls, rotvec, degrees: bool = False):
    return cls(_from_rotvec(_vectors("Rotation.from_rotvec", rotvec, 3), degrees))

  @classmethod
  def identity(cls, num: int | None = None, dtype=float):
    quat = jnp.array([0.0, 0.0, 0.0, 1.0], dtype=dtype)
    return cls(quat if num is None else jnp.tile(quat, (num, 1)))

  @classmethod
  def random(cls, random_key, num: int | None = None):
    """Uniformly distributed rotations: normalized 4-d standard normal samples."""
    shape = (4,) if num is None else (num, 4)
    return cls(_normalize(samplers.normal(random_key, shape)))

  def __getitem__(self, indexer):
    if self.single:
      raise TypeError("Single rotation is not subscriptable.")
    return Rotation(self.quat[indexer])

  def __len__(self):
    if self.single:
      raise TypeError("Single rotation has no len().")
    return self.quat.shape[0]

  def __mul__(self, other):
    return Rotation.from_quat(_compose(self.quat, other.quat))

  def apply(self, vectors, inverse: bool = False):
    """The rotation (or its inverse) applied to 3-vectors on the last axis."""
    m = self.as_matrix()
    if inverse:
      m = jnp.swapaxes(m, -1, -2)
    return jnp.einsum("...ij,...j->...i", m, jnp.asarray(vectors))

  def as_euler(self, seq: str, degrees: bool = False):
    return _as_euler(self.quat, seq, degrees)

  def as_matrix(self):
    return _as_matrix(self.quat)

  def as_mrp(self):
    return _as_mrp(self.quat)

  def as_rotvec(self, degrees: bool = False):
    return _as_rotvec(self.quat, degrees)

  def as_quat(self, canonical: bool = False, scalar_first: bool = False):
    quat = _canonical(self.quat) if canonical else self.quat
    return jnp.roll(quat, 1, axis=-1) if scalar_first else quat

  def inv(self):
    return Rotation(self.quat * jnp.array([-1, -1, -1, 1], dtype=self.quat.dtype))

  def magnitude(self):
    return 2.0 * jnp.arctan2(_norm(self.quat[..., :3]), jnp.abs(self.quat[..., 3]))

  def mean(self, weights=None):
    """The (weighted) mean rotation: the top eigenvector of sum_i w_i q_i q_i^T."""
    n = len(self)
    w = (jnp.ones(n, dtype=self.quat.dtype) if weights is None
         else jnp.asarray(weights, dtype=self.quat.dtype))
    if w.ndim != 1:
      raise ValueError(f"Expected `weights` to be 1 dimensional, got shape {w.shape}.")
    if w.shape[0] != n:
      raise ValueError("Expected `weights` to have number of values equal to number of "
                       f"rotations, got {w.shape[0]} values and {n} rotations.")
    k = jnp.dot(w[None, :] * self.quat.T, self.quat)
    _, v = jnp.linalg.eigh(k)
    return Rotation(v[:, -1])

  @property
  def single(self) -> bool:
    return self.quat.ndim == 1


def _inexact(x):
  (x,) = util.promote_dtypes_inexact(jnp.asarray(x))
  return x


def _vectors(name, x, size):
  """x as an inexact array of `size`-vectors (lists accepted, as in JAX)."""
  x = _inexact(x)
  if x.ndim == 0 or x.shape[-1] != size:
    raise ValueError(f"{name}: expected the last axis to have length {size}, got shape "
                     f"{x.shape}")
  return x


class Slerp(typing.NamedTuple):
  """Spherical linear interpolation of rotations (scipy.spatial.transform.Slerp): build it
  with Slerp.init(times, rotations), call it with times."""
  times: typing.Any
  timedelta: typing.Any
  rotations: Rotation
  rotvecs: typing.Any

  @classmethod
  def init(cls, times, rotations: Rotation):
    if not isinstance(rotations, Rotation):
      raise TypeError("`rotations` must be a `Rotation` instance.")
    if rotations.single or len(rotations) == 1:
      raise ValueError("`rotations` must be a sequence of at least 2 rotations.")
    times = jnp.asarray(times, dtype=rotations.quat.dtype)
    if times.ndim != 1:
      raise ValueError("Expected times to be specified in a 1 dimensional array, got "
                       f"{times.ndim} dimensions.")
    if times.shape[0] != len(rotations):
      raise ValueError("Expected number of rotations to be equal to number of timestamps "
                       f"given, got {len(rotations)} rotations and {times.shape[0]} "
                       "timestamps.")
    start = Rotation(rotations.as_quat()[:-1])
    steps = (start.inv() * Rotation(rotations.as_quat()[1:])).as_rotvec()
    return cls(times=times, timedelta=jnp.diff(times), rotations=start, rotvecs=steps)

  def __call__(self, times):
    t = jnp.asarray(times, dtype=self.times.dtype)
    if t.ndim > 1:
      raise ValueError("`times` must be at most 1-dimensional.")
    single = t.ndim == 0
    t = jnp.atleast_1d(t)
    ind = jnp.maximum(jnp.searchsorted(self.times, t) - 1, 0)
    alpha = (t - self.times[ind]) / self.timedelta[ind]
    result = self.rotations[ind] * Rotation.from_rotvec(self.rotvecs[ind] * alpha[:, None])
    return result[0] if single else result
