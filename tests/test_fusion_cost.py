"""The fusion cost model never makes a kernel do asymptotically more per-element work (or
emit asymptotically more code) than the unfused program: duplication limits
(passes/fusion.py: `_sites_in`, `_Cones`, `_duplication_pays`) and concatenates written
operand by operand (backends/cpu/codegen/concatenate.py: `concat_regions`). Structure is
asserted by counts (ops per fusion, fusions, regions), values against NumPy and the eager
result."""
import re
from collections import Counter

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.hlo import evaluator as hlo_eval
from ember._src.backends.cpu import cost_model
from ember._src.backends.cpu.codegen import concatenate
from ember._src.driver.compilation import compile_executable
from ember._src.lower import lower_jaxpr
from ember._src.passes import fusion
from ember._src.passes.pipeline import optimize

from tests.test_fusion import check_contract, fusions, lowered

HASH_OPS = ("xor", "shift-left", "shift-right-logical", "or")


def grid(key):
  """JAX's mnist_vae example: a 10 x 10 grid of sampled 28 x 28 images."""
  imgs = iter(ember.random.bernoulli(key, 0.5, (100, 784)).reshape(-1, 28, 28))
  return jnp.vstack([jnp.hstack([next(imgs).T for _ in range(10)]) for _ in range(10)])


KEY = np.array([1, 2], np.uint32)


def op_counts(instrs):
  return Counter(i.opcode for i in instrs)


def fused_op_counts(module):
  return Counter(i.opcode for f in fusions(module) for i in f.called[0].instrs)


def optimized(f, *args):
  return optimize(lower_jaxpr(ember.make_jaxpr(f)(*args), "f"))


# --------------------------------------------------------------------------------------
# The image grid: the hash computed once per element, the grid a copy of its bits
# --------------------------------------------------------------------------------------

def test_image_grid_hash_computed_once_per_element():
  before = op_counts(lowered(grid, KEY).entry.instrs)
  m = optimized(grid, KEY)
  check_contract(m)
  after = fused_op_counts(m)
  for op in HASH_OPS:   # every hash instruction exactly once: no copy per grid cell
    assert after[op] == before[op] > 0, (op, after[op], before[op])
  fs = fusions(m)
  assert len(fs) == 2
  hash_kernel, grid_kernel = sorted(fs, key=lambda f: f.shape.dtype == np.bool_ and
                                    f.shape.dims == (280, 280))
  assert hash_kernel.shape.dims == (100, 28, 28)     # the bits, written once
  comp = grid_kernel.called[0]
  arithmetic = [i for i in comp.instrs if i.opcode not in fusion.INDEX_MAPS | {"concatenate"}]
  assert arithmetic == []                             # the grid only moves bits
  # the bits' kernel loops over rows of 784 (its root reshape's operand), not 28 x 28: the
  # vectorized inner loop has no 12-element scalar tail per 28
  body = kernel_body(compile_executable(m).llvm_ir, hash_kernel.name)
  assert re.findall(r"icmp slt i64 [^,]+, (\d+)", body) == ["784"]


def test_image_grid_concatenate_written_per_operand():
  m = optimized(grid, KEY)
  comp = m.entry.root.called[0]
  regions = concatenate.concat_regions(comp)
  assert len(regions) == 100                          # one loop nest per image
  offsets = sorted(off for _, off in regions)
  assert offsets == sorted((28 * r, 28 * c) for r in range(10) for c in range(10))
  assert all(x.shape.dims == (28, 28) for x, _ in regions)
  groups = concatenate.region_groups(regions)   # the same program, slicing at other places
  assert [len(g) for g in groups] == [100] and all(len(sl) == 1 for _, _, sl in groups[0])
  body = kernel_body(compile_executable(m).llvm_ir, m.entry.root.name)
  assert body.count("store i8") == 1 and body.count("load i8") == 1   # one shared nest
  assert " xor " not in body and body.count(" select ") == 2   # its row range clipped


def kernel_body(llvm_ir: str, name: str) -> str:
  """The IR of a fusion kernel's body function."""
  return llvm_ir.split(f'define internal void @"{name}.body"')[1].split("\ndefine")[0]


