"""Fuzz campaigns: python -m tests.fuzz --count N --jobs J [--max-ops K] [--x64 [on|off|mixed]]
[--jax] [--minimize] [--seed S] [--timeout T]

Runs programs of seeds S, S+1, ... S+N-1 (--x64 alone: every other program with x64 on;
--x64 on: all), prints each failure not in known.py with its seed and, with --minimize, the
smallest failing program found as runnable Python source (and the same program for JAX
when the failing check compares with JAX). Exit status 1 when anything new failed.
"""
from __future__ import annotations

import argparse
import collections
import faulthandler
import multiprocessing
import signal
import sys
import time


def _parse(argv):
  p = argparse.ArgumentParser(prog="python -m tests.fuzz",
                              description="Differential fuzzing campaign (docs/fuzzing.md)")
  p.add_argument("--count", type=int, default=100)
  p.add_argument("--jobs", type=int, default=1)
  p.add_argument("--max-ops", type=int, default=8)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--x64", choices=("off", "on", "mixed"), nargs="?", const="mixed",
                 default="off", help="x64 for every program (on), none (off) or every other")
  p.add_argument("--jax", action="store_true", help="compare with real JAX too")
  p.add_argument("--minimize", action="store_true")
  p.add_argument("--quiet", action="store_true", help="print only failures")
  p.add_argument("--timeout", type=int, default=120,
                 help="seconds a program may run before it counts as a failure (a hang or a "
                      "compile blow-up); its threads' stacks go to stderr")
  return p.parse_args(argv)


_worker = None


def _init(use_jax):
  global _worker
  if use_jax:
    from tests.fuzz.runner import JaxWorker
    _worker = JaxWorker()


def _x64(args, seed) -> bool:
  return args.x64 == "on" or (args.x64 == "mixed" and seed % 2 == 1)


def _within(seconds, fn):
  """fn(), or TimeoutError once it has run `seconds` (raised when Python code next runs;
  the stacks are dumped at the deadline in any case, so a hang inside LLVM shows too)."""
  def expire(signum, frame):
    raise TimeoutError(f"the program still ran after {seconds} s")
  previous = signal.signal(signal.SIGALRM, expire)
  faulthandler.dump_traceback_later(seconds + 1)
  signal.alarm(seconds)
  try:
    return fn()
  finally:
    signal.alarm(0)
    faulthandler.cancel_dump_traceback_later()
    signal.signal(signal.SIGALRM, previous)


def run_seed(job):
  """One program: (seed, outcome text lines, new failure count, known hit names)."""
  args, seed = job
  from tests.fuzz import minimize, runner
  from tests.fuzz.generator import generate
  from tests.fuzz.program import repro_source
  lines = []
  try:
    prog = generate(seed, x64=_x64(args, seed), max_ops=args.max_ops)
    outcome = _within(args.timeout, lambda: runner.check_program(prog, _worker))
  except Exception as e:  # noqa: BLE001 -- a harness failure is a finding too
    return seed, [f"seed {seed}: harness error {type(e).__name__}: {e}"], 1, []
  for fl in outcome.failures:
    lines.append(f"seed {seed} (x64={prog.x64}): {fl}")
  if outcome.known and not args.quiet:
    names = sorted({name for _, name in outcome.known})
    lines.append(f"seed {seed}: known issues {', '.join(names)}")
  if outcome.failures and args.minimize:
    fl = outcome.failures[0]
    small = minimize.minimize(prog, minimize.still_fails(fl.check, _worker))
    lines.append(f"--- smallest failing program for {fl.check} (seed {seed}) ---")
    lines.append(runner.repro(small, fl))
    if fl.check.startswith("jax"):
      lines.append("--- the same program under JAX ---")
      lines.append(repro_source(small, runner.REPRO_MODES[fl.check], library="jax"))
  return seed, lines, len(outcome.failures), [name for _, name in outcome.known]


def main(argv=None) -> int:
  args = _parse(argv if argv is not None else sys.argv[1:])
  jobs = [(args, s) for s in range(args.seed, args.seed + args.count)]
  started = time.time()
  new = 0
  known = collections.Counter()
  failing_seeds = []
  if args.jobs > 1:
    pool = multiprocessing.get_context("spawn").Pool(args.jobs, _init, (args.jax,))
    results = pool.imap_unordered(run_seed, jobs)
  else:
    _init(args.jax)
    results = map(run_seed, jobs)
  for done, (seed, lines, n_new, known_names) in enumerate(results, 1):
    new += n_new
    known.update(known_names)
    if n_new:
      failing_seeds.append(seed)
    for line in lines:
      print(line, flush=True)
    if not args.quiet and done % 50 == 0:
      print(f"[{done}/{args.count} programs, {time.time() - started:.0f} s, "
            f"{len(failing_seeds)} failing]", flush=True)
  print(f"{args.count} programs in {time.time() - started:.0f} s: "
        f"{len(failing_seeds)} with new failures {sorted(failing_seeds)}; "
        f"known issues hit: {dict(known)}", flush=True)
  return 1 if new else 0

