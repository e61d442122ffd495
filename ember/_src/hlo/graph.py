"""The HLO graph: ember's compiler IR, between lowering and code generation.

One IR serves the whole pipeline. Lowering (`ember/_src/lower/`) builds a `Module` from a
jaxpr; `Lowered.as_text()` prints it in StableHLO's MLIR syntax (`lower/mlir.py`); the
passes (`ember/_src/passes/`) rewrite it; `Compiled.as_text()` prints the optimized
module in XLA's HLO text syntax (`to_text` below); the CPU backend generates code for it.

Opcodes are XLA's HLO opcode names (`add`, `sine`, `broadcast`, `dot`, `fusion`, ...),
with a few ember extensions for elementwise functions XLA expands (`erf-inv`, `asin`, ...).
Attributes live in `Instr.attrs` under the names documented in `OPCODES` below.
"""
from __future__ import annotations

import hashlib
import itertools
import math
from typing import Iterable, NamedTuple, Sequence

import numpy as np

from ember._src.base import dtypes

# --------------------------------------------------------------------------------------
# Shapes
# --------------------------------------------------------------------------------------

_HLO_TYPE = {
    "bool": "pred", "int8": "s8", "int16": "s16", "int32": "s32", "int64": "s64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "c64", "complex128": "c128",
    "void": "pred",   # float0 (the tangents of integers: no data), printed as JAX lowers it
}
# ml_dtypes' 8-bit floats: float8_e4m3fn is f8e4m3fn in HLO, f8E4M3FN in MLIR
_FLOAT8_NAMES = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e4m3", "float8_e3m4", "float8_e4m3b11fnuz")
_HLO_TYPE.update({n: "f8" + n[len("float8_"):] for n in _FLOAT8_NAMES})
_MLIR_TYPE = {
    "bool": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64",
    "float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
    "complex64": "complex<f32>", "complex128": "complex<f64>",
    "void": "i1",     # float0, as JAX lowers it
}
_MLIR_TYPE.update({n: "f8" + n[len("float8_"):].upper() for n in _FLOAT8_NAMES})


class Shape(NamedTuple):
  """An array shape: element dtype and dimensions (row-major layout throughout)."""
  dtype: np.dtype
  dims: tuple

  @property
  def rank(self) -> int:
    return len(self.dims)

  @property
  def size(self) -> int:
    return int(math.prod(self.dims))   # np.prod costs ~5 us: passes call this a lot

  @property
  def nbytes(self) -> int:
    return self.size * np.dtype(self.dtype).itemsize

  def hlo_type(self) -> str:
    return _HLO_TYPE[np.dtype(self.dtype).name]

  def to_hlo(self, layout: bool = True) -> str:
    s = f"{self.hlo_type()}[{','.join(map(str, self.dims))}]"
    if layout and self.dims:
      s += "{" + ",".join(str(i) for i in reversed(range(self.rank))) + "}"
    return s

  def to_mlir(self) -> str:
    return "tensor<" + "".join(f"{d}x" for d in self.dims) + _MLIR_TYPE[np.dtype(self.dtype).name] + ">"

  @staticmethod
  def of(aval) -> "Shape":
    dt = aval.dtype
    if isinstance(dt, np.dtype):
      return Shape(dt, tuple(aval.shape))
    if dtypes.has_rules(dt):   # a user's extended dtype is stored as its physical element
      elt_shape, elt_dtype = dtypes.physical_element(dt)
      return Shape(elt_dtype, (*aval.shape, *elt_shape))
    return Shape(np.dtype(dt), tuple(aval.shape))


class TupleShape(NamedTuple):
  """The shape of a multi-output instruction (tuple, multi-operand reduce/sort, fusion)."""
  elements: tuple

  @property
  def nbytes(self) -> int:
    return sum(e.nbytes for e in self.elements)

  def to_hlo(self, layout: bool = True) -> str:
    parts = []
    for i, e in enumerate(self.elements):
      parts.append((f"/*index={i}*/" if i and i % 5 == 0 else "") + e.to_hlo(layout))
    return "(" + ", ".join(parts) + ")"

  def to_mlir(self) -> str:
    return "(" + ", ".join(e.to_mlir() for e in self.elements) + ")"


