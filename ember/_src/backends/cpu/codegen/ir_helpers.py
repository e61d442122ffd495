"""IRBuilder utilities and values in registers. `IRHelpers`: i64 constants, intrinsic
calls, index arithmetic, row-major linearization, loops with carried values; the base of the
elemental emitter and of dot_kernels' and linalg_kernels' emitters. Then what the emitter and
the reductions share about element values: complex pairs flattened into (and rebuilt from)
the scalars that phis and loop-carried values hold, a select of either kind, and `Inner`,
the index of a loop not yet entered.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ember._src.backends.cpu.codegen.ir_types import I64, Cx


class IRHelpers:
  """Small utilities on `self.b` (an ir.IRBuilder): constants, intrinsics, loops."""
  b: ir.IRBuilder

  def i64(self, n: int) -> ir.Constant:
    c = self._i64_cache.get(n)
    if c is None:
      c = self._i64_cache[n] = ir.Constant(I64, n)
    return c

  def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
    module = self.b.module
    try:
      fn = module.get_global(name)
    except KeyError:
      fn = ir.Function(module, ir.FunctionType(ret, [a.type for a in args]), name)
    return self.b.call(fn, list(args))

  def add_idx(self, a, b):
    if isinstance(b, ir.Constant) and b.constant == 0:
      return a
    if isinstance(a, ir.Constant) and a.constant == 0:
      return b
    return self.b.add(a, b, flags=("nsw",))

  def mul_idx(self, a, n: int):
    if n == 1:
      return a
    if isinstance(a, ir.Constant):
      return self.i64(a.constant * n)
    return self.b.mul(a, self.i64(n), flags=("nsw", "nuw"))

  def linear(self, index: Sequence[ir.Value], dims: Sequence[int]) -> ir.Value:
    """Row-major linear offset of a multi-index (size-1 dims contribute nothing)."""
    lin, stride = self.i64(0), 1
    for i, d in reversed(list(zip(index, dims))):
      if d != 1:
        lin = self.add_idx(lin, self.mul_idx(i, stride))
      stride *= d
    return lin

  def delinear(self, lin: ir.Value, dims: Sequence[int]) -> list[ir.Value]:
    """The multi-index of a row-major linear offset."""
    out = []
    stride = int(np.prod(dims, dtype=np.int64)) if dims else 1
    for n, d in enumerate(dims):
      stride //= max(d, 1)
      if d == 1:
        out.append(self.i64(0))
        continue
      q = lin if stride == 1 else self.b.udiv(lin, self.i64(stride))
      if n > 0 and any(e != 1 for e in dims[:n]):
        q = self.b.urem(q, self.i64(d))
      out.append(q)
    return out

  def clamp_idx(self, v: ir.Value, lo: int, hi: int) -> ir.Value:
    b = self.b
    v = b.select(b.icmp_signed("<", v, self.i64(lo)), self.i64(lo), v)
    return b.select(b.icmp_signed(">", v, self.i64(hi)), self.i64(hi), v)

  def loop(self, lo: ir.Value, hi: ir.Value, carried: Sequence[ir.Value],
           body: Callable[[ir.Value, list], list]) -> list[ir.Value]:
    """`for i in [lo, hi)` with loop-carried values; returns their final values.
    `body(i, carried) -> new carried` may create blocks of its own."""
    b = self.b
    fn = b.function
    pre = b.block
    hdr = fn.append_basic_block("loop.hdr")
    bod = fn.append_basic_block("loop.body")
    ext = fn.append_basic_block("loop.exit")
    b.branch(hdr)
    b.position_at_end(hdr)
    i = b.phi(I64, name="i")
    i.add_incoming(lo, pre)
    phis = []
    for c in carried:
      p = b.phi(c.type)
      p.add_incoming(c, pre)
      phis.append(p)
    b.cbranch(b.icmp_signed("<", i, hi), bod, ext)
    b.position_at_end(bod)
    new = body(i, list(phis))
    nxt = b.add(i, self.i64(1), flags=("nsw", "nuw"))
    end = b.block
    i.add_incoming(nxt, end)
    for p, v in zip(phis, new):
      p.add_incoming(v, end)
    b.branch(hdr)
    b.position_at_end(ext)
    return list(phis)


class Inner:
  """A placeholder index value: the variable of a loop not yet entered (see `hoist`)."""
  __slots__ = ()


def _flatten_vals(vals) -> list[ir.Value]:
  out = []
  for v in vals:
    out.extend((v.re, v.im) if isinstance(v, Cx) else (v,))
  return out


def _unflatten_vals(flat: list, like) -> list:
  out, it = [], iter(flat)
  for v in like:
    out.append(Cx(next(it), next(it)) if isinstance(v, Cx) else next(it))
  return out


def _select_value(em, cond, a, b_):
  b = em.b
  if isinstance(a, Cx):
    return Cx(b.select(cond, a.re, b_.re), b.select(cond, a.im, b_.im))
  return b.select(cond, a, b_)
