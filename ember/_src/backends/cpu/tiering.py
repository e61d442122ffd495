"""Tiered compilation: a first call runs quick-tier code while the optimized code is built
in the background.

LLVM's optimization and instruction selection are most of a small function's first call
(30-45 ms of ~50 at the default tier; 3-5x less at the quick tier, opt_level 0). A module
that qualifies (`qualifies`) is compiled at the quick tier, and this module's worker thread
compiles the same IR at the requested tier and swaps the machine code into the Executable
(`Executable.upgrade`); calls before the swap run the quick code.

Results never depend on the tier: a kernel qualifies only when its IR carries no `reassoc`
flag (float add/multiply reductions, whose vectorized order differs from the scalar one).
Without fast-math flags LLVM's passes and both instruction selectors preserve every value
(fused multiply-adds are explicit `llvm.fma` calls), so quick and optimized code give the
same bits; tests/test_tiering.py checks it on the math library. In a module where some
kernels qualify and others do not (a training step returning its mean loss), the first
compile is mixed (compiler._quick_kernels): the kernels that qualify at the quick tier and
the others at the requested one, on two threads; the tier-up then compiles the whole
module at the requested tier, whose code for the reductions is the same as the first's.

Run time also decides (cost_model.quick_module_pays): a module whose quick code would run
longer than `cost_model.QUICK_MAX_NS` (the cost model with quick-code rates, dots left out:
their loops are the same code at every tier) compiles at the full tier at once, unless it
computes transcendentals: then it starts at the vector-call tier (VECTOR_CALLS: vectorized
loops calling optimized vector copies of the math functions, compiled once per process;
compiler._library_math), whose code runs nearly as fast for a third of the LLVM time. Quick
code calls the scalar copies. Both give the bits the full tier's inlined math gives.
`--tiered_compilation=false` (EMBER_FLAGS) turns tiering off; the persistent cache, dumps
and `jax_disable_most_optimizations` never tier.

The worker runs LLVM's two long calls (the pass pipeline, object emission) in an LLVM
context and target machine of its own, outside llvmlite's global lock, so a foreground
compile is not held up by a background one, and at a lower priority (WORKER_NICE), so it
does not take a core from the quick code. A forked child keeps its quick code.

The worker takes the newest submission first: the function a program compiled last is the
one it is calling now, and its steady state should not wait for the tier-ups of everything
compiled before it (a test suite's process had 500 of them queued after two test files:
a kernel's speed then depended on the process's history). Older ones run when the worker
has nothing newer.
"""
from __future__ import annotations

import atexit
import logging
import os
import threading
import time

from ember._src.base import profiler_events as _profiler

logger = logging.getLogger("ember._src.compiler")

_jobs: list = []           # (executable, job) submitted and not started: newest last
_job_added = threading.Condition()
_worker: threading.Thread | None = None
_lock = threading.Lock()
_stopping = False
_current = None            # the executable the worker is compiling for
_outstanding: set = set()  # executables submitted and not yet upgraded


def wait_idle(timeout: float | None = None) -> bool:
  """Wait until every submitted tier-up is done, with what runs after it (`when_final`)
  (benchmarks timing the steady state, tests that patch the compiler); False if `timeout`
  seconds (one deadline for all of them) passed first. Tier-ups submitted meanwhile (by
  other threads) are waited for too."""
  deadline = None if timeout is None else time.monotonic() + timeout
  while True:
    with _lock:   # the worker and other threads change the set
      pending = [exe for exe in _outstanding if not exe.tier_up_settled.is_set()]
    if not pending:
      return True
    for exe in pending:
      left = None if deadline is None else deadline - time.monotonic()
      if left is not None and left <= 0 or not exe.tier_up_settled.wait(left):
        return False


def qualifies(ir_text: str, opt_level: int) -> bool:
  """Whether the quick-tier code of this IR (a module, or the functions of one kernel)
  computes the same bits as its optimized code, and a quick tier exists below
  `opt_level`."""
  return opt_level >= 2 and "reassoc" not in ir_text


# The tiers a module may start at (`pays`), below the requested one
QUICK = "quick"                 # opt 0: scalar code, no IR optimization, fast isel
VECTOR_CALLS = "vector calls"   # vectorized code, the math in calls (compiler._library_math)


def pays(module, flags, runs: int | None = 1) -> str | bool:
  """The tier `module` (optimized) may start at under `flags`, False for the requested one
  at once: tiering on, a tier below the requested one, and `runs` calls of its code (a loop
  body's trip count; None: unknown, never). QUICK when the run time of its quick code stays
  below the limit (cost_model.quick_module_pays). A scan of a training step runs its quick
  code until the swap, and the swap waits for a core the loop keeps busy: quick code for the
  50 steps of bench/cpu_workloads.py's epoch made its first call 1.0-2.2x the full tier's.
  Else VECTOR_CALLS when it computes transcendentals: that code runs 1.0-1.25x the optimized
  code's time and compiles in a third of it (the compiler starts there only when every
  kernel qualifies, else at the requested tier)."""
  # deferred: codegen (llvmlite) loads at the first compile
  from ember._src.passes import analysis
  from ember._src.backends.cpu import cost_model
  from ember._src.backends.cpu.codegen import reductions
  if not getattr(flags, "tiered_compilation", False) or flags.opt_level < 2 or runs is None:
    return False
  if cost_model.quick_module_pays(module, reductions.vector_transcendentals(module.entry), runs):
    return QUICK
  _, transcendentals = analysis.computation_costs(module.entry, cost_model.QUICK_TRANSCENDENTAL)
  return VECTOR_CALLS if transcendentals else False