def scalar_shape(dtype) -> Shape:
  return Shape(np.dtype(dtype), ())


# --------------------------------------------------------------------------------------
# Opcodes
# --------------------------------------------------------------------------------------

# Elementwise opcodes -> number of operands. Transcendental ones count as
# `transcendentals` (not `flops`) in cost analysis, as XLA counts them.
UNARY = {"abs", "negate", "sign", "floor", "ceil", "round-nearest-afz", "round-nearest-even",
         "exponential", "exponential-minus-one", "log", "log-plus-one", "tanh", "logistic",
         "sine", "cosine", "tan", "sqrt", "rsqrt", "cbrt", "erf", "erfc", "erf-inv", "lgamma",
         "digamma", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh",
         "is-finite", "not", "popcnt", "count-leading-zeros", "real", "imag", "convert",
         "bitcast-convert", "reduce-precision", "copy"}
BINARY = {"add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum",
          "atan2", "and", "or", "xor", "shift-left", "shift-right-arithmetic",
          "shift-right-logical", "compare", "complex", "next-after"}
TERNARY = {"select", "clamp", "fma"}   # fma: ember's, x * y + z rounded once
ELEMENTWISE = UNARY | BINARY | TERNARY
TRANSCENDENTAL = {"exponential", "exponential-minus-one", "log", "log-plus-one", "tanh",
                  "logistic", "sine", "cosine", "tan", "sqrt", "rsqrt", "cbrt", "erf", "erfc",
                  "erf-inv", "lgamma", "digamma", "asin", "acos", "atan", "sinh", "cosh",
                  "asinh", "acosh", "atanh", "power", "atan2"}
# Elementwise ops that cost nothing in `flops` (data movement / bit reinterpretation).
FREE = {"convert", "bitcast-convert", "copy", "real", "imag", "reduce-precision"}

# Attribute names by opcode (values are plain Python: ints, tuples, strings, np arrays).
OPCODES: dict[str, tuple[str, ...]] = {
    "parameter": ("number",),                       # + Instr.name from the argument name
    "constant": ("value",),                         # np.ndarray of the shape's dtype
    "iota": ("iota_dimension",),
    "broadcast": ("dimensions",),                   # operand dim i -> output dim dimensions[i]
    "reshape": (),
    "transpose": ("dimensions",),                   # output dim i = operand dim dimensions[i]
    "reverse": ("dimensions",),
    "slice": ("start", "limit", "strides"),
    "dynamic-slice": ("sizes",),                    # operands: array, then one scalar per dim
    "dynamic-update-slice": (),                     # operands: array, update, scalar starts...
    "concatenate": ("dimension",),
    "pad": ("low", "high", "interior"),             # operands: array, padding value
    "compare": ("direction", "compare_type"),       # EQ NE LT LE GT GE; FLOAT SIGNED UNSIGNED
    "reduce": ("dimensions",),                      # operands: inputs..., inits...; called[0]
    "reduce-window": ("window_dimensions", "window_strides", "padding", "base_dilation",
                      "window_dilation"),           # operands: inputs..., inits...; called[0]
    "dot": ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims", "rhs_batch_dims"),
    # dimension_numbers: (lhs_spec, rhs_spec, out_spec) as lax's ConvDimensionNumbers;
    # padding: a (low, high) pair per spatial dim. Expanded before codegen (conv_expansion)
    "convolution": ("window_strides", "padding", "lhs_dilation", "rhs_dilation",
                    "dimension_numbers", "feature_group_count", "batch_group_count",
                    "precision"),
    "gather": ("offset_dims", "collapsed_slice_dims", "start_index_map",
               "operand_batching_dims", "start_indices_batching_dims", "index_vector_dim",
               "slice_sizes", "indices_are_sorted"),
    "scatter": ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
                "input_batching_dims", "scatter_indices_batching_dims", "index_vector_dim",
                "indices_are_sorted", "unique_indices"),   # called[0]: update computation
    "sort": ("dimension", "is_stable"),             # called[0]: comparator
    "top-k": ("k",),
    "tuple": (),
    "get-tuple-element": ("index",),
    "call": (),                                     # called[0]
    "fusion": ("kind",),                            # kLoop | kInput | kOutput; called[0]
    "while": (),                                    # called: [condition, body]
    "conditional": (),                              # called: branch computations
    "optimization-barrier": (),
    "custom-call": ("target",),
    "fft": ("fft_type", "fft_length"),             # FFT IFFT RFFT IRFFT; trailing dims
    "rng-bit-generator": (),
    "threefry2x32": (),
}
for _op in ELEMENTWISE:
  OPCODES.setdefault(_op, ())
