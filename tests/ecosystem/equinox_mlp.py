"""equinox: eqx.nn.MLP from jax.random.key(0), vmapped over a batch, then 50 Adam steps
with eqx.filter_jit and eqx.filter_value_and_grad.
Run: `python -m ember tests/ecosystem/equinox_mlp.py`.
"""
import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

STEPS = 50
LOGGED = (0, 1, 2, 5, 10, 20, 49)

rng = np.random.default_rng(3)
X = jnp.asarray(rng.standard_normal((32, 4)).astype(np.float32))
Y = jnp.asarray(np.tanh(np.asarray(X) @ np.array([1.0, -2.0, 0.5, 1.5], np.float32))[:, None])


def loss_fn(model, x, t):
  return jnp.mean((jax.vmap(model)(x) - t) ** 2)


model = eqx.nn.MLP(in_size=4, out_size=1, width_size=16, depth=2,
                   activation=jax.nn.softplus, key=jax.random.key(0))
init_params = eqx.filter(model, eqx.is_array)
out0 = jax.vmap(model)(X)
loss0, grads0 = eqx.filter_value_and_grad(loss_fn)(model, X, Y)

tx = optax.adam(1e-2)
opt_state = tx.init(eqx.filter(model, eqx.is_inexact_array))


@eqx.filter_jit
def step(model, opt_state, x, t):
  loss, grads = eqx.filter_value_and_grad(loss_fn)(model, x, t)
  updates, opt_state = tx.update(grads, opt_state, eqx.filter(model, eqx.is_inexact_array))
  return eqx.apply_updates(model, updates), opt_state, loss


losses = []
for _ in range(STEPS):
  model, opt_state, loss = step(model, opt_state, X, Y)
  losses.append(loss)

emit({
    "versions": library_versions("equinox", "optax"),
    "init": {"params": record_tree(init_params)},
    "step": {"apply": record(out0[:8]), "loss": record(loss0), "grads": record_tree(grads0)},
    "train": {"losses": record(jnp.stack(losses)[np.array(LOGGED)]),
              "params": record_tree(eqx.filter(model, eqx.is_array))},
})
