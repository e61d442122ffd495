"""ember's math library: the transcendental functions as LLVM IR (llvmlite.ir), no libm.

`emit(builder, opcode, args, ty)` returns the value of an HLO transcendental (`hlo.TRANSCENDENTAL`,
plus the helpers exp2/log2/log10) for `ty` = float or double, scalar or `ir.VectorType`. Each
function is an internal `alwaysinline` LLVM function defined once per module (`ember.sin.f32`,
`ember.exp.v4f64`, ...) whose body is straight-line code: arithmetic, `select`, integer bit tricks
and the intrinsics llvm.{fma,fabs,floor,rint,copysign,sqrt,minnum,maxnum} (and llvm.ldexp on
AVX-512 hosts with LLVM 22+, where it is one vscalef). Inlined into a loop, the loop vectorizer
turns it into SIMD code.

One deliberate exception: sin/cos/tan of huge arguments (|x| >= 2**14 in float32, 2**30 in
float64) need a Payne-Hanek reduction (~10x the cost of the whole function), so it lives in an
out-of-line function `ember.<f>.huge.<type>` called behind a branch. The call carries a
`vector-function-abi-variant` attribute naming masked vector variants (for the host's vector
widths; thin wrappers calling the scalar function per active lane, so LLVM compiles the expensive
path once), so the vectorizer still vectorizes the loop: one masked call per vector.

float32 sin, cos, tan, logistic, power, erfc, erf-inv, lgamma and digamma evaluate in double
arithmetic and round once: for the first five with short polynomials fitted for float32 accuracy,
which is both more accurate (~0.5 ulp) and fewer operations than float32 arithmetic with the
double-word corrections it would need (the rest of float32 is computed in float32).

`fma` must be fused (hardware FMA): the error-free transformations (two_prod, Cody-Waite with one
rounding) depend on it. Algorithms, coefficients (fitted by our own Remez, mathlib_fit.py) and the
measured accuracy of each function: docs/mathlib.md. Notation: `e` is the emitter (`_E`) for the
value type, `e.p` its precision (24 / 53 bits); (hi, lo) pairs are double-word values hi + lo.

This package's `__init__` is the library's front door (codegen and compiler import the package
and call `emit`, `function`, `vector_widths`, `OPCODES`): the dispatch table from opcode to
emitter and the once-per-process rendering of each function's IR. It keeps the name `mathlib`
because that is the library's natural namespace. Below it, bottom first: `emitter` (`_E`,
`_via_f64`), `doubleword` (error-free transformations, double-word quotients, exact constants),
`coeffs` (the fitted coefficients), `outlined` (out-of-line rare paths with masked vector
variants), then one module per family: `explog` (exp, expm1, exp2, log, log1p, log2, log10),
`trig` (sin, cos, tan), `hyperbolic` (sinh, cosh, tanh, logistic), `inverse` (asin, acos, atan,
atan2, asinh, acosh, atanh), `power` (sqrt, rsqrt, cbrt, pow), `special` (erf, erfc, erfinv,
lgamma, digamma).
"""
from __future__ import annotations

from llvmlite import ir

from ember._src.backends.cpu import host
from ember._src.backends.cpu.mathlib.emitter import _E, _suffix, _via_f64
from ember._src.backends.cpu.mathlib.explog import _exp, _exp2, _expm1, _log, _log1p, _log_base
from ember._src.backends.cpu.mathlib.hyperbolic import _cosh, _logistic, _sinh, _tanh
from ember._src.backends.cpu.mathlib.inverse import (_acos, _acosh, _asin, _asinh, _atan, _atan2,
                                                     _atanh)
from ember._src.backends.cpu.mathlib.outlined import _vfabi_widths
from ember._src.backends.cpu.mathlib.power import _cbrt, _power, _rsqrt, _sqrt
from ember._src.backends.cpu.mathlib.special import _digamma, _erf, _erfc, _erfinv, _lgamma
from ember._src.backends.cpu.mathlib.trig import _trig

__all__ = ["emit", "OPCODES"]


# ------------------------------------------------------------------------------------------------
# Dispatch.
# ------------------------------------------------------------------------------------------------
_UNARY = {
    "exponential": ("exp", _exp), "exponential-minus-one": ("expm1", _expm1),
    "log": ("log", _log), "log-plus-one": ("log1p", _log1p), "tanh": ("tanh", _tanh),
    "logistic": ("logistic", _logistic),
    "sine": ("sin", lambda e, x: _trig(e, x, "sin")),
    "cosine": ("cos", lambda e, x: _trig(e, x, "cos")),
    "tan": ("tan", lambda e, x: _trig(e, x, "tan")),
    "sqrt": ("sqrt", _sqrt), "rsqrt": ("rsqrt", _rsqrt), "cbrt": ("cbrt", _cbrt),
    "erf": ("erf", _erf), "erfc": ("erfc", _erfc), "erf-inv": ("erfinv", _erfinv),
    "lgamma": ("lgamma", lambda e, x: _via_f64(e, _lgamma, x)),
    "digamma": ("digamma", lambda e, x: _via_f64(e, _digamma, x)),
    "asin": ("asin", _asin), "acos": ("acos", _acos), "atan": ("atan", _atan),
    "sinh": ("sinh", _sinh), "cosh": ("cosh", _cosh), "asinh": ("asinh", _asinh),
    "acosh": ("acosh", _acosh), "atanh": ("atanh", _atanh),
    "exp2": ("exp2", _exp2), "log2": ("log2", lambda e, x: _log_base(e, x, "log2")),
    "log10": ("log10", lambda e, x: _log_base(e, x, "log10")),
}
_BINARY = {"power": ("pow", _power), "atan2": ("atan2", _atan2)}
OPCODES = frozenset(_UNARY) | frozenset(_BINARY)


