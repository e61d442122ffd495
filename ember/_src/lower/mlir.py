"""The StableHLO MLIR text of a lowered module (what `Lowered.as_text()` returns).

The syntax is what JAX prints (and the StableHLO/CHLO parsers accept):

    module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
      func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
        %0 = stablehlo.sine %arg0 : tensor<3xf32>
        return %0 : tensor<3xf32>
      }
    }

Computations reached through `call` become `func.func private @name`; the computations
of reduce / sort / scatter become regions of those ops. Tuples are not values in MLIR:
a tuple-shaped instruction is an op with several results (`%1:2 = ...`, read as `%1#0`).
Elementwise functions StableHLO lacks (erf, lgamma, asin, next_after, top_k, ...) print
as the `chlo` ops JAX emits. `debug_info=True` adds `loc(...)` to every op: the named
scope op name (`"jit(f)/my_scope/sin"`) around the source location (`"file.py":12:0`).
"""
from __future__ import annotations

import re

import numpy as np

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo
from ember._src.hlo.graph import Instr, TupleShape
from ember._src.lower import standard_ops
from ember._src.reference import host_callbacks

__all__ = ["to_mlir_text"]

_UNARY = {"abs": "abs", "negate": "negate", "sign": "sign", "floor": "floor", "ceil": "ceil",
          "round-nearest-afz": "round_nearest_afz", "round-nearest-even": "round_nearest_even",
          "exponential": "exponential", "exponential-minus-one": "exponential_minus_one",
          "log": "log", "log-plus-one": "log_plus_one", "tanh": "tanh", "logistic": "logistic",
          "sine": "sine", "cosine": "cosine", "tan": "tan", "sqrt": "sqrt", "rsqrt": "rsqrt",
          "cbrt": "cbrt", "is-finite": "is_finite", "not": "not", "popcnt": "popcnt",
          "count-leading-zeros": "count_leading_zeros", "real": "real", "imag": "imag",
          "convert": "convert", "bitcast-convert": "bitcast_convert"}
_BINARY = {"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
           "remainder": "remainder", "power": "power", "maximum": "maximum",
           "minimum": "minimum", "atan2": "atan2", "and": "and", "or": "or", "xor": "xor",
           "shift-left": "shift_left", "shift-right-arithmetic": "shift_right_arithmetic",
           "shift-right-logical": "shift_right_logical", "complex": "complex"}
# Elementwise ops that StableHLO does not have: JAX emits them from the CHLO dialect.
_CHLO_UNARY = {"erf": "erf", "erfc": "erfc", "erf-inv": "erf_inv", "lgamma": "lgamma",
               "digamma": "digamma", "asin": "asin", "acos": "acos", "atan": "atan",
               "sinh": "sinh", "cosh": "cosh", "asinh": "asinh", "acosh": "acosh",
               "atanh": "atanh"}
_CHLO_BINARY = {"next-after": "next_after"}

_BARE_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_$.]*$")


def _sym(name: str) -> str:
  return "@" + (name if _BARE_ID.match(name) else '"' + _escape(name) + '"')


def _escape(s: str) -> str:
  return str(s).replace("\\", "\\\\").replace('"', '\\"')


def _ints(v) -> str:
  return "[" + ", ".join(str(int(i)) for i in v) + "]"


def _i64s(v) -> str:
  """A dense i64 array attribute: `array<i64: 1, 2>`."""
  return f"array<i64{': ' + ', '.join(str(int(i)) for i in v) if len(v) else ''}>"


def _ty(shape) -> str:
  return shape.to_mlir()


# --------------------------------------------------------------------------------------
# Constants (MLIR's dense attribute syntax)
# --------------------------------------------------------------------------------------

def _float_text(v, dt: np.dtype) -> str:
  """A float element: NaN/inf as the hex bit pattern, finite values as the shortest decimal
  that reads back to the same value in `dt` (MLIR's %e form when that is exact)."""
  x = np.asarray(v, dt)
  if not np.isfinite(x.astype(np.float64)):
    bits = int(x.reshape(1).view(f"u{dt.itemsize}")[0])
    return f"0x{bits:0{2 * dt.itemsize}X}"
  f = float(x.astype(np.float64))
  s = f"{f:.6e}"
  if np.asarray(float(s), dt).tobytes() == x.tobytes():
    return s
  wide = np.float64 if dt == np.float64 else np.float32  # exact for f16/bf16/f32 values
  return np.format_float_scientific(np.asarray(f, wide)[()], unique=True, trim="0")


