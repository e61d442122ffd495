"""XLA:CPU's transcendental functions, bit for bit, for the samplers (ember._src.library.random.samplers and
prng_distributions): written with lax operations, op for op as XLA:CPU computes them, so
normal, exponential, gumbel, cauchy, weibull_min, ... draw the same bits as JAX's in
float32, float64 (x64), float16 and bfloat16. XLA's own formulas are `_xla_*`, the glibc
functions its code calls `_glibc_*` (with the same fused multiply-adds); `_erf`, `_exp`,
`_log`, `_log1p`, `_erf_inv`, `_tan` and `_pow` pick the one for an operand's dtype and
differentiate as lax's functions do.
"""
from __future__ import annotations

import functools

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.base.config import enable_x64
from ember._src.library.numpy.creation import asarray
from ember._src.library.numpy.indexing import take
from ember._src.library.numpy.scalar_types import result_type
from ember._src.library.numpy.shape import broadcast_arrays
from ember._src.library.numpy.ufuncs import power
from ember._src.primitives.elementwise import bitcast_convert_type_p, convert_element_type_p, fma
from ember._src.transforms.custom_derivatives import custom_jvp

# --------------------------------------------------------------------------------------
# XLA:CPU's float32 log, log1p, exp, erf and erf_inv, op for op, so the samplers built on
# them draw JAX's bits (read off the machine code XLA:CPU emits for JAX 0.12: Eigen's
# Cephes-style `plog`/`pexp` with LLVM-contracted fused multiply-adds; XLA's Cephes
# rational log1p for small |x|; its rational erf; Giles' erf_inv polynomial from the chlo
# decomposition; subnormals flushed to zero). lax.log etc. stay as they are; only the
# samplers use these. float16/bfloat16 are computed by XLA in float32 and rounded, which
# lax's functions already match; float64 has its own section below.
# --------------------------------------------------------------------------------------

_F32 = dtypes.float32
_U32 = dtypes.uint32


def _f32c(v):
  return np.array(v, np.float32)


def _f32bits(b):
  """The float32 of bit pattern b."""
  return np.array(b, np.uint32).view(np.float32)


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


_ERF_INV_LO = [2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
               0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941]
_ERF_INV_HI = [-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
               0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682]


def _xla_erf_inv_f32(x):
  """Giles' single-precision erf_inv (XLA's chlo decomposition)."""
  c = _f32c
  w = lax.neg(_xla_log1p_f32(lax.mul(x, lax.neg(x))))
  lt = lax.lt(w, c(5))
  coef = lambda i: lax.select(lt, lax.full_like(w, _ERF_INV_LO[i]),
                              lax.full_like(w, _ERF_INV_HI[i]))
  ww = lax.select(lt, lax.add(w, c(-2.5)), lax.add(lax.sqrt(w), c(-3)))
  p = coef(0)
  for i in range(1, 9):
    p = fma(p, ww, coef(i))
  return lax.select(lax.eq(lax.abs(x), c(1)), lax.mul(x, c(np.inf)), lax.mul(p, x))


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


# XLA:CPU's float32 erf: x P(x^2) / Q(x^2), and +-1 from |x| >= 3.832; coefficients as
# float32 bit patterns read off its machine code.
_ERF_THRESHOLD = 0x407547CB
_ERF_P = [0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA]
_ERF_Q = [0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A, 0x3F800000]


def _xla_erf_f32(x):
  bits = _f32bits
  x2 = lax.mul(x, x)

  def horner(coeffs):
    acc = bits(coeffs[0])
    for k in coeffs[1:]:
      acc = fma(acc, x2, bits(k))
    return acc

  r = lax.div(lax.mul(x, horner(_ERF_P)), horner(_ERF_Q))
  one = lax.bitcast_convert_type(lax.bitwise_or(
      lax.bitwise_and(lax.bitcast_convert_type(x, _U32), np.uint32(0x80000000)),
      np.uint32(0x3F800000)), _F32)
  return lax.select(lax.ge(lax.abs(x), bits(_ERF_THRESHOLD)), one, r)


def _dispatch(x, f32, f64, other):
  """XLA:CPU's formula for x's dtype (lax's function for float16/bfloat16: XLA computes
  those in float32 and rounds, as lax's functions do)."""
  dt = core.get_aval(x).dtype
  return f32(x) if dt == _F32 else f64(x) if dt == dtypes.float64 else other(x)


def _differentiable(fn, *rules):
  """`fn` (a rebuilt XLA:CPU formula, all bit tricks and table lookups inside, which have
  no useful derivative) differentiated by lax's rule for the function it rebuilds:
  `rule(g, ans, *primals)` per argument, as jax.lax's JVPs."""
  f = custom_jvp(fn)
  f.defjvps(*rules)
  return f


def _replace_zero(v):
  return lax.select(lax.eq(v, lax.full_like(v, 0)), lax.full_like(v, 1), v)


def _cst(x, v):
  return np.array(v, core.get_aval(x).dtype)


_erf = _differentiable(
    lambda x: _dispatch(x, _xla_erf_f32, _glibc_erf, lax.erf),
    lambda g, ans, x: lax.mul(_cst(x, 2 / np.sqrt(np.pi)),
                              lax.mul(g, _exp(lax.neg(lax.mul(x, x))))))
_exp = _differentiable(lambda x: _dispatch(x, _xla_exp_f32, _xla_exp_f64, lax.exp),
                       lambda g, ans, x: lax.mul(g, ans))
_log = _differentiable(lambda x: _dispatch(x, _xla_log_f32, _glibc_log, lax.log),
                       lambda g, ans, x: lax.div(g, x))
_log1p = _differentiable(lambda x: _dispatch(x, _xla_log1p_f32, _xla_log1p_f64, lax.log1p),
                         lambda g, ans, x: lax.div(g, lax.add(x, _cst(x, 1))))
_erf_inv = _differentiable(
    lambda x: _dispatch(x, _xla_erf_inv_f32, _xla_erf_inv_f64, lax.erf_inv),
    lambda g, ans, x: lax.mul(_cst(x, np.sqrt(np.pi) / 2), lax.mul(g, _exp(lax.mul(ans, ans)))))


