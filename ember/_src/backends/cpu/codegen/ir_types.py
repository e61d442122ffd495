"""dtypes as LLVM types, and register constants: how every generator of kernels in
backends/cpu (fusions here, dot_kernels, linalg_kernels) spells an element, plus the error
they raise for what they cannot compile.

Registers: bool is i1 (i8 in memory); float16/bfloat16 live in float32 registers holding
a value already rounded to the narrow type (every arithmetic result is rounded back,
round-to-nearest-even, so results match per-op rounding); complex values are `Cx(re, im)`
pairs of float/double.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from llvmlite import ir

from ember._src.base import dtypes
from ember._src.base.dtypes import dtype_kind


PTR = ir.PointerType()
I1, I8, I16, I32, I64 = (ir.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()
VOID = ir.VoidType()


class CodegenError(ValueError):
  """An instruction or dtype the CPU backend cannot compile (the message names it)."""


def kind(dt) -> str:
  """'b' bool, 'i' signed, 'u' unsigned, 'f' float (incl. bfloat16), 'c' complex."""
  return dtype_kind(np.dtype(dt))


def bits(dt) -> int:
  return np.dtype(dt).itemsize * 8


class Float8Format(NamedTuple):
  """An 8-bit float of ml_dtypes as the backend computes it: in float32 registers, each
  result rounded to it (nearest even). `style`: "ieee" (infinities, NaNs with an all-ones
  exponent), "fn" (no infinities, NaN is all ones), "fnuz" (no infinities, no -0, NaN is
  0x80). Its smallest normal is 2^min_exp; overflow is inf ("ieee") or NaN."""
  mant_bits: int
  exp_bits: int
  min_exp: int
  max_value: float
  style: str


def _float8_format(name: str) -> Float8Format:
  dt = np.dtype(getattr(dtypes.ml_dtypes, name))
  fi = dtypes.ml_dtypes.finfo(dt)
  style = "fnuz" if name.endswith("fnuz") else "fn" if name.endswith("fn") else "ieee"
  return Float8Format(int(fi.nmant), int(fi.nexp), int(fi.minexp), float(fi.max), style)


# the 8-bit floats the backend compiles (float8_e8m0fnu, float4 and the narrow ints: not)
FLOAT8 = {np.dtype(getattr(dtypes.ml_dtypes, n)): _float8_format(n) for n in (
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3",
    "float8_e3m4", "float8_e4m3b11fnuz")}


def is_narrow(dt) -> bool:
  """Whether `dt` lives in float32 registers, rounded back after each operation."""
  dt = np.dtype(dt)
  return dt in (dtypes.float16, dtypes.bfloat16) or dt in FLOAT8


def mem_type(dt) -> ir.Type:
  """The type of one element in memory (complex: of one part)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return I8
  if dt == dtypes.float16:
    return F16
  if dt == dtypes.bfloat16:
    return I16
  if dt in FLOAT8:
    return I8
  k = kind(dt)
  if k in "iu":
    return ir.IntType(bits(dt))
  if k == "c":
    return F32 if dt == np.complex64 else F64
  return {4: F32, 8: F64}[dt.itemsize]


def reg_type(dt) -> ir.Type:
  """The type of one element in registers (complex: of one part)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return I1
  if is_narrow(dt):
    return F32
  return mem_type(dt)


def float_suffix(t: ir.Type) -> str:
  """The type suffix of an overloaded intrinsic: llvm.fabs.f32, llvm.ctpop.i16,
  llvm.maximum.v16f32."""
  if isinstance(t, ir.VectorType):
    return f"v{t.count}{float_suffix(t.element)}"
  if isinstance(t, ir.IntType):
    return f"i{t.width}"
  return {"half": "f16", "float": "f32", "double": "f64"}[str(t)]


class Cx(NamedTuple):
  """A complex value in registers."""
  re: ir.Value
  im: ir.Value


def const_of(dt, value) -> ir.Value | Cx:
  """A register constant of dtype `dt` from a Python/NumPy scalar."""
  dt = np.dtype(dt)
  k = kind(dt)
  if k == "c":
    t = reg_type(dt)
    value = complex(value)
    return Cx(ir.Constant(t, value.real), ir.Constant(t, value.imag))
  if k == "b":
    return ir.Constant(I1, int(bool(value)))
  if k in "iu":
    v = int(value) & ((1 << bits(dt)) - 1)
    if v >= 1 << (bits(dt) - 1):   # two's complement spelling: LLVM wants signed literals
      v -= 1 << bits(dt)
    return ir.Constant(reg_type(dt), v)
  return ir.Constant(reg_type(dt), float(np.float64(np.asarray(value).astype(np.float64))))
