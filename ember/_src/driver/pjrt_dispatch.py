"""Jitted calls on PJRT devices (backends/pjrt): where a call runs, and running it there.

A top-level jitted call runs where its committed arguments live (`device_put(x, dev)`
commits x to dev), else on the default device (`jax.default_device`), else on ember's
native CPU, as JAX decides. On a PJRT device the traced signature (jit's cache entry, so
the same trace and cache key as ember's native compile) is lowered to StableHLO text,
compiled by the device's PJRT client once per (entry, device) and executed there; the
outputs are PjrtArrays. Committed arguments on two devices raise JAX's error.

Eager (un-jitted) primitives applied to PjrtArrays run on the device too, as JAX's eager
mode runs them: each (primitive, params) is a cached one-equation jitted function, so it
is placed, compiled and dispatched like any jitted call (`eager`, core's eager hook). So does
costly float math (tanh, erf, ...) on a large array of ember's CPU, whose NumPy reference
would evaluate it in float64 on one core (`_costly_native_math`).
"""
from __future__ import annotations

import threading
import time
from typing import Callable

import numpy as np

from ember._src.driver import cache_miss
from ember._src import core
from ember._src.base.config import config
from ember._src.backends.pjrt import client as pjrt_client
from ember._src.backends.pjrt import executable as pjrt_exe
from ember._src.driver.compilation import call_leaves, lower_staged
from ember._src.base import profiler_events as _profiler
from ember._src.core import array as array_lib
from ember._src.core import trace as trace_lib
from ember._src.core.array import Array
from ember._src.runtime.pjrt_array import PjrtArray
from ember._src.core.sharding import PjrtDevice


def in_play(cv) -> bool:
  """Whether a call may leave the native path: a default device is set, or some array
  was ever committed or put on a PJRT device (until then this costs one check a call)."""
  return cv["jax_default_device"] is not None or array_lib.placements_made[0]


def placement(leaves, arg_names, fname: str) -> tuple[PjrtDevice | None, bool]:
  """(the PJRT device the call runs on, None for ember's native CPU; whether any argument
  is committed). Committed arguments on different devices: JAX's ValueError."""
  first = None   # (index, device) of the first committed argument
  for i, x in enumerate(leaves):
    if isinstance(x, Array) and x.committed:
      devs = x.devices()
      dev = next(iter(devs)) if len(devs) == 1 else None   # None: split over CPU devices
      if first is None:
        first = (i, dev)
      elif dev != first[1] and PjrtDevice in (type(dev), type(first[1])):
        # (between ember's own CPU devices, spmd.call_placed checks and says the same)
        raise ValueError(_mismatch(leaves, arg_names, fname, first[0], i))
  dev = first[1] if first else array_lib.target_device(None)
  return (dev if isinstance(dev, PjrtDevice) else None), first is not None


def _mismatch(leaves, arg_names, fname: str, i: int, j: int) -> str:
  def arg(k):
    x = leaves[k]
    name = arg_names[k] if arg_names and k < len(arg_names) else ""
    devs = sorted(x.devices(), key=lambda d: d.id)
    return (f"argument {name} of {fname} with shape {x.aval.str_short()} and with device "
            f"ids {[d.id for d in devs]} on platform {devs[0].platform.upper()}")
  return f"Received incompatible devices for jitted computation. Got {arg(i)} and {arg(j)}"