def _tan(x):
  # float32 (cauchy's only use: no parameter to differentiate) stays a plain function: its
  # float64 region (enable_x64 inside) must be traced, not replayed from a custom_jvp jaxpr
  # under 32-bit mode (vmap would narrow its float64 constants)
  dt = core.get_aval(x).dtype
  return _glibc_tanf(x) if dt == _F32 else _tan_rest(x)


_tan_rest = _differentiable(lambda x: _dispatch(x, _glibc_tanf, _glibc_tan, lax.tan),
                            lambda g, ans, x: lax.mul(g, lax.add(_cst(x, 1), lax.mul(ans, ans))))


def _pow_dx(x, y, pow_fn):
  """lax.pow's derivative in x: y x**(y - 1), 0 where y = 0."""
  return lax.select(lax.eq(y, lax.full_like(y, 0)), lax.full_like(y, 0),
                    lax.mul(_replace_zero(y), pow_fn(x, lax.sub(y, _cst(y, 1)))))


def _differentiable_pow(fn):
  """A rebuilt pow with lax.pow's derivatives (the one in x through itself, for higher
  orders)."""
  p = _differentiable(fn, lambda g, ans, x, y: lax.mul(g, _pow_dx(x, y, p)),
                      lambda g, ans, x, y: lax.mul(g, lax.mul(_log(_replace_zero(x)), ans)))
  return p


_pow64 = _differentiable_pow(lambda x, y: _glibc_pow(x, y))
_powf = _differentiable_pow(lambda x, y: _xla_pow_f32(x, y))


def _pow(x, y):
  """jnp.power(x, y) (a float exponent), as XLA:CPU calls glibc's powf / pow."""
  dt = result_type(x, y)
  if dt not in (_F32, dtypes.float64):
    return power(x, y)
  return (_powf if dt == _F32 else _pow64)(*broadcast_arrays(asarray(x, dt), asarray(y, dt)))


# --------------------------------------------------------------------------------------
# XLA:CPU's float64 math (and float32 tan and pow). log, tan, pow, erf (and tanf, powf)
# compile to calls of the C library's (glibc 2.36 on the reference machine: the FMA builds
# `__log_fma` etc. that x86-64 CPUs with FMA select), rebuilt here from glibc's source,
# its data tables and its machine code (which multiply-adds GCC contracted); exp is
# Eigen's Cephes-style `pexp` and log1p, erf_inv XLA's/chlo's formulas, as for float32.
# XLA:CPU runs with denormals-are-zero and flush-to-zero, which the functions reproduce
# where it shows. Table lookups are gathers of constant tables.
# --------------------------------------------------------------------------------------

_F64 = dtypes.float64
_U64 = dtypes.uint64


def _f64c(v):
  return np.array(v, np.float64)


_TINY64 = np.finfo(np.float64).tiny


def _daz64(x):
  """XLA:CPU's denormals-are-zero and flush-to-zero: a subnormal reads (is written) as a
  zero of its sign."""
  return lax.select(lax.lt(lax.abs(x), _f64c(_TINY64)), lax.mul(x, _f64c(0)), x)


def _hex_table(words: str, dtype=np.float64):
  """A table written as big-endian hex bit patterns (glibc's hex-float data)."""
  return np.frombuffer(bytes.fromhex("".join(words.split())), np.dtype(dtype).newbyteorder(">")
                       ).astype(dtype)


def _hexfloats(vs):
  return [float.fromhex(v) for v in vs]


def _lookup(table, i):
  """table[i] (i int32, in range by construction): gathers of the constant table. A 64-bit
  table travels as two uint32 word tables (array constants become arguments of compiled
  code, which 32-bit mode would narrow) joined after the gather."""
  dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  shape = core.get_aval(i).shape
  idx = lax.broadcast_in_dim(i, (*shape, 1), tuple(range(len(shape))))
  gather = lambda t: lax.gather(t, idx, dn, (1,), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
  words = np.ascontiguousarray(table).view(np.uint32).reshape(-1, 2)   # little-endian
  lo, hi = (lax.convert_element_type(gather(np.ascontiguousarray(words[:, j])), _U64)
            for j in (0, 1))
  bits = lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
  return lax.bitcast_convert_type(bits, table.dtype)


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
_LN2HI, _LN2LO = _hexfloats(["0x1.62e42fefa3800p-1", "0x1.ef35793c76730p-45"])


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


# Giles' double-precision erf_inv (chlo's decomposition): polynomials in w - 3.125 (w < 6.25),
# sqrt(w) - 3.25 (w < 16) and sqrt(w) - 5, w = -log1p(-x * x); highest degree first.
_ERF_INV64_LT625 = [
    -3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
    1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
    6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
    2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
    1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
    4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
    0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
    0.24015818242558961693, 1.6536545626831027356]
_ERF_INV64_LT16 = [
    2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
    1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
    2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
    6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
    0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
    -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
    3.0838856104922207635]
_ERF_INV64_GE16 = [
    -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
    -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
    2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
    -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
    7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
    1.0103004648645343977, 4.8499064014085844221]


def _xla_erf_inv_f64(x):
  """chlo's float64 erf_inv: one Horner chain whose coefficients are selected per branch
  (the shorter polynomials stop early), each step a fused multiply-add."""
  c = _f64c
  x = _daz64(x)
  w = lax.neg(_xla_log1p_f64(lax.mul(x, lax.neg(x))))
  lt625, lt16 = lax.lt(w, c(6.25)), lax.lt(w, c(16))
  pick = lambda cond, a, b: lax.select(cond, lax.full_like(w, a), lax.full_like(w, b))

  def coef(i):
    v = lax.full_like(w, _ERF_INV64_LT625[i])
    if i < 19:
      v = lax.select(lt625, v, lax.full_like(w, _ERF_INV64_LT16[i]))
    if i < 17:
      v = lax.select(lt16, v, lax.full_like(w, _ERF_INV64_GE16[i]))
    return v

  ww = lax.select(lt625, lax.sub(w, c(3.125)), lax.sub(lax.sqrt(w), pick(lt16, 3.25, 5.0)))
  p = coef(0)
  for i in range(1, 23):
    step = fma(p, ww, coef(i))
    p = step if i < 17 else lax.select(lt16 if i < 19 else lt625, step, p)
  return lax.select(lax.eq(lax.abs(x), c(1)), lax.mul(x, c(np.inf)), _daz64(lax.mul(p, x)))


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


# --- glibc's float32 tan (tanf: fdlibm's __kernel_tanf after a double-precision reduction
# by pi/2; no fused multiply-adds) ---------------------------------------------------------

_TANF_T = [0x3EAAAAAB, 0x3E088889, 0x3D5D0DD1, 0x3CB327A4, 0x3C11371F, 0x3B6B6916, 0x3ABEDE48,
           0x3A1A26C8, 0x398137B9, 0x38A3F445, 0x3895C07A, 0xB79BAE5F, 0x37D95384]


def _clear_low12(v):
  return lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(v, _U32),
                                                  np.uint32(0xFFFFF000)), _F32)