OPCODES["reduce-precision"] = ("exponent_bits", "mantissa_bits")


class Metadata(NamedTuple):
  """Where an instruction came from: `jit(f)/scope/sin` and the user's source line."""
  op_name: str = ""
  source_file: str | None = None
  source_line: int | None = None

  def to_hlo(self) -> str:
    parts = []
    if self.op_name:
      parts.append(f'op_name="{self.op_name}"')
    if self.source_file:
      parts.append(f'source_file="{self.source_file}"')
    if self.source_line is not None:
      parts.append(f"source_line={self.source_line}")
    return "metadata={" + " ".join(parts) + "}" if parts else ""


# --------------------------------------------------------------------------------------
# Instructions, computations, modules
# --------------------------------------------------------------------------------------

_ids = itertools.count()


class Instr:
  """One HLO instruction. `operands` are Instrs of the same computation; `called` are the
  computations it applies (reduce's to_apply, fusion's fused computation, ...)."""
  __slots__ = ("opcode", "shape", "operands", "attrs", "called", "name", "metadata", "id")

  def __init__(self, opcode: str, shape, operands: Sequence["Instr"] = (),
               attrs: dict | None = None, called: Sequence["Computation"] = (),
               name: str | None = None, metadata: Metadata | None = None):
    if opcode not in OPCODES:
      raise ValueError(f"unknown HLO opcode {opcode!r}")
    self.opcode, self.shape = opcode, shape
    self.operands = list(operands)
    self.attrs = dict(attrs or {})
    self.called = list(called)
    self.name = name            # unique within its module once added (Computation.add)
    self.metadata = metadata or Metadata()
    self.id = next(_ids)

  @property
  def dtype(self):
    return self.shape.dtype

  @property
  def dims(self):
    return self.shape.dims

  def is_elementwise(self) -> bool:
    return self.opcode in ELEMENTWISE

  def __repr__(self):
    return f"<Instr %{self.name} = {self.opcode}>"


