"""StableHLO spellings of the two ops of a lowered module that XLA does not know, used by
`Lowered.as_text()` only (ember's own compile keeps the ops as they are):

- `fma` (ember's x * y + z rounded once; the samplers use it to reproduce XLA:CPU's
  contracted multiply-adds) becomes ordinary arithmetic with exactly the same result.
  float32: the product of two float32 is exact in float64; the float64 sum is rounded to
  odd (TwoSum's error says whether it was exact and on which side the true sum lies), and
  53 >= 24 + 2 bits make the final rounding to float32 correct (Boldo & Melquiond 2008).
  float64: Dekker's exact product p + e (operands split into 26-bit halves by integer
  rounding of their bits, so no split is a multiply an optimizer could contract),
  (th, tl) = TwoSum(z, p), then RN(th + RO(tl + e)). Every product here is exact except p,
  which passes through an optimization barrier so no compiler fuses it into an fma.
  Zeros, infinities and NaNs take x * y + z (one rounding already); z infinite with x * y
  finite gives z. Outside |x|, |y|, |z| < 2**995 and |x * y| >= 2**-960 (where e can
  overflow or underflow) the text computes Dekker's faithful value, which can differ from
  the exactly rounded fma in the last bit.
- `custom-call @lu_pivots_to_permutation` (a target XLA's CPU client does not register)
  becomes the `stablehlo.while` loop of row swaps JAX emits for it.

Each expansion is an ember function traced and lowered like any other, its module cached
per shape; the printer inlines its ops in place of the op. The functions are written with
lax, a layer above lowering: ember/_src/library/lax/expansions.py registers them in the tables
here when it is imported.
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.hlo import graph as hlo
from ember._src.base.config import enable_x64
from ember._src.lower import lower_jaxpr

__all__ = ["expansion"]

# fma's expansion per dtype name: fn(x, y, z)
fma_expansions: dict[str, Callable] = {}
# custom-call target -> its expansion: fn(permutation_size, operand) for
# lu_pivots_to_permutation
custom_call_expansions: dict[str, Callable] = {}


def expansion(instr: hlo.Instr) -> hlo.Module | None:
  """The module computing `instr` with standard ops, or None when it is standard."""
  if instr.opcode == "fma":
    return _lowered(fma_expansions[np.dtype(instr.dtype).name], (instr.shape,) * 3, x64=True)
  if instr.opcode == "custom-call" and instr.attrs["target"] in custom_call_expansions:
    size = dict(instr.attrs.get("backend_config", ()))["permutation_size"]
    return _lowered(functools.partial(custom_call_expansions[instr.attrs["target"]], size),
                    (instr.operands[0].shape,))
  return None


@functools.lru_cache(maxsize=256)
def _lowered(fn, shapes, x64: bool = False) -> hlo.Module:
  with enable_x64(x64):   # float32's fma works in float64 whatever the caller's mode
    avals = [core.ShapedArray(s.dims, dtypes.canonicalize_dtype(s.dtype)) for s in shapes]
    dbg = core.debug_info("make_jaxpr", fn, avals, {})
    jaxpr, _ = core.trace_to_jaxpr(lambda *xs: ([fn(*xs)], None), avals, dbg)
  if jaxpr.constvars:
    jaxpr = core.hoist_consts(jaxpr)[0]   # not expected: the functions use literals only
  return lower_jaxpr(jaxpr, getattr(fn, "__name__", "expansion"))


