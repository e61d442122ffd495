"""Fusion: group the entry computation's array ops into kernels (`fusion` instructions).

What it fuses. Producer-consumer fusion, walking the entry computation from its root to its
parameters (reverse topological order). Every op that computes array elements (hlo.ELEMENTWISE,
broadcast, reshape, transpose, reverse, slice, dynamic-slice, concatenate, pad, iota, scalar
constants, gather, reduce, reduce-window, get-tuple-element of a variadic reduce or
reduce-window) either joins the fusion(s)
of its consumers or becomes the root of a fusion of its own:

* a producer whose consumers all sit in ONE fusion moves into it (a reduce then makes that
  fusion kInput: `sqrt(sum((X[:,None]-Y[None])**2, -1))` is one kernel whose loop runs over
  the [N, M] output and whose reduce is an inner loop: the [N, M, d] difference never exists);
* a CHEAP producer (arithmetic, compare/select, broadcast, iota, slices, transposes, ...)
  used by several fusions is duplicated into each of them, unless it has to be materialized
  anyway (it is an output or feeds a non-fusible op), in which case the consumers read its
  buffer; broadcasts, iotas and scalar constants are always duplicated (reading their operand
  is cheaper than reading their result);
* an EXPENSIVE producer (`is_expensive`: transcendentals, integer division, remainder,
  reduce, reduce-window, gather; a float division that one fusion would evaluate more than
  once per element, as a window op re-reading it: `_costly_reread`)
  is never recomputed: it fuses only when it has a single consuming fusion that evaluates each
  of its elements at most once; used by several fusions it becomes its own fusion and is
  written to memory once. The count follows the CPU emitter (`symbolic_count`): a value whose
  index, through broadcasts, transposes, size-1 reshapes and elementwise ops, does not involve
  the fusion's inner loops is computed once per iteration of the loops it does involve (the
  emitter hoists it), so softmax's row max read through a broadcast by `x - max` counts once
  per element and fuses; where the model does not apply (slices, pads, gathers on the path)
  `read_factor` counts. An expensive value of the output's rank read at several minor
  positions of the same row (softmax's exp(x - max), read by the row sum and the division)
  is computed once per row into a row buffer by the emitter (`row_cached`): it counts once.
  Softmax, logsumexp and layernorm therefore come out as one kernel each.
* duplication is bounded (`_sites_in`, `_Cones`, `_duplication_pays`): a cheap producer
  that one fusion would emit at several places (each a different index: 100 slices of one
  array) joins it only while sites x the code it pulls in stays within MAX_DUPLICATED_CODE,
  and one used by k fusions is duplicated only while redoing its arithmetic k - 1 times
  costs less than a buffer round trip; otherwise it is materialized once (the image grid's
  threefry hash: one kernel writes its bits, the grid kernel copies them);
* a fusion stops growing at MAX_FUSED_INSTRS instructions (bounded kernel code size);
* a column reduction over COLUMN_REDUCE_MIN_ROWS+ rows never fuses into a consumer (the
  emitter vectorizes it only as a fusion root).

Before grouping, `transpose(dot(a, b), {1,0})` of a 2-D dot becomes `dot(b, a)`
(`_swap_transposed_dots`), so BLAS writes the layout the users read.

dot, sort, top-k, scatter, parameters, tuples, non-scalar constants (data, not code),
custom-call, while/conditional, `optimization-barrier` and scan-shaped reduce-windows
(hlo.scan_window: cumsum and friends, a sequential kernel of their own) stay outside;
nothing fuses through an optimization barrier, so the value before it is materialized.
dynamic-update-slice can be the root of a fusion but never fuses into a consumer, and an op
reading the buffer it updates (other than at the window: `_reads_updated_buffer`) does not
fuse into it, so it stays in place. Within a fusion the emitter computes each
instruction once per index it is evaluated at (an elementwise op used twice at the same index
is one value); `_count_in` models exactly that.

Naming follows XLA: `%fusion`, `%fusion.1`, ... calling `%fused_computation`, ... (parameters
`param_0`, `param_1.1`, ...); a fusion of a single op is `%wrapped_<op>` calling
`%wrapped_<op>_computation`. A fusion takes its root's metadata; kind is kInput when it
contains a reduce, else kLoop. With `fusion` in the flags' `disable_passes`, `run` only wraps
every op in its own fusion (`wrap_lone_ops`), as XLA does, so the backend contract holds.

Why it is value-preserving: a fused computation evaluates exactly the original instructions
(cloned with their attributes) on exactly the original operands; only where values live
changes (registers instead of buffers). Duplicated producers compute the same value in each
copy; no instruction is reassociated or rewritten.
"""
from __future__ import annotations

