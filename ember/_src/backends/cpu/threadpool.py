"""The kernel thread pool: splits a kernel's outer loop [0, outer) across cores.

    run(fn_address, buffers, outer, nchunks)   # fn(buffers, start, stop) over chunks
    stats() -> (jobs, chunks the workers ran)
    spin_us()                                 # EMBER_SPIN_US

How many chunks a kernel is split into is the cost model's decision
(cost_model.plan_chunks), for host.num_threads() threads (EMBER_NUM_THREADS).

Why native: a fork/join through Python's threading primitives costs ~10 us at best here
(threading.Event, median; far more in the tail, where the GIL hand-off waits), more than
many kernels take; the pool's costs ~1 us with its workers spinning, ~5 us waking them
(bench/threadpool.py). It is ONE small LLVM module (compiled with llvmlite at first use,
like the kernels; no C compiler needed):

- `ember_pool_worker(state, id)`: entered once by each worker, a Python daemon thread that
  calls it through ctypes (which releases the GIL) and stays inside it until shutdown, with
  XLA:CPU's flush-to-zero modes on (denormals.py: kernels then find them set). It
  waits for a new job generation: spinning on an atomic load for up to EMBER_SPIN_US
  microseconds (clock_gettime; after the first 3 us each round of the spin also calls
  sched_yield, so a spinning thread never keeps a busy machine's core from a thread that
  has work), then sleeping on a futex. It claims chunks of the job,
  calls the kernel on each, and wakes the caller when the last chunk is done.
- `ember_pool_run(state, fn, buffers, outer, nchunks)`: the dispatching thread publishes
  the job, wakes sleeping workers (a futex syscall only when some sleep), works on chunks
  itself, then waits for the chunks other threads claimed (spin, then futex).

Claiming is dynamic: a 64-bit `ticket` holds (job generation << 32 | chunks left), taken by
compare-and-swap. A claim succeeds only while its job is live, so a worker that woke late
never runs a chunk of a finished job with stale parameters, and the caller never waits for
a worker that has not claimed anything (on a busy machine the caller may do all chunks).
Chunk c covers [c*outer/n, (c+1)*outer/n), the same split whichever thread runs it; every
kernel computes each output element within one call, so results are bitwise identical for
any number of threads.

Concurrency: one job at a time. A second thread calling `run` while the pool is busy runs
its kernel on its own core, whole (a try-lock in `ember_pool_run`), so callers never wait
for each other and nested or concurrent calls cannot deadlock.

Devices: with several CPU devices (flags.num_cpu_devices) each has a pool of its own, of its
`share` of the threads; a device's executor thread is bound to it (`bind_thread`), and step
tables built on another device's thread are pointed at it before they run (`retarget`).

Lifetime: the pool starts at the first split kernel. At interpreter exit (atexit) the
workers are stopped and joined; a job running then finishes on its caller's thread. After
os.fork the child forgets the parent's pool (its threads do not exist there) and starts
its own at first use. The pool needs Linux (futex) on x86_64 or aarch64; elsewhere every
kernel runs on one core.

Environment: EMBER_NUM_THREADS (host.num_threads; default: the CPUs this process may run on;
1 = no pool), EMBER_SPIN_US (default 200; 0 = sleep at once), read once per process.
"""
from __future__ import annotations

import atexit
import ctypes
import functools
import os
import platform
import string
import threading
import warnings
from typing import NamedTuple

import numpy as np

from ember._src.base import flags
from ember._src.backends.cpu import denormals, host, runtime_cache

__all__ = ["run", "spin_us", "noop_kernel_address", "step_table", "stats", "shutdown", "share",
           "bind_thread", "retarget"]

# --------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------

# 200, not 50: between two jitted calls the executor thread runs ~30-100 us of Python whose
# data a large kernel has just evicted from the caches, so with 50 us the workers were
# asleep at most calls and woke 40-90 us late (this VM); 200 made the split kernels of
# bench/cpu_workloads.py 4-12% faster (softmax, sin, MLP forward, column sums).
DEFAULT_SPIN_US = 200


