"""Seed 001's MLP (784-512-512-10, ReLU, cross-entropy) trained with `value_and_grad` inside
`jit`, next to the same code run eagerly: one epoch of 100 steps on batches of 128.

The data are synthetic (no download): inputs drawn from N(0, 1) and labels from a fixed
random linear "teacher", so the loss has something to learn. Written against the JAX API:
`import ember as jax` is the only ember-specific line.

    .venv/bin/python examples/mlp.py [--steps N] [--eager-steps N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import ember as jax
import ember.nn  # noqa: F401  (jax.nn)
import ember.numpy  # noqa: F401  (jax.numpy)

SIZES = [784, 512, 512, 10]
BATCH = 128
INIT_LR, DECAY_RATE, DECAY_STEPS = 0.05, 0.99, 10


def init_params(rng):
  return [(rng.standard_normal((m, n)).astype(np.float32) * np.float32(np.sqrt(2 / m)),
           np.zeros(n, np.float32)) for m, n in zip(SIZES[:-1], SIZES[1:])]


def update_with(jax):
  """The training step written against a JAX-like module (`ember`, or `jax` itself)."""
  jnp = jax.numpy

  def predict(params, x):
    for w, b in params[:-1]:
      x = jax.nn.relu(jnp.dot(x, w) + b)
    w, b = params[-1]
    return jnp.dot(x, w) + b

  def loss(params, x, y):
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(predict(params, x)) * y, axis=1))

  def update(params, x, y, epoch_number):
    loss_value, grads = jax.value_and_grad(loss)(params, x, y)
    lr = INIT_LR * DECAY_RATE ** (epoch_number / DECAY_STEPS)
    return [(w - lr * dw, b - lr * db) for (w, b), (dw, db) in zip(params, grads)], loss_value
  return update


update = update_with(jax)


def batches(steps, seed=1):
  rng = np.random.default_rng(seed)
  teacher = rng.standard_normal((784, 10)).astype(np.float32)
  for _ in range(steps):
    x = rng.standard_normal((BATCH, 784)).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[np.argmax(x @ teacher, axis=1)]
    yield x, y


def epoch(step_fn, params, steps):
  """Run `steps` updates; returns (params, losses, seconds, seconds of the first step)."""
  losses, t0, first = [], time.perf_counter(), None
  for n, (x, y) in enumerate(batches(steps)):
    params, l = step_fn(params, x, y, n)
    losses.append(float(l))        # float() waits for the step
    if first is None:
      first = time.perf_counter() - t0
  return params, losses, time.perf_counter() - t0, first


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--steps", type=int, default=100)
  p.add_argument("--eager-steps", type=int, default=10,
                 help="eager steps to time (an eager epoch is extrapolated from them)")
  a = p.parse_args()
  params = init_params(np.random.default_rng(0))
  _, eager_losses, eager_s, eager_first = epoch(update, params, a.eager_steps)
  _, losses, jit_s, first_s = epoch(jax.jit(update), params, a.steps)
  # the first eager step compiles each operation's kernels: an epoch is extrapolated from
  # the steps after it
  eager_step = (eager_s - eager_first) / max(a.eager_steps - 1, 1)
  eager_epoch = eager_first + eager_step * (a.steps - 1)
  print(f"eager: {eager_step * 1e3:.1f} ms/step (first step {eager_first:.2f} s) -> "
        f"{eager_epoch:.2f} s per {a.steps}-step epoch")
  print(f"jit:   {jit_s:.2f} s per {a.steps}-step epoch (first step, with compilation: "
        f"{first_s:.2f} s; then {(jit_s - first_s) / max(a.steps - 1, 1) * 1e3:.2f} ms/step)")
  print(f"speed-up {eager_epoch / jit_s:.1f}x; loss {losses[0]:.3f} -> {losses[-1]:.3f}")
  np.testing.assert_allclose(losses[:len(eager_losses)], eager_losses, rtol=2e-4)
  assert losses[-1] < losses[0]


if __name__ == "__main__":
  main()
