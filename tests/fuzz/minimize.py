"""Shrinking a failing program to a small one that fails the same check.

Steps, repeated until none applies (each kept only when the check still fails with a
failure that known.py does not explain):
  truncate  make an earlier variable the output (dead statements and inputs go)
  cut       replace a statement by a new input holding its eager value
  bypass    replace a statement by one of its operands of the same shape and dtype
  simplify  replace an input's values by zeros, ones, or rounded values
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Callable

import numpy as np

from tests.fuzz import runner
from tests.fuzz.program import Program, Stmt


def still_fails(check: str, jax_worker=None) -> Callable[[Program], bool]:
  def fails(prog: Program) -> bool:
    if check not in runner.applicable_checks(prog, jax_worker):
      return False
    try:
      outcome = runner.check_program(prog, jax_worker, [check])
    except Exception:  # noqa: BLE001 -- a candidate the harness cannot run is no repro
      return False
    return bool(outcome.failures)
  return fails


def _eager_value(prog: Program, name: str) -> np.ndarray | None:
  from ember._src.base.config import config
  sub = dataclasses.replace(prog, out=name).used()
  try:
    with config._override("jax_enable_x64", prog.x64), warnings.catch_warnings():
      warnings.simplefilter("ignore")
      f, _ = runner.functions(sub)
      import ember.numpy as jnp
      return np.asarray(f(*[jnp.asarray(v) for v in sub.values()]))
  except Exception:  # noqa: BLE001
    return None


def _rename(stmts, old: str, new: str) -> list[Stmt]:
  return [dataclasses.replace(s, args=tuple(new if a == old else a for a in s.args))
          for s in stmts]


def _candidates(prog: Program):
  """Smaller variants of `prog`, most reducing first."""
  for s in prog.stmts[:-1]:                         # truncate
    yield dataclasses.replace(prog, out=s.out).used()
  for i, s in enumerate(prog.stmts):                # cut
    value = _eager_value(prog, s.out)
    if value is None:
      continue
    name = f"x{1 + max(int(n[1:]) for n in prog.names())}"
    stmts = _rename(prog.stmts[:i] + prog.stmts[i + 1:], s.out, name)
    out = name if prog.out == s.out else prog.out
    if out == name:
      continue   # the whole program would be an input
    yield dataclasses.replace(prog, inputs=prog.inputs + [(name, value)], stmts=stmts,
                              out=out).used()
  shapes = {n: (v.shape, v.dtype) for n, v in prog.inputs}
  for i, s in enumerate(prog.stmts):                # bypass
    value = _eager_value(prog, s.out)
    for a in dict.fromkeys(s.args):
      av = shapes.get(a) or (lambda v: v is not None and (v.shape, v.dtype))(_eager_value(prog, a))
      if value is not None and av == (value.shape, value.dtype) and s.out != prog.out:
        yield dataclasses.replace(prog, stmts=_rename(prog.stmts[:i] + prog.stmts[i + 1:],
                                                      s.out, a)).used()
  for k, (n, v) in enumerate(prog.inputs):          # simplify
    for simpler in (np.zeros_like(v), np.ones_like(v), np.round(v).astype(v.dtype)):
      if simpler.shape == v.shape and not np.array_equal(simpler, v, equal_nan=True):
        inputs = list(prog.inputs)
        inputs[k] = (n, simpler)
        batch = prog.batch if k else None
        yield dataclasses.replace(prog, inputs=inputs, batch=batch)


def _size(prog: Program) -> tuple:
  return (len(prog.stmts), len(prog.inputs),
          sum(int(np.count_nonzero(v)) for v in prog.values()))


def minimize(prog: Program, fails: Callable[[Program], bool], max_steps: int = 200) -> Program:
  """The smallest variant of `prog` found for which `fails` holds (`prog` fails)."""
  steps = 0
  improved = True
  while improved and steps < max_steps:
    improved = False
    for cand in _candidates(prog):
      steps += 1
      if _size(cand) < _size(prog) and fails(cand):
        prog = cand
        improved = True
        break
      if steps >= max_steps:
        break
  return prog
