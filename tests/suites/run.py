"""The JAX libraries' own test suites on ember, compared per test id with JAX's outcomes.

    make test-ecosystem                                  # every suite, on ember
    .venv/bin/python -m tests.suites.run chex optax      # some suites
    .venv/bin/python -m tests.suites.run --sample        # the fixed sample CI runs
    .venv/bin/python -m tests.suites.run --ids FILE      # the test ids listed in FILE
    JAX_VENV/bin/python -m tests.suites.run --record     # JAX's outcomes -> tests/data/suites/

The tests run as their authors wrote them: each suite in a pytest process of its own (with
pytest-xdist, so an interpreter that dies mid-test shows up as that test `crashed`) in which a
sitecustomize installs ember's `import jax` alias (ember.compat) before anything runs.

Sources, at the versions requirements-ecosystem.txt pins: chex's and optax's tests ship in
their wheels (the installed packages); flax's in its sdist (`pip download`); equinox's only in
its repository (GitHub's tarball of the tag, or a checkout named by `--source equinox=PATH` /
EMBER_SUITE_SOURCE_EQUINOX). A digest of each suite's test files is stored beside JAX's
outcomes, so a run on ember provably runs the tests JAX's outcomes came from.

A test that passes on JAX and not on ember is NEW unless tests/data/suites/known_failures.json
lists it (with its reason: `open` ones are ember's to fix, `exception` ones are documented in
docs/ecosystem.md); any NEW failure makes the exit status 1.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "data", "suites")
KNOWN = os.path.join(DATA, "known_failures.json")
PLUGIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "outcomes_plugin.py")
PASSED = "passed"
SAMPLE_EVERY = 40      # the sample: one JAX-passing test in ~40, picked by a hash of its id
TEST_TIMEOUT_S = 600   # pytest-timeout's limit for one test (a hang fails that test)


@dataclasses.dataclass(frozen=True)
class Suite:
  name: str
  version: str
  source: str                  # "wheel" (the installed package), "sdist" or "github"
  paths: tuple[str, ...]       # what pytest runs, relative to the source root
  sha256: str = ""             # of the sdist
  repo: str = ""               # GitHub owner/name


SUITES = {s.name: s for s in (
    Suite("chex", "0.1.92", "wheel", ("chex",)),
    Suite("optax", "0.2.8", "wheel", ("optax",)),
    Suite("equinox", "0.13.8", "github", ("tests",), repo="patrick-kidger/equinox"),
    Suite("flax", "0.12.12", "sdist", ("tests/linen", "tests/nnx"),
          sha256="103cc503c94219513b73027aa0e93aac408adfd3fcdfb1df85e9d147219e4896"),
)}


class SourceUnavailable(Exception):
  """A suite's test sources cannot be had here (no network, no checkout given)."""


def cache_dir() -> str:
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.environ.get("EMBER_SUITES_CACHE") or os.path.join(base, "ember", "suites")


# -- sources ------------------------------------------------------------------------------------

def check_installed(suite: Suite) -> None:
  """The tests test the installed library: it must be the version they come from."""
  try:
    installed = importlib.metadata.version(suite.name)
  except importlib.metadata.PackageNotFoundError:
    installed = None
  if installed != suite.version:
    raise SourceUnavailable(
        f"{suite.name} {installed or 'is not installed'}{' is installed' if installed else ''}; "
        f"its suite is pinned at {suite.version} (make venv installs it)")


def wheel_root(suite: Suite) -> str:
  """The site-packages folder holding the installed package."""
  spec = importlib.util.find_spec(suite.name)  # finds without importing (it would import jax)
  return os.path.dirname(list(spec.submodule_search_locations)[0])


def sdist_root(suite: Suite) -> str:
  """The sdist unpacked in the cache (downloaded once with pip, checked against its sha256)."""
  root = os.path.join(cache_dir(), f"{suite.name}-{suite.version}")
  if os.path.isdir(root):
    return root
  with tempfile.TemporaryDirectory() as tmp:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
           "--ignore-requires-python", "-d", tmp, f"{suite.name}=={suite.version}"]
    if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:
      raise SourceUnavailable(f"pip could not download the sdist of {suite.name}=={suite.version}")
    archive = os.path.join(tmp, os.listdir(tmp)[0])
    with open(archive, "rb") as f:
      if hashlib.sha256(f.read()).hexdigest() != suite.sha256:
        raise SourceUnavailable(f"{os.path.basename(archive)} does not have the pinned sha256")
    unpack(archive, root)
  return root


