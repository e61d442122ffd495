"""ember's main demo: jit a real function and show every stage of the compiler.

Run with `make demo`: eager vs first call vs cached call, the jaxpr, the lowered
StableHLO, the optimized HLO (one fused kernel) and the cost and memory analysis.
"""
import re
import time

import numpy as np

import ember as jax
import ember.numpy as jnp

jax.config.update("ember_jit_backend", "cpu")


def selu(x, alpha=1.67, lmbda=1.05):
  return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)


def median_time(f, *args, n=7):
  times = []
  for _ in range(n):
    t0 = time.perf_counter()
    jax.block_until_ready(f(*args))
    times.append(time.perf_counter() - t0)
  return float(np.median(times))


def strip_metadata(text: str) -> str:
  return re.sub(r", metadata=\{[^}]*\}", "", text)


def main():
  x = jax.random.normal(jax.random.key(0), (2000, 2000))
  print(f"x = random.normal(key(0), {x.shape}) -> {x.dtype}, x[0, :3] = {np.asarray(x[0, :3])}")

  selu_jit = jax.jit(selu)
  t_eager = median_time(selu, x)
  t0 = time.perf_counter()
  jax.block_until_ready(selu_jit(x))
  t_first = time.perf_counter() - t0
  t_cached = median_time(selu_jit, x)
  t_numpy = median_time(lambda v: 1.05 * np.where(v > 0, v, 1.67 * np.exp(v) - 1.67), np.asarray(x))
  print("\n== selu on 2000x2000 float32 (medians of 7 runs) ==")
  print(f"NumPy:                          {t_numpy * 1e3:8.2f} ms")
  print(f"ember eager (op by op):         {t_eager * 1e3:8.2f} ms")
  print(f"ember jit, first call:          {t_first * 1e3:8.2f} ms  (trace + lower + optimize + LLVM + run)")
  print(f"ember jit, cached call:         {t_cached * 1e3:8.2f} ms")
  xn = np.asarray(x, np.float64)
  ref = 1.05 * np.where(xn > 0, xn, 1.67 * np.exp(xn) - 1.67)
  print("max |jit - NumPy float64|:     ", float(np.max(np.abs(np.asarray(selu_jit(x)) - ref))))

  small = jnp.ones((4, 4))
  print("\n== 1. the jaxpr (what tracing recorded) ==")
  print(jax.make_jaxpr(selu)(small))
  lowered = selu_jit.lower(small)
  print("\n== 2. the lowered StableHLO (Lowered.as_text()) ==")
  print(lowered.as_text())
  compiled = lowered.compile()
  print("== 3. the optimized HLO (Compiled.as_text(), metadata stripped) ==")
  print(strip_metadata(compiled.as_text()))
  big = selu_jit.lower(x).compile()
  print("== 4. cost and memory analysis at 2000x2000 ==")
  ca = big.cost_analysis()
  for k in ("flops", "transcendentals", "bytes accessed"):
    print(f"  {k:16s} = {ca[k]:>14,.0f}")
  ma = big.memory_analysis()
  for k in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes",
            "alias_size_in_bytes", "generated_code_size_in_bytes"):
    print(f"  {k:30s} = {getattr(ma, k):>12,}")


if __name__ == "__main__":
  main()
