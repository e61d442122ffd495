"""Jitted calls on PJRT devices (backends/pjrt): where a call runs, and running it there.

A top-level jitted call runs where its committed arguments live (`device_put(x, dev)`
commits x to dev), else on the default device (`jax.default_device`), else on ember's
native CPU, as JAX decides. On a PJRT device the traced signature (jit's cache entry, so
the same trace and cache key as ember's native compile) is lowered to StableHLO text,
compiled by the device's PJRT client once per (entry, device) and executed there; the
outputs are PjrtArrays. Committed arguments on two devices raise JAX's error.
"""
from __future__ import annotations

import time

import numpy as np

from ember._src import cache_miss
from ember._src.backends.pjrt import client as pjrt_client
from ember._src.backends.pjrt import executable as pjrt_exe
from ember._src.compilation import lower_staged
from ember._src.profiler import events as _profiler
from ember._src.runtime import array as array_lib
from ember._src.runtime.array import Array
from ember._src.runtime.pjrt_array import PjrtArray
from ember._src.sharding import PjrtDevice


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

  def run(self, leaves, committed: bool) -> list[PjrtArray]:
    """Dispatch on the device (PJRT's asynchronous execute): the outputs at once."""
    t0 = _profiler.clock() if _profiler.active else 0
    bufs = self.consts + [self._buffer(x, a) for x, a in zip(leaves, self.in_avals)]
    outs = self.executable.execute(bufs)
    if t0:
      _profiler.record(f"pjrt execute jit({self.name})", t0, _profiler.clock(),
                       {"device": str(self.device)})
    dev = self.device
    return [PjrtArray._wrap(o, dev, a.shape, a.dtype, a.weak_type, committed)
            for o, a in zip(outs, self.out_avals)]


def compiled_for(entry, device: PjrtDevice) -> PjrtComputation:
  """The entry's computation for `device`, compiled on first use (the caller holds jit's
  lock, as for a native compile)."""
  comp = entry.pjrt.get(device)
  if comp is None:
    comp = entry.pjrt[device] = PjrtComputation(entry.staged, device)
  return comp
