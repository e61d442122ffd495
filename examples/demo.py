"""ember's main demo: trace a real function and show what ember sees.

Run with `make demo`. The compiler (lowering, fusion, native code, cost analysis) is the
next stage of the project; today `ember.jit` stages the function into a jaxpr and runs it
with the reference interpreter, so this demo shows the tracing half of the pipeline.
"""
import time

import numpy as np

import ember as jax
import ember.numpy as jnp


def selu(x, alpha=1.67, lmbda=1.05):
  return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def median_time(f, *args, n=5):
  times = []
  for _ in range(n):
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def main():
  key = jax.random.key(0)
  x = jax.random.normal(key, (1000, 1000))
  print(f"x: {x.dtype}{list(x.shape)}, first values {np.asarray(x[0, :3])}")

  selu_jit = jax.jit(selu)
  t_eager = median_time(selu, x)
  t0 = time.perf_counter()
  jax.block_until_ready(selu_jit(x))
  t_first = time.perf_counter() - t0
  t_cached = median_time(selu_jit, x)
  print("\n== selu on 1000x1000 float32 ==")
  print(f"eager (NumPy reference impl per op): {t_eager * 1e3:8.2f} ms (median of 5)")
  print(f"jit, first call (trace + run):       {t_first * 1e3:8.2f} ms")
  print(f"jit, cached call:                    {t_cached * 1e3:8.2f} ms (median of 5)")
  ref = 1.05 * np.where(np.asarray(x) > 0, np.asarray(x), 1.67 * np.exp(np.asarray(x, np.float64)) - 1.67)
  print("max |jit - NumPy float64|:", float(np.max(np.abs(np.asarray(selu_jit(x)) - ref))))

  print("\n== the jaxpr ember traced for selu ==")
  print(jax.make_jaxpr(selu)(x))

  @jax.jit
  def inner(v):
    return jnp.maximum(v, 0.0) * 2.0

  def outer(v):
    return inner(v).sum() + jnp.sin(v).mean()

  print("\n== a nested jit is one `jit` equation holding its sub-jaxpr ==")
  print(jax.make_jaxpr(outer)(jnp.ones(3)))

  print("\nNext stages (lowering to StableHLO, fusion, LLVM code, cost_analysis) come with "
        "the compiler; see README.md.")


if __name__ == "__main__":
  main()
