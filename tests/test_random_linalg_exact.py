"""ember.random's linear-algebra samplers, bit for bit against JAX 0.12 on CPU.

multivariate_normal: JAX takes the Cholesky factor from LAPACK's spotrf (scipy's OpenBLAS,
through jaxlib) and the product factor @ z from XLA:CPU's dot (YNNPACK or XLA's own loop, by
shape). orthogonal: JAX's QR is sgeqrf + sorgqr of that OpenBLAS. ember replays those
roundings op for op in float32 (random/linalg.py's _mvn_cholesky32, _mvn_matvec32,
_orth_qr32), so factors, products and samples are JAX's bits, eager and under `ember.jit`:

1. the Cholesky factor for n = 1..32 (OpenBLAS's unblocked potf2: every kernel variant it
   takes), batched, and JAX's nan factor for matrices that are not positive definite;
2. the product for each XLA:CPU kernel (YNNPACK's 2-chain and 1-chain kernels, XLA's loop
   for few rows, with 8 lanes and both horizontal-sum orders for n >= 8), stacks included;
3. the samples of multivariate_normal (cholesky), float32, and float64 under x64 (close);
4. Q and diag(R) for matrices up to 8 rows (each sgemv_t kernel branch), and the samples
   of orthogonal, square, tall and wide, batched;
5. the stored cases of data/random_distributions.npz that these cover exactly.

The JAX values are in _DATA (np.savez, zlib, base64), made with real JAX 0.12 from the case
definitions below: jnp.linalg.cholesky(_spd(n, n, chol_batch(n))), jax.jit(jnp.einsum)(
"...ij,...j->...i", _floats(2i+1, fs), _floats(2i+2, zs)), jax.random.multivariate_normal(
jax.random.key(seed), *mvn_args(seed, n, batch), shape) (float64 cases under x64),
jax.jit(jnp.linalg.qr)(_floats(1000 + 10m + n, (2, m, n))) (Q and R's diagonal) and
jax.random.orthogonal(jax.random.key(seed), n, shape, m=m). The sampler cases use keys whose
normal draws ember already reproduces bit for bit (see library/random/samplers.py); those draws are not what
this file checks.
"""
import base64
import io
import os
import sys
import zlib

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import random
from ember._src.library.random.linalg import _mvn_cholesky32, _mvn_matvec32, _orth_qr32


# ---- case definitions (pure NumPy; also what made _DATA with JAX) ----

def _ints(seed, count, lo, hi):
  """Deterministic integers in [lo, hi] (an LCG: no dependence on NumPy's generators)."""
  x, out = seed * 2654435761 % 2**32, []
  for _ in range(count):
    x = (1103515245 * x + 12345) % 2**31
    out.append(lo + (x >> 8) % (hi - lo + 1))
  return np.array(out, np.int64)


def _floats(seed, shape):
  """float32 values k / 317 (inexact, so products round) from deterministic integers."""
  n = int(np.prod(shape, dtype=np.int64))
  return (_ints(seed, n, -1000, 1000).astype(np.float64) / 317.0).astype(np.float32).reshape(shape)


def _spd(seed, n, batch=()):
  """Integer symmetric positive definite matrices B B^T + n I, exact in float32."""
  b = _ints(seed, int(np.prod(batch, dtype=np.int64)) * n * (n + 1), -9, 9).reshape(batch + (n, n + 1))
  a = np.einsum("...ik,...jk->...ij", b, b) + n * np.eye(n, dtype=np.int64)
  return a.astype(np.float32)


CHOL_NS = (1, 2, 3, 4, 5, 6, 7, 9, 13, 20, 32)
BAD_COV = np.array([[[1, 2], [2, 1]], [[1, 0], [0, 0]], [[np.nan, 0], [0, 1]], [[4, 1], [1, 3]]],
                   np.float32)
# (factor shape, z shape): each kernel XLA:CPU picks for einsum('...ij,...j->...i')
MATVEC_SHAPES = [((3, 3), (30, 3)), ((3, 3), (5, 3)), ((3, 3), (3,)), ((2, 2), (8, 2)),
                 ((4, 4), (2, 5, 4)), ((5, 5), (16, 5)), ((6, 6), (7, 6)), ((7, 7), (9, 7)),
                 ((8, 8), (3, 8)), ((8, 8), (8,)), ((9, 9), (12, 9)), ((9, 9), (9,)),
                 ((11, 11), (2, 11)), ((12, 12), (12,)), ((13, 13), (1, 13)), ((16, 16), (3, 16)),
                 ((33, 33), (4, 33)), ((2, 3, 3), (4, 2, 3)), ((2, 3, 3), (9, 2, 3)),
                 ((3, 9, 9), (3, 9)), ((2, 1, 3, 3), (2, 5, 3)), ((1, 1), (10, 1))]
# multivariate_normal(key(seed), mean, cov, shape): (name, seed, n, cov batch, shape)
MVN_CASES = [("n2", 100, 2, (), (5,)), ("n3", 120, 3, (), (12,)), ("n3_small", 121, 3, (), (4,)),
             ("n5", 104, 5, (), (10,)), ("n6_scalar", 105, 6, (), ()),
             ("n8_scalar", 106, 8, (), ()), ("n9", 107, 9, (), (3,)), ("n12", 108, 12, (), (4,)),
             ("n7_batch", 109, 7, (3,), (2, 3)), ("n3_batch", 110, 3, (2,), (9, 2)),
             ("n10_batch", 111, 10, (2,), (2,)), ("n17", 112, 17, (), (2,))]


def mvn_args(seed, n, batch):
  mean = _floats(seed, (n,))
  return mean, _spd(seed, n, batch) / np.float32(4 * n)   # / 4n: inexact, cholesky rounds


def chol_batch(n):
  return (2,) if n <= 20 else ()


MVN64_CASES = [("f64_n3", 130, 3, (), (6,)), ("f64_n5_batch", 131, 5, (2,), (3, 2))]


# every (m, n) to 5 rows; beyond, 1, 3 and m - 1 columns for the reflector's gemv (its branches)
QR_SHAPES = ([(m, n) for m in range(1, 6) for n in range(1, m + 1)]
             + [(m, n) for m in range(6, 9) for n in (2, 4, m)])
# orthogonal(key(seed), n, shape, m=m): (name, seed, n, shape, m)
ORTH_CASES = [("n1", 140, 1, (4,), None), ("n2", 141, 2, (3,), None), ("n3", 142, 3, (), None),
              ("n3_2d", 143, 3, (2, 2), None), ("n4", 144, 4, (2,), None), ("n5", 145, 5, (), None),
              ("tall_5x2", 146, 5, (2,), 2), ("wide_2x5", 147, 2, (), 5), ("tall_4x3", 148, 4, (), 3),
              ("wide_3x4", 149, 3, (2,), 4), ("wide_1x5", 150, 1, (), 5), ("n6", 151, 6, (), None),
              ("n7", 152, 7, (2,), None), ("n8", 153, 8, (), None), ("tall_8x3", 154, 8, (), 3),
              ("wide_5x7", 155, 5, (), 7)]


