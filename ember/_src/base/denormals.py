"""Subnormal floats as XLA's CPU runtime treats them: flushed to zero while a computation
runs.

JAX's CPU client runs every computation (jitted, and each eager op, which is one) with the
processor's flush-to-zero and denormals-are-zero modes on (x86-64: MXCSR bits FTZ and DAZ;
aarch64: FPCR bit FZ), and restores the caller's modes after. So, measured on JAX 0.12.1:

- arithmetic reads a subnormal float32/float64 operand as a zero of its sign and writes a
  subnormal result as one: `x * 1.0001`, `x + y`, `x / y`, sqrt, dots, sums, comparisons
  (`1e-39 > 0` is False, `== 0` True), max/min (max(1e-39, 0) is 0), float32 <-> float64
  casts, and every transcendental (exp(-88.5) is 0, log(1e-39) is -inf);
- bfloat16 computes in float32, so its subnormals flush too; float16 computes in float32 as
  well, where its subnormals are normal numbers: they survive;
- what moves bits without arithmetic keeps them: arguments returned unchanged, reshapes,
  slices, gathers, select/where, neg, abs, copysign, bitcasts, and float32 -> bfloat16
  (a rounding on the bits), as do host-side conversions (an argument's float64 -> float32
  canonicalization, jnp.asarray) and constant folding at compile time (XLA folds on the
  compiling thread: `jit(lambda: f32(2**-126) * 0.5)()` is 2**-127);
- host callbacks run the user's Python with the user's modes (no flush).

ember matches this: every kernel turns the modes on around its work, on whichever thread
runs it (backends/cpu/denormals.py), and the Python paths that compute what a kernel would
(eager NumPy references, the HLO evaluator that checks compiled code, an executable's NumPy
thunks) run between `flush_on()` and `restore(token)`:

    token = flush_on()      # FTZ and DAZ on in this thread; token: the modes to go back to
    try: ...
    finally: restore(token)
    token = flush_off()     # IEEE subnormals (a host callback; constant folding)

The switches are native code the CPU backend installs when it starts (`install`); until
then (a host without llvmlite), they do nothing and the NumPy paths keep subnormals.
"""
from __future__ import annotations

import contextlib

MXCSR_FTZ = 1 << 15   # x86-64: a subnormal result is written as a zero of its sign
MXCSR_DAZ = 1 << 6    # x86-64: a subnormal operand is read as a zero of its sign
FPCR_FZ = 1 << 24     # aarch64: both, for float32 and float64


def _unchanged() -> int:
  return -1


def _nothing(token: int) -> None:
  pass


flush_on = _unchanged     # () -> token: flush-to-zero and denormals-are-zero on
flush_off = _unchanged    # () -> token: both off
restore = _nothing        # (token) -> None: the modes the token was taken from (-1: as is)


def install(on, off, back) -> None:
  """The native switches (backends/cpu/denormals.py): `on()` / `off()` return the control
  register before, or -1 when it needed no change; `back(token)` writes a token back."""
  global flush_on, flush_off, restore
  flush_on, flush_off, restore = on, off, back


def installed() -> bool:
  return flush_on is not _unchanged


@contextlib.contextmanager
def flushed(on: bool = True):
  """The block with the modes on (`on=False`: off), then the caller's modes back."""
  token = flush_on() if on else flush_off()
  try:
    yield
  finally:
    if token >= 0:
      restore(token)