class Computation:
  """An ordered list of instructions (topological: operands before users) with a root.
  Parameters are the instructions with opcode `parameter`, ordered by `attrs['number']`."""

  def __init__(self, name: str, module: "Module | None" = None):
    self.name = name
    self.module = module
    self.instrs: list[Instr] = []
    self.root: Instr | None = None
    self.is_fusion = False

  @property
  def params(self) -> list[Instr]:
    ps = [i for i in self.instrs if i.opcode == "parameter"]
    return sorted(ps, key=lambda p: p.attrs["number"])

  def add(self, instr: Instr) -> Instr:
    """Append an instruction (its operands must already be in this computation)."""
    if instr.name is None or (self.module and self.module.name_taken(instr.name)):
      base = instr.name or instr.opcode
      instr.name = self.module.unique_name(base) if self.module else f"{base}.{instr.id}"
    elif self.module:
      self.module.reserve_name(instr.name)
    self.instrs.append(instr)
    return instr

  def users(self) -> dict[int, list[Instr]]:
    """id(instr) -> instructions that use it as an operand (the root has an extra user)."""
    out: dict[int, list[Instr]] = {i.id: [] for i in self.instrs}
    for i in self.instrs:
      for o in i.operands:
        out.setdefault(o.id, []).append(i)
    return out

  def replace_all_uses(self, old: Instr, new: Instr) -> None:
    for i in self.instrs:
      i.operands = [new if o is old else o for o in i.operands]
    if self.root is old:
      self.root = new

  def sort_and_prune(self) -> None:
    """Keep only instructions reachable from the root or with side effects (and all
    parameters, which fix the signature), in a topological order that respects the current
    order where it can, and keeps the side effects in their order."""
    live: set[int] = set()
    effectful = [i for i in self.instrs if has_side_effect(i)]
    stack = [self.root] + effectful
    while stack:
      i = stack.pop()
      if i.id in live:
        continue
      live.add(i.id)
      stack.extend(i.operands)
    position = {i.id: n for n, i in enumerate(self.instrs)}
    order: list[Instr] = []
    done: set[int] = set()

    # side effects keep their order: each effectful instruction comes after the one before
    after = {i.id: [prev] for prev, i in zip(effectful, effectful[1:])}

    def visit(i: Instr):
      stack = [(i, False)]
      while stack:
        node, expanded = stack.pop()
        if node.id in done:
          continue
        if expanded:
          done.add(node.id)
          order.append(node)
          continue
        stack.append((node, True))
        deps = list(node.operands) + after.get(node.id, [])
        for o in sorted(deps, key=lambda o: -position.get(o.id, -1)):
          if o.id not in done:
            stack.append((o, False))

    for i in sorted((i for i in self.instrs if i.id in live or i.opcode == "parameter"),
                    key=lambda i: position.get(i.id, 0)):
      visit(i)
    self.instrs = order

  def __repr__(self):
    return f"<Computation {self.name}: {len(self.instrs)} instrs>"


def has_side_effect(instr: Instr) -> bool:
  """A custom call marked `has_side_effect` (a host callback), or an instruction calling a
  computation that holds one (a call, loop or branch around it)."""
  return bool(instr.attrs.get("has_side_effect")) or any(
      has_side_effect(i) for c in instr.called for i in c.instrs)


def regroupable(comp: "Computation", dtype) -> bool:
  """Whether `comp` is op(p0, p1) with an op whose every grouping gives the same bits:
  max/min (NaN wins, -0 < +0, at any grouping), integer add/multiply (wrapping) and
  bitwise ops; not float add/multiply, whose rounding depends on the grouping (a scan of
  those runs in XLA:CPU's order: reference/scans.py)."""
  r = comp.root
  if len(comp.params) != 2 or {o.id for o in r.operands} != {p.id for p in comp.params} \
      or len(r.operands) != 2:
    return False
  if r.opcode in ("maximum", "minimum"):
    return np.dtype(dtype).kind != "c"
  return r.opcode in ("add", "multiply", "and", "or", "xor") and np.dtype(dtype).kind in "biu"


def scan_window(instr: Instr) -> tuple[int, bool] | None:
  """(axis, reverse) when `instr` is a single-operand reduce-window that is an inclusive
  scan: a window spanning the whole of one axis of length n, padded by n - 1 before it
  (forward: output i folds elements 0..i) or after it (reverse: elements i..n-1), every
  other window dim 1, no stride, dilation or padding. That is how cumsum and friends
  lower (as JAX lowers them for TPUs); consumers run it as one O(n) pass along the axis
  (hlo evaluator, fusion, cost analysis, the CPU scan kernel), never as n windows of n."""
  if instr.opcode != "reduce-window" or len(instr.operands) != 2:
    return None
  a, dims = instr.attrs, instr.operands[0].shape.dims
  if any(v != 1 for k in ("window_strides", "base_dilation", "window_dilation")
         for v in a[k]) or tuple(instr.shape.dims) != tuple(dims):
    return None
  scans = [d for d, w in enumerate(a["window_dimensions"]) if w != 1]
  if len(scans) != 1 or a["window_dimensions"][scans[0]] != dims[scans[0]]:
    return None
  axis = scans[0]
  n = dims[axis]
  pads = [tuple(p) for p in a["padding"]]
  if any(p != (0, 0) for d, p in enumerate(pads) if d != axis) or \
      pads[axis] not in ((n - 1, 0), (0, n - 1)):
    return None
  return axis, pads[axis] == (0, n - 1)