_DATA = np.load(io.BytesIO(zlib.decompress(base64.b64decode("".join([
    "eNrMfQlcTV33fyNNaJ6EBlEKzUXds9eJKCWZZ0ohqQhlpkmDoVKGVCpTiJSEVHfvfZSKkgxJZgnRZMzM3/M8eF4371h+f+dz"
    "z6fbPXvvu9f6rmGvtYfr4igq1l/or0tLSPr9xVefv16SQopC7p4LvI0H+C5cLiwkKxTxtdi3v3HO40e6TBYWChBa2ddj9mL3"
    "RX0Ha/a1mWPW11Cz75wFi5YscvOduWCRx+w/Ph/m5r149pfPF3u6LZz95X89E0NN4y8vfUPN1Zr/2yWluUeSbX4kxrr8QMIQ"
    "89uqgiSYfCMh9Wux1A4i4Y9Xe0iwG2vI/tGPJYwwu8WoJ5tp0uvP/00/+dBds5QESOuRoDRdkDTTb6SVfi1W2kGkmX55tYc0"
    "yfGI/doVoX5DDPCI2kF//m/5NIPufSXCdk2fBEuWqn0v09/0IaScOg5/vO/bS4ZzSPembk5F8CMLArtz1oIsMPvGAiHhr+WE"
    "O4YFZl9e7WGBkNBdEPqHK663A2z4JPudZN8bFuxCn0hqEDeU/avbABVGOpxnsiO1uNeLDXfhsf9Y31u5PwqzHfb9s8MxKTDn"
    "zCHUy+mvNpu07MFAWoaOGT+ZKFzuIyA9d4UUVwiyzvwb6+y/ssy+g1hn/uXVHtZdvjrrB9L/uAKKXiDyWv6Hzxdmm3OZjl4w"
    "9OaS76x+fPweiX3PcGktM2iVqdGf5b2XyOIeB8Q5ISUHKrIgB+pNJdnyU0ZtvsNo2guyVNb3h8+H7ZRktWA0PZT9+Pt3+PO0"
    "QazYB+UNk+fGT6yBb3XdXDNopPhc+vzJVSZIZZAABEYloosFIbD4bpu+sj61gyCw+PJqDwSbm5a3Yc8f142RG6D78kltnh3s"
    "UgUHHUPJWW21H54xZx3YmcEx4DU7hPZJEvv+bPcwMxreeR7E359FeC0cKT/u8+ezpNWPAM1aBtKbzelpK2+47dMNhY+SZ+XO"
    "qfy0P3df92Evn7Bt8+y6lSa3qqsWJzei+ActLNhTCBY7BsDjFcFko1jh92dOQVdg6nwHmnhSlxMWSULxvP5/thnUGIb2O+hB"
    "ee8wqjHmMXq/uhZy++oIQPtxvc5wQWgtv0ErIfJXsW9/2wut5ZdXe6B9Xub/U1b+6T96J1D7I/1++tx5bx/SYmAKLVaj2jy/"
    "UJFOkzcZcd1GKcMRMpj9sV4aOrFTHLyW1KARZ5VZ1yu139m+pPUtkd4wBMS3sWB0pBuncngAPeE078/6ruuk2OAiOdqqsAok"
    "/DUZf/XXZMaKEOqVEfalvss/paEmsgdecCrup8+Lnb1hRd1l9GqOV5vnS2ftRwq774HojHSkqzrlh+ejGoeiDPtyKrF4Ahl+"
    "jsLnuUHfn2cr3KC3V4pzTYMw6K+IoHHFY4haF6s/n+sF1KL36zaiD2U9qXzvDOp9fxetze5PIxXKBHxbvonZe0ERGvRdhES/"
    "ipBox4jQoC+v9ohQ35B5/5T9365TA/0gfvyWf1luQqw/2VAfTYcy6f+0nMr0IHrEPIx2sflA7ZMX/bTcctNR7AnZ/fTBnVyw"
    "py9R8RC7NuUUbvcg20yP0ty4QJCIkWO9Kzag/rNW/lAuZawMBFyzpHsbJ7KWvltpGhsCHw1cSN/Mrt/LvX8OZOqR/bRE+CiM"
    "OCXBNobfo36m8+D6piRGhrcf/ipDYbHLBlp7XJSmd+0G7n0r6Q5ZSRhj1QPkrBBoSuyDhMa9/5aHfc450NnqCey/K7Mg1pAO"
    "3vjPeb2yJgNVLJXFOSXjuZ4Q9tNy1+dkUg2tQBLA2wLaSy8gyd4b25Tb7jWNSokshvP7RDjtkj3Uamsu1DM/8jAwU56rk2kE"
    "X6M39PaUweDKfCT9Fh9BwuzfDnSQdDjdPqOVJs9KpZkvesLLQXtAaFYi2u6uw+IDDn+NZ2KUucNB12DW1UQ62SyU7L5nDTVn"
    "bpLIhiJ0BN8Es9g3AiqUEhxd8E2FpL7FL38PkcW/mjjxDgpgTP+4/2ctklo8LP/f4i94BdefouzWc/9Vvdyq7jD+VSJ57pz8"
    "H9frxjOEAWWOcC/Ij868tes/qjfCFdF6FEhiXW6iRiaQP+lIzr+t12V3HNrUIMHGejxEay9/RpmfpnGxK/719+UvNKMV8sq0"
    "0iyMSgcLcysDR8N5pTHgkBv3T+sZnbyOVn1eiYSd/El0cR3s+ZxEe42IhYM3IqiCadBP683Za0MVhsugIDF78B5nxF56eRGd"
    "uB9HP8+/gT0zg6nztrFt6p0YHALRgbJ0/UMZ9k2SHxSPaoBbriWgr6JNZ81OhHS3sbDOhfmh3prsCKS9dQHVVCS0XF6J3eO0"
    "nTxabkhPluiy0p4ldFjplYKdzvX0hKTO93omYxZD8jgeLXGrpCZR90DBuA7WmtTRZsVebP3Fi/Dp7ABaHx9PCrIekspVf43I"
    "5K4NRefXlKDsBhXadH05PXjbmjJ9XKlykhZ1vBAHLz9uhIKWRLpEuIx/bmYh6Kp6sTceHfmvZdRj+W209Pme/6reWA0fylxp"
    "YIYpHPuP6yl10WcHyzegPQ/ekpvli/+jettjTOhIrwGwa3Ms41Sbgl4+Df239cTOB6J3mr4wN+EWHOgxlt3lKw19roX/y3ou"
    "SlPYxvwYiozqKc98DBPDf0j5Ny/CPp8R/7SeF7eNbo96wMy5v4c0s0/ozcNd2KNLDanHEgmYMXY0+3Nez4A9Z+/CaLFNkNkl"
    "Ha6qyLLXgkSpX1k4XH8sTMUz1NvUWz/4CtR+vEkLu4qxBk3FMHrkHtr4RJkO4pVR+Redwd06hiYsMv2hXuZ7B3C8bskdvSFH"
    "i9R04X7kMBiwW5FOPZxJz3/cxjtvXkL1TWNpRZ7H93p0Uj6zquIixJ2Q5CzK19GmD+Kcy42N9N3ZY7jqQgHY9eDokYo4uJBz"
    "DEJ3/pUeCDPlUNTYMKbLThNoLoyiG9Zn4UkxF2mp1k0SNeslurVpPV1cPhPpvnWku5K3gl/1EIGR+CrdVktBH2Bi9D1H0OWb"
    "4emgDJDRH/f/7gPyq87/1/r1r66rdddRtBDusDbf7joEQ2aZo54+VR3S5mrfyzTXfx8ZdfgJLbU/2e42T/c8Qk38KtDC/Tfp"
    "ocCRsMw7o11tphrsJf0tP4CIhxfVGhoFmma20Ise+5/btD+uQU0thW32Znwkz29thQclsjQgojNc9Sr7n9o8d/IjOn9qO0x6"
    "0o2qZMZByaRDvOWfbbm8p+dohFEC+z/QC7TGEvJDSplTXfSpW39JqNKJhVT32VSj4DP0n5/8X7WZrl8NTTnVvHmOe2j4oeuI"
    "UW6gRzPjkevBcCrxdjO98vQhyY7K+Y/bvDJQglsfex2ttouEKXYbIfm8CU2M2EhLclLoSpPVcLVhF5ztdBPk6jP/ozbHrlbm"
    "1OO1UVrWTTQ3ZQLbaYU8rEx/BCP6HIQ8s9t0zDJJ5l28DzWQ96HTuN3/ts3yoKGURreS6LEDSHC4FWs9RIpTOyEFPdFgWJXs"
    "RofPWUsmmNYT2QwVeiHkNTkw91/7jbqARNjucB9ClOZAb6nVyF5Iki6pEiHVU7S453WjoWr1Jur0RgOE/BvQ63wnqtdDDh6t"
    "+efh/PFnlWS00AZU9lySG7kzGdHnCB+dqMldqtGh/dd3AdMACViR3ESHZTnDcn9DqhqYAlrICsp2p/20TduLvVi2OQTWaWC6"
    "MKorir7TgC4sv0V3v38BVoc6c+/6WbDhl3PIjvhDSOlCf1ZX7w79EBcOBu+F2EcO/du0WeEoTTUbEmF+Yhh8mhYK/G6DQSN9"
    "BRmSGE6fHVkPF29ocGkzblOP1RgKT6myu+b3hKWem+jkfWPJ9GobauI54Yc2PYcUUv/+t/gfunVFSxYPomfgGN9d+gi86ZFF"
    "rG2GsU+nKnGTa3uxOkGJEMrfiYTf11DDxDRyd9lx5Je2lrrWaEJL1d8+zGS9DHdj8w7q3mcLPD/fB8YvSyJv55nA6eGF1O3z"
    "RvD33ohOHvGHIZ2Gscqa4VCxbTxylLCAop1jqUv/fRAXjuG1SxncVP0rZZIxSZjELgpAu/deZvRadoHdSYyqVvbD9zZNxhd3"
    "rqc1D8vI2i4uoO7ci8RiOxBJNqDZfQeB2tl9yNuoPyx4Zc3JLEuhU57ZIdULAWzrq7IO9R+bpdfBg+2lHdam3Z5EMiDoEu2m"
    "V94hbT6tHsmmBoVirVEJtNByd7vbvBTGpymteWjia3nWNc+FNg/d1642Kz48xU90nxLnuR/h+XC7ApGo82hb+f/uk65bNcFz"
    "9fOof3AI82rybqI6bRucc3DmzncJ+J/avH16EH0x3QmE301kuz3eDq9qQ/GGB6eg77EDkB2z579u8/rjXdB6TYt5+Oo2Ncps"
    "IpVR+5hJt0Q4pWXBoP1gBRhEFP5XbbZEiEBagwo0dE0nlY4fEFOUwOzfEUsHVPBYP5iFmrP0uNy1N/7jNvcs8KCtiauRtc4V"
    "OF7Uk9Hetxmu2g2lsy88gATnajR640kyw9GbfTou9D9q83zGPoi6VQgfuxVC5aVAukpent21czi6K26D5n7ajqyS9GjL4oEw"
    "1qmFtz4s+9+2GXkglR+U5sHaLp8G9ROKaZfI19D7YwQNkumPdokcg5Q9B2nyhae80e492SNnDvNDP8T863xabiaaabWNxhre"
    "gAH+eaCpxge7QUuYAWt0IFtzB1E89wmlm4lyfivKiL5OHLJsTsHc3H+eNzp0yZ5ELzxBRNJTqExMFL3bcBJkVj4lZ8+XAsMi"
    "WHaNoKUyFuhVzTioz/gy/q+8h4IXzIbTO21/2uYq771UadEFMq43JgXnneFG5BCYraPJ6s4OI6tbtoD+0X70mpgiOblbh3t3"
    "dhQJnSMLL4r8sYO7B9Gc1DZOF25yo620FgJPHoMBrTk0/N5clDgvmvbOHU9azIw49ngUvONVgej6p1SdEUJd3zfQ7O5OpGdn"
    "aTBPHYj0DH+MxybkDgR/vem4dqAafbTnNiQFXQR+yXFwC3ChYppXQfOGNjthVBXVbK3DffipcE7CE2QcU6lmrSq9UGFGYsPd"
    "6WzJFd/bLHh0kzG/rc8Gve3GZXUL4VaNs6URDyPocY8oOPpsPTI2lKRLtV0gJocHTguTkPR4Oxj5qR9NGKmJsjt3otqTA1H5"
    "50VU3ebCn7mzBH4ONteSBbm75fBZzpK+y+rLFWnpEF7PXtT7UwJcbPxIzYS8oJ9yC6wa9hyu79sNl0atJm+qHqFL6/Kp3qQw"
    "EufVmfYXzSAV4zUFYifjFtlQwdjJ9PvseaDs1/yebAfETqZ/zDG3Z/JcU2pwwocO9X3/9TVBiq2tkrD9//X1OUo7ofeAMGq6"
    "QOT/Sx+Gqg9lh3Typ3ftE2hIdOv/ORY7uzykH70sWdtPWfAhzpqmDan8P+3D3d3D6IIUdZyp0pW+emjJjd+zgxpY1fyf9WFc"
    "OEPLHFhug9YVct84DOQHOJDmlgJ68uib/5M+iMzIhlnv4uiAU6Fw5/QZ3qSm+1BpEUaHX+4DLSZVv7wPpfNP0O4aG+iQkHQ4"
    "lKhAX60fyAqPk+DeFC1HQYW9yIbzV35pH1KIKA3fWEFuZ23H1Q7G9GWnYJq9sQ+nZ/KI1D5vgGPZE8jHe7fZXyd/xWgEZFHf"
    "wSfpkNgz4HlNhR2bd5x2f7KOGyKtxPbduAscLePpyYisX9KHRMMWei9fmLvdJASSaQ7IzTOB5lQGMwE5ObA8w5dbnviZ1sSL"
    "cjxja0hyrevwPjT02Y2mMYpcaP46EthYRT3qE1Ci/GxYdfcMtIw7BZP7+sNOoQKY6tuZVo4YQnLmdmyslO3+mZz21qRv3VXQ"
    "JrcpZIdlJ+5JijM4DJgD+rGBcMdXhLvwdD/k6IWihZVR1MAmGJy4pg7rwzDtRlqHDSDZXBbebnSHTMlDkL+qO725rAunpJgF"
    "CeMd4bHCVvrIW9YmY857yrfkmP4ZYzmJhJQO6cPVyggIDmyBEuVM8trpAuRfzYZSj0HgN2AEqAx/DVWDltIUlZ0w+dNQuHG0"
    "MxWOmgB5wRVUwmkTNbtzq919UN9qy/QdI8S+7v8cqWxUBhWHJOr66CntUmiFujO7oCLZE5X5URIuq0FX4b3EaJgl7fOgBl0e"
    "bIBChkhz0gGP2tWHUWdc6J3D3ahO6wxyt+YC1JcfhGp2Nh03cjrNbUylNGANPFpcBev9lKCvnhK3akUGtUoog90Va2mIlS/M"
    "HRNNTC7/73Ex/9EUuL0xDxjTJ+Ci3okztxLGq06fpaM86sk2tx5QNFUbLsscQ8GxPRjjCU/oEjNL4tRjFXM1+j490GIBxtY3"
    "oGuoEJcndP1/6sOCZYrszu0HqI1lDo24tw7Oz+0C1QbecP6KDBvhgsA2JQG1TNsOb+ZMolf0JaB/wQVqUbXb5qmiEzjNHQSj"
    "qhdAuH08WfOinDyPL2H/B/tHQoeMZlsnq7BW6Q9IwuM4SLmhANLnzlCZBdMJ57MQxNN60l1nGAiXCqNDqsVZO4kavEa/gdRt"
    "sKa8kuM05eA6aiw6DZmuEQGfO2f/qz7ovdtC1yXPIHNulWID+RMo2IVhCk+owv53Wbh5VSzt+TEVTje0kCitYHheNJ7WLitB"
    "I9d1Yd/fHsvO2yfH7eJOIf8PvuR9vgarpn0J0j3O0oyj/8X812EdVs1Fguvt3JneDhaDHpl56LP9C5pz+Chk3ipGLgc2wK0t"
    "ITRu5gv6Si6FtqQ+Rk9sPcn0rUJsjw/nae/LXjRD6yF0OqFLl76dTPsKv6DvFdPQzZL/LI+8csw78BJOQ9LHZ4OaQgKMXZeI"
    "9MVl2J6XN9ONpU304L7hpOHFKzTwYX+SF9APnnvNBD3lRFo9ooWplSmlQ2xeoQP5MpxW/V4UFCELs4v7sMu0btNdWTsh3mL7"
    "v+1DQW4Qf7Z6Ipm3/AycSU+CzUKWDDOlkWoYPKQLwjVg8qbTaLXwcjjSV4qdeT2Nzvh0lT4StQe7daEoVHMT1Zt5GDK958PB"
    "SEW64LAu9/EhkDL+cFCscaP2n/cRMmb9v+yD/RVJyiw8grRSbpMu4tWkk8xjaLQtpOevzkYmE2rJsGumvEzHkWAed4pKSJ1H"
    "9/yeob0LzoC90Gy6bveXGO7Bboh6p4SMXB5Ap1HlWPrBFtgtPAvOOxN0dKMYp5WEYNvTf86HglxhMqdPGu13PYLx5yWShk8Y"
    "Hc+dDRPfbAOvnW/oO9aMlpesgCfKaWjiwH2MlrouN1mxHu9CVuyppCQItM4HJ49t8FqjKwVzdWq0ZQbo31HkvJbdpy+apjHG"
    "R1T506+cJc/zYn/ah/4FwXSbsQI9YHsd7r1Q4oq/6IOvlQzXc3QhlStQpHmzn4H5ifW02S2Irt+3FMwtiumbEgl6Z64YPTAl"
    "BrW2BNPogw+o40TM7PfsCad5ETDkpC0NyS+CYJ9ttEuYBHtG+ABIBafinDlb2/Shm9xc2D91Gpw2bEUeR6fSUP0N1DBUgTPC"
    "ZTQxTYxzipjP7hXuAl1XUGb7yRu0SXw3ner1FISe76fJj1yoc9E22u9JPRZKVISn3d6B1kBKbotE0nGjZtGyaSeQZOFRRqy1"
    "FJ4XfsTqS9RZn3j3H/owOq2EDhSpIA2yfWnEu2QiFyLGaXeNQcmHAyGgWIgbOXceTZWLo7IpruhTvgRXk9oImy8bsue1cwrE"
    "150BKb0kUmrDgVeYOzrcN5k4dykD6w8yEBg4io1p/oxyQRkK3lfD1jd1tPaLHwsaWswMD/4bixOtClyvEen0jPliGlDghB4x"
    "Z4hODwNiPPccDfXUQP6H8yH3QhOvrwgL/k3XIc1mNriXXEQyET6wTH0GutDLkp4cnAtVD1W4eJ1nJLb4EJ090w7mfQqnbxao"
    "UdmILMbTMI1sW92CisJO4w3JnYEO4nHRFePZb/gfX9yNvrSUZAd+DKZ5J9W43U3dqct0JXboKh/a8PghNTe4DiNoH7zwjjc9"
    "rjWJ9B2gzz0I204fP3dGEx/0grLAIgg4GoUOPK6gOd1HUXsZMS5K25Oe7fcMAvzCqAFnz6kbrEFTH5dB9pbFsHBgNe68kE+S"
    "H/MEchedbzh937sg8zV3MXOWm8e37AX9Nist1AHZC7P2r/3/0pO1X3u09u/7X/0v9G31FNo65Ar6kfraivXPvlEv/YV6H7cl"
    "AbPdv097139dVFzfEYuLTY3atzfgC/FJi0PgvetsukXzDK05NwyarwjRGROCif3MNcRIfzvfJ3QefT/fkgYwXvApQpsd31MD"
    "jS4IR5KTn0BeQQUVuhMMdpdlIfRqPklImEX8T3fhMhVEuFHl6bBynQ841U+kNx2APM2ezF1SlefOTUgGPG0Gse8iBpum1pDx"
    "oo5Ue3UNyRKqxYHa9+mbSyLsF8tPJ4wUZR0iS0h8tQwovbgKzfHzgcja0l5CMTS29TCteCQLnZOWU2jwZS5dDkOde5fB0+oN"
    "pN5pDplh9pJu8VhBJ7XeYhpyVLkxtbnoMDlHmOWbacWAEOqqIAzSy1vIpCJ9Ws7jmE8jiuhDhQ/g6reLns4cTjUeZCGnjAtk"
    "gP8Wqr+7kA7224A0PIZzAyb4QuBFDyr+ro62Jr+FOvVQmt4ShRoc5Di7ygCQUrxA55zU4loWFoN87QDYPZuPxkiJI6Ez1QLL"
    "4wZKn9veVki+b/Ap+OZXOkJDzNsrI5pS/FtqrMwpAxgUMwlqjtpxAX4nYA614W7ZjWEtRyRSGaeN5Nz+dGATvOihmDN02pI5"
    "dMruk/TonMUChJt+6rGvLeHfE5sbvxbc2BGEmxq2j+wvhF9TyEefQ62ZHc6i3I+EYL7miraEmP4SG2fVPgP3ByFvPLbgPvvH"
    "wdAjZ+j75wPYylotVnYvpjGWkcgnPpreZYHW6RdB7vtSZJ/RiPvw14POhEY667AdpPpewj8SX6DUrNyW+O/bfzS/2jbNjtvD"
    "0q7tPxrbzoNx4x2SovEKhOyFufg5+vTImlgY4PwKpTQMZIfFPqRZh46Ahd0Oun/gPhheKc3ufHOPdnLMoAZTtxDsP4mLGWPM"
    "vtKdSAcm6rKOqmqclvwYVs/pNdq4zguOTpLn3MRWQGWzPDd8bDXguQx8miDDnefN5sJ6RbJutdKQpf4QX4rYxp4OOUq3fF5F"
    "hfpMw9VnQuFVUaqAirzYYsS1Ze73DUL0K1NpRzDX2KJ924O+MHftsY+gv4/CQKMhACWXmJubvKhR/Sw04pgq7V6SQwMjtMkw"
    "3WcQs78Wwp58RDB/EcH9wyFkeyr7StmOu1W8hHZf1ovbqL4YWnTe0bv9y1Fc8SJgLWZDzt4raH6cIuTO1OFkq5WoZnxXdlnP"
    "RpLadyl3+1MGhQdJZOxzO/LH/L/Cg7dI1fIaftlFlH6MyKFd3IU4mbtRnOv4Sazuk6MwFC+ntmeCaGtcDdrazYZ7HU2pq0MU"
    "GC6qRbL182juzqXk0BxrGHD3LclNtab9FydzOv3GsStrMiEwJhlgEKI9i9PhXKQSXa8SAcvD+ZTcC4EJUsqc9MNBdJzbIRpv"
    "eguCTWaTRQDsthuGXIzaPiRz7RzVflcM7w46c3fLAqj9cG3S89QC+s7rGWp8MIz+CH6SQ0ZAW/C/b03S+wq6XkeAb9m+fUl/"
    "gO9vFIa3a09gx9eVUfstG2AUTaVirju5i8rdILhrOA0zOkoPDl5HH57KhwzrafDs8Fkq+W4rbH3cCyr8B0DRzU04eG82ZM8w"
    "pdMKa4l4ijrckw2nzU0yXK+sz0T+gxCwi94j2Y/PaNxVDZp7sAhKx8xiU7S0qcr9w7C3pwdSnHsFPQvPI/nZjtzJsiJqFjwA"
    "3qQV0HtJa8na5GVwK2m9wAD1ztgex9sy+fsmoVVfmbuqI5g8qH07hP5g8rPXKvBCJpn1bzqD5Nz0wGpSMHcJvwNNpjMtVrkO"
    "IaVK7G5HPc40N4b6WQtzys9Gssy9WEg22YBuLYxkmxsQZD09hVPm2XEahsfpzGUytPLUQ+yjKcHuX5YK0wxC2P0NCtxq+XCO"
    "PsuiXZMWsAfO3KMBpxzpx4fv6Z06abbOU4Er9n4IV3zeQI/Pp6mRWT/u2KjrYFNqTGdrbKJV9jkgGaFPVF+/oq8cJ1ANJVsu"
    "d+8JNPTFfOgiWgmP96+AHPvVnFWwGUq/NRpsvRNYj8lONFJLjnw63Ew7fxrOFG2fjqYvqIABDQnkyZ4XVMs9XEA7nrws57UF"
    "zuobcHe/paM6ZvSgadVO4EI/I1hzqSf7tM6SaJwZycbefkIHLLhKNSd/pkfePSJW7v6QkCp+OnfWGHaWlyuqPGCBL3YbxC0c"
    "s4y7U9MIqhNMuUWr9DnR6G7c6OHr2Kh+d2lscQs30GMyR8+0CPiNoptPfsKcQb9kx7VV+4dW6taybKDCDl6B7lLkvGAkC8MZ"
    "1q2HGLd/1AlknGwkQJxIQOWEf4wpvw6Yv4dVRl839Bl1xMY+Y5P27cn6Qp39ySC2d99Qbm2xLXvEgQ/Rb6rgfGYiGupgQY09"
    "FcmNZyfoCdKPXe4nzSqZ9WYzC2/QTOeLsEVbCBrMVnEXzKuo7Xs7TlfdmJv2fiM3deVxUtSnP9a8dAxtfrCVavLq4cb2sXTG"
    "yCh2nXQxJE1l2fHO9xBvjSVXHuMHkT7JJE7rI92wX44zmD+eS3c7xd1/qcal6UziPm+cSQ+8FOXWxitx/ve92fczreFyRTLr"
    "rW/OXhjaym5q7gfZq+fD8frLdO/Me+zMUT1BSi6Cm2HUi/t0voge9DXheiU9grjrxtwEp05g5F7KjbzCcS1j1rFdB03lLj2t"
    "otWvWBqwsJr4j6mE0T1u03LbSN60GzzI4uXRp8mG4FitzeouSSDuR/uhRgc+uVGmDjd8HyCZOdG0ZeZquudkApGamUnFRVxR"
    "VUEGVS8yYl9kVYLfrpNI/NIk9swYM+6sswjr1f0yWf9hAuutdYrOr+3NDdzdm//AdDBKFrJkibY95/ghmX2YvJi1l++HxE66"
    "sqPusdQiLYl9MN6Usyx35vxWZFMLR3GBwb3G9Yiqn0jb9/hs79eSe4U6xEO0W5cMvDZxpYkBUCP8kh3OGICvnj43Vr+GJnzx"
    "EK66Vkzy1I8C+hS7U879JxR+D8SufS15TahjhvDGxu3Tp1k57+ickgYYUTaJK1K+CDD/MgQ86QdyHz25HHVLVqanFj2/Wocd"
    "PqsnvT1iCx23m8Bd1VBufE4zXLqpyk4XuUvfSDuQBEaSfZ4zgyu/c4QWjZQWGBhoyPfp8hOufI/qsr6WzBLqGCvTTuClhMxk"
    "8i9fc0dbllhyeYde0+OOCTBLOwGEC5XYhsHq4NnXh50ZLsPJ3reFp2IbyI/Uqn+0d/gJtd/DuJxvq1s6hNp27dD7k9rq0mPQ"
    "LzsS1mxWp7kXrnIOD9K40W9kWZvGj1Qkpi9bm9gMM3pXwLlcDrLTR3IbPF8KSP3IyrnlP6H4e2wFX0d8INwxAwjj9o2vpTzX"
    "viI7V05gXU6Jsx56G+naVb7QyVuFWyF+EYI7b+Ho8UKi7ZOG1RMs2HtdA1mbqnfQMmgIJ0PvU0vXQG5peSgXvH8BXVP0kE7Z"
    "e5fGmN1nmNxNqPeHDXTG3bGc1sHtlAS5wOlPFTRo4mP6Pn8vLFQzxxG9Msm+RgNO81MTEZkYzvWwHsLenW4GTHIIrNr6AMbE"
    "irF9Bt5gbQqP0Oxla7i7L7pywRZbuDVTt7MMTIPUqT1RecUIAXlLyR275yfc/x7cxHz13TEiHZMXNm2nvPW8to294HSNmsnt"
    "4Frt53FVi94T/TwTzlz2OjHpnw8fAkdw7LF33IuredzEQRbcAbMm9pZpIdXosodcUT3L9b0aQz7U6rObtp7kbqwaSseu98RQ"
    "Uc3m9Z3JTTzmxzX7DWJHnSzmzp0Yzd5JW8URPR67f8UL1qt/CNUg8VRseSS3wN7JNnafmK3Uq17cmDsZ3GWjPNaucSSLVkWj"
    "ONaALYu8xl6YoUZdhA9zV+fHcYOMDnPWw55RAyvh06PHhbM+KtHofak1t3XCYjZat4vtpwcFVL73AfZ88kbO7qUYJ/xhDjvG"
    "I4FWdOnBrUn1Y/MeXwLcs4GGitjAy7uBp6Mqp3PD95lx5fNUaG4Oy3K7b7GZWIFVXf2SPdTblh4veUe2rfDjcruNZd1Ml3G+"
    "Jo2QFpHKPdyynts9qwyHRF5HUaujqH7WQvbC+MPczE527GTf5ey7G9bsvBUXSLTdW3YDruNms0Fsz+x5bKHGITanTxwJmTYQ"
    "31+hAm6r+4Ez85nWbn7FjbXMZl+pzWJ7TC2FlZ5urEutHiv8dDj41qhSw6cJ3Pz8YdyaLj3ZN5JTbRUO3uF697rIVJ4XZfuL"
    "V9M7fSQ41QPitn2S9rB3DF3Z9zpqrPbxc9wWn2uQfkLXVsF4ObexNJC+S8vkbqfP5kKODmUHl4vaqmWtIZ88j+N80y4CtkRy"
    "6lS/n0iz5S8JRv6a5WjXMUDb6mRZ6/fRoBZjyE1ep0wP6Kei7vqfkd50YW5bzG10/aouDI+sQ5K342B11wOw6Pkp6ujUm1aq"
    "HYOcqfLseXIATe78hnn6JcLs65NNe1UNY7WHLUR37w0kly9vEdB1v/6XbX/Cne+h2qSvFnZSB8XY7eXO1eVZqGYIAs3qesYx"
    "JZvUpeoivVWa5In2FSS3QBvmZ8vQbZ2GkgtrksGANpHqxju0/tIUrNu1kgY4VPKLMwxp56wRZLBwXyjdXExmyM+BtLpoGHh/"
    "IBd/agq8v2vP3hJZBY4LNdnDMXEodddhiN0Rja/0c6Bb9HqT8twbvBf64uB9Kx0ObhiNyoUQa3HmOMxdK8EOsV0Ae08dJ/aP"
    "PiBNyflUJUAGou5n0NLpiuTY6kNQTvuSXu69gYZXFlxo9oE7/K00S/gYTL9jIBA/x3UTdf0JKt9jxMavJRs7KIAe1M4AekOA"
    "IVviFESlR+6ncx+n01sr7sOyQ725mLPz2FNKtlyKwxRWN1iNXTSDsmdDLaD3DifsHi4NTQ3DYXp9F27LWRmuwi2BLuF8kbXR"
    "AdxfK50reuTMnY0dwJo0qtD9C3TZDN1+3IHtIwU4tb+39+O2nPp79+qbryXfCHVYirtd8qucuoI6pN+CHbzFdPEZSlT2bYWM"
    "Ucfwy1H3ID++MzfuxAB2UnMe0n2STtjJPHA5Opea+5hCZ4t7NFi8J70eVkC9xqmxZeY7YVXLYnrvziSud8FeetM6nirzcqHI"
    "8zhJXhpGzyeJoPz1F2D2/HwalttXIG7Su5Yo9ROufY+bDnwteaBDRpRG7Tu27gvXrJ+/JKWbrWBOzBJ+5ogkMmegJMR0n8Yr"
    "WqNJR3pb0sOK+5jqyc4CM7zm87eW/uPafJ8A35m+Jr+ERvP2z/xYrphN70vm0ZzClyT3fjZZJB2JnmiFwMK66VRbaQ/hrHSp"
    "05lwAe9G7F1ftaHxexwk+9Vqywp3ULalnSM1datgUH+vRvdopILqLcxc37CMjKvZjK742UNnKRHqctOGkT+ZARYvIkjg+i02"
    "V5Z3hy6Nz0gxbwYM84qAwI/6VIhawK7CDXCeH0lUJwXRt3kHQKLxBP3cU459WhsJ9fe70yYhW1h0aAViJAPoDJuNsFv4OoKr"
    "QTaBkmo2Wk950Di3hqg6C+auXAeeVvnGS9nvvJy52MfN2/uXRJZm7Z/x3d20kSpyV2lsoA+c8uTBSMcCeip6JpohHENdLe/x"
    "ejfFwb4hIaRmoSq1+LhKQENyg6Z5t5GeX3PE3R9WoJ0zWJGHzADui/FXaobQhIFv0YpXiTRF1x3lmMaDm5ouEVo2DsLebyF3"
    "DrjCujQdKmwnCYubrUFJcQNNTlam2XYJUHEljlpV38ZPVgbRS0tPkOc7iyFgLdD11rFU58lD8qHqOAyQWonWWN+ABDcMXgZe"
    "dFOPc6A6hkeORCqzig/7s3XXDald0iQQmrgTeihmUifj3mT3tU30ttND0ny4CF48jqcDunUFj+mK6MVUM1oXwoMv9paGsnF0"
    "88FOAra4epH1om8YyH3DwGLmYnc3b7dF36CI/1o8viPEzqL9iazgkn2w+J0CW2tYiM1U7pKBfUrokvErBRRqwaDgF21IsxIg"
    "7XfLd1eckyF6u/XoPo1HsGq0IlI2G0vf7xVjcywmQmOkgYAGbW7mRrTRoN92nNasgThlaXESn1oAKz7PBV+jKhBqsC6YMPcq"
    "9Os+D0yeeKO7pyVATiYOpOJeE43hlnRWVggdufI0ys0NAsciXep67wE2kTpBlT14ZHe9Bx0dbEdt1oVC4H4nerLHJYg/aM7w"
    "ztcK8ClSFjR/mPT4g09/pzE7NKHzxawat88bS03MqUDVR7VJ1x4jIWWjKaJajtg3pRJlGQxjYIIFxGTrUD2eKvMhOBN7H77I"
    "dK8cSlXXToO73guJMCND47vtgmXB3ZCs+DJsc53As/QYOqlwF5P6ZCtfT+QgOB3PQvMXD6Z6Kp0ZtbkjkOL6E/hAyFk8p+o0"
    "WWIfBur6RVRSNhf1DuwFBQ8UUbH6cyJ5I50c8c8ieUd3U13PBSg61hiuzrODRX0jQDPrHTPMyQ71P+MAywYtF9BD6SVug9s4"
    "NsuZs9yWuHv+khnrv07DbdeJi+sX3gAYdZDXdeVNZDQ5h0rHirMaAZi+LCwlJV2lYbrxblqQZUK8jBNhsLElnF2+GuLD3UEs"
    "zBzGv02i0ubHwcFek454rwVLqs+SiVeCYbBSCJgVSuOtoh/RkUm3cVhmIsyfNQD5vpqMShdkQGLGTtJFfxKJH7GMbujnCn2D"
    "lOhCXyGo3qgGEmGUV+Q3ir64l0SG9EtFr6oXwrt9cwU43c9N6t1PhhA/cPp3C6m7o21ItUmNsl1bmfL+LpTzI1TnaCsJjBwA"
    "R0wplZUrhvUpk6mpxmha75NIrnZlSZ1SPJo+oYkXe20oUTNeQTKcX5PSw9H8l6zqF1eaQWyOTcRCozLxq4XRTGNPJZoZdoSw"
    "4bOor68crThiBBlOZ8g8Z2XUXLudNt8dzKwZ5ACuFxpQYWsw7uZSAk2b1tEs1xo0xXkJ6HWvIZt7zgNbC1FwK94MAW9GM2GP"
    "RxCTHmkosUskWezZB6WIjqCOhbdQaIwS2bfoBpWsXSRggPoEOjW38UXGRj9CU/m1eGVHzaYYtc8MjTs6CMz7RtEZZw7g2kgT"
    "elVfC1xc80m0/17klGoGFbKG5NqCLMZj0DPaJ6aCoIndaJ+1HqT7+GCyxMaP+j9aBZ4WQXTvkCo6YGWxQO5ncWoP57Y2+e8z"
    "WL/Kp0QHWQTj9q2vkCJcJYkuiaDel3tAkTBDU6tOMDnSLjR7qw5de9MBKucfwXU1hWRo1A0640A8HeO+Eh5294MjOy/Q+nGX"
    "+MMKvaBikxkIzXtB1VuO4pdem1BprQG54ShKK3deRhYHk0lWQgsyWmTExNd5U6QgRFdIrqOy5h4wfdB9Kn12Fz1CTgsssZvI"
    "Vmd8Y2LXr0ycY2H23wdhVv/h2K3dIcPGc+oo64gsXRA3/dgbt1YyZX7d+grJR0h6WkBNzoauQOUuXZ44/z1J+OzUop8iAqeC"
    "dO7kKMhCvbuqa7d8SWoz19Orx04lUNx/rM/Rru9Qf6mgvI/Rb0ng4/rDQq8lYcKaB7lz3wlRdfE83zOj5OnNm7edW22U4F6a"
    "/86hIuI0p7p7gKqkPNU6YHys6YyigAXNumJY8Y2fiv/IT/MfVXXhV24u7Aiumv5pRdt1/nZl9/0zJ92/SGY8GrJ8vr8o5Gou"
    "MzouKQkvu4kdH1vyiVhdqvK16a8MYdefKY9P60yXHhx0TkNUghbNvvg2zPolGVyxp9N4LSFavsdfNeWgIl3cTaz28iM10Nzu"
    "dq6Pgiytrkw1nCYvBr3E8ivefnyGjO5YzX/vpwZiCQGifnlvSe37AbwLo+tJsJGX5Vnf1+hluYxL2WRZsN9jb5qt/Y7IcI9P"
    "mHs+Jas/xx5M2ypNh1/wkVZSeYUqF699Zdb0BC29wKg+NxEGIaQlUTExk5h4b767xVGejtv7bJ/VAFEqVGd3Oyv0E1k/Y3XD"
    "ew1VAdRG5D1c+o+mxG/RTD/jZb/tDyEICQWiP+4fibhpHjVKgAiPX0lEO/VYdloalhigIIDEVZuDBoJImPxNRMzXgjEdREQ7"
    "6ZDq99SBtEzsQRKa15CoO3k8gfxEhfMjQURMfl9EPHP8aaSVqUCKuo9Mo3VbRH7bX9iQ9brJnxiyBv1xa3nd5A0LciDXHvT4"
    "83YIchDQGRX5Cse2CJn8MnFrL0JLeaB85xDSmGhOVWrdBJC6aCklJYiU6d/i1qFJmL9CpHbpjuudVrxo5g0mKGUIcTG4iI9Z"
    "jiPhmwsZgbWYItfOCyJk+vvq0BwPXVjnOU3Aql0POQFtkTH5JVnZv5Bplw41RrzHp7IxszZDDKV+UCMi5qakucGMBD+dR8pm"
    "NPJ8es/k+Tt7kVfSFfhh8hmBIWVy4KWjbRH7bXVqnpsrXRziBAVFD4h3vw+Ci5csJm1vi9xv+yM8lZGn+B8vTiBPHSWRTPk8"
    "xC/fjCfobMVHJ5Yx7NAmRq5sBDqwowQvWSpEitPtyJaVPcjD8lYsdKIXOuIzkIy+aYnmznzN/5EJvi77QtoiavrLDEs7EU1P"
    "mQbS88NJl9XT6NRemyhvph+8Wyg49RR8aL62ILJmfxuWjvZrZu20lqrTFuAFuZnYNUEEOV0ElNp0E2snMWhpjC7DH/FaQAe7"
    "j31sIoiY2e9rNe/sn0yHSg8VQGjYh25v2yJk8kv2vv2FULusJjWrwIYZq5lzC0TJ/exJJEuZJRXoMRMvupW3Wuc1z9BSnszT"
    "VCepzRXMjNiuZJfxBixXIYdSdPRJ700zBXSOqA1raIvgb2tFK4XtYFupBNQNWQF3d4gKIDlYw6lLWyRNf8kapr+QbJcVLa+4"
    "gp0V8/HsHoaMcI0VchnZlTT0vsQ8ujzMZitfifSZ6EymbuyCxiU2MZUZpfhTX4YMeSXN7F2nSy7ta+VFzpQg93QodpLphh5u"
    "1EZDjDqRrcuzmXN1UmTylUoBXV0THdGjLdK/rXXNUllHw+1mURnNsbTxeRgNiU6iod0Eo4bopXNPtkX8t/3ltoVnC/mevGDe"
    "7kcXmJ4qnijK1I94vt2MJ7Jm+GmaeF7s1v58w2g1VHudIfnacczFD7uZXkcZkqH9GUdZJDPeCrV4MXOT8Tplj55XxPG4tZPJ"
    "uwnJPKEN4uTJLSmb5Je1vFNPWpmQe+/5DVbTiOfkCKZ+qi0aa5uKU0yEBaKSEb3dotpKhNkvc03tlIiWGidYrRNKD6qb0ju7"
    "3qK5YvOhr3wy6n/2KvLNvi0woBceqNRmRGW+7Nes3flrxVO7/G5suCqx+3CYUXswmp9ipk9KaALOfqxIErWSsOInNZvhWYi8"
    "LDsuEPn7DT5MBBE0/3397/TFnpA9hhWc/z6de6stUia/arahnYuQpGyG78Iji4bjeQMdbe5JWxApfjKjgaQJ3feU8d0ajKti"
    "hpBslWQ8J0+cCM21QRJV8cwl3W34xHo+rtk3BOcUlzF2ZleZu1VKyGXieQGxPXo+Mqotor+tP+aVa9Oj2eFU7p0kTfdLFLDO"
    "qUsaLrdF1vR3XXVopJOM/VtDGHunOfjaaClU7C1PmtMrmFbZAnzglj7RDtmOvZ275/cedwxvHNqdHHlmRIKXjcf3HRWQS8Bp"
    "zCkfYpiFaoifPIzskdcgjxOdbaQ3ULx0UwmjmWJHGpU34tbA68yj+ba8W07D8Ljy68zlx2MEJEA6U0ihrQT8tn56xta1EBi8"
    "ADxyrOiCeC2qunkHFIYJbnXdtBK82krCb3vEQsQxjHdW38HDbs/FTf5mJMJHDSleU+bPwcJozI7e2HTfW2a+xzPG+Fgfkjvx"
    "CL7SPRkft9ZBw1a1MtVPX2GRpZeYUM9r+HCILbPpcy72sHqJ5ZKOMxWJ2xj1C1qk+9ZofPyYtM2qsomky+iT+InqbXyj2gDZ"
    "Gzbnq47rii6+k0EKscIoSPo0tj2izKue8BBnLbqIXxstx2VvBW3GC5YzbCsxv60f7yW7lUY5DIVRw0ZSJaaW3HD0pSXTxlJH"
    "hTVU0u2pwCDl6HGbgraS89v+wGzB9JP4/spXuDR+BPPmUgm/l4EdYpxlUF1eGPb4Yj+mpFmTDy+28+YaXrcZedgEFejdx8db"
    "M6xHk26o8q0ImrxyO/Ni8zBkmONdoOk8i1k9vCva+eA4niS2EfuPMEQfPe0Y13FP8b39ymjim2N83TcfcZ/Wa5jLNuZLzGjF"
    "A4Uv454TLchr1R3MZqpM6t8uYSb1yOUviPBlakSskbGPCaPlL80Y9hiFmtNvYmPvdGaSlDa5eECZnMwoZ8xD0ngD928TzLUx"
    "dg/aSpj5LxtMtVPCVkjEwDJ3D3iSMYgWyA+ku+M0idjTTXT7jHnEfFEPulW6BzkW2yAQCo/xOm8mKGkWf7vejo4eLdo5DvF6"
    "IEV8kyRI2oIJvNbzl/ATDzk8OhiY/jp6ZDUznNmz0IF/61AvErbkMzP6aRx2qtmD50UivO3FAGw/2ozoDA/AHgahTP1VbXRS"
    "M4ZJWydE8uzk0PYbpUx/npAAc9j5q64KSoDF7zsuqVq3BrZsCqXbk3dA/vtQAW8ktmrRirZIm/2SZXZ/Id0ub5TWJEtuq3/A"
    "crGR1jc3K5JOh6LxPfYojqrvhLKuzGHG96ph+gfLkOv8GNxJXR9fU7zCOOy9hF1mzsazNjO8M54fMFn+nG/h1p8ccOqE/Olu"
    "nrhbKV4tm8+oinZFVvY1eLLGXJt6txR8coAWskg3RlfmumOHdRNwyaW7jN2HucxEze78jNM8cv+FKDm5uxDbRkoQHdNrePvh"
    "St6KWeq408rhaGe3Y1jLl+F96JzFMJP9mfunC/kRc/IEvFVN/MttbSXpt/VWw9ZHg4+SPM25eQJ84xUhUmU1XSX1GinFLIBF"
    "08QFvFXOLrvUtpL12/4Wt8yITXjGhsNMvI8oj42YxxxZbU5kBggTnucl/Mx2EP9hTWeSYzauoHF9Dh6yug+qDKjEAxZfZsQO"
    "efBKJzmQA5vMGcdPF/mbh4qRdPfz/L3iLNJ2X8wYxBvzDuQnMzb7rJnBK3qShwuWMjHNokTXToT0sFlXkLdeEmk/lUWZY7Yz"
    "ee8O8xvCNmP3o02M2PkSHLszEq9T18VvAyN443IGoq2fxBE5uQN/bNYhTqKHsGn5A2ZUTSY+NyYMj1zYFWt3/sRErj6F97KZ"
    "DONXzQQ6dyWjxJ4zo4qESfop4Gs58HG/JzeZ/Kp7eHXjeWbimFu8RssxRH/3C36ujx4W2pnOsN1VkV7INH7UvAVMXeYglGSn"
    "wNybOlZAcq2tNs9tK7kWv2p6rb2nGcmZ5IHt+il0suIU2HghBfmZecHgpgZ+gVsqfQmxNBhb0Y86TnB0ozgEsvYCkpxtsW6+"
    "oCRb/m3wn3773aQOItaynd4Q1pQWjLioiF8dPsk831aCd2k5Mis9GDzLq5mZOXkAkj/6Ag9nnBgzD0XUs1ck7r5sHi4MbsZ1"
    "H8rxRFs1PJ7MZaa0nMXp2/g4otgS22QUYzOf+7y8Ratw/3FdyRuxJ1jeRwN102lldlTtFJCM7MROcoKSYfn7ekfRgiRIsZ9J"
    "8/LLadq4IoG5yEbHTTJtkf9uoF2/2i5X4Q5Dvl3esTQW4ajh/Qoa4vlMgPZI/sbMYP6Y/EZcceAK4w8VTO9zU3lW6ceYh5Jr"
    "cA+DJtzJ0h17rqJYO+kev1uxCFmUJk+m7GvFCpF78cd8CaxVKo00rhbg2wVljKN5J5IpJ0GqU0qZmvWqiGwMxTBsKtac3p0Z"
    "m61FUNgGXHEsijdb5j5WyutLFJXPM89l+9rY3fFiwtR74OsamuiTewgjlC+B7E6F8s+vEWVu91ZDVW8O87duj8YKGyTIqqhB"
    "5FSFCe+skDQ+1RyBvzwvUI/UI0aPpzNz1vYWyPgpnJ1d0VbSflvv2ddiAzUSzqBJ3SMho3kaLdruA279QqF+ZCzMdW0SPGw2"
    "T1y3reT9vdT260kKEiIdJnntWnz/dEwGvnlcjqieWMM82CiK6vq24Mq96TxeUiX/brMIir2hw3syoj9aEDaXnyt91iao5ixj"
    "WJeFcT6fqYAGXku9FLnr++zU2xfdicSCGmbFYH8+q/YIe3YdwQx94sQ8y9cmDUIN2Ev/Gn9hSQLmnHth493SyPTmdf7eXaJI"
    "1C+ct/xzV/w2tAdZcuIzo7JkHX73wJTvfdSNv2P/BFxazJLWuavwug2FPD0sjAzl85hy99XM0c4l+PIQHyzlqogCtJSIsH4V"
    "z68wn7G8dJu/d8x13H1FIQ7Mv8oMObOPGSFWg59034KV5I3IIG1d7NmyB3samDARtpNxwvuJeKK4N86esYz/sq4XwYP6I7EL"
    "Cfw7kUXY5G4AL7p2F5auj+CP2HKNPyiuDPcytCUya6p4fY50R49K+5Ho8E7M6Gv9sIzBHf7kSZnM2GPbcMBhDWK/owQPe/SJ"
    "8bJwYuTcNfHN+g2MmrgYkdouzswebYG7lb/HmzfJoVeuu5jK+woCtjiu5qF3Ww35LkS5XwvmdpTjaqeGLB+4HYr3p8GkTzHQ"
    "d+4weqfMBmaDCs2yNwGDlL3QNCkCZsxfQ0cNlaTLBkyEOxMUqdlwKmCz5+m80RDUHKu/HVBHz4O18whXqYK7ObgmfBM/SrgA"
    "k0R9LNerEa+TqsNrWspx4M5UXgPJwD3Vn/MHWbUyQ0quY5nhoszH46W45fN6nk1Yb7LGZwzpVLKXn/65nDdNrwt+ERTO33b9"
    "MnO9cyZTuHEz797KYjzgdAreKrWPp1M2D5ufWccLCinCbvaWeIW9uYDZibcRGi8oMVa/r/f2EztClQ/Pp/uEfCFv5jqB2RSD"
    "VYtS20rCdwcR+FUCAjtOEtrlvVPvtWDD+13wftOrjExXTWvXLQf4VcVxOHNnIJMUeIp3oVsJk1qlW+DvMgfP8m7Eoac8cUPy"
    "M+bVkQQ8bSkPF6zMxR4nU3GMO8c/XRnNSK27jCPWrcCJ+/ryuh12JM5Vr3F9mBzaLaWOZZIf8WyjbPEesXu4Tm0oUd/ZjaGl"
    "Bwqe2g1jXp3chcfb5vH7VSUwsp9Eyd26fH7RiU2MjkcXonxSjBkp14qLlIt4I4Jv8t7tD7J2ed6NjHg9GR8JbGSGR5Ti0iVF"
    "+O7xNJ6473ZGLyePCX+cj2OWrsazlrzjjwzpytzwHYW735+CHLw6kZdbNMiWm8r4w8g1Anm21m7S3dpK4m/r3Vd/PE1X7NgF"
    "HpcDYcKclVShdjstDFgOZ3ruhbeR/gJZlykXFe61lczvZ6gEfvXqgSIdJpntOfFSylDlIz6tc52Zp3mcmW55B799qoJf9H2G"
    "PfY28+42a/Dru6cwRzTH464T3zHnDPbxqyfIkSf6XW302YW4t/Nbxt1vIn4zThbj7Zn8nSr3C0SbehDYH8TYaThj55H9iOr2"
    "bQz3zph3cW0p5gdq4YVXL2MZj1r++UYbtPD0Vl5UVTLzVlEKZdxWZkYvvYpN5G/x5hzQQovGxuavVtjCj3xSw8SOc8NNTcvw"
    "RVVlMuKmKiN88wIuqsrHIuOm4kTRz3xvqSbGQFyFzBpdxgs5EIw/PRrKP7nvMcY2fIaZ/4aZUlHHKNpNY9aN/8zU86P4GscL"
    "8IlWH/755OM4aeJrnM4/YtNcEM1YBm3A8ya85btHHubXPFRGtmc+4L39P2HelI343eRgZql4NPPGvZDR3eLKTPIUJTcdo3F8"
    "yxk8rpM4Ls5yJH7Pixkdv3q+1fB1/AIRE+bpLVv+gzAxorRfBlvWdWVqg2fivCnCPEWNZr61YQTP4NQItH9IEA6Tr2M+BgZh"
    "91sfsM9+C3x92nrM7ZImR1X6YVvuurVS9TXGhblts3D9IkbMoh/KUZAmqwt0mYe87TYSOxfzPd1OMUX6a/Hb+xvxbfdqRvyG"
    "JcrZZcJ8MAjnOewHfPJ0D5SsGMWI14ijuG5XcWn0OMZFLrIgLl9EYFRRF71nVVvNtPpVi8Tae1ZrlmIBmE5KgwlyO6DH1mMQ"
    "9bmUlFe50ozLyejGJWd4PS6NTovbSefpRMOm91PppWE7qN/LcIg51h0uiPEENHd4aNQPS22/EOA50/fX7JYw65B9K+Tr/ZP9"
    "K9lZlz3bEvNrFkmbtn+jQewUOxLcVeePG8V9eb9kuD9SSo7FX25m0Zf3XkPGk1k7u/xxo/lf3v9ILFh5r2hLrOkvOfnTtP2T"
    "yTaB00jrdC+sM7geL3ydjctMvZDfZ2fmRWEBIz0mnblgNkOAwDcDo+b+48bCrwTONPH4Jae7/LVzpD2USsW/nYUqz53FDheX"
    "MkMKGrCl9UjCGRYyyU6m/N2qD5kiLw8EyRf4iXdnkzLbG3iHlQvSszBmng/sSranyaOX/S7g2JUWaIb5QjRO9C2/T8E+vOCw"
    "PnP64goU/voBT9QjEXtXajP2QQtJoIsBHnqIMK6r56GPwo5EddhnRg2OYeXXSuR0H3sSFztFwM4ZHdr6sK3A/L4L6mLKcJlZ"
    "MF/3wRjUe2Q5EzVGgcQcMMD8o7IkTk0OHR0XzUvaugh55w7gB6kmM+MULIjPrHDmWKfn+Xl5fYjq2Llox9xNOFw1gplXMgQP"
    "7f3R5tZeHf7El4akztGG3E46h6PzQ3DxHV0UI6lGsup64y3V3sTo4Xx8LyFYgHn3y5rc2zLv+zRp3deCdR10llJ7p0lhfrHN"
    "LT19ovvAmiTvFWcMHh7iSUoqY9n3p/AWKRnGfOYMUnlwPdZXu8gMftSHObXiMb/FrAKb+Tiira/c0ZXccdjex5bRy07gebzI"
    "xoiVYkJb1VBJvCZZ+nglnpYouAZ1CBv75h+3l//JoCVu3t4zf+MFX3OE5cizzv1JcbwuM1E6iIlsPVxw4vpNrOB+Ep94ncxM"
    "nTYIyU66j88l6qEuVV8GMBMK8G42gp8F0mgpEUWfT14oUAmTIOOP5DPD5ugJGLAJS1eObMOSpfM8Zs80+X0n2PvUT0JRef+v"
    "uTOPquLIwvgFBFzQQIhbEHcIJKIigiivqyO4a1TihuASDOKCJkbUqEF9Ie4oYFxgjBB0lLgbx2UU3qvGJRI1Ko5xJFECOqOg"
    "0Uwi0eAeb+g+VlXX/KU5J8fT58g5/Hivb1VXVVfd+31PwvrOKyW9Zw5VUhZmkj6uw2hIZg1t8bnzxHFVR7VnMxBa/8b+A3Hy"
    "1mfykP9q0lFTlv6quHZvoN5J6Ki2yeqn3iw4T2wHt9MfOmfRQe2vkhRbM23gVlCdcl216M09bfwtH//2xgfy1g169lr3ojML"
    "gp5zULX47CHxR+Jo5xWpli4Xx2u344O1VtezaEGcl3p2s0KTd31JrDObqKeHhqjp46bnV0zcTl5/pxaJcRpBP/QfrxbttNEh"
    "hyM16/nVxPfzL4jHTxb18aA6msv9THp/8CKhV9T0aPmqPESBzx6AVfqvr3pB4s3P+wAMfnCbDGh5gWT0qGdbtaSUek1uJSwz"
    "Nya6tzPPBSF/yqok5PkPC90PHrXHem+kEVFvayUB5TRj8ixla+JqJXDcRdJkoaNasi3Wvq7lcTpjZX1tb/l04qf2pRe0CuL2"
    "io3mxDmokQu7kLdae6r9s78iFVOPksLQ9ZbklCz6Y0U3Nb/CmX4cmUPnpd0jx21rqHfaT0rqoua0qrZF25Ifqlq7xdDrx9bT"
    "4U9cVNeGmXbPyjihj6Q+KvzJHMy/7MFAZrdDdMShCDqgbUPik+5Pqo4VkEi/eEpLw7UjK/or7yZcJxm1p9mvvNpW862YQJ2L"
    "okmKpZJO+KKBmhS9hES0GEvabPZQr55dTu+1zVWC8vfSj1vXJu79dpOhpX20lzJ6ktXRl4nXhRn5eWcUe/dW7dRgnxKa+J9c"
    "W1FSAa1vn0MWPG2Y1R677IUpTywxDRupgSsfk3mVWfbZSZVkVF4ude2RRKpu1ifZQ5rRmIVjSKpTDfvGJ4/JkdgBanyVl6XJ"
    "Dm+18OchdEwNP7u17CAtyU21Fzl6ax/dn0eKLsUpRxa/TCa+f40UHD1AcnbUVJueH2GfuK2RWmfBCBp+YzdtqwRpVxs1tAXs"
    "8VD3Vc6wv//kvvLo8nfKstuN1O92nLGf9fXXVl5MI5G52STs5Ell7Zvz6BjHCiXzcg752/HatEONErL8DWftly0NNZ/yWfTE"
    "raZqu6hDVD23hJQ9WERH9P2Nhm0NJy0S/dUrO2aTHscn08orN0hS4Viyy8WVNH0k2nxNv/Rrb3MnCv1TdkZDn/8Vvsm/1pCv"
    "hxXbylxOK23KHdVP3bPt55JBs+T+TMc2PU0TTndSI4Y1tXR3G022J99SGm8oJSNPOZHrw2dYXG7cItv2B9CKqKMkfekSkvbw"
    "MX1781Hlsnt7enlga+1su0lk6MhkOnJ/NxLwfROt/cEiUtrPRq49XEJ8BvyDXj7hT0bevklfm/hF/reBqcRnzkekc9QvJKOZ"
    "s5Z/cgsJd48h435ZSs44etqclRba41Pf08e92pEJ52prwzMbk+gwF7ufRsIunehrb9HAkyQEJFC42EK9oyaTub0b295YHqB9"
    "stmRNi+M1wJ+3Gib2fuh/cM7u5VR7+7MP9N8Oy1RVGFpXbTipLd87RD6JxV4hT7/2qG5i5V2ve2heXt4kZoTL5JTVzUyMGYS"
    "LVbH0psrOymf9UmhDQOX0YL005bMJ+V5vtPqqENq3QoLWUfInAFxZM8uJ81z9DGSdM1GT911UoN2hahf2Y8Qx8XeSprnCSFE"
    "xS7uSfKJNPjZ8Zeb3rvdHF7MO8jzHn/NnddStU/qQFKWZNEf3Oqqtab2pLfq/JN8v3WI3X/yHeL3QT019vg2u3VKLW3Qe/72"
    "eySP7lOCiW9oL/JN+h6l/rVlZG+lN50wLEKdPt9JvTcrX7kEbcidvWdp2abGZEcflXZ7uJPm9Z9JYqd2VXtd3U4Ll/5budAl"
    "XGt0eycNJpG27seKievdeGVgXwfHACcmE//B2TuL9fKZWow/b/UIgT6wf2yBiVhE8A+NcvRdeh47omMdZJj32vojv9ZrvHks"
    "26EaC5JhVq9DYX+8jTuI2HrHaqyjDCuDV2ZjznQvE3bJqRoLlmHtC50SMXktx4SNdq7GQmTYo6WteuLkjBePdXGtxjrJsPwO"
    "HR/UfPp18OKxObWqsc4y7PPkNNvXT78OXrU5rMBNbzdpKJN87naCuk//W1fkjr6sN1x7GRf4P/f5Vvenv+cuctBcbzlpi6Oz"
    "cIG+aezGcbb2wPkMiyS68qLlLl51ODIvEFiPXhFEp1abbsXKg6VBwPq2iiA6nS7TrUx5sLgjsL6nIojOosZN8uD6YGB9RkUQ"
    "XTmxHqS56R6zQ4D16BRBdJxEO8kCE/igE7D+kyKIboUo7OhnAqs6A+tdKILowIf2ekkmcGQYsH58IogOcGX6hMWDDRRg/eBE"
    "EN3RjDGGB4MIsF5pIojOY+gqhhff59xV4HzIRBJdpDbqe8U8ObcrcJ5SIonuTMW6+xJPvhMOnFeT6TNf9q37pb4ZwJMzIoDz"
    "MxJJdAPaq7v98GRcN+C8gUQSXXUw8xsvnhzaHTiPHdO4c2DQ39HtJd0U2297AOcPI5LovmH0A57c0Bs4Lw6RRGcKlMiMMn3b"
    "gj7A+VSIJLon3NRVd4X77Aecl4JIoptAlV63x5PWt4DzFhBJVNTfrO9j8eT+/sDp64skqtQbJD/GrhsAjGa9yKHyO75j48Vz"
    "1oHA6MCLHKqcGz3PneO+iQST5rlIo2K4Mbvyn0rfBkY/XORQ5TpTL+7z4LjwwWDWvBZxVJI2RgUe9x4CZl1pEUeVZqNHCPPY"
    "UGA0m0UOVYuNJ4YfjPyGAathbFpgTYvtYgy4fJA3RYFJf1ekUUXW6Po8/VI0mDRlRRqVTov0XWY+VltiwKx7KuKoCoqSnzVN"
    "92wbAaxGqAiiEqbRIetxoMMoEHQxRRZVH1HJEa9XODZyNEg1IMW/gAqExpKW/9quscDqEYogqv7JwW+qwbj/A6LSXrp+OMyD"
    "K8YAq7tneoZO9y+Xf+Kod4HVuDO1rNvNMPnc2CoOWF05EUSVNvlXhbHAaraJICqiGY8tD56qBg19NNP871h8Sn6PG+KB1SAT"
    "QVT6MoYnHhw3DljdLxFE1Sz5PQ4eD6yGlmlCDYnKMF5PeLDFBGD1qkQQVZ3kwfGdCKzGkwiicpK8HR9Ug4aOkgiiKpE8qsUJ"
    "wGoUiSAqAcnXqlmTgNUFMs0yjXv8KI/q2snAauqIICrWyBeA494DVr9GBFHNRR7V+e8Dq+0igqiYYrwv8uDwKcDqp5iGjtax"
    "qfLmWPMBsNohIohKHMbUzYOJU4HV5TCtbbps1+TtGJUIrNaFaR48fKDEGNt50HsasPoSIojqC/J2fH06sFoMIohKB8aSiAd/"
    "mw6s7oFpCtwFnvJ2bPMhsLX/IogV9fLXI4eZwNbXm16Puh5qI2/HUbOArR03BWefxWYsangwbDawddmmMYd0vyrvAAUfAVtL"
    "LIJYkSt/OjYlAVufK4JYrSpvx8NzgK1dFUGsDJUvZdLmAlsnKoJY1SiPqpsV2BpHEcSKQWNHhQevW4GtHxRBrEaTTwHHkoGt"
    "TRNBrOz6WS/d4sE9nwBb52UCP3PxkEe1bD6wNU8iiBVFWC70jukedywAtr5IBLHaRR7VPouArX0xbZDkOfsYG048+NpiYOtK"
    "TG9F312bdEAvD+DBSUuBrSUQQczAl4+rsSnA5uOLIGafy6OavQzYXHQRxExv3Iq0mj4xYTmwed8iiFnG8qj6pQGbcyyCmMGL"
    "6blWU1Sd04HN5xVBzJ6UT6yHPwU2l1IEMfNQHhxtJbB5iKa++uW58fKnY9kqYHP+RBAz5oxtDh6ctRrY/DkRxEw0+cI+eg0I"
    "eWmmbdVtq6/JO8/WDGBzsEQQM47+q6cU8WB5JrD5R6ZN6q6fVslff2quBXNejohj1ooxpPO412dgzmExrXv3H4gzWofHXdaB"
    "OS9ExDGrwpgXePzeOjDnWIg4Zhys0pMJeLxJNpjzD0QcT/aNhuZjXmng70kHXjzFlg9Kb+YAe6YtgnhyKX/SF2wA9hxTBPHU"
    "TB6o8I1gPkMTcTxRwoMivHh87CYwny8N7Ovs8ofZwNN/bzYG2JuLP/0OzixIsg=="
])))))

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from random_distributions_cases import CASES  # noqa: E402