def submit(exe, job) -> None:
  """Compile `job()` (-> upgrade kwargs) in the background and upgrade `exe` with it."""
  global _worker
  exe.tier_up_pending = threading.Event()     # set once the final code is in
  exe.tier_up_settled = threading.Event()     # ... and `when_final`'s callbacks have run
  exe.on_final = []
  with _lock:
    _outstanding.add(exe)
    if _worker is None or not _worker.is_alive():
      _worker = threading.Thread(target=_run, name="ember-tier-up", daemon=True)
      _worker.start()
  _push((exe, job))


def _push(item) -> None:
  with _job_added:
    _jobs.append(item)
    _job_added.notify()


def _take_newest_job():
  global _current
  with _job_added:
    while not _jobs:
      _job_added.wait()
    exe, job = _jobs.pop()
    _current = exe           # (in the same step, for drop_pending)
    return exe, job


def drop_pending() -> int:
  """Forget the submitted tier-ups not yet started, then wait for the one in progress:
  their executables keep the code they run now for good (the same bits, slower). Tests use
  it to start with no background compile of earlier tests in flight. Returns how many were
  dropped."""
  with _job_added:
    dropped = [exe for exe, _ in _jobs if exe is not None]
    _jobs[:] = [item for item in _jobs if item[0] is None]   # (an exiting process's stop)
    current = _current
  _keep_current_code(dropped)
  if current is not None:
    current.tier_up_settled.wait()
  return len(dropped)


def _keep_current_code(executables) -> None:
  for exe in executables:
    with _lock:
      exe.on_final = None      # (its code now is final: nothing more to wait for)
      _outstanding.discard(exe)
    exe.tier_up_pending.set()
    exe.tier_up_settled.set()


# The worker's nice value: its compile takes a core only when one is idle. Started at once,
# at the default priority it shared the cores with the quick code the first call runs
# (a layernorm's first call: ~30 ms, ~20 ms with the worker niced).
WORKER_NICE = 10


def _lower_priority() -> None:
  try:
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), WORKER_NICE)
  except (AttributeError, OSError):   # no per-thread priorities here: compile at full speed
    pass


def _run() -> None:
  global _current
  _lower_priority()
  while True:
    exe, job = _take_newest_job()
    if exe is None:
      return
    try:
      if not _stopping:
        traced, t0 = _profiler.active, time.perf_counter()
        exe.upgrade(**job())
        secs = time.perf_counter() - t0
        logger.debug("tier-up of %s done in %.1f ms", exe.module_name, secs * 1e3)
        if traced and _profiler.active:   # a span on this worker's row of a trace
          _profiler.record_secs(f"tier-up {exe.module_name}", t0, secs)
    except Exception:  # noqa: BLE001 - the quick code stays correct; say why it stayed
      logger.warning("tier-up of %s failed; it keeps its quick-tier code", exe.module_name,
                     exc_info=True)
    finally:
      with _lock:
        callbacks, exe.on_final = exe.on_final, None
      exe.tier_up_pending.set()
      _run_callbacks(exe, callbacks)
      exe.tier_up_settled.set()
      with _lock:
        _outstanding.discard(exe)
      _current = None


def when_final(exe, fn) -> None:
  """`fn(exe)` once `exe` has its final machine code: now when it has no tier-up pending,
  else on the worker right after the upgrade, before wait_idle returns (an exiting
  process's worker runs it before the exit: `_stop`)."""
  with _lock:
    callbacks = getattr(exe, "on_final", None)
    if callbacks is not None:
      callbacks.append(fn)
      return
  _run_callbacks(exe, [fn])


def _run_callbacks(exe, callbacks) -> None:
  for fn in callbacks:
    try:
      fn(exe)
    except Exception:  # noqa: BLE001 -- a callback (a cache write) never breaks a compile
      logger.debug("after the final code of %s", exe.module_name, exc_info=True)


@atexit.register
def _stop() -> None:
  """At exit, let a compile in progress finish, however long it takes, and drop the rest:
  the C++ static destructors that run at exit tear LLVM down, and a compile still running
  then aborts the process (`DAG root value is not a chain!` or a segfault after the
  program's last line: on a loaded machine the niced tier-up of an optimizer step outlived
  the 5 s this used to wait)."""
  global _stopping
  _stopping = True
  w = _worker
  if w is not None and w.is_alive():
    _push((None, None))      # taken next: the newest
    _full_priority(w)
    w.join()


def _full_priority(thread: threading.Thread) -> None:
  """Undo WORKER_NICE for the exiting process's last compile (where this process may)."""
  try:
    os.setpriority(os.PRIO_PROCESS, thread.native_id, 0)
  except (AttributeError, OSError, TypeError):   # no permission to lower a nice value
    pass


def _after_fork_in_child() -> None:
  # the parent's worker does not exist here: its queued executables keep their quick code
  global _worker, _jobs, _job_added, _current, _lock
  _lock = threading.Lock()   # parent threads may have held these at the fork
  _job_added = threading.Condition()
  pending = [exe for exe, _ in _jobs if exe is not None] + [_current] * (_current is not None)
  _worker, _jobs, _current = None, [], None
  _keep_current_code(pending)
  _outstanding.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)