def github_root(suite: Suite) -> str:
  """A checkout of the release tag: --source / EMBER_SUITE_SOURCE_<NAME>, or GitHub's tarball."""
  given = os.environ.get(f"EMBER_SUITE_SOURCE_{suite.name.upper()}")
  if given:
    return given
  root = os.path.join(cache_dir(), f"{suite.name}-{suite.version}")
  if os.path.isdir(root):
    return root
  url = f"https://github.com/{suite.repo}/archive/refs/tags/v{suite.version}.tar.gz"
  try:
    data = urllib.request.urlopen(url, timeout=60).read()
  except OSError as e:
    raise SourceUnavailable(
        f"{suite.name}'s tests are only in its repository and {url} cannot be read ({e}); give "
        f"a checkout of tag v{suite.version} with --source {suite.name}=PATH") from None
  with tempfile.NamedTemporaryFile(suffix=".tar.gz") as f:
    f.write(data)
    f.flush()
    unpack(f.name, root)
  return root


def unpack(archive: str, root: str) -> None:
  """Extract a release archive's single top folder as `root` (atomically: a rename)."""
  os.makedirs(os.path.dirname(root), exist_ok=True)
  tmp = tempfile.mkdtemp(dir=os.path.dirname(root))
  with tarfile.open(archive) as tar:
    tar.extractall(tmp, filter="data")
  (top,) = os.listdir(tmp)
  os.replace(os.path.join(tmp, top), root)
  os.rmdir(tmp)


def source_root(suite: Suite) -> str:
  check_installed(suite)
  return {"wheel": wheel_root, "sdist": sdist_root, "github": github_root}[suite.source](suite)


def digest(root: str, suite: Suite) -> str:
  """sha256 over the suite's Python files (relative path and contents, in sorted order)."""
  h = hashlib.sha256()
  for path in sorted(p for top in suite.paths for p in python_files(os.path.join(root, top))):
    h.update(os.path.relpath(path, root).encode() + b"\0")
    with open(path, "rb") as f:
      h.update(f.read())
  return h.hexdigest()


def python_files(top: str):
  for folder, dirs, files in os.walk(top):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    yield from (os.path.join(folder, f) for f in files if f.endswith(".py"))


# -- running ------------------------------------------------------------------------------------

def helper_path(tmp: str, on_ember: bool) -> str:
  """A folder for PYTHONPATH: the outcomes plugin; on ember also this checkout's `ember` and a
  sitecustomize that installs the alias (in every process, xdist's workers included)."""
  os.symlink(PLUGIN, os.path.join(tmp, "ember_suite_outcomes.py"))
  if on_ember:
    os.symlink(os.path.join(REPO, "ember"), os.path.join(tmp, "ember"))
    with open(os.path.join(tmp, "sitecustomize.py"), "w") as f:
      f.write("import ember.compat\nember.compat.install()\n")
  return tmp


