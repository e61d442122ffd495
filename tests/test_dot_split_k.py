"""dot_split_k: a dot with a long contraction and a small result runs as partial dots over its
leading contracting dimension (a batch of the same operands) plus their sum, so the threads
share it; and conv_expansion builds a kernel gradient from the forward conv's own patches,
which CSE then computes once. Results against NumPy float64, eager and jit; the optimized
program's shape; what stays untouched."""
import numpy as np
import pytest

import ember
from ember import lax
from ember._src.base import flags as flags_lib
from ember._src.lower import lower_jaxpr
from ember._src.passes import dot_split_k
from ember._src.passes.pipeline import optimize

# A dot's rounding error scales with the sum of its products' magnitudes, sum |a||b| (the
# f32 worst case: (K/S + S) * eps32 ~ 6e-5 of it here); elements near zero need that scale
SCALE_TOL = {np.dtype(np.float32): 1e-6, np.dtype(np.float64): 1e-14}


def module_of(f, *args, disable=()):
  flags = flags_lib.parse(f"--disable_passes={','.join(disable)}") if disable else None
  return optimize(lower_jaxpr(ember.make_jaxpr(f)(*args), "f"), flags)


def ops(module, opcode):
  return [i for c in module.computations for i in c.instrs if i.opcode == opcode]


def data(shape, dtype=np.float32, seed=0):
  return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def contract_leading(a, b, n=3):
  """The kernel-gradient form: contract the first `n` dims of both."""
  return lax.dot_general(a, b, ((tuple(range(n)), tuple(range(n))), ((), ())))


def reference(a, b, n=3):
  """(the float64 dot, the sum of its products' magnitudes)"""
  a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
  k = int(np.prod(a.shape[:n]))
  shape = a.shape[n:] + b.shape[n:]
  a2, b2 = a64.reshape(k, -1), b64.reshape(k, -1)
  return (a2.T @ b2).reshape(shape), (np.abs(a2).T @ np.abs(b2)).reshape(shape)


def assert_dot_close(got, a, b, n=3):
  want, scale = reference(a, b, n)
  assert got.dtype == a.dtype and got.shape == want.shape
  err = np.abs(np.asarray(got, np.float64) - want)
  assert (err <= SCALE_TOL[a.dtype] * scale).all(), (err / scale).max()


# (name, lhs shape, rhs shape, dtype): batch 16 x positions 32x32 against 27 x 16 (conv1's
# kernel gradient in bench/cnn.py), a conv2-like one, float64, and an odd batch
SPLIT = [("conv1 kernel gradient", (16, 32, 32, 27), (16, 32, 32, 16), np.float32),
         ("conv2 kernel gradient", (16, 16, 16, 9, 16), (16, 16, 16, 32), np.float32),
         ("float64", (8, 64, 64, 24), (8, 64, 64, 16), np.float64),
         ("odd batch", (5, 67, 61, 24), (5, 67, 61, 15), np.float32)]


@pytest.mark.parametrize("name,ls,rs,dtype", SPLIT, ids=[c[0] for c in SPLIT])
def test_split_dots_match_numpy_eager_and_jit(name, ls, rs, dtype):
  a, b = data(ls, dtype), data(rs, dtype, seed=1)
  n = 3
  module = module_of(lambda a, b: contract_leading(a, b, n), a, b)
  (dot,) = ops(module, "dot")
  assert dot.attrs["lhs_batch_dims"] == (0,) and dot.dims[0] == ls[0]   # one per batch row
  assert len(ops(module, "reduce")) == 1
  with ember.enable_x64(dtype == np.float64):
    for got in (contract_leading(a, b, n), ember.jit(lambda a, b: contract_leading(a, b, n))(a, b)):
      assert_dot_close(got, a, b, n)


def test_split_result_is_the_same_every_run_and_close_to_the_unsplit_dot():
  a, b = data((16, 32, 32, 27)), data((16, 32, 32, 16), seed=1)
  f = lambda a, b: contract_leading(a, b)
  split = ember.jit(f)
  first = np.asarray(split(a, b))
  for _ in range(3):
    np.testing.assert_array_equal(np.asarray(split(a, b)), first)
  assert_dot_close(first, a, b)
  with flags_lib.override(disable_passes=("dot_split_k",)):
    assert_dot_close(ember.jit(lambda a, b: contract_leading(a, b) + 0)(a, b), a, b)


@pytest.mark.parametrize("name,f,args", [
    # a short contraction per batch index (K/S below MIN_SLICE)
    ("short slices", lambda a, b: contract_leading(a, b), (data((16, 4, 4, 27)),
                                                            data((16, 4, 4, 16)))),
    # one contracting dimension: no leading dim to batch over without a copy
    ("one contracting dim", lambda a, b: contract_leading(a, b, 1),
     (data((16384, 27)), data((16384, 16)))),
    # a large result: the threads already share its rows
    ("large result", lambda a, b: contract_leading(a, b, 2), (data((16, 64, 300)),
                                                               data((16, 64, 300)))),
    # the leading dimension too long to add up as partials
    ("long leading dim", lambda a, b: contract_leading(a, b, 2), (data((4096, 4, 27)),
                                                                   data((4096, 4, 16)))),
    # integers are exact in any order: never split
    ("int32", lambda a, b: contract_leading(a, b),
     (np.ones((16, 32, 32, 27), np.int32), np.ones((16, 32, 32, 16), np.int32))),
    # contracting dims not leading
    ("trailing contraction", lambda a, b: lax.dot_general(a, b, (((1, 2), (1, 2)), ((), ()))),
     (data((27, 64, 256)), data((16, 64, 256)))),
])
def test_left_alone(name, f, args):
  module = module_of(f, *args)
  assert all(not d.attrs.get("lhs_batch_dims") for d in ops(module, "dot")), name
  assert ops(module, "dot") and not ops(module, "reduce"), name


def test_disabled_by_flag():
  a, b = data((16, 32, 32, 27)), data((16, 32, 32, 16), seed=1)
  module = module_of(contract_leading, a, b, disable=("dot_split_k",))
  (dot,) = ops(module, "dot")
  assert not dot.attrs.get("lhs_batch_dims") and not ops(module, "reduce")


CONV = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
def test_kernel_gradient_shares_the_forward_patches(strides):
  """grad of a conv w.r.t. its kernel: the forward's patches and the kernel gradient's are
  the same instructions, computed once (one tap concatenate in the optimized program)."""
  kw = dict(CONV, window_strides=strides)
  x, w = data((4, 16, 16, 3)), data((3, 3, 3, 8), seed=1)
  loss = lambda w, x: (ember.nn.relu(lax.conv_general_dilated(x, w, **kw)) ** 2).sum()
  module = module_of(ember.grad(loss), w, x)
  assert len(ops(module, "concatenate")) == 1
  with ember.enable_x64():
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    want = np.asarray(ember.grad(loss)(w64, x64))
  # f32: each kernel-gradient element sums 1024 (256 strided) products of O(10) terms
  for got in (ember.grad(loss)(w, x), ember.jit(ember.grad(loss))(w, x)):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=1e-5,
                               atol=1e-5 * np.abs(want).max())