class Module:
  """A compiled unit: the entry computation and every computation it calls."""

  def as_hlo_text(self) -> str:
    """The module in XLA's HLO text syntax (JAX's `compiler_ir(dialect="hlo")` returns an
    XlaComputation with this method), without metadata as there."""
    return to_text(self, metadata=False)

  def __init__(self, name: str):
    self.name = name                      # "jit_f"
    self.entry: Computation | None = None
    self.computations: list[Computation] = []
    self.input_output_alias: dict[int, int] = {}   # output index -> donated parameter number
    self.arg_names: list[str] = []
    self.result_names: list[str] = []
    self._names: set[str] = set()
    self._counters: dict[str, itertools.count] = {}

  def new_computation(self, name: str) -> Computation:
    c = Computation(self.unique_name(name), self)
    self.computations.append(c)
    return c

  def name_taken(self, name: str) -> bool:
    return name in self._names

  def reserve_name(self, name: str) -> None:
    self._names.add(name)

  def unique_name(self, base: str) -> str:
    """`base` if free, else `base.1`, `base.2`, ... (XLA's uniquifier)."""
    if base not in self._names:
      self._names.add(base)
      return base
    counter = self._counters.setdefault(base, itertools.count(1))
    while True:
      name = f"{base}.{next(counter)}"
      if name not in self._names:
        self._names.add(name)
        return name

  def called_computations(self) -> list[Computation]:
    """Computations reachable from the entry, callees before callers (print order)."""
    return reachable_computations(self.entry)

  def prune_computations(self) -> None:
    self.computations = self.called_computations()


def module_of(comp: Computation, name: str) -> Module:
  """A module whose entry is a deep copy of `comp` and of the computations it calls (a loop
  body or branch compiled as a program of its own; the copy can be rewritten freely)."""
  m = Module(name)
  memo: dict[int, Computation] = {}

  def clone(c: Computation) -> Computation:
    if id(c) in memo:
      return memo[id(c)]
    subs = {id(s): clone(s) for i in c.instrs for s in i.called}
    new = memo[id(c)] = m.new_computation(c.name)
    new.is_fusion = c.is_fusion
    env: dict[int, Instr] = {}
    for i in c.instrs:
      env[i.id] = new.add(Instr(i.opcode, i.shape, [env[o.id] for o in i.operands],
                                dict(i.attrs), [subs[id(s)] for s in i.called],
                                name=i.name, metadata=i.metadata))
    new.root = env[c.root.id]
    return new
  m.entry = clone(comp)
  m.prune_computations()
  m.arg_names = [p.name for p in m.entry.params]
  n_out = len(comp.root.shape.elements) if isinstance(comp.root.shape, TupleShape) else 1
  m.result_names = [f"result[{k}]" for k in range(n_out)] if n_out != 1 else ["result"]
  return m


def adopt(module: Module, sub: Module) -> Computation:
  """Move `sub`'s computations into `module` (names made unique in it); returns the
  entry computation of `sub`, now a computation of `module`."""
  for c in sub.called_computations():
    c.name = module.unique_name(c.name)
    c.module = module
    for i in c.instrs:
      i.name = module.unique_name(i.name) if module.name_taken(i.name) else i.name
      module.reserve_name(i.name)
    module.computations.append(c)
  return sub.entry


def instructions(comp: Computation, recursive: bool = True) -> Iterable[Instr]:
  """All instructions of `comp` (and of the computations it calls, when recursive)."""
  for i in comp.instrs:
    yield i
    if recursive:
      for sub in i.called:
        yield from instructions(sub)


# --------------------------------------------------------------------------------------
# XLA HLO text
# --------------------------------------------------------------------------------------


