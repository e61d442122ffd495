"""glibc's powf and pow as XLA:CPU calls them. powf (`__powf_fma`): log2 and exp2 in
float64 from 16- and 32-entry tables, its float64 steps bound as primitives inside the
float32 program. pow (`__pow_fma`): log in double-double from a 128-entry table
(`_pow_log`) and exp from a 128-entry table of 2**(k/128) (`_pow_exp`, which is glibc's
exp too: `erf` uses it).
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy.indexing import take
from ember._src.library.random.xla_math.common import (
    _F32, _F64, _LN2HI, _LN2LO, _U64, _f32c, _f64c, _ftz, _hex_table, _hexfloats, _lookup)
from ember._src.primitives.elementwise import bitcast_convert_type_p, convert_element_type_p, fma


# --- glibc's float32 pow (`__powf_fma`: log2 and exp2 in float64, 16- and 32-entry tables) --

_POWF_LOG2_TAB = _hex_table("""
3ff661ec79f8f3be bfdefec65b963019 3ff571ed4aaf883d bfdb0b6832d4fca4 3ff49539f0f010b0
bfd7418b0a1fb77b 3ff3c995b0b80385 bfd39de91a6dcf7b 3ff30d190c8864a5 bfd01d9bf3f2b631
3ff25e227b0b8ea0 bfc97c1d1b3b7af0 3ff1bb4a4a1a343f bfc2f9e393af3c9f 3ff12358f08ae5ba
bfb960cbbf788d5c 3ff0953f419900a7 bfaa6f9db6475fce 3ff0000000000000 0000000000000000
3fee608cfd9a47ac 3fb338ca9f24f53d 3feca4b31f026aa0 3fc476a9543891ba 3feb2036576afce6
3fce840b4ac4e4d2 3fe9c2d163a1aa2d 3fd40645f0c6651c 3fe886e6037841ed 3fd88e9c2c1b9ff8
3fe767dcf5534862 3fdce0a44eb17bcc
""").reshape(16, 2)
_POWF_LOG2_POLY = _hexfloats(["0x1.27616c9496e0bp-2", "-0x1.71969a075c67ap-2",
                              "0x1.ec70a6ca7baddp-2", "-0x1.7154748bef6c8p-1",
                              "0x1.71547652ab82bp0"])
# 2**(i/32) bit patterns minus i << 47 (glibc's __exp2f_data.tab)
_EXP2F_TAB = _hex_table("""
3ff0000000000000 3fefd9b0d3158574 3fefb5586cf9890f 3fef9301d0125b51 3fef72b83c7d517b
3fef54873168b9aa 3fef387a6e756238 3fef1e9df51fdee1 3fef06fe0a31b715 3feef1a7373aa9cb
3feedea64c123422 3feece086061892d 3feebfdad5362a27 3feeb42b569d4f82 3feeab07dd485429
3feea47eb03a5585 3feea09e667f3bcd 3fee9f75e8ec5f74 3feea11473eb0187 3feea589994cce13
3feeace5422aa0db 3feeb737b0cdc5e5 3feec49182a3f090 3feed503b23e255d 3feee89f995ad3ad
3feeff76f2fb5e47 3fef199bdd85529c 3fef3720dcef9069 3fef5818dcfba487 3fef7c97337b9b5f
3fefa4afa2a490da 3fefd0765b6e4540
""", np.uint64)
_EXP2F_POLY = _hexfloats(["0x1.c6af84b912394p-5", "0x1.ebfce50fac4f3p-3", "0x1.62e42ff0c52d6p-1"])


_F64D = np.dtype(np.float64)


def _words_f64(words):
  """float64 values from their (low, high) uint32 words (..., 2)."""
  return bitcast_convert_type_p.bind(words, new_dtype=_F64D)


def _f64_words(x):
  return bitcast_convert_type_p.bind(x, new_dtype=np.dtype(np.uint32))


def _k64(v, shape):
  """A float64 constant of `shape` (hex-float string or float)."""
  v = float.fromhex(v) if isinstance(v, str) else float(v)
  return _words_f64(np.broadcast_to(np.array([v], np.float64).view(np.uint32), (*shape, 2)))


def _to(x, dtype):
  return convert_element_type_p.bind(x, new_dtype=np.dtype(dtype), weak_type=False)


def _lookup64(table, i):
  """float64 entries table[i] of a (n, 2) table of (low, high) words."""
  return _words_f64(take(table, i, axis=0, mode="clip"))


def _xla_pow_f32(x, y):
  """glibc's powf(x, y) for float32 x, y of one shape, as XLA:CPU runs it (subnormal
  results flushed to zero, subnormal x read as 2**-150). Its float64 steps bind the
  primitives directly (float64 values inside a float32 program, below the x64 switch), so
  vmap and loops that re-trace it in 32-bit mode keep them float64."""
  u32, i32 = dtypes.uint32, dtypes.int32
  shape = tuple(core.get_aval(x).shape)
  k = lambda v: _k64(v, shape)
  c = _f32c
  # y's integer-ness decides the sign for x < 0 (non-integer y: nan); glibc reads it off the
  # bits, so a subnormal y is no integer (floor(y) == y is true under flush-to-zero)
  y_int = lax.bitwise_and(lax.eq(lax.floor(y), y), lax.bitwise_not(_subnormal_bits(y, u32)))
  y_odd = lax.bitwise_and(y_int, lax.eq(lax.abs(lax.rem(y, c(2))), c(1)))
  ax = lax.abs(x)
  x_neg = lax.ne(lax.shift_right_logical(lax.bitcast_convert_type(x, u32), np.uint32(31)),
                 np.uint32(0))   # the sign bit (-0 too)
  # subnormal x: glibc normalizes asuint(ax * 2**23) - (23 << 23), but under XLA:CPU's
  # denormals-are-zero the product is 0: every subnormal is taken as 2**-150
  ix = lax.bitcast_convert_type(ax, u32)
  ix = lax.select(lax.lt(ix, np.uint32(0x00800000)),
                  lax.full_like(ix, np.uint32((-(23 << 23)) % 2**32)), ix)
  # log2(x) = k + log2(c) + log2(z / c), |z / c - 1| < 1/32, in float64
  tmp = lax.sub(ix, np.uint32(0x3F330000))
  i = lax.convert_element_type(
      lax.bitwise_and(lax.shift_right_logical(tmp, np.uint32(19)), np.uint32(15)), i32)
  top = lax.bitwise_and(tmp, np.uint32(0xFF800000))
  z = _to(lax.bitcast_convert_type(lax.sub(ix, top), _F32), _F64D)
  kk = _to(lax.shift_right_arithmetic(lax.bitcast_convert_type(top, i32), np.int32(23)), _F64D)
  tab = _POWF_LOG2_TAB.view(np.uint32).reshape(16, 2, 2)   # (1/c, log2 c) as word pairs
  invc, logc = _lookup64(tab[:, 0], i), _lookup64(tab[:, 1], i)
  A = [k(v) for v in _POWF_LOG2_POLY]
  r = fma(z, invc, k(-1.0))
  y0 = lax.add(kk, logc)
  p1 = fma(r, A[0], A[1])
  p2 = fma(r, A[2], A[3])
  r2 = lax.mul(r, r)
  q = fma(r, A[4], y0)
  r4 = lax.mul(r2, r2)
  q = fma(r2, p2, q)
  logx = fma(p1, r4, q)
  ylogx = lax.mul(_to(y, _F64D), logx)
  # 2^ylogx = 2^(m/32) 2^r, m = round(32 ylogx), |r| <= 1/64
  shift = k("0x1.8p+47")
  kd = lax.add(ylogx, shift)
  ki = lax.slice_in_dim(_f64_words(kd), 0, 1, axis=-1)    # low word: m (mod 2^32)
  ki = lax.reshape(ki, shape)
  r = lax.sub(ylogx, lax.sub(kd, shift))
  neg = lax.bitwise_and(x_neg, y_odd)
  sign = lax.select(neg, lax.full_like(ki, 1 << 16), lax.full_like(ki, 0))
  t = take(_EXP2F_TAB.view(np.uint32).reshape(32, 2),
           lax.convert_element_type(lax.bitwise_and(ki, np.uint32(31)), i32),
           axis=0, mode="clip")
  hi = lax.add(lax.reshape(lax.slice_in_dim(t, 1, 2, axis=-1), shape),
               lax.shift_left(lax.add(ki, sign), np.uint32(15)))
  s = _words_f64(lax.concatenate([lax.reshape(lax.slice_in_dim(t, 0, 1, axis=-1), (*shape, 1)),
                                  lax.reshape(hi, (*shape, 1))], len(shape)))
  C = [k(v) for v in _EXP2F_POLY]
  zz = fma(r, C[0], C[1])
  rr = lax.mul(r, r)
  yy = fma(r, C[2], k(1.0))
  yy = fma(zz, rr, yy)
  out = _to(lax.mul(yy, s), _F32)
  out = lax.select(lax.gt(ylogx, k("0x1.fffffffd1d571p+6")),
                   lax.select(neg, lax.full_like(out, -np.inf), lax.full_like(out, np.inf)), out)
  out = _ftz(out)
  out = lax.select(lax.le(ylogx, k(-149.0)), lax.mul(lax.full_like(out, 0),
                   lax.select(neg, lax.full_like(out, -1), lax.full_like(out, 1))), out)
  # glibc's special cases: x or y zero, infinite or nan; x < 0
  nan, inf = c(np.nan), c(np.inf)
  out = lax.select(lax.bitwise_and(x_neg, lax.bitwise_not(y_int)), lax.full_like(out, nan), out)
  x_zin = lax.bitwise_or(_zero_bits(x, u32), lax.bitwise_or(lax.eq(ax, inf), lax.ne(x, x)))
  x2 = lax.mul(x, x)
  x2 = lax.select(neg, lax.neg(x2), x2)
  out = lax.select(x_zin, lax.select(lax.lt(y, c(0)), lax.div(c(1), x2), x2), out)
  y_inf = lax.eq(lax.abs(y), inf)
  inf_case = lax.select(lax.eq(ax, c(1)), lax.full_like(out, 1),
                        lax.select(lax.eq(lax.lt(ax, c(1)), lax.gt(y, c(0))),
                                   lax.full_like(out, 0), lax.full_like(out, inf)))
  out = lax.select(y_inf, inf_case, out)
  out = lax.select(lax.bitwise_or(lax.ne(x, x), lax.ne(y, y)), lax.add(x, y), out)
  return lax.select(lax.bitwise_or(_zero_bits(y, u32), lax.eq(x, c(1))), lax.full_like(out, 1),
                    out)


# glibc's powf and pow test zeros and integers on the bits; XLA:CPU's comparisons, under its
# flush-to-zero (base/denormals.py), read a subnormal as a zero: these read the bits

def _zero_bits(v, ut):
  """v is +-0 (a subnormal is not)."""
  return lax.eq(lax.shift_left(lax.bitcast_convert_type(v, ut), np.array(1, ut)),
                np.array(0, ut))


def _subnormal_bits(v, ut):
  """v is subnormal: exponent bits zero, significand not."""
  bits = lax.bitcast_convert_type(v, ut)
  width = np.dtype(ut).itemsize * 8
  mant = (1 << (23 if width == 32 else 52)) - 1
  exp_mask = ((1 << (width - 1)) - 1) ^ mant
  return lax.bitwise_and(lax.eq(lax.bitwise_and(bits, np.array(exp_mask, ut)), np.array(0, ut)),
                         lax.ne(lax.bitwise_and(bits, np.array(mant, ut)), np.array(0, ut)))


# --- glibc's float64 pow (`__pow_fma`: log in double-double from a 128-entry table, exp
# from a 128-entry table of 2**(k/128) as tail + bits) ---------------------------------------

# (1/c, log(c), log(c) tail) per subinterval, read off libm (e_pow_log_data.c)
_POW_LOG_TAB = _hex_table("""
3ff6a00000000000 bfd62c82f2b9c800 3cfab42428375680 3ff6800000000000 bfd5d1bdbf580800
bd1ca508d8e0f720 3ff6600000000000 bfd5767717455800 bd2362a4d5b6506d 3ff6400000000000
bfd51aad872df800 bce684e49eb067d5 3ff6200000000000 bfd4be5f95777800 bd041b6993293ee0
3ff6000000000000 bfd4618bc21c6000 3d13d82f484c84cc 3ff5e00000000000 bfd404308686a800
3cdc42f3ed820b3a 3ff5c00000000000 bfd3a64c55694800 3d20b1c686519460 3ff5a00000000000
bfd347dd9a988000 3d25594dd4c58092 3ff5800000000000 bfd2e8e2bae12000 3d267b1e99b72bd8
3ff5600000000000 bfd2895a13de8800 3d15ca14b6cfb03f 3ff5600000000000 bfd2895a13de8800
3d15ca14b6cfb03f 3ff5400000000000 bfd22941fbcf7800 bd165a242853da76 3ff5200000000000
bfd1c898c1699800 bd1fafbc68e75404 3ff5000000000000 bfd1675cababa800 3d1f1fc63382a8f0
3ff4e00000000000 bfd1058bf9ae4800 bd26a8c4fd055a66 3ff4c00000000000 bfd0a324e2739000
bd0c6bee7ef4030e 3ff4a00000000000 bfd0402594b4d000 bcf036b89ef42d7f 3ff4a00000000000
bfd0402594b4d000 bcf036b89ef42d7f 3ff4800000000000 bfcfb9186d5e4000 3d0d572aab993c87
3ff4600000000000 bfcef0adcbdc6000 3d2b26b79c86af24 3ff4400000000000 bfce27076e2af000
bd172f4f543fff10 3ff4200000000000 bfcd5c216b4fc000 3d21ba91bbca681b 3ff4000000000000
bfcc8ff7c79aa000 3d27794f689f8434 3ff4000000000000 bfcc8ff7c79aa000 3d27794f689f8434
3ff3e00000000000 bfcbc286742d9000 3d194eb0318bb78f 3ff3c00000000000 bfcaf3c94e80c000
3cba4e633fcd9066 3ff3a00000000000 bfca23bc1fe2b000 bd258c64dc46c1ea 3ff3a00000000000
bfca23bc1fe2b000 bd258c64dc46c1ea 3ff3800000000000 bfc9525a9cf45000 bd2ad1d904c1d4e3
3ff3600000000000 bfc87fa06520d000 3d2bbdbf7fdbfa09 3ff3400000000000 bfc7ab890210e000
3d2bdb9072534a58 3ff3400000000000 bfc7ab890210e000 3d2bdb9072534a58 3ff3200000000000
bfc6d60fe719d000 bd10e46aa3b2e266 3ff3000000000000 bfc5ff3070a79000 bd1e9e439f105039
3ff3000000000000 bfc5ff3070a79000 bd1e9e439f105039 3ff2e00000000000 bfc526e5e3a1b000
bd20de8b90075b8f 3ff2c00000000000 bfc44d2b6ccb8000 3d170cc16135783c 3ff2c00000000000
bfc44d2b6ccb8000 3d170cc16135783c 3ff2a00000000000 bfc371fc201e9000 3cf178864d27543a
3ff2800000000000 bfc29552f81ff000 bd248d301771c408 3ff2600000000000 bfc1b72ad52f6000
bd2e80a41811a396 3ff2600000000000 bfc1b72ad52f6000 bd2e80a41811a396 3ff2400000000000
bfc0d77e7cd09000 3d0a699688e85bf4 3ff2400000000000 bfc0d77e7cd09000 3d0a699688e85bf4
3ff2200000000000 bfbfec9131dbe000 bd2575545ca333f2 3ff2000000000000 bfbe27076e2b0000
3d2a342c2af0003c 3ff2000000000000 bfbe27076e2b0000 3d2a342c2af0003c 3ff1e00000000000
bfbc5e548f5bc000 bd1d0c57585fbe06 3ff1c00000000000 bfba926d3a4ae000 3d253935e85baac8
3ff1c00000000000 bfba926d3a4ae000 3d253935e85baac8 3ff1a00000000000 bfb8c345d631a000
3d137c294d2f5668 3ff1a00000000000 bfb8c345d631a000 3d137c294d2f5668 3ff1800000000000
bfb6f0d28ae56000 bd269737c93373da 3ff1600000000000 bfb51b073f062000 3d1f025b61c65e57
3ff1600000000000 bfb51b073f062000 3d1f025b61c65e57 3ff1400000000000 bfb341d7961be000
3d2c5edaccf913df 3ff1400000000000 bfb341d7961be000 3d2c5edaccf913df 3ff1200000000000
bfb16536eea38000 3d147c5e768fa309 3ff1000000000000 bfaf0a30c0118000 3d2d599e83368e91
3ff1000000000000 bfaf0a30c0118000 3d2d599e83368e91 3ff0e00000000000 bfab42dd71198000
3d1c827ae5d6704c 3ff0e00000000000 bfab42dd71198000 3d1c827ae5d6704c 3ff0c00000000000
bfa77458f632c000 bd2cfc4634f2a1ee 3ff0c00000000000 bfa77458f632c000 bd2cfc4634f2a1ee
3ff0a00000000000 bfa39e87b9fec000 3cf502b7f526feaa 3ff0a00000000000 bfa39e87b9fec000
3cf502b7f526feaa 3ff0800000000000 bf9f829b0e780000 bd2980267c7e09e4 3ff0800000000000
bf9f829b0e780000 bd2980267c7e09e4 3ff0600000000000 bf97b91b07d58000 bd288d5493faa639
3ff0400000000000 bf8fc0a8b0fc0000 bcdf1e7cf6d3a69c 3ff0400000000000 bf8fc0a8b0fc0000
bcdf1e7cf6d3a69c 3ff0200000000000 bf7fe02a6b100000 bd19e23f0dda40e4 3ff0200000000000
bf7fe02a6b100000 bd19e23f0dda40e4 3ff0000000000000 0000000000000000 0000000000000000
3ff0000000000000 0000000000000000 0000000000000000 3fefc00000000000 3f80101575890000
bd10c76b999d2be8 3fef800000000000 3f90205658938000 bd23dc5b06e2f7d2 3fef400000000000
3f98492528c90000 bd2aa0ba325a0c34 3fef000000000000 3fa0415d89e74000 3d0111c05cf1d753
3feec00000000000 3fa466aed42e0000 bd2c167375bdfd28 3fee800000000000 3fa894aa149fc000
bd197995d05a267d 3fee400000000000 3faccb73cdddc000 bd1a68f247d82807 3fee200000000000
3faeea31c006c000 bd0e113e4fc93b7b 3fede00000000000 3fb1973bd1466000 bd25325d560d9e9b
3feda00000000000 3fb3bdf5a7d1e000 3d2cc85ea5db4ed7 3fed600000000000 3fb5e95a4d97a000
bd2c69063c5d1d1e 3fed400000000000 3fb700d30aeac000 3cec1e8da99ded32 3fed000000000000
3fb9335e5d594000 3d23115c3abd47da 3fecc00000000000 3fbb6ac88dad6000 bd1390802bf768e5
3feca00000000000 3fbc885801bc4000 3d2646d1c65aacd3 3fec600000000000 3fbec739830a2000
bd2dc068afe645e0 3fec400000000000 3fbfe89139dbe000 bd2534d64fa10afd 3fec000000000000
3fc1178e8227e000 3d21ef78ce2d07f2 3febe00000000000 3fc1aa2b7e23f000 3d2ca78e44389934
3feba00000000000 3fc2d1610c868000 3d039d6ccb81b4a1 3feb800000000000 3fc365fcb0159000
3cc62fa8234b7289 3feb400000000000 3fc4913d8333b000 3d25837954fdb678 3feb200000000000
3fc527e5e4a1b000 3d2633e8e5697dc7 3feae00000000000 3fc6574ebe8c1000 3d19cf8b2c3c2e78
3feac00000000000 3fc6f0128b757000 bd25118de59c21e1 3feaa00000000000 3fc7898d85445000
bd1c661070914305 3fea600000000000 3fc8beafeb390000 bd073d54aae92cd1 3fea400000000000
3fc95a5adcf70000 3d07f22858a0ff6f 3fea000000000000 3fca93ed3c8ae000 bd28724350562169
3fe9e00000000000 3fcb31d8575bd000 bd0c358d4eace1aa 3fe9c00000000000 3fcbd087383be000
bd2d4bc4595412b6 3fe9a00000000000 3fcc6ffbc6f01000 bcf1ec72c5962bd2 3fe9600000000000
3fcdb13db0d49000 bd2aff2af715b035 3fe9400000000000 3fce530effe71000 3cc212276041f430
3fe9200000000000 3fcef5ade4dd0000 bcca211565bb8e11 3fe9000000000000 3fcf991c6cb3b000
3d1bcbecca0cdf30 3fe8c00000000000 3fd07138604d5800 3cf89cdb16ed4e91 3fe8a00000000000
3fd0c42d67616000 3d27188b163ceae9 3fe8800000000000 3fd1178e8227e800 bd2c210e63a5f01c
3fe8600000000000 3fd16b5ccbacf800 3d2b9acdf7a51681 3fe8400000000000 3fd1bf99635a6800
3d2ca6ed5147bdb7 3fe8200000000000 3fd214456d0eb800 3d0a87deba46baea 3fe7e00000000000
3fd2bef07cdc9000 3d2a9cfa4a5004f4 3fe7c00000000000 3fd314f1e1d36000 bd28e27ad3213cb8
3fe7a00000000000 3fd36b6776be1000 3d116ecdb0f177c8 3fe7800000000000 3fd3c25277333000
3d183b54b606bd5c 3fe7600000000000 3fd419b423d5e800 3d08e436ec90e09d 3fe7400000000000
3fd4718dc271c800 bd2f27ce0967d675 3fe7200000000000 3fd4c9e09e173000 bd2e20891b0ad8a4
3fe7000000000000 3fd522ae0738a000 3d2ebe708164c759 3fe6e00000000000 3fd57bf753c8d000
3d1fadedee5d40ef 3fe6c00000000000 3fd5d5bddf596000 bd0a0b2a08a465dc
""").reshape(128, 3)
_POW_LOG_A = _hexfloats(["-0x1p-1", "-0x1.555555555556p-1", "0x1.0000000000006p-1",
                         "0x1.999999959554ep-1", "-0x1.555555529a47ap-1",
                         "-0x1.2495b9b4845e9p+0", "0x1.0002b8b263fc3p+0"])
# e_exp_data.c: per k mod 128 the tail of 2**(k/128) (as bits) and its bits minus k << 45
_EXP_TAB = _hex_table("""
0000000000000000 3ff0000000000000 3c9b3b4f1a88bf6e 3feff63da9fb3335 bc7160139cd8dc5d
3fefec9a3e778061 bc905e7a108766d1 3fefe315e86e7f85 3c8cd2523567f613 3fefd9b0d3158574
bc8bce8023f98efa 3fefd06b29ddf6de 3c60f74e61e6c861 3fefc74518759bc8 3c90a3e45b33d399
3fefbe3ecac6f383 3c979aa65d837b6d 3fefb5586cf9890f 3c8eb51a92fdeffc 3fefac922b7247f7
3c3ebe3d702f9cd1 3fefa3ec32d3d1a2 bc6a033489906e0b 3fef9b66affed31b bc9556522a2fbd0e
3fef9301d0125b51 bc5080ef8c4eea55 3fef8abdc06c31cc bc91c923b9d5f416 3fef829aaea92de0
3c80d3e3e95c55af 3fef7a98c8a58e51 bc801b15eaa59348 3fef72b83c7d517b bc8f1ff055de323d
3fef6af9388c8dea 3c8b898c3f1353bf 3fef635beb6fcb75 bc96d99c7611eb26 3fef5be084045cd4
3c9aecf73e3a2f60 3fef54873168b9aa bc8fe782cb86389d 3fef4d5022fcd91d 3c8a6f4144a6c38d
3fef463b88628cd6 3c807a05b0e4047d 3fef3f49917ddc96 3c968efde3a8a894 3fef387a6e756238
3c875e18f274487d 3fef31ce4fb2a63f 3c80472b981fe7f2 3fef2b4565e27cdd bc96b87b3f71085e
3fef24dfe1f56381 3c82f7e16d09ab31 3fef1e9df51fdee1 bc3d219b1a6fbffa 3fef187fd0dad990
3c8b3782720c0ab4 3fef1285a6e4030b 3c6e149289cecb8f 3fef0cafa93e2f56 3c834d754db0abb6
3fef06fe0a31b715 3c864201e2ac744c 3fef0170fc4cd831 3c8fdd395dd3f84a 3feefc08b26416ff
bc86a3803b8e5b04 3feef6c55f929ff1 bc924aedcc4b5068 3feef1a7373aa9cb bc9907f81b512d8e
3feeecae6d05d866 bc71d1e83e9436d2 3feee7db34e59ff7 bc991919b3ce1b15 3feee32dc313a8e5
3c859f48a72a4c6d 3feedea64c123422 bc9312607a28698a 3feeda4504ac801c bc58a78f4817895b
3feed60a21f72e2a bc7c2c9b67499a1b 3feed1f5d950a897 3c4363ed60c2ac11 3feece086061892d
3c9666093b0664ef 3feeca41ed1d0057 3c6ecce1daa10379 3feec6a2b5c13cd0 3c93ff8e3f0f1230
3feec32af0d7d3de 3c7690cebb7aafb0 3feebfdad5362a27 3c931dbdeb54e077 3feebcb299fddd0d
bc8f94340071a38e 3feeb9b2769d2ca7 bc87deccdc93a349 3feeb6daa2cf6642 bc78dec6bd0f385f
3feeb42b569d4f82 bc861246ec7b5cf6 3feeb1a4ca5d920f 3c93350518fdd78e 3feeaf4736b527da
3c7b98b72f8a9b05 3feead12d497c7fd 3c9063e1e21c5409 3feeab07dd485429 3c34c7855019c6ea
3feea9268a5946b7 3c9432e62b64c035 3feea76f15ad2148 bc8ce44a6199769f 3feea5e1b976dc09
bc8c33c53bef4da8 3feea47eb03a5585 bc845378892be9ae 3feea34634ccc320 bc93cedd78565858
3feea23882552225 3c5710aa807e1964 3feea155d44ca973 bc93b3efbf5e2228 3feea09e667f3bcd
bc6a12ad8734b982 3feea012750bdabf bc6367efb86da9ee 3fee9fb23c651a2f bc80dc3d54e08851
3fee9f7df9519484 bc781f647e5a3ecf 3fee9f75e8ec5f74 bc86ee4ac08b7db0 3fee9f9a48a58174
bc8619321e55e68a 3fee9feb564267c9 3c909ccb5e09d4d3 3feea0694fde5d3f bc7b32dcb94da51d
3feea11473eb0187 3c94ecfd5467c06b 3feea1ed0130c132 3c65ebe1abd66c55 3feea2f336cf4e62
bc88a1c52fb3cf42 3feea427543e1a12 bc9369b6f13b3734 3feea589994cce13 bc805e843a19ff1e
3feea71a4623c7ad bc94d450d872576e 3feea8d99b4492ed 3c90ad675b0e8a00 3feeaac7d98a6699
3c8db72fc1f0eab4 3feeace5422aa0db bc65b6609cc5e7ff 3feeaf3216b5448c 3c7bf68359f35f44
3feeb1ae99157736 bc93091fa71e3d83 3feeb45b0b91ffc6 bc5da9b88b6c1e29 3feeb737b0cdc5e5
bc6c23f97c90b959 3feeba44cbc8520f bc92434322f4f9aa 3feebd829fde4e50 bc85ca6cd7668e4b
3feec0f170ca07ba 3c71affc2b91ce27 3feec49182a3f090 3c6dd235e10a73bb 3feec86319e32323
bc87c50422622263 3feecc667b5de565 3c8b1c86e3e231d5 3feed09bec4a2d33 bc91bbd1d3bcbb15
3feed503b23e255d 3c90cc319cee31d2 3feed99e1330b358 3c8469846e735ab3 3feede6b5579fdbf
bc82dfcd978e9db4 3feee36bbfd3f37a 3c8c1a7792cb3387 3feee89f995ad3ad bc907b8f4ad1d9fa
3feeee07298db666 bc55c3d956dcaeba 3feef3a2b84f15fb bc90a40e3da6f640 3feef9728de5593a
bc68d6f438ad9334 3feeff76f2fb5e47 bc91eee26b588a35 3fef05b030a1064a 3c74ffd70a5fddcd
3fef0c1e904bc1d2 bc91bdfbfa9298ac 3fef12c25bd71e09 3c736eae30af0cb3 3fef199bdd85529c
3c8ee3325c9ffd94 3fef20ab5fffd07a 3c84e08fd10959ac 3fef27f12e57d14b 3c63cdaf384e1a67
3fef2f6d9406e7b5 3c676b2c6c921968 3fef3720dcef9069 bc808a1883ccb5d2 3fef3f0b555dc3fa
bc8fad5d3ffffa6f 3fef472d4a07897c bc900dae3875a949 3fef4f87080d89f2 3c74a385a63d07a7
3fef5818dcfba487 bc82919e2040220f 3fef60e316c98398 3c8e5a50d5c192ac 3fef69e603db3285
3c843a59ac016b4b 3fef7321f301b460 bc82d52107b43e1f 3fef7c97337b9b5f bc892ab93b470dc9
3fef864614f5a129 3c74b604603a88d3 3fef902ee78b3ff6 3c83c5ec519d7271 3fef9a51fbc74c83
bc8ff7128fd391f0 3fefa4afa2a490da bc8dae98e223747d 3fefaf482d8e67f1 3c8ec3bc41aa2008
3fefba1bee615a27 3c842b94c3a9eb32 3fefc52b376bba97 3c8a64a931d185ee 3fefd0765b6e4540
bc8e37bae43be3ed 3fefdbfdad9cbe14 3c77893b4d91cd9d 3fefe7c1819e90d8 3c5305c14160cc89
3feff3c22b8f71f1
""", np.uint64).reshape(128, 2)
_EXP_C = _hexfloats(["0x1.ffffffffffdbdp-2", "0x1.555555555543cp-3", "0x1.55555cf172b91p-5",
                     "0x1.1111167a4d017p-7"])
_EXP_INVLN2N, _EXP_NEGLN2HIN, _EXP_NEGLN2LON = _hexfloats(
    ["0x1.71547652b82fep+7", "-0x1.62e42fefa0000p-8", "-0x1.cf79abc9e3b3ap-47"])


def _pow_log(ix):
  """glibc pow's log_inline: log(x) = hi + lo for x's bits ix (positive, normalized)."""
  c, A = _f64c, [_f64c(v) for v in _POW_LOG_A]
  cu = lambda v: np.array(v, np.uint64)
  tmp = lax.sub(ix, cu(0x3FE6955500000000))
  i = lax.convert_element_type(lax.bitwise_and(lax.shift_right_logical(tmp, cu(45)), cu(127)),
                               dtypes.int32)
  k = lax.shift_right_arithmetic(lax.bitcast_convert_type(tmp, dtypes.int64), np.int64(52))
  z = lax.bitcast_convert_type(lax.sub(ix, lax.bitwise_and(tmp, cu(0xFFF << 52))), _F64)
  kd = lax.convert_element_type(k, _F64)
  invc, logc, logctail = (_lookup(_POW_LOG_TAB[:, j], i) for j in range(3))
  r = fma(z, invc, c(-1.0))
  t1 = fma(kd, c(_LN2HI), logc)
  t2 = lax.add(r, t1)
  lo1 = fma(kd, c(_LN2LO), logctail)
  lo2 = lax.add(lax.sub(t1, t2), r)
  ar = lax.mul(r, A[0])
  ar2 = lax.mul(r, ar)
  ar3 = lax.mul(r, ar2)
  lo3 = fma(ar, r, lax.neg(ar2))
  hi = lax.add(t2, ar2)
  lo4 = lax.add(lax.sub(t2, hi), ar2)
  p = fma(ar2, fma(fma(r, A[6], A[5]), ar2, fma(r, A[4], A[3])),
             fma(r, A[2], A[1]))
  lo = fma(ar3, p, lax.add(lax.add(lax.add(lo1, lo2), lo3), lo4))
  y = lax.add(hi, lo)
  return y, lax.add(lax.sub(hi, y), lo)


def _pow_exp(x, xtail, sign_bias):
  """glibc pow's exp_inline: +-exp(x + xtail), 2**(k/128) from the table times a
  polynomial; |x| >= 512 rescaled (specialcase), XLA:CPU flushing subnormal results."""
  c, u64, C = _f64c, _U64, [_f64c(v) for v in _EXP_C]
  cu = lambda v: np.array(v, np.uint64)
  kd = fma(x, c(_EXP_INVLN2N), c(1.5 * 2.0 ** 52))
  ki = lax.bitcast_convert_type(kd, u64)
  kd = lax.sub(kd, c(1.5 * 2.0 ** 52))
  r = fma(kd, c(_EXP_NEGLN2LON), fma(kd, c(_EXP_NEGLN2HIN), x))
  r = lax.add(xtail, r)
  idx = lax.convert_element_type(lax.bitwise_and(ki, cu(127)), dtypes.int32)
  tail = lax.bitcast_convert_type(_lookup(_EXP_TAB[:, 0], idx), _F64)
  sbits = lax.add(_lookup(_EXP_TAB[:, 1], idx), lax.shift_left(lax.add(ki, sign_bias), cu(45)))
  r2 = lax.mul(r, r)
  tmp = fma(fma(r, C[3], C[2]), lax.mul(r2, r2),
               fma(fma(r, C[1], C[0]), r2, lax.add(r, tail)))
  scale = lax.bitcast_convert_type(sbits, _F64)
  out = fma(tmp, scale, scale)
  # |x| in [512, 1024): the scale's exponent may have wrapped; rescale around the product
  up = lax.eq(lax.bitwise_and(ki, cu(0x80000000)), cu(0))
  s_up = lax.bitcast_convert_type(lax.sub(sbits, cu(1009 << 52)), _F64)
  y_up = lax.mul(c(2.0 ** 1009), fma(tmp, s_up, s_up))
  s_dn = lax.bitcast_convert_type(lax.add(sbits, cu(1022 << 52)), _F64)
  y_dn = fma(tmp, s_dn, s_dn)
  y_dn = lax.select(lax.lt(lax.abs(y_dn), c(1.0)), lax.mul(y_dn, c(0)),   # subnormal: flushed
                    lax.mul(c(2.0 ** -1022), y_dn))
  abstop = lax.bitwise_and(lax.shift_right_logical(lax.bitcast_convert_type(x, u64), cu(52)),
                           cu(0x7FF))
  neg = lax.ne(sign_bias, cu(0))
  signed = lambda v: lax.select(neg, lax.neg(v), v)
  out = lax.select(lax.ge(abstop, cu(0x408)), lax.select(up, y_up, y_dn), out)
  out = lax.select(lax.ge(abstop, cu(0x409)),
                   signed(lax.select(lax.lt(x, c(0)), lax.full_like(x, 0),
                                     lax.full_like(x, np.inf))), out)
  return lax.select(lax.lt(abstop, cu(0x3C9)), signed(lax.add(c(1.0), x)), out)


def _glibc_pow(x, y):
  """glibc's pow(x, y) for float64 x, y of one shape, as XLA:CPU runs it (denormals are
  zero: a subnormal x reaches the logarithm as 2**-1074 would not; see the code)."""
  c, u64, sel = _f64c, _U64, lax.select
  cu = lambda v: np.array(v, np.uint64)
  ax = lax.abs(x)
  is_int = lax.bitwise_and(lax.eq(lax.floor(y), y), lax.bitwise_not(_subnormal_bits(y, u64)))
  half = lax.mul(y, c(0.5))
  odd = lax.bitwise_and(is_int, lax.ne(lax.floor(half), half))
  negx = lax.lt(lax.bitcast_convert_type(x, dtypes.int64), np.int64(0))
  odd_neg = lax.bitwise_and(negx, odd)
  ix = lax.bitcast_convert_type(ax, u64)
  # subnormal |x|: glibc normalizes asuint(x * 2**52) - (52 << 52); the product is 0 under
  # XLA:CPU's denormals-are-zero
  ix = sel(lax.lt(ix, cu(1 << 52)), lax.full_like(ix, cu((-(52 << 52)) % 2**64)), ix)
  x_zero = _zero_bits(x, u64)
  ix = sel(lax.bitwise_and(lax.bitwise_not(x_zero), lax.lt(ax, c(np.inf))), ix,
           lax.full_like(ix, cu(0x3FF0000000000000)))
  hi, lo = _pow_log(ix)
  ehi = lax.mul(y, hi)
  elo = fma(y, lo, fma(y, hi, lax.neg(ehi)))
  sign_bias = lax.shift_left(lax.convert_element_type(odd_neg, u64), cu(18))  # 0x800 << 7
  out = _pow_exp(ehi, elo, sign_bias)
  # |y| < 2**-65 or >= 2**63
  topy = lax.bitwise_and(lax.shift_right_logical(lax.bitcast_convert_type(y, u64), cu(52)),
                         cu(0x7FF))
  above1 = lax.gt(ax, c(1.0))
  tiny_y = sel(above1, lax.add(c(1.0), y), lax.sub(c(1.0), y))
  huge_y = sel(lax.eq(above1, lax.gt(y, c(0))), lax.full_like(x, np.inf), lax.full_like(x, 0))
  out = sel(lax.lt(topy, cu(0x3BE)), tiny_y, sel(lax.ge(topy, cu(0x43E)), huge_y, out))
  out = sel(lax.eq(ax, c(1.0)), sel(odd_neg, lax.full_like(x, -1), lax.full_like(x, 1)), out)
  out = sel(lax.bitwise_and(negx, lax.bitwise_not(is_int)), lax.full_like(x, np.nan), out)
  # x zero or infinite: +-x*x or its reciprocal
  x2 = sel(odd_neg, lax.neg(lax.mul(x, x)), lax.mul(x, x))
  zero_inf = lax.bitwise_or(x_zero, lax.eq(ax, c(np.inf)))
  out = sel(zero_inf, sel(lax.lt(y, c(0)), lax.div(c(1), x2), x2), out)
  # y infinite: 1 for |x| = 1, else 0 or inf by whether |x| < 1 agrees with y > 0
  y_inf = sel(lax.eq(ax, c(1)), lax.full_like(x, 1),
              sel(lax.eq(lax.lt(ax, c(1)), lax.gt(y, c(0))), lax.full_like(x, 0),
                  lax.full_like(x, np.inf)))
  out = sel(lax.eq(lax.abs(y), c(np.inf)), y_inf, out)
  out = sel(lax.bitwise_or(lax.ne(x, x), lax.ne(y, y)), lax.add(x, y), out)
  return sel(lax.bitwise_or(_zero_bits(y, u64), lax.eq(x, c(1))), lax.full_like(x, 1), out)
