"""Cases of cumulative ops whose bits depend on XLA:CPU's scan order and rounding (shared by
make_xla_scans.py, which records JAX 0.12's results, and test_xla_scans.py). Each case:
name -> (function name, dtype, shape, axis, reverse). Inputs are drawn by `operand`."""
import numpy as np

FUNCTIONS = ("cumsum", "cumprod", "cumlogsumexp")
DTYPES = ("float32", "bfloat16", "float16")
SHAPES_AXES = (((5,), 0), ((16,), 0), ((17,), 0), ((33,), 0), ((300,), 0), ((5000,), 0),
               ((40, 3), 0), ((3, 40), 1), ((2, 20, 3), 1))

CASES = {f"{fn}_{dt}_{'x'.join(map(str, shape))}_ax{axis}_{'rev' if rev else 'fwd'}":
         (fn, dt, shape, axis, rev)
         for fn in FUNCTIONS for dt in DTYPES for shape, axis in SHAPES_AXES
         for rev in (False, True)}


def operand(fn, dtype, shape, seed):
  """float32 values (rounded to `dtype` by the caller): products stay near 1 so long
  cumprods neither overflow nor vanish; sums and logsumexps take normals."""
  x = np.random.RandomState(seed).randn(*shape).astype(np.float32)
  return (1 + x * np.float32(0.01)) if fn == "cumprod" else x