import re

import numpy as np

from ember._src.hlo import graph as hlo

__all__ = ["run", "wrap_lone_ops", "is_expensive", "read_factor", "FUSIBLE", "operand_index",
           "column_reduce_root", "symbolic_count", "row_cached"]

# Ops that may live inside a fusion (get-tuple-element only of a reduce fused alongside).
FUSIBLE = hlo.ELEMENTWISE | {
    "broadcast", "reshape", "transpose", "reverse", "slice", "dynamic-slice", "concatenate",
    "pad", "iota", "constant", "gather", "reduce", "reduce-window", "get-tuple-element"}
# Ops that only move or generate elements (index arithmetic, loads): no per-element work.
INDEX_MAPS = frozenset({"broadcast", "reshape", "transpose", "reverse", "slice", "parameter",
                        "constant", "iota", "get-tuple-element"})
ROOT_ONLY = {"dynamic-update-slice"}          # a fusion root, never fused into a consumer
# Cheap producers whose result is larger than what they read: duplicate them even when the
# value is materialized for another user.
_GENERATORS = {"broadcast", "iota", "constant"}
MAX_FUSED_INSTRS = 400                         # keep a kernel's code size bounded


def _size(instr: hlo.Instr) -> int:
  s = instr.shape
  return s.size if isinstance(s, hlo.Shape) else max(e.size for e in s.elements)


def is_expensive(instr: hlo.Instr) -> bool:
  """Ops too costly to recompute per consumer element (XLA's InstructionFusion::IsExpensive):
  transcendentals, reduce, gather, integer division and remainder (float division is one
  instruction; float remainder is an fmod loop, so it counts as expensive)."""
  op = instr.opcode
  if op in hlo.TRANSCENDENTAL or op in ("reduce", "reduce-window", "gather"):
    return True
  if op == "divide":
    return instr.dtype.kind not in "fc"
  return op == "remainder"


def _costly_reread(instr: hlo.Instr, counts) -> bool:
  """A float division that a fusion would evaluate more than once per element (a 3x3
  average pool's `x / n` fused into the windowed sum of its gradient: nine divisions per
  output, slower than reading a materialized quotient): treated as expensive there."""
  return instr.opcode == "divide" and instr.dtype.kind in "fc" and any(c > 1 for c in counts)