class PjrtComputation:
  """One traced signature compiled for one PJRT device, with its constants on it."""

  def __init__(self, staged, device: PjrtDevice):
    self.device, self.name = device, staged.name
    from ember._src.lower.mlir import to_mlir_text   # deferred: the MLIR printer, on use
    t0 = time.perf_counter()
    with cache_miss.timed("jax_log_compiles", "Finished jaxpr to MLIR module conversion "
                          "jit(%s) in %.9f sec", staged.name):
      self.text = to_mlir_text(lower_staged(staged))
    t1 = time.perf_counter()
    client = pjrt_client.client(device.platform)
    with cache_miss.timed("jax_log_compiles", "Finished XLA compilation of jit(%s) in "
                          "%.9f sec", staged.name):
      self.executable = pjrt_exe.Executable(client, device.jax_device, self.text)
    t2 = time.perf_counter()
    self.compile_times = {"lower": t1 - t0, "backend": t2 - t1}
    if _profiler.active:
      _profiler.record_secs(f"compile jit({staged.name})", t0, t2 - t0,
                            {"fun": staged.name, "device": str(device)})
    self.consts = [pjrt_exe.put(np.asarray(c), device.jax_device) for c in staged.consts]
    n = len(staged.consts)
    self.in_avals = [v.aval for v in staged.jaxpr.invars[n:]]
    self.out_avals = list(staged.jaxpr.out_avals)

  def _buffer(self, x, aval):
    """The device buffer of argument `x` (of type `aval`): its own when it lives on this
    device, else a copy of its host value."""
    if type(x) is PjrtArray and x._device == self.device:
      x._check_alive()
      return x._pjrt
    return pjrt_exe.put(np.asarray(x, dtype=aval.dtype), self.device.jax_device)

  def run(self, leaves, committed: bool, donate: tuple = ()) -> list[PjrtArray]:
    """Dispatch on the device (PJRT's asynchronous execute): the outputs at once. The
    leaves at positions `donate` are deleted (their buffers given to the computation)."""
    t0 = _profiler.clock() if _profiler.active else 0
    bufs = self.consts + [self._buffer(x, a) for x, a in zip(leaves, self.in_avals)]
    outs = self.executable.execute(bufs)
    _consume(leaves, donate)
    if t0:
      _profiler.record(f"pjrt execute jit({self.name})", t0, _profiler.clock(),
                       {"device": str(self.device)})
    dev = self.device
    return [PjrtArray._wrap(o, dev, a.shape, a.dtype, a.weak_type, committed)
            for o, a in zip(outs, self.out_avals)]

  def hit_runner(self, committed: bool, donate: tuple, finish: Callable) -> Callable:
    """`finish(run(leaves, committed, donate))` for jit's fast path, whose key fixed every
    leaf's type and device: the leaves' buffers go straight to execute and the outputs are
    wrapped as they come back."""
    execute, consts, dev, name = self.executable.execute, self.consts, self.device, self.name
    in_dtypes = [a.dtype for a in self.in_avals]
    out_types = [(a.shape, a.dtype, a.weak_type) for a in self.out_avals]
    wrap, put, jax_device = PjrtArray._wrap, pjrt_exe.put, dev.jax_device

    def runner(leaves):
      t0 = _profiler.clock() if _profiler.active else 0
      bufs = list(consts)
      for x, dtype in zip(leaves, in_dtypes):
        if type(x) is PjrtArray and x._device == dev:
          if x._deleted:
            x._check_alive()
          bufs.append(x._pjrt)
        else:    # a host value, or an uncommitted array of another device: copied here
          bufs.append(put(np.asarray(x, dtype=dtype), jax_device))
      outs = execute(bufs)
      if donate:
        _consume(leaves, donate)
      if t0:
        _profiler.record(f"pjrt execute jit({name})", t0, _profiler.clock(),
                         {"device": str(dev)})
      return finish([wrap(o, dev, s, d, w, committed) for o, (s, d, w) in zip(outs, out_types)])
    return runner


class PjrtCompiled:
  """`jit(f).lower(*args).compile()` for arguments on a PJRT device: the signature compiled
  by the device's client (the computation jitted calls of it run there), with JAX's
  Compiled methods: XLA's optimized HLO text, XLA's cost and memory analysis, and a call."""

  def __init__(self, comp: PjrtComputation, staged, committed: bool, donate: tuple):
    self._comp, self._staged = comp, staged
    self._committed, self._donate = committed, donate

  def as_text(self) -> str:
    return self._comp.executable.hlo_text()

  def cost_analysis(self) -> dict:
    return dict(self._comp.executable.loaded.cost_analysis())

  def memory_analysis(self):
    return self._comp.executable.loaded.get_compiled_memory_stats()

  def runtime_executable(self):
    return self._comp.executable

  @property
  def compile_times(self) -> dict[str, float]:
    """Seconds of `lower` (to StableHLO text) and `backend` (the PJRT client's compile)."""
    return dict(self._comp.compile_times)

  def __call__(self, *args, **kwargs):
    leaves = call_leaves(self._staged, args, kwargs)
    for i, (x, aval) in enumerate(zip(leaves, self._comp.in_avals)):   # as driver/dispatch.py says
      # (a Python scalar's dtype is its weak type's: only its shape is checked)
      shape, dtype = tuple(np.shape(x)), np.dtype(getattr(x, "dtype", aval.dtype))
      if shape != tuple(aval.shape) or dtype != aval.dtype:
        raise TypeError(f"argument {i} of {self._staged.name} has type {dtype.name}"
                        f"{list(shape)}, but it was compiled for {np.dtype(aval.dtype).name}"
                        f"{list(aval.shape)}")
    return self._staged.out_tree.unflatten(self._comp.run(leaves, self._committed,
                                                          self._donate))


