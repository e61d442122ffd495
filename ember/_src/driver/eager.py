"""Eager primitives through the compiler: each signature runs its NumPy reference or a cached
one-op computation, chosen by cost.

Outside jit, EvalTrace (core/trace.py) hands every primitive to `run` (core's eager hook)
before running its NumPy reference. A primitive applied to a PjrtArray runs on that device,
as JAX's eager mode runs it (`_on_device`). On ember's CPU each signature (primitive,
params, argument types) is a `_Signature` that picks, by this rule:

- **Exact primitives rent, then buy.** A primitive whose reference computes the compiled
  code's bits (`Primitive.reference_exact`: correctly rounded arithmetic, comparisons, casts,
  data movement; no complex operands) runs its reference, timed, until those calls add up
  to eager_jit.COMPILE_SECONDS, what compiling a one-op computation costs; then it
  compiles, and keeps the compiled call if it runs faster than the reference did (a
  reference that returns a view, as reshape's, stays). Rent-or-buy never costs more than
  twice the better choice in hindsight, a user's first `x + 1` never waits for LLVM, and a
  loop of small ops ends up on the ~5 us compiled path. The bits are the same either way.
  A round the reference wins is tried again after renting twice as long (BUY_ROUNDS in
  all: the compiled calls were timed in one moment of a shared machine).
- **Inexact elementwise primitives run compiled at every size** (transcendentals: their
  reference rounds from float64, the compiled math library does not), so an eager result
  has jit's bits. Below EAGER_COMPILE_ELEMENTS elements a call runs over a flat array of
  the next 2^k or 3 * 2^(k-1) elements (at least BUCKET_MIN): the operands are copied in,
  the result sliced out, and one compile per (primitive, dtypes, bucket) serves every
  shape, which the compiled elementwise kernel computes element by element alike. Under a
  jvp, vmap or grad of concrete values the compiled call runs as at top level
  (trace.at_eval_level). Once a signature's copies (timed) have cost a compile
  (BUCKETED_RENT_SECONDS) it compiles its own shape, the same bits without the copies.
- **Other primitives compile at first sight** (reductions, dots, cumulative ops and other
  inexact ones: their reference rounds differently -- NumPy's pairwise sums, OpenBLAS's
  dots without FMA -- and the compiled order depends on the shape, so no bucket can
  serve them), as JAX compiles every eager primitive: an eager result is jit's at every
  size, and never changes bits from one call to the next. tests/fuzz/eager_alone.py
  checks this on every fuzzer program, primitive by primitive.

Control flow and the PRNG's samplers do not come here one primitive at a time: they run as
one compiled call per function (primitives/eager_jit.py).
"""
from __future__ import annotations

import math
import time

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.base.config import config
from ember._src.core import array as array_lib
from ember._src.core import trace as trace_lib
from ember._src.core.array import Array
from ember._src.driver import compilation, pjrt_dispatch
from ember._src.primitives import eager_jit
from ember._src.runtime.pjrt_array import PjrtArray

_one_op_fns: dict = {}    # (primitive, params) -> its jitted one-equation function
_ONE_OP_LIMIT = 4096      # distinct (primitive, params) kept; past it the cache starts over
_state = compilation.one_op_state   # .busy: in a one-op call (its compile is eager's)

EAGER_COMPILE_ELEMENTS = eager_jit.EAGER_COMPILE_ELEMENTS   # elementwise: bucketed below
_SIGNATURE_LIMIT = 1 << 14
_signatures: dict = {}          # (primitive, params, argument types) -> _Signature

TIMED_CALLS = 5                 # compiled calls timed before a bought signature decides
BUY_ROUNDS = 3                  # rent-then-buy rounds before the reference is kept for good
REFERENCE, RENTING, BUYING, COMPILED, BUCKETED = range(5)
BUCKET_MIN = 1024               # the smallest flat length a bucketed call computes
BUCKETED_RENT_SECONDS = eager_jit.COMPILE_SECONDS   # copies that cost a compile of the shape


class _Signature:
  """One signature's choice (`mode`) and what it has measured."""
  __slots__ = ("mode", "ref_seconds", "ref_calls", "fn", "ran", "trials", "rounds")
  # (ref_seconds also sums a BUCKETED signature's copies)

  def __init__(self, mode: int):
    self.mode, self.ref_seconds, self.ref_calls, self.fn = mode, 0.0, 0, None
    self.ran = False         # whether the compiled call has run once (it compiled)
    self.trials: list = []   # seconds of the compiled calls timed while buying
    self.rounds = 0          # rent-then-buy rounds the reference won


