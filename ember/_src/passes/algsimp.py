"""algsimp: value-preserving algebraic simplification (XLA's AlgebraicSimplifier, IEEE-safe part).

Rewrites, each giving bit-for-bit the value the original computes (exceptions noted):

  identities          x*1, 1*x, x/1, x**1, x+0, 0+x, x-0, x|0, 0|x, x^0, x<<0, x>>0,
                      x&~0, ~0&x  ->  x         (not for complex *,/,**: the complex formula
                                                  turns an infinite part into NaN)
  involutions         negate(negate(x)) -> x; reverse(reverse(x)) -> x (same dimensions)
  no-op structure     transpose by the identity, reshape/broadcast to the operand's own shape,
                      slice of the whole array, pad by nothing, concatenate of one operand,
                      convert to the operand's own type, reverse of size-1 dims  ->  x
  compositions        transpose(transpose), reshape(reshape), broadcast(broadcast),
                      slice(slice)  ->  one op; reshape of a broadcast that only inserts
                      size-1 dims -> a reshape of its operand (the operand when the shapes
                      match: broadcast to [1000,1,64] then reshape to [1000,64])
  tuples              get-tuple-element(tuple(a, b, ...), i) -> the i-th operand
  select              select(all-true, a, b) -> a; select(all-false, a, b) -> b; select(p, a, a) -> a
  select of an update select(p, dynamic-update-slice(x, u, s...), x) -> dynamic-update-slice(x,
                      select(p_w, u, dynamic-slice(x, s...)), s...) and the mirror image, when
                      p is a broadcast whose dims the window covers whole (p_w: p at the
                      window; the batched predicate of a vmapped while loop updating its carry
                      by index): outside the window both keep x; inside, p_w picks what p picks
                      (a whole-covered dim's start is clamped to 0). The loop body then writes
                      one window in place instead of selecting over the whole carry.
  scalar broadcasts   an elementwise op whose operands are all broadcasts of scalars is computed
                      once on the scalars and broadcast; reshape/transpose/reverse/slice/broadcast
                      of a broadcast scalar is a broadcast of that scalar; a constant whose
                      elements are all the same bits becomes broadcast(scalar constant). The
                      same operation on the same value gives the same value: only the
                      redundant work goes (and constant folding then sees scalars).

The -0.0 caveat, as in XLA: `x + 0.0 -> x` and `x - (-0.0) -> x` differ for x = -0.0 (IEEE
gives -0.0 + 0.0 = +0.0). XLA folds them anyway (jit(lambda x: x + 0.0)(-0.0) is -0.0 in JAX
0.12) and so does ember; the value differs only in the sign of a zero, which compares equal.
`x + (-0.0)` and `x - 0.0` are exact for every x.

Never done: anything that reassociates or cancels, e.g. (x+y)-x -> y ((1e8+1)-1e8 is 0 in
float32, not 1), x*0 -> 0 (NaN*0 is NaN), x-x -> 0 (inf-inf is NaN), x/x -> 1, 0-x -> -x
(0-0 is +0, -0 is -0).

Replaced instructions lose their users; the dead ones are removed by `dce`. Fusion
computations are left alone (their roots must stay computing ops).
"""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo

# opcode -> the constant that leaves the other operand unchanged (on the right / left).
_RIGHT_IDENTITY = {"add": 0, "subtract": 0, "multiply": 1, "divide": 1, "power": 1,
                   "or": 0, "xor": 0, "shift-left": 0, "shift-right-arithmetic": 0,
                   "shift-right-logical": 0, "and": -1}
_LEFT_IDENTITY = {"add": 0, "multiply": 1, "or": 0, "xor": 0, "and": -1}
_NOT_FOR_COMPLEX = {"multiply", "divide", "power"}
# Structural ops that map each output element to one operand element: of a broadcast scalar,
# they are a broadcast of it.
_INDEX_MAPS = {"reshape", "transpose", "reverse", "slice", "broadcast"}
# Ops whose splat-ness passes through (same value everywhere in, same value everywhere out).
_SPLAT_PRESERVING = _INDEX_MAPS | {"copy"}