def _dims(v) -> str:
  return "{" + ",".join(map(str, v)) + "}"


_SIGNIFICANT_DIGITS = {"bfloat16": 4, "float16": 5, "float32": 9, "complex64": 9}


def format_constant(value: np.ndarray) -> str:
  """XLA's literal syntax: `constant(1)`, `constant(-inf)`, `constant(0.909297407)`,
  `constant({1, 2, 3})` (floats with the significant digits of their dtype, as XLA)."""
  value = np.asarray(value)
  if value.dtype == dtypes.float0:   # no data: printed as the pred zeros JAX lowers it to
    value = np.zeros(value.shape, np.bool_)
  digits = _SIGNIFICANT_DIGITS.get(value.dtype.name)  # None: shortest round-trip (f64)

  def scalar(x):
    if isinstance(x, (bool, np.bool_)):
      return "true" if x else "false"
    if isinstance(x, (complex, np.complexfloating)):
      return f"({scalar(x.real)}, {scalar(x.imag)})"
    if isinstance(x, (float, np.floating)):
      x = float(x)
      if np.isnan(x):
        return "nan"
      if np.isinf(x):
        return "inf" if x > 0 else "-inf"
      if x == 0:
        return "-0" if np.signbit(x) else "0"
      if x.is_integer() and abs(x) < 1e16:
        return repr(int(x))
      return f"{x:.{digits}g}" if digits else repr(x)
    return str(int(x))

  def rec(a):
    if a.ndim == 0:
      return scalar(a.item() if a.dtype != dtypes.bfloat16 else float(a))
    return "{ " + ", ".join(rec(x) for x in a) + " }" if a.ndim > 1 else \
        "{" + ", ".join(rec(x) for x in a) + "}"
  if value.dtype == dtypes.bfloat16:
    value = value.astype(np.float32)
  if value.size > 16 and value.ndim > 0:
    return "{...}"
  return rec(value)


def _attr_text(instr: Instr) -> list[str]:
  a, op = instr.attrs, instr.opcode
  out: list[str] = []
  if op in ("broadcast", "transpose", "reverse", "reduce") and "dimensions" in a:
    out.append(f"dimensions={_dims(a['dimensions'])}")
  elif op == "concatenate":
    out.append(f"dimensions={{{a['dimension']}}}")
  elif op == "slice":
    strides = a.get("strides") or (1,) * len(a["start"])
    out.append("slice={" + ", ".join(f"[{s}:{l}:{st}]" for s, l, st in
                                      zip(a["start"], a["limit"], strides)) + "}")
  elif op == "dynamic-slice":
    out.append(f"dynamic_slice_sizes={_dims(a['sizes'])}")
  elif op == "pad":
    out.append("padding=" + "x".join(
        f"{l}_{h}" + (f"_{i}" if i else "") for l, h, i in zip(a["low"], a["high"], a["interior"])))
  elif op == "iota":
    out.append(f"iota_dimension={a['iota_dimension']}")
  elif op == "compare":
    out.append(f"direction={a['direction']}")
  elif op == "dot":
    for k in ("lhs_batch_dims", "lhs_contracting_dims", "rhs_batch_dims", "rhs_contracting_dims"):
      if a.get(k) or k.endswith("contracting_dims"):
        out.append(f"{k}={_dims(a.get(k, ()))}")
  elif op == "convolution":
    out += _conv_attr_text(instr)
  elif op == "get-tuple-element":
    out.append(f"index={a['index']}")
  elif op == "fusion":
    out.append(f"kind={a['kind']}")
  elif op in ("sort",):
    out.append(f"dimensions={{{a['dimension']}}}")
    if a.get("is_stable"):
      out.append("is_stable=true")
  elif op == "gather":
    for k in ("offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
              "start_indices_batching_dims"):
      if a.get(k) or k in ("offset_dims", "collapsed_slice_dims", "start_index_map"):
        out.append(f"{k}={_dims(a.get(k, ()))}")
    out.append(f"index_vector_dim={a['index_vector_dim']}")
    out.append(f"slice_sizes={_dims(a['slice_sizes'])}")
    if a.get("indices_are_sorted"):
      out.append("indices_are_sorted=true")
  elif op == "scatter":
    for k in ("update_window_dims", "inserted_window_dims", "scatter_dims_to_operand_dims",
              "input_batching_dims", "scatter_indices_batching_dims"):
      if a.get(k) or k in ("update_window_dims", "inserted_window_dims",
                           "scatter_dims_to_operand_dims"):
        out.append(f"{k}={_dims(a.get(k, ()))}")
    out.append(f"index_vector_dim={a['index_vector_dim']}")
    if a.get("indices_are_sorted"):
      out.append("indices_are_sorted=true")
    if a.get("unique_indices"):
      out.append("unique_indices=true")
  elif op == "top-k":
    out.append(f"k={a['k']}")
  elif op == "reduce-precision":
    out.append(f"exponent_bits={a['exponent_bits']}, mantissa_bits={a['mantissa_bits']}")
  elif op == "custom-call":
    out.append(f'custom_call_target="{a["target"]}"')
    if a.get("has_side_effect"):
      out.append("custom_call_has_side_effect=true")
  elif op == "reduce-window":
    out.append("window={" + window_text(a) + "}")
  elif op == "fft":
    out.append(f"fft_type={a['fft_type']}, fft_length={_dims(a['fft_length'])}")
  if instr.called:
    key = {"fusion": "calls", "call": "to_apply", "reduce": "to_apply", "scatter": "to_apply",
           "sort": "to_apply", "reduce-window": "to_apply"}.get(op)
    if key:
      out.append(f"{key}=%{instr.called[0].name}")
    elif op == "while":
      out.append(f"condition=%{instr.called[0].name}, body=%{instr.called[1].name}")
    elif op == "conditional":
      out.append("branch_computations={" + ", ".join(f"%{c.name}" for c in instr.called) + "}")
  return out


