"""XLA:CPU's log, log1p and exp, op for op. float32: Eigen's `plog_float` / `pexp_float`
as XLA:CPU compiles them and XLA's Cephes rational log1p for small |x|. float64: glibc's log
(`__log_fma`, its 128-entry table), XLA's log1p (the same rational function, else glibc's
log(1 + x)) and Eigen's `pexp_double`. One module: log1p is built on log, in both precisions.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.random.xla_math.common import (
    _F32, _F64, _LN2HI, _LN2LO, _TINY64, _U32, _U64, _daz64, _f32c, _f64c, _hex_table,
    _hexfloats, _lookup)
from ember._src.primitives.elementwise import fma


_LOG_P = [7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
          1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
          3.3333331174e-1]


def _xla_log_f32(x):
  """Eigen's plog_float as XLA:CPU compiles it (frexp, Cephes degree-8 polynomial)."""
  u32, c = _U32, _f32c
  xm = lax.max(x, c(np.finfo(np.float32).tiny))
  bits = lax.bitcast_convert_type(xm, u32)
  e = lax.add(lax.convert_element_type(
      lax.sub(lax.convert_element_type(lax.shift_right_logical(bits, np.uint32(23)),
                                       dtypes.int32), np.int32(127)), _F32), c(1.0))
  m = lax.bitcast_convert_type(lax.bitwise_or(lax.bitwise_and(bits, np.uint32(0x807FFFFF)),
                                              np.uint32(0x3F000000)), _F32)
  small = lax.lt(m, c(0.707106781186547524))
  zero = lax.full_like(m, 0)
  y = lax.add(lax.sub(m, c(1.0)), lax.select(small, m, zero))
  e = lax.sub(e, lax.select(small, lax.full_like(e, 1), zero))
  x2 = lax.mul(y, y)
  x3 = lax.mul(x2, y)
  p = [c(v) for v in _LOG_P]
  q0 = fma(fma(p[0], y, p[1]), y, p[2])
  q1 = fma(fma(p[3], y, p[4]), y, p[5])
  q2 = fma(fma(p[6], y, p[7]), y, p[8])
  poly = fma(fma(q0, x3, q1), x3, q2)
  t = fma(poly, x3, lax.mul(c(-2.12194440e-4), e))
  r = lax.add(fma(c(-0.5), x2, y), t)
  r = fma(c(0.693359375), e, r)
  nan, inf = c(np.nan), c(np.inf)
  r = lax.select(lax.lt(x, c(0)), lax.full_like(r, nan), r)
  # XLA:CPU flushes subnormals to zero: log of [0, tiny) is -inf
  r = lax.select(lax.bitwise_and(lax.ge(x, c(0)), lax.lt(x, c(np.finfo(np.float32).tiny))),
                 lax.full_like(r, -inf), r)
  r = lax.select(lax.eq(x, inf), x, r)
  return lax.select(lax.ne(x, x), x, r)


_LOG1P_DEN = [1., 1.5062909083469192043167E1, 8.3047565967967209469434E1,
              2.2176239823732856465394E2, 3.0909872225312059774938E2,
              2.1642788614495947685003E2, 6.0118660497603843919306E1]
_LOG1P_NUM = [4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
              6.5787325942061044846969E0, 2.9911919328553073277375E1,
              6.0949667980987787057556E1, 5.7112963590585538103336E1,
              2.0039553499201281259648E1]


def _log1p_rational(x, c):
  """Cephes' log1p near 0 as XLA writes it: x - x**2 / 2 + x**3 P(x) / Q(x), the Horner
  steps and the last multiply-add fused (`c` makes constants of x's dtype)."""
  def horner(coeffs):
    acc = lax.add(lax.mul(x, c(0)), c(coeffs[0]))
    for k in coeffs[1:]:
      acc = fma(acc, x, c(k))
    return acc

  x2 = lax.mul(x, x)
  ratio = lax.div(horner(_LOG1P_NUM), horner(_LOG1P_DEN))
  return lax.add(x, fma(c(-0.5), x2, lax.mul(lax.mul(x2, x), ratio)))