def _splat(i: hlo.Instr):
  """The one value all elements of `i` have, if `i` is a constant (seen through broadcasts and
  other index maps) with equal elements; else None. -0.0 and 0.0 count as equal; NaN never."""
  while i.opcode in _SPLAT_PRESERVING and i.operands:
    i = i.operands[0]
  if i.opcode != "constant":
    return None
  v = np.asarray(i.attrs["value"])
  if v.size == 0 or v.dtype.kind == "V":
    return None
  first = v.reshape(-1)[0]
  return first if bool(np.all(v == first)) else None


def _is_identity(i: hlo.Instr, value, dtype) -> bool:
  s = _splat(i)
  if s is None:
    return False
  if value == -1:  # `and`: all bits set
    return bool(s) if np.dtype(dtype) == np.bool_ else int(s) == int(np.array(-1).astype(dtype))
  return bool(s == value)


def _is_scalar_broadcast(i: hlo.Instr) -> bool:
  return i.opcode == "broadcast" and i.operands[0].shape.rank == 0


class _Rewriter:
  """Builds replacement instructions: named by the module, with the rewritten op's metadata,
  placed (in `out`) after their operands."""

  def __init__(self, comp: hlo.Computation):
    self.comp, self.out = comp, []

  def new(self, like: hlo.Instr, opcode: str, shape, operands, attrs=None) -> hlo.Instr:
    base = like.name.split(".")[0] if opcode == like.opcode else opcode
    name = self.comp.module.unique_name(base) if self.comp.module else None
    instr = hlo.Instr(opcode, shape, operands, attrs, name=name, metadata=like.metadata)
    self.out.append(instr)
    return instr

  def broadcast(self, like: hlo.Instr, scalar: hlo.Instr) -> hlo.Instr:
    return self.new(like, "broadcast", like.shape, [scalar], {"dimensions": ()})


# --------------------------------------------------------------------------------------
# Rules: (instr, rewriter) -> replacement or None. Operands are already simplified.
# --------------------------------------------------------------------------------------


def _elementwise(i, rw):
  op = i.opcode
  if op in _RIGHT_IDENTITY and len(i.operands) == 2:
    a, b = i.operands
    if not (op in _NOT_FOR_COMPLEX and np.dtype(i.dtype).kind == "c"):
      if a.shape == i.shape and _is_identity(b, _RIGHT_IDENTITY[op], i.dtype):
        return a
      if op in _LEFT_IDENTITY and b.shape == i.shape and _is_identity(a, _LEFT_IDENTITY[op], i.dtype):
        return b
  if op == "negate" and i.operands[0].opcode == "negate":
    return i.operands[0].operands[0]
  if op == "convert" and i.operands[0].shape == i.shape:
    return i.operands[0]
  if op == "select":
    p, a, b = i.operands
    if a is b and a.shape == i.shape:
      return a
    s = _splat(p)
    if s is not None:
      chosen = a if bool(s) else b
      if chosen.shape == i.shape:
        return chosen
    return _select_of_update(i, rw)
  if i.shape.rank and i.operands and all(_is_scalar_broadcast(o) for o in i.operands):
    scalar = rw.new(i, op, hlo.Shape(i.dtype, ()), [o.operands[0] for o in i.operands], i.attrs)
    return rw.broadcast(i, scalar)
  return None


def _window_pred(p: hlo.Instr, x: hlo.Instr, u: hlo.Instr, rw, like) -> hlo.Instr | None:
  """Predicate `p` (a select's over `x`'s shape) at the elements of update window `u`, when
  it is a broadcast that is the same at every window position (its dims covered whole)."""
  if p.opcode != "broadcast" or p.shape.dims != x.shape.dims:
    return None
  dims = tuple(p.attrs["dimensions"])
  if any(u.shape.dims[d] != x.shape.dims[d] for d in dims):
    return None
  return rw.new(like, "broadcast", hlo.Shape(p.dtype, u.shape.dims), [p.operands[0]],
                {"dimensions": dims})