def window_text(a: dict) -> str:
  """XLA's window syntax: `size=3x3 stride=2x2 pad=0_1x1_1 lhs_dilate=2x1 rhs_dilate=1x2`,
  each field left out where it is all its default."""
  x = lambda v: "x".join(map(str, v))
  parts = [f"size={x(a['window_dimensions'])}"]
  if any(s != 1 for s in a["window_strides"]):
    parts.append(f"stride={x(a['window_strides'])}")
  if any(p != (0, 0) for p in map(tuple, a["padding"])):
    parts.append("pad=" + "x".join(f"{lo}_{hi}" for lo, hi in a["padding"]))
  if any(d != 1 for d in a["base_dilation"]):
    parts.append(f"lhs_dilate={x(a['base_dilation'])}")
  if any(d != 1 for d in a["window_dilation"]):
    parts.append(f"rhs_dilate={x(a['window_dilation'])}")
  return " ".join(parts)


def conv_dim_labels(dimension_numbers) -> tuple[list[str], list[str], list[str]]:
  """XLA's per-dimension labels of a convolution's lhs, rhs and output: b/f (o/i for the
  kernel) and the spatial dims' numbers."""
  def labels(spec, batch, feature):
    out = [""] * len(spec)
    out[spec[0]], out[spec[1]] = batch, feature
    for n, d in enumerate(spec[2:]):
      out[d] = str(n)
    return out
  lhs, rhs, res = dimension_numbers
  return labels(lhs, "b", "f"), labels(rhs, "o", "i"), labels(res, "b", "f")


def _conv_attr_text(instr: Instr) -> list[str]:
  a = instr.attrs
  rhs_spec = a["dimension_numbers"][1]
  window = window_text({
      "window_dimensions": [instr.operands[1].dims[d] for d in rhs_spec[2:]],
      "window_strides": a["window_strides"], "padding": a["padding"],
      "base_dilation": a["lhs_dilation"], "window_dilation": a["rhs_dilation"]})
  lhs, rhs, res = ("".join(ls) for ls in conv_dim_labels(a["dimension_numbers"]))
  out = ["window={" + window + "}", f"dim_labels={lhs}_{rhs}->{res}"]
  for key in ("feature_group_count", "batch_group_count"):
    if a[key] != 1:
      out.append(f"{key}={a[key]}")
  return out


