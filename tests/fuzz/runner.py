"""Running a program in every mode and comparing the results.

References (computed eagerly by ember, op by op with each primitive's NumPy code):
  eager       f(*args)
  grad        jax.grad(loss)(*args)             loss = sum(real(f)) as float32
  loop        f on each of vmap's two examples, stacked
  loop_grad   grad(loss) on each example, stacked
Checks, each `mode` against its reference:
  jit, jit_opt (tiering off: optimized code only), jit_quick (opt_level 0, the quick tier,
  via jax_disable_most_optimizations), jit_checked (ember_check_compiled: the compiled
  module against the HLO reference evaluator), hlo_eval (the unoptimized lowered module in
  the HLO evaluator), interpreter (ember_jit_backend="interpreter") against eager;
  jit_grad, jit_grad_quick against grad; vmap, jit_vmap against loop; jit_vmap_grad against
  loop_grad; and with real JAX: jax, jax_grad, jax_vmap, jax_vmap_grad (JAX's value is then
  the reference, ember's eager value the one checked).
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import struct
import subprocess
import sys
import warnings
from typing import Callable, Sequence

import numpy as np

from tests.fuzz import eager_alone, known
from tests.fuzz.compare import mismatch
from tests.fuzz.program import Program

CHECKS = {   # check -> (reference, loose tolerance)
    "jit": ("eager", False), "jit_opt": ("eager", False), "jit_quick": ("eager", False),
    "jit_checked": ("eager", False), "hlo_eval": ("eager", False),
    "interpreter": ("eager", False),
    "eager_alone": (None, False),     # each primitive alone: eager bits == jit bits
    "jit_grad": ("grad", True), "jit_grad_quick": ("grad", True), "jit_jvp": ("jvp", True),
    "vmap": ("loop", False), "jit_vmap": ("loop", False),
    "jit_vmap_grad": ("loop_grad", True),
    "jax": ("eager", True), "jax_grad": ("grad", True), "jax_jvp": ("jvp", True), "jax_vmap": ("loop", True),
    "jax_vmap_grad": ("loop_grad", True),
}
GRAD_CHECKS = {"jit_grad", "jit_grad_quick", "jit_vmap_grad", "jax_grad", "jax_vmap_grad"}
JVP_CHECKS = {"jit_jvp", "jax_jvp"}   # forward mode: while_loop too
JAX_CHECKS = {"jax": "eager", "jax_grad": "grad", "jax_jvp": "jvp", "jax_vmap": "loop",
              "jax_vmap_grad": "loop_grad"}
# the ember-side mode whose repro shows a check's failure (repro scripts print both)
REPRO_MODES = {"jit": ("eager", "jit"), "jit_opt": ("eager", "jit"),
               "jit_quick": ("eager", "jit"), "jit_checked": ("eager", "jit"),
               "hlo_eval": ("eager", "jit"), "interpreter": ("eager", "jit"),
               "eager_alone": ("eager", "jit"),
               "jit_grad": ("grad", "jit_grad"), "jit_grad_quick": ("grad", "jit_grad"),
               "jit_jvp": ("jvp", "jit_jvp"), "jax_jvp": ("jvp",),
               "vmap": ("eager", "vmap"), "jit_vmap": ("eager", "jit_vmap"),
               "jit_vmap_grad": ("vmap_grad", "jit_vmap_grad"), "jax": ("eager",),
               "jax_grad": ("grad",), "jax_vmap": ("vmap",), "jax_vmap_grad": ("vmap_grad",)}
REPRO_SETUP = {
    "jit_opt": "from ember._src.base import flags; flags.override(tiered_compilation=False).__enter__()",
    "jit_checked": "from ember._src.base import flags; flags.override(tiered_compilation=False).__enter__()\n"
                   'jax.config.update("ember_check_compiled", True)',
    "jit_quick": 'jax.config.update("jax_disable_most_optimizations", True)',
    "jit_grad_quick": 'jax.config.update("jax_disable_most_optimizations", True)',
    "interpreter": 'jax.config.update("ember_jit_backend", "interpreter")',
}


@dataclasses.dataclass
class Failure:
  check: str        # a CHECKS key
  kind: str         # "mismatch", "error" (the mode raised), "reference error"
  message: str

  def __str__(self):
    return f"{self.check}: {self.kind}: {self.message}"


@dataclasses.dataclass
class Outcome:
  program: Program
  failures: list[Failure]               # not explained by known.py
  known: list[tuple[Failure, str]]      # (failure, known issue name)
  checks: list[str]                     # the checks that ran


def _namespace() -> dict:
  import ember
  import ember.numpy as jnp
  from ember import lax
  return {"jax": ember, "jnp": jnp, "lax": lax, "np": np}


def functions(prog: Program):
  """The program's `f` and `loss` under ember."""
  ns = _namespace()
  exec(prog.function_source(), ns)   # noqa: S102 -- our own generated program
  return ns["f"], ns["loss"]