_NPZ = np.load(os.path.join(os.path.dirname(__file__), "data", "random_distributions.npz"))


def _both(f):
  return (f, ember.jit(f))


def _assert_bits(got, want):
  got = np.asarray(got)
  assert got.dtype == want.dtype and got.shape == want.shape
  same = (got == want) | (np.isnan(got) & np.isnan(want))
  assert same.all(), (f"{(~same).sum()} of {got.size} differ; got {got[~same][:4]}, "
                      f"JAX {want[~same][:4]}")


@pytest.mark.parametrize("n", CHOL_NS)
def test_cholesky_factor_is_jax_bits(n):
  a = _spd(n, n, chol_batch(n))
  for f in _both(_mvn_cholesky32) if n <= 13 else (_mvn_cholesky32,):   # (compile time)
    _assert_bits(f(a), _DATA[f"chol{n}"])


def test_cholesky_not_positive_definite_is_jax_nan():
  # JAX: nan on and below the diagonal where LAPACK reports failure, zeros above
  for f in _both(_mvn_cholesky32):
    _assert_bits(f(BAD_COV), _DATA["chol_bad"])
  x = random.multivariate_normal(random.key(0), np.zeros(2, np.float32), BAD_COV[0], (3,))
  assert np.isnan(np.asarray(x)).all()