@functools.cache
def spin_us() -> int:
  """How long an idle thread spins before sleeping on a futex (EMBER_SPIN_US)."""
  return host.env_int("EMBER_SPIN_US", DEFAULT_SPIN_US, 0)


# --------------------------------------------------------------------------------------
# The native part
# --------------------------------------------------------------------------------------

# State layout (byte offsets); fields written by different sides sit on different lines.
_GEN, _SLEEPERS = 0, 8                      # job generation (worker futex), # sleeping
_TICKET = 64                                # (generation << 32) | chunks left to claim
_REMAINING, _CALLER_SLEEPING = 128, 132     # chunks not finished (caller futex), flag
_FN, _BUFS, _OUTER, _NCHUNKS = 192, 200, 208, 216   # the job
_STOP, _BUSY, _SPIN_NS, _SYSCALL, _CLOCK, _FUTEX_NR, _YIELD = 256, 260, 264, 272, 280, 288, 296
_WORKER_CHUNKS, _JOBS = 320, 328            # statistics (stats())
_STATE_SIZE = 384
_WAIT, _WAKE = 128, 129                     # FUTEX_WAIT_PRIVATE, FUTEX_WAKE_PRIVATE
_SPINS_PER_CLOCK = 16                       # atomic loads between clock reads
# Spinning longer than this yields the core between reads (sched_yield): on a quiet machine
# the yield returns at once, on a busy one a spinning caller no longer holds the core that
# a worker with a claimed chunk (or another process) waits for.
_PURE_SPIN_NS = 3000

