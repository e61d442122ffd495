"""The differential fuzzer (tests/fuzz, docs/fuzzing.md) on a fixed set of seeds, and
tests of the fuzzer itself: its comparison, its detection of a wrong result, its minimizer,
and its printed programs. Long campaigns: `python -m tests.fuzz --count N`."""
import contextlib
import io

import numpy as np
import pytest

from tests.fuzz import known, minimize, runner
from tests.fuzz.compare import mismatch
from tests.fuzz.generator import generate
from tests.fuzz.program import Program, Stmt, repro_source

# 48 programs (every 4th with x64), up to 8 statements each: ~0.6 s per program on one core
SEEDS = list(range(48))


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzz_seed(seed):
  prog = generate(seed, x64=seed % 4 == 3)
  outcome = runner.check_program(prog)
  if outcome.failures:
    fl = outcome.failures[0]
    small = minimize.minimize(prog, minimize.still_fails(fl.check), max_steps=60)
    pytest.fail(f"seed {seed}: {'; '.join(map(str, outcome.failures))}\n"
                f"smallest failing program:\n{runner.repro(small, fl)}")


def test_generate_is_deterministic():
  a, b = generate(7, max_ops=10), generate(7, max_ops=10)
  assert a.function_source() == b.function_source()
  assert all(np.array_equal(u, v, equal_nan=True) for u, v in zip(a.values(), b.values()))


def test_programs_cover_the_surface():
  tags = set().union(*(generate(s, max_ops=10).tags for s in range(150)))
  for family in ("einsum", "dot", "gather", "scatter", "reduce", "cond", "fori_loop",
                 "while_loop", "scan", "cast", "weak", "concatenate", "transpose"):
    assert family in tags, family


def test_mismatch_tolerances():
  f32 = np.array([1.0, 2.0], np.float32)
  assert mismatch(f32, f32 * (1 + 1e-6)) is None
  assert "at (1,)" in mismatch(f32, np.array([1.0, 2.1], np.float32))
  assert "dtype" in mismatch(f32, f32.astype(np.float64))
  assert "shape" in mismatch(f32, f32[:1])
  assert mismatch(np.array([np.nan, np.inf]), np.array([np.nan, np.inf])) is None
  assert mismatch(np.array([np.nan]), np.array([0.0])) is not None
  assert mismatch(np.array([np.inf]), np.array([-np.inf])) is not None
  assert mismatch(np.array([3], np.int32), np.array([4], np.int32)) is not None
  f16 = np.array([1000.0], np.float16)
  assert mismatch(f16, f16 + np.float16(8)) is None          # within float16's tolerance
  assert mismatch(np.array([1 + 1j], np.complex64), np.array([1 + 1.1j], np.complex64))
  # a float32 result computed through bfloat16 gets bfloat16's tolerance
  ref, got = np.float32(-3.125), np.float32(-3.109375)
  assert mismatch(ref, got) is not None
  assert mismatch(ref, got, through=frozenset({"float32", "bfloat16"})) is None


def _sin_program() -> Program:
  x0 = np.array([0.5, -1.25, 2.0], np.float32)
  stmts = [Stmt("v0", "{0} * 2", ("x0",)), Stmt("v1", "{0} + {1}", ("v0", "x1")),
           Stmt("v2", "jnp.sin({0})", ("v1",)), Stmt("v3", "jnp.sum({0} * {0})", ("v2",))]
  return Program([("x0", x0), ("x1", np.array(0.25, np.float32))], stmts, "v3")


@contextlib.contextmanager
def _wrong_eager_sin():
  """Eager sin off by 0.5 (the compiled code keeps the right one): its reference, with
  eager primitives on their references (eager sin otherwise runs compiled code)."""
  from ember._src.core import trace as trace_lib
  from ember._src.primitives import elementwise as ew
  impl, hook = ew.sin_p.impl, trace_lib.eager_hook[0]
  ew.sin_p.impl = lambda x, **kw: impl(x, **kw) + np.asarray(0.5, x.dtype)
  trace_lib.eager_hook[0] = None
  try:
    yield
  finally:
    ew.sin_p.impl, trace_lib.eager_hook[0] = impl, hook