@contextlib.contextmanager
def _settings(*, tiered=True, quick=False, checked=False, interpreter=False):
  from ember._src.base import flags
  from ember._src.base.config import config
  with contextlib.ExitStack() as stack:
    if not tiered:
      stack.enter_context(flags.override(tiered_compilation=False))
    if quick:
      stack.enter_context(config._override("jax_disable_most_optimizations", True))
    if checked:
      stack.enter_context(config._override("ember_check_compiled", True))
    if interpreter:
      stack.enter_context(config._override("ember_jit_backend", "interpreter"))
    yield


def _hlo_eval(f, args):
  import ember
  from ember._src.hlo import evaluator as hlo_eval
  lowered = ember.jit(f).lower(*args)
  (out,) = hlo_eval.evaluate(lowered._module, [*lowered._staged.consts, *args])
  return out


def _modes(prog: Program, f, loss) -> dict[str, Callable[[], object]]:
  import ember as jax
  import ember.numpy as jnp
  args = [jnp.asarray(v) for v in prog.values()]   # (`.at` needs an Array)
  xb = jnp.asarray(prog.batched())
  axes = (0,) + (None,) * (len(args) - 1)
  rest = args[1:]

  def loop(fn):
    return lambda: np.stack([np.asarray(fn(xb[i], *rest)) for i in range(xb.shape[0])])

  def under(settings, fn):
    def run():
      with _settings(**settings):
        return fn()
    return run

  jit_f = lambda: jax.jit(f)(*args)                      # noqa: E731
  # forward mode: the tangent of loss along x0's second example (vmap's batch[1])
  jvp = lambda x0, t: jax.jvp(lambda x: loss(x, *rest), (x0,), (t,))[1]   # noqa: E731
  return {
      "eager": lambda: f(*args),
      "grad": lambda: jax.grad(loss)(*args),
      "loop": loop(f),
      "loop_grad": loop(jax.grad(loss)),
      "jit": jit_f,
      "jit_opt": under({"tiered": False}, jit_f),
      "jit_quick": under({"quick": True}, jit_f),
      "jit_checked": under({"tiered": False, "checked": True}, jit_f),
      "hlo_eval": lambda: _hlo_eval(f, args),
      "interpreter": under({"interpreter": True}, jit_f),
      "jit_grad": lambda: jax.jit(jax.grad(loss))(*args),
      "jvp": lambda: jvp(args[0], xb[1]),
      "jit_jvp": lambda: jax.jit(jvp)(args[0], xb[1]),
      "jit_grad_quick": under({"quick": True}, lambda: jax.jit(jax.grad(loss))(*args)),
      "vmap": lambda: jax.vmap(f, in_axes=axes)(xb, *rest),
      "jit_vmap": lambda: jax.jit(jax.vmap(f, in_axes=axes))(xb, *rest),
      "jit_vmap_grad": lambda: jax.jit(jax.vmap(jax.grad(loss), in_axes=axes))(xb, *rest),
  }


def _error_text(e: BaseException) -> str:
  first = str(e).strip().splitlines()[0] if str(e).strip() else ""
  return f"{type(e).__name__}: {first[:300]}"


def applicable_checks(prog: Program, jax_worker=None) -> list[str]:
  checks = [c for c in CHECKS if not c.startswith("jax")]
  if jax_worker is not None:
    checks += list(JAX_CHECKS)
  if not prog.differentiable():
    checks = [c for c in checks if c not in GRAD_CHECKS]
  if not prog.differentiable(forward=True):
    checks = [c for c in checks if c not in JVP_CHECKS]
  return checks


