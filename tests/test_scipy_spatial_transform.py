"""ember.scipy.spatial.transform (Rotation, Slerp) against scipy.spatial.transform in
float64, eager and under jit; gimbal-lock Euler angles as real JAX 0.12.1 returns them;
Rotation.random/identity(num); the errors."""
import numpy as np
import pytest

import ember
from ember.scipy.spatial.transform import Rotation, Slerp

sst = pytest.importorskip("scipy.spatial.transform")   # (the oldest venv has no SciPy)

RNG = np.random.default_rng(0)
Q = RNG.normal(size=(5, 4))
V = RNG.normal(size=(5, 3))
SEQS = ["xyz", "ZYX", "zxz", "XYX", "yzx"]


def close(a, b, tol=1e-12):
  np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_conversions_match_scipy():
  with ember.enable_x64():
    ours, ref = Rotation.from_quat(Q), sst.Rotation.from_quat(Q)
    close(ours.as_quat(), ref.as_quat())
    close(ours.as_quat(canonical=True), ref.as_quat(canonical=True))
    close(ours.as_quat(scalar_first=True), ref.as_quat(scalar_first=True))
    close(ours.as_matrix(), ref.as_matrix())
    close(ours.as_rotvec(), ref.as_rotvec())
    close(ours.as_rotvec(degrees=True), ref.as_rotvec(degrees=True), 1e-10)
    close(ours.as_mrp(), ref.as_mrp())
    for seq in SEQS:
      close(ours.as_euler(seq), ref.as_euler(seq))
      angles = RNG.uniform(-3, 3, size=(5, 3))
      close(Rotation.from_euler(seq, angles).as_matrix(),
            sst.Rotation.from_euler(seq, angles).as_matrix())
    close(ours.as_euler("xzy", degrees=True), ref.as_euler("xzy", degrees=True), 1e-10)
    close(Rotation.from_euler("z", 30.0, degrees=True).as_matrix(),
          sst.Rotation.from_euler("z", 30.0, degrees=True).as_matrix())
    close(Rotation.from_euler("xy", [10.0, 20.0], degrees=True).as_quat(),
          sst.Rotation.from_euler("xy", [10.0, 20.0], degrees=True).as_quat())
    m = ref.as_matrix()
    close(Rotation.from_matrix(m).as_quat(canonical=True),
          sst.Rotation.from_matrix(m).as_quat(canonical=True))
    close(Rotation.from_rotvec(V).as_quat(), sst.Rotation.from_rotvec(V).as_quat())
    close(Rotation.from_rotvec(50 * V, degrees=True).as_quat(),
          sst.Rotation.from_rotvec(50 * V, degrees=True).as_quat())
    close(Rotation.from_rotvec(np.zeros(3)).as_quat(), [0, 0, 0, 1])
    close(Rotation.from_mrp(0.3 * V).as_quat(), sst.Rotation.from_mrp(0.3 * V).as_quat())


def test_operations_match_scipy():
  with ember.enable_x64():
    ours, ref = Rotation.from_quat(Q), sst.Rotation.from_quat(Q)
    close(ours.apply(V), ref.apply(V))
    close(ours.apply(V, inverse=True), ref.apply(V, inverse=True))
    close(ours[0].apply(V), ref[0].apply(V))
    close((ours * ours[::-1]).as_quat(), (ref * ref[::-1]).as_quat())
    close(ours.inv().as_quat(), ref.inv().as_quat())
    close(ours.magnitude(), ref.magnitude())
    w = RNG.uniform(size=5)
    close(ours.mean(w).as_quat(canonical=True), ref.mean(w).as_quat(canonical=True))
    close(Rotation.concatenate([ours, ours[0]]).as_quat(),
          sst.Rotation.concatenate([ref, ref[0]]).as_quat())
    assert len(ours) == 5 and ours.single is False and ours[1].single is True
    times, at = [0, 1, 2, 3, 4], np.array([0, 0.3, 1.5, 2.2, 4])
    slerp, ref_slerp = Slerp.init(times, ours), sst.Slerp(times, ref)
    close(slerp(at).as_quat(), ref_slerp(at).as_quat())
    close(slerp(2.5).as_quat(), ref_slerp(2.5).as_quat())
    jitted = ember.jit(lambda q, v, t: (Rotation.from_quat(q).apply(v),
                                        Slerp.init(np.arange(5.0), Rotation.from_quat(q))(t)))
    applied, interp = jitted(Q, V, at)
    close(applied, ref.apply(V))
    close(interp.as_quat(), ref_slerp(at).as_quat())


def test_gimbal_lock_as_jax_and_float32():
  # jax.scipy.spatial.transform.Rotation.from_euler(seq, a).as_euler(seq), JAX 0.12.1, x64
  cases = [("xyz", [0.3, np.pi / 2, 0.2], [0.1, 1.570796326795, 0.0]),
           ("ZXZ", [0.3, 0.0, 0.2], [0.5, 0.0, 0.0]),
           ("zyz", [0.4, np.pi, 0.1], [0.3, -3.14159265359, 0.0])]
  with ember.enable_x64():
    for seq, angles, expected in cases:
      close(Rotation.from_euler(seq, np.array(angles)).as_euler(seq), expected, 1e-9)
  r32 = Rotation.from_quat(Q.astype(np.float32))
  assert r32.as_matrix().dtype == np.float32
  close(r32.as_matrix(), sst.Rotation.from_quat(Q).as_matrix(), 1e-6)


def test_identity_random_and_errors():
  close(Rotation.identity().as_quat(), [0, 0, 0, 1])
  assert Rotation.identity(3).quat.shape == (3, 4)
  rots = Rotation.random(ember.random.key(0), 4)
  close(np.linalg.norm(np.asarray(rots.quat), axis=-1), np.ones(4), 1e-6)
  assert Rotation.random(ember.random.key(1)).single
  with pytest.raises(ValueError, match="Expected 3 axes"):
    Rotation.identity().as_euler("xy")
  with pytest.raises(ValueError, match="consecutive"):
    Rotation.from_euler("xxz", np.zeros(3))
  with pytest.raises(ValueError, match=r"\['x', 'y', 'z'\]"):
    Rotation.from_euler("xYz", np.zeros(3))
  with pytest.raises(TypeError, match="not subscriptable"):
    Rotation.identity()[0]
  with pytest.raises(ValueError, match="at least 2 rotations"):
    Slerp.init([0.0], Rotation.identity(1))
  with pytest.raises(ValueError, match="weights"):
    Rotation.from_quat(Q).mean(np.ones(3))