@pytest.mark.parametrize("i", range(len(MATVEC_SHAPES)),
                         ids=[f"{f}x{z}" for f, z in MATVEC_SHAPES])
def test_product_is_jax_bits(i):
  fs, zs = MATVEC_SHAPES[i]
  args = _floats(2 * i + 1, fs), _floats(2 * i + 2, zs)
  for f in _both(_mvn_matvec32):
    _assert_bits(f(*args), _DATA[f"matvec{i}"])


@pytest.mark.parametrize("name,seed,n,batch,shape", MVN_CASES, ids=[c[0] for c in MVN_CASES])
def test_multivariate_normal_is_jax_bits(name, seed, n, batch, shape):
  mean, cov = mvn_args(seed, n, batch)
  for f in _both(lambda k: random.multivariate_normal(k, mean, cov, shape)):
    x = f(random.key(seed))
    assert not x.weak_type
    _assert_bits(x, _DATA[f"mvn_{name}"])


def test_stored_batched_case_is_jax_bits():
  _, seed, typed, x64, call = next(c for c in CASES if c[0] == "mvn_batch")
  key = random.key(seed) if typed else random.PRNGKey(seed)
  for f in _both(lambda k: call(random, jnp, k)):
    _assert_bits(f(key), _NPZ["mvn_batch"])