def _elem_text(v, dt: np.dtype) -> str:
  if dt == np.bool_:
    return "true" if bool(v) else "false"
  if dt.kind in "iu":
    return str(int(v))
  if dt.kind == "c":
    part = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    return f"({_float_text(np.real(v), part)},{_float_text(np.imag(v), part)})"
  return _float_text(v, dt)


def _dense(value: np.ndarray) -> str:
  a = np.ascontiguousarray(value)
  if a.dtype == dtypes.float0:   # float0 holds no data: JAX lowers it as i1 zeros
    a = np.zeros(a.shape, np.bool_)
  dt = a.dtype
  flat = a.reshape(-1)
  rows = flat.view(np.uint8).reshape(a.size, dt.itemsize) if a.size else None
  if a.size and (rows == rows[0]).all():  # a splat (bitwise, so NaNs and -0.0 count too)
    return f"dense<{_elem_text(flat[0], dt)}>"
  if a.size > 64 and dt != np.bool_:  # raw little-endian bytes: exact and compact
    return 'dense<"0x' + a.astype(dt.newbyteorder("<")).tobytes().hex().upper() + '">'

  def rec(x):
    if x.ndim == 0:
      return _elem_text(x[()], dt)
    return "[" + ", ".join(rec(e) for e in x) + "]"
  return f"dense<{rec(a)}>"


# --------------------------------------------------------------------------------------
# Printing
# --------------------------------------------------------------------------------------

class _Locs:
  """`#locN` definitions for op names and source positions (debug_info=True)."""

  def __init__(self):
    self.defs: list[str] = []
    self.ids: dict[tuple, str] = {}

  def _get(self, key, text) -> str:
    ref = self.ids.get(key)
    if ref is None:
      ref = self.ids[key] = f"#loc{len(self.defs) + 1}"
      self.defs.append(f"{ref} = {text}")
    return ref

  def of(self, md: hlo.Metadata) -> str:
    if not md.op_name and not md.source_file:
      return "#loc"
    inner = None
    if md.source_file:
      inner = self._get(("file", md.source_file, md.source_line),
                        f'loc("{_escape(md.source_file)}":{md.source_line or 0}:0)')
    if not md.op_name:
      return inner
    text = f'loc("{_escape(md.op_name)}"' + (f"({inner}))" if inner else ")")
    return self._get(("name", md.op_name, md.source_file, md.source_line), text)


class _Func:
  """Names of values inside one func (its nested regions share them, as MLIR requires)."""

  def __init__(self):
    self.values: dict[int, object] = {}   # id(instr) -> "%x", or a list for tuple values
    self.next_value = 0
    self.next_arg = 0
    self.used: set[str] = set()
    self.uniq = 0

  def arg(self) -> str:
    self.next_arg += 1
    return f"%arg{self.next_arg - 1}"

  def result(self, n: int = 1):
    """A name for an op with `n` results: ("%3", ["%3"]), ("%3:2", ["%3#0", "%3#1"])."""
    if n == 0:
      return "", []
    base = f"%{self.next_value}"
    self.next_value += 1
    if n == 1:
      return base, [base]
    return f"{base}:{n}", [f"{base}#{i}" for i in range(n)]

  def const(self, dtype) -> str:
    return self.const_named("cst" if _is_inexact(dtype) else "c")

  def const_named(self, base: str) -> str:
    """`%base`, then `%base_N` with MLIR's shared uniquing counter."""
    if base not in self.used:
      self.used.add(base)
      return f"%{base}"
    while f"{base}_{self.uniq}" in self.used:
      self.uniq += 1
    name = f"{base}_{self.uniq}"
    self.used.add(name)
    self.uniq += 1
    return f"%{name}"


def _is_inexact(dtype) -> bool:
  dt = np.dtype(dtype)
  return dt == dtypes.bfloat16 or dt.kind in "fc"


