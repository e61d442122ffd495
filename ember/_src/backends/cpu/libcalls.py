"""Functions LLVM's code generator calls but no library of this process defines.

On a CPU without the instructions, LLVM lowers half-precision conversions to calls of
compiler-runtime helpers (`fptrunc double -> half` is `__truncdfhf2` everywhere but on
AVX512-FP16; `fptrunc float -> half` and `fpext half -> float` are `__truncsfhf2` and
`__extendhfsf2` without F16C). Python does not link compiler-rt or a libgcc that has them,
and MCJIT binds a symbol it cannot find to address 0: the first call of such a kernel
jumped to 0 and killed the process. The helpers are defined here in IR (integer operations
only, so compiling them needs no helper), bit-exact with the hardware instructions:
round to nearest even, overflow to infinity, NaN quieted with its payload kept. They are
compiled once per process (through the runtime cache) when an object first refers to one,
and registered by name for the linker (a `llvm_jit.symbol_providers` entry: llvm_jit's
`check_resolved` then names any symbol that still has no definition, a `RuntimeError` at
compile time instead of a jump to address 0).
"""
from __future__ import annotations

import os
import threading

from llvmlite import ir

from ember._src.backends.cpu import llvm_jit, runtime_cache

I16, I32, I64 = ir.IntType(16), ir.IntType(32), ir.IntType(64)
F16, F32, F64 = ir.HalfType(), ir.FloatType(), ir.DoubleType()

_registered: dict = {}          # helper name -> the engine holding its code
_lock = threading.Lock()


def _unlock_after_fork() -> None:   # a parent thread may have held it at the fork
  global _lock
  _lock = threading.Lock()


os.register_at_fork(after_in_child=_unlock_after_fork)


# --------------------------------------------------------------------------------------
# The helpers, as IR
# --------------------------------------------------------------------------------------

def _c(ty, v):
  return ir.Constant(ty, v)


def _trunc_to_half(b: ir.IRBuilder, bits: ir.Value, fmt) -> ir.Value:
  """The float16 bits (i16) of the float whose bits are `bits`, rounded to nearest even.

  `fmt` = (int type, float type, mantissa bits, exponent bias). Normal results: rebias the
  exponent and round the mantissa at bit (mantissa bits - 10), adding half an ulp less
  one plus the kept lsb (a carry steps the exponent, up to infinity). Subnormal results:
  add 2^k, where the source's ulp equals float16's smallest subnormal, so the hardware
  adder rounds (to nearest even) and the low bits are the result."""
  ity, fty, mbits, bias = fmt
  shift = mbits - 10
  sign_bit = 1 << (ity.width - 1)
  sign = b.trunc(b.lshr(b.and_(bits, _c(ity, sign_bit)), _c(ity, ity.width - 16)), I16)
  a = b.and_(bits, _c(ity, sign_bit - 1))
  inf = ((1 << (ity.width - 1 - mbits)) - 1) << mbits
  # NaN: quiet, payload truncated (as vcvtps2ph and compiler-rt do); infinity stays
  payload = b.trunc(b.and_(b.lshr(a, _c(ity, shift)), _c(ity, 0x3FF)), I16)
  nan = b.or_(payload, _c(I16, 0x7E00))
  special = b.select(b.icmp_unsigned(">", a, _c(ity, inf)), nan, _c(I16, 0x7C00))
  # normal float16 results (|x| >= 2^-14); overflow to infinity falls out of the carry
  rebased = b.sub(a, _c(ity, (bias - 15) << mbits))
  odd = b.and_(b.lshr(rebased, _c(ity, shift)), _c(ity, 1))
  rounded = b.add(rebased, b.add(odd, _c(ity, (1 << (shift - 1)) - 1)))
  too_big = (bias + 16) << mbits                     # 2^16: infinity for certain
  normal = b.trunc(b.lshr(b.select(b.icmp_unsigned(">=", a, _c(ity, too_big)),
                                   _c(ity, 0x7C00 << shift), rounded), _c(ity, shift)), I16)
  # subnormal float16 results: 2^k has ulp 2^-24 (float: 0.5, double: 2^28)
  magic = (bias - 24 + mbits) << mbits
  summed = b.fadd(b.bitcast(a, fty), b.bitcast(_c(ity, magic), fty))
  sub = b.trunc(b.sub(b.bitcast(summed, ity), _c(ity, magic)), I16)
  small = b.icmp_unsigned("<", a, _c(ity, (bias - 14) << mbits))
  out = b.select(b.icmp_unsigned(">=", a, _c(ity, inf)), special,
                 b.select(small, sub, normal))
  return b.or_(out, sign)