@pytest.mark.parametrize("name,seed,n,batch,shape", MVN64_CASES, ids=[c[0] for c in MVN64_CASES])
def test_multivariate_normal_float64(name, seed, n, batch, shape):
  # float64 keeps NumPy's LAPACK and dot (no replay): equal to JAX to an ulp or so
  mean, cov = (v.astype(np.float64) for v in mvn_args(seed, n, batch))
  want = _DATA[f"mvn_{name}"]
  with ember.enable_x64():
    for f in _both(lambda k: random.multivariate_normal(k, mean, cov, shape)):
      x = np.asarray(f(random.key(seed)))
      assert x.dtype == np.float64 and x.shape == want.shape
      np.testing.assert_allclose(x, want, rtol=1e-15, atol=1e-15 * np.abs(want).max())


def test_other_methods_use_jax_product():
  # eigh / svd factors come from ember's LAPACK (a different OpenBLAS than JAX's: a few ulps
  # apart), the product after them is XLA's: the samples stay within a few float32 ulps
  for name in ("mvn_eigh", "mvn_svd"):
    _, seed, typed, x64, call = next(c for c in CASES if c[0] == name)
    want = _NPZ[name]
    for f in _both(lambda k: call(random, jnp, k)):
      x = np.asarray(f(random.key(seed)))
      assert x.dtype == want.dtype
      np.testing.assert_allclose(x, want, rtol=0, atol=8 * np.spacing(np.abs(want).max()))


