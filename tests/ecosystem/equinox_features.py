"""equinox: the features a user reaches for beyond a training loop: eqx.error_if under
vmap (passing and failing), an ensemble built with eqx.filter_vmap, eqx.tree_at surgery, a
Module with methods under eqx.filter_jit, eqx.nn.Sequential/LayerNorm, eqx.filter_grad,
eqx.nn.Conv2d/MaxPool2d and their gradient, eqx.filter_pmap, stateful BatchNorm (a
collective over a named vmap axis), Dropout, Embedding, GRUCell.
Run: `python -m ember tests/ecosystem/equinox_features.py`.
"""
import os
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import emit, library_versions, record, record_tree  # noqa: E402

X = jnp.asarray(np.random.default_rng(5).standard_normal((6, 3)).astype(np.float32))


# error_if under vmap: the check's predicate is unbatched or batched; only failing rows raise
def checked_log(x):
  return jnp.log(eqx.error_if(x, x <= 0, "log of a non-positive value"))


passing = jax.vmap(checked_log)(jnp.abs(X) + 0.5)
jitted_passing = eqx.filter_jit(jax.vmap(checked_log))(jnp.abs(X) + 0.5)
try:
  eqx.filter_jit(jax.vmap(checked_log))(X)
  failing = "no error"
except Exception as e:  # equinox raises EquinoxRuntimeError (a RuntimeError) at the call
  failing = f"{isinstance(e, RuntimeError)}: {'log of a non-positive value' in str(e)}"

# an ensemble of 4 MLPs, built and applied with filter_vmap
keys = jax.random.split(jax.random.key(1), 4)
make = lambda k: eqx.nn.MLP(3, 2, 8, 1, activation=jax.nn.tanh, key=k)
ensemble = eqx.filter_vmap(make)(keys)
ens_out = eqx.filter_vmap(lambda m, x: jax.vmap(m)(x), in_axes=(eqx.if_array(0), None))(
    ensemble, X)


# a Module with state and methods, called under filter_jit
class Scaler(eqx.Module):
  linear: eqx.nn.Linear
  norm: eqx.nn.LayerNorm
  scale: jax.Array
  name: str = eqx.field(static=True)

  def __init__(self, key):
    self.linear = eqx.nn.Linear(3, 4, key=key)
    self.norm = eqx.nn.LayerNorm(4)
    self.scale = jnp.arange(1.0, 5.0)
    self.name = "scaler"

  def __call__(self, x):
    return self.norm(self.linear(x)) * self.scale

  def energy(self, xs):
    return jnp.sum(jax.vmap(self)(xs) ** 2)


scaler = Scaler(jax.random.key(2))
energy = eqx.filter_jit(scaler.energy)(X)
grads = eqx.filter_jit(eqx.filter_grad(lambda m, xs: m.energy(xs)))(scaler, X)

# tree_at: replace a weight and a nested field; the original stays as it was
zeroed = eqx.tree_at(lambda m: m.linear.bias, scaler, jnp.zeros(4))
rescaled = eqx.tree_at(lambda m: (m.scale, m.norm.weight), scaler,
                       (jnp.full(4, 2.0), jnp.full(4, 0.5)))

# Sequential with a lambda layer, applied to a batch
seq = eqx.nn.Sequential([eqx.nn.Linear(3, 5, key=jax.random.key(3)), eqx.nn.Lambda(jax.nn.relu),
                         eqx.nn.Linear(5, 1, key=jax.random.key(4))])
seq_out = jax.vmap(seq)(X)

# Conv2d (padding, stride) and MaxPool2d on a CHW image, and the grad through both
conv = eqx.nn.Conv2d(2, 3, kernel_size=3, stride=(1, 2), padding=1, key=jax.random.key(6))
pool = eqx.nn.MaxPool2d(kernel_size=2, stride=2)
image = jnp.asarray(np.random.default_rng(7).standard_normal((2, 6, 8)).astype(np.float32))
conv_out = eqx.filter_jit(lambda c, im: pool(c(im)))(conv, image)
conv_grads = eqx.filter_grad(lambda c, im: jnp.sum(pool(jax.nn.relu(c(im))) ** 2))(conv, image)

# filter_pmap over the one device; BatchNorm's state through vmap with axis_name; layers
pmapped = eqx.filter_pmap(lambda m, x: jax.vmap(m)(x), in_axes=(None, 0))(seq, X[None])
bn, bn_state = eqx.nn.make_with_state(eqx.nn.BatchNorm)(3, axis_name="batch", mode="batch")
bn_out, bn_state = jax.vmap(bn, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(
    X, bn_state)
dropped = eqx.nn.Dropout(0.5)(jnp.ones(8), key=jax.random.key(8))
embedded = eqx.nn.Embedding(5, 2, key=jax.random.key(9))(jnp.array(3))
gru = eqx.nn.GRUCell(3, 2, key=jax.random.key(10))
hidden = jax.lax.scan(lambda h, x: (gru(x, h), h), jnp.zeros(2), X)[0]

emit({
    "versions": library_versions("equinox"),
    "init": {"ensemble": record_tree(eqx.filter(ensemble, eqx.is_array)),
             "scaler": record_tree(eqx.filter(scaler, eqx.is_array)),
             "conv": record_tree(eqx.filter(conv, eqx.is_array))},
    "step": {"error_if_passing": record(passing), "error_if_jit": record(jitted_passing),
             "ensemble_out": record(ens_out), "energy": record(energy),
             "grads": record_tree(eqx.filter(grads, eqx.is_array)),
             "tree_at_zeroed": record(jax.vmap(zeroed)(X)),
             "tree_at_rescaled": record(jax.vmap(rescaled)(X)),
             "tree_at_original_bias": record(scaler.linear.bias),
             "sequential": record(seq_out), "conv_pool": record(conv_out),
             "conv_grads": record_tree(eqx.filter(conv_grads, eqx.is_array)),
             "filter_pmap": record(pmapped), "batchnorm": record(bn_out),
             "dropout": record(dropped), "embedding": record(embedded),
             "gru_scan": record(hidden)},
    "exact": {"error_if_failing": failing, "static_name": scaler.name,
              "ensemble_weight_shape": list(ensemble.layers[0].weight.shape)},
})