def _xla_log1p_f32(x):
  """XLA's log1p: a Cephes rational function for |x| < sqrt(2) - 1, else log(1 + x)."""
  c = _f32c
  small = _log1p_rational(x, c)
  large = _xla_log_f32(lax.add(x, c(1.0)))
  return lax.select(lax.lt(lax.abs(x), c(0.41421356237309504880)), small, large)


_EXP_P = [1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2,
          1.6666665459e-1, 0.5]


def _xla_exp_f32(x):
  """Eigen's pexp_float as XLA:CPU compiles it: 2**m * exp(r), m = floor(x log2 e + 1/2),
  a degree-6 polynomial in r, and 2**m applied as two factors (integer exponent add)."""
  c, u32 = _f32c, _U32
  x = lax.min(c(88.8), lax.max(c(-87.8), x))
  m = lax.floor(fma(x, c(1.442695), c(0.5)))
  m = lax.min(c(128.0), lax.max(c(-127.0), m))
  r = fma(m, c(-0.69314575), x)
  r = fma(m, c(-1.4286068e-06), r)
  p = c(_EXP_P[0])
  for k in _EXP_P[1:]:
    p = fma(p, r, c(k))
  y = lax.add(fma(p, lax.mul(r, r), r), c(1.0))
  e = lax.add(lax.bitcast_convert_type(lax.shift_left(
      lax.convert_element_type(m, dtypes.int32), np.int32(23)), u32), np.uint32(0x3F800000))
  t = lax.min(e, np.uint32(0x7F000000))
  y = lax.bitcast_convert_type(lax.add(lax.bitcast_convert_type(y, u32), lax.sub(e, t)), _F32)
  out = lax.mul(y, lax.bitcast_convert_type(t, _F32))
  # XLA:CPU flushes subnormal results to zero
  return lax.select(lax.lt(out, c(np.finfo(np.float32).tiny)), lax.full_like(out, 0), out)


