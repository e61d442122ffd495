"""Run by tests/test_multidevice.py in a subprocess with N CPU devices (EMBER_NUM_CPU_DEVICES):
checks the collectives against NumPy and prints a data-parallel MLP step's parameters
(pmap and shard_map forms) as JSON."""
import json
import sys

import numpy as np

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember.sharding import NamedSharding, PartitionSpec as P

n = len(jax.devices())
rng = np.random.default_rng(0)


def check_collectives():
  x = rng.standard_normal((n, 2, 3)).astype(np.float32)
  outs = jax.pmap(lambda v: (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"),
                             lax.pmin(v, "i"), lax.axis_index("i"), lax.all_gather(v, "i"),
                             lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)])),
                  "i")(x)
  s, m, mx, mn, ai, ag, pp = map(np.asarray, outs)
  np.testing.assert_allclose(s, np.broadcast_to(x.astype(np.float64).sum(0), x.shape), 1e-6)
  np.testing.assert_allclose(m, np.broadcast_to(x.astype(np.float64).mean(0), x.shape), 1e-6)
  np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
  np.testing.assert_array_equal(mn, np.broadcast_to(x.min(0), x.shape))
  np.testing.assert_array_equal(ai, np.arange(n))
  np.testing.assert_array_equal(ag, np.broadcast_to(x, (n,) + x.shape))
  np.testing.assert_array_equal(pp, np.roll(x, 1, 0))
  z = rng.standard_normal((n, 2 * n)).astype(np.float32)
  rs = jax.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(z)
  np.testing.assert_allclose(np.asarray(rs), z.astype(np.float64).sum(0).reshape(n, 2), 1e-6)
  w = rng.standard_normal((n, n)).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(jax.pmap(lambda v: lax.all_to_all(v, "i", 0, 0),
                                                    "i")(w)), w.T)
  assert y_sharding_ok(jax.pmap(lambda v: v * 2, "i")(x))
  if n % 2 == 0:   # replica groups: pairs of neighbours
    groups = [[2 * k, 2 * k + 1] for k in range(n // 2)]
    g = np.asarray(jax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), "i")(w))
    np.testing.assert_allclose(g, np.repeat(w.reshape(n // 2, 2, n).sum(1), 2, 0), 1e-6)


def y_sharding_ok(y):
  shards = y.addressable_shards
  return len(shards) == n and [s.device for s in shards] == jax.devices()[:n]


def loss(params, x, y):
  (w1, b1), (w2, b2) = params
  h = jnp.tanh(x @ w1 + b1)
  return jnp.mean((h @ w2 + b2 - y) ** 2)


def init():
  r = np.random.default_rng(1)
  return [(r.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
          (r.standard_normal((16, 1)).astype(np.float32) * 0.3, np.zeros(1, np.float32))]


def batch():
  r = np.random.default_rng(2)
  x = r.standard_normal((32, 8)).astype(np.float32)
  return x, np.sin(x.sum(1, keepdims=True)).astype(np.float32)


def sgd(params, grads):
  return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def pmap_steps(steps=3):
  """Each device: its 32/n examples; grads averaged with pmean (equal shards: the mean of
  the shard means is the full batch's mean)."""
  x, y = batch()
  step = jax.pmap(lambda p, xb, yb: sgd(p, lax.pmean(jax.grad(loss)(p, xb, yb), "d")), "d",
                  in_axes=(None, 0, 0), out_axes=None)
  params = init()
  xs, ys = x.reshape(n, -1, 8), y.reshape(n, -1, 1)
  for _ in range(steps):
    params = step(params, xs, ys)
  return params


def shard_map_steps(steps=3):
  mesh = jax.make_mesh((n,), ("d",))
  x, y = batch()
  step = jax.shard_map(lambda p, xb, yb: sgd(p, lax.pmean(jax.grad(loss)(p, xb, yb), "d")),
                       mesh=mesh, in_specs=(P(), P("d"), P("d")), out_specs=P())
  params = init()
  xs = jax.device_put(x, NamedSharding(mesh, P("d")))
  for _ in range(steps):
    params = step(params, xs, y)
  return params


def flat(ps):
  return [np.asarray(a, np.float64).ravel().tolist() for a in jax.tree.leaves(ps)]


if __name__ == "__main__":
  check_collectives()
  json.dump({"n": n, "pmap": flat(pmap_steps()), "shard_map": flat(shard_map_steps())},
            sys.stdout)
