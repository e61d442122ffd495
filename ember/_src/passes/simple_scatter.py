"""simple_scatter: a scatter that writes one window becomes a dynamic-update-slice (XLA's
ScatterExpander with kEliminateSimpleScatters).

`x.at[i].set(v)` lowers to a scatter with a single index vector. As a dynamic-update-slice
it is a fusion root that the CPU backend computes in place, writing the window only (a while
body updating its carry so costs O(window) per iteration, not O(size of x)), and algsimp can
then move a loop's batched-predicate select into the window
(`select(p, dynamic-update-slice(x, u, s), x)`).

    scatter(x, idx, upd), to_apply=c
      -> dynamic-update-slice(x, select(in_bounds, new, old), s...)
         old = dynamic-slice(x, s...), new = upd (c returns its update) or c's op(old, upd)

where s are the index vector's components at the dims it maps to (zero elsewhere) and
`in_bounds` says the whole window fits at s. Rewritten only when the indices hold one index
vector, the updates one window (every scatter dim of size 1), the window fits in x, there is
one operand and the combiner is `return update` or one binary op of (old, update).

Value-preserving: XLA's scatter (ember's reference: hlo/evaluator.py) skips a window not
fully in bounds and otherwise writes c(old, update) at the window's elements (one update
each: no duplicates). In bounds, dynamic-update-slice's clamping leaves s unchanged and it
writes exactly that; out of bounds it writes back `old`, read by dynamic-slice at the same
clamped start (same sizes, same clamping): x unchanged.
"""
from __future__ import annotations

import numpy as np

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo

# Combiners whose value is one op of (old, update) with the operand's dtype, as the backend's
# scatter kernel applies them element by element.
_COMBINERS = {"add", "subtract", "multiply", "and", "or", "xor"}


def _combiner(comp: hlo.Computation) -> str | None:
  """'set' when the update computation returns its update, the op of a one-op combiner
  op(old, update), else None."""
  params, root = comp.params, comp.root
  if len(params) != 2:
    return None
  if root is params[1]:
    return "set"
  if root.opcode in _COMBINERS and root.operands == params:
    return root.opcode
  return None


def _window_sizes(s: hlo.Instr) -> list[int] | None:
  """The sizes of the one window scatter `s` writes (operand rank), or None when it writes
  more than one window (or none)."""
  x, idx, upd = s.operands
  a = s.attrs
  ivd = a["index_vector_dim"]
  if any(n != 1 for d, n in enumerate(idx.shape.dims) if d != ivd):
    return None
  uwd = tuple(a["update_window_dims"])
  if any(n != 1 for d, n in enumerate(upd.shape.dims) if d not in uwd):
    return None
  inserted = set(a["inserted_window_dims"]) | set(a.get("input_batching_dims", ()))
  window = iter(upd.shape.dims[d] for d in uwd)
  sizes = [1 if d in inserted else next(window) for d in range(x.shape.rank)]
  if any(n > m for n, m in zip(sizes, x.shape.dims)) or 0 in sizes:
    return None
  return sizes


class _Builder:
  def __init__(self, comp: hlo.Computation, like: hlo.Instr):
    self.comp, self.like, self.out = comp, like, []

  def new(self, opcode: str, shape, operands, attrs=None) -> hlo.Instr:
    name = self.comp.module.unique_name(opcode) if self.comp.module else None
    instr = hlo.Instr(opcode, shape, operands, attrs, name=name, metadata=self.like.metadata)
    self.out.append(instr)
    return instr

  def constant(self, value, dtype) -> hlo.Instr:
    v = np.asarray(value, dtype)
    return self.new("constant", hlo.Shape(v.dtype, ()), [], {"value": v})

  def compare(self, x, y, direction) -> hlo.Instr:
    kind = "SIGNED" if np.dtype(x.dtype).kind == "i" else "UNSIGNED"
    return self.new("compare", hlo.Shape(np.dtype(np.bool_), ()), [x, y],
                    {"direction": direction, "compare_type": kind})