def instr_to_text(instr: Instr, is_root: bool = False, metadata: bool = True) -> str:
  shape = instr.shape.to_hlo()
  if instr.opcode == "parameter":
    body = f"parameter({instr.attrs['number']})"
  elif instr.opcode == "constant":
    body = f"constant({format_constant(instr.attrs['value'])})"
  else:
    body = f"{instr.opcode}(" + ", ".join(f"%{o.name}" for o in instr.operands) + ")"
  parts = [body] + _attr_text(instr)
  md = instr.metadata.to_hlo() if metadata else ""
  if md:
    parts.append(md)
  return f"  {'ROOT ' if is_root else ''}%{instr.name} = {shape} " + ", ".join(parts)


def computation_to_text(comp: Computation, entry: bool = False, metadata: bool = True) -> str:
  params = ", ".join(f"{p.name}: {p.shape.to_hlo(layout=False)}" for p in comp.params)
  head = f"{'ENTRY ' if entry else ''}%{comp.name} ({params}) -> {comp.root.shape.to_hlo(layout=False)} {{"
  lines = [head] + [instr_to_text(i, i is comp.root, metadata) for i in comp.instrs] + ["}"]
  return "\n".join(lines)


def to_text(module: Module, metadata: bool = True) -> str:
  """The module in XLA's HLO text syntax (what `Compiled.as_text()` returns); without
  `metadata`, no `metadata={...}` (op names, source lines) on the instructions."""
  entry = module.entry
  ins = ", ".join(p.shape.to_hlo() for p in entry.params)
  layout = f"({ins})->{entry.root.shape.to_hlo()}"
  header = f"HloModule {module.name}, entry_computation_layout={{{layout}}}"
  if module.input_output_alias:
    aliases = ", ".join(
        f"{{{o}}}: ({p}, {{}}, may-alias)" if isinstance(entry.root.shape, TupleShape)
        else f"{{}}: ({p}, {{}}, may-alias)"
        for o, p in sorted(module.input_output_alias.items()))
    header += f", input_output_alias={{ {aliases} }}"
  comps = module.called_computations()
  body = [computation_to_text(c, entry=c is entry, metadata=metadata) for c in comps]
  return header + "\n\n" + "\n\n".join(body) + "\n"


def reachable_computations(root: Computation) -> list[Computation]:
  """`root` and the computations it calls, transitively; callees before callers."""
  order: list[Computation] = []
  seen: set[int] = set()

  def visit(c: Computation):
    if id(c) in seen:
      return
    seen.add(id(c))
    for i in c.instrs:
      for sub in i.called:
        visit(sub)
    order.append(c)
  visit(root)
  return order


def structure_key(comps: Sequence[Computation]) -> tuple:
  """Every computation's instructions as (opcode, shape, operand positions, attributes,
  called computation positions), names and metadata left out: equal keys mean the same
  program (interchangeable code)."""
  comp_pos = {id(c): n for n, c in enumerate(comps)}

  def attr(v):
    if isinstance(v, (np.ndarray, np.generic)):
      v = np.asarray(v)
      return (v.dtype.str, v.shape, hashlib.sha256(np.ascontiguousarray(v).tobytes()).digest())
    try:
      hash(v)
      return v
    except TypeError:
      return repr(v)

  key = []
  for c in comps:
    pos = {i.id: n for n, i in enumerate(c.instrs)}
    key.append(tuple([
        (i.opcode, i.shape, tuple([pos[o.id] for o in i.operands]),
         tuple(sorted([(k, attr(v)) for k, v in i.attrs.items()])) if i.attrs else (),
         tuple([comp_pos[id(sub)] for sub in i.called]) if i.called else (), i is c.root)
        for i in c.instrs]))
  return tuple(key)
