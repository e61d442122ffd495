"""Mismatches that are known and being fixed elsewhere (issue 15): the fuzzer reports a
failure that an entry here `applies` to as known, not as a new finding, and the minimizer
never drifts into one. Each entry has the exact repro (a script asserting JAX 0.12's
result: it raises while the bug is there) and the reason. tests/test_fuzz.py runs every
repro as a non-strict xfail: an XPASS means the fix landed and the entry should go.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

_HEAD = "import numpy as np\nimport ember as jax\nimport ember.numpy as jnp\nfrom ember import lax\n"

COMPILED = {"jit", "jit_opt", "jit_quick", "jit_checked", "jit_grad", "jit_grad_quick",
            "jit_jvp", "jit_vmap", "jit_vmap_grad"}
GRADS = {"jit_grad", "jit_grad_quick", "jit_vmap_grad", "jax_grad", "jax_vmap_grad"}
JVPS = {"jit_jvp", "jax_jvp"}


@dataclasses.dataclass(frozen=True)
class KnownIssue:
  name: str
  reason: str
  repro: str                                  # a runnable script (ember); raises while open
  applies: Callable[[object, object], bool]   # (Program, runner.Failure) -> bool
  jax_limit: bool = False   # JAX's own limit, ember's behaviour kept: `repro` is for JAX


def _tags(*names):
  return lambda prog: bool(prog.tags & set(names))


ISSUES: list[KnownIssue] = [
    KnownIssue(
        "dot_no_contract_transposed",
        "a dot without contracting dims whose output is transposed (einsum('ab,dc->cd'), "
        "transposed outer products) comes out untransposed under jit: fusion's "
        "transpose(dot) operand swap (fix on h-fixa)",
        _HEAD + "p = np.arange(6, dtype=np.float32).reshape(2, 3)\n"
        "q = np.arange(20, dtype=np.float32).reshape(4, 5)\n"
        "f = lambda p, q: jnp.einsum('ab,dc->cd', p, q)\n"
        "np.testing.assert_allclose(jax.jit(f)(p, q), np.einsum('ab,dc->cd', p, q))\n",
        lambda prog, fl: fl.check in COMPILED and _tags("no_contract", "transposed_out",
                                                       "outer")(prog)),
    KnownIssue(
        "scalar_dot_fused_with_consumer",
        "a dot with a scalar operand (einsum('a,->a')) fused with a consumer of another "
        "dtype fails to compile (TypeError in block_units) (fix on h-fixa)",
        _HEAD + "a = np.array([1.0, 0.5, -0.5, 0.25], np.float32)\n"
        "f = jax.jit(lambda a, s: jnp.einsum('a,->a', a, s) == 0.5)\n"
        "np.testing.assert_array_equal(f(a, np.float32(1)), [False, True, False, False])\n",
        lambda prog, fl: fl.check in COMPILED and _tags("scalar_operand", "dot")(prog)),
    KnownIssue(
        "concatenate_empty_operands",
        "jitted concatenate whose operands are all empty along the axis raises IndexError "
        "in codegen's _concatenate (fix on h-fixa)",
        _HEAD + "x = np.zeros((0,), np.float32)\n"
        "f = jax.jit(lambda x: jnp.concatenate([x, jnp.log(jnp.abs(x) + .5)]))\n"
        "assert f(x).shape == (0,)\n",
        lambda prog, fl: fl.check in COMPILED and _tags("empty")(prog)),
    KnownIssue(
        "scatter_max_min_grad_nan",
        "grad and jvp of .at[].max/.min at NaN: an untouched NaN element gets a NaN "
        "cotangent (JAX: 1) (fix on h-fixb)",
        _HEAD + "x = jnp.array([np.nan, 1., 2.])\n"
        "g = jax.grad(lambda x: jnp.sum(x.at[jnp.array([1])].max(jnp.array([0.5]))))(x)\n"
        "np.testing.assert_array_equal(g, [1., 1., 1.])\n",
        lambda prog, fl: fl.check in GRADS | JVPS and _tags("scatter_max", "scatter_min")(prog)),
    KnownIssue(
        "cummax_grad_ties",
        "grad (and jvp) of lax.cummax/cummin at ties picks another tied element than JAX "
        "(JAX: grad [1, 2, 1, 0] for cummax([1, 3, 3, 2]))",
        _HEAD + "x = jnp.array([1., 3., 3., 2.])\n"
        "g = jax.grad(lambda x: jnp.sum(lax.cummax(x, axis=0)))(x)\n"
        "np.testing.assert_array_equal(g, [1., 2., 1., 0.])\n",
        lambda prog, fl: fl.check in GRADS | JVPS and _tags("cummax", "cummin")(prog)),
    KnownIssue(
        "complex_special_values",
        "complex functions at infinities and NaNs (and complex division by zero) differ "
        "between eager (NumPy's C99 special values), compiled code and JAX",
        _HEAD + "x = jnp.array([complex(np.inf, 0)], jnp.complex64)\n"
        "np.testing.assert_array_equal(jax.jit(jnp.exp)(x), jnp.exp(x))\n",
        lambda prog, fl: (fl.check in COMPILED or fl.check.startswith("jax"))
        and "complex" in fl.message and ("nan" in fl.message or "inf" in fl.message)),
    # --- JAX's own limits: ember does more, on purpose; not bugs to fix ---
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