def test_image_grid_bit_equal_to_eager():
  want = np.asarray(grid(KEY))
  f = ember.jit(grid)
  got = np.asarray(f(KEY))
  assert got.dtype == np.bool_ and got.shape == (280, 280)
  np.testing.assert_array_equal(got, want)
  np.testing.assert_array_equal(np.asarray(f(KEY)), want)   # the tiered-up code too
  bits = np.asarray(ember.random.bernoulli(KEY, 0.5, (100, 784))).reshape(10, 10, 28, 28)
  np.testing.assert_array_equal(want, bits.transpose(0, 3, 1, 2).reshape(280, 280))


# --------------------------------------------------------------------------------------
# Duplication limits of the cost model
# --------------------------------------------------------------------------------------

def chain(x, n):
  """n cheap float ops (no transcendental: the pass would duplicate each one)."""
  for k in range(n):
    x = x * 1.0625 + 0.25 if k % 2 else x - 0.5
  return x


def test_long_chain_read_at_many_places_is_materialized():
  x = np.arange(40 * 6, dtype=np.float32).reshape(40, 6)
  f = lambda x: (lambda y: jnp.concatenate([y[k:k + 1] for k in range(40)][::-1], axis=0))(
      chain(x, 40))
  m = fusion.run(lowered(f, x))
  check_contract(m)
  before = op_counts(lowered(f, x).entry.instrs)
  after = fused_op_counts(m)
  assert after["multiply"] == before["multiply"] and after["subtract"] == before["subtract"]
  assert len(fusions(m)) == 2


def test_short_op_read_at_a_few_places_stays_fused():
  x = np.arange(4 * 6, dtype=np.float32).reshape(4, 6)
  f = lambda x: jnp.concatenate([(x * 2)[k:k + 1] for k in range(4)][::-1], axis=0)
  m = fusion.run(lowered(f, x))
  assert len(fusions(m)) == 1 and fused_op_counts(m)["multiply"] == 4


def test_long_chain_feeding_two_fusions_is_computed_once():
  x = np.ones((8, 8), np.float32)
  f = lambda x: (lambda a: (a + 1, a * 2))(chain(x, 30))
  m = fusion.run(lowered(f, x))
  before = op_counts(lowered(f, x).entry.instrs)
  after = fused_op_counts(m)
  assert after["subtract"] == before["subtract"]          # the chain once, not per output
  assert len(fusions(m)) == 3


def test_duplication_pays_by_work_and_fusions():
  x = np.ones((8, 8), np.float32)
  m = lowered(lambda x: chain(x, 1) + chain(x, 20), x)
  cones = fusion._Cones(m.entry)
  add = m.entry.root
  short, long_ = sorted(add.operands, key=cones.work)
  assert cones.work(short) == 1 and cones.work(long_) == 30   # 10 x (x - c), 10 x (x * c + c)
  assert fusion._duplication_pays(short, 4, cones)       # 3 ops redone vs 20 bytes
  assert not fusion._duplication_pays(long_, 2, cones)   # 30 ops redone vs 12 bytes
  assert fusion._duplication_pays(long_, 1, cones)       # one consumer: no duplication


# --------------------------------------------------------------------------------------
# Concatenates of many operands, several dtypes and axes: values, eager and jit
# --------------------------------------------------------------------------------------

DTYPES = [np.float32, np.int32, np.uint8, np.bool_, np.dtype(ml_dtypes.bfloat16), np.float16]


def parts(dtype, n, shape, seed):
  rng = np.random.default_rng(seed)
  out = []
  for k in range(n):
    s = list(shape)
    s[-1] = 1 + k % 3
    v = rng.standard_normal(s) * 10
    out.append((v > 0) if dtype == np.bool_ else v.astype(dtype))
  return out


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_concatenate_many_operands_values(dtype, axis):
  xs = parts(dtype, 9, (3, 4, 2), axis)
  xs = [np.moveaxis(x, -1, axis) for x in xs]
  want = np.concatenate(xs, axis=axis)
  root = lambda *xs: jnp.concatenate(xs, axis=axis)
  inner = lambda *xs: jnp.concatenate([x[::-1] if x.ndim else x for x in xs], axis=axis) == \
      jnp.concatenate([x[::-1] for x in xs], axis=axis)    # concatenates inside a fusion
  for f, expect in ((root, want), (inner, np.ones(want.shape, np.bool_))):
    np.testing.assert_array_equal(np.asarray(f(*xs)), expect)                # eager
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(*xs)), expect)     # compiled


