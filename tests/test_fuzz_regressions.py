"""Bugs found by the differential fuzzer (tests/fuzz, docs/fuzzing.md): each minimized
program, eager and jitted, against JAX 0.12's values stored as literals."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base.config import config


def _eager_and_jit(fn, *args):
  return [np.asarray(fn(*args)), np.asarray(ember.jit(fn)(*args))]


# fuzz seed 5165 (x64): a product of uint32 and int8 multiplied in uint32 (the "larger" kind)
# and converted to int64 afterwards: -2 became 4294967294. JAX converts both operands to the
# promoted dtype first.
@pytest.mark.parametrize("x64", [True, False])
def test_dot_of_unsigned_and_signed_multiplies_in_the_promoted_dtype(x64):
  with config._override("jax_enable_x64", x64):
    big = 4000000000 if x64 else 4
    a = jnp.asarray(np.array([[2, 3], [big, 1]], np.uint32))
    b = jnp.asarray(np.array([[-2, 1], [1, -128]], np.int8))
    want_ab = [[-1, -382], [-7999999999, 3999999872]] if x64 else [[-1, -382], [-7, -124]]
    for got in _eager_and_jit(jnp.matmul, a, b):
      assert got.dtype == (np.int64 if x64 else np.int32)
      np.testing.assert_array_equal(got, want_ab)
    if x64:
      for got in _eager_and_jit(lambda b, a: jnp.einsum("ij,jk->ik", b, a), b, a):
        np.testing.assert_array_equal(got, [[3999999996, -5], [-511999999998, -125]])
    x = jnp.asarray(np.array([2], np.uint32))
    y = jnp.asarray(np.array([-2], np.int8))
    for got in _eager_and_jit(jnp.dot, x, y):
      assert int(got) == -4


def test_dot_of_uint16_and_int8():
  a = jnp.asarray(np.array([[60000, 3]], np.uint16))
  b = jnp.asarray(np.array([[-1], [2]], np.int8))
  for got in _eager_and_jit(jnp.matmul, a, b):
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, [[-59994]])


# fuzz seed 20647 (x64): checked mode (ember_check_compiled) compared a float64 output with
# float64's tolerance although it came from a complex64 sum, whose order differs between
# the compiled code and the reference evaluator by float32 roundings: a false AssertionError.
def test_checked_mode_tolerates_the_least_precise_float_of_the_module():
  from ember._src.base import flags
  z = np.array([[[(-3.198437452316284-1.600000023841858j), (0.30078125+0.30000001192092896j)], [(0.3015625476837158+0.699999988079071j), (0.600781261920929-1.2000000476837158j)], [(-2.9984374046325684-1.399999976158142j), (-0.3992187976837158-0.800000011920929j)], [(0.5015624761581421+0.20000000298023224j), (-0.69921875-1.2000000476837158j)]], [[(2.09375-1j), (0.6968749761581421+1.600000023841858j)], [(2.9937500953674316-1.100000023841858j), (1.796875-0.8999999761581421j)], [(1.693750023841858-1.5j), (4.196875095367432+0.30000001192092896j)], [(1.09375+0j), (2.6968750953674316+0.800000011920929j)]], [[1.7000000476837158j, (-4.496874809265137-0.4000000059604645j)], [(-0.6000000238418579-0.699999988079071j), (-2.596874952316284-1.600000023841858j)], [(-0.6000000238418579+1.2999999523162842j), (-1.296875-1.600000023841858j)], [(1.2000000476837158+1.7999999523162842j), (-4.596875190734863+0.8999999761581421j)]]], dtype=np.complex64)
  x = np.zeros((4, 1, 3))
  f = lambda x, z: x + jnp.sum(jnp.real(z)).astype(x.dtype)
  want = np.sum(z.real.astype(np.float64))
  with config._override("jax_enable_x64", True), flags.override(tiered_compilation=False), \
       config._override("ember_check_compiled", True):
    got = np.asarray(ember.jit(f)(jnp.asarray(x), jnp.asarray(z)))
  assert got.dtype == np.float64
  np.testing.assert_allclose(got, np.full((4, 1, 3), want), rtol=1e-6)


def test_checked_mode_still_catches_a_float64_difference():
  """A module of float64 values only keeps float64's tolerance."""
  from ember._src.driver import check_compiled
  with config._override("jax_enable_x64", True):
    comp = ember.jit(lambda x: x * 2.0).lower(np.ones(3)).compile()._computation
  ok = np.full(3, 2.0)
  check_compiled.check_against_reference(comp, [np.ones(3)], [ok])
  with pytest.raises(AssertionError, match="differs from the reference"):
    check_compiled.check_against_reference(comp, [np.ones(3)], [ok + 1e-9])