def _select_of_update(i, rw):
  """select(p, dynamic-update-slice(x, u, s...), x) (or its mirror) -> the select moved into
  the update window (see the module docstring)."""
  p, a, b = i.operands
  for update_first, d, x in ((True, a, b), (False, b, a)):
    if d.opcode != "dynamic-update-slice" or d.operands[0] is not x or d.shape != i.shape or \
        np.dtype(i.dtype) == dtypes.float0:
      continue
    u, starts = d.operands[1], d.operands[2:]
    pw = _window_pred(p, x, u, rw, i)
    if pw is None:
      return None
    old = rw.new(i, "dynamic-slice", u.shape, [x, *starts], {"sizes": u.shape.dims})
    sel = rw.new(i, "select", u.shape, [pw, u, old] if update_first else [pw, old, u])
    return rw.new(i, "dynamic-update-slice", i.shape, [x, sel, *starts])
  return None


def _transpose(i, rw):
  (x,) = i.operands
  perm = tuple(i.attrs["dimensions"])
  if perm == tuple(range(len(perm))) and x.shape == i.shape:
    return x
  if x.opcode == "transpose":   # output dim k = x dim perm[k] = inner operand dim inner[perm[k]]
    inner = x.attrs["dimensions"]
    composed = tuple(inner[p] for p in perm)
    y = x.operands[0]
    if composed == tuple(range(len(composed))):
      return y
    return rw.new(i, "transpose", i.shape, [y], {"dimensions": composed})
  return None


def _reshape(i, rw):
  (x,) = i.operands
  if x.shape == i.shape:
    return x
  if x.opcode == "reshape" or _inserts_unit_dims(x):
    # row-major reshapes compose (only the element order matters), and a broadcast that only
    # inserts size-1 dims is such a reshape: broadcast_in_dim to [1000,1,64] then reshape to
    # [1000,64] is the operand itself
    y = x.operands[0]
    return y if y.shape == i.shape else rw.new(i, "reshape", i.shape, [y])
  return None


def _inserts_unit_dims(b: hlo.Instr) -> bool:
  """A broadcast whose output is its operand with size-1 dims inserted (same elements, same
  row-major order)."""
  if b.opcode != "broadcast":
    return False
  dims = tuple(b.attrs["dimensions"])
  x = b.operands[0]
  return list(dims) == sorted(dims) and len(set(dims)) == len(dims) and \
      x.shape.size == b.shape.size and \
      all(b.shape.dims[d] == n for d, n in zip(dims, x.shape.dims))


def _broadcast(i, rw):
  (x,) = i.operands
  dims = tuple(i.attrs["dimensions"])
  if x.shape == i.shape and dims == tuple(range(x.shape.rank)):
    return x
  if x.opcode == "broadcast":   # y dim k -> x dim inner[k] -> output dim dims[inner[k]]
    inner = x.attrs["dimensions"]
    return rw.new(i, "broadcast", i.shape, [x.operands[0]],
                  {"dimensions": tuple(dims[k] for k in inner)})
  return None


def _slice(i, rw):
  (x,) = i.operands
  start = tuple(i.attrs["start"])
  strides = tuple(i.attrs.get("strides") or (1,) * len(start))
  if x.shape == i.shape and all(s == 0 for s in start) and all(st == 1 for st in strides):
    return x
  if x.opcode == "slice":       # element k of i is element start+k*stride of x
    s0, st0 = tuple(x.attrs["start"]), tuple(x.attrs.get("strides") or (1,) * len(start))
    new_start = tuple(a + b * c for a, b, c in zip(s0, start, st0))
    new_strides = tuple(a * b for a, b in zip(st0, strides))
    new_limit = tuple(s + (n - 1) * st + 1 if n else s
                      for s, n, st in zip(new_start, i.shape.dims, new_strides))
    return rw.new(i, "slice", i.shape, [x.operands[0]],
                  {"start": new_start, "limit": new_limit, "strides": new_strides})
  return None


