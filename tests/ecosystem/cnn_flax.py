"""A small CNN (flax.linen.Conv, max_pool, avg_pool; lax.conv_general_dilated and
lax.reduce_window underneath) classifying 8x8 images, trained 10 jitted SGD-momentum steps.
Run: `python -m ember tests/ecosystem/cnn_flax.py`.
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

STEPS = 10

rng = np.random.default_rng(4)
images = rng.standard_normal((16, 8, 8, 1)).astype(np.float32)
labels = rng.integers(0, 3, 16).astype(np.int32)


class CNN(nn.Module):

  @nn.compact
  def __call__(self, x):
    x = nn.relu(nn.Conv(4, (3, 3))(x))  # SAME padding
    x = nn.max_pool(x, (2, 2), strides=(2, 2))
    x = nn.relu(nn.Conv(8, (3, 3), padding="VALID")(x))
    x = nn.avg_pool(x, (2, 2), strides=(1, 1))
    x = x.reshape(x.shape[0], -1)
    return nn.Dense(3)(x)


model = CNN()
params = model.init(jax.random.key(0), images)["params"]


def loss_fn(params, x, t):
  logits = model.apply({"params": params}, x)
  return optax.softmax_cross_entropy_with_integer_labels(logits, t).mean()


logits0 = model.apply({"params": params}, images)
grads0 = jax.grad(loss_fn)(params, images, labels)
tx = optax.sgd(0.05, momentum=0.9)
opt_state = tx.init(params)


@jax.jit
def step(params, opt_state):
  loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
  updates, opt_state = tx.update(grads, opt_state)
  return optax.apply_updates(params, updates), opt_state, loss


losses = []
for _ in range(STEPS):
  params, opt_state, loss = step(params, opt_state)
  losses.append(loss)

emit({
    "versions": library_versions("flax", "optax"),
    "step": {"logits": record(logits0[:4]), "grads": record_tree(grads0)},
    "train": {"losses": record(jnp.stack(losses)), "params": record_tree(params)},
})
