"""Buffer assignment: where every value of the entry computation lives while it runs.

`assign_buffers(module, donated=None) -> BufferAssignment`. The API the backend uses:

* The schedule is `module.entry.instrs` in order (one thunk per kernel/dot/sort/copy/...);
  liveness is computed against that order, so the executable must run them in it.
* `BufferAssignment.slot(instr)` (or `.slots[instr.name]`) is the `Slot` of an array value, or
  a tuple of Slots for a tuple-shaped value (one per element). A `Slot(kind, index, offset, size)`:
    - `parameter`: argument `index` (the caller's array, read-only unless donated);
    - `constant`:  `constants[index]` (a `constant` instruction; its data is `attrs["value"]`);
    - `output`:    output buffer `index` (allocated by the runtime, returned to the caller);
                   temporaries computed in place into an output share its slot;
    - `temp`:      bytes [offset, offset+size) of one temp arena of `temp_size` bytes.
  `tuple`, `get-tuple-element` and `optimization-barrier` own no storage: their slots are the
  slots of the values they forward.
* `outputs[k]` is where output k ends up: kind `output` (index k), or kind `parameter` (index p)
  when it was computed into donated argument p's buffer (`output_aliases[k] == p`): the
  runtime then returns that argument's array as output k.

What it decides:
* Copies: an output that is a parameter (not donated to it), a constant, or a value already
  returned as an earlier output gets a `copy` instruction in the entry (so every output has a
  buffer of its own); `assign_buffers` inserts them, like XLA's copy insertion.
* Donation: `module.input_output_alias` ({output k: parameter p}), or a `donated` list (a flag
  per parameter, or parameter numbers) matched to outputs of the same shape and dtype in
  order, as JAX does. Output k is placed in p's buffer when p is no longer read afterwards (or
  its last reader computes output k elementwise in place); otherwise the alias is dropped and
  output k gets its own buffer (`output_aliases` lists the aliases actually made).
* In-place reuse: a kernel whose operand buffer dies at it (no later reader) may write its
  result over that operand when the sizes match and the kernel reads each element before
  writing the same index: a kLoop fusion whose parameter reaches the root only through
  elementwise ops of the same shape (or a top-level elementwise op / copy). Chains of such
  kernels feeding an output are computed directly in the output's buffer (temp 0 for
  `exp(log(x) + y)` even unfused).
* Temps: the remaining values are packed into one arena (64-byte aligned offsets) by live
  range: a value defined after the last reader of another may take its space (best fit).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ember._src.hlo import graph as hlo

__all__ = ["Slot", "BufferAssignment", "assign_buffers", "insert_output_copies", "ALIGNMENT"]

ALIGNMENT = 64
_NEVER = float("inf")                      # last use of an output: after the program ends
_NO_STORAGE = {"tuple", "get-tuple-element", "optimization-barrier"}


class Slot(NamedTuple):
  kind: str       # "parameter" | "constant" | "output" | "temp"
  index: int      # parameter number, constants index, output index; -1 for temp
  offset: int     # byte offset in the temp arena (temp only; else 0)
  size: int       # bytes

  def overlaps(self, other: "Slot") -> bool:
    """Whether the two slots share any byte (same buffer; in the temp arena, ranges meet)."""
    if self.size == 0 or other.size == 0 or self.kind != other.kind:
      return False
    if self.kind == "temp":
      return self.offset < other.offset + other.size and other.offset < self.offset + self.size
    return self.index == other.index


def _elements(shape) -> tuple:
  return shape.elements if isinstance(shape, hlo.TupleShape) else (shape,)


class _Buffers:
  """Logical buffers: (defining instruction, tuple index or None) for every value element,
  following tuple / get-tuple-element / optimization-barrier to the instruction that owns
  the storage."""

  def __init__(self):
    self._memo: dict[int, list] = {}

  def of(self, i: hlo.Instr) -> list:
    if i.id in self._memo:
      return self._memo[i.id]
    op = i.opcode
    if op == "tuple":
      out = [b for o in i.operands for b in self.of(o)]
    elif op == "get-tuple-element":
      out = [self.of(i.operands[0])[i.attrs["index"]]]
    elif op == "optimization-barrier":
      out = [b for o in i.operands for b in self.of(o)]
    elif isinstance(i.shape, hlo.TupleShape):
      out = [(i, k) for k in range(len(i.shape.elements))]
    else:
      out = [(i, None)]
    self._memo[i.id] = out
    return out


def _shape_of(buf) -> hlo.Shape:
  i, k = buf
  return i.shape if k is None else i.shape.elements[k]


def _key(buf):
  return (buf[0].id, buf[1])


def _outputs(entry: hlo.Computation) -> list[hlo.Instr]:
  r = entry.root
  return list(r.operands) if r.opcode == "tuple" else [r]


def _match_donations(entry: hlo.Computation, donated) -> dict[int, int]:
  """JAX's matching: each output, in order, takes the first unused donated parameter of the
  same shape and dtype."""
  params = entry.params
  flags = list(donated)
  if flags and all(isinstance(f, (bool, np.bool_)) for f in flags):
    pool = [p for p, f in zip(params, flags) if f]
  else:
    pool = [params[int(n)] for n in flags if 0 <= int(n) < len(params)]
  aliases: dict[int, int] = {}
  for k, o in enumerate(_outputs(entry)):
    for p in pool:
      if p.shape == o.shape:
        aliases[k] = p.attrs["number"]
        pool.remove(p)
        break
  return aliases


def insert_output_copies(module: hlo.Module, aliases: dict[int, int] | None = None) -> int:
  """Give every output a buffer of its own: copy outputs that are parameters (other than a
  parameter donated to that very output), constants, or repeats of an earlier output.
  Returns the number of copies inserted. Idempotent."""
  entry = module.entry
  aliases = module.input_output_alias if aliases is None else aliases
  r = entry.root
  if isinstance(r.shape, hlo.TupleShape) and r.opcode != "tuple":   # make outputs explicit
    gtes = [entry.add(hlo.Instr("get-tuple-element", e, [r], {"index": k}))
            for k, e in enumerate(r.shape.elements)]
    entry.root = entry.add(hlo.Instr("tuple", r.shape, gtes))
  bufs, claimed, copies = _Buffers(), set(), 0
  outs = _outputs(entry)
  for k, o in enumerate(outs):
    (b,) = bufs.of(o)
    d = b[0]
    keep = (d.opcode not in ("parameter", "constant") and _key(b) not in claimed) or (
        d.opcode == "parameter" and aliases.get(k) == d.attrs["number"] and _key(b) not in claimed)
    if keep:
      claimed.add(_key(b))
      continue
    c = entry.add(hlo.Instr("copy", o.shape, [o], name="copy"))
    if entry.root.opcode == "tuple":       # the copy runs just before the output tuple
      entry.instrs.insert(entry.instrs.index(entry.root), entry.instrs.pop())
      entry.root.operands[k] = c
    else:
      entry.root = c
    claimed.add(_key((c, None)))
    copies += 1
  return copies


class _Class:
  """Values that share one storage (in-place chains, donated parameter and its output)."""
  __slots__ = ("members", "storage")

  def __init__(self, buf, storage=None):
    self.members = [buf]
    self.storage = storage            # None (temp) or (kind, index)


class BufferAssignment:
  """The result of `assign_buffers` (see the module docstring for the runtime contract).

  Fields: `module`; `slots` (entry instr name -> Slot or tuple of Slots); `outputs` (Slot per
  output); `output_aliases` ({output k: parameter p} actually realized); `constants` (the
  constant instructions, indexed by constant slots); `live_ranges` (instr name -> (first,
  last) schedule positions of its value, -1 = before the first instruction, inf = live out);
  `temp_size`, `argument_size`, `output_size`, `alias_size` (bytes); `copies_inserted`;
  `called` ({while/conditional name: the assignments of the programs the backend compiles
  for the computations it calls, each with its own `module`}; filled by the compile
  driver, compilation.assign_program)."""

  def __init__(self, module, slots, outputs, output_aliases, constants, live_ranges,
               temp_size, copies_inserted):
    self.module = module
    self.slots: dict[str, Slot | tuple] = slots
    self.outputs: tuple[Slot, ...] = outputs
    self.output_aliases: dict[int, int] = output_aliases
    self.constants: tuple[hlo.Instr, ...] = constants
    self.live_ranges: dict[str, tuple] = live_ranges
    self.temp_size = temp_size
    entry = module.entry
    self.argument_size = sum(p.shape.nbytes for p in entry.params)
    self.output_size = sum(s.size for s in outputs)
    self.alias_size = sum(outputs[k].size for k in output_aliases)
    self.copies_inserted = copies_inserted
    self.called: dict[str, tuple[BufferAssignment, ...]] = {}

  def slot(self, instr: hlo.Instr, index: int | None = None) -> Slot:
    s = self.slots[instr.name]
    return s[index] if index is not None else s

  def to_text(self) -> str:
    """The dump (`...buffer-assignment.txt`): allocations, the values in each, and totals."""
    entry = self.module.entry
    lines = [f"BufferAssignment for {self.module.name} (schedule: {len(entry.instrs)} "
             f"instructions of %{entry.name})",
             f"argument_size={self.argument_size} output_size={self.output_size} "
             f"alias_size={self.alias_size} temp_size={self.temp_size} "
             f"copies_inserted={self.copies_inserted}", ""]
    groups: dict[tuple, list] = {}
    for i in entry.instrs:
      if i.opcode in _NO_STORAGE:
        continue
      s = self.slots[i.name]
      for k, sl in enumerate((s,) if isinstance(s, Slot) else s):
        elem = "" if isinstance(s, Slot) else f"{{{k}}}"
        groups.setdefault((sl.kind, sl.index), []).append((sl, f"%{i.name}{elem}",
                                                            _elements(i.shape)[k]))
    order = {"parameter": 0, "constant": 1, "output": 2, "temp": 3}
    for (kind, index), vals in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
      if kind == "temp":
        head = f"temp arena: size {self.temp_size}"
      else:
        head = f"{kind} {index}: size {max(v[0].size for v in vals)}"
        if kind == "output" or (kind == "parameter" and index in self.output_aliases.values()):
          outs = [k for k, s in enumerate(self.outputs) if s.kind == kind and s.index == index]
          if outs:
            head += ", live out as output " + ",".join(map(str, outs))
      lines.append(head)
      for sl, name, shape in sorted(vals, key=lambda v: v[0].offset):
        lr = self.live_ranges.get(name.split("{")[0][1:], ())
        live = f" live=[{lr[0]}, {'out' if lr[1] == _NEVER else lr[1]}]" if lr else ""
        lines.append(f"  value {name}: {shape.to_hlo()} offset={sl.offset} size={sl.size}{live}")
    return "\n".join(lines) + "\n"

  def __repr__(self):
    return (f"BufferAssignment(argument_size={self.argument_size}, output_size={self.output_size},"
            f" alias_size={self.alias_size}, temp_size={self.temp_size})")


def _same_index_read(u: hlo.Instr, i: hlo.Instr, dims: tuple) -> bool:
  """Does `u` (of shape `dims`) read `i` only at the index it writes? Elementwise ops do;
  dynamic-update-slice does for its operand 0 (outside the window it copies it)."""
  if u.shape.dims != dims:
    return False
  if u.opcode in hlo.ELEMENTWISE:
    return True
  return u.opcode == "dynamic-update-slice" and i in u.operands[:1] and i not in u.operands[1:]


def _identity_params(comp: hlo.Computation) -> set[int]:
  """Parameter numbers of a kLoop fused computation that reach the root only through
  same-index reads (`_same_index_read`) at the root's shape: element i of the output reads
  only element i of such a parameter, so the output may overwrite it."""
  root = comp.root
  if not isinstance(root.shape, hlo.Shape):
    return set()
  dims = root.shape.dims
  users = comp.users()
  ok: dict[int, bool] = {}
  for i in reversed(comp.instrs):
    us = users.get(i.id, [])
    ok[i.id] = i is root or (bool(us) and isinstance(i.shape, hlo.Shape) and i.shape.dims == dims
                             and all(ok.get(u.id, False) and _same_index_read(u, i, dims)
                                     for u in us))
  return {p.attrs["number"] for p in comp.params if ok.get(p.id)}


def _same_starts(a: list, b: list) -> bool:
  """Start-index operands that are the same values: the same instructions, or equal scalar
  constants."""
  def same(x, y):
    return x is y or (x.opcode == y.opcode == "constant" and x.shape == y.shape and
                      np.array_equal(x.attrs["value"], y.attrs["value"]))
  return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))


def _keeps_linear_index(u: hlo.Instr, i: hlo.Instr) -> bool:
  """Whether element k (row-major) of `u` reads element k of its operand `i` (both of one
  size): elementwise ops on equal shapes, reshapes, broadcasts that only add size-1 dims."""
  if u.opcode in hlo.ELEMENTWISE:
    return u.shape.dims == i.shape.dims
  if u.opcode == "reshape":
    return True
  if u.opcode == "broadcast":
    dims = tuple(u.attrs["dimensions"])
    return u.shape.size == i.shape.size and list(dims) == sorted(dims)
  return False


def window_update_in_place(comp: hlo.Computation) -> hlo.Instr | None:
  """The parameter a fused computation's root dynamic-update-slice updates, when the output
  may overwrite it: besides being the root's operand 0 it is read only by dynamic-slices of
  the root's window (same starts, the update's sizes) whose values reach the root's update
  only through ops that keep each element's row-major position (`select(p, u,
  dynamic-slice(x, s))`, the moved select of a batched while loop: algsimp; `x.at[i].set(
  f(x[i]))`: a reshape to a scalar and back). Element j of the window then reads
  x only at the element it writes, and the rest of x is left as it is; else None."""
  root = comp.root
  if root.opcode != "dynamic-update-slice" or root.operands[0].opcode != "parameter":
    return None
  base, upd, starts = root.operands[0], root.operands[1], root.operands[2:]
  if base in root.operands[1:]:
    return None
  wdims, wsize = upd.shape.dims, upd.shape.size
  users = comp.users()
  ok: dict[int, bool] = {}
  for i in reversed(comp.instrs):   # reaches the update only at the same window element
    us = users.get(i.id, [])
    ok[i.id] = bool(us) and isinstance(i.shape, hlo.Shape) and i.shape.size == wsize and all(
        (u is root and i is upd and i not in starts) or
        (ok.get(u.id, False) and _keeps_linear_index(u, i)) for u in us)
  for u in users.get(base.id, []):
    if u is root:
      continue
    if not (u.opcode == "dynamic-slice" and u.operands[0] is base and base not in u.operands[1:]
            and tuple(u.attrs["sizes"]) == wdims and _same_starts(u.operands[1:], starts)
            and ok.get(u.id, False)):
      return None
  return base


def _in_place_positions(d: hlo.Instr) -> set[int]:
  """Operand positions of entry instruction `d` that it may overwrite with its output."""
  if not isinstance(d.shape, hlo.Shape):
    return set()
  if d.opcode == "fusion" and d.attrs.get("kind") == "kLoop":
    base = window_update_in_place(d.called[0])
    return _identity_params(d.called[0]) | ({base.attrs["number"]} if base is not None else set())
  if d.opcode in hlo.ELEMENTWISE:
    return {j for j, o in enumerate(d.operands) if _same_index_read(d, o, o.shape.dims)}
  if d.opcode == "scatter":             # the runtime scatters into operand 0 in place
    return {0}
  return set()


def assign_buffers(module: hlo.Module, donated=None) -> BufferAssignment:
  """Assign every entry value a Slot (see the module docstring). Inserts output copies into
  `module.entry` first (`insert_output_copies`)."""
  entry = module.entry
  if donated is None:
    donated = getattr(module, "donated", None)
  requested = dict(module.input_output_alias) if not donated else _match_donations(entry, donated)
  copies = insert_output_copies(module, requested)
  pos = {i.id: t for t, i in enumerate(entry.instrs)}
  bufs = _Buffers()

  # Live ranges of logical buffers: [definition, last reader].
  start: dict[tuple, float] = {}
  end: dict[tuple, float] = {}
  info: dict[tuple, tuple] = {}            # key -> buffer
  for i in entry.instrs:
    if i.opcode in _NO_STORAGE:
      continue
    t = -1 if i.opcode in ("parameter", "constant") else pos[i.id]
    for b in bufs.of(i):
      start[_key(b)] = end[_key(b)] = t
      info[_key(b)] = b
  for u in entry.instrs:
    for o in u.operands:
      for b in bufs.of(o):
        end[_key(b)] = max(end[_key(b)], pos[u.id])
  outs = _outputs(entry)
  out_keys = [_key(bufs.of(o)[0]) for o in outs]
  for k in out_keys:
    end[k] = _NEVER

  # Storage classes: fixed storage for parameters, constants, outputs.
  cls: dict[tuple, _Class] = {}
  constants = tuple(i for i in entry.instrs if i.opcode == "constant")
  for key, b in info.items():
    d = b[0]
    storage = (("parameter", d.attrs["number"]) if d.opcode == "parameter" else
               ("constant", constants.index(d)) if d.opcode == "constant" else None)
    cls[key] = _Class(b, storage)
  for k, key in enumerate(out_keys):
    if cls[key].storage is None:
      cls[key].storage = ("output", k)

  def touch_ok(a, c) -> bool:
    """Can buffer a (dying) and buffer c (defined where a dies) share storage? Disjoint live
    ranges, or c's definer overwrites a in place."""
    if end[_key(a)] < start[_key(c)]:
      return True
    if end[_key(a)] != start[_key(c)] or _shape_of(a).nbytes != _shape_of(c).nbytes:
      return False
    d = c[0]
    positions = _in_place_positions(d)
    if c[1] is not None:
      return False
    readers = [j for j, o in enumerate(d.operands) if _key(a) in map(_key, bufs.of(o))]
    return bool(readers) and all(j in positions and len(bufs.of(d.operands[j])) == 1
                                 for j in readers) and _shape_of(a).dims == _shape_of(c).dims

  def compatible(A: _Class, C: _Class) -> bool:
    for a in A.members:
      for c in C.members:
        first, second = (a, c) if start[_key(a)] <= start[_key(c)] else (c, a)
        if not touch_ok(first, second):
          return False
    return True

  def merge(A: _Class, C: _Class, storage):
    C.members.extend(A.members)
    C.storage = storage
    for m in A.members:
      cls[_key(m)] = C

  # In place: a kernel takes over the storage of a temp operand that dies at it.
  for d in entry.instrs:
    positions = _in_place_positions(d)
    if d.opcode in _NO_STORAGE or not positions:
      continue
    C = cls[_key((d, None))]
    candidates = [a for j in sorted(positions) for a in bufs.of(d.operands[j])]
    for a in candidates:
      A = cls[_key(a)]
      if A is not C and A.storage is None and end[_key(a)] == pos[d.id] and compatible(A, C):
        merge(A, C, C.storage)
        break

  # Donation: output k computed into parameter p's buffer when their live ranges allow.
  realized: dict[int, int] = {}
  params = {p.attrs["number"]: p for p in entry.params}
  for k, p in sorted(requested.items()):
    if p not in params or k >= len(out_keys):
      continue
    P, C = cls[_key((params[p], None))], cls[out_keys[k]]
    if P is C:
      realized[k] = p                    # the output is the donated parameter itself
    elif (len(P.members) == 1 and C.storage == ("output", k) and compatible(P, C) and
          _shape_of(P.members[0]).nbytes == _shape_of(info[out_keys[k]]).nbytes):
      merge(C, P, P.storage)
      realized[k] = p

  # Pack temp classes into the arena by live range (best fit, freed after the last reader).
  offsets: dict[int, int] = {}
  temps = sorted({id(c): c for c in cls.values() if c.storage is None}.values(),
                 key=lambda c: min(start[_key(m)] for m in c.members))
  arena = _Arena()
  active: list[tuple] = []
  for c in temps:
    s = min(start[_key(m)] for m in c.members)
    e = max(end[_key(m)] for m in c.members)
    for item in [a for a in active if a[0] < s]:
      active.remove(item)
      arena.free(item[1], item[2])
    size = max(_shape_of(m).nbytes for m in c.members)
    offsets[id(c)] = arena.alloc(size)
    active.append((e, offsets[id(c)], size))

  def slot_of(b) -> Slot:
    c = cls[_key(b)]
    size = _shape_of(b).nbytes
    if c.storage is None:
      return Slot("temp", -1, offsets[id(c)], size)
    return Slot(c.storage[0], c.storage[1], 0, size)

  slots: dict[str, Slot | tuple] = {}
  live: dict[str, tuple] = {}
  for i in entry.instrs:
    bs = bufs.of(i)
    ss = tuple(slot_of(b) for b in bs)
    slots[i.name] = ss if isinstance(i.shape, hlo.TupleShape) else ss[0]
    if i.opcode not in _NO_STORAGE and bs:   # a host callback may have no results
      live[i.name] = (min(start[_key(b)] for b in bs), max(end[_key(b)] for b in bs))
  outputs = tuple(slot_of(info[k]) for k in out_keys)
  return BufferAssignment(module, slots, outputs, realized, constants, live, arena.top, copies)


def _align(n: int) -> int:
  return -(-n // ALIGNMENT) * ALIGNMENT


class _Arena:
  """Best-fit allocator over one growing byte range (free blocks coalesce)."""

  def __init__(self):
    self.free_blocks: list[list[int]] = []   # sorted [offset, size]
    self.top = 0

  def alloc(self, size: int) -> int:
    size = _align(size)
    if size == 0:
      return 0
    fits = [b for b in self.free_blocks if b[1] >= size]
    if fits:
      b = min(fits, key=lambda b: b[1])
      off = b[0]
      b[0] += size
      b[1] -= size
      if b[1] == 0:
        self.free_blocks.remove(b)
      return off
    if self.free_blocks and sum(self.free_blocks[-1]) == self.top:   # grow the last hole
      off = self.free_blocks.pop()[0]
    else:
      off = self.top
    self.top = off + size
    return off

  def free(self, off: int, size: int) -> None:
    size = _align(size)
    if size == 0:
      return
    self.free_blocks.append([off, size])
    self.free_blocks.sort()
    merged: list[list[int]] = []
    for b in self.free_blocks:
      if merged and merged[-1][0] + merged[-1][1] == b[0]:
        merged[-1][1] += b[1]
      else:
        merged.append(b)
    self.free_blocks = merged