def _half_to_float_bits(b: ir.IRBuilder, h: ir.Value) -> ir.Value:
  """The float32 bits (i32) of the float16 bits `h` (exact; a NaN is quieted)."""
  u = b.zext(h, I32)
  sign = b.shl(b.and_(u, _c(I32, 0x8000)), _c(I32, 16))
  e = b.and_(b.lshr(u, _c(I32, 10)), _c(I32, 0x1F))
  m = b.and_(u, _c(I32, 0x3FF))
  normal = b.or_(b.shl(b.add(e, _c(I32, 112)), _c(I32, 23)), b.shl(m, _c(I32, 13)))
  quiet = b.select(b.icmp_unsigned("!=", m, _c(I32, 0)), _c(I32, 0x400000), _c(I32, 0))
  special = b.or_(_c(I32, 0x7F800000), b.or_(b.shl(m, _c(I32, 13)), quiet))
  # subnormal or zero: m * 2^-24, exact in float32
  tiny = b.bitcast(b.fmul(b.uitofp(m, F32), _c(F32, 2.0 ** -24)), I32)
  out = b.select(b.icmp_unsigned("==", e, _c(I32, 31)), special,
                 b.select(b.icmp_unsigned("==", e, _c(I32, 0)), tiny, normal))
  return b.or_(out, sign)


def _define(module: ir.Module, name: str, ret, arg, body) -> None:
  fn = ir.Function(module, ir.FunctionType(ret, [arg]), name)
  b = ir.IRBuilder(fn.append_basic_block())
  b.ret(body(b, fn.args[0]))


# name -> (result type, argument type, body(builder, argument) -> result). The half
# arguments and results travel in XMM registers, the ABI of LLVM >= 15 and of libgcc.
HELPERS = {
    "__truncsfhf2": (F16, F32, lambda b, x: b.bitcast(
        _trunc_to_half(b, b.bitcast(x, I32), (I32, F32, 23, 127)), F16)),
    "__truncdfhf2": (F16, F64, lambda b, x: b.bitcast(
        _trunc_to_half(b, b.bitcast(x, I64), (I64, F64, 52, 1023)), F16)),
    "__extendhfsf2": (F32, F16, lambda b, h: b.bitcast(
        _half_to_float_bits(b, b.bitcast(h, I16)), F32)),
}


def helpers_ir() -> str:
  module = ir.Module(name="ember_libcalls")
  for name, (ret, arg, body) in HELPERS.items():
    _define(module, name, ret, arg, body)
  return str(module)


def ensure_helpers(names) -> None:
  """Compile (once per process, or load from the runtime cache) the helpers among `names`
  that are not registered yet, and make their symbols resolvable."""
  wanted = [n for n in names if n in HELPERS and n not in _registered]
  if not wanted:
    return
  with _lock:
    if all(n in _registered for n in wanted):
      return
    text = helpers_ir()
    engine, addr = runtime_cache.load_or_compile("ember_libcalls", lambda: text, text)
    for name in HELPERS:
      llvm_jit.add_symbol(name, addr(name))
      _registered[name] = engine


llvm_jit.symbol_providers.append(lambda obj, undefined: ensure_helpers(undefined))
