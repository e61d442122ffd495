"""reduction_splitter: large reductions over the leading dimension become two stages (K
blocks of rows, then the K partial results), so the first stage runs on every core.
Results against NumPy float64, bit-identical for any thread count, the optimized program's
shape, and what stays untouched."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.nn
from ember._src.base import flags as flags_lib
from ember._src.backends.cpu import cost_model
from ember._src.driver.compilation import compile_executable
from ember._src.lower import lower_jaxpr
from ember._src.passes import reduction_splitter
from ember._src.passes.pipeline import optimize

K = reduction_splitter.K
BIG = (2048, 640)   # 1.3M elements: above MIN_ELEMENTS, rows a multiple of K


def module_of(f, *args, disable=()):
  flags = flags_lib.parse(f"--disable_passes={','.join(disable)}") if disable else None
  return optimize(lower_jaxpr(ember.make_jaxpr(f)(*args), "f"), flags)


def reduces(module):
  return [i for c in module.computations for i in c.instrs if i.opcode == "reduce"]


def data(shape, dtype=np.float32, seed=0):
  rng = np.random.default_rng(seed)
  if np.dtype(dtype).kind in "iu":
    return rng.integers(-50, 50, shape).astype(dtype)
  return rng.standard_normal(shape).astype(dtype)


CASES = {   # name -> (function, NumPy float64 reference, argument)
    "column sum": (lambda x: x.sum(0), lambda x: x.sum(0), data(BIG)),
    "full sum": (lambda x: x.sum(), lambda x: x.sum(), data(BIG)),
    "full max": (lambda x: x.max(), lambda x: x.max(), data(BIG)),
    "min over 0 and 2": (lambda x: x.min((0, 2)), lambda x: x.min((0, 2)),
                         data((64, 160, 128))),
    "logsumexp": (ember.nn.logsumexp, lambda x: np.log(np.exp(x).sum()), data(BIG)),
    "int column sum": (lambda x: x.sum(0), lambda x: x.sum(0), data(BIG, np.int32)),
    # rows not a multiple of K: the last R mod K rows are one more partial
    "odd column sum": (lambda x: x.sum(0), lambda x: x.sum(0), data((3001, 1999))),
    "odd full sum": (lambda x: x.sum(), lambda x: x.sum(), data((3001, 1999))),
    "odd column max": (lambda x: x.max(0), lambda x: x.max(0), data((2047, 641))),
    "odd min over 0 and 2": (lambda x: x.min((0, 2)), lambda x: x.min((0, 2)),
                             data((67, 160, 129))),
    "odd int column sum": (lambda x: x.sum(0), lambda x: x.sum(0),
                           data((2053, 640), np.int32)),
    "odd logsumexp": (ember.nn.logsumexp, lambda x: np.log(np.exp(x).sum()),
                      data((2047, 641))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_split_reductions_match_numpy_eager_and_jit(name):
  f, ref, x = CASES[name]
  want = ref(x.astype(np.float64) if x.dtype.kind == "f" else x)
  for fn in (f, ember.jit(f)):
    got = np.asarray(fn(x))
    if x.dtype.kind == "f":
      # f32 sums of n terms: error ~ sqrt(n) eps relative to the sum of magnitudes
      scale = np.abs(x).astype(np.float64).sum() / max(want.size, 1) ** 0.5
      np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6 * scale)
    else:
      np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["column sum", "full sum", "logsumexp", "odd column sum",
                                  "odd full sum"])
def test_same_bits_for_any_number_of_chunks(name):
  # K is fixed, so the summation order never depends on how the pool splits stage 1
  f, _, x = CASES[name]
  module = module_of(f, x)
  outs = []
  for chunks in (1, 2, 3, K):
    with cost_model.forced_chunks(chunks):
      exe = compile_executable(module)
    outs.append(np.array(exe.execute([x])[0]))
  assert all(o.tobytes() == outs[0].tobytes() for o in outs)


def test_program_has_two_stages_behind_a_fusion_boundary():
  x = data(BIG)
  m = module_of(lambda x: x.sum(0), x)
  stages = [r.shape.dims for r in reduces(m)]
  assert stages == [(K, BIG[1]), (BIG[1],)]
  entry_ops = [i.opcode for i in m.entry.instrs]
  assert entry_ops.count("fusion") == 2 and "optimization-barrier" in entry_ops
  # switched off, or too small, or not over the leading dimension: one reduction
  assert len(reduces(module_of(lambda x: x.sum(0), x, disable=("reduction_splitter",)))) == 1
  assert len(reduces(module_of(lambda x: x.sum(0), data((512, 640))))) == 1
  assert len(reduces(module_of(lambda x: x.sum(1), x))) == 1


def test_rows_not_a_multiple_of_k_split_with_a_last_partial_of_the_rest():
  # 2047 = 8 * 255 + 7: K blocks of 255 rows, the last 7 rows reduced on their own, then
  # K + 1 partials combined (the first stage still runs on every core)
  m = module_of(lambda x: x.sum(0), data((2047, 640)))
  assert sorted(r.shape.dims for r in reduces(m)) == sorted([(640,), (640,), (K, 640)])
  stage2 = [r for r in reduces(m) if r.operands[0].opcode == "concatenate"]
  assert len(stage2) == 1 and stage2[0].operands[0].shape.dims == (K + 1, 640)
  assert "optimization-barrier" in [i.opcode for i in m.entry.instrs]


def test_a_sum_with_a_non_identity_init_is_not_split():
  # both stages start from the init, so a sum is split only when its init is 0 (ember's
  # reductions always are; an HLO reduce from elsewhere may add 5 and must add it once)
  x = data(BIG)

  def lowered_with_init(f, value):
    m = lower_jaxpr(ember.make_jaxpr(f)(x), "f")
    (r,) = [i for i in m.entry.instrs if i.opcode == "reduce"]
    r.operands[1].attrs["value"] = np.asarray(value, np.float32)
    return reduction_splitter.run(m)
  assert len(reduces(lowered_with_init(lambda x: x.sum(0), 5.0))) == 1
  assert len(reduces(lowered_with_init(lambda x: x.sum(0), 0.0))) == 2
  assert len(reduces(lowered_with_init(lambda x: x.max(0), 7.0))) == 2   # max: idempotent


def test_argmax_and_other_combiners_are_left_alone():
  x = data(BIG)
  m = module_of(lambda x: jnp.argmax(x, axis=0), x)
  assert len(reduces(m)) == 1   # a variadic (value, index) reduce
  np.testing.assert_array_equal(np.asarray(ember.jit(lambda x: jnp.argmax(x, axis=0))(x)),
                                np.argmax(x, axis=0))
