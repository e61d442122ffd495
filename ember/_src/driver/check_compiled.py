"""Checked mode (`ember_check_compiled`): every compiled call is compared with the reference
HLO evaluator (hlo_eval) running the same optimized module; a difference raises at the call,
naming the first top-level instruction whose values differ. The dispatcher (driver/dispatch.py)
calls `check_against_reference` after each run while the option is on.
"""
from __future__ import annotations

import math

import numpy as np

from ember._src.base import dtypes
from ember._src.hlo import graph as hlo


def check_against_reference(comp, np_args, outs) -> None:
  """Checked mode: re-run the optimized module with the reference HLO evaluator and report
  the first top-level instruction whose compiled result differs. `comp`: a
  dispatch.CompiledComputation."""
  from ember._src.hlo import (  # deferred: the reference evaluator loads only when checking
      evaluator as hlo_eval)
  ref = hlo_eval.evaluate(comp.module, np_args)
  tol = _module_tolerance(comp.module)
  for i, (r, o) in enumerate(zip(ref, outs)):
    if not _close(r, o, tol):
      where = _first_differing_instruction(comp, np_args)
      raise AssertionError(
          f"ember_check_compiled: output {i} of {comp.module.name} differs from the reference "
          f"interpreter (max abs diff {np.max(np.abs(np.asarray(r, np.float64) - np.asarray(o, np.float64)))})"
          + (f"; first differing HLO instruction: {where}" if where else ""))


_TOLERANCE = {2: 1e-2, 4: 1e-5, 8: 1e-12}   # by bytes of a real float (component)


def _is_float(dtype) -> bool:
  """A real or complex float dtype, bfloat16 included (NumPy calls it kind 'V')."""
  dtype = np.dtype(dtype)
  return dtype.kind in "fc" or dtype.name == "bfloat16"


def _float_tolerance(dtype) -> float:
  dtype = np.dtype(dtype)
  return _TOLERANCE.get(dtype.itemsize // (2 if dtype.kind == "c" else 1), 1e-5)


def _module_tolerance(module: hlo.Module) -> float:
  """The tolerance of the least precise float any instruction computes in: a float64 output
  of a complex64 sum differs from the reference by float32's rounding, not float64's."""
  tol = 0.0
  for c in module.computations:
    for instr in c.instrs:
      shapes = instr.shape.elements if isinstance(instr.shape, hlo.TupleShape) else (instr.shape,)
      for shape in shapes:
        dt = getattr(shape, "dtype", None)
        if dt is not None and _is_float(dt):
          tol = max(tol, _float_tolerance(dt))
      if instr.opcode == "dot" and _is_float(instr.shape.dtype):
        tol = max(tol, _dot_tolerance(instr))
  return tol


def _dot_tolerance(dot: hlo.Instr) -> float:
  """A K-term float sum's: the kernel's order of the sum (its blocking, its FMAs) and the
  evaluator's (NumPy's) differ by up to ~K eps (a 2051-term float32 dot on AVX2, whose
  panels are narrower than AVX-512's: 2.1e-5)."""
  lhs = dot.operands[0].shape.dims
  k = math.prod(lhs[d] for d in dot.attrs.get("lhs_contracting_dims", ()))
  return k * float(dtypes.finfo(dot.shape.dtype).eps)


def _close(a, b, tol: float = 0.0) -> bool:
  """Equal, floats within their dtype's tolerance or `tol` if larger (NaN meets NaN)."""
  a, b = np.asarray(a), np.asarray(b)
  if a.shape != b.shape:
    return False
  if _is_float(a.dtype):
    tol = max(tol, _float_tolerance(a.dtype))
    if a.dtype.kind == "c":   # per component: -inf+1j and -inf+(1+ulp)j are close
      return _close(np.stack([a.real, a.imag]), np.stack([b.real, b.imag]), tol)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return bool(np.allclose(a64, b64, rtol=tol, atol=tol, equal_nan=True))
  return bool(np.array_equal(a, b))


def _values_close(ref, got, tol: float) -> bool:
  """`_close` for an instruction's value: an array, or a tuple of them (multi-output
  fusions, multi-operand reduces and sorts)."""
  if isinstance(ref, tuple) or isinstance(got, tuple):
    return isinstance(ref, tuple) and isinstance(got, tuple) and len(ref) == len(got) and \
        all(_values_close(r, g, tol) for r, g in zip(ref, got))
  return _close(ref, got, tol)


def _first_differing_instruction(comp, np_args) -> str | None:
  """Compare every top-level instruction's compiled value (when the executable can keep
  intermediates) with the reference evaluator's."""
  run_all = getattr(comp.executable, "execute_keep_intermediates", None)
  if run_all is None:
    return None
  from ember._src.hlo import (  # deferred: the reference evaluator loads only when checking
      evaluator as hlo_eval)
  compiled_vals = run_all(np_args)            # instruction name -> array
  ref_vals = hlo_eval.evaluate_intermediates(comp.module, np_args)
  tol = _module_tolerance(comp.module)
  for instr in comp.module.entry.instrs:
    if instr.name in compiled_vals and instr.name in ref_vals:
      if not _values_close(ref_vals[instr.name], compiled_vals[instr.name], tol):
        return hlo.instr_to_text(instr).strip()
  return None