def _kernel_tanf(x, y, iy):
  """fdlibm's __kernel_tanf(x, y, iy): tan(x + y) (iy = 1) or -1/tan(x + y) (iy = -1),
  |x + y| <= pi/4, float32 throughout."""
  c, T = _f32c, [_f32bits(b) for b in _TANF_T]
  sel = lax.select
  ax = lax.abs(x)
  neg = lax.lt(lax.bitcast_convert_type(x, dtypes.int32), np.int32(0))
  sign = sel(neg, lax.full_like(x, -1), lax.full_like(x, 1))
  big = lax.ge(ax, _f32bits(0x3F2CA140))                       # |x| >= 0.6744
  one = lax.full_like(x, 1)
  # big: tan(pi/4 - x') by the complement, on |x| (x' = |x| + y with y's sign following)
  xb = lax.add(lax.sub(_f32bits(0x3F490FDA), ax),
               lax.sub(_f32bits(0x33222168), lax.mul(sign, y)))
  xs = sel(big, xb, x)
  ys = sel(big, lax.full_like(y, 0), y)
  z = lax.mul(xs, xs)
  w = lax.mul(z, z)
  horner = lambda ks: functools.reduce(lambda acc, k: lax.add(T[k], lax.mul(w, acc)), ks[1:],
                                       lax.full_like(w, T[ks[0]]))
  r = horner([11, 9, 7, 5, 3, 1])
  v = lax.mul(z, horner([12, 10, 8, 6, 4, 2]))
  s = lax.mul(z, xs)
  r = lax.add(ys, lax.mul(z, lax.add(lax.mul(s, lax.add(r, v)), ys)))
  r = lax.add(r, lax.mul(T[0], s))
  w = lax.add(xs, r)
  fiy = lax.convert_element_type(iy, _F32)
  out_big = lax.mul(sign, lax.sub(fiy, lax.mul(c(2), lax.sub(xs, lax.sub(
      lax.div(lax.mul(w, w), lax.add(w, fiy)), r)))))
  zh = _clear_low12(w)
  vv = lax.sub(r, lax.sub(zh, xs))
  a = lax.div(c(-1), w)
  t = _clear_low12(a)
  ss = lax.add(one, lax.mul(t, zh))
  out_m1 = lax.add(t, lax.mul(a, lax.add(ss, lax.mul(t, vv))))
  out = sel(big, out_big, sel(lax.eq(iy, np.int32(1)), w, out_m1))
  # big and the complement below 2**-13: the first-order formula
  tiny_c = lax.mul(lax.mul(sign, fiy), lax.sub(one, lax.mul(lax.mul(c(2), fiy), xb)))
  out = sel(lax.bitwise_and(big, lax.lt(lax.abs(xb), c(2.0 ** -13))), tiny_c, out)
  # |x| < 2**-13: x, or -1/x (1/|x| for x = 0)
  small = sel(lax.eq(iy, np.int32(1)), x,
              sel(lax.eq(x, c(0)), lax.div(one, ax), lax.div(c(-1), x)))
  return sel(lax.lt(ax, _f32bits(0x39000000)), small, out)


def _glibc_tanf(x):
  """glibc's tanf for |x| < 120 (|x| >= 120 needs its 4/pi table: lax.tan there)."""
  ax = lax.abs(x)
  with enable_x64(True):
    dx = lax.convert_element_type(x, _F64)
    r = lax.mul(dx, _f64c(float.fromhex("0x1.45F306DC9C883p+23")))
    n = lax.shift_right_arithmetic(lax.add(lax.convert_element_type(r, dtypes.int32),
                                           np.int32(0x800000)), np.int32(24))
    dx = lax.sub(dx, lax.mul(lax.convert_element_type(n, _F64),
                             _f64c(float.fromhex("0x1.921FB54442D18p0"))))
    y0 = lax.convert_element_type(dx, _F32)
    y1 = lax.convert_element_type(lax.sub(dx, lax.convert_element_type(y0, _F64)), _F32)
  iy = lax.sub(np.int32(1), lax.shift_left(lax.bitwise_and(n, np.int32(1)), np.int32(1)))
  reduced = lax.le(ax, _f32bits(0x3F490FDA))
  out = _kernel_tanf(lax.select(reduced, x, y0), lax.select(reduced, lax.full_like(x, 0), y1),
                     lax.select(reduced, lax.full_like(iy, 1), iy))
  out = lax.select(lax.lt(ax, _f32c(120.0)), out, lax.tan(x))
  return lax.select(lax.lt(ax, _f32c(np.inf)), out, lax.sub(x, x))


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