_IR = r"""
%ts = type { i64, i64 }
$PAUSE_DECL

define internal ptr @f(ptr %s, i64 %off) alwaysinline {
  %p = getelementptr i8, ptr %s, i64 %off
  ret ptr %p
}

define internal i64 @now_ns(ptr %s) {
  %t = alloca %ts, align 8
  %fp = call ptr @f(ptr %s, i64 $CLOCK)
  %fn = load ptr, ptr %fp
  %r = call i32 %fn(i32 1, ptr %t)                    ; clock_gettime(CLOCK_MONOTONIC, &t)
  %sec = load i64, ptr %t
  %np = getelementptr %ts, ptr %t, i32 0, i32 1
  %nsec = load i64, ptr %np
  %a = mul i64 %sec, 1000000000
  %ns = add i64 %a, %nsec
  ret i64 %ns
}

define internal void @futex(ptr %s, ptr %addr, i64 %op, i64 %val) {
  %fp = call ptr @f(ptr %s, i64 $SYSCALL)
  %fn = load ptr, ptr %fp
  %nrp = call ptr @f(ptr %s, i64 $FUTEX_NR)
  %nr = load i64, ptr %nrp
  %a = ptrtoint ptr %addr to i64
  %r = call i64 (i64, ...) %fn(i64 %nr, i64 %a, i64 %op, i64 %val, i64 0, i64 0, i64 0)
  ret void
}

; Wait until the 32-bit word at %w differs from %old (spin until spin_ns after %since,
; or after now when %since is 0, then futex); %count, when not null, counts the threads
; asleep on it. Returns the new value.
define internal i32 @wait_change(ptr %s, ptr %w, i32 %old, ptr %count, i64 %since) {
entry:
  %sp = call ptr @f(ptr %s, i64 $SPIN_NS)
  %spin = load i64, ptr %sp
  %nospin = icmp eq i64 %spin, 0
  br i1 %nospin, label %sleep, label %start
start:
  %now = call i64 @now_ns(ptr %s)
  %fresh = icmp eq i64 %since, 0
  %t0 = select i1 %fresh, i64 %now, i64 %since
  %deadline = add i64 %t0, %spin
  br label %inner
inner:
  %i = phi i32 [ 0, %start ], [ %i1, %cont ], [ 0, %polite ], [ 0, %yield ]
  %v = load atomic i32, ptr %w acquire, align 4
  %chg = icmp ne i32 %v, %old
  br i1 %chg, label %done, label %cont
cont:
  $PAUSE
  %i1 = add i32 %i, 1
  %more = icmp ult i32 %i1, $SPINS
  br i1 %more, label %inner, label %clock
clock:
  %t = call i64 @now_ns(ptr %s)
  %late = icmp sge i64 %t, %deadline
  br i1 %late, label %sleep, label %polite
polite:                               ; after a short pure spin, let others use this core
  %spun = sub i64 %t, %t0
  %long = icmp sge i64 %spun, $PURE_SPIN_NS
  br i1 %long, label %yield, label %inner
yield:
  %yp = call ptr @f(ptr %s, i64 $YIELD)
  %yf = load ptr, ptr %yp
  %yr = call i32 %yf()                                ; sched_yield()
  br label %inner
done:
  ret i32 %v
sleep:
  %hasc = icmp ne ptr %count, null
  br i1 %hasc, label %inc, label %check
inc:
  %x = atomicrmw add ptr %count, i32 1 seq_cst
  br label %check
check:
  %v2 = load atomic i32, ptr %w seq_cst, align 4
  %same = icmp eq i32 %v2, %old
  br i1 %same, label %wait, label %woke
wait:
  %o64 = zext i32 %old to i64
  call void @futex(ptr %s, ptr %w, i64 $WAIT, i64 %o64)
  br label %woke
woke:
  br i1 %hasc, label %dec, label %reload
dec:
  %y = atomicrmw sub ptr %count, i32 1 seq_cst
  br label %reload
reload:
  %v3 = load atomic i32, ptr %w acquire, align 4
  %chg3 = icmp ne i32 %v3, %old
  br i1 %chg3, label %done3, label %sleep
done3:
  ret i32 %v3
}

; Claim and run chunks of job %g until none is left (or another job replaced it).
define internal i64 @work(ptr %s, i32 %g) {
entry:
  %fnp = call ptr @f(ptr %s, i64 $FN)
  %fn = load atomic ptr, ptr %fnp monotonic, align 8
  %bp = call ptr @f(ptr %s, i64 $BUFS)
  %bufs = load atomic ptr, ptr %bp monotonic, align 8
  %op = call ptr @f(ptr %s, i64 $OUTER)
  %outer = load atomic i64, ptr %op monotonic, align 8
  %np = call ptr @f(ptr %s, i64 $NCHUNKS)
  %n = load atomic i64, ptr %np monotonic, align 8
  %tp = call ptr @f(ptr %s, i64 $TICKET)
  %rp = call ptr @f(ptr %s, i64 $REMAINING)
  %csp = call ptr @f(ptr %s, i64 $CALLER_SLEEPING)
  %g64 = zext i32 %g to i64
  %t0 = load atomic i64, ptr %tp monotonic, align 8
  br label %loop
loop:
  %t = phi i64 [ %t0, %entry ], [ %old, %retry ], [ %t2, %next ]
  %ran = phi i64 [ 0, %entry ], [ %ran, %retry ], [ %ran1, %next ]
  %hi = lshr i64 %t, 32
  %left = and i64 %t, 4294967295
  %mine = icmp eq i64 %hi, %g64
  %some = icmp ne i64 %left, 0
  %ok = and i1 %mine, %some
  br i1 %ok, label %claim, label %exit
claim:
  %t1 = sub i64 %t, 1
  %pair = cmpxchg ptr %tp, i64 %t, i64 %t1 acq_rel monotonic
  %old = extractvalue { i64, i1 } %pair, 0
  %won = extractvalue { i64, i1 } %pair, 1
  br i1 %won, label %run, label %retry
retry:
  br label %loop
run:
  %c = sub i64 %n, %left
  %c1 = add i64 %c, 1
  %a = mul i64 %c, %outer
  %lo = udiv i64 %a, %n
  %b = mul i64 %c1, %outer
  %hi2 = udiv i64 %b, %n
  call void %fn(ptr %bufs, i64 %lo, i64 %hi2)
  %r = atomicrmw sub ptr %rp, i32 1 seq_cst
  %last = icmp eq i32 %r, 1
  br i1 %last, label %maybe_wake, label %next
maybe_wake:
  %cs = load atomic i32, ptr %csp seq_cst, align 4
  %sleeping = icmp ne i32 %cs, 0
  br i1 %sleeping, label %wake, label %next
wake:
  call void @futex(ptr %s, ptr %rp, i64 $WAKE, i64 1)
  br label %next
next:
  %ran1 = add i64 %ran, 1
  %t2 = load atomic i64, ptr %tp monotonic, align 8
  br label %loop
exit:
  ret i64 %ran
}

; a worker runs nothing but kernels: XLA:CPU's denormal modes on for its life (denormals.py)
define void @ember_pool_worker(ptr %s, i64 %id) {
entry:
  %fz = call i64 @"ember.fz.on"()
  %sl = call ptr @f(ptr %s, i64 $SLEEPERS)
  %stp = call ptr @f(ptr %s, i64 $STOP)
  %g0 = load atomic i32, ptr %s acquire, align 4
  br label %loop
loop:
  %seen = phi i32 [ %g0, %entry ], [ %g, %go ]
  %stop = load atomic i32, ptr %stp seq_cst, align 4
  %stopped = icmp ne i32 %stop, 0
  br i1 %stopped, label %exit, label %wait
wait:
  %g = call i32 @wait_change(ptr %s, ptr %s, i32 %seen, ptr %sl, i64 0)
  %stop2 = load atomic i32, ptr %stp seq_cst, align 4
  %stopped2 = icmp ne i32 %stop2, 0
  br i1 %stopped2, label %exit, label %go
go:
  %ran = call i64 @work(ptr %s, i32 %g)
  %statp = call ptr @f(ptr %s, i64 $WORKER_CHUNKS)
  %x = atomicrmw add ptr %statp, i64 %ran monotonic
  br label %loop
exit:
  call void @"ember.fz.restore"(i64 %fz)
  ret void
}

define void @ember_pool_run(ptr %s, ptr %fn, ptr %bufs, i64 %outer, i64 %n) {
entry:
  %small = icmp ule i64 %n, 1
  %nopool = icmp eq ptr %s, null       ; a device whose share is one core
  %whole = or i1 %small, %nopool
  br i1 %whole, label %serial, label %check
check:
  %stp = call ptr @f(ptr %s, i64 $STOP)
  %stop = load atomic i32, ptr %stp acquire, align 4
  %stopped = icmp ne i32 %stop, 0
  br i1 %stopped, label %serial, label %lock
lock:
  %bp = call ptr @f(ptr %s, i64 $BUSY)
  %pair = cmpxchg ptr %bp, i32 0, i32 1 acquire monotonic
  %got = extractvalue { i32, i1 } %pair, 1
  br i1 %got, label %publish, label %serial
publish:
  %g = load atomic i32, ptr %s monotonic, align 4
  %g1 = add i32 %g, 1
  %fnp = call ptr @f(ptr %s, i64 $FN)
  store atomic ptr %fn, ptr %fnp monotonic, align 8
  %bfp = call ptr @f(ptr %s, i64 $BUFS)
  store atomic ptr %bufs, ptr %bfp monotonic, align 8
  %op = call ptr @f(ptr %s, i64 $OUTER)
  store atomic i64 %outer, ptr %op monotonic, align 8
  %np = call ptr @f(ptr %s, i64 $NCHUNKS)
  store atomic i64 %n, ptr %np monotonic, align 8
  %rp = call ptr @f(ptr %s, i64 $REMAINING)
  %n32 = trunc i64 %n to i32
  store atomic i32 %n32, ptr %rp monotonic, align 4
  %g64 = zext i32 %g1 to i64
  %gh = shl i64 %g64, 32
  %ticket = or i64 %gh, %n
  %tp = call ptr @f(ptr %s, i64 $TICKET)
  store atomic i64 %ticket, ptr %tp release, align 8
  store atomic i32 %g1, ptr %s seq_cst, align 4
  %slp = call ptr @f(ptr %s, i64 $SLEEPERS)
  %sl = load atomic i32, ptr %slp seq_cst, align 4
  %any = icmp sgt i32 %sl, 0
  br i1 %any, label %wake, label %mine
wake:
  call void @futex(ptr %s, ptr %s, i64 $WAKE, i64 2147483647)
  br label %mine
mine:
  %ran = call i64 @work(ptr %s, i32 %g1)
  %jp = call ptr @f(ptr %s, i64 $JOBS)
  %x = atomicrmw add ptr %jp, i64 1 monotonic
  %since = call i64 @now_ns(ptr %s)     ; one spin budget for the whole wait
  br label %wait
wait:
  %r = load atomic i32, ptr %rp acquire, align 4
  %done = icmp eq i32 %r, 0
  br i1 %done, label %unlock, label %sleep
sleep:
  %csp = call ptr @f(ptr %s, i64 $CALLER_SLEEPING)
  %r2 = call i32 @wait_change(ptr %s, ptr %rp, i32 %r, ptr %csp, i64 %since)
  br label %wait
unlock:
  store atomic i32 0, ptr %bp release, align 4
  ret void
serial:
  call void %fn(ptr %bufs, i64 0, i64 %outer)
  ret void
}

define void @ember_pool_stop(ptr %s) {
  %stp = call ptr @f(ptr %s, i64 $STOP)
  store atomic i32 1, ptr %stp seq_cst, align 4
  %x = atomicrmw add ptr %s, i32 1 seq_cst
  call void @futex(ptr %s, ptr %s, i64 $WAKE, i64 2147483647)
  ret void
}

define void @ember_pool_noop(ptr %bufs, i64 %start, i64 %stop) {
  ret void
}

; a kernel-ABI function running rows [start, stop) of a table: row 0 holds the pool's state
; (null when no row splits, or no pool), rows 1.. (kernel, buffers, outer, nchunks), each run
; by ember_pool_run (whole on this thread when nchunks <= 1): a chain of kernels in one call,
; with the denormal modes switched once for the chain
define void @ember_pool_run_steps(ptr %table, i64 %start, i64 %stop) {
entry:
  %fz = call i64 @"ember.fz.on"()
  %s = load ptr, ptr %table
  br label %hdr
hdr:
  %i = phi i64 [ %start, %entry ], [ %next, %body ]
  %more = icmp slt i64 %i, %stop
  br i1 %more, label %body, label %done
body:
  %i1 = add i64 %i, 1
  %row = mul i64 %i1, 4
  %pf = getelementptr i64, ptr %table, i64 %row
  %fn = load ptr, ptr %pf
  %pb = getelementptr i64, ptr %pf, i64 1
  %bufs = load ptr, ptr %pb
  %po = getelementptr i64, ptr %pf, i64 2
  %outer = load i64, ptr %po
  %pc = getelementptr i64, ptr %pf, i64 3
  %chunks = load i64, ptr %pc
  call void @ember_pool_run(ptr %s, ptr %fn, ptr %bufs, i64 %outer, i64 %chunks)
  %next = add i64 %i, 1
  br label %hdr
done:
  call void @"ember.fz.restore"(i64 %fz)
  ret void
}
"""


