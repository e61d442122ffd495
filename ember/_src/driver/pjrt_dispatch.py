"""Jitted calls on PJRT devices (backends/pjrt): where a call runs, and running it there.

A top-level jitted call runs where its committed arguments live (`device_put(x, dev)`
commits x to dev), else on the default device (`jax.default_device`), else on ember's
native CPU, as JAX decides. On a PJRT device the traced signature (jit's cache entry, so
the same trace and cache key as ember's native compile) is lowered to StableHLO text,
compiled by the device's PJRT client once per (entry, device) and executed there; the
outputs are PjrtArrays. Committed arguments on two devices raise JAX's error.

Eager (un-jitted) primitives applied to PjrtArrays run on the device too, as one-op jitted
functions placed like any jitted call (driver/eager.py).
"""
from __future__ import annotations

import time
from typing import Callable

import numpy as np

from ember._src.driver import cache_miss
from ember._src.backends.pjrt import client as pjrt_client
from ember._src.backends.pjrt import executable as pjrt_exe
from ember._src.driver.compilation import call_leaves, lower_staged
from ember._src.base import profiler_events as _profiler
from ember._src.core import array as array_lib
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
