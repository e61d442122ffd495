"""Generate tests/data/random_jax_vectors.json: reference outputs of real JAX's jax.random.

Run with the oracle interpreter (JAX 0.12, default config: threefry2x32 with
jax_threefry_partitionable=True), from the repository root:

    /work/jaxvenv/bin/python tests/data/make_random_vectors.py

The x64 cases are produced in a child process started with JAX_ENABLE_X64=1 (the flag must
be set before JAX creates any array), so one command writes the whole file.

Each case is a record the test replays with ember.random:
  x64        whether jax_enable_x64 was on
  seed       the integer seed
  typed      True: start from random.key(seed); False: from random.PRNGKey(seed)
  path       key derivation applied first: [["split", num, index], ["fold_in", data], ...]
  op         "PRNGKey" | "key_data" | "split" | "fold_in" | "bits" | "uniform" | "normal"
  kwargs     the op's arguments (shape as a list; dtype as a name; num may be a list)
  dtype      result dtype name; shape: result shape (key data for key-valued ops)
  data       the result, flattened, as integers: unsigned ints as they are, floats as
             their bit patterns (uint16/32/64), so the test compares bit for bit.

The "math" section holds the elementwise math XLA:CPU runs that ember rebuilds for the
samplers (ember/_src/library/random/xla_math/: glibc's log, tan, tanf, pow, powf and erf, XLA's
float64 log1p, exp and erf_inv) on inputs chosen to reach each branch:
{name: {"dtype", "x": bit patterns, ["y": exponents,] "out"}}.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "random_jax_vectors.json")
SEEDS = [0, 1, 42, -1, 2**31 + 5]
SEEDS_X64 = SEEDS + [2**32 + 7, -2**40, 2**63 - 1]


def cases(x64: bool) -> list[dict]:
  out = []

  def add(op, seed=0, typed=True, path=(), **kwargs):
    out.append(dict(x64=x64, seed=seed, typed=typed, path=[list(p) for p in path], op=op,
                    kwargs=kwargs))

  for seed in (SEEDS_X64 if x64 else SEEDS):
    add("PRNGKey", seed, typed=False)
    add("key_data", seed, typed=True)
  if x64:
    for dt in ("uint64", "uint32", "uint8"):
      add("bits", 7, shape=[5], dtype=dt)
    for dt in ("float64", "float32", "float16", "bfloat16"):
      add("uniform", 3, shape=[7], dtype=dt)
      add("uniform", 3, shape=[2, 3], dtype=dt, minval=-2.0, maxval=3.0)
      add("normal", 5, shape=[9], dtype=dt)
    add("split", 42, typed=False, num=3)
    add("fold_in", 42, data=7)
    return out + sampler_cases(x64)

  for seed in (0, 42, -1):
    for typed in (True, False):
      add("split", seed, typed)
      add("split", seed, typed, num=3)
      add("split", seed, typed, num=[2, 2])
      add("fold_in", seed, typed, data=7)
  add("split", 1, num=1)
  add("split", 1, num=0)
  add("split", 1, num=[2, 1, 3])
  add("fold_in", 1, data=0)
  add("fold_in", 1, data=2**32 - 1)
  add("fold_in", 1, data=2**31 + 3)
  add("split", 0, path=[["split", 2, 1], ["fold_in", 5]], num=4)

  shapes = [[], [1], [7], [8], [3, 5], [2, 3, 4], [0], [2, 0]]
  for dt in ("uint32", "uint16", "uint8"):
    for shape in shapes:
      add("bits", 0, shape=shape, dtype=dt)
  add("bits", 42, typed=False, shape=[7])
  add("bits", 42, typed=False, shape=[4])  # a prefix of the [7] draw (partitionable)
  add("bits", 42, path=[["split", 3, 2]], shape=[3, 5], dtype="uint32")

  for dt in ("float32", "float16", "bfloat16"):
    for shape in ([], [7], [3, 5]):
      add("uniform", 1, shape=shape, dtype=dt)
    add("uniform", 1, shape=[2, 3, 4], dtype=dt, minval=-2.0, maxval=3.0)
    add("uniform", 42, typed=False, shape=[6], dtype=dt, minval=0.5, maxval=0.75)
    add("uniform", 42, shape=[3, 2], dtype=dt, minval=[[-1.0], [0.0], [10.0]],
        maxval=[1.0, 2.0])
    add("uniform", 42, shape=[4], dtype=dt, minval=1.0, maxval=1.0)
    for shape in ([], [7], [3, 5], [4, 4, 4]):
      add("normal", 2, shape=shape, dtype=dt)
    add("normal", 42, typed=False, shape=[10], dtype=dt)
  add("uniform", 0, path=[["split", 2, 0]], shape=[3])
  add("normal", 0, path=[["fold_in", 3], ["split", 4, 3]], shape=[3])
  add("normal", 7, shape=[4096])  # wide range of erf_inv inputs, both branches
  return out + sampler_cases(x64)


def arr(values, dtype):
  """A kwarg that the replay turns into np.asarray(values, dtype)."""
  return {"array": values, "dtype": dtype}


def sampler_cases(x64: bool) -> list[dict]:
  """The samplers beyond bits/uniform/normal (randint, choice, gumbel, ...)."""
  out = []

  def add(op, seed=0, typed=True, **kwargs):
    out.append(dict(x64=x64, seed=seed, typed=typed, path=[], op=op, kwargs=kwargs))

  fdts = ("float64", "float32", "float16", "bfloat16") if x64 else ("float32", "float16",
                                                                      "bfloat16")
  if x64:
    for dt in ("int64", "uint64", "int32", "uint8"):
      add("randint", 3, shape=[4, 5], minval=-7, maxval=1000, dtype=dt)
    add("randint", 3, shape=[6], minval=-2**40, maxval=2**41, dtype="int64")
    add("permutation", 5, x=50)
    add("choice", 5, a=20, shape=[4], replace=False)
    add("rademacher", 1, shape=[9])
    add("geometric", 1, p=0.2, shape=[9])
    add("bernoulli", 1, p=arr([0.1, 0.5, 0.9], "float64"), shape=[4, 3])
  else:
    for dt in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
      for seed, shape in ((0, []), (42, [3, 4]), (1, [64])):
        add("randint", seed, shape=shape, minval=-5, maxval=300, dtype=dt)
    add("randint", 7, shape=[50], minval=0, maxval=256, dtype="uint8")
    add("randint", 7, shape=[50], minval=-128, maxval=128, dtype="int8")
    add("randint", 7, shape=[20], minval=-2**31, maxval=2**31 - 1, dtype="int32")
    add("randint", 7, shape=[20], minval=arr(0, "uint32"), maxval=arr(2**32 - 1, "uint32"),
        dtype="uint32")
    add("randint", 7, typed=False, shape=[10], minval=5, maxval=5)
    add("randint", 7, shape=[10], minval=9, maxval=2)
    add("randint", 8, shape=[3, 2], minval=arr([[0], [10], [-3]], "int32"),
        maxval=arr([4, 100], "int32"))
    add("randint", 8, shape=[5], minval=0.0, maxval=7.9)
    for seed in (0, 42):
      for typed in (True, False):
        add("bernoulli", seed, typed, p=0.3, shape=[3, 4])
        add("bernoulli", seed, typed, p=0.7, shape=[100], mode="high")
    add("bernoulli", 2, p=arr([0.1, 0.5, 0.9], "float32"))
    add("bernoulli", 2, p=arr([0.1, 0.5, 0.9], "float16"), shape=[2, 3])
    add("bernoulli", 2, p=arr([0.25], "bfloat16"), shape=[40])
    add("bernoulli", 2)
    for seed in (0, 42):
      add("permutation", seed, x=10)
      add("permutation", seed, x=1)
      add("permutation", seed, x=arr([[1.5, 2.5, 3.5], [4.5, 5.5, 6.5]], "float32"))
      add("permutation", seed, x=arr(list(range(24)), "int32"))
    add("permutation", 3, x=2000)  # two sort rounds
    add("permutation", 3, x=arr([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], "int32"), axis=1)
    add("permutation", 3, x=arr([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], "int32"), axis=1,
        independent=True)
    add("permutation", 3, x=arr([[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]], "int32"),
        independent=True)
    for seed in (0, 42):
      add("choice", seed, a=10, shape=[4])
      add("choice", seed, a=10, shape=[2, 3], replace=False)
      add("choice", seed, a=arr([[1, 2], [3, 4], [5, 6]], "int32"), shape=[5])
      add("choice", seed, a=arr([[1, 2], [3, 4], [5, 6]], "int32"), shape=[2], axis=1)
      add("choice", seed, a=arr([[1, 2], [3, 4], [5, 6]], "int32"), shape=[2], replace=False)
      add("choice", seed, a=5, shape=[8], p=arr([0.25, 0.125, 0.5, 0.0625, 0.0625], "float32"))
      add("choice", seed, a=5, shape=[3], replace=False,
          p=arr([0.25, 0.125, 0.5, 0.0625, 0.0625], "float32"))
    add("choice", 4, a=4, shape=[50], p=arr([0.1, 0.2, 0.3, 0.4], "float32"))
    add("choice", 4, a=6)
    add("choice", 4, a=6, shape=[0])
    add("rademacher", 0, shape=[3, 4])
    add("rademacher", 0, shape=[])
    add("rademacher", 5, shape=[50], dtype="float32")
    add("rademacher", 5, shape=[7], dtype="int8")
    add("geometric", 0, p=0.3, shape=[3, 4])
    add("geometric", 0, p=arr([0.05, 0.5, 0.95], "float32"))
    add("geometric", 0, p=0.01, shape=[200], dtype="int16")
    add("categorical", 0, logits=arr([[0.0, 1.0, 2.0], [-1.0, 0.5, 0.25]], "float32"))
    add("categorical", 1, logits=arr([[0.0, 1.0, 2.0], [-1.0, 0.5, 0.25]], "float32"), axis=0)
    add("categorical", 1, logits=arr([0.0, 1.0, 2.0, -3.0], "float32"), shape=[5, 2])
    add("categorical", 2, logits=arr([[0.0, 1.0, 2.0], [-1.0, 0.5, 0.25]], "float32"),
        shape=[4, 2])
    add("categorical", 2, logits=arr([[0.0, 1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.25, 0, 0]],
                                     "float32"), shape=[3, 2], replace=False)
  # Samplers built on transcendentals: the test bounds their ulp distance.
  for dt in fdts:
    for seed, shape in ((1, []), (2, [3, 4]), (3, [500])):
      for op in ("gumbel", "exponential", "laplace", "logistic", "cauchy", "maxwell"):
        add(op, seed, shape=shape, dtype=dt)
      add("pareto", seed, b=2.5, shape=shape, dtype=dt)
      add("rayleigh", seed, scale=1.5, shape=shape, dtype=dt)
      add("weibull_min", seed, scale=2.0, concentration=1.5, shape=shape, dtype=dt)
      add("triangular", seed, left=-1.0, mode=0.5, right=3.0, shape=shape, dtype=dt)
      add("lognormal", seed, sigma=0.5, shape=shape, dtype=dt)
      add("truncated_normal", seed, lower=-1.5, upper=2.0, shape=shape, dtype=dt)
      add("double_sided_maxwell", seed, loc=1.0, scale=2.0, shape=shape, dtype=dt)
    add("gumbel", 4, shape=[200], dtype=dt, mode="high")
  if not x64:
    add("gumbel", 4, shape=[200], mode="highest")
    add("truncated_normal", 5, lower=arr([-1.0, 0.0, 2.0], "float32"),
        upper=arr([[1.0], [3.0]], "float32"))
    add("double_sided_maxwell", 5, loc=arr([0.0, 1.0, 2.0], "float32"), scale=1.0)
    add("pareto", 5, b=arr([[1.0], [3.0]], "float32"), shape=[2, 4])
  return out


def kwarg(v):
  """The replayed value of a case kwarg (shared with tests/test_random.py)."""
  if isinstance(v, dict) and "array" in v:
    import ml_dtypes  # noqa: F401 - registers bfloat16 with NumPy
    return np.asarray(v["array"], dtype=v["dtype"])
  return v


def run(case: dict) -> dict:
  import jax
  import jax.numpy as jnp
  key = jax.random.key(case["seed"]) if case["typed"] else jax.random.PRNGKey(case["seed"])
  for step, *args in case["path"]:
    if step == "split":
      key = jax.random.split(key, args[0])[args[1]]
    else:
      key = jax.random.fold_in(key, args[0])
  op, kw = case["op"], dict(case["kwargs"])
  if "dtype" in kw:
    kw["dtype"] = jnp.dtype(kw["dtype"])
  if "shape" in kw:
    kw["shape"] = tuple(kw["shape"])
  if op == "PRNGKey":
    res = key
  elif op == "key_data":
    res = jax.random.key_data(key)
  elif op == "split":
    num = kw.get("num", 2)
    res = jax.random.key_data(jax.random.split(key, tuple(num) if isinstance(num, list) else num))
  elif op == "fold_in":
    res = jax.random.key_data(jax.random.fold_in(key, kw["data"]))
  else:
    kw = {k: kwarg(v) for k, v in kw.items()}
    if op == "uniform":
      for k in ("minval", "maxval"):
        if k in kw:
          kw[k] = np.asarray(kw[k], dtype=np.float64 if case["x64"] else np.float32)
    res = getattr(jax.random, op)(key, **kw)
  res = np.asarray(res)
  flat = res.reshape(-1)
  if flat.dtype.kind != "u":
    flat = flat.view(f"uint{flat.dtype.itemsize * 8}")
  return dict(case, dtype=str(res.dtype), shape=list(res.shape),
              data=[int(v) for v in flat])


def math_inputs() -> dict:
  """name -> (dtype, x[, y]): each function's branch boundaries, specials and random values."""
  rng = np.random.default_rng(11)
  f64 = lambda *vs: np.concatenate([np.ravel(np.asarray(v, np.float64)) for v in vs])
  near = lambda v, n=3: [np.nextafter(v, v + d * np.inf) if k else v
                         for d in (-1, 1) for k in range(n)]  # v and its neighbours
  specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 2.2250738585072014e-308]
  log_x = f64(specials, -1.0, 1.0, near(1 - 2**-4), near(1 + 0x109 / 2.0**12), near(1.0),
              rng.uniform(0.93, 1.07, 40), np.exp(rng.uniform(-700, 700, 60)),
              2.0 ** np.arange(-1022, 1024, 97))
  log1p_x = f64(specials, -1.0, -2.0, near(-0.2928932188134525), near(0.41421356237309503),
                rng.uniform(-1, 1, 60), -np.exp(rng.uniform(-40, 0, 20)),
                np.exp(rng.uniform(-40, 100, 20)))
  exp_x = f64(specials, near(-708.3964185322641), near(709.782712893384), -745.2, 800.0,
              rng.uniform(-720, 720, 60), rng.uniform(-2, 2, 30))
  w = lambda v: np.sqrt(-np.expm1(-v))   # x with -log1p(-x * x) = v
  erf_inv_x = f64(specials, 1.0, -1.0, 2.0, near(w(6.25)), near(w(16.0)),
                  rng.uniform(-1, 1, 60), 1 - np.exp(rng.uniform(-37, -1, 30)))
  tan_x = np.concatenate([np.float32([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 2.0**-13,
                                      -(2.0**-13), 0.6744, 0.6745, 0.7853981, 0.7853982,
                                      -0.7853982, 1.5707963, -1.5707964, 2.5, 100.0,
                                      119.9]),
                          rng.uniform(-1.6, 1.6, 80).astype(np.float32),
                          rng.uniform(-0.1, 0.1, 20).astype(np.float32)])
  vals = np.float32([0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan,
                     1e-40, 1e30, 150.0, 0.99999994])
  gx, gy = (g.ravel() for g in np.meshgrid(vals, vals))
  pow_x = np.concatenate([gx, -np.log1p(-rng.uniform(0, 1, 60)).astype(np.float32)])
  pow_y = np.concatenate([gy, (1 / rng.uniform(0.3, 5, 60)).astype(np.float32)])
  tan64_x = f64(specials, near(1.2589993048095494e-08), near(0.060799986124038696),
                near(0.7869997024536133), near(np.pi / 2), near(-np.pi / 2), near(np.pi / 4),
                24.9, -25.0, rng.uniform(-1.6, 1.6, 60), rng.uniform(-25, 25, 30),
                rng.uniform(-0.1, 0.1, 20))
  erf64_x = f64(specials, 1e-300, -3e-9, near(0.84375), near(-1.25), near(1 / 0.35), near(6.0),
                rng.uniform(-7, 7, 60), rng.uniform(-1.3, 1.3, 30))
  vals64 = [0.0, -0.0, 1.0, -1.0, 0.5, -2.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-310,
            1e300, -1e300, 1e-300, 700.0, 0.9999999999999999, 2.0**-70, 2.0**70, 1e10,
            -1075.5, 1100.0, 1.5]
  gx64, gy64 = (g.ravel() for g in np.meshgrid(vals64, vals64))
  pow64_x = f64(gx64, -np.log1p(-rng.uniform(0, 1, 60)), np.exp(rng.uniform(-30, 30, 40)))
  pow64_y = f64(gy64, 1 / rng.uniform(0.3, 5, 60), rng.uniform(-30, 30, 40))
  return {"log_f64": ("float64", log_x), "log1p_f64": ("float64", log1p_x),
          "pow_f64": ("float64", pow64_x, pow64_y), "tan_f64": ("float64", tan64_x),
          "erf_f64": ("float64", erf64_x),
          "exp_f64": ("float64", exp_x), "erf_inv_f64": ("float64", erf_inv_x),
          "tan_f32": ("float32", tan_x), "pow_f32": ("float32", pow_x, pow_y)}