def _ir_text() -> str:
  x86 = platform.machine().lower() in ("x86_64", "amd64")
  return denormals.TEXT_HELPERS + string.Template(_IR).substitute(
      CLOCK=_CLOCK, SYSCALL=_SYSCALL, FUTEX_NR=_FUTEX_NR, SPIN_NS=_SPIN_NS,
      SPINS=_SPINS_PER_CLOCK, WAIT=_WAIT, WAKE=_WAKE, FN=_FN, BUFS=_BUFS, OUTER=_OUTER,
      NCHUNKS=_NCHUNKS, TICKET=_TICKET, REMAINING=_REMAINING,
      CALLER_SLEEPING=_CALLER_SLEEPING, SLEEPERS=_SLEEPERS, STOP=_STOP, BUSY=_BUSY,
      YIELD=_YIELD, PURE_SPIN_NS=_PURE_SPIN_NS, WORKER_CHUNKS=_WORKER_CHUNKS, JOBS=_JOBS,
      PAUSE="call void @llvm.x86.sse2.pause()" if x86 else "",
      PAUSE_DECL="declare void @llvm.x86.sse2.pause()" if x86 else "")


class _Native(NamedTuple):
  engine: object
  run: object      # ctypes function ember_pool_run
  worker: object
  stop: object
  noop: int        # address of ember_pool_noop (a kernel that does nothing)
  run_steps: object  # ember_pool_run_steps as a kernel (ctypes)


