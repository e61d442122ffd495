"""flax.linen: an MLP's init, apply and grad, then 50 jitted Adam steps on a regression.

Parameters come from jax.random.key(0) through flax's initializers (lecun_normal, zeros):
ember's threefry matches JAX's bit for bit, so the initial parameters match to f32 rounding.
Run: `python -m ember tests/ecosystem/flax_linen_mlp.py`.
"""
import os
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

STEPS = 50
LOGGED = (0, 1, 2, 5, 10, 20, 49)

rng = np.random.default_rng(1)
X = rng.standard_normal((32, 4)).astype(np.float32)
Y = np.sin(X.sum(axis=1, keepdims=True)).astype(np.float32)


class MLP(nn.Module):
  features: tuple = (16, 16, 1)

  @nn.compact
  def __call__(self, x):
    for f in self.features[:-1]:
      x = nn.relu(nn.Dense(f)(x))
    x = nn.tanh(x)
    return nn.Dense(self.features[-1])(x)


model = MLP()
variables = model.init(jax.random.key(0), X)
params = variables["params"]


def loss_fn(params, x, t):
  return jnp.mean((model.apply({"params": params}, x) - t) ** 2)


out0 = model.apply(variables, X)
loss0, grads0 = jax.value_and_grad(loss_fn)(params, X, Y)

tx = optax.adam(1e-2)
opt_state = tx.init(params)


@jax.jit
def step(params, opt_state):
  loss, grads = jax.value_and_grad(loss_fn)(params, X, Y)
  updates, opt_state = tx.update(grads, opt_state)
  return optax.apply_updates(params, updates), opt_state, loss


losses = []
for _ in range(STEPS):
  params, opt_state, loss = step(params, opt_state)
  losses.append(loss)

emit({
    "versions": library_versions("flax", "optax"),
    "init": {"params": record_tree(variables["params"])},
    "step": {"apply": record(out0[:8]), "loss": record(loss0), "grads": record_tree(grads0),
             "jit_apply": record(jax.jit(model.apply)(variables, X)[:8])},
    "train": {"losses": record(jnp.stack(losses)[np.array(LOGGED)]),
              "params": record_tree(params)},
})
