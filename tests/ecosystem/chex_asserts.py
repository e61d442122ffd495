"""chex: shape/rank/type/tree assertions (each must pass on good input and raise
AssertionError on bad input), assert_max_traces under jit, and a chex.dataclass through
tree_map, jit and grad. Run: `python -m ember tests/ecosystem/chex_asserts.py`.
"""
import os
import sys

import chex
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

x = jnp.arange(6, dtype=jnp.float32).reshape(2, 3)
tree = {"a": x, "b": (jnp.ones(3), jnp.int32(4))}
close = jax.tree_util.tree_map(lambda v: v + 1e-7 if v.dtype == jnp.float32 else v, tree)
far = jax.tree_util.tree_map(lambda v: v + 1.0, tree)


def outcome(check):
  """'ok', 'AssertionError' (what chex raises on bad input), or the unexpected error."""
  try:
    check()
    return "ok"
  except AssertionError:
    return "AssertionError"
  except Exception as e:  # noqa: BLE001 (the test shows it)
    return f"error: {type(e).__name__}: {e}"


CHECKS = {
    "assert_shape": lambda: chex.assert_shape(x, (2, 3)),
    "assert_shape_bad": lambda: chex.assert_shape(x, (3, 2)),
    "assert_shape_wildcard": lambda: chex.assert_shape([x, x], (2, None)),
    "assert_rank": lambda: chex.assert_rank(x, 2),
    "assert_rank_bad": lambda: chex.assert_rank(x, 1),
    "assert_type": lambda: chex.assert_type(x, jnp.float32),
    "assert_type_bad": lambda: chex.assert_type(x, jnp.int32),
    "assert_type_int": lambda: chex.assert_type(tree["b"][1], int),
    "assert_equal_shape": lambda: chex.assert_equal_shape([x, x * 2]),
    "assert_equal_shape_bad": lambda: chex.assert_equal_shape([x, x.T]),
    "assert_axis_dimension": lambda: chex.assert_axis_dimension(x, 1, 3),
    "assert_scalar_positive": lambda: chex.assert_scalar_positive(2.0),
    "assert_trees_all_close": lambda: chex.assert_trees_all_close(tree, close, rtol=1e-5,
                                                                  atol=1e-6),
    "assert_trees_all_close_bad": lambda: chex.assert_trees_all_close(tree, far),
    "assert_trees_all_equal": lambda: chex.assert_trees_all_equal(tree, tree),
    "assert_trees_all_equal_shapes": lambda: chex.assert_trees_all_equal_shapes(tree, far),
    "assert_trees_all_equal_dtypes": lambda: chex.assert_trees_all_equal_dtypes(tree, close),
    "assert_trees_all_equal_dtypes_bad": lambda: chex.assert_trees_all_equal_dtypes(tree, far),
    "assert_tree_all_finite": lambda: chex.assert_tree_all_finite(tree),
    "assert_tree_all_finite_bad": lambda: chex.assert_tree_all_finite(
        {"x": jnp.array([1.0, jnp.nan])}),
    "assert_tree_shape_prefix": lambda: chex.assert_tree_shape_prefix({"x": x}, (2,)),
}


@jax.jit
@chex.assert_max_traces(n=1)
def traced_once(v):
  return v * 2


def call_twice_then_new_shape():
  traced_once(jnp.ones(3))
  traced_once(jnp.zeros(3))  # same shape: cached, no retrace
  traced_once(jnp.ones(4))  # a second trace: chex raises


@chex.dataclass
class State:
  w: chex.Array
  b: chex.Array
  scale: float = 1.5


state = State(w=jnp.ones((2, 2)), b=jnp.zeros(2))
doubled = jax.tree_util.tree_map(lambda v: v * 2, state)


@jax.jit
def energy(s):
  return jnp.sum(s.w ** 2) * s.scale + jnp.sum(s.b) * 3.0


grad_state = jax.grad(energy)(state.replace(b=jnp.arange(2.0)))
results = {name: outcome(check) for name, check in CHECKS.items()}
results["assert_max_traces"] = outcome(call_twice_then_new_shape)
results["dataclass_is_state"] = type(grad_state).__name__
results["dataclass_leaves"] = len(jax.tree_util.tree_leaves(state))

emit({
    "versions": library_versions("chex"),
    "exact": results,
    "step": {"doubled": record_tree(doubled), "grad": record_tree(grad_state),
             "energy": record(energy(state))},
})