def run_pytest(suite: Suite, root: str, targets: list[str], on_ember: bool,
               workers: str) -> dict:
  """Run pytest over `targets` (paths or test ids under `root`); {"outcomes", "messages"}."""
  with tempfile.TemporaryDirectory() as tmp:
    out, path = os.path.join(tmp, "outcomes.json"), os.path.join(tmp, "path")
    os.mkdir(path)
    env = dict(os.environ, EMBER_SUITE_OUTCOMES=out, JAX_PLATFORMS="cpu",
               PYTHONPATH=helper_path(path, on_ember))
    cmd = [sys.executable, "-m", "pytest", "-p", "ember_suite_outcomes", "-p", "no:cacheprovider",
           "-q", "--no-header", "-rN", f"--rootdir={root}", "-n", workers, *timeout_option(),
           *wheel_ini(suite, tmp), *targets]
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)
    if not os.path.exists(out):
      raise RuntimeError(f"{suite.name}: pytest exited with {proc.returncode} and wrote no "
                         f"outcomes:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    with open(out) as f:
      return json.load(f)


def timeout_option() -> list[str]:
  """pytest-timeout's per-test limit (requirements-suites.txt), where it is installed."""
  return [f"--timeout={TEST_TIMEOUT_S}"] if importlib.util.find_spec("pytest_timeout") else []


def wheel_ini(suite: Suite, tmp: str) -> list[str]:
  """An empty pytest config for tests inside site-packages (else pytest would take the config
  of whatever project encloses the venv); sdist and repository suites keep their own."""
  if suite.source != "wheel":
    return []
  ini = os.path.join(tmp, "pytest.ini")
  with open(ini, "w") as f:
    f.write("[pytest]\n")
  return ["-c", ini]


# -- JAX's outcomes, the known failures, the comparison ---------------------------------------

def data_path(suite: Suite) -> str:
  return os.path.join(DATA, f"{suite.name}.json")


def load_jax(suite: Suite) -> dict:
  with open(data_path(suite)) as f:
    return json.load(f)


def load_known() -> dict:
  with open(KNOWN) as f:
    return json.load(f)


def sample(jax_outcomes: dict) -> list[str]:
  """The fixed sample: JAX-passing test ids whose sha1 falls in one bucket of SAMPLE_EVERY."""
  return sorted(t for t, o in jax_outcomes.items() if o == PASSED and
                int(hashlib.sha1(t.encode()).hexdigest()[:8], 16) % SAMPLE_EVERY == 0)


@dataclasses.dataclass
class Comparison:
  suite: str
  ran: int                 # tests of JAX's list that ran on ember
  jax_passed: int
  both_passed: int
  new: dict                # id -> message: passes on JAX, not on ember, not known
  known_failing: dict      # id -> reason
  known_passing: list      # listed as known failures, pass now
  ember_only: int          # pass on ember, not on JAX

  @property
  def ok(self) -> bool:
    return not self.new


def compare(suite: Suite, jax_outcomes: dict, ember: dict, known: dict) -> Comparison:
  got, messages = ember["outcomes"], ember["messages"]
  ran = [t for t in jax_outcomes if t in got or collect_error_for(t, got)]
  jax_passed = [t for t in ran if jax_outcomes[t] == PASSED]
  failing = {t: failure_message(t, got, messages) for t in jax_passed if got.get(t) != PASSED}
  return Comparison(
      suite.name, len(ran), len(jax_passed), len(jax_passed) - len(failing),
      new={t: m for t, m in failing.items() if t not in known},
      known_failing={t: known[t] for t in failing if t in known},
      known_passing=sorted(t for t in known if got.get(t) == PASSED),
      ember_only=sum(1 for t, o in got.items() if o == PASSED and jax_outcomes.get(t) != PASSED))


def failure_message(test_id: str, got: dict, messages: dict) -> str:
  """Why a test did not pass: its message (or its collection error's), else its outcome."""
  where = test_id if test_id in got else collect_error_for(test_id, got)
  return messages.get(where) or got.get(where, "not run")


def collect_error_for(test_id: str, got: dict) -> str | None:
  """The collect-error entry (a file or class) that swallowed this test, if any."""
  for prefix, outcome in got.items():
    if outcome == "collect-error" and (
        not prefix or test_id.startswith((prefix + "::", prefix + "/"))):
      return prefix
  return None


def print_comparison(c: Comparison, verbose: bool) -> None:
  print(f"{c.suite}: {c.ran} tests ran; JAX passes {c.jax_passed}, ember {c.both_passed} of "
        f"them; {len(c.known_failing)} known failures, {len(c.new)} NEW; "
        f"{c.ember_only} pass on ember only")
  for t, m in sorted(c.new.items()):
    print(f"  NEW   {t}: {m}")
  for t in c.known_passing:
    print(f"  FIXED {t} (listed in known_failures.json: remove it)")
  if verbose:
    for t, reason in sorted(c.known_failing.items()):
      print(f"  known {t}: {reason}")


def update_known(known: dict, c: Comparison) -> None:
  """Take the FIXED tests off the list and add the NEW failures as open causes; write it."""
  mine = known.setdefault(c.suite, {})
  for t in c.known_passing:
    del mine[t]
  mine.update({t: f"open: {m}" for t, m in c.new.items()})
  known[c.suite] = dict(sorted(mine.items()))
  with open(KNOWN, "w") as f:
    f.write(json.dumps(dict(sorted(known.items())), indent=1) + "\n")


# -- the command --------------------------------------------------------------------------------

def targets_for(suite: Suite, args, jax_data: dict | None) -> list[str]:
  if args.sample:
    return sample(jax_data["outcomes"])
  if args.ids:
    with open(args.ids) as f:
      wanted = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    return [t for t in wanted if t.split("::")[0].startswith(suite.paths)]
  return list(suite.paths)


def record(suite: Suite, root: str, args) -> None:
  """Run the suite on the real JAX and store every test's outcome."""
  import jax  # the real one: --record runs in a JAX venv
  res = run_pytest(suite, root, list(suite.paths), on_ember=False, workers=args.workers)
  data = {"suite": suite.name, "version": suite.version, "digest": digest(root, suite),
          "recorded_with": {"jax": jax.__version__, "python": sys.version.split()[0]},
          "outcomes": dict(sorted(res["outcomes"].items()))}
  os.makedirs(DATA, exist_ok=True)
  with open(data_path(suite), "w") as f:
    f.write(json.dumps(data, indent=0) + "\n")
  counts = {o: list(data["outcomes"].values()).count(o) for o in set(data["outcomes"].values())}
  print(f"{suite.name}: recorded {len(data['outcomes'])} outcomes {counts}")


def check(suite: Suite, root: str, args, known: dict) -> Comparison:
  """Run (part of) the suite on ember and compare with JAX's outcomes."""
  jax_data = load_jax(suite)
  if digest(root, suite) != jax_data["digest"]:
    raise SourceUnavailable(f"{suite.name}'s tests at {root} are not those JAX's outcomes were "
                            f"recorded from (version {jax_data['version']})")
  start, targets = time.monotonic(), targets_for(suite, args, jax_data)
  res = (run_pytest(suite, root, targets, on_ember=True, workers=args.workers) if targets
         else {"outcomes": {}, "messages": {}})  # no targets: pytest would collect all of root
  if args.out:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{suite.name}.json"), "w") as f:
      json.dump(res, f, indent=0, sort_keys=True)
  c = compare(suite, jax_data["outcomes"], res, known.get(suite.name, {}))
  print_comparison(c, args.verbose)
  print(f"  ({time.monotonic() - start:.0f} s)")
  return c


def parse(argv):
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("suites", nargs="*", metavar="SUITE",
                 help=f"suites to run, of {', '.join(SUITES)} (default: all)")
  p.add_argument("--sample", action="store_true", help="only the fixed sample (what CI runs)")
  p.add_argument("--ids", help="a file of test ids (one per line) to run")
  p.add_argument("--record", action="store_true",
                 help="run on the real JAX (from a JAX venv) and store its outcomes")
  p.add_argument("--source", action="append", default=[], metavar="NAME=PATH",
                 help="a checkout of a suite's repository at its pinned tag")
  p.add_argument("-n", dest="workers", default="auto", help="pytest-xdist workers")
  p.add_argument("--out", help="write ember's outcomes here, one JSON per suite")
  p.add_argument("--skip-unavailable", action="store_true",
                 help="a suite whose sources cannot be had is skipped (said) instead of failing")
  p.add_argument("--update-known", action="store_true",
                 help="list this run's NEW failures in known_failures.json (as open, with their "
                      "message) and take off the FIXED ones")
  p.add_argument("-v", "--verbose", action="store_true", help="also list the known failures")
  return p.parse_args(argv)


def main(argv=None) -> int:
  args = parse(argv)
  unknown = set(args.suites) - set(SUITES)
  if unknown:
    sys.exit(f"unknown suite(s) {sorted(unknown)}: choose from {', '.join(SUITES)}")
  for spec in args.source:
    name, _, path = spec.partition("=")
    os.environ[f"EMBER_SUITE_SOURCE_{name.upper()}"] = os.path.abspath(path)
  known = {} if args.record else load_known()
  failed = False
  for suite in (SUITES[n] for n in args.suites or SUITES):
    try:
      root = source_root(suite)
      if args.record:
        record(suite, root, args)
      else:
        c = check(suite, root, args, known)
        failed |= not c.ok
        if args.update_known:
          update_known(known, c)
    except SourceUnavailable as e:
      print(f"{suite.name}: {'skipped' if args.skip_unavailable else 'FAILED'}: {e}")
      failed |= not args.skip_unavailable
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