def _consume(leaves, donate: tuple) -> None:
  """Delete the donated arguments once the call is dispatched, as jit does natively (their
  buffers, when the module aliases them to outputs, now belong to the computation)."""
  for i in donate:
    x = leaves[i]
    if isinstance(x, Array):
      x.delete()


def compiled_for(entry, device: PjrtDevice) -> PjrtComputation:
  """The entry's computation for `device`, compiled on first use (the caller holds jit's
  lock, as for a native compile)."""
  comp = entry.pjrt.get(device)
  if comp is None:
    comp = entry.pjrt[device] = PjrtComputation(entry.staged, device)
  return comp


# --- eager primitives on PJRT arrays ---------------------------------------------------------

jit_of: list = [None]     # jit.jit (jit builds on this module and fills it at import)
_one_op_fns: dict = {}    # (primitive, params) -> its jitted one-equation function
_ONE_OP_LIMIT = 4096      # distinct (primitive, params) kept; past it the cache starts over
_eager_state = threading.local()


# Float math whose eager NumPy reference evaluates in float64 on one core
# (reference/elementwise.py `_math`): on a large native array it runs compiled instead, as
# JAX's eager mode runs every op (2048x2048 float32: tanh 32 ms by NumPy, 3.4 ms compiled;
# erf 511 vs 7.6), with the values of jit (ember's math library, <= 2 ulp). `fma` is exact
# both ways (one rounding; NumPy emulates it with error-free transformations: ~30 ms per
# million float32 elements against ~1.5 compiled, 2-core VM): random.normal's XLA:CPU
# arithmetic calls it 32 times per draw.
COMPILED_EAGER_MATH = frozenset({
    "exp", "exp2", "log", "log2", "log1p", "expm1", "tanh", "logistic", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "rsqrt",
    "cbrt", "pow", "erf", "erfc", "erf_inv", "lgamma", "digamma", "bessel_i0e", "fma"})
EAGER_COMPILE_ELEMENTS = 1 << 16     # below: NumPy's pass costs less than a dispatch
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _costly_native_math(prim, vals) -> bool:
  """Whether `prim` on `vals` is float math on ember's CPU worth compiling: a primitive of
  COMPILED_EAGER_MATH, native arrays (or Python scalars) of float32/float64, one at least
  EAGER_COMPILE_ELEMENTS long, and no default device elsewhere."""
  if prim.name not in COMPILED_EAGER_MATH or \
      config._values["jax_default_device"] is not None:
    return False
  big = False
  for v in vals:
    t = type(v)
    if t is Array or t is np.ndarray:
      if v.dtype not in _FLOATS:
        return False
      big = big or v.size >= EAGER_COMPILE_ELEMENTS
    elif t not in (float, int):
      return False
  return big


def eager(prim, vals, params) -> list | None:
  """`prim` applied to `vals` as a cached one-op computation: on the PJRT device the call is
  placed on (committed arguments' device, else the default device) when an argument is a
  PjrtArray, or on ember's CPU for costly math on a large array (`_costly_native_math`);
  None otherwise (the host path then runs the NumPy implementation)."""
  pjrt = False
  if array_lib.placements_made[0]:
    for v in vals:
      if type(v) is PjrtArray:
        pjrt = True
        break
  if not pjrt and not _costly_native_math(prim, vals):
    return None
  if prim.effects_rule is not None or getattr(_eager_state, "busy", False) or \
      not core.cur_level_is_eval():
    return None   # callbacks run on the host; no re-entry (disable_jit binds again)
  if pjrt and placement(vals, None, prim.name)[0] is None:
    return None
  fn = _one_op(prim, params)
  _eager_state.busy = True
  try:
    out = fn(*vals)
  finally:
    _eager_state.busy = False
  outs = list(out) if prim.multiple_results else [out]
  if not pjrt:       # ember's eager ops are synchronous: the result is ready when returned
    for o in outs:
      o.block_until_ready()
  return outs


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
    fn = jit_of[0](bind)
    if key is not None:
      if len(_one_op_fns) >= _ONE_OP_LIMIT:
        _one_op_fns.clear()
      _one_op_fns[key] = fn
  return fn


trace_lib.eager_on_device[0] = eager