def read_factor(user: hlo.Instr, k: int) -> tuple[float, bool]:
  """How `user` reads its operand k, as (reads per operand element when every element of
  `user` is evaluated once, same_index). same_index: element i of the user reads element i of
  the operand (elementwise ops on equal shapes, get-tuple-element), so a fusion evaluating
  both at the same index computes the operand once."""
  o = user.operands[k]
  op = user.opcode
  n_out, n_in = _size(user), _size(o)
  ratio = n_out / n_in if n_in else 0.0          # every output element reads one element
  if op == "get-tuple-element" or (op in hlo.ELEMENTWISE and o.shape.dims == user.shape.dims):
    return 1.0, True
  if op == "reduce":                             # inputs once; the init once per output
    return (1.0 if k < len(user.operands) // 2 else ratio), False
  if op == "reduce-window" and hlo.scan_window(user):   # a scan reads each element once
    return (1.0 if k == 0 else ratio), False
  if op == "reduce-window":                      # each window's elements; the init per output
    window = float(np.prod(user.attrs["window_dimensions"]))
    return (ratio * window if k < len(user.operands) // 2 else ratio), False
  if op in ("reshape", "transpose", "reverse", "concatenate") or (
      op == "dynamic-update-slice" and k < 2):
    return 1.0, False
  if op == "pad":                                # operand at most once; the value per pad
    return (min(1.0, ratio) if k == 0 else float(max(n_out - _size(user.operands[0]), 0))), False
  if op == "dynamic-slice" and k >= 1 or op == "dynamic-update-slice":
    return float(n_out), False                   # start indices: read for every element
  if op == "gather" and k == 1:                  # each index vector serves one slice
    ivd = user.attrs["index_vector_dim"]
    vec = o.dims[ivd] if ivd < o.shape.rank else 1
    return n_out / max(n_in // vec if vec else 0, 1), False
  return ratio, False                            # broadcast, slice, dynamic-slice, gather


# --------------------------------------------------------------------------------------
# Symbolic indices: the model of the CPU emitter's loop nests and invariant hoisting
# --------------------------------------------------------------------------------------

def operand_index(user: hlo.Instr, k: int, index: tuple, zero) -> tuple | None:
  """The index at which `user`, evaluated at `index`, reads operand k, when it is a pure
  selection of `index`'s entries (or `zero` for size-1 dims): elementwise ops, broadcast,
  transpose, get-tuple-element and reshapes that only add or drop size-1 dims. None for
  maps that compute new index values (slice, pad, concatenate, gather, general reshapes)
  and for reduce (its caller names the reduction loops). The CPU emitter maps indices
  exactly so (backends/cpu/codegen/index_maps.py), which is what makes a value computed at
  an index that does not involve an inner loop variable reusable across that loop: see
  `symbolic_count`."""
  op = user.opcode
  o = user.operands[k]
  if op == "get-tuple-element":
    return index
  if op in hlo.ELEMENTWISE:
    if op == "bitcast-convert" and np.dtype(o.dtype).itemsize != np.dtype(user.dtype).itemsize:
      return None
    return index if o.shape.rank else ()
  if op == "broadcast":
    dims = user.attrs["dimensions"]
    return tuple(zero if o.shape.dims[j] == 1 else index[d] for j, d in enumerate(dims))
  if op == "transpose":
    src = [None] * len(index)
    for i, p in enumerate(user.attrs["dimensions"]):
      src[p] = index[i]
    return tuple(src)
  if op == "reshape":
    src, dst = o.shape.dims, user.shape.dims
    big_src = [d for d, n in enumerate(src) if n != 1]
    big_dst = [d for d, n in enumerate(dst) if n != 1]
    if 0 in src or [src[d] for d in big_src] != [dst[d] for d in big_dst]:
      return None
    out = [zero] * len(src)
    for s, d in zip(big_src, big_dst):
      out[s] = index[d]
    return tuple(out)
  return None


def column_reduce_root(root: hlo.Instr) -> bool:
  """A reduce root with a simple combiner keeping its input's minor dim: the emitter runs it
  as a column reduction (accumulating into the output, the minor dim innermost)."""
  if root.opcode != "reduce" or not root.called:
    return False
  comp = root.called[0]
  n = len(root.operands) // 2
  x = root.operands[0]
  rdims = set(root.attrs["dimensions"])
  rank = x.shape.rank
  simple = n == 1 and len(comp.params) == 2 and len(comp.root.operands) == 2 and \
      comp.root.opcode in ("add", "multiply", "maximum", "minimum", "and", "or") and \
      {o.id for o in comp.root.operands} == {q.id for q in comp.params}
  return (simple or n > 1) and rank >= 2 and (rank - 1) not in rdims and bool(rdims) \
      and 0 not in x.shape.dims


ROW_CACHE_MAX = 8192   # elements of a row-cached value (fusion.row_cached): 32 KB of f32


def _reaching(root: hlo.Instr, members: set[int], target: hlo.Instr) -> dict[int, bool]:
  """id -> whether `target` is reachable from that instruction through fusion members
  (iterative post-order: fusions of thousands of instructions exceed Python's recursion)."""
  reach: dict[int, bool] = {}
  stack = [(root, False)]
  while stack:
    x, expanded = stack.pop()
    if x.id in reach and not expanded:
      continue
    if x is target or x.id not in members:
      reach[x.id] = x is target
    elif not expanded:
      reach[x.id] = False          # provisional, as the recursive form had it
      stack.append((x, True))
      stack.extend((o, False) for o in x.operands if o.id not in reach)
    else:
      reach[x.id] = any(reach.get(o.id, False) for o in x.operands)
  return reach


def symbolic_count(root: hlo.Instr, members: set[int], target: hlo.Instr) -> float | None:
  """Evaluations per element of `target` in the fusion of `members` rooted at `root`, as the
  CPU emitter computes them: loops over the root's dims (outermost first), a reduce's loops
  nested where the reduce is computed, and every value computed once per iteration of the
  innermost loop its index involves (the emitter hoists values whose index does not involve
  the inner loops: softmax's row max is computed once per row, not once per element), or
  once per element when it is row-cached (`row_cached`). None when a path from the root to
  `target` maps indices other than by `operand_index` (the caller then uses `read_factor`)."""
  found = _sites(root, members, target)
  if found is None:
    return None
  sites, extent, syms = found
  if _row_cacheable(target, sites, syms):
    return 1.0
  total = 0.0
  for index, chain in sites:
    used = set(index)
    total += float(np.prod([extent[c] for c in chain if c not in used], dtype=np.float64))
  return total


def row_cached(root: hlo.Instr, members: set[int], target: hlo.Instr) -> bool:
  """Whether the CPU emitter computes the expensive `target` once per row of the output into
  a row buffer: it has the output's shape and is read at several minor positions of the same
  row (softmax's exp(x - max), read by the row sum and by the division), each read then
  loads the buffer (in L1) instead of recomputing or materializing it in memory."""
  if not is_expensive(target):
    return False
  found = _sites(root, members, target)
  return found is not None and _row_cacheable(target, found[0], found[2])


def _row_cacheable(target: hlo.Instr, sites: set, syms: tuple) -> bool:
  """Read at >= 2 places, each in the same row (the outer loop variables in order, computed
  inside the loops over the row's outer dims) at some minor position (the innermost loop or
  a reduce's loop), with the output's rank: the emitter then fills a row buffer once per row."""
  n = len(syms)
  outer = syms[:-1]
  shape = target.shape
  if n < 2 or len(sites) < 2 or not isinstance(shape, hlo.Shape) or shape.rank != n or \
      np.dtype(shape.dtype).kind not in "biuf" or shape.dims[-1] > ROW_CACHE_MAX:
    return False
  return all(index[:-1] == outer and chain[:n - 1] == outer and index[-1] is not None
             and index[-1] not in outer for index, chain in sites)


def _sites(root: hlo.Instr, members: set[int], target: hlo.Instr):
  """(the (index, chain) pairs at which the fusion evaluates `target`, loop extents, the
  root's loop symbols), or None where the model does not apply (see symbolic_count)."""
  if column_reduce_root(root):
    return None
  shape = root.shape
  dims = tuple(shape.dims if isinstance(shape, hlo.Shape) else shape.elements[0].dims)
  if 0 in dims:
    return None
  n = len(dims)
  syms = tuple(("L", k) for k in range(n))
  extent = {("L", k): d for k, d in enumerate(dims)}
  reach = _reaching(root, members, target)   # only paths to target matter
  reaches = lambda x: reach.get(x.id, False)
  if not reaches(root):
    return None
  sites: set = set()
  seen: set = set()
  stack = [(root, syms, syms)]
  while stack:
    x, index, chain = stack.pop()
    if (x.id, index, chain) in seen:
      continue
    seen.add((x.id, index, chain))
    level = _emission_level(index, chain)
    if level < 0 and n:    # computed before the outer loop: once per call, so once per
      return None          # thread when the runtime splits it (read_factor decides)
    chain = chain[:level + 1]        # where x is computed; its operands are read there
    if x is target:
      sites.add((index, chain))
      continue
    for k, o in enumerate(x.operands):
      if not reaches(o):
        continue
      if x.opcode == "reduce":
        m = len(x.operands) // 2
        if k >= m:
          stack.append((o, (), chain))
          continue
        rdims = sorted(x.attrs["dimensions"])
        loops = tuple(("R", x.id, d, len(rdims)) for d in rdims)
        extent.update((s, o.shape.dims[s[2]]) for s in loops)
        kept = iter(index)
        full = tuple(loops[rdims.index(d)] if d in rdims else next(kept)
                     for d in range(o.shape.rank))
        stack.append((o, full, chain + loops))
        continue
      oi = operand_index(x, k, index, None)
      if oi is None:
        return None
      stack.append((o, oi, chain))
  return sites, extent, syms


def _emission_level(index: tuple, chain: tuple) -> int:
  """The chain position of the innermost loop whose variable `index` uses: where the
  emitter computes the value. Between a reduce's own loops the emitter only hoists above
  all of them, so a value using any of them is computed in the innermost one."""
  pos = max((chain.index(s) for s in index if s is not None and s in chain), default=-1)
  if pos >= 0 and chain[pos][0] == "R":
    while pos + 1 < len(chain) and chain[pos + 1][0] == "R" and chain[pos + 1][1] == chain[pos][1]:
      pos += 1
  return pos


class _Group:
  """One future fusion: a root and the original instructions copied into it."""
  __slots__ = ("root", "members", "count", "sites")

  def __init__(self, root: hlo.Instr):
    self.root = root
    self.members: set[int] = {root.id}
    self.count: dict[int, float] = {root.id: 1.0}   # evaluations per element (_count_in)
    self.sites: dict[int, int] = {root.id: 1}       # places its code is emitted (_sites_in)


def _fusible(instr: hlo.Instr) -> bool:
  op = instr.opcode
  if op == "constant":
    return instr.shape.rank == 0               # larger constants stay data
  if op == "get-tuple-element":
    return instr.operands[0].opcode in ("reduce", "reduce-window")
  if hlo.scan_window(instr):   # its own kernel (the scan loop nest), never n windows of n
    return False
  return op in FUSIBLE or op in ROOT_ONLY


# A column reduction (minor dim kept) over at least this many rows stays a fusion root: the
# emitter vectorizes it only as a root (accumulating whole rows of columns); fused into an
# elementwise consumer (an SGD update `b - lr * sum(g, 0)`) it would run as one strided
# scalar loop per output element (measured 10x slower on f32[128,512] -> [512]).
COLUMN_REDUCE_MIN_ROWS = 16


def _column_reduce(i: hlo.Instr) -> bool:
  if i.opcode != "reduce" or len(i.operands) != 2 or not column_reduce_root(i):
    return False
  dims = i.operands[0].shape.dims
  return int(np.prod([dims[d] for d in i.attrs["dimensions"]])) >= COLUMN_REDUCE_MIN_ROWS


def _reads_updated_buffer(root: hlo.Instr, i: hlo.Instr) -> bool:
  """Whether `i` reads the buffer that fusion root `root`, a dynamic-update-slice, would
  update in place (its operand 0, a value computed outside the fusion) other than as the
  window's own elements (a dynamic-slice of the same starts and sizes): fused, it would
  make the kernel copy the whole buffer (as XLA, such a reader stays a fusion of its own,
  run before the update)."""
  if root.opcode != "dynamic-update-slice" or i is root:
    return False
  base = root.operands[0]
  if base not in i.operands or (_fusible(base) and base.opcode not in ROOT_ONLY):
    return False
  return not (i.opcode == "dynamic-slice" and i.operands[0] is base and
              base not in i.operands[1:] and i.operands[1:] == root.operands[2:] and
              tuple(i.attrs["sizes"]) == root.operands[1].shape.dims)


def _reads_in(group: _Group, p: hlo.Instr, users: list[hlo.Instr]) -> list:
  """(reader, operand position) of every read of `p` inside the fusion."""
  return [(u, k) for u in users if u.id in group.members
          for k, o in enumerate(u.operands) if o is p]


def _count_in(group: _Group, p: hlo.Instr, users: list[hlo.Instr]) -> float:
  """How many times the fusion evaluates each element of `p`: same-index reads share one
  evaluation (max), other reads add up."""
  same, other = 0.0, 0.0
  for u, k in _reads_in(group, p, users):
    f, ident = read_factor(u, k)
    if ident:
      same = max(same, group.count[u.id] * f)
    else:
      other += group.count[u.id] * f
  return same + other


def _sites_in(group: _Group, p: hlo.Instr, users: list[hlo.Instr]) -> int:
  """At how many places the emitter would generate `p`'s code in the fusion: once per
  distinct index it is evaluated at. Readers at their own index (elementwise ops of the
  same shape) share one site per site of theirs; every other read (a slice, a transpose,
  one operand position of a concatenate, a reduce's input) is a site of its own."""
  same, other = 0, 0
  for u, k in _reads_in(group, p, users):
    if read_factor(u, k)[1]:
      same = max(same, group.sites[u.id])
    else:
      other += group.sites[u.id]
  return same + other


# Duplication limits (a cheap producer recomputed instead of written once and read):
# - code: a producer emitted at several places in one fusion (100 slices of one array, each
#   a separate index computation) copies the code of everything it would pull in; at most
#   MAX_DUPLICATED_CODE instructions of copies (a kernel's size, MAX_FUSED_INSTRS);
# - work: a producer duplicated into k fusions does its arithmetic k times per element;
#   a buffer round trip (one write, k reads) costs about BYTES_PER_OP bytes of traffic
#   per arithmetic op saved (the CPU cost model's rates: ~0.05 ns per byte and per
#   vectorized op), so duplicating pays while (k - 1) * ops <= (k + 1) * itemsize.
MAX_DUPLICATED_CODE = 400
BYTES_PER_OP = 1.0


class _Cones:
  """Per instruction, what fusing it would pull in: the fusible instructions it reads
  through cheap fusible ops (stopping at expensive ops, which are never recomputed, and at
  everything that is not fusible), as bit sets over the entry's instruction order. `code`
  counts them all, `work` only those doing arithmetic (not INDEX_MAPS)."""

  def __init__(self, entry: hlo.Computation):
    self.pos = {i.id: n for n, i in enumerate(entry.instrs)}
    self.bits: dict[int, int] = {}
    self.arith = 0
    for n, i in enumerate(entry.instrs):
      if _fusible(i) and i.opcode not in INDEX_MAPS:
        self.arith |= 1 << n
    for i in entry.instrs:     # topological order: operands first
      b = 1 << self.pos[i.id]
      for o in i.operands:
        if _fusible(o) and not is_expensive(o) and o.opcode not in ROOT_ONLY:
          b |= self.bits[o.id]
      self.bits[i.id] = b

  def code(self, i: hlo.Instr) -> int:
    return self.bits[i.id].bit_count()

  def work(self, i: hlo.Instr) -> int:
    return (self.bits[i.id] & self.arith).bit_count()


def _duplication_pays(i: hlo.Instr, k: int, cones: _Cones) -> bool:
  """Whether computing the cheap `i` (and the cheap producers it pulls in) in each of k
  fusions costs less than writing it once and reading it k times (see BYTES_PER_OP)."""
  if k <= 1:
    return True
  itemsize = np.dtype(i.dtype).itemsize if isinstance(i.shape, hlo.Shape) else 4
  return (k - 1) * cones.work(i) * BYTES_PER_OP <= (k + 1) * itemsize


def _plan(entry: hlo.Computation, fuse: bool) -> tuple[list[_Group], set[int]]:
  """Decide the groups. Returns them (in no particular order) and the ids of original
  instructions that stay materialized at the entry level (group roots and non-fused ops)."""
  users = entry.users()
  groups: list[_Group] = []
  groups_of: dict[int, list[_Group]] = {}
  materialized: set[int] = {entry.root.id}
  external_user: set[int] = {entry.root.id}      # ids with a user outside every group

  def new_group(i: hlo.Instr):
    g = _Group(i)
    groups.append(g)
    groups_of.setdefault(i.id, []).append(g)

  def join(g: _Group, i: hlo.Instr, count: float):
    g.members.add(i.id)
    g.count[i.id] = count
    g.sites[i.id] = _sites_in(g, i, users.get(i.id, []))
    groups_of.setdefault(i.id, []).append(g)

  cones = _Cones(entry) if fuse else None

  def copies_fit(g: _Group, i: hlo.Instr) -> bool:
    """The code `i` pulls into g, emitted once per site, stays within MAX_DUPLICATED_CODE."""
    n = _sites_in(g, i, users.get(i.id, []))
    return n <= 1 or n * cones.code(i) <= MAX_DUPLICATED_CODE

  for i in reversed(entry.instrs):
    us = users.get(i.id, [])
    if not _fusible(i):
      materialized.add(i.id)
      external_user.update(o.id for o in i.operands)
      continue
    ext = i.id in external_user
    targets: list[_Group] = []
    for u in us:
      for g in groups_of.get(u.id, []):
        if g not in targets:
          targets.append(g)
    room = [g for g in targets if len(g.members) < MAX_FUSED_INSTRS and
            not _reads_updated_buffer(g.root, i)]
    counts = {id(g): _count_in(g, i, us) for g in room}
    if i.opcode in ROOT_ONLY or not (fuse or i.opcode == "constant"):
      chosen = []
    elif is_expensive(i) or _costly_reread(i, counts.values()):
      # moves into its only consumer, evaluated once per element
      ok = not ext and len(targets) == 1 and len(room) == 1 and not _column_reduce(i)
      if ok:
        g = room[0]
        sym = symbolic_count(g.root, g.members, i)
        ok = (counts[id(g)] if sym is None else sym) <= 1.0
        if sym is not None:
          counts[id(g)] = min(counts[id(g)], sym)
      chosen = room if ok else []
    elif i.opcode in _GENERATORS:
      chosen = room                # always duplicated: reading it costs more than making it
    else:
      room = [g for g in room if copies_fit(g, i)]
      if ext or len(room) < len(targets) or not _duplication_pays(i, len(room), cones):
        chosen = []                # materialized: consumers read its buffer
      else:
        chosen = room              # cheap: duplicated into every consuming fusion
    for g in chosen:
      join(g, i, counts[id(g)])
    if len(chosen) < len(targets) or ext:
      materialized.add(i.id)
      if i.opcode in ("constant", "get-tuple-element"):   # stay plain entry instructions
        external_user.update(o.id for o in i.operands)
      else:
        new_group(i)
  return groups, materialized


def _fix_tuple_reads(groups: list[_Group], by_id: dict[int, hlo.Instr], materialized: set[int]):
  """A get-tuple-element copied into a fusion whose reduce stayed outside reads the
  materialized element instead (a fusion parameter is never a tuple)."""
  for g in groups:
    for mid in list(g.members):
      m = by_id[mid]
      if m.opcode == "get-tuple-element" and m.operands[0].id not in g.members:
        g.members.discard(mid)
        materialized.add(mid)


_SUFFIX = re.compile(r"(\.\d+)+$")         # `add.3` -> a fresh `add.N` for the clone


def _op_label(op: str) -> str:
  return op.replace("-", "_")


def _build(module: hlo.Module, g: _Group, order: dict[int, int], by_id: dict[int, hlo.Instr],
           new_of: dict[int, hlo.Instr]) -> hlo.Instr:
  """Create the fused computation of `g` and return the fusion instruction (not yet added)."""
  members = sorted((by_id[m] for m in g.members), key=lambda i: order[i.id])
  computing = [m for m in members if m.opcode != "constant"] or members
  lone = len(computing) == 1
  label = _op_label(g.root.opcode)
  comp = module.new_computation(f"wrapped_{label}_computation" if lone else "fused_computation")
  comp.is_fusion = True
  clone: dict[int, hlo.Instr] = {}
  operands: list[hlo.Instr] = []
  param_of: dict[int, hlo.Instr] = {}

  def arg(o: hlo.Instr) -> hlo.Instr:
    if o.id in clone:
      return clone[o.id]
    if o.id not in param_of:
      if o.id not in new_of:
        raise AssertionError(f"fusion: operand %{o.name} of a fused op is not materialized")
      n = len(operands)
      operands.append(new_of[o.id])
      param_of[o.id] = comp.add(hlo.Instr("parameter", o.shape, attrs={"number": n},
                                          name=f"param_{n}"))
    return param_of[o.id]

  for m in members:
    c = hlo.Instr(m.opcode, m.shape, [arg(o) for o in m.operands], dict(m.attrs), list(m.called),
                  name=_SUFFIX.sub("", m.name), metadata=m.metadata)
    clone[m.id] = comp.add(c)
  comp.root = clone[g.root.id]
  kind = "kInput" if any(m.opcode == "reduce" for m in members) else "kLoop"
  return hlo.Instr("fusion", g.root.shape, operands, {"kind": kind}, [comp],
                   name=f"wrapped_{label}" if lone else "fusion", metadata=g.root.metadata)


def _rewrite(module: hlo.Module, fuse: bool) -> hlo.Module:
  entry = module.entry
  entry.sort_and_prune()
  groups, materialized = _plan(entry, fuse)
  by_id = {i.id: i for i in entry.instrs}
  order = {i.id: n for n, i in enumerate(entry.instrs)}
  _fix_tuple_reads(groups, by_id, materialized)
  root_group = {g.root.id: g for g in groups}
  new_of: dict[int, hlo.Instr] = {}
  instrs: list[hlo.Instr] = []
  for i in entry.instrs:
    if i.id not in materialized:
      continue
    if i.id in root_group:
      new = _build(module, root_group[i.id], order, by_id, new_of)
      new.name = module.unique_name(new.name)
    else:
      i.operands = [new_of[o.id] for o in i.operands]
      new = i
    new_of[i.id] = new
    instrs.append(new)
  entry.instrs = instrs
  entry.root = new_of[entry.root.id]
  entry.sort_and_prune()
  module.prune_computations()
  return module


def wrap_lone_ops(module: hlo.Module) -> hlo.Module:
  """Put every computing op of the entry in a fusion of its own (`%wrapped_<op>`), scalar
  constants included: what the backend runs when the fusion pass is disabled."""
  return _rewrite(module, fuse=False)


def _one_free_dim_each(dot: hlo.Instr) -> bool:
  """Whether each operand of a dot without batch dims has exactly one free dim: only then is
  the output's [lhs free, rhs free] transposed by swapping the operands. A scalar times a
  matrix (an outer product with no contraction, `einsum('ab,dc->cd')`) has all its free dims
  on one side: swapping the operands leaves the output untransposed."""
  return all(o.shape.rank - len(dot.attrs.get(k, ())) == 1 for o, k in
             zip(dot.operands, ("lhs_contracting_dims", "rhs_contracting_dims")))


def _swap_transposed_dots(entry: hlo.Computation) -> None:
  """`transpose(dot(a, b), {1,0})` -> `dot(b, a)` (XLA's algsimp does the same): the
  transposed product comes out of BLAS in the layout its users read (a backward pass's
  weight gradient dW = x.T @ delta, which the jaxpr computes as (delta.T @ x).T), instead of
  a fusion reading the dot's result through a transpose. Only 2-D dots without batch
  dimensions with one free dimension per side (`_one_free_dim_each`) whose only user is the
  transpose (it takes the dot's name);
  value-preserving: the same products summed in the same order. Lives here (before the
  grouping) so that the transpose never becomes part of a fusion."""
  users = entry.users()
  swapped = False
  for t in list(entry.instrs):
    d = t.operands[0] if t.opcode == "transpose" else None
    if d is None or d.opcode != "dot" or d.shape.rank != 2 or \
        tuple(t.attrs["dimensions"]) != (1, 0) or d.attrs.get("lhs_batch_dims") or \
        d.attrs.get("rhs_batch_dims") or d is entry.root or len(users.get(d.id, [])) != 1 or \
        not _one_free_dim_each(d):
      continue
    a = dict(d.attrs, lhs_contracting_dims=tuple(d.attrs.get("rhs_contracting_dims", ())),
             rhs_contracting_dims=tuple(d.attrs.get("lhs_contracting_dims", ())))
    new = hlo.Instr("dot", t.shape, [d.operands[1], d.operands[0]], a, name=d.name,
                    metadata=d.metadata)
    entry.instrs.insert(entry.instrs.index(t), new)
    entry.replace_all_uses(t, new)
    swapped = True
  if swapped:
    entry.sort_and_prune()


def run(module: hlo.Module, flags=None) -> hlo.Module:
  """The fusion pass (see the module docstring). Rewrites `module` in place and returns it."""
  disabled = getattr(flags, "disable_passes", ()) or ()
  if "fusion" not in disabled:
    _swap_transposed_dots(module.entry)
  return _rewrite(module, fuse="fusion" not in disabled)
