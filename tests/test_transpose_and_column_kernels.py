"""Transposes and column reductions of any shape: the CPU kernels that move a transpose in
8x8 register blocks (codegen.transpose: _block_transpose, inside 32x32 tiles, the edges
element by element) and that accumulate column reductions as explicit vectors of output
elements, several rows per pass (codegen.reductions: column_lanes, COLUMN_ROWS). Results
against NumPy (float64 for float sums), eager and jit; the structure of the kernels (no
timings)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.base import dtypes
from ember._src.backends.cpu.codegen import transpose
from ember._src.base.config import enable_x64


def data(shape, dtype, seed=0):
  rng = np.random.default_rng(seed)
  dt = np.dtype(dtype)
  if dt == np.bool_:
    return rng.integers(0, 2, shape).astype(bool)
  if dt.kind in "iu":
    return rng.integers(-100, 100, shape).astype(dt)
  if dt.kind == "c":
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
  return rng.standard_normal(shape).astype(dt)


def compiled_ir(f, *args) -> str:
  return ember.jit(f).lower(*args).compile().runtime_executable().llvm_ir


# --- transposes ----------------------------------------------------------------------

SHAPES = [((1, 1), (1, 0)), ((7, 13), (1, 0)), ((67, 1000), (1, 0)), ((1000, 67), (1, 0)),
          ((257, 263), (1, 0)), ((1531, 2417), (1, 0)), ((2000, 2000), (1, 0)),
          ((3, 5, 7), (2, 0, 1)), ((9, 300, 301), (2, 1, 0)), ((40, 50, 61), (1, 2, 0)),
          ((40, 50, 61), (0, 2, 1)), ((40, 50, 61), (2, 0, 1)), ((40, 50, 61), (1, 0, 2)),
          ((2, 3, 80, 90), (0, 3, 1, 2))]


@pytest.mark.parametrize("shape,perm", SHAPES, ids=[f"{s}-{p}" for s, p in SHAPES])
def test_transpose_matches_numpy(shape, perm):
  x = data(shape, np.float32)
  want = np.transpose(x, perm)
  f = lambda m: jnp.transpose(m, perm)
  np.testing.assert_array_equal(np.asarray(f(x)), want)
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(x)), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int8", "int16", "uint8",
                                   "bool", "bfloat16", "float16", "complex64"])
@pytest.mark.parametrize("shape,perm", [((301, 259), (1, 0)), ((20, 131, 67), (2, 0, 1))])
def test_transpose_of_every_dtype_is_exact(dtype, shape, perm):
  dt = getattr(dtypes, dtype) if dtype in ("bfloat16", "float16") else np.dtype(dtype)
  x = data(shape, dt)
  with enable_x64(True):
    got = np.asarray(ember.jit(lambda m: jnp.transpose(m, perm))(x))
  assert got.dtype == x.dtype
  np.testing.assert_array_equal(got, np.transpose(x, perm))


@pytest.mark.parametrize("name", ["T*2+1", "T+y", "3-D perm * y", "T then row sum",
                                  "T of sum"])
def test_transposes_inside_fusions(name):
  x = data((331, 479), np.float32)
  y = data((479, 331), np.float32, seed=1)
  z = data((23, 41, 67), np.float32)
  w = data((67, 23, 41), np.float32, seed=2)
  cases = {
      "T*2+1": (lambda a: a.T * 2 + 1, (x,)),
      "T+y": (lambda a, b: a.T + b, (x, y)),
      "3-D perm * y": (lambda a, b: jnp.transpose(a, (2, 0, 1)) * b, (z, w)),
      "T then row sum": (lambda a: (a.T * a.T).sum(1), (x,)),
      "T of sum": (lambda a, b: (a + b.T).T, (x, y)),
  }
  f, args = cases[name]
  want = f(*[a.astype(np.float64) for a in args]) if name != "3-D perm * y" else \
      np.transpose(z.astype(np.float64), (2, 0, 1)) * w
  want = np.asarray(want)
  for g in (f, ember.jit(f)):
    np.testing.assert_allclose(np.asarray(g(*args)), want, rtol=2e-6, atol=1e-5)


def test_a_transpose_kernel_moves_register_blocks():
  # a big transpose of a parameter: 8 vector loads, shuffles, 8 vector stores per block
  # (its edges of 1531 % 8 and 2417 % 8 elements element by element)
  ir_text = compiled_ir(lambda m: jnp.array(m.T), data((1531, 2417), np.float32))
  assert f"load <{transpose.BLOCK} x float>" in ir_text
  assert f"store <{transpose.BLOCK} x float>" in ir_text
  assert "shufflevector" in ir_text
  # complex values are two parts: the tiled element-by-element nest, no register blocks
  ir_c = compiled_ir(lambda m: jnp.array(m.T), data((300, 301), np.complex64))
  assert "shufflevector" not in ir_c


def test_transpose_lanes_is_a_transpose():
  # the shuffle network on integer lanes, run through LLVM's interpreter-free path: the
  # masks of each stage compose to rows[k][l] -> out[l][k]
  n = transpose.BLOCK
  rows = [[(k, l) for l in range(n)] for k in range(n)]
  s = 1
  while s < n:
    lo = [l if not l & s else n + l - s for l in range(n)]
    hi = [l + s if not l & s else n + l for l in range(n)]
    new = list(rows)
    for r in range(n):
      if not r & s:
        both = rows[r] + rows[r + s]
        new[r], new[r + s] = [both[m] for m in lo], [both[m] for m in hi]
    rows, s = new, s * 2
  assert rows == [[(k, l) for k in range(n)] for l in range(n)]


# --- column (and row) reductions -----------------------------------------------------

RED_SHAPES = [(1, 1), (2, 3), (17, 33), (1031, 67), (5, 7, 300), (3001, 1999), (4099, 300),
              (2000, 2000)]
REDUCTIONS = {
    "sum0": (lambda m: m.sum(0), lambda m: m.sum(0)),
    "max0": (lambda m: m.max(0), lambda m: m.max(0)),
    "min0": (lambda m: m.min(0), lambda m: m.min(0)),
    "sumsq0": (lambda m: (m * m - 1).sum(0), lambda m: (m * m - 1).sum(0)),
    "sum01": (lambda m: m.sum(tuple(range(m.ndim - 1))),
              lambda m: m.sum(tuple(range(m.ndim - 1)))),
    "sum1": (lambda m: m.sum(-1), lambda m: m.sum(-1)),
    "argmax0": (lambda m: jnp.argmax(m, 0), lambda m: np.argmax(m, 0)),
}


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
@pytest.mark.parametrize("shape", RED_SHAPES, ids=str)
def test_reductions_of_odd_shapes_match_numpy(shape, dtype):
  x = data(shape, np.dtype(dtype))
  with enable_x64(dtype == "float64"):
    for name, (f, ref) in REDUCTIONS.items():
      if name == "sumsq0" and dtype == "int32":
        continue
      want = np.asarray(ref(x.astype(np.float64) if dtype != "int32" else x))
      for g in (f, ember.jit(f)):
        got = np.asarray(g(x))
        if dtype == "int32" or name.startswith(("max", "min", "argmax")):
          np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=name)
        else:
          # a float sum of n terms in any order: |error| <= ~n eps * sum |terms|; the
          # kernels' orders (in order per column, K blocks) stay far below that
          terms = np.abs(x.astype(np.float64))
          if name == "sumsq0":
            terms = terms * terms + 1
          mags = np.asarray(ref(terms))
          eps = np.finfo(np.float32 if dtype == "float32" else np.float64).eps
          assert np.all(np.abs(got - want) <= 16 * eps * mags + 1e-30), name


def test_column_sums_accumulate_vectors_in_order():
  # below the splitter's size: one kernel summing each column in row order with explicit
  # 64-byte vectors of output elements, so it equals NumPy's float32 sum over axis 0
  # (which adds row after row) bit for bit
  x = data((1031, 67), np.float32)
  f = lambda m: m.sum(0)
  ir_text = compiled_ir(f, x)
  assert "load <16 x float>" in ir_text and "reassoc" not in ir_text
  assert np.asarray(ember.jit(f)(x)).tobytes() == x.sum(0).tobytes()
  x64 = data((1031, 67), np.float64)
  with enable_x64(True):
    assert "load <8 x double>" in compiled_ir(f, x64)
    assert np.asarray(ember.jit(f)(x64)).tobytes() == x64.sum(0).tobytes()


@pytest.mark.parametrize("name", ["sum0", "sumsq0", "max0", "sum", "transpose"])
def test_quick_tier_code_is_vector_code_with_the_same_bits(name):
  # tiering (backends/cpu/tiering.py) starts these modules at the quick tier: its code for
  # the column reductions and the transpose blocks is explicit vector IR, and gives the
  # bits of the optimized code
  f = {"sum0": lambda m: m.sum(0), "sumsq0": lambda m: (m * m).sum(0),
       "max0": lambda m: m.max(0), "sum": lambda m: m.sum(),
       "transpose": lambda m: jnp.array(m.T)}[name]
  x = data((3001, 1999), np.float32)
  exe = ember.jit(f).lower(x).compile()._computation.executable
  assert exe.tier_up_pending is not None          # started at the quick tier
  quick = exe.execute([x])[0].copy()
  exe.tier_up_pending.wait()
  optimized = exe.execute([x])[0]
  assert np.asarray(quick).tobytes() == np.asarray(optimized).tobytes()
  assert "<16 x float>" in exe.llvm_ir or "<8 x float>" in exe.llvm_ir
