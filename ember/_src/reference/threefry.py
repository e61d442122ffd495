"""The threefry2x32 hash: Threefry-2x32 with 20 rounds (Salmon et al. 2011) on NumPy uint32
arrays, all arithmetic wrapping mod 2**32. The `threefry2x32` primitive's eager impl and
the HLO reference evaluator both run it; the primitive's lowering emits the same rounds."""
from __future__ import annotations

import numpy as np

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KS_PARITY = np.uint32(0x1BD11BDA)


def threefry2x32(k1, k2, x1, x2):
  """Hash the counter pairs (x1, x2) with the key (k1, k2), broadcasting; the two output
  words as uint32 arrays."""
  k1, k2, x1, x2 = (np.asarray(a, np.uint32) for a in (k1, k2, x1, x2))
  shape = np.broadcast_shapes(k1.shape, k2.shape, x1.shape, x2.shape)
  ks = (k1, k2, k1 ^ k2 ^ KS_PARITY)
  with np.errstate(over="ignore"):
    x = [np.array(np.broadcast_to(x1 + ks[0], shape)), np.array(np.broadcast_to(x2 + ks[1], shape))]
    for i in range(5):  # 5 groups of 4 rounds, each followed by a key injection
      for r in ROTATIONS[i % 2]:
        x[0] += x[1]
        x[1] = ((x[1] << np.uint32(r)) | (x[1] >> np.uint32(32 - r))) ^ x[0]
      x[0] += ks[(i + 1) % 3]
      x[1] += ks[(i + 2) % 3] + np.uint32(i + 1)
  return x