def run(prim, vals, params) -> list | None:
  """`prim` applied to `vals` compiled, or its reference timed while renting; None when
  EvalTrace should run the reference itself."""
  if array_lib.placements_made[0] and any(type(v) is PjrtArray for v in vals):
    return _on_device(prim, vals, params)
  key = _key(prim, vals, params)
  if key is None:
    return None
  try:
    sig = _signatures.get(key)
  except TypeError:   # a parameter that does not hash
    return None
  if sig is None:
    sig = _new_signature(key, prim, vals, params)
  mode = sig.mode
  if mode == COMPILED:
    return _compiled(sig, prim, vals)
  if mode == BUCKETED:
    outs = _bucketed(sig, prim, vals)
    if sig.ref_seconds >= BUCKETED_RENT_SECONDS:   # the copies have cost a compile: the
      sig.mode = COMPILED                          # next call buys this shape
    return outs
  if mode == REFERENCE or not _may_compile():
    return None
  if mode == RENTING:
    t0 = time.perf_counter()
    outs = trace_lib.eval_reference(prim, vals, params)
    sig.ref_seconds += time.perf_counter() - t0
    sig.ref_calls += 1
    if sig.ref_seconds >= eager_jit.COMPILE_SECONDS * 2 ** sig.rounds:
      sig.mode = BUYING
    return outs
  return _buy(sig, prim, vals, params)


def _buy(sig: _Signature, prim, vals, params) -> list:
  """Compile the signature, then time TIMED_CALLS compiled calls: the fastest against the
  reference's mean decides (the first calls after a compile run slower: page faults, the
  native fast path being set up)."""
  if sig.fn is None:
    sig.fn = _one_op(prim, params)
    return _compiled(sig, prim, vals)     # (this call compiles)
  t0 = time.perf_counter()
  outs = _compiled(sig, prim, vals)
  sig.trials.append(time.perf_counter() - t0)
  if len(sig.trials) >= TIMED_CALLS:
    if min(sig.trials) < sig.ref_seconds / sig.ref_calls:
      sig.mode = COMPILED
    elif sig.rounds + 1 < BUY_ROUNDS:
      # rent again, twice as long, then time both again: one noisy moment (a busy
      # machine, a page-faulting first call) must not keep a slower reference for good
      sig.mode, sig.rounds = RENTING, sig.rounds + 1
      sig.ref_seconds, sig.ref_calls, sig.trials = 0.0, 0, []
    else:
      sig.mode, sig.fn = REFERENCE, None
  return outs


def _key(prim, vals, params) -> tuple | None:
  """The signature of a call: (primitive, params, argument types); None for operands that
  are not plain arrays and numbers."""
  types = []
  for v in vals:
    t = type(v)
    if t is Array:
      types.append((v._shape, v._dtype, v._weak_type))
    elif t is np.ndarray:
      types.append((v.shape, v.dtype, False))
    elif t is float or t is int or t is bool:
      types.append(t)
    else:
      return None
  items = tuple(params.items()) if len(params) < 2 else tuple(sorted(params.items()))
  return prim, items, tuple(types)


def _new_signature(key, prim, vals, params) -> _Signature:
  """A signature seen for the first time, with its mode by the module's rule. Never
  compiled: effects (callbacks run on the host), an eval rule (a primitive that runs
  itself: jitted calls, control flow, custom derivatives, user impls), no lowering, results
  of a user's extended dtype (EArrays, which the reference makes)."""
  if len(_signatures) >= _SIGNATURE_LIMIT:
    _signatures.clear()
  avals = [core.get_aval(v) for v in vals]
  if prim.effects_rule is not None or prim.eval_rule is not None or \
      (prim.lower is None and prim.foreign_lowering is None) or \
      _makes_extended(prim, avals, params):
    mode = REFERENCE
  elif prim.reference_exact and not any(np.dtype(a.dtype).kind == "c" for a in avals):
    mode = RENTING
  elif _bucketable(prim, avals):
    mode = BUCKETED
  else:
    mode = COMPILED
  sig = _signatures[key] = _Signature(mode)
  if mode in (COMPILED, BUCKETED):
    sig.fn = _one_op(prim, params)
  return sig


def _makes_extended(prim, avals, params) -> bool:
  """Whether the call's results are of a user's extended dtype: EArrays, which the
  reference makes (trace._wrap_result), not a compiled call's Arrays."""
  return any(not isinstance(a.dtype, np.dtype) for a in prim.out_avals(avals, params))


def _bucketable(prim, avals) -> bool:
  """An elementwise primitive on inexact operands of one shape below EAGER_COMPILE_ELEMENTS
  elements (none: nothing to compute). Integer operands stay on their reference: a flat
  array's padding could divide by zero."""
  shape = avals[0].shape
  return prim.elementwise and not prim.multiple_results and all(
      a.shape == shape and dtypes.is_inexact(a.dtype) for a in avals) and \
      0 < math.prod(shape) < EAGER_COMPILE_ELEMENTS