# fuzz seed 20893 (x64): when checked mode found a difference, looking for the first differing
# instruction compared a tuple-valued one (a while loop's (int32[], f32[3]) carry) through
# np.asarray and raised ValueError ("inhomogeneous shape") instead of naming the instruction.
def test_first_differing_instruction_compares_tuple_values():
  from ember._src.driver import check_compiled
  from ember._src.base import flags
  f = lambda x: lax.while_loop(lambda c: c[0] < 2, lambda c: (c[0] + 1, c[1] + 1), (0, x))[1] * 2
  x = np.arange(3.0, dtype=np.float32)
  with flags.override(tiered_compilation=False):
    comp = ember.jit(f).lower(x).compile()._computation
  assert "while" in [i.opcode for i in comp.module.entry.instrs]
  assert check_compiled._first_differing_instruction(comp, [x]) is None
  assert not check_compiled._values_close((np.int32(2), x), (np.int32(2), x + 1), 1e-5)
  assert check_compiled._values_close((np.int32(2), x), (np.int32(2), x), 1e-5)


# fuzz seed 106365 (x64, 5,000-program campaign): checked mode compared complex values as
# complex numbers, and NumPy's isclose calls -inf-24.6329998j and the same value with an
# imaginary part one rounding away "not close" (an infinite value must be equal): a false
# AssertionError. Components are compared one by one now.
def test_checked_mode_compares_complex_components():
  from ember._src.driver import check_compiled
  z = np.array([complex(-np.inf, -24.6329998), complex(1.0, np.inf)])
  near = np.array([complex(-np.inf, -24.6329998 * (1 + 1e-15)), complex(1.0 + 1e-15, np.inf)])
  assert check_compiled._close(z, near)
  assert not check_compiled._close(z, np.array([complex(np.inf, -24.6329998), complex(1.0, np.inf)]))
  assert not check_compiled._close(z, np.array([complex(-np.inf, -24.0), complex(1.0, np.inf)]))
  x = np.array([-np.inf, 1.0])
  y = np.array([complex(0.5, -1.0), complex(0.25, 2.0)])
  f = lambda x, y: (x.astype(jnp.complex128) + jnp.cumsum(y) * 3.1).astype(jnp.complex128)
  with config._override("jax_enable_x64", True), config._override("ember_check_compiled", True):
    got = np.asarray(ember.jit(f)(x, y))
  np.testing.assert_allclose(got.imag, (np.cumsum(y) * 3.1).imag, rtol=1e-15)
  assert got.real[0] == -np.inf


@pytest.mark.parametrize("k", [8, 4096])
def test_checked_mode_tolerance_of_a_dot_grows_with_its_k(k):
  """A K-term float32 dot may differ from the evaluator's order by ~K eps (2.1e-5 for K =
  2051 on AVX2), and no more: a 1e-3 relative error is still caught at K = 4096 (K eps =
  4.9e-4), and a 2e-5 one at K = 8, where float32's 1e-5 holds."""
  from ember._src.driver import check_compiled
  a, b = np.full((2, k), 1 / k, np.float32), np.ones((k, 3), np.float32)
  comp = ember.jit(lambda a, b: a @ b).lower(a, b).compile()._computation
  ref = np.ones((2, 3), np.float32)
  check_compiled.check_against_reference(comp, [a, b], [ref * (1 + 2e-4 * (k > 8))])
  with pytest.raises(AssertionError, match="differs from the reference"):
    check_compiled.check_against_reference(comp, [a, b],
                                           [ref * (1 + (1e-3 if k > 8 else 2e-5))])
