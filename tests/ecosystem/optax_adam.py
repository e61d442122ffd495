"""optax: an Adam loop on a small linear regression (and AdamW with a schedule and clipping).

Data from NumPy (fixed seed), parameters from zeros: the results depend only on optax's
update rules and the jitted step. Run: `python -m ember tests/ecosystem/optax_adam.py`.
"""
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

STEPS = 50
LOGGED = (0, 1, 2, 5, 10, 20, 49)

rng = np.random.default_rng(0)
X = rng.standard_normal((64, 8)).astype(np.float32)
w_true = rng.standard_normal(8).astype(np.float32)
y = (X @ w_true + 0.5 + 0.1 * rng.standard_normal(64)).astype(np.float32)


def loss_fn(params, x, t):
  pred = x @ params["w"] + params["b"]
  return jnp.mean((pred - t) ** 2)


def train(tx):
  params = {"w": jnp.zeros(8, jnp.float32), "b": jnp.zeros((), jnp.float32)}
  opt_state = tx.init(params)

  @jax.jit
  def step(params, opt_state):
    loss, grads = jax.value_and_grad(loss_fn)(params, X, y)
    updates, opt_state = tx.update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss

  losses = []
  for _ in range(STEPS):
    params, opt_state, loss = step(params, opt_state)
    losses.append(loss)
  return params, opt_state, jnp.stack(losses)


params, state, losses = train(optax.adam(0.1))
schedule = optax.warmup_cosine_decay_schedule(0.0, 0.1, warmup_steps=5, decay_steps=STEPS)
tx2 = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(schedule, weight_decay=1e-2))
params2, state2, losses2 = train(tx2)

emit({
    "versions": library_versions("optax"),
    "step": {"adam_first_loss": record(losses[0]), "adamw_first_loss": record(losses2[0])},
    "train": {
        "adam_losses": record(losses[np.array(LOGGED)]),
        "adam_params": record_tree(params),
        "adam_mu": record_tree(state[0].mu),
        "adam_count": record(state[0].count),
        "adamw_losses": record(losses2[np.array(LOGGED)]),
        "adamw_params": record_tree(params2),
        "schedule": record(jnp.stack([schedule(i) for i in LOGGED])),
    },
})
