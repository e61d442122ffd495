"""Kernels: one LLVM function per fusion (and per scatter), with the ABI of `abi`. The
exported function loads the buffer pointers and calls an `alwaysinline` body whose pointer
arguments carry `noalias` where the buffer assignment allows it; inlining turns that into
alias scopes, which is what lets LLVM vectorize the loops without runtime overlap checks. An
operand computed in place (its buffer is an output's) is read through the output's pointer.
Fusions with the same program share one kernel (`KernelBuilder.shared`). The nests that
belong to one kernel family (a column reduction, a transposed read, a concatenate root) are
methods KernelBuilder takes from that family's module (ColumnReduceNests, TiledNests,
ConcatNests); the generic nests, the scaffolding and scatter are here.

Loop nests (KernelBuilder.fusion):
- pure elementwise fusions: one flat loop over [start * inner, stop * inner);
- a reduce root keeping the input's minor dim (column sums, argmax over axis 0): the
  outputs are initialized, then accumulated with the minor dim innermost, so the input is
  read contiguously and the accumulation vectorizes across output elements (reductions);
- a fusion reading an array transposed (its minor dim follows an outer output dim): the
  nest runs in TILE x TILE blocks of those two dims, so the strided reads stay in L1
  (transpose);
- a concatenate root: one nest per operand's region of the output (concatenate);
- a scan root (cumsum and friends, hlo.scan_window): one sequential pass along the axis
  over units of independent lanes (scan);
- everything else: one loop per output dim, the minor (contiguous) one innermost. Before
  each loop, the values whose index does not involve it (or any loop inside it) are
  computed once (`ElementalEmitter.hoist`): softmax's row max, layernorm's mean and
  variance are computed once per row, not once per element. Before the minor loop, an
  expensive value read at several minor positions of the row (softmax's exp(x - max), read
  by the row sum and by the division) is computed once over the row into a stack buffer
  (`fill_row_caches`, `fusion.row_cached`) that those reads load. The fusion pass counts on
  both (`fusion.symbolic_count`) to fuse such values into their consumers: softmax is one
  kernel reading x from memory once and writing the result once.

Vectorization. Every kernel is marked "prefer-vector-width"="512", so hosts with AVX-512
use zmm registers (others keep their widest vectors); the body's pointers carry `noalias`
where the buffer assignment allows; loops are contiguous in their innermost dim with no
index division (broadcast, transpose and size-1 reshapes map loop variables directly), so
LLVM's loop vectorizer emits a vector body with a scalar tail. tests/test_vectorize.py
reads the assembly of representative fusions and asserts packed instructions.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np
from llvmlite import ir

from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import denormals
from ember._src.backends.cpu.codegen.abi import KERNEL_TYPE, KernelInfo, outer_extent
from ember._src.backends.cpu.codegen.concatenate import ConcatNests, concat_regions
from ember._src.backends.cpu.codegen.emitter import ElementalEmitter
from ember._src.backends.cpu.codegen.index_maps import _dyn_starts
from ember._src.backends.cpu.codegen.ir_helpers import Inner
from ember._src.backends.cpu.codegen.ir_types import I1, I64, PTR, VOID, bits, mem_type
from ember._src.backends.cpu.codegen.reductions import ColumnReduceNests
from ember._src.backends.cpu.codegen.scan import ScanNests
from ember._src.backends.cpu.codegen.transpose import (TiledNests, _transposed_dim,
                                                        block_transpose_param)
from ember._src.passes.buffer_assignment import window_update_in_place
from ember._src.passes.fusion import row_cached


def fusion_outputs(comp: hlo.Computation) -> list[hlo.Shape]:
  s = comp.root.shape
  return list(s.elements) if isinstance(s, hlo.TupleShape) else [s]


def _is_pure_elementwise(comp: hlo.Computation) -> bool:
  """Every value is read at the output's own index (or is a scalar): the loop nest can be
  one flat loop, which vectorizes even when the minor dimension is short."""
  out_dims = fusion_outputs(comp)[0].dims
  for i in comp.instrs:
    op = i.opcode
    if op == "parameter" or op == "tuple":
      continue
    if op == "constant" and np.asarray(i.attrs["value"]).size == 1:
      continue
    if op == "broadcast" and i.operands[0].shape.rank == 0:
      continue
    if op not in hlo.ELEMENTWISE or op == "bitcast-convert" and \
        bits(i.operands[0].dtype) != bits(i.dtype):
      return False
  for i in comp.instrs:
    if i.opcode == "parameter" and i.shape.dims not in ((), out_dims):
      return False
  return True


def in_place_update(comp: hlo.Computation, in_place: dict[int, int] | None
                    ) -> hlo.Instr | None:
  """The root dynamic-update-slice of a fused computation whose kernel runs in place (its
  operand 0 a parameter read nowhere else but at the window's own elements, in the output's
  buffer: `in_place`; buffer_assignment.window_update_in_place), so the kernel writes only
  the update window (a scan's ys element per iteration), not the whole output; else None."""
  root = comp.root
  if root.opcode != "dynamic-update-slice" or not in_place:
    return None
  base = window_update_in_place(comp)
  if base is None or in_place != {base.attrs["number"]: 0}:
    return None
  return root


def _longer_rows_under_reshape(root: hlo.Instr, dims) -> hlo.Instr | None:
  """The operand of a root reshape when the loop nest should run over its shape instead: a
  reshape only reinterprets the row-major buffer, so the operand's values stored at its own
  linear indices are the output. Worth it when its minor dimension is longer (the
  vectorized inner loop: bernoulli bits reshaped into [100, 28, 28] images then run rows of
  784, not 28) and dim 0, the kernel's range, is the same."""
  if root.opcode != "reshape" or not dims:
    return None
  x = root.operands[0]
  xd = x.shape.dims
  return x if len(xd) >= 1 and xd[0] == dims[0] and xd[-1] > dims[-1] else None


class KernelBuilder(ColumnReduceNests, ConcatNests, TiledNests, ScanNests):
  """Emits fusion kernels into one LLVM module."""

  def __init__(self, module: ir.Module):
    self.module = module
    # Fusions with the same program, aliasing and in-place operands share one kernel (a
    # model's repeated layers compile once): key -> KernelInfo, and name -> the symbol used.
    self._kernels: dict[tuple, KernelInfo] = {}
    self.aliases: dict[str, str] = {}

  def _entry(self, name: str, n_ptrs: int, noalias: Sequence[bool]):
    """The exported ABI function and the always-inlined body it calls, between flush-to-zero
    on and the caller's modes back (XLA:CPU's denormal modes, backends/cpu/denormals.py);
    returns (body builder, pointer args, start, stop)."""
    fn = ir.Function(self.module, KERNEL_TYPE, name)
    fn.attributes.add("nounwind")
    for f in (fn,):
      set.add(f.attributes, '"prefer-vector-width"="512"')
    body = ir.Function(self.module, ir.FunctionType(VOID, [PTR] * n_ptrs + [I64, I64]),
                       self.module.get_unique_name(name + ".body"))
    body.linkage = "internal"
    body.attributes.add("alwaysinline")
    body.attributes.add("nounwind")
    for a, na in zip(body.args[:n_ptrs], noalias):
      if na:
        a.add_attribute("noalias")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    modes = denormals.emit_flush_on(b)
    ptrs = []
    for k in range(n_ptrs):
      slot = b.gep(fn.args[0], [ir.Constant(I64, k)], inbounds=True, source_etype=PTR)
      ptrs.append(b.load(slot, typ=PTR))
    b.call(body, ptrs + [fn.args[1], fn.args[2]])
    denormals.emit_restore(b, modes)
    b.ret_void()
    bb = ir.IRBuilder(body.append_basic_block("entry"))
    return bb, list(body.args[:n_ptrs]), body.args[n_ptrs], body.args[n_ptrs + 1]

  def fusion(self, name: str, comp: hlo.Computation, noalias: Sequence[bool],
             in_place: dict[int, int] | None = None) -> KernelInfo:
    """The kernel of a fused computation (parameters = the fusion's operands), emitted
    unless an identical one exists already (then its KernelInfo, whose `name` is the
    shared symbol). `in_place` maps operands that share an output's buffer to that output:
    they are read through the output's pointer."""
    key = ("fusion", hlo.structure_key(hlo.reachable_computations(comp)), tuple(noalias),
           tuple(sorted((in_place or {}).items())))
    return self.shared(key, name, lambda: self._emit_fusion(name, comp, noalias, in_place))

  def shared(self, key: tuple, name: str, emit: Callable[[], KernelInfo]) -> KernelInfo:
    """The kernel `emit()` would make under `name`, or the one already emitted for `key`
    (then `name` becomes an alias of its symbol)."""
    info = self._kernels.get(key)
    if info is None:
      info = self._kernels[key] = emit()
    elif info.name != name:
      self.aliases[name] = info.name
    return info

  def _emit_fusion(self, name: str, comp: hlo.Computation, noalias: Sequence[bool],
                   in_place: dict[int, int] | None = None) -> KernelInfo:
    params = comp.params
    outs = fusion_outputs(comp)
    n_in = len(params)
    b, ptrs, start, stop = self._entry(name, n_in + len(outs), noalias)
    in_ptrs, out_ptrs = ptrs[:n_in], ptrs[n_in:]
    in_ptrs = [out_ptrs[in_place[k]] if in_place and k in in_place else p
               for k, p in enumerate(in_ptrs)]
    pshapes = [p.shape for p in params]

    def read_param(number, index):
      shape = pshapes[number]
      return em.load(in_ptrs[number], em.linear(index, shape.dims), shape.dtype)

    em = ElementalEmitter(b, read_param)

    def param_address(number, index):   # the address of a parameter's element (vector loads)
      shape = pshapes[number]
      return b.gep(in_ptrs[number], [em.linear(index, shape.dims)], inbounds=True,
                   source_etype=mem_type(shape.dtype))
    em.param_address = param_address
    root = comp.root
    roots = list(root.operands) if root.opcode == "tuple" else [root]
    dims_set = {tuple(s.dims) for s in outs}
    info: KernelInfo
    window = in_place_update(comp, in_place)

    if window is not None:
      # computed in place: the output already holds operand 0, only the window changes
      upd, odims = window.operands[1], outs[0].dims

      def store_window(uidx):
        starts = _dyn_starts(em, window.operands[2:], odims, upd.shape.dims)
        oidx = tuple(em.add_idx(st, u) for st, u in zip(starts, uidx))
        em.store(out_ptrs[0], em.linear(oidx, odims), outs[0].dtype, em.emit(upd, uidx))
      self._nest(em, upd.shape.dims, start, stop, store_window)
      info = KernelInfo(name, outer_extent(upd.shape.dims), True)
    elif len(dims_set) > 1:
      # A tuple root of differently shaped elements: one loop nest per element over its
      # full range, run once (by the call whose range starts at 0).
      with b.if_then(b.icmp_signed("==", start, em.i64(0))):
        for r, p, s in zip(roots, out_ptrs, outs):
          self._nest(em, s.dims, em.i64(0), em.i64(outer_extent(s.dims)),
                     lambda idx, r=r, p=p, s=s: self._store_all(em, [r], [p], [s], idx))
      info = KernelInfo(name, 1, False)
    elif hlo.scan_window(root) is not None and root.operands[0].opcode == "parameter":
      x_ptr = in_ptrs[root.operands[0].attrs["number"]]
      info = KernelInfo(name, self._scan_nest(em, root, x_ptr, out_ptrs[0], start, stop), True)
    else:
      dims = outs[0].dims
      col = self._column_reduce_plan(comp)
      if col is not None:
        self._column_reduce(em, col, dims, out_ptrs, outs, start, stop)
      elif _is_pure_elementwise(comp) and len(dims) >= 2:
        inner = int(np.prod(dims[1:], dtype=np.int64))
        lo, hi = em.mul_idx(start, inner), em.mul_idx(stop, inner)

        def flat_body(i, _c):
          em.push()
          vals = self._root_values_flat(em, comp, i, pshapes, in_ptrs)
          for p, s, v in zip(out_ptrs, outs, vals):
            em.store(p, i, s.dtype, v)
          em.pop()
          return []
        em.loop(lo, hi, [], flat_body)
      elif (regions := concat_regions(comp)) is not None:
        self._concat_nest(em, regions, out_ptrs[0], outs[0], start, stop)
      else:
        store = lambda idx: self._store_all(em, roots, out_ptrs, outs, idx)
        tile = _transposed_dim(comp, roots, dims)
        if tile is not None:
          t = block_transpose_param(roots, tile)
          blocks = None if t is None else lambda idx: self._block_transpose(
              em, t, idx, dims, tile, out_ptrs[0])
          self._tiled_nest(em, dims, start, stop, store, tile, blocks)
        else:
          cached = ()
          if 0 not in dims and len(dims) >= 2:
            members = {i.id for i in comp.instrs}
            cached = [i for i in comp.instrs if row_cached(comp.root, members, i)]
          inner = None if cached else _longer_rows_under_reshape(root, dims)
          if inner is not None:   # the nest runs over the reshape's operand
            roots, outs, dims = [inner], [inner.shape], inner.shape.dims
            store = lambda idx: self._store_all(em, roots, out_ptrs, outs, idx)
          self._nest(em, dims, start, stop, store, hoist_from=roots if 0 not in dims else (),
                     row_cache=cached)
      info = KernelInfo(name, outer_extent(dims), True)
    b.ret_void()
    return info

  def _root_values_flat(self, em, comp, i, pshapes, in_ptrs):
    """Pure elementwise fusions: every parameter is read at flat offset i (or is scalar)."""
    saved = em.read_param

    def read_flat(number, index):
      shape = pshapes[number]
      lin = i if shape.dims else em.i64(0)
      return em.load(in_ptrs[number], lin, shape.dtype)
    em.read_param = read_flat
    root = comp.root
    rank = len(fusion_outputs(comp)[0].dims)
    flat_idx = (i,) * rank   # any index tuple works: all reads ignore it but its identity
    vals = [em.emit(r, flat_idx) for r in (root.operands if root.opcode == "tuple" else [root])]
    em.read_param = saved
    return vals

  def _nest(self, em, dims, start, stop, body_fn, hoist_from=(), row_cache=()):
    """Loops over `dims` with the outermost over [start, stop) (flat index for rank <= 1).
    Before each loop, the invariants of `hoist_from` (instructions evaluated at the full
    index) with respect to it and the loops inside it are computed (`em.hoist`); before the
    minor loop, the `row_cache` instructions are computed over the row into buffers
    (`em.fill_row_caches`: softmax's exp, read by the row sum and the division)."""
    def hoist(k):   # loops k.. are about to run
      if hoist_from:
        at = tuple(idx[:k]) + tuple(Inner() for _ in dims[k:])
        em.hoist([(r, at) for r in hoist_from])
    if len(dims) == 0:
      def scalar(i, _c):
        em.push()
        body_fn(())
        em.pop()
        return []
      em.loop(start, stop, [], scalar)
      return
    idx = [None] * len(dims)

    def level(k):
      def body(i, _c):
        idx[k] = i
        em.push()
        if k + 1 == len(dims):
          body_fn(tuple(idx))
        else:
          if k + 2 == len(dims) and row_cache:
            em.fill_row_caches(row_cache, tuple(idx[:k + 1]))
          hoist(k + 1)
          level(k + 1)
        em.pop()
        return []
      lo, hi = (start, stop) if k == 0 else (em.i64(0), em.i64(dims[k]))
      em.loop(lo, hi, [], body)
    hoist(0)
    level(0)

  def _store_all(self, em, roots, out_ptrs, outs, idx):
    vals = []
    for r in roots:
      v = em.emit(r, idx)
      vals.extend(v if isinstance(r.shape, hlo.TupleShape) else [v])
    for p, s, v in zip(out_ptrs, outs, vals):
      em.store(p, em.linear(idx, s.dims), s.dtype, v)

  # --- scatter -------------------------------------------------------------------------
  def scatter(self, name: str, instr: hlo.Instr, noalias: Sequence[bool]) -> KernelInfo:
    """XLA Scatter as a sequential loop over the update elements (the outputs already hold
    a copy of the operands): out[I] = combiner(out[I], update[U]), where I is the update
    window position; windows not fully in bounds are skipped."""
    a = instr.attrs
    n = (len(instr.operands) - 1) // 2
    operands, ind, updates = instr.operands[:n], instr.operands[n], instr.operands[n + 1:]
    n_ptrs = len(instr.operands) + n
    b, ptrs, start, stop = self._entry(name, n_ptrs, noalias)
    ind_ptr, upd_ptrs, out_ptrs = ptrs[n], ptrs[n + 1:2 * n + 1], ptrs[2 * n + 1:]
    em = ElementalEmitter(b, None)
    odims = operands[0].shape.dims
    udims = updates[0].shape.dims
    uwd = tuple(a["update_window_dims"])
    inserted = set(a["inserted_window_dims"])
    sdod = tuple(a["scatter_dims_to_operand_dims"])
    ibd = tuple(a.get("input_batching_dims", ()))
    sibd = tuple(a.get("scatter_indices_batching_dims", ()))
    ivd = a["index_vector_dim"]
    scatter_dims = [d for d in range(len(udims)) if d not in uwd]
    win_operand_dims = [d for d in range(len(odims)) if d not in inserted and d not in ibd]
    wsize = [1] * len(odims)
    for k, od in enumerate(win_operand_dims):
      wsize[od] = udims[uwd[k]]
    comp = instr.called[0]

    def body(uidx):
      batch = [uidx[d] for d in scatter_dims]

      def ind_index(k):
        if ivd >= ind.shape.rank:
          return tuple(batch)
        return tuple(batch[:ivd]) + (em.i64(k),) + tuple(batch[ivd:])
      starts = [em.i64(0)] * len(odims)
      ok = ir.Constant(I1, 1)
      for k, od in enumerate(sdod):
        v = em.to_index(em.load(ind_ptr, em.linear(ind_index(k), ind.shape.dims), ind.dtype),
                        ind.dtype)
        ok = b.and_(ok, b.and_(b.icmp_signed(">=", v, em.i64(0)),
                               b.icmp_signed("<=", v, em.i64(odims[od] - wsize[od]))))
        starts[od] = v
      for od, sd in zip(ibd, sibd):
        starts[od] = batch[sd if sd < ivd else sd - 1]
      for k, od in enumerate(win_operand_dims):
        starts[od] = em.add_idx(starts[od], uidx[uwd[k]])
      with b.if_then(ok):
        em.push()
        ulin = em.linear(uidx, udims)
        olin = em.linear(starts, odims)
        cur = [em.load(p, olin, o.dtype) for p, o in zip(out_ptrs, operands)]
        upd = [em.load(p, ulin, u.dtype) for p, u in zip(upd_ptrs, updates)]
        new = em.apply(comp, cur + upd)
        for p, o, v in zip(out_ptrs, operands, new):
          em.store(p, olin, o.dtype, v)
        em.pop()

    if 0 not in udims and 0 not in odims:
      first = b.icmp_signed("==", start, em.i64(0))
      with b.if_then(first):
        self._nest(em, udims, em.i64(0), em.i64(outer_extent(udims)), body)
    b.ret_void()
    return KernelInfo(name, 1, False)


def wrap_as_fusion(instr: hlo.Instr) -> hlo.Computation:
  """A fused computation for a lone entry instruction (parameters = its operands), so an
  op the fusion pass left unfused still compiles to a kernel."""
  comp = hlo.Computation(f"wrapped_{instr.opcode}")
  params = [comp.add(hlo.Instr("parameter", o.shape, attrs={"number": k}, name=f"p{k}"))
            for k, o in enumerate(instr.operands)]
  clone = hlo.Instr(instr.opcode, instr.shape, params, dict(instr.attrs), list(instr.called),
                    name=instr.name, metadata=instr.metadata)
  comp.root = comp.add(clone)
  comp.is_fusion = True
  return comp