# glibc's e_log_data.c: (1/c, log(c)) for 128 subintervals of [0x1.6p-1, 0x1.6p0)
_LOG_TAB = _hex_table("""
3ff734f0c3e0de9f bfd7cc7f79e69000 3ff713786a2ce91f bfd76feec20d0000 3ff6f26008fab5a0
bfd713e31351e000 3ff6d1a61f138c7d bfd6b85b38287800 3ff6b1490bc5b4d1 bfd65d5590807800
3ff69147332f0cba bfd602d076180000 3ff6719f18224223 bfd5a8ca86909000 3ff6524f99a51ed9
bfd54f4356035000 3ff63356aa8f24c4 bfd4f637c36b4000 3ff614b36b9ddc14 bfd49da7fda85000
3ff5f66452c65c4c bfd445923989a800 3ff5d867b5912c4f bfd3edf439b0b800 3ff5babccb5b90de
bfd396ce448f7000 3ff59d61f2d91a78 bfd3401e17bda000 3ff5805612465687 bfd2e9e2ef468000
3ff56397cee76bd3 bfd2941b3830e000 3ff54725e2a77f93 bfd23ec58cda8800 3ff52aff42064583
bfd1e9e129279000 3ff50f22dbb2bddf bfd1956d2b48f800 3ff4f38f4734ded7 bfd141679ab9f800
3ff4d843cfde2840 bfd0edd094ef9800 3ff4bd3ec078a3c8 bfd09aa518db1000 3ff4a27fc3e0258a
bfd047e65263b800 3ff4880524d48434 bfcfeb224586f000 3ff46dce1b192d0b bfcf474a7517b000
3ff453d9d3391854 bfcea4443d103000 3ff43a2744b4845a bfce020d44e9b000 3ff420b54115f8fb
bfcd60a22977f000 3ff40782da3ef4b1 bfccc00104959000 3ff3ee8f5d57fe8f bfcc202956891000
3ff3d5d9a00b4ce9 bfcb81178d811000 3ff3bd60c010c12b bfcae2c9ccd3d000 3ff3a5242b75dab8
bfca45402e129000 3ff38d22cd9fd002 bfc9a877681df000 3ff3755bc5847a1c bfc90c6d69483000
3ff35dce49ad36e2 bfc87120a645c000 3ff34679984dd440 bfc7d68fb4143000 3ff32f5cceffcb24
bfc73cb83c627000 3ff3187775a10d49 bfc6a39a9b376000 3ff301c8373e3990 bfc60b3154b7a000
3ff2eb4ebb95f841 bfc5737d76243000 3ff2d50a0219a9d1 bfc4dc7b8fc23000 3ff2bef9a8b7fd2a
bfc4462c51d20000 3ff2a91c7a0c1bab bfc3b08abc830000 3ff293726014b530 bfc31b996b490000
3ff27dfa5757a1f5 bfc2875490a44000 3ff268b39b1d3bbf bfc1f3b9f879a000 3ff2539d838ff5bd
bfc160c8252ca000 3ff23eb7aac9083b bfc0ce7f57f72000 3ff22a012ba940b6 bfc03cdc49fea000
3ff2157996cc4132 bfbf57bdbc4b8000 3ff201201dd2fc9b bfbe370896404000 3ff1ecf4494d480b
bfbd17983ef94000 3ff1d8f5528f6569 bfbbf9674ed8a000 3ff1c52311577e7c bfbadc79202f6000
3ff1b17c74cb26e9 bfb9c0c3e7288000 3ff19e010c2c1ab6 bfb8a646b372c000 3ff18ab07bb670bd
bfb78d01b3ac0000 3ff1778a25efbcb6 bfb674f145380000 3ff1648d354c31da bfb55e0e6d878000
3ff151b990275fdd bfb4485cdea1e000 3ff13f0ea432d24c bfb333d94d6aa000 3ff12c8b7210f9da
bfb22079f8c56000 3ff11a3028ecb531 bfb10e4698622000 3ff107fbda8434af bfaffa6c6ad20000
3ff0f5ee0f4e6bb3 bfadda8d4a774000 3ff0e4065d2a9fce bfabbcece4850000 3ff0d244632ca521
bfa9a1894012c000 3ff0c0a77ce2981a bfa788583302c000 3ff0af2f83c636d1 bfa5715e67d68000
3ff09ddb98a01339 bfa35c8a49658000 3ff08cabaf52e7df bfa149e364154000 3ff07b9f2f4e28fb
bf9e72c082eb8000 3ff06ab58c358f19 bf9a55f152528000 3ff059eea5ecf92c bf963d62cf818000
3ff04949cdd12c90 bf9228fb8caa0000 3ff038c6c6f0ada9 bf8c317b20f90000 3ff02865137932a9
bf8419355daa0000 3ff0182427ea7348 bf781203c2ec0000 3ff008040614b195 bf60040979240000
3fefe01ff726fa1a 3f6feff384900000 3fefa11cc261ea74 3f87dc41353d0000 3fef6310b081992e
3f93cea3c4c28000 3fef25f63ceeadcd 3f9b9fc114890000 3feee9c8039113e7 3fa1b0d8ce110000
3feeae8078cbb1ab 3fa58a5bd001c000 3fee741aa29d0c9b 3fa95c8340d88000 3fee3a91830a99b5
3fad276aef578000 3fee01e009609a56 3fb07598e598c000 3fedca01e577bb98 3fb253f5e30d2000
3fed92f20b7c9103 3fb42edd8b380000 3fed5cac66fb5cce 3fb606598757c000 3fed272caa5ede9d
3fb7da76356a0000 3fecf26e3e6b2ccd 3fb9ab434e1c6000 3fecbe6da2a77902 3fbb78c7bb0d6000
3fec8b266d37086d 3fbd431332e72000 3fec5894bd5d5804 3fbf0a3171de6000 3fec26b533bb9f8c
3fc067152b914000 3febf583eeece73f 3fc147858292b000 3febc4fd75db96c1 3fc2266ecdca3000
3feb951e0c864a28 3fc303d7a6c55000 3feb65e2c5ef3e2c 3fc3dfc33c331000 3feb374867c9888b
3fc4ba366b7a8000 3feb094b211d304a 3fc5933928d1f000 3feadbe885f2ef7e 3fc66acd2418f000
3feaaf1d31603da2 3fc740f8ec669000 3fea82e63fd358a7 3fc815c0f51af000 3fea5740ef09738b
3fc8e92954f68000 3fea2c2a90ab4b27 3fc9bb3602f84000 3fea01a01393f2d1 3fca8bed1c2c0000
3fe9d79f24db3c1b 3fcb5b515c01d000 3fe9ae2505c7b190 3fcc2967ccbcc000 3fe9852ef297ce2f
3fccf635d5486000 3fe95cbaeea44b75 3fcdc1bd3446c000 3fe934c69de74838 3fce8c01b8cfe000
3fe90d4f2f6752e6 3fcf5509c0179000 3fe8e6528effd79d 3fd00e6c121fb800 3fe8bfce9fcc007c
3fd071b80e93d000 3fe899c0dabec30e 3fd0d46b9e867000 3fe87427aa2317fb 3fd13687334bd000
3fe84f00acb39a08 3fd1980d67234800 3fe82a49e8653e55 3fd1f8ffe0cc8000 3fe8060195f40260
3fd2595fd7636800 3fe7e22563e0a329 3fd2b9300914a800 3fe7beb377dcb5ad 3fd3187210436000
3fe79baa679725c2 3fd377266dec1800 3fe77907f2170657 3fd3d54ffbaf3000 3fe756cadbd6130c
3fd432eee32fe000
""").reshape(128, 2)
_LOG_A = _hexfloats(["-0x1.0000000000001p-1", "0x1.555555551305bp-2", "-0x1.fffffffeb459p-3",
                     "0x1.999b324f10111p-3", "-0x1.55575e506c89fp-3"])