def run_checks(prog: Program, checks: Sequence[str], jax_worker=None) -> list[Failure]:
  """Run `checks` (CHECKS keys) on `prog`; every failure, known or not."""
  from ember._src.base.config import config
  with config._override("jax_enable_x64", prog.x64), warnings.catch_warnings():
    warnings.simplefilter("ignore")
    f, loss = functions(prog)
    modes = _modes(prog, f, loss)
    results: dict[str, tuple[str, object]] = {}

    def get(mode):
      if mode not in results:
        try:
          results[mode] = ("ok", np.asarray(modes[mode]()))
        except Exception as e:  # noqa: BLE001 -- every error is a finding
          results[mode] = ("error", _error_text(e))
      return results[mode]

    jax_results = {}
    wanted = sorted({JAX_CHECKS[c] for c in checks if c in JAX_CHECKS})
    if wanted and jax_worker is not None:
      jax_results = jax_worker.run(prog, wanted)
    failures = []
    through = frozenset(prog.dtypes())
    for check in checks:
      ref_mode, loose = CHECKS[check]
      if check == "eager_alone":
        failures += _eager_alone(f, prog)
      elif check in JAX_CHECKS:
        ref = jax_results.get(ref_mode, ("error", "JAX worker gave no result"))
        got = get(ref_mode)
        failures += _compare(check, ref, got, loose, ref_name="JAX", got_name="ember",
                             through=through)
      else:
        failures += _compare(check, get(ref_mode), get(check), loose, ref_name=ref_mode,
                             got_name=check, through=through)
    return failures


def _eager_alone(f, prog: Program) -> list[Failure]:
  import ember.numpy as jnp
  try:
    found = eager_alone.failures(f, [jnp.asarray(v) for v in prog.values()])
  except Exception as e:  # noqa: BLE001 -- every error is a finding
    return [Failure("eager_alone", "error", _error_text(e))]
  return [Failure("eager_alone", "mismatch", m) for m in found]


def _compare(check, ref, got, loose, *, ref_name, got_name, through=frozenset()
             ) -> list[Failure]:
  if ref[0] == "error" and got[0] == "error":
    return []
  if ref[0] == "error":
    return [Failure(check, "reference error", f"{ref_name} raised {ref[1]}; {got_name} did not")]
  if got[0] == "error":
    return [Failure(check, "error", f"{got_name} raised {got[1]}")]
  msg = mismatch(ref[1], got[1], loose=loose, through=through)
  return [Failure(check, "mismatch", f"{got_name} vs {ref_name}: {msg}")] if msg else []


def check_program(prog: Program, jax_worker=None, checks: Sequence[str] | None = None) -> Outcome:
  checks = list(checks) if checks is not None else applicable_checks(prog, jax_worker)
  all_failures = run_checks(prog, checks, jax_worker)
  failures, known_hits = [], []
  for fl in all_failures:
    issue = known.match(prog, fl)
    if issue is None:
      failures.append(fl)
    else:
      known_hits.append((fl, issue.name))
  return Outcome(prog, failures, known_hits, checks)


# --- real JAX in a subprocess --------------------------------------------------------------
DEFAULT_JAX_PYTHON = "/work/jaxvenv/bin/python"


def jax_python() -> str | None:
  """The Python that has JAX: $EMBER_FUZZ_JAX_PYTHON, else /work/jaxvenv when present."""
  path = os.environ.get("EMBER_FUZZ_JAX_PYTHON") or DEFAULT_JAX_PYTHON
  return path if os.path.exists(path) else None


class JaxWorker:
  """A long-lived JAX process (jax_worker.py) answering one program at a time."""

  def __init__(self, python: str | None = None):
    python = python or jax_python()
    if python is None:
      raise RuntimeError("no Python with JAX: set EMBER_FUZZ_JAX_PYTHON")
    script = os.path.join(os.path.dirname(__file__), "jax_worker.py")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env.pop("PYTHONPATH", None)
    self.proc = subprocess.Popen([python, script], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, env=env)
    hello = self._read()
    if hello is None:
      raise RuntimeError(f"the JAX worker ({python}) did not start")
    self.version = hello["jax"]

  def _read(self):
    head = self.proc.stdout.read(8)
    if len(head) < 8:
      return None
    (n,) = struct.unpack("<Q", head)
    return pickle.loads(self.proc.stdout.read(n))

  def run(self, prog: Program, modes: Sequence[str]) -> dict:
    req = {"source": prog.function_source(), "inputs": prog.values(),
           "batch": prog.batched(), "x64": prog.x64, "modes": list(modes)}
    data = pickle.dumps(req, protocol=4)
    self.proc.stdin.write(struct.pack("<Q", len(data)) + data)
    self.proc.stdin.flush()
    out = self._read()
    if out is None:
      raise RuntimeError("the JAX worker died")
    if "__error__" in out:
      return {m: ("error", out["__error__"]) for m in modes}
    return out

  def close(self):
    with contextlib.suppress(Exception):
      self.proc.stdin.close()
      self.proc.wait(timeout=10)


def repro(prog: Program, failure: Failure) -> str:
  """A runnable script showing `failure` (for JAX checks: ember's script, and the same
  program for JAX is `program.repro_source(..., library="jax")`)."""
  from tests.fuzz.program import repro_source
  return repro_source(prog, REPRO_MODES[failure.check], REPRO_SETUP.get(failure.check, ""))