class _RenderedFunction(ir.Function):
  """A function of the library whose text was rendered once per process (`_rendered`)."""

  def __init__(self, module, fty, name, text):
    super().__init__(module, fty, name)
    self.text = text

  def __str__(self):
    return self.text


class _RenderedGlobal(ir.GlobalVariable):
  """A global variable of the library (a reduction table) rendered once per process."""

  def __init__(self, module, ty, name, text):
    super().__init__(module, ty, name)
    self.text = text

  def __str__(self):
    return self.text


# (function name, host CPU) -> what defining it adds to a module: (name, function type or
# None for a variable, its value type, its text or None for a declaration) per global
_RENDERED: dict = {}


def _function(module: ir.Module, short: str, impl, arity: int, ty) -> ir.Function:
  """The internal alwaysinline function ember.<short>.<type>, defined on first use: built
  once per process (`_define`, in a module of its own) and copied as text into every module
  that uses it, with the functions, declarations and tables it needs. Building sin's IR
  (its huge-argument path and vector variants included) and printing it took ~3-5 ms of
  Python per compile."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = module.globals.get(name)
  if fn is not None:
    return fn
  key = (name, host.cpu())
  parts = _RENDERED.get(key)
  if parts is None:
    scratch = ir.Module()
    _define(scratch, short, impl, arity, ty)
    parts = _RENDERED[key] = [
        (g.name, g.function_type, None, None if g.is_declaration else str(g))
        if isinstance(g, ir.Function) else (g.name, None, g.value_type, str(g))
        for g in scratch.globals.values()]
  for gname, fty, vty, text in parts:
    if gname in module.globals:
      continue
    if fty is None:
      _RenderedGlobal(module, vty, gname, text)
    elif text is None:
      ir.Function(module, fty, gname)
    else:
      _RenderedFunction(module, fty, gname, text)
  return module.globals[name]


def _define(module: ir.Module, short: str, impl, arity: int, ty) -> ir.Function:
  """Build ember.<short>.<type> (internal, alwaysinline) in `module`."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = ir.Function(module, ir.FunctionType(ty, [ty] * arity), name)
  fn.linkage = "internal"
  fn.attributes.add("alwaysinline")
  fn.attributes.add("nounwind")
  builder = ir.IRBuilder(fn.append_basic_block("entry"))
  builder.ret(impl(_E(builder, ty), *fn.args))
  return fn


def function(module: ir.Module, short: str, ty) -> ir.Function:
  """The function ember.<short>.<type> that `emit` calls (short: exp, log, sin, pow, ...),
  defined in `module` on first use: for copies compiled outside the kernels
  (compiler._library_math)."""
  for table, arity in ((_UNARY, 1), (_BINARY, 2)):
    for name, impl in table.values():
      if name == short:
        return _function(module, short, impl, arity, ty)
  raise ValueError(f"mathlib.function: no math function {short!r}")


def vector_widths(ty) -> tuple:
  """The vector widths (lanes) of float type `ty` the host's loop vectorizer can choose."""
  return _vfabi_widths(64 if isinstance(ty, ir.DoubleType) else 32)


def emit(builder: ir.IRBuilder, opcode: str, args, ty) -> ir.Value:
  """Emit `opcode` (an HLO transcendental, or exp2/log2/log10) applied to `args` of type `ty`."""
  if opcode in _UNARY:
    (short, impl), arity = _UNARY[opcode], 1
  elif opcode in _BINARY:
    (short, impl), arity = _BINARY[opcode], 2
  else:
    raise ValueError(f"mathlib.emit: unsupported opcode {opcode!r}; supported: "
                     f"{', '.join(sorted(OPCODES))}")
  if len(args) != arity:
    raise TypeError(f"mathlib.emit: {opcode} takes {arity} operand(s), got {len(args)}")
  for a in args:
    if a.type != ty:
      raise TypeError(f"mathlib.emit: {opcode} operand has type {a.type}, expected {ty}")
  _E(builder, ty)                                     # validates ty
  fn = _function(builder.module, short, impl, arity, ty)
  return builder.call(fn, list(args))