def _bucket(n: int) -> int:
  """The least length of the form 2^k or 3 * 2^(k-1) that holds n elements (at most a third
  of a bucket computes padding)."""
  p = 1 << (n - 1).bit_length()
  return 3 * p // 4 if 3 * p // 4 >= n else p


def _bucketed(sig: _Signature, prim, vals) -> list | None:
  """The one-op computation over flat copies of the operands `bucket` elements long (the
  padding: ones, a value every inexact primitive takes quietly), its result's first
  elements in the operands' shape. The copies' time is the signature's rent (a few us for
  100 elements, ~20 for 1e4: sin of 100 elements 15 us bucketed, 4 for its own shape)."""
  t0 = time.perf_counter()
  avals = [core.get_aval(v) for v in vals]   # (Arrays, NumPy arrays, Python numbers)
  shape = avals[0].shape
  n = math.prod(shape)
  bucket = max(BUCKET_MIN, _bucket(n))
  flat = []
  for v, aval in zip(vals, avals):
    buf = np.ones(bucket, aval.dtype)
    buf[:n] = np.asarray(v, aval.dtype).reshape(-1)
    a = Array(buf, weak_type=aval.weak_type)
    array_lib.ready_ptr(a)   # (its address set: jit's native path takes the call)
    flat.append(a)
  t1 = time.perf_counter()
  outs = _compiled(sig, prim, flat)
  if outs is None:
    return None
  t2 = time.perf_counter()
  out = outs[0]
  out = Array(np.asarray(out)[:n].reshape(shape), weak_type=out._weak_type)
  sig.ref_seconds += t1 - t0 + time.perf_counter() - t2
  return [out]


def _may_compile() -> bool:
  """Not now: inside a compile's own eager work (no re-entry), or with a default device
  elsewhere, or under disable_jit (which asks for the reference)."""
  return not (getattr(_state, "busy", False) or config._values["jax_default_device"] is not None
              or config._values["jax_disable_jit"])


def _compiled(sig: _Signature, prim, vals) -> list | None:
  """The one-op computation's outputs, ready (ember's eager ops are synchronous); None
  (the reference runs) when it may not run now, or when its first call fails to compile:
  a lowering this signature does not support makes it a REFERENCE signature, and the
  reference raises the user's error if there is one."""
  if not _may_compile():
    return None
  try:
    outs = _run_one_op(sig.fn, prim, vals)
  except Exception:   # noqa: BLE001 -- the reference decides what the user sees
    if sig.ran:
      raise
    sig.mode, sig.fn = REFERENCE, None
    return None
  sig.ran = True
  for o in outs:
    if o._buf is None:     # (ready already, unless the executor ran it)
      o.block_until_ready()
  return outs


def _on_device(prim, vals, params) -> list | None:
  """On the PJRT device the call is placed on (committed arguments' device, else the default
  device); None when it is ember's CPU or the call cannot be compiled."""
  if prim.effects_rule is not None or getattr(_state, "busy", False) or \
      not core.cur_level_is_eval():
    return None   # callbacks run on the host; no re-entry (disable_jit binds again)
  if pjrt_dispatch.placement(vals, None, prim.name)[0] is None:
    return None
  return _run_one_op(_one_op(prim, params), prim, vals)


def _run_one_op(fn, prim, vals) -> list:
  """`fn(*vals)`'s outputs, with this module off meanwhile (a compile's own eager work does
  not come back here)."""
  _state.busy = True
  try:
    if core.cur_level_is_eval():
      out = fn(*vals)
    else:   # concrete values under a jvp, vmap or grad: the call runs as at top level
      with trace_lib.at_eval_level():
        out = fn(*vals)
  finally:
    _state.busy = False
  return list(out) if prim.multiple_results else [out]


def _one_op(prim, params):
  """The jitted `prim.bind(*xs, **params)`, cached per primitive and params when they hash."""
  try:
    key = (prim, tuple(sorted(params.items())))
    fn = _one_op_fns.get(key)
  except TypeError:   # an unhashable parameter: traced and compiled for this call only
    key = fn = None
  if fn is None:
    def bind(*xs):
      return prim.bind(*xs, **params)
    bind.__name__ = prim.name
    fn = eager_jit.jit(bind)
    if key is not None:
      if len(_one_op_fns) >= _ONE_OP_LIMIT:
        _one_op_fns.clear()
      _one_op_fns[key] = fn
  return fn


trace_lib.eager_hook[0] = run