@runtime_cache.once
def _native() -> _Native:
  text = _ir_text()     # compiled once per machine (~25 ms), then loaded from disk
  engine, addr = runtime_cache.load_or_compile("ember_pool_run", lambda: text, text, 2)
  vp, i64 = ctypes.c_void_p, ctypes.c_int64
  return _Native(engine,
                 ctypes.CFUNCTYPE(None, vp, vp, vp, i64, i64)(addr("ember_pool_run")),
                 ctypes.CFUNCTYPE(None, vp, i64)(addr("ember_pool_worker")),
                 ctypes.CFUNCTYPE(None, vp)(addr("ember_pool_stop")),
                 addr("ember_pool_noop"),
                 _KERNEL(addr("ember_pool_run_steps")))


def noop_kernel_address() -> int:
  """A kernel that does nothing (for measuring the pool's fork/join cost)."""
  return _native().noop


class _Pool:
  """The state block and the worker threads of one device's pool."""

  def __init__(self, threads: int, spin: int):
    nat = _native()
    self.native = nat
    self._mem = ctypes.create_string_buffer(_STATE_SIZE + 64)
    base = ctypes.addressof(self._mem)
    self.state = base + (-base) % 64
    libc = ctypes.CDLL(None)
    for off, value in ((_SPIN_NS, spin * 1000),
                       (_SYSCALL, ctypes.cast(libc.syscall, ctypes.c_void_p).value),
                       (_CLOCK, ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value),
                       (_YIELD, ctypes.cast(libc.sched_yield, ctypes.c_void_p).value),
                       (_FUTEX_NR, host.FUTEX_SYSCALL[platform.machine().lower()])):
      ctypes.c_int64.from_address(self.state + off).value = value
    self.run = functools.partial(nat.run, self.state)
    self.threads = [threading.Thread(target=nat.worker, args=(self.state, k), daemon=True,
                                     name=f"ember-pool-{k}") for k in range(1, threads)]
    for t in self.threads:
      t.start()

  def stop(self, timeout: float = 2.0) -> None:
    self.native.stop(self.state)
    for t in self.threads:
      t.join(timeout)
    if any(t.is_alive() for t in self.threads):
      _leaked.append(self)     # a worker still inside a kernel keeps the state alive