def test_a_wrong_result_is_caught_and_minimized():
  prog = _sin_program()
  assert not runner.check_program(prog).failures
  with _wrong_eager_sin():
    outcome = runner.check_program(prog, checks=["jit_opt", "jit_grad"])
    assert {f.check for f in outcome.failures} == {"jit_opt", "jit_grad"}
    small = minimize.minimize(prog, minimize.still_fails("jit_opt"))
  assert [s.template for s in small.stmts] == ["jnp.sin({0})"]
  assert small.used().stmts == small.stmts


def test_eager_alone_catches_a_reference_one_ulp_off(monkeypatch):
  """An exact primitive's reference (run while its signature rents) one ulp off jit's bits,
  and an eager sum computing NumPy's pairwise sum: both reported, each with its equation."""
  from ember._src.driver import eager
  from ember._src.primitives import elementwise as ew
  # every signature starts renting (an earlier test in this process may have bought add's,
  # whose eager calls then run jit's code)
  monkeypatch.setattr(eager, "_signatures", {})
  prog = _sin_program()
  assert not runner.run_checks(prog, ["eager_alone"])
  impl = ew.add_p.impl
  monkeypatch.setattr(ew.add_p, "impl", lambda x, y, **kw: np.nextafter(
      impl(x, y, **kw), np.asarray(np.inf, np.result_type(x, y))))
  found = [fl.message for fl in runner.run_checks(prog, ["eager_alone"])]
  # (a renting signature's eager call is its reference: both are off)
  assert sorted(m.split(": ")[0] for m in found) == [
      "equation 1 `add`(float32[3], float32[]) result 0", "equation 1 `add`(float32[3], "
      "float32[]) result 0"], found
  assert any("reference vs jit" in m for m in found)
  monkeypatch.setattr(ew.add_p, "impl", impl)
  from ember._src.core import trace as trace_lib
  monkeypatch.setattr(trace_lib, "eager_hook", [None])     # every primitive on its reference
  x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)
  (fl,) = runner.run_checks(Program([("x0", x)], [Stmt("v0", "jnp.sum({0})", ("x0",))], "v0"),
                            ["eager_alone"])
  assert "`reduce_sum`(float32[1000]) result 0: eager vs jit" in fl.message, fl.message


def test_repro_source_runs_and_prints_both_modes():
  prog = _sin_program()
  text = repro_source(prog, ("eager", "jit", "grad", "jit_vmap_grad"))
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    exec(text, {})   # noqa: S102
  starts = [line.split()[0] for line in out.getvalue().splitlines() if line[:1].isalpha()]
  assert starts == ["eager", "jit", "grad", "jit_vmap_grad"]
  assert "import jax\n" in repro_source(prog, ("eager",), library="jax")


def test_errors_are_failures_unless_both_raise():
  ok, err = ("ok", np.ones(2, np.float32)), ("error", "TypeError: boom")
  assert runner._compare("jit", ok, ok, False, ref_name="eager", got_name="jit") == []
  assert runner._compare("jit", err, err, False, ref_name="eager", got_name="jit") == []
  (fl,) = runner._compare("jit", ok, err, False, ref_name="eager", got_name="jit")
  assert fl.kind == "error" and "boom" in fl.message
  (fl,) = runner._compare("jax", err, ok, False, ref_name="JAX", got_name="ember")
  assert fl.kind == "reference error"


def test_while_loop_programs_skip_grad_checks():
  prog = Program([("x0", np.ones(3, np.float32))],
                 [Stmt("v0", "lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, "
                       "c[1] * 2), (0, {0}))[1]", ("x0",), frozenset({"while_loop"}))], "v0")
  assert not prog.differentiable()      # JAX cannot reverse-differentiate a while_loop
  assert not set(runner.applicable_checks(prog)) & runner.GRAD_CHECKS
  assert runner.check_program(prog).failures == []


@pytest.mark.parametrize("issue", [pytest.param(i, id=i.name, marks=pytest.mark.xfail(
    reason=i.reason, strict=False)) for i in known.ISSUES if not i.jax_limit])
def test_known_issue_repro(issue):
  """Each known issue's repro asserts JAX's result: it fails while the issue is open; an
  XPASS means its fix landed: remove the entry from tests/fuzz/known.py."""
  exec(issue.repro, {"__name__": "repro"})   # noqa: S102