def _ftz(x):
  """float32 x with subnormals flushed to (signed) zero, as XLA:CPU's arithmetic does."""
  return lax.select(lax.lt(lax.abs(x), np.float32(np.finfo(np.float32).tiny)),
                    lax.mul(x, np.float32(0)), x)


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
  # y's integer-ness decides the sign for x < 0 (non-integer y: nan)
  y_int = lax.eq(lax.floor(y), y)
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
  x_zin = lax.bitwise_or(lax.eq(x, c(0)), lax.bitwise_or(lax.eq(ax, inf), lax.ne(x, x)))
  x2 = lax.mul(x, x)
  x2 = lax.select(neg, lax.neg(x2), x2)
  out = lax.select(x_zin, lax.select(lax.lt(y, c(0)), lax.div(c(1), x2), x2), out)
  y_inf = lax.eq(lax.abs(y), inf)
  inf_case = lax.select(lax.eq(ax, c(1)), lax.full_like(out, 1),
                        lax.select(lax.eq(lax.lt(ax, c(1)), lax.gt(y, c(0))),
                                   lax.full_like(out, 0), lax.full_like(out, inf)))
  out = lax.select(y_inf, inf_case, out)
  out = lax.select(lax.bitwise_or(lax.ne(x, x), lax.ne(y, y)), lax.add(x, y), out)
  return lax.select(lax.bitwise_or(lax.eq(y, c(0)), lax.eq(x, c(1))), lax.full_like(out, 1), out)


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
  is_int = lax.eq(lax.floor(y), y)
  half = lax.mul(y, c(0.5))
  odd = lax.bitwise_and(is_int, lax.ne(lax.floor(half), half))
  negx = lax.lt(lax.bitcast_convert_type(x, dtypes.int64), np.int64(0))
  odd_neg = lax.bitwise_and(negx, odd)
  ix = lax.bitcast_convert_type(ax, u64)
  # subnormal |x|: glibc normalizes asuint(x * 2**52) - (52 << 52); the product is 0 under
  # XLA:CPU's denormals-are-zero
  ix = sel(lax.lt(ix, cu(1 << 52)), lax.full_like(ix, cu((-(52 << 52)) % 2**64)), ix)
  ix = sel(lax.bitwise_and(lax.gt(ax, c(0)), lax.lt(ax, c(np.inf))), ix,
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
  zero_inf = lax.bitwise_or(lax.eq(ax, c(0)), lax.eq(ax, c(np.inf)))
  out = sel(zero_inf, sel(lax.lt(y, c(0)), lax.div(c(1), x2), x2), out)
  # y infinite: 1 for |x| = 1, else 0 or inf by whether |x| < 1 agrees with y > 0
  y_inf = sel(lax.eq(ax, c(1)), lax.full_like(x, 1),
              sel(lax.eq(lax.lt(ax, c(1)), lax.gt(y, c(0))), lax.full_like(x, 0),
                  lax.full_like(x, np.inf)))
  out = sel(lax.eq(lax.abs(y), c(np.inf)), y_inf, out)
  out = sel(lax.bitwise_or(lax.ne(x, x), lax.ne(y, y)), lax.add(x, y), out)
  return sel(lax.bitwise_or(lax.eq(y, c(0)), lax.eq(x, c(1))), lax.full_like(x, 1), out)


# --- glibc's float64 tan (`__tan_fma`, IBM's s_tan.c) for |x| <= 25 ------------------------

# (x_i, tan(x_i), 1/tan(x_i)) at i = 16..201 over 256, read off libm (utan.tbl's xfg)
_TAN_XFG = _hex_table("""
3fb000001e519d60 3fb0055796c4e240 402ff554628127b7 3fb100001b1a7010 3fb10668aab892b7
402e12c7be3fdf74 3fb200002505e350 3fb2079bff547824 402c65c5de853633 3fb2fffffcdc4252
3fb308f35eb16c68 402ae5dae56be74f 3fb3ffffe3ff849f 3fb40a71154999cc 40298c43046b7352
3fb4ffffedc9590f 3fb50c17429bdd80 4028538491b5d674 3fb6000000ee83f7 3fb60de7da80cc21
40273724ef21a2a7 3fb6ffffeb05ea41 3fb70fe4b8c51bea 40263370fae562ff 3fb7ffffdc0515f7
3fb812101db54498 402545530e7eab5c 3fb8ffffe384d7ab 3fb9146c2a8d3727 40246a33fd57f3fd
3fb9ffffe4832347 3fba16fad50e1050 40239fe2c5537a96 3fbb0000274540e3 3fbb19be7ae68517
4022e4813637e946 3fbbfffffebf2e9b 3fbc1cb88369cd19 4022367617aef223 3fbd000023529045
3fbd1febc11d7ef7 4021945fb8e43d4e 3fbdffffd872a829 3fbe23598ee4d6b7 4020fd0c76195d5f
3fbeffffff323b84 3fbf2704ec9073e5 40206f713020200f 3fc000000ce79195 3fc01577bc30cc61
401fd549d6564a88 3fc07fffee40e918 3fc0978d8279ac01 401edbb59294bc03 3fc100000cc091fd
3fc119c544dfb2f7 401df0bb067d8e18 3fc180000d9936a1 3fc19c1fb9085a4b 401d131a71ce3629
3fc1ffffed5f3188 3fc21e9dee74bf2d 401c41b6ff0cd655 3fc2800005f06a51 3fc2a141550b313f
401b7b921702e6d2 3fc2fffffe3d339e 3fc3240aa75f76df 401abfc8fcb6409d 3fc37fffed888d6f
3fc3a6fb13cc5db7 401a0d8f8ed5320d 3fc4000002ca050d 3fc42a13e25776bb 4019642dfa84c2bc
3fc47ffff2531f5c 3fc4ad55deb73404 4018c2fef86e9035 3fc5000013774992 3fc530c27d0ee307
4018296c370caf35 3fc57fffedddcb2d 3fc5b45a5db4347d 401796ee52190c0e 3fc5fffff41949a0
3fc6381f13bf986a 40170b092d2255fd 3fc67ffff834d3a1 3fc6bc118ec85952 4016854c62cf2268
3fc6fffffd9106ea 3fc74032f298f6f7 401605511f4f84a9 3fc780000f649a4f 3fc7c4846ca53abc
40158ab94809d175 3fc7ffffef06bbd8 3fc84906df7d76ad 4015152edd2b30a6 3fc88000021c6334
3fc8cdbbd965f986 4014a46251b74296 3fc8fffff38d0756 3fc952a428e173c7 4014380b17b59ebd
3fc98000104efca1 3fc9d7c14644d23c 4013cfe5cb1eabd5 3fca000009417b30 3fca5d14096d76aa
40136bb4b3723db0 3fca7fffeb1c23ec 3fcae29dab60288d 40130b3e783071d7 3fcafffffb171c13
3fcb685fa221a96b 4012ae4dd8c0747d 3fcb80000aba44be 3fcbee5aecdf241f 401254b1c6fad63b
3fcc0000113d2a3e 3fcc7490b3e92543 4011fe3c9a62c035 3fcc7ffff49e00ce 3fccfb020f59eab0
4011aac3e956a631 3fcd000005f611ab 3fcd81b089e6844e 40115a1ff391268d 3fcd800014764ceb
3fce089d27debf0d 40110c2bfbc84740 3fce000014bcea76 3fce8fc916dbc820 4010c0c5a00ca48e
3fce7ffffd7995bd 3fcf173588b50424 401077ccbe02169a 3fcf00000cc35436 3fcf9ee3fd21a40b
401031231ee7ffe8 3fcf800001d1da33 3fd0136ab7dbe15c 400fd95977d559e5 3fd00000060c13b2
3fd05785aaad4f18 400f549e2675d182 3fd0400003885492 3fd09bc3660542d7 400ed3e2df3f5fec
3fd08000052f5a13 3fd0e0249a195045 400e56f8fa68f2c8 3fd0c00002ba1af5 3fd124a9e2e7f24b
400dddb4bffe633f 3fd0fffff76642c1 3fd16953e162ffe6 400d67ed0311d5d5 3fd14000033602f0
3fd1ae235f49508e 400cf57ab8708266 3fd17ffffefd1a13 3fd1f318db2a9ba1 400c86398d11009e
3fd1bffff718365d 3fd238350c41e3ac 400c1a06e02be47c 3fd1ffffff001e00 3fd27d78b2f6395e
400bb0c1f2fe9a85 3fd23ffffe425a6a 3fd2c2e4618faabe 400b4a4c190b18df 3fd28000059ec1db
3fd30878d8583884 400ae6880cd82bc2 3fd2c000000dd081 3fd34e36affdb6d8 400a855a5270fc15
3fd2fffffc1dcd2b 3fd3941ea95875bc 400a26a8aa9502b6 3fd33ffff6c0d4a0 3fd3da31739845f5
4009ca5a4d2573a0 3fd3800006b16793 3fd4206fdbc088f0 400970579344e33a 3fd3c00007358fa3
3fd466da6f23311d 4009188a5aa612ea 3fd3fffffc3b18cf 3fd4ad71e9282e6b 4008c2dd641e643d
3fd44000000dd2a8 3fd4f4371fa3f2d1 40086f3c6072f821 3fd47ffffbb43713 3fd53b2ab3ac333c
40081d943da56692 3fd4bffffb113bf4 3fd5824d6e8ed9c2 4007cdd2a8add00f 3fd4fffff7f087c9
3fd5c9a007446496 40077fe6444588eb 3fd54000088b3814 3fd61123564125f9 400733be6281a765
3fd57ffff7d55966 3fd658d7e194a5d5 4006e94b73b47d1f 3fd5c00008bf2490 3fd6a0beb775b28d
4006a07e15b6ec28 3fd6000009fa853f 3fd6e8d865a66cfd 400659481c701269 3fd6400007595fca
3fd73125c0556a7c 4006139bbaae9d02 3fd68000031687da 3fd779a792e2cfd0 4005cf6bcae0882b
3fd6bffff5c8cfe2 3fd7c25e9fb452ed 40058cabc561f1cd 3fd6fffff81df231 3fd80b4bcfb4dab5
40054b4f8d3ca5d3 3fd73ffffa71385e 3fd8546fe007a9b6 40050b4bb3b22176 3fd78000024a9c2b
3fd89dcba7fcf5cf 4004cc953159cbe1 3fd7c00002eb62b8 3fd8e75fec0ba5cf 40048f218731eeea
3fd80000054a52d1 3fd9312d8bb822e9 400452e69170a729 3fd83ffff93a00a3 3fd97b354bb9ad2a
400417daae924e7f 3fd87ffffbdc91c1 3fd9c5782771b601 4003ddf478855799 3fd8bffff6d215e6
3fda0ff6e0ea4a0b 4003a52b189a0989 3fd9000002f734ef 3fda5ab2736bf579 40036d75e9244ca6
3fd9400004eef8b4 3fdaa5ab9fb6e3d0 400336ccc9089cb7 3fd98000041ec76a 3fdaf0e35176c7e4
40030127cb0b9506 3fd9c00008044e47 3fdb3c5a77071224 4002cc7f50d75ec7 3fda000001f8235b
3fdb8811e725782e 400298cc18fbfb37 3fda3ffffb8c6f08 3fdbd40a97b086f3 40026607154de04b
3fda7ffffb3d63e1 3fdc20457d9a3b8a 400234297e60bfbb 3fdabffff5f45c48 3fdc6cc37b8d45e6
4002032cdb1ace69 3fdb00000508b34c 3fdcb985a27e8d37 4001d30ad4459a2b 3fdb40000a84710c
3fdd068cc3e50155 4001a3bd775034dd 3fdb7ffff692e9d8 3fdd53d9c49d6627 4001753efe18066a
3fdbc0000280f14d 3fdda16de4e81013 40014789a38ea052 3fdc0000001121d1 3fddef49eac018f0
40011a9820b8be0c 3fdc3ffffef662aa 3fde3d6eea0c7070 4000ee6532f46ccd 3fdc800009845818
3fde8bddf36a8b1b 4000c2ebcac73476 3fdcbffffb0493bf 3fdeda97e0c60d10 40009827251c7836
3fdcfffffd52961f 3fdf299defb3e44b 40006e1274e459f5 3fdd3ffffe2319a4 3fdf78f117139490
400044a93e737e94 3fdd7ffffa4de596 3fdfc892638f49e8 40001be7231057a5 3fddbffffe729a69
3fe00c417c6ab019 3fffe78fbf612660 3fde000009d66802 3fe03461f6b883cf 3fff988ebc05a87c
3fde3ffffb211657 3fe05cab191db8e8 3fff4ac37bcfe6be 3fde80000a3f068a 3fe0851d95fb54f0
3ffefe26144ca408 3fdec00001adb060 3fe0adb9dc7b54f9 3ffeb2af5ebe52a7 3fdeffffff5c0d01
3fe0d68092550a8d 3ffe68580d71fdf0 3fdf3ffff93d5fcc 3fe0ff7245cb4374 3ffe1f193cce5040
3fdf7ffffa0dd18f 3fe1288f944dd508 3ffdd6ec298b874d 3fdfbffffd3a9f1a 3fe151d913750f3e
3ffd8fca5806a27e 3fdffffffc481400 3fe17b4f598944ca 3ffd49ad82532170 3fe01fffff53786c
3fe1a4f307d83d47 3ffd048f851bffeb 3fe03ffffee301b7 3fe1cec4b8a6a382 3ffcc06a7c519db6
3fe06000006e36bf 3fe1f8c5114eb8be 3ffc7d38a34d6786 3fe07ffffd60aa43 3fe222f4abeccecb
3ffc3af477342ac4 3fe0a000037762e8 3fe24d543f99efe8 3ffbf99875f54fab 3fe0bfffff1c6921
3fe277e4598e35d0 3ffbb91f8addd186 3fe0dfffff07154b 3fe2a2a5b6bc3986 3ffb79848301646d
3fe1000002fcdda4 3fe2cd9902a59f1e 3ffb3ac2705219bf 3fe1200001ce1140 3fe2f8bedf0a67c2
3ffafcd49ab8ae2a 3fe1400004d0f355 3fe3241808fcc7bf 3ffabfb6497b9a36 3fe1600000fb0c8a
3fe34fa52471618b 3ffa83630d26d117 3fe18000026f10b3 3fe37b66f7579056 3ffa47d66b4cf4b1
3fe19ffffd0978f8 3fe3a75e290cc78c 3ffa0d0c36c21315 3fe1bffffd94840b 3fe3d38b85b4e4a4
3ff9d30032f2ecef 3fe1dffffbda1ea1 3fe3ffefbf3cee2f 3ff999ae6770fed8 3fe1fffffc989533
3fe42c8b9c27900c 3ff96112e0d9f1ac 3fe22000012b8d26 3fe4595fe11975ca 3ff92929cdaa4e80
3fe2400004f4d6af 3fe4866d4d224131 3ff8f1ef815c34e8 3fe25ffffcc07bda 3fe4b3b498b7d010
3ff8bb6073e7ffa1 3fe28000042d9639 3fe4e136b64540d1 3ff88578f4374938 3fe2a00003be29a0
3fe50ef452bffd96 3ff85035c0042c06 3fe2bffffaa91f12 3fe53cee3e2f4e0d 3ff81b938542df07
3fe2dffffe884891 3fe56b256c1a2470 3ff7e78ee422ea70 3fe2fffffe87152b 3fe5999a9beaaaa1
3ff7b424d18fe9b3 3fe31fffffc1a721 3fe5c84eafe0e564 3ff78152338db8d4 3fe33fffff70a372
3fe5f74282191d64 3ff74f141122bcae 3fe360000436e836 3fe62676fde6ccff 3ff71d677644252c
3fe37ffffcbe9641 3fe655ecee9ffdaf 3ff6ec49a6fc0515 3fe39fffffb6d6ca 3fe685a55e67a1e1
3ff6bbb7bc2ae969 3fe3c00004934fec 3fe6b5a12cc07d75 3ff68baf10b02ef8 3fe3e00003f5cf7f
3fe6e5e13e59def6 3ff65c2d0e61500f 3fe4000005280ad9 3fe7166691ab4c3e 3ff62d2f19f01c90
3fe42000049efb65 3fe7473218af3b9d 3ff5feb2b86465e4 3fe440000035ccb6 3fe77844cb4ff1e5
3ff5d0b57c455428 3fe4600003346717 3fe7a99fba258778 3ff5a334f4392254 3fe4800003002575
3fe7db43d836768f 3ff5762edcf97e0c 3fe4a000055bf381 3fe80d3235edeefa 3ff549a0ea46e31f
3fe4c00004ce10e3 3fe83f6bd67dc1a8 3ff51d88ed82bcc4 3fe4e000016c60e1 3fe871f1ca0aaf31
3ff4f1e4bdacbf16 3fe4ffffff966f0a 3fe8a4c52bff2dae 3ff4c6b23917657e 3fe520000076e6eb
3fe8d7e7175651e8 3ff49bef4f459b05 3fe5400003d12d3b 3fe90b58a976ed56 3ff47199fdf24af4
3fe55ffffce7fa8d 3fe93f1af03a3a09 3ff447b05f13234b 3fe580000331b46a 3fe9732f38e83134
3ff41e3068d8b41b 3fe59ffffc14848e 3fe9a7968471b489 3ff3f5185de3aa73 3fe5bffffb7cd395
3fe9dc5224a8b955 3ff3cc664f8fff15 3fe5e000000dcc40 3fea11634df5b93e 3ff3a41875853228
3fe6000002efd2fc 3fea46cb30d16323 3ff37c2d187962ae 3fe61ffffeb8088a 3fea7c8b053920c0
3ff354a2891769a9 3fe6400000f3ca06 3feab2a428a1911a 3ff32d770a6f0a4a 3fe65ffffe9ec2f4
3feae917d4ce7239 3ff306a90751a948 3fe6800003d43966 3feb1fe7708b998a 3ff2e036d7a153c7
3fe69ffffab67783 3feb57142e575464 3ff2ba1f05006cb6 3fe6bffffcb65f89 3feb8e9f981efd2f
3ff2945fe948d9f7 3fe6dffffc5609a9 3febc68afaed6ff1 3ff26ef81533411e 3fe6fffffc4eef86
3febfed7c62205fe 3ff249e60e70978c 3fe72000004d98b3 3fec3787716968ad 3ff2252861be7751
3fe73ffffc155075 3fec709b5ec6fd4e 3ff200bdb5d53311 3fe760000498c203 3fecaa15323d08c1
3ff1dca493433f65 3fe77fffff1e5636 3fece3f64147c12c 3ff1b8dbbfe294a8 3fe7a0000226d45a
3fed1e404120eb7f 3ff19561d15f8278 3fe7c0000250a5aa 3fed58f4b112a1e1 3ff172358a59d565
3fe7e0000482f82e 3fed94153576bdf0 3ff14f55a22a1c5b 3fe800000205003e 3fedcfa364d69ff7
3ff12cc0e37eb26f 3fe81ffffbf99411 3fee0ba0ebf98f51 3ff10a7616ddd5d6 3fe840000248e3a3
3fee480f9bb7f565 3ff0e873fb84e05c 3fe860000145c157 3fee84f10a10b3ab 3ff0c6b97cbd7b1e
3fe88000022631b9 3feec2470be1f047 3ff0a5456d0b3ee6 3fe8a000045f7828 3fef00136c45ba1c
3ff08416af2a0f09 3fe8bfffffc686cf 3fef3e57f03c824b 3ff0632c33502220 3fe8dffffd8644c6
3fef7d168774261d 3ff04284dd5b3019 3fe8fffffe4e7937 3fefbc511a99a641 3ff0221f9f69840b
3fe920000435251f 3feffc099eb22390 3ff001fb6f7c51e8
""").reshape(186, 3)
_TAN_D = [_hexfloats([v])[0] for v in ("0x1.5555555555555p-2", "0x1.11111111107c6p-3",
                                       "0x1.ba1ba1cdb8745p-5", "0x1.664ed49cfc666p-6",
                                       "0x1.2385a3cf2e4eap-7")]      # d3, d5, ..., d11
_TAN_E0, _TAN_E1 = _hexfloats(["0x1.5555555554dbdp-2", "0x1.11112e0a6b45fp-3"])


def _tan_poly_odd(a, add):
  """add + a**3 (d3 + a**2 (d5 + ...)), the last step fused (tan(a) - a near 0, plus add)."""
  c = _f64c
  a2 = lax.mul(a, a)
  t = c(_TAN_D[4])
  for k in (3, 2, 1, 0):
    t = fma(a2, t, c(_TAN_D[k]))
  return fma(lax.mul(a, a2), t, add)


def _tan_table(w, ww):
  """z = w - x_i + ww for the nearest table point, p(z) ~ tan(z), and (f_i, g_i)."""
  c = _f64c
  i = lax.convert_element_type(fma(w, c(256.0), c(-15.5)), dtypes.int32)
  i = lax.clamp(np.int32(0), i, np.int32(185))
  xi, fi, gi = (_lookup(_TAN_XFG[:, j], i) for j in range(3))
  z = lax.add(lax.sub(w, xi), ww)
  z2 = lax.mul(z, z)
  pz = fma(lax.mul(z, z2), fma(z2, c(_TAN_E1), c(_TAN_E0)), z)
  return pz, fi, gi


def _glibc_tan(x):
  """glibc's tan for |x| <= 25 (beyond, its larger reductions are not rebuilt: lax.tan):
  x itself, an odd polynomial (|x| <= 0.0608), a table point plus a correction (<= 0.787),
  else reduced by pi/2 in double-double and the same two cases for tan or -cot."""
  c, sel = _f64c, lax.select
  w = lax.abs(x)
  sgn = sel(lax.ge(x, c(0)), lax.full_like(x, 1), lax.full_like(x, -1))
  small = _tan_poly_odd(x, x)                                      # x + x**3 p(x**2)
  pz, fi, gi = _tan_table(w, lax.full_like(x, 0))
  mid = lax.mul(lax.add(lax.div(lax.mul(lax.add(fi, gi), pz), lax.sub(gi, pz)), fi), sgn)
  # x = n pi/2 + a + da (pi/2 in three parts, fused multiply-adds)
  t = fma(x, c(float.fromhex("0x1.45f306dc9c883p-1")), c(1.5 * 2.0 ** 52))
  xn = lax.sub(t, c(1.5 * 2.0 ** 52))
  odd = lax.ne(lax.bitwise_and(lax.bitcast_convert_type(t, _U64), np.uint64(1)), np.uint64(0))
  nxn = lax.neg(xn)
  t1 = fma(nxn, c(float.fromhex("-0x1.dde973cp-27")),
              fma(nxn, c(float.fromhex("0x1.921fb58p0")), x))
  mp3 = c(float.fromhex("-0x1.cb3b399d747f2p-55"))
  a = fma(nxn, mp3, t1)
  da = fma(nxn, mp3, lax.sub(t1, a))
  neg_a = lax.lt(a, c(0))
  ya, yya = sel(neg_a, lax.neg(a), a), sel(neg_a, lax.neg(da), da)
  sy = sel(neg_a, lax.full_like(x, -1), lax.full_like(x, 1))
  # |a| <= 0.0608: tan = a + t2, or -cot = -1/(a + t2) in double-double (EADD, DIV2)
  t2 = _tan_poly_odd(a, da)
  b = lax.add(a, t2)
  db = sel(lax.gt(lax.abs(a), lax.abs(t2)), lax.add(lax.sub(a, b), t2), lax.add(lax.sub(t2, b), a))
  q = lax.div(c(1.0), b)
  u = lax.mul(q, b)
  uu = fma(q, b, lax.neg(u))
  cc = lax.div(fma(lax.neg(db), q, lax.add(lax.sub(lax.sub(c(1.0), u), uu), c(0.0))), b)
  zq = lax.add(q, cc)
  cot_small = lax.neg(lax.add(lax.add(lax.sub(q, zq), cc), zq))
  red_small = sel(odd, cot_small, b)
  # |a| > 0.0608: the table again, on (ya, yya)
  pz, fi, gi = _tan_table(ya, yya)
  num = lax.mul(lax.add(fi, gi), pz)
  red_tan = lax.mul(lax.add(lax.div(num, lax.sub(gi, pz)), fi), sy)
  red_cot = lax.mul(lax.sub(gi, lax.div(num, lax.add(pz, fi))), lax.neg(sy))
  red = sel(lax.le(ya, c(float.fromhex("0x1.f212dp-5"))), red_small, sel(odd, red_cot, red_tan))
  g = lambda h: c(float.fromhex(h))
  out = sel(lax.le(w, g("0x1.92f1ap-1")), mid, sel(lax.le(w, c(25.0)), red, lax.tan(x)))
  out = sel(lax.le(w, g("0x1.f212dp-5")), small, out)
  out = sel(lax.le(w, g("0x1.b096cp-27")), x, out)
  return sel(lax.lt(w, c(np.inf)), out, lax.sub(x, x))


# --- glibc's float64 erf (fdlibm's s_erf.c, no fused multiply-adds) and the exp it calls ----

_ERF_PP = [1.28379167095512558561e-01, -3.25042107247001499370e-01, -2.84817495755985104766e-02,
           -5.77027029648944159157e-03, -2.37630166566501626084e-05]
_ERF_QQ = [0.0, 3.97917223959155352819e-01, 6.50222499887672944485e-02,
           5.08130628187576562776e-03, 1.32494738004321644526e-04, -3.96022827877536812320e-06]
_ERF_PA = [-2.36211856075265944077e-03, 4.14856118683748331666e-01, -3.72207876035701323847e-01,
           3.18346619901161753674e-01, -1.10894694282396677476e-01, 3.54783043256182359371e-02,
           -2.16637559486879084300e-03]
_ERF_QA = [0.0, 1.06420880400844228286e-01, 5.40397917702171048937e-01,
           7.18286544141962662868e-02, 1.26171219808761642112e-01, 1.36370839120290507362e-02,
           1.19844998467991074170e-02]
_ERF_RA = [-9.86494403484714822705e-03, -6.93858572707181764372e-01, -1.05586262253232909814e+01,
           -6.23753324503260060396e+01, -1.62396669462573470355e+02, -1.84605092906711035994e+02,
           -8.12874355063065934246e+01, -9.81432934416914548592e+00]
_ERF_SA = [0.0, 1.96512716674392571292e+01, 1.37657754143519042600e+02,
           4.34565877475229228821e+02, 6.45387271733267880336e+02, 4.29008140027567833386e+02,
           1.08635005541779435134e+02, 6.57024977031928170135e+00, -6.04244152148580987438e-02]
_ERF_RB = [-9.86494292470009928597e-03, -7.99283237680523006574e-01, -1.77579549177547519889e+01,
           -1.60636384855821916062e+02, -6.37566443368389627722e+02, -1.02509513161107724954e+03,
           -4.83519191608651397019e+02]
_ERF_SB = [0.0, 3.03380607434824582924e+01, 3.25792512996573918826e+02,
           1.53672958608443695994e+03, 3.19985821950859553908e+03, 2.55305040643316442583e+03,
           4.74528541206955367215e+02, -2.24409524465858183362e+01]


def _glibc_exp(x):
  """glibc's exp (`__exp_fma`): pow's exp without the tail and sign."""
  zero = lax.full_like(x, 0)
  out = _pow_exp(x, zero, lax.full_like(x, 0, _U64))
  return lax.select(lax.ne(x, x), x, out)


def _glibc_erf(x):
  """glibc's erf: x + x R/S(x**2) below 0.84375, erx + P/Q(|x| - 1) below 1.25, else
  1 - exp(-z*z - 0.5625) exp((z - x)(z + x) + R/S(1/x**2)) / x (z: x with its low 32 bits
  cleared), 1 from 6 on; the exp is glibc's."""
  c, sel, add, mul = _f64c, lax.select, lax.add, lax.mul
  x = _daz64(x)
  ax = lax.abs(x)
  neg = lax.lt(lax.bitcast_convert_type(x, dtypes.int64), np.int64(0))
  signed = lambda v: sel(neg, lax.neg(v), v)
  # |x| < 0.84375
  z = mul(x, x)
  pp, qq = [c(v) for v in _ERF_PP], [c(v) for v in _ERF_QQ]
  z2 = mul(z, z)
  z4 = mul(z2, z2)
  r = add(add(add(pp[0], mul(z, pp[1])), mul(z2, add(pp[2], mul(z, pp[3])))), mul(z4, pp[4]))
  s = add(add(add(c(1.0), mul(z, qq[1])), mul(z2, add(qq[2], mul(z, qq[3])))),
          mul(z4, add(qq[4], mul(z, qq[5]))))
  small = add(x, mul(x, lax.div(r, s)))
  efx = c(1.28379167095512586316e-01)
  tiny_x = sel(lax.lt(ax, c(2.0 ** -1015)),
               mul(c(0.0625), add(mul(c(16.0), x), mul(mul(c(16.0), efx), x))),
               add(x, mul(efx, x)))
  small = sel(lax.lt(ax, c(2.0 ** -28)), tiny_x, small)
  # 0.84375 <= |x| < 1.25

  def rational(s, p, q):
    """(p0 + s p1) + s2 (p2 + s p3) + ... over (1 + s q1) + s2 (q2 + s q3) + ..., pairwise."""
    s2 = mul(s, s)
    pw = [c(1.0), s2, mul(s2, s2), mul(mul(s2, s2), s2), mul(mul(s2, s2), mul(s2, s2))]
    pair = lambda k, cs: add(c(cs[k]), mul(s, c(cs[k + 1]))) if k + 1 < len(cs) else c(cs[k])
    num = functools.reduce(add, [mul(pw[j], pair(2 * j, p)) if j else pair(0, p)
                                 for j in range((len(p) + 1) // 2)])
    qs = [1.0] + q[1:]
    den = functools.reduce(add, [mul(pw[j], pair(2 * j, qs)) if j else pair(0, qs)
                                 for j in range((len(qs) + 1) // 2)])
    return num, den

  p, q = rational(lax.sub(ax, c(1.0)), _ERF_PA, _ERF_QA)
  erx = c(8.45062911510467529297e-01)
  mid = signed(add(erx, lax.div(p, q)))
  # 1.25 <= |x| < 6
  si = lax.div(c(1.0), mul(ax, ax))
  ra, sa = rational(si, _ERF_RA, _ERF_SA)
  rb, sb = rational(si, _ERF_RB, _ERF_SB)
  first = lax.lt(ax, c(1 / 0.35))
  rr, ss = sel(first, ra, rb), sel(first, sa, sb)
  zz = lax.bitcast_convert_type(lax.bitwise_and(lax.bitcast_convert_type(ax, _U64),
                                                np.uint64(0xFFFFFFFF00000000)), _F64)
  e = mul(_glibc_exp(lax.sub(mul(lax.neg(zz), zz), c(0.5625))),
          _glibc_exp(add(mul(lax.sub(zz, ax), add(zz, ax)), lax.div(rr, ss))))
  q_ = lax.div(e, ax)
  big = sel(neg, lax.sub(q_, c(1.0)), lax.sub(c(1.0), q_))
  big = sel(lax.ge(ax, c(6.0)), signed(lax.full_like(x, 1.0)), big)
  out = sel(lax.lt(ax, c(0.84375)), small, sel(lax.lt(ax, c(1.25)), mid, big))
  return sel(lax.ne(x, x), x, out)