class _Printer:
  def __init__(self, module: hlo.Module, debug_info: bool):
    self.module = module
    self.debug = debug_info
    self.locs = _Locs()
    self.funcs: list[hlo.Computation] = []    # computations called through `call`
    self.func_names: dict[int, str] = {}
    self.taken_names = {"main"}
    self.region_depth = 0       # > 0 inside an op's region: calls print as `func.call`
    self.metadata = None        # the op an inlined expansion stands for (its locations)

  def loc(self, md) -> str:
    if self.metadata is not None:
      md = self.metadata
    return f" loc({self.locs.of(md)})" if self.debug else ""

  # --- values ------------------------------------------------------------------------

  def val(self, f: _Func, instr: Instr) -> str:
    v = f.values[instr.id]
    if isinstance(v, list):
      raise ValueError(f"tuple value %{instr.name} used as an array operand")
    return v

  def vals(self, f: _Func, instr: Instr) -> list[str]:
    v = f.values[instr.id]
    return v if isinstance(v, list) else [v]

  def func_name(self, comp: hlo.Computation) -> str:
    """`comp`'s func name: its own, or with `_N` appended when another func has it."""
    name = self.func_names.get(id(comp))
    if name is None:
      name, n = comp.name, 0
      while name in self.taken_names:
        name, n = f"{comp.name}_{n}", n + 1
      self.taken_names.add(name)
      self.func_names[id(comp)] = name
      self.funcs.append(comp)
    return name

  # --- ops ---------------------------------------------------------------------------

  def body(self, comp: hlo.Computation, f: _Func, indent: str, ret: str) -> list[str]:
    """The ops of `comp` (parameters already named) and its return op."""
    lines: list[str] = []
    for instr in comp.instrs:
      if instr.opcode == "parameter":
        continue
      lines.extend(self.op(instr, f, indent))
    outs = self.vals(f, comp.root)
    types = [_ty(s) for s in (comp.root.shape.elements if isinstance(comp.root.shape, TupleShape)
                              else [comp.root.shape])]
    tail = f" {', '.join(outs)} : {', '.join(types)}" if outs else ""
    lines.append(f"{indent}{ret}{tail}{self.loc(hlo.Metadata())}")
    return lines

  def region(self, comp: hlo.Computation, f: _Func, indent: str):
    """A region's block arguments and body (`^bb0(...)` form)."""
    args = []
    for p in comp.params:
      name = f.arg()
      f.values[p.id] = name
      args.append(f"{name}: {_ty(p.shape)}")
    head = f"{indent}^bb0({', '.join(args)}):"
    return [head] + self.region_body(comp, f, indent + "  ")

  def region_body(self, comp: hlo.Computation, f: _Func, indent: str) -> list[str]:
    self.region_depth += 1
    try:
      return self.body(comp, f, indent, "stablehlo.return")
    finally:
      self.region_depth -= 1

  def inline(self, sub: hlo.Module, instr: Instr, f: _Func, indent: str) -> list[str]:
    """The ops of `sub` (standard_ops' expansion of `instr`) in place of `instr`, located
    where `instr` is."""
    comp = sub.entry
    for p, o in zip(comp.params, instr.operands):
      f.values[p.id] = f.values[o.id]
    saved, self.metadata = self.metadata, instr.metadata
    try:
      lines = [line for i in comp.instrs if i.opcode != "parameter"
               for line in self.op(i, f, indent)]
    finally:
      self.metadata = saved
    f.values[instr.id] = f.values[comp.root.id]
    return lines

  def op(self, instr: Instr, f: _Func, indent: str) -> list[str]:
    op, a, shape = instr.opcode, instr.attrs, instr.shape
    sub = standard_ops.expansion(instr)
    if sub is not None:
      return self.inline(sub, instr, f, indent)
    loc = self.loc(instr.metadata)
    ins = lambda: [self.val(f, o) for o in instr.operands]
    in_types = lambda: [_ty(o.shape) for o in instr.operands]
    if op == "tuple":
      f.values[instr.id] = [v for o in instr.operands for v in self.vals(f, o)]
      return []
    if op == "get-tuple-element":
      f.values[instr.id] = self.vals(f, instr.operands[0])[a["index"]]
      return []
    if op == "constant":
      name = f.const(instr.dtype)
      f.values[instr.id] = name
      return [f"{indent}{name} = stablehlo.constant {_dense(a['value'])} : {_ty(shape)}{loc}"]
    n_results = len(shape.elements) if isinstance(shape, TupleShape) else 1
    head, names = f.result(n_results)
    f.values[instr.id] = names if isinstance(shape, TupleShape) else names[0]
    lhs = f"{indent}{head} = " if n_results else indent
    out_t = _ty(shape) if not isinstance(shape, TupleShape) else None
    fn_type = lambda: f"({', '.join(in_types())}) -> {out_t}"
    if op == "optimization-barrier":
      vals = self.vals(f, instr.operands[0])
      types = [_ty(s) for s in instr.operands[0].shape.elements]
      if not vals:
        return []
      return [f"{lhs}stablehlo.optimization_barrier {', '.join(vals)} : {', '.join(types)}{loc}"]
    x = ins()
    if op in _UNARY:
      same = shape == instr.operands[0].shape
      return [f"{lhs}stablehlo.{_UNARY[op]} {x[0]} : {out_t if same else fn_type()}{loc}"]
    if op in _BINARY:
      same = all(o.shape == shape for o in instr.operands)
      return [f"{lhs}stablehlo.{_BINARY[op]} {', '.join(x)} : {out_t if same else fn_type()}{loc}"]
    if op in _CHLO_UNARY:
      return [f"{lhs}chlo.{_CHLO_UNARY[op]} {x[0]} : {in_types()[0]} -> {out_t}{loc}"]
    if op in _CHLO_BINARY:
      return [f"{lhs}chlo.{_CHLO_BINARY[op]} {', '.join(x)} : {', '.join(in_types())} -> "
              f"{out_t}{loc}"]
    if op == "compare":
      return [f"{lhs}stablehlo.compare {a['direction']}, {x[0]}, {x[1]}, {a['compare_type']} : "
              f"{fn_type()}{loc}"]
    if op == "select":
      return [f"{lhs}stablehlo.select {', '.join(x)} : {in_types()[0]}, {out_t}{loc}"]
    if op == "clamp":
      return [f"{lhs}stablehlo.clamp {', '.join(x)} : {fn_type()}{loc}"]
    if op == "reduce-precision":
      return [f"{lhs}stablehlo.reduce_precision {x[0]}, format = e{a['exponent_bits']}"
              f"m{a['mantissa_bits']} : {out_t}{loc}"]
    if op == "broadcast":
      return [f"{lhs}stablehlo.broadcast_in_dim {x[0]}, dims = {_ints(a['dimensions'])} : "
              f"{fn_type()}{loc}"]
    if op == "reshape":
      return [f"{lhs}stablehlo.reshape {x[0]} : {fn_type()}{loc}"]
    if op == "transpose":
      return [f"{lhs}stablehlo.transpose {x[0]}, dims = {_ints(a['dimensions'])} : "
              f"{fn_type()}{loc}"]
    if op == "reverse":
      return [f"{lhs}stablehlo.reverse {x[0]}, dims = {_ints(a['dimensions'])} : {out_t}{loc}"]
    if op == "slice":
      strides = a.get("strides") or (1,) * len(a["start"])
      rng = ", ".join(f"{s}:{l}" + (f":{st}" if st != 1 else "")
                      for s, l, st in zip(a["start"], a["limit"], strides))
      return [f"{lhs}stablehlo.slice {x[0]} [{rng}] : {fn_type()}{loc}"]
    if op == "dynamic-slice":
      return [f"{lhs}stablehlo.dynamic_slice {', '.join(x)}, sizes = {_ints(a['sizes'])} : "
              f"{fn_type()}{loc}"]
    if op == "dynamic-update-slice":
      return [f"{lhs}stablehlo.dynamic_update_slice {', '.join(x)} : {fn_type()}{loc}"]
    if op == "concatenate":
      return [f"{lhs}stablehlo.concatenate {', '.join(x)}, dim = {a['dimension']} : "
              f"{fn_type()}{loc}"]
    if op == "pad":
      return [f"{lhs}stablehlo.pad {x[0]}, {x[1]}, low = {_ints(a['low'])}, high = "
              f"{_ints(a['high'])}, interior = {_ints(a['interior'])} : {fn_type()}{loc}"]
    if op == "iota":
      return [f"{lhs}stablehlo.iota dim = {a['iota_dimension']} : {out_t}{loc}"]
    if op == "dot":
      dims = ""
      if a.get("lhs_batch_dims") or a.get("rhs_batch_dims"):
        dims += f"batching_dims = {_ints(a['lhs_batch_dims'])} x {_ints(a['rhs_batch_dims'])}, "
      dims += (f"contracting_dims = {_ints(a['lhs_contracting_dims'])} x "
               f"{_ints(a['rhs_contracting_dims'])}")
      prec = a.get("precision") or ("DEFAULT", "DEFAULT")
      return [f"{lhs}stablehlo.dot_general {x[0]}, {x[1]}, {dims}, precision = "
              f"[{', '.join(prec)}] : {fn_type()}{loc}"]
    if op == "convolution":
      return [f"{lhs}{_convolution(instr, x)} : {fn_type()}{loc}"]
    if op == "call":
      callee = instr.called[0]
      outs = shape.elements if isinstance(shape, TupleShape) else [shape]
      res = ", ".join(_ty(s) for s in outs)
      res = res if len(outs) == 1 else f"({res})"
      call = "func.call" if self.region_depth else "call"
      return [f"{lhs}{call} {_sym(self.func_name(callee))}({', '.join(x)}) : "
              f"({', '.join(in_types())}) -> {res}{loc}"]
    if op == "top-k":
      res = ", ".join(_ty(s) for s in shape.elements)
      return [f"{lhs}chlo.top_k({x[0]}, k = {a['k']}) : {in_types()[0]} -> ({res}){loc}"]
    if op == "reduce":
      return self.reduce(instr, f, indent, lhs, x, loc)
    if op == "reduce-window":
      res_t = out_t or "(" + ", ".join(_ty(s) for s in shape.elements) + ")"
      pads = np.asarray(a["padding"], np.int64).reshape(-1, 2)
      pad_text = _dense(pads) if pads.size else "dense<>"
      attrs = (f"base_dilations = {_i64s(a['base_dilation'])}, padding = {pad_text} : "
               f"tensor<{len(pads)}x2xi64>, window_dilations = {_i64s(a['window_dilation'])}, "
               f"window_dimensions = {_i64s(a['window_dimensions'])}, window_strides = "
               f"{_i64s(a['window_strides'])}")
      lines = [f'{lhs}"stablehlo.reduce_window"({", ".join(x)}) <{{{attrs}}}> ({{']
      lines += self.region(instr.called[0], f, indent + "  ")
      lines.append(f"{indent}}}) : ({', '.join(in_types())}) -> {res_t}{loc}")
      return lines
    if op == "sort":
      res_t = out_t or "(" + ", ".join(_ty(s) for s in shape.elements) + ")"
      lines = [f'{lhs}"stablehlo.sort"({", ".join(x)}) <{{dimension = {a["dimension"]} : i64, '
               f'is_stable = {str(bool(a.get("is_stable"))).lower()}}}> ({{']
      lines += self.region(instr.called[0], f, indent + "  ")
      lines.append(f"{indent}}}) : ({', '.join(in_types())}) -> {res_t}{loc}")
      return lines
    if op == "gather":
      dn = _dnums("gather", [("offset_dims", a["offset_dims"]),
                             ("collapsed_slice_dims", a["collapsed_slice_dims"]),
                             ("operand_batching_dims", a.get("operand_batching_dims", ())),
                             ("start_indices_batching_dims",
                              a.get("start_indices_batching_dims", ())),
                             ("start_index_map", a["start_index_map"])], a["index_vector_dim"])
      sizes = ", ".join(str(s) for s in a["slice_sizes"])
      return [f'{lhs}"stablehlo.gather"({", ".join(x)}) <{{dimension_numbers = {dn}, '
              f'indices_are_sorted = {str(bool(a.get("indices_are_sorted"))).lower()}, '
              f'slice_sizes = array<i64{": " + sizes if sizes else ""}>}}> : {fn_type()}{loc}']
    if op == "scatter":
      dn = _dnums("scatter", [("update_window_dims", a["update_window_dims"]),
                              ("inserted_window_dims", a["inserted_window_dims"]),
                              ("input_batching_dims", a.get("input_batching_dims", ())),
                              ("scatter_indices_batching_dims",
                               a.get("scatter_indices_batching_dims", ())),
                              ("scatter_dims_to_operand_dims",
                               a["scatter_dims_to_operand_dims"])], a["index_vector_dim"])
      lines = [f'{lhs}"stablehlo.scatter"({", ".join(x)}) <{{indices_are_sorted = '
               f'{str(bool(a.get("indices_are_sorted"))).lower()}, scatter_dimension_numbers = '
               f'{dn}, unique_indices = {str(bool(a.get("unique_indices"))).lower()}}}> ({{']
      lines += self.region(instr.called[0], f, indent + "  ")
      lines.append(f"{indent}}}) : {fn_type()}{loc}")
      return lines
    if op in ("while", "conditional"):
      return self.control_flow(instr, f, indent, lhs, x, loc)
    if op == "fft":
      return [f"{lhs}stablehlo.fft {x[0]}, type = {a['fft_type']}, length = "
              f"{_ints(a['fft_length'])} : {fn_type()}{loc}"]
    if op == "custom-call":
      res_t = out_t or "(" + ", ".join(_ty(s) for s in shape.elements) + ")"
      attrs = (_host_callback_attrs(instr) if a["target"] == host_callbacks.TARGET
               else _lapack_attrs(instr))
      return [f'{lhs}stablehlo.custom_call @{a["target"]}({", ".join(x)}) '
              f'{{{attrs}}} : ({", ".join(in_types())}) -> {res_t}{loc}']
    raise ValueError(f"to_mlir_text: no StableHLO form for the HLO opcode {op!r} "
                     f"(%{instr.name}); print lowered (unoptimized) modules only.")

  def scoped_region(self, comp, f: _Func, indent: str, names) -> list[str]:
    """`comp`'s body as a region whose parameters are the values `names` (the captured
    operands of a case branch, the iteration arguments of a while); value names inside
    restart from the enclosing op's for each region, as MLIR prints them."""
    saved = (f.next_value, set(f.used), f.uniq)
    for p, n in zip(comp.params, names):
      f.values[p.id] = n
    lines = self.region_body(comp, f, indent)
    f.next_value, f.used, f.uniq = saved
    return lines

  def control_flow(self, instr, f, indent, lhs, x, loc) -> list[str]:
    """`stablehlo.case` (conditional: branches capture the operands) and `stablehlo.while`
    (iteration arguments `%iterArg`, `%iterArg_0`, ...)."""
    shapes = instr.shape.elements if isinstance(instr.shape, TupleShape) else [instr.shape]
    res_t = ", ".join(_ty(s) for s in shapes)
    if instr.opcode == "conditional":
      lines = [f'{lhs}"stablehlo.case"({x[0]}) ({{']
      for k, comp in enumerate(instr.called):
        if k:
          lines.append(f"{indent}}}, {{")
        lines += self.scoped_region(comp, f, indent + "  ", x[1:])
      res_t = res_t if len(shapes) == 1 else f"({res_t})"
      lines.append(f"{indent}}}) : ({_ty(instr.operands[0].shape)}) -> {res_t}{loc}")
      return lines
    names = [f.const_named("iterArg") for _ in x]
    args = ", ".join(f"{n} = {v}" for n, v in zip(names, x))
    lines = [f"{lhs}stablehlo.while({args}) : {res_t}", f"{indent}cond {{"]
    lines += self.scoped_region(instr.called[0], f, indent + "  ", names)
    lines.append(f"{indent}}} do {{")
    lines += self.scoped_region(instr.called[1], f, indent + "  ", names)
    lines.append(f"{indent}}}{loc}")
    return lines

  def reduce(self, instr, f, indent, lhs, x, loc) -> list[str]:
    comp = instr.called[0]
    n = len(instr.operands) // 2
    dims = _ints(instr.attrs["dimensions"])
    in_t = ", ".join(_ty(o.shape) for o in instr.operands)
    shapes = instr.shape.elements if isinstance(instr.shape, TupleShape) else [instr.shape]
    out_t = _ty(shapes[0]) if n == 1 else "(" + ", ".join(_ty(s) for s in shapes) + ")"
    args = ", ".join(f"({x[i]} init: {x[n + i]})" for i in range(n))
    root, params = comp.root, comp.params
    if (n == 1 and root.opcode in _BINARY and root.operands == params[:2]
        and len(comp.instrs) == 3):  # `applies stablehlo.add`: the region is one binary op
      return [f"{lhs}stablehlo.reduce{args} applies stablehlo.{_BINARY[root.opcode]} across "
              f"dimensions = {dims} : ({in_t}) -> {out_t}{loc}"]
    names = []
    for p in params:
      names.append(f.arg())
      f.values[p.id] = names[-1]
    pairs = " ".join(f"({names[i]}: {_ty(params[i].shape)}, {names[n + i]}: "
                     f"{_ty(params[n + i].shape)})" for i in range(n))
    lines = [f"{lhs}stablehlo.reduce{args} across dimensions = {dims} : ({in_t}) -> {out_t}",
             f"{indent} reducer{pairs} {{"]
    lines += self.region_body(comp, f, indent + "  ")
    lines.append(f"{indent}}}{loc}")
    return lines

  # --- functions and the module --------------------------------------------------------

  def func(self, comp: hlo.Computation, public: bool) -> list[str]:
    f = _Func()
    args = []
    for i, p in enumerate(comp.params):
      name = f.arg()
      f.values[p.id] = name
      text = f"{name}: {_ty(p.shape)}"
      if public:
        alias = [o for o, q in self.module.input_output_alias.items() if q == i]
        if alias:
          text += f" {{tf.aliasing_output = {alias[0]} : i32}}"
        if self.debug and i < len(self.module.arg_names):
          text += f' loc("{_escape(self.module.arg_names[i])}")'
      args.append(text)
    root = comp.root.shape
    outs = list(root.elements) if isinstance(root, TupleShape) else [root]
    if public:
      names = list(self.module.result_names) or [f"result[{i}]" for i in range(len(outs))]
      res = ", ".join(f'{_ty(s)} {{jax.result_info = "{_escape(n)}"}}' for s, n in zip(outs, names))
      res = f" -> ({res})" if outs else ""
    else:
      res = ", ".join(_ty(s) for s in outs)
      res = "" if not outs else f" -> {res}" if len(outs) == 1 else f" -> ({res})"
    vis = "public" if public else "private"
    lines = [f"  func.func {vis} {_sym('main' if public else self.func_name(comp))}"
             f"({', '.join(args)}){res} {{"]
    lines += self.body(comp, f, "    ", "return")
    lines.append("  }" + (" loc(#loc)" if self.debug else ""))
    return lines

  def text(self) -> str:
    m = self.module
    lines = self.func(m.entry, public=True)
    done = 0
    while done < len(self.funcs):   # callees are found while printing their callers
      lines += self.func(self.funcs[done], public=False)
      done += 1
    head = (f"module {_sym(m.name)} attributes {{mhlo.num_partitions = 1 : i32, "
            f"mhlo.num_replicas = 1 : i32}} {{")
    out = [head] + lines + ["}" + (" loc(#loc)" if self.debug else "")]
    if self.debug:
      out += ["#loc = loc(unknown)"] + self.locs.defs
    return "\n".join(out) + "\n"


