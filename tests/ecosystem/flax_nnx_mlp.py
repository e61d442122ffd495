"""flax.nnx: an MLP (nnx.Linear, nnx.Rngs(0)), its output and grad, then 50 steps of
nnx.Optimizer(Adam) under nnx.jit. Run: `python -m ember tests/ecosystem/flax_nnx_mlp.py`.
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

STEPS = 50
LOGGED = (0, 1, 2, 5, 10, 20, 49)

rng = np.random.default_rng(2)
X = jnp.asarray(rng.standard_normal((32, 4)).astype(np.float32))
Y = jnp.asarray(np.cos(np.asarray(X).sum(axis=1, keepdims=True)).astype(np.float32))


class MLP(nnx.Module):

  def __init__(self, rngs: nnx.Rngs):
    self.l1 = nnx.Linear(4, 16, rngs=rngs)
    self.l2 = nnx.Linear(16, 16, rngs=rngs)
    self.l3 = nnx.Linear(16, 1, rngs=rngs)

  def __call__(self, x):
    x = nnx.relu(self.l1(x))
    x = nnx.gelu(self.l2(x))
    return self.l3(x)


def loss_fn(model, x, t):
  return jnp.mean((model(x) - t) ** 2)


model = MLP(nnx.Rngs(0))
# A pure dict of arrays now: the state holds the Variables, which training updates.
init_params = nnx.to_pure_dict(nnx.state(model, nnx.Param))
out0 = model(X)
loss0, grads0 = nnx.value_and_grad(loss_fn)(model, X, Y)

optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


@nnx.jit
def step(model, optimizer, x, t):
  loss, grads = nnx.value_and_grad(loss_fn)(model, x, t)
  optimizer.update(model, grads)
  return loss


losses = jnp.stack([step(model, optimizer, X, Y) for _ in range(STEPS)])

emit({
    "versions": library_versions("flax", "optax"),
    "init": {"params": record_tree(init_params)},
    "step": {"apply": record(out0[:8]), "loss": record(loss0),
             "grads": record_tree(nnx.to_pure_dict(grads0))},
    "train": {"losses": record(losses[np.array(LOGGED)]),
              "params": record_tree(nnx.to_pure_dict(nnx.state(model, nnx.Param)))},
})