def math_cases() -> dict:
  import jax
  import jax.numpy as jnp
  fns = {"log": jnp.log, "log1p": jnp.log1p, "exp": jnp.exp, "erf_inv": jax.lax.erf_inv,
         "erf": jax.lax.erf,
         "tan": jnp.tan, "pow": jnp.power}
  bits = lambda a: [int(v) for v in np.asarray(a).reshape(-1).view(f"uint{a.dtype.itemsize * 8}")]
  out = {}
  for name, (dtype, *args) in math_inputs().items():
    args = [np.asarray(a, dtype) for a in args]
    res = np.asarray(jax.jit(fns[name.rsplit("_", 1)[0]])(*args))
    out[name] = dict(dtype=dtype, x=bits(args[0]), out=bits(res),
                     **({"y": bits(args[1])} if len(args) > 1 else {}))
  return out


def main():
  x64 = os.environ.get("JAX_ENABLE_X64") == "1"
  import jax
  results = [run(c) for c in cases(x64)]
  if x64:
    json.dump({"cases": results, "math": math_cases()}, sys.stdout)
    return
  child = subprocess.run([sys.executable, __file__], env=dict(os.environ, JAX_ENABLE_X64="1"),
                         check=True, capture_output=True, text=True)
  child_out = json.loads(child.stdout)
  results += child_out["cases"]
  with open(OUT, "w") as f:
    f.write('{"jax_version": %s, "math": %s, "cases": [\n'
            % (json.dumps(jax.__version__), json.dumps(child_out["math"])))
    f.write(",\n".join(json.dumps(r) for r in results))
    f.write("\n]}\n")
  print(f"wrote {len(results)} cases to {OUT}")


if __name__ == "__main__":
  main()