def _reverse(i, rw):
  (x,) = i.operands
  dims = {d for d in i.attrs["dimensions"] if i.shape.dims[d] > 1}
  if not dims:
    return x
  if x.opcode == "reverse":
    inner = {d for d in x.attrs["dimensions"] if x.shape.dims[d] > 1}
    if inner == dims:
      return x.operands[0]
  return None


def _concatenate(i, rw):
  d = i.attrs["dimension"]
  ops = [o for o in i.operands if o.shape.dims[d] > 0]
  if len(ops) == 1 and ops[0].shape == i.shape:
    return ops[0]
  if 0 < len(ops) < len(i.operands):
    return rw.new(i, "concatenate", i.shape, ops, i.attrs)
  return None


def _pad(i, rw):
  x = i.operands[0]
  a = i.attrs
  if not any(a["low"]) and not any(a["high"]) and not any(a["interior"]) and x.shape == i.shape:
    return x
  return None


def _get_tuple_element(i, rw):
  t = i.operands[0]
  if t.opcode == "tuple":
    return t.operands[i.attrs["index"]]
  return None


def _constant(i, rw):
  """A constant with every element the same bits -> broadcast(scalar constant)."""
  v = np.asarray(i.attrs["value"])
  if v.ndim == 0 or v.size < 2 or v.dtype.kind == "V":
    return None
  flat = np.ascontiguousarray(v).reshape(-1)
  as_bytes = flat.view(np.uint8).reshape(flat.size, -1)
  if not (as_bytes == as_bytes[0]).all():
    return None
  scalar = rw.new(i, "constant", hlo.Shape(i.dtype, ()), [], {"value": flat[0:1].reshape(())})
  return rw.broadcast(i, scalar)


_RULES = {"transpose": _transpose, "reshape": _reshape, "broadcast": _broadcast, "slice": _slice,
          "reverse": _reverse, "concatenate": _concatenate, "pad": _pad,
          "get-tuple-element": _get_tuple_element, "constant": _constant}


def _rule(i: hlo.Instr):
  if i.opcode in _RULES:
    return _RULES[i.opcode]
  return _elementwise if i.opcode in hlo.ELEMENTWISE else None


def _index_map_of_scalar(i, rw):
  """reshape/transpose/reverse/slice/broadcast of broadcast(scalar) -> broadcast(scalar)."""
  if i.opcode in _INDEX_MAPS and _is_scalar_broadcast(i.operands[0]) and \
      i.dtype == i.operands[0].dtype:
    return rw.broadcast(i, i.operands[0].operands[0])
  return None


def simplify_computation(comp: hlo.Computation, max_rounds: int = 8) -> bool:
  """Simplify `comp` in place until nothing changes; returns whether anything did."""
  changed_any = False
  for _ in range(max_rounds):
    changed = False
    subst: dict[int, hlo.Instr] = {}
    rw = _Rewriter(comp)
    for instr in comp.instrs:
      instr.operands = [subst.get(o.id, o) for o in instr.operands]
      rw.out.append(instr)
      current = instr
      for _ in range(16):     # re-simplify what a rule produced (bounded: rules shrink)
        rule = _rule(current)
        new = rule(current, rw) if rule else None
        if new is None and current.opcode in _INDEX_MAPS and current.opcode != "broadcast":
          new = _index_map_of_scalar(current, rw)
        if new is None or new is current:
          break
        current = new
      if current is not instr:
        subst[instr.id] = current
        changed = True
    comp.instrs = rw.out
    comp.root = subst.get(comp.root.id, comp.root)
    if not changed:
      break
    changed_any = True
    comp.sort_and_prune()
  return changed_any


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.computations:
    if not comp.is_fusion:
      simplify_computation(comp)
  return module