# Several CPU devices (flags.num_cpu_devices) share the cores: device k's executor thread is
# bound to pool k (`bind_thread`), of `share(k)` threads; unbound threads (the caller's, for
# eager ops and inline calls) use pool 0. One device: pool 0 has every thread.
_pool = None          # pool 0: a _Pool (or _OneCore), started at the first split kernel
_device_pools: dict[int, object] = {}    # pools 1.. (devices after the first)
_pool_lock = threading.Lock()
_leaked: list = []
_bound = threading.local()   # .index: the local device whose executor this thread is


class _OneCore:
  """Stands in for a pool that could not start, or a device with one core: every kernel
  runs whole on its caller."""
  state = 0

  def run(self, fn, buffers, outer, nchunks):
    _KERNEL(fn)(buffers, 0, outer)

  def stop(self):
    pass


_KERNEL = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)


def share(index: int, devices: int | None = None) -> int:
  """Threads of local CPU device `index` (caller included): host.num_threads() split as
  evenly as it goes over the devices, at least one each."""
  devices = flags.num_cpu_devices() if devices is None else devices
  total = host.num_threads()
  return max(1, total // devices + (index < total % devices))


def bind_thread(index: int) -> int:
  """Make this thread (a device's executor, or a caller running a device's call inline) run
  split kernels on local device `index`'s pool; returns the index it had."""
  before = getattr(_bound, "index", 0)
  _bound.index = index
  return before


def _new_pool(threads: int):
  if threads <= 1 or not host.threads_supported():
    return _OneCore()
  try:
    return _Pool(threads, spin_us())
  except (OSError, RuntimeError, AttributeError) as e:   # no libc symbol, no threads
    warnings.warn(f"ember: the kernel thread pool could not start ({e}); kernels run "
                  "on one core", RuntimeWarning, stacklevel=3)
    return _OneCore()


def _get_pool():
  """This thread's pool (started now if it has not been)."""
  global _pool
  index = getattr(_bound, "index", 0)
  if index == 0 and _pool is not None:
    return _pool
  with _pool_lock:
    if index == 0:
      if _pool is None:
        _pool = _new_pool(share(0))
      return _pool
    p = _device_pools.get(index)
    if p is None:
      p = _device_pools[index] = _new_pool(share(index))
    return p


def run(fn: int, buffers, outer: int, nchunks: int) -> None:
  """Run kernel `fn` (address) over [0, outer) in `nchunks` chunks on this thread's pool (the
  calling thread takes part); on one core when the pool is busy with another caller's
  kernel."""
  p = _pool if _pool is not None and getattr(_bound, "index", 0) == 0 else _get_pool()
  p.run(fn, buffers, outer, nchunks)


def current_state() -> int:
  """The address of this thread's pool state (0: kernels run whole here), for a step table
  built on another device's thread (`retarget`)."""
  return _get_pool().state


def retarget(table: np.ndarray) -> None:
  """Point a step table (`step_table`) at this thread's pool before running it: an
  executable's cached step tables serve every device that runs it."""
  if table[0, 0]:
    state = current_state()
    if table[0, 0] != state:
      table[0, 0] = state


def step_table(rows) -> tuple | None:
  """(runner, table) for running `rows` (kernel address, buffer pointer array address,
  outer, nchunks) in order in ONE native call `runner(table.ctypes.data, 0, len(rows))`
  (the kernel ABI: executable.py calls it like a kernel). No return to Python between
  kernels, whose interpreter state the previous kernel evicted from the caches: ~10-20 us
  after each split kernel, ~0.5-1 us of ctypes after each small one. A row with nchunks > 1
  is split over the pool as `run` would (this starts the pool; the table holds its state, so
  a forked child builds its own); where kernels cannot be split, or none asks to, every
  kernel runs whole on the caller (ember_pool_run never reads the state then). None if the
  pool's module cannot be built here."""
  p = _get_pool() if any(r[3] > 1 for r in rows) else None
  state = p.state if p is not None else 0
  if not state:
    rows = [(fn, bufs, outer, 1) for fn, bufs, outer, _ in rows]
  try:
    runner = _native().run_steps
  except RuntimeError:     # no LLVM target for the pool's module: separate calls
    return None
  return runner, np.array([(state, 0, 0, 0), *rows], np.int64)


def stats() -> tuple[int, int]:
  """(split jobs run by the pools, chunks of them the workers ran) since they started: how
  much the workers take part (on a busy machine the caller may run most chunks)."""
  jobs = chunks = 0
  for p in _all_pools():
    if isinstance(p, _Pool):
      read = lambda off: ctypes.c_int64.from_address(p.state + off).value
      jobs, chunks = jobs + read(_JOBS), chunks + read(_WORKER_CHUNKS)
  return jobs, chunks


def _all_pools() -> list:
  return [p for p in (_pool, *_device_pools.values()) if p is not None]


def shutdown() -> None:
  """Stop and join the workers (atexit). The stopped pools stay installed: split kernels
  run later (say, by the executor draining its queue at exit) run on their caller's core."""
  with _pool_lock:
    pools = _all_pools()
  for p in pools:
    p.stop()


def _after_fork_in_child() -> None:
  # The parent's workers do not exist in the child: never touch them or their state.
  global _pool, _pool_lock, _device_pools
  _leaked.extend(_all_pools())
  _pool, _device_pools, _pool_lock = None, {}, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)
atexit.register(shutdown)
