"""Mismatches that are known and being fixed elsewhere (issue 15): the fuzzer reports a
failure that an entry here `applies` to as known, not as a new finding, and the minimizer
never drifts into one. Each entry has the exact repro (a script asserting JAX 0.12's
result: it raises while the bug is there) and the reason. tests/test_fuzz.py runs every
repro as a non-strict xfail: an XPASS means the fix landed and the entry should go.
The issue 15 entries (dot transposes, scalar dots, empty concatenates, scatter and cumulative
max/min gradients, complex special values) went when their fixes landed; what is left are
JAX's own limits.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

@dataclasses.dataclass(frozen=True)
class KnownIssue:
  name: str
  reason: str
  repro: str                                  # a runnable script (ember); raises while open
  applies: Callable[[object, object], bool]   # (Program, runner.Failure) -> bool
  jax_limit: bool = False   # JAX's own limit, ember's behaviour kept: `repro` is for JAX


ISSUES: list[KnownIssue] = [
    KnownIssue(
        "jax_no_grad_of_complex_max",
        "JAX 0.12 raises TypeError on grad through jnp.maximum/minimum/sort of complex values "
        "(its jvp compares with lax.gt, which rejects complex); ember differentiates them",
        "import jax, jax.numpy as jnp\n"
        "jax.grad(lambda x: jnp.real(jnp.maximum(x * 1j, 0j)).sum())(jnp.ones(2))  # raises\n",
        lambda prog, fl: fl.check.startswith("jax") and fl.kind == "reference error"
        and "complex" in fl.message and "does not accept dtype" in fl.message,
        jax_limit=True),
    KnownIssue(
        "signed_zero_of_a_sum",
        "the sign of a float sum of zeros is unspecified: XLA gives -0 for sum([-0.]) and for "
        "jit(sum(-x * 1.0)) but +0 for sum([-0., -0., -0.]) (ember: +0, reduce's init); a "
        "division by it then gives infinities of opposite signs",
        "import jax, jax.numpy as jnp, numpy as np\n"
        "x = -np.zeros(3, np.float32)\n"
        "print(1 / jnp.sum(x[:1]), 1 / jnp.sum(x), 1 / jax.jit(lambda x: jnp.sum(-x * 1.0))(-x))"
        "  # -inf inf -inf\n",
        lambda prog, fl: fl.check.startswith("jax") and fl.kind == "mismatch"
        and "reduce" in prog.tags and "arith" in prog.tags
        and ("(inf) != reference np.float" in fl.message and "(-inf)" in fl.message
             or "(-inf) != reference np.float" in fl.message and "(inf)" in fl.message),
        jax_limit=True),
    KnownIssue(
        "xla_select_for_bool_times_inf",
        "under jit XLA rewrites x * convert(bool) as select(bool, x, 0): inf * False gives 0 "
        "(JAX eager and ember: NaN, as IEEE); the fuzzer runs JAX jitted",
        "import jax, jax.numpy as jnp, numpy as np\n"
        "f = lambda b, x: x * jnp.asarray(b, jnp.float32)\n"
        "b, x = jnp.array([False, True]), jnp.float32(np.inf)\n"
        "print(f(b, x), jax.jit(f)(b, x))  # [nan inf] [0. inf]\n",
        lambda prog, fl: fl.check.startswith("jax") and fl.kind == "mismatch"
        and "cast" in prog.tags and "bool" in prog.dtypes() and "(nan)" in fl.message,
        jax_limit=True),
]


def match(prog, failure) -> KnownIssue | None:
  for issue in ISSUES:
    if issue.applies(prog, failure):
      return issue
  return None
