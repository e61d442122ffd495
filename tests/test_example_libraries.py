"""ember.example_libraries (stax, optimizers) against real JAX's jax.example_libraries: the
cases of data/example_libraries_cases.py, whose values JAX 0.12 recorded in
data/example_libraries.json (data/make_example_libraries.py), plus the errors users hit.

Cases that need a lax function ember lacks (convolutions, reduce_window) are skipped until
it has it.
"""
import json
import os
import pickle
import sys
import types

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, random
from ember.example_libraries import optimizers, stax

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from example_libraries_cases import CASES, PARAMS  # noqa: E402

with open(os.path.join(os.path.dirname(__file__), "data", "example_libraries.json")) as f:
  RECORDED = json.load(f)

NS = types.SimpleNamespace(jax=ember, jnp=jnp, lax=lax, random=random, stax=stax,
                           optimizers=optimizers)
# f32: initializers and one forward pass differ from XLA's by rounding only; the optimizer
# and training cases chain a few steps (each divides by a root of a running average).
RTOL = {"": 2e-6, "opt_": 1e-5, "mlp_grad_adam": 1e-5, "cnn_train": 1e-5}


def tolerance(name):
  return max(v for k, v in RTOL.items() if name.startswith(k))


@pytest.mark.parametrize("name,needs,call", CASES, ids=[c[0] for c in CASES])
def test_matches_jax(name, needs, call):
  missing = [n for n in needs if not hasattr(lax, n)]
  if missing:
    pytest.skip(f"ember.lax has no {', '.join(missing)} yet")
  leaves = ember.tree_util.tree_leaves(call(NS))
  recorded = RECORDED[name]
  assert len(leaves) == len(recorded), f"{name}: {len(leaves)} leaves, JAX has {len(recorded)}"
  for i, (leaf, want) in enumerate(zip(leaves, recorded)):
    got = np.asarray(leaf)
    where = f"{name} leaf {i}"
    assert got.dtype.name == want["dtype"], where
    assert list(got.shape) == want["shape"], where
    np.testing.assert_allclose(got.ravel(), np.asarray(want["values"], got.dtype),
                               rtol=tolerance(name), atol=1e-6, err_msg=where)


def test_optimizer_state_is_a_pytree_and_packs():
  opt_init, opt_update, get_params = optimizers.adam(0.1)
  state = opt_init({"a": jnp.ones(2), "b": (jnp.zeros(3),)})
  assert isinstance(state, optimizers.OptimizerState)
  assert len(ember.tree_util.tree_leaves(state)) == 6  # (x, m, v) for each of 2 leaves
  unpacked = pickle.loads(pickle.dumps(optimizers.unpack_optimizer_state(state)))
  assert isinstance(unpacked["a"], optimizers.JoinPoint)
  packed = optimizers.pack_optimizer_state(unpacked)
  assert packed.tree_def == state.tree_def and packed.subtree_defs == state.subtree_defs
  for x, y in zip(ember.tree_util.tree_leaves(packed), ember.tree_util.tree_leaves(state)):
    np.testing.assert_array_equal(x, y)
  with pytest.raises(TypeError, match="pack_optimizer_state"):
    optimizers.pack_optimizer_state({"a": 1})


def test_optimizer_update_wrong_tree():
  opt_init, opt_update, _ = optimizers.sgd(0.1)
  state = opt_init({"w": jnp.ones(2)})
  with pytest.raises(TypeError, match="gradient's tree structure must match"):
    opt_update(0, {"v": jnp.ones(2)}, state)


def test_schedule_errors():
  with pytest.raises(ValueError, match="one shorter than values"):
    optimizers.piecewise_constant([1, 2], [0.1, 0.2])
  with pytest.raises(ValueError, match="must be sequences"):
    optimizers.piecewise_constant(1, [0.1, 0.2])
  with pytest.raises(TypeError, match="scalar or a schedule"):
    optimizers.make_schedule(jnp.ones(3))
  assert optimizers.make_schedule(0.5)(7) == 0.5


def test_dropout_needs_a_key():
  _, apply = stax.Dropout(0.5)
  with pytest.raises(ValueError, match="Dropout: apply_fun needs a PRNG key"):
    apply((), jnp.ones(3))


def test_layers_keep_an_unknown_batch():
  init, _ = stax.serial(stax.Dense(4), stax.Relu, stax.Flatten)
  shape, _ = init(random.key(0), (-1, 3))
  assert shape == (-1, 4)
  shape, _ = stax.FanInConcat(0)[0](None, [(2, 3), (5, 3)])
  assert shape == (7, 3)


def test_params_sgd_matches_numpy_float64():
  """sgd on the fixed gradient field, against the same update in NumPy float64."""
  opt_init, opt_update, get_params = optimizers.sgd(0.1)
  state = opt_init({k: jnp.asarray(v) for k, v in PARAMS.items()})
  ref = {k: np.float64(v) if np.ndim(v) == 0 else v.astype(np.float64) for k, v in PARAMS.items()}
  target = {"w": 1.0, "b": 0.0, "s": -1.0}
  for i in range(3):
    grads = {k: 2.0 * (v - target[k]) for k, v in get_params(state).items()}
    state = opt_update(i, grads, state)
    ref = {k: v - 0.1 * 2.0 * (v - target[k]) for k, v in ref.items()}
  for k in ref:
    np.testing.assert_allclose(get_params(state)[k], ref[k], rtol=1e-6)
