"""XLA:CPU's transcendental functions, bit for bit, for the samplers of ember.random
(`samplers` and the distribution modules beside this package): written with lax operations,
op for op as XLA:CPU computes them, so normal, exponential, gumbel, cauchy, weibull_min, ...
draw the same bits as JAX's in float32, float64 (x64), float16 and bfloat16. XLA's own
formulas are `_xla_*`, the glibc functions its code calls `_glibc_*` (with the same fused
multiply-adds). lax.log etc. stay as they are; only the samplers use these.

The package keeps the name of the module it was (xla_math.py): it is the namespace the
samplers import from. Its root (this module) holds what they call: `_erf`, `_exp`, `_log`,
`_log1p`, `_erf_inv`, `_tan` and `_pow` pick the formula for an operand's dtype and
differentiate as lax's functions do. The formulas live in one module per function family:
- `exp_log`: log, log1p and exp (float32: Eigen's `plog`/`pexp`, XLA's Cephes log1p;
  float64: glibc's log, XLA's log1p and Eigen's `pexp_double`);
- `erf`: erf and erf_inv (float32: XLA's rational erf; float64: glibc's erf and the exp it
  calls; Giles' erf_inv from chlo's decomposition in both);
- `tan`: glibc's tanf and tan;
- `pow`: glibc's powf and pow (pow's log and exp also serve glibc's exp in `erf`);
- `common`: what they share: dtype constants, constant makers, flush-to-zero, hex-float
  tables and table lookups.

float32 log, log1p, exp, erf and erf_inv are read off the machine code XLA:CPU emits for JAX
0.12 (Eigen's Cephes-style `plog`/`pexp` with LLVM-contracted fused multiply-adds; XLA's
Cephes rational log1p for small |x|; its rational erf; Giles' erf_inv polynomial from the
chlo decomposition; subnormals flushed to zero). float16/bfloat16 are computed by XLA in
float32 and rounded, which lax's functions already match.

XLA:CPU's float64 math (and float32 tan and pow): log, tan, pow, erf (and tanf, powf)
compile to calls of the C library's (glibc 2.36 on the reference machine: the FMA builds
`__log_fma` etc. that x86-64 CPUs with FMA select), rebuilt from glibc's source, its data
tables and its machine code (which multiply-adds GCC contracted); exp is Eigen's
Cephes-style `pexp` and log1p, erf_inv XLA's/chlo's formulas, as for float32. XLA:CPU runs
with denormals-are-zero and flush-to-zero, which the functions reproduce where it shows.
Table lookups are gathers of constant tables.
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.library.numpy.creation import asarray
from ember._src.library.numpy.scalar_types import result_type
from ember._src.library.numpy.shape import broadcast_arrays
from ember._src.library.numpy.ufuncs import power
from ember._src.library.random.xla_math.common import _F32, _cst
from ember._src.library.random.xla_math.erf import (
    _glibc_erf, _xla_erf_f32, _xla_erf_inv_f32, _xla_erf_inv_f64)
from ember._src.library.random.xla_math.exp_log import (
    _glibc_log, _xla_exp_f32, _xla_exp_f64, _xla_log1p_f32, _xla_log1p_f64, _xla_log_f32)
from ember._src.library.random.xla_math.pow import _glibc_pow, _xla_pow_f32
from ember._src.library.random.xla_math.tan import _glibc_tan, _glibc_tanf
from ember._src.transforms.custom_derivatives import custom_jvp


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