_LOG_B = _hexfloats(["-0x1p-1", "0x1.5555555555577p-2", "-0x1.ffffffffffdcbp-3",
                     "0x1.999999995dd0cp-3", "-0x1.55555556745a7p-3", "0x1.24924a344de3p-3",
                     "-0x1.fffffa4423d65p-4", "0x1.c7184282ad6cap-4", "-0x1.999eb43b068ffp-4",
                     "0x1.78182f7afd085p-4", "-0x1.5521375d145cdp-4"])


def _glibc_log_near1(x):
  """log(x) for x within [1 - 2**-4, 1 + 0x1.09p-4): a degree-11 polynomial in r = x - 1,
  its leading r - r*r/2 carried in double-double."""
  c, B = _f64c, [_f64c(v) for v in _LOG_B]
  r = lax.sub(x, c(1.0))
  r2 = lax.mul(r, r)
  r3 = lax.mul(r, r2)
  t2 = fma(r2, B[3], fma(r, B[2], B[1]))
  t3 = fma(r2, B[6], fma(r, B[5], B[4]))
  t1 = fma(r3, B[10], fma(r2, B[9], fma(r, B[8], B[7])))
  t1 = fma(fma(t1, r3, t3), r3, t2)
  rw = fma(r, c(2.0 ** 27), r)                     # r + r * 2**27, then minus r * 2**27
  rhi = fma(c(-2.0 ** 27), r, rw)
  rlo = lax.sub(r, rhi)
  rr = lax.mul(rhi, rhi)
  hi = fma(rr, B[0], r)
  lo = fma(rr, B[0], lax.sub(r, hi))
  lo = fma(lax.mul(B[0], rlo), lax.add(r, rhi), lo)
  return lax.add(hi, fma(t1, r3, lo))