# LAPACK targets that write their first result into an operand's buffer: which operand
_LAPACK_ALIASED_OPERAND = {"potrf": 0, "getrf": 0, "geqrf": 0, "orgqr": 0, "ungqr": 0,
                           "syevd": 0, "heevd": 0, "gesdd": 0, "trsm": 1, "gees": 0,
                           "gehrd": 0, "sytrd": 0, "hetrd": 0, "gtsv": 0, "ormqr": 2,
                           "unmqr": 2}


def _host_callback_attrs(instr: Instr) -> str:
  """A host callback's attributes: its id in this process, and whether it has effects."""
  cid = dict(instr.attrs["backend_config"])["callback_id"]
  effect = ", has_side_effect = true" if instr.attrs.get("has_side_effect") else ""
  return f'api_version = 2 : i32, backend_config = "callback_id={cid}"{effect}'


def _lapack_attrs(instr: Instr) -> str:
  """A LAPACK FFI custom call's attributes as JAX writes them: the config, the number of
  batch dimensions, column-major layouts for the matrices (each array of the operand's rank
  holds matrices in its last two dimensions; lower ranks are row-major), and the operand
  the first result overwrites."""
  nb = max(o.shape.rank for o in instr.operands) - 2   # gtsv: vectors, then the matrix b
  cfg = ", ".join(f"{k} = {v} : ui8" for k, v in instr.attrs.get("backend_config", ()))
  results = instr.shape.elements if isinstance(instr.shape, TupleShape) else [instr.shape]
  parts = ['backend_config = ""', f"mhlo.backend_config = {{{cfg}}}",
           f'mhlo.frontend_attributes = {{num_batch_dims = "{nb}"}}',
           f"operand_layouts = [{', '.join(_layout(o.shape.rank, nb) for o in instr.operands)}]"]
  routine = instr.attrs["target"].split("_")[1][1:]      # lapack_spotrf_ffi -> potrf
  if routine in _LAPACK_ALIASED_OPERAND:
    tuple_index = "[0]" if isinstance(instr.shape, TupleShape) else "[]"
    parts.append(f"output_operand_aliases = [#stablehlo.output_operand_alias<"
                 f"output_tuple_indices = {tuple_index}, operand_index = "
                 f"{_LAPACK_ALIASED_OPERAND[routine]}, operand_tuple_indices = []>]")
  parts.append(f"result_layouts = [{', '.join(_layout(s.rank, nb) for s in results)}]")
  return ", ".join(parts)


