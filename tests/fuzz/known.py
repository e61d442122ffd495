"""Mismatches that are known and being fixed elsewhere: the fuzzer reports a failure that
matches an entry here as known, not as a new finding (and the minimizer never drifts
into one). Each entry has the exact repro and the reason; remove an entry when its fix
lands (tests/test_fuzz.py runs every repro and says when one passes).
"""
from __future__ import annotations

import dataclasses
from typing import Callable


@dataclasses.dataclass(frozen=True)
class KnownIssue:
  name: str
  reason: str
  repro: str                                  # a runnable script (ember) that shows it
  applies: Callable[[object, object], bool]   # (Program, runner.Failure) -> bool


ISSUES: list[KnownIssue] = []


def match(prog, failure) -> KnownIssue | None:
  for issue in ISSUES:
    if issue.applies(prog, failure):
      return issue
  return None