def _glibc_log(x):
  """glibc's log (`__log_fma`): x = 2**k z, log(x) = k ln2 + log(c) + log1p(z / c - 1),
  c and log(c) from a 128-entry table; near 1 a polynomial in x - 1."""
  c, u64, i64 = _f64c, _U64, dtypes.int64
  A = [_f64c(v) for v in _LOG_A]
  cu = lambda v: np.array(v, np.uint64)
  ix = lax.bitcast_convert_type(x, u64)
  tmp = lax.sub(ix, cu(0x3FE6000000000000))
  i = lax.convert_element_type(lax.bitwise_and(lax.shift_right_logical(tmp, cu(45)), cu(127)),
                               dtypes.int32)
  k = lax.shift_right_arithmetic(lax.bitcast_convert_type(tmp, i64), np.int64(52))
  z = lax.bitcast_convert_type(lax.sub(ix, lax.bitwise_and(tmp, cu(0xFFF << 52))), _F64)
  invc, logc = (_lookup(_LOG_TAB[:, j], i) for j in (0, 1))
  kd = lax.convert_element_type(k, _F64)
  w = fma(kd, c(_LN2HI), logc)
  r = fma(z, invc, c(-1.0))
  hi = lax.add(r, w)
  lo = fma(kd, c(_LN2LO), lax.add(lax.sub(w, hi), r))
  r2 = lax.mul(r, r)
  r3 = lax.mul(r, r2)
  t = fma(fma(r, A[4], A[3]), r2, fma(r, A[2], A[1]))
  y = lax.add(fma(r3, t, fma(r2, A[0], lo)), hi)
  bits = lax.bitcast_convert_type(x, u64)
  near1 = lax.lt(lax.sub(bits, cu(0x3FEE000000000000)), cu(0x3FF1090000000000 - 0x3FEE000000000000))
  y = lax.select(near1, _glibc_log_near1(x), y)
  y = lax.select(lax.eq(x, c(1.0)), lax.full_like(y, 0), y)
  y = lax.select(lax.lt(x, c(0.0)), lax.full_like(y, np.nan), y)
  # XLA:CPU runs with denormals-are-zero: log(+-0) and log(+-subnormal) are -inf
  y = lax.select(lax.lt(lax.abs(x), c(_TINY64)), lax.full_like(y, -np.inf), y)
  y = lax.select(lax.eq(x, c(np.inf)), x, y)
  return lax.select(lax.ne(x, x), x, y)


def _xla_log1p_f64(x):
  """XLA's float64 log1p: the Cephes rational function for 1/sqrt(2) - 1 <= x <= sqrt(2) - 1
  (the interval its machine code tests), else glibc's log(1 + x)."""
  c = _f64c
  x = _daz64(x)
  small = _log1p_rational(x, c)
  large = _glibc_log(lax.add(x, c(1.0)))
  is_small = lax.bitwise_and(lax.ge(x, c(-0.2928932188134525)), lax.le(x, c(0.41421356237309503)))
  return lax.select(is_small, small, large)


_EXP64_P = [1.26177193074810590878e-4, 3.02994407707441961300e-2, 1.0]
_EXP64_Q = [3.00198505138664455042e-6, 2.52448340349684104192e-3, 2.27265548208155028766e-1, 2.0]
_EXP64_LO, _EXP64_HI = -708.3964185322641, 709.782712893384


def _xla_exp_f64(x):
  """XLA:CPU's float64 exp (Eigen's `pexp_double`): n = floor(x log2 e + 1/2), a Cephes
  rational function of r = x - n ln2 (ln2 in two parts), 1 + 2 P / (Q - P), times 2**n
  applied as (2**(n >> 2))**3 * 2**(n - 3 (n >> 2)); 0 below log(tiny), inf above."""
  c, i32 = _f64c, dtypes.int32
  xc = lax.max(c(_EXP64_LO), lax.min(c(_EXP64_HI), x))
  n = lax.floor(fma(xc, c(1.4426950408889634), c(0.5)))
  r = fma(lax.neg(n), c(0.693145751953125), xc)
  r = fma(lax.neg(n), c(1.42860682030941723212e-6), r)
  r2 = lax.mul(r, r)
  px = lax.mul(fma(fma(c(_EXP64_P[0]), r2, c(_EXP64_P[1])), r2, c(_EXP64_P[2])), r)
  qx = c(_EXP64_Q[0])
  for k in _EXP64_Q[1:]:
    qx = fma(qx, r2, c(k))
  y = fma(lax.div(px, lax.sub(qx, px)), c(2.0), c(1.0))
  ni = lax.clamp(np.int32(-2099), lax.convert_element_type(n, i32), np.int32(2099))
  b = lax.shift_right_arithmetic(ni, np.int32(2))
  pow2 = lambda e: lax.bitcast_convert_type(lax.add(lax.shift_left(
      lax.convert_element_type(e, dtypes.int64), np.int64(52)), np.int64(0x3FF << 52)), _F64)
  f = pow2(b)
  y = lax.mul(lax.mul(lax.mul(lax.mul(y, f), f), f), pow2(lax.sub(ni, lax.mul(b, np.int32(3)))))
  y = lax.select(lax.lt(x, c(_EXP64_LO)), lax.full_like(y, 0), y)
  return lax.select(lax.gt(x, c(_EXP64_HI)), lax.full_like(y, np.inf), y)