def test_nested_concatenates_and_split_kernels():
  xs = [np.arange(k * 12, k * 12 + 12, dtype=np.float32).reshape(3, 4) for k in range(12)]
  f = lambda *xs: jnp.vstack([jnp.hstack(xs[r * 4:r * 4 + 4]) for r in range(3)])
  want = np.vstack([np.hstack(xs[r * 4:r * 4 + 4]) for r in range(3)])
  m = optimized(f, *xs)
  assert len(concatenate.concat_regions(m.entry.root.called[0])) == 12
  for chunks in (1, 2, 5, 9):   # a split kernel writes each region's rows in its range
    with cost_model.forced_chunks(chunks):
      exe = compile_executable(optimized(f, *xs))
    np.testing.assert_array_equal(exe.execute(list(xs))[0], want)


def test_concatenate_of_costly_operands_inside_a_fusion():
  x = np.linspace(-2, 2, 60, dtype=np.float32).reshape(6, 10)
  f = lambda x: jnp.concatenate([jnp.exp(x[:, :3]), jnp.tanh(x), x[:, 2:] * 3, jnp.sin(x)],
                                axis=1).sum(axis=1)
  want = np.concatenate([np.exp(x[:, :3].astype(np.float64)), np.tanh(x), x[:, 2:] * 3.0,
                         np.sin(x)], axis=1).sum(axis=1)
  np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), want, rtol=2e-6, atol=1e-5)
  m = lowered(f, x)
  expected = hlo_eval.evaluate(m, [x])[0]
  got = compile_executable(optimize(lower_jaxpr(ember.make_jaxpr(f)(x), "f"))).execute([x])[0]
  np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)


def test_concatenate_with_empty_operands_and_scalar_rows():
  a, b, c = (np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32),
             np.full((1, 3), 7, np.float32))
  f = lambda a, b, c: jnp.concatenate([a, b, a, c, b * 2], axis=0)
  want = np.concatenate([a, b, a, c, b * 2], axis=0)
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(a, b, c)), want)
  g = lambda v: lax.concatenate([v[k:k + 1] for k in range(7)][::-1], 0)
  v = np.arange(7, dtype=np.int32)
  np.testing.assert_array_equal(np.asarray(ember.jit(g)(v)), v[::-1])


def test_regions_sharing_a_program_differ_only_in_slice_starts():
  x = np.arange(8 * 9, dtype=np.int32).reshape(8, 9)
  y = -np.arange(8 * 9, dtype=np.int32).reshape(8, 9)
  f = lambda x, y: jnp.concatenate(
      [(x[k:k + 2, ::2] + y[3 - k:5 - k, 1::2][:, :1]) for k in range(4)] +
      [x[k:k + 2, 1:6] * 2 for k in range(3)] + [y[:2, :5] * 2], axis=1)
  want = np.concatenate(
      [(x[k:k + 2, ::2] + y[3 - k:5 - k, 1::2][:, :1]) for k in range(4)] +
      [x[k:k + 2, 1:6] * 2 for k in range(3)] + [y[:2, :5] * 2], axis=1)
  m = optimized(f, x, y)
  groups = concatenate.region_groups(concatenate.concat_regions(m.entry.root.called[0]))
  assert sorted(len(g) for g in groups) == [1, 3, 4]      # y's operand is another program
  for chunks in (1, 2):
    with cost_model.forced_chunks(chunks):
      exe = compile_executable(optimized(f, x, y))
    np.testing.assert_array_equal(exe.execute([x, y])[0], want)
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(x, y)), want)