def _convolution(instr: Instr, x: list[str]) -> str:
  """`stablehlo.convolution(...) dim_numbers = ..., window = {...} {...}` as JAX prints it."""
  a = instr.attrs
  labels = ["[" + ", ".join(ls) + "]" for ls in hlo.conv_dim_labels(a["dimension_numbers"])]
  nsp = len(a["window_strides"])
  pad = ", ".join(f"[{lo}, {hi}]" for lo, hi in a["padding"])
  window = (f"stride = {_ints(a['window_strides'])}, pad = [{pad}], lhs_dilate = "
            f"{_ints(a['lhs_dilation'])}, rhs_dilate = {_ints(a['rhs_dilation'])}, reverse = "
            f"[{', '.join(['false'] * nsp)}]")
  prec = ", ".join(f"#stablehlo<precision {p}>"
                   for p in a.get("precision") or ("DEFAULT", "DEFAULT"))
  return (f"stablehlo.convolution({x[0]}, {x[1]}) dim_numbers = {labels[0]}x{labels[1]}->"
          f"{labels[2]}, window = {{{window}}} {{batch_group_count = {a['batch_group_count']} "
          f": i64, feature_group_count = {a['feature_group_count']} : i64, precision_config = "
          f"[{prec}]}}")


def _layout(rank: int, nb: int) -> str:
  """Minor-to-major dimension order: a batch of matrices column-major, else row-major."""
  order = [nb, nb + 1] + list(range(nb - 1, -1, -1)) if rank == nb + 2 else \
      list(range(rank - 1, -1, -1))
  return f"{_dense(np.array(order, np.int64))} : tensor<{rank}xindex>" if order else \
      "dense<> : tensor<0xindex>"


def _dnums(kind: str, fields, index_vector_dim: int) -> str:
  parts = [f"{k} = {_ints(v)}" for k, v in fields if len(v)]
  parts.append(f"index_vector_dim = {index_vector_dim}")
  return f"#stablehlo.{kind}<{', '.join(parts)}>"


def to_mlir_text(module: hlo.Module, debug_info: bool = False) -> str:
  """The lowered module as StableHLO MLIR text, in JAX's style."""
  return _Printer(module, debug_info).text()
