"""pytest plugin of tests/suites/run.py: every test's outcome, written as JSON when the run ends.

Loaded by name (`-p ember_suite_outcomes`) in the suite's pytest process; with pytest-xdist the
controller receives every worker's reports (a worker that dies mid-test reports that test as
crashed), so only the controller writes. The file ($EMBER_SUITE_OUTCOMES) is
{"outcomes": {test id: outcome}, "messages": {test id: first line of the failure}}, outcome one
of passed, failed, error (setup or teardown failed), crashed (the interpreter died in the test),
skipped, xfailed, xpassed, collect-error (the id is then the file's or class's).
"""
import json
import os

_WORST_FIRST = ("crashed", "collect-error", "error", "failed")
_outcomes: dict[str, str] = {}
_messages: dict[str, str] = {}


def _outcome(report) -> str | None:
  """This report's outcome, or None for a passing setup/teardown (it says nothing)."""
  if report.failed:
    if report.when not in ("setup", "call", "teardown"):  # xdist's report of a dead worker
      return "crashed"
    return "failed" if report.when == "call" else "error"
  if report.skipped:
    return "xfailed" if hasattr(report, "wasxfail") else "skipped"
  if report.when == "call":
    return "xpassed" if hasattr(report, "wasxfail") else "passed"
  return None


def _first_line(report) -> str:
  """The failure's message; for a collection error the exception pytest prints (`E   ...`),
  not its header ("ImportError while importing test module ...")."""
  crash = getattr(report.longrepr, "reprcrash", None)
  text = crash.message if crash is not None else str(report.longrepr or "")
  errors = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
  lines = errors[-1:] if errors else text.strip().splitlines()
  return lines[0][:300] if lines else ""


def _record(nodeid: str, outcome: str, report) -> None:
  if _outcomes.get(nodeid) in _WORST_FIRST:  # a teardown error after a failure keeps the failure
    return
  _outcomes[nodeid] = outcome
  if outcome in _WORST_FIRST:
    _messages[nodeid] = _first_line(report)


def pytest_runtest_logreport(report):
  outcome = _outcome(report)
  if outcome is not None:
    _record(report.nodeid, outcome, report)


def pytest_collectreport(report):
  if report.failed:
    _record(report.nodeid, "collect-error", report)


def pytest_sessionfinish(session):
  path = os.environ.get("EMBER_SUITE_OUTCOMES")
  if path and not hasattr(session.config, "workerinput"):  # xdist workers report to the controller
    with open(path, "w") as f:
      json.dump({"outcomes": _outcomes, "messages": _messages}, f, indent=0, sort_keys=True)