def _components(b: _Builder, idx: hlo.Instr, ivd: int) -> list[hlo.Instr]:
  """The index vector's components as scalars (every other dim of idx has size 1)."""
  n = idx.shape.dims[ivd] if ivd < idx.shape.rank else 1
  flat = b.new("reshape", hlo.Shape(idx.dtype, (n,)), [idx]) if idx.shape.dims != (n,) else idx
  out = []
  for j in range(n):
    one = b.new("slice", hlo.Shape(idx.dtype, (1,)), [flat],
                {"start": (j,), "limit": (j + 1,), "strides": (1,)}) if n > 1 else flat
    out.append(b.new("reshape", hlo.Shape(idx.dtype, ()), [one]))
  return out


def _in_bounds(b: _Builder, comps, dims, x_dims, sizes) -> hlo.Instr | None:
  """pred[]: every component within [0, dim - window size] (None: always true)."""
  pred = None
  for c, d in zip(comps, dims):
    dtype = np.dtype(c.dtype)
    tests = []
    if dtype.kind == "i":
      tests.append(b.compare(c, b.constant(0, dtype), "GE"))
    upper = x_dims[d] - sizes[d]
    if upper < np.iinfo(dtype).max:
      tests.append(b.compare(c, b.constant(upper, dtype), "LE"))
    for t in tests:
      pred = t if pred is None else b.new("and", t.shape, [pred, t])
  return pred


def _rewrite(comp: hlo.Computation, s: hlo.Instr) -> tuple[list, hlo.Instr] | None:
  """(new instructions, the dynamic-update-slice replacing scatter `s`) or None."""
  if len(s.operands) != 3 or not isinstance(s.shape, hlo.Shape) or len(s.called) != 1 or \
      not s.shape.rank or np.dtype(s.dtype) == dtypes.float0:   # (no elements to move)
    return None
  op = _combiner(s.called[0])
  sizes = _window_sizes(s)
  if op is None or sizes is None:
    return None
  x, idx, upd = s.operands
  a = s.attrs
  b = _Builder(comp, s)
  comps = _components(b, idx, a["index_vector_dim"])
  mapped = tuple(a["scatter_dims_to_operand_dims"])
  zero = None
  starts = []
  for d in range(x.shape.rank):
    if d in mapped:
      starts.append(comps[mapped.index(d)])
    else:
      zero = zero or b.constant(0, idx.dtype)
      starts.append(zero)
  wshape = hlo.Shape(x.dtype, tuple(sizes))
  new = upd if upd.shape.dims == wshape.dims else b.new("reshape", wshape, [upd])
  old = b.new("dynamic-slice", wshape, [x, *starts], {"sizes": tuple(sizes)})
  if op != "set":
    new = b.new(op, wshape, [old, new])
  pred = _in_bounds(b, comps, mapped, x.shape.dims, sizes)
  if pred is not None:
    wide = b.new("broadcast", hlo.Shape(np.dtype(np.bool_), wshape.dims), [pred],
                 {"dimensions": ()})
    new = b.new("select", wshape, [wide, new, old])
  dus = b.new("dynamic-update-slice", x.shape, [x, new, *starts])
  return b.out, dus


def simplify_computation(comp: hlo.Computation) -> bool:
  subst: dict[int, hlo.Instr] = {}
  out: list[hlo.Instr] = []
  for instr in comp.instrs:
    instr.operands = [subst.get(o.id, o) for o in instr.operands]
    done = _rewrite(comp, instr) if instr.opcode == "scatter" else None
    if done is None:
      out.append(instr)
      continue
    out.extend(done[0])
    subst[instr.id] = done[1]
  if not subst:
    return False
  comp.instrs = out
  comp.root = subst.get(comp.root.id, comp.root)
  comp.sort_and_prune()
  return True


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.computations:
    if not comp.is_fusion:
      simplify_computation(comp)
  return module