@pytest.mark.parametrize("m,n", QR_SHAPES)
def test_qr_is_jax_bits(m, n):
  z = _floats(1000 + 10 * m + n, (2, m, n))
  # compiling the unrolled 6..8-row QRs takes seconds each: jit checks one of them
  for f in _both(_orth_qr32) if m <= 5 or m == n == 8 else (_orth_qr32,):
    q, d = f(z)
    _assert_bits(q, _DATA[f"qr_q{m}x{n}"])
    _assert_bits(d, _DATA[f"qr_d{m}x{n}"])


@pytest.mark.parametrize("name,seed,n,shape,m", ORTH_CASES, ids=[c[0] for c in ORTH_CASES])
def test_orthogonal_is_jax_bits(name, seed, n, shape, m):
  f = lambda k: random.orthogonal(k, n, shape, m=m)
  for f in _both(f) if max(n, m or n) <= 5 else (f,):   # (compile time; jit: test_qr_...)
    x = f(random.key(seed))
    assert not x.weak_type
    _assert_bits(x, _DATA[f"orth_{name}"])


@pytest.mark.parametrize("name", ["orthogonal", "orthogonal_wide", "orthogonal_tall"])
def test_stored_orthogonal_cases_are_jax_bits(name):
  _, seed, typed, x64, call = next(c for c in CASES if c[0] == name)
  key = random.key(seed) if typed else random.PRNGKey(seed)
  for f in _both(lambda k: call(random, jnp, k)):
    _assert_bits(f(key), _NPZ[name])


def test_orthogonal_larger_and_float64_close():
  # more than 8 rows (other OpenBLAS kernels) and float64 keep ember's LAPACK: close to JAX
  _, seed, typed, x64, call = next(c for c in CASES if c[0] == "orthogonal_f64")
  want = _NPZ["orthogonal_f64"]
  with ember.enable_x64():
    for f in _both(lambda k: call(random, jnp, k)):
      x = np.asarray(f(random.key(seed)))
      assert x.dtype == np.float64
      np.testing.assert_allclose(x, want, rtol=0, atol=1e-14)
  q = np.asarray(random.orthogonal(random.key(3), 9, (2,)), np.float64)
  np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(9), (2, 9, 9)),
                             atol=2e-6)
