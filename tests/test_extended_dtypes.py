"""User-defined extended dtypes: a `jax.dtypes.ExtendedDType` with `_rules` (as flax's fp8 meta
dtype), stored as its physical element and converted, accumulated and filled by its rules.

The dtype here is the tests' own: `maxgrad32`, float32 values whose cotangents accumulate by
max (its rules' `add`) from -inf (its rules' `zero`). Expected values and messages are what
real JAX 0.12.1 gives for the same snippets (run in a JAX 0.12.1 environment); where JAX
itself fails (noted), ember's value is the one JAX gives under jit.
"""
import dataclasses

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.core.earray import EArray

f32 = np.dtype(np.float32)


class MaxRules:
  """The rules of `maxgrad<bits>`: float storage, max accumulation, -inf zero."""

  @staticmethod
  def physical_element_aval(dt):
    return ember.core.ShapedArray((), dt.float_dtype)

  @staticmethod
  def convert_from(dt, other):
    return other == dt.float_dtype

  @staticmethod
  def convert_to(other, dt):
    return other == dt.float_dtype

  @staticmethod
  def add(dt, x, y):
    as_float = lambda v: lax.convert_element_type(v, dt.float_dtype)
    return lax.convert_element_type(lax.max(as_float(x), as_float(y)), dt)

  @staticmethod
  def zero(dt):
    return lax.convert_element_type(np.array(-np.inf, dt.float_dtype), dt)

  @staticmethod
  def tangent_dtype(dt):
    return dt

  @staticmethod
  def full(shape, fill_value, dt):
    fill = lax.convert_element_type(fill_value, dt.float_dtype)
    return lax.convert_element_type(lax.full(shape, fill, dt.float_dtype), dt)


class maxgrad(ember.dtypes.extended):  # noqa: N801 - the scalar type, as flax spells its own
  pass


@dataclasses.dataclass(frozen=True)
class MaxDType(ember.dtypes.ExtendedDType):
  float_dtype: np.dtype
  _rules: type = MaxRules
  type: type = maxgrad

  def __repr__(self):
    return f"maxgrad{np.dtype(self.float_dtype).itemsize * 8}"

  name = property(__repr__)


md = MaxDType(f32)
X = np.array([1., 2., 3.], np.float32)


@ember.custom_vjp
def scaled_add(c, e, w):
  """c + float(e) * w; its cotangent for e is ct * w as a maxgrad (as flax's in_qdq)."""
  return c + lax.convert_element_type(e, f32) * w


def _scaled_add_fwd(c, e, w):
  return scaled_add(c, e, w), w


def _scaled_add_bwd(w, ct):
  return ct, lax.convert_element_type(ct * w, md), jnp.zeros_like(w)


scaled_add.defvjp(_scaled_add_fwd, _scaled_add_bwd)


def scan_sum(x, ws):
  """e = x as maxgrad, used once per scan step: its cotangents accumulate by max."""
  e = lax.convert_element_type(x, md)
  c, _ = lax.scan(lambda c, w: (scaled_add(c, e, w), None), jnp.zeros(3, f32), ws)
  return c.sum()


def fan_out(x):
  """e used twice: its two cotangents (2 and 5 per element) accumulate by max."""
  e = lax.convert_element_type(x, md)
  return (scaled_add(jnp.zeros(3, f32), e, 2.) + scaled_add(jnp.zeros(3, f32), e, 5.)).sum()


jit_or_not = pytest.mark.parametrize("use_jit", [False, True], ids=["eager", "jit"])


def _maybe_jit(f, use_jit):
  return ember.jit(f) if use_jit else f


# --- values and conversions -------------------------------------------------------------

@jit_or_not
def test_convert_to_gives_an_earray_of_the_dtype(use_jit):
  e = _maybe_jit(lambda x: lax.convert_element_type(x, md), use_jit)(X)
  # JAX: EArray, dtype maxgrad32, shape (3,), repr "EArray([1., 2., 3.], dtype=float32)"
  assert type(e) is EArray and e.dtype == md and e.shape == (3,) and e.ndim == 1
  assert repr(e) == "EArray([1., 2., 3.], dtype=float32)"
  assert isinstance(e, ember.Array)
  back = lax.convert_element_type(e, f32)
  assert back.dtype == f32
  np.testing.assert_array_equal(back, X)


def test_earray_is_a_jit_argument():
  e = lax.convert_element_type(X, md)
  double, ident = ember.jit(lambda e: lax.convert_element_type(e, f32) * 2), ember.jit(lambda e: e)
  for _ in range(4):   # the first call compiles, the others are the signature's cache hits
    np.testing.assert_array_equal(double(e), [2., 4., 6.])   # JAX: [2. 4. 6.]
    same = ident(e)
    assert type(same) is EArray and same.dtype == md
    np.testing.assert_array_equal(lax.convert_element_type(same, f32), X)


def test_earray_captured_by_jit():
  # (JAX 0.12.1 raises NotImplementedError here: its EArray has no nbytes)
  e = lax.convert_element_type(X, md)
  f = ember.jit(lambda y: lax.convert_element_type(e, f32) + y)
  for _ in range(3):
    np.testing.assert_array_equal(f(X), [2., 4., 6.])


def test_jaxpr_has_to_and_from_edtype():
  jaxpr = ember.make_jaxpr(
      lambda x: lax.convert_element_type(lax.convert_element_type(x, md), f32))(X)
  assert str(jaxpr) == ("{ lambda ; a:f32[3]. let\n"
                        "    b:maxgrad32[3] = to_edtype[edtype=maxgrad32] a\n"
                        "    c:f32[3] = from_edtype[dtype=float32] b\n"
                        "  in (c,) }")


@jit_or_not
def test_full_and_full_like_use_the_rules(use_jit):
  full = _maybe_jit(lambda: lax.convert_element_type(lax.full((2,), 5., md), f32), use_jit)()
  np.testing.assert_array_equal(full, [5., 5.])        # JAX: [5. 5.]
  e = lax.convert_element_type(X, md)
  like = lax.full_like(e, 7.)
  assert type(like) is EArray and like.dtype == md
  np.testing.assert_array_equal(lax.convert_element_type(like, f32), [7., 7., 7.])
  zeros = jnp.zeros((2,), md)                          # JAX: EArray([0., 0.], dtype=float32)
  assert type(zeros) is EArray and zeros.dtype == md
  np.testing.assert_array_equal(lax.convert_element_type(zeros, f32), [0., 0.])


def test_structural_ops_and_vmap_keep_the_dtype():
  e = lax.convert_element_type(X, md)
  r = lax.reshape(e, (3, 1))
  assert type(r) is EArray and r.dtype == md and r.shape == (3, 1)
  out = ember.vmap(lambda v: lax.convert_element_type(lax.convert_element_type(v, md), f32)
                   * 2)(X)
  np.testing.assert_array_equal(out, [2., 4., 6.])


# --- errors ---------------------------------------------------------------------------------

@jit_or_not
def test_conversions_the_rules_forbid(use_jit):
  to_md = _maybe_jit(lambda x: lax.convert_element_type(x, md), use_jit)
  with pytest.raises(ValueError, match="Cannot convert_element_type from int32 to maxgrad32"):
    to_md(np.array([1, 2], np.int32))
  e = lax.convert_element_type(X, md)
  with pytest.raises(ValueError, match="Cannot convert_element_type from maxgrad32 to int32"):
    _maybe_jit(lambda e: lax.convert_element_type(e, np.int32), use_jit)(e)
  # allowed by the rules of maxgrad16 (float16) only from float16
  with pytest.raises(ValueError, match="from float32 to maxgrad16"):
    lax.convert_element_type(X, MaxDType(np.dtype(np.float16)))


def test_no_direct_conversion_between_extended_dtypes():
  e = lax.convert_element_type(X, md)
  with pytest.raises(ValueError, match="cannot directly convert between extended dtypes: "
                                       "from maxgrad32 to maxgrad16"):
    lax.convert_element_type(e, MaxDType(np.dtype(np.float16)))


@pytest.mark.parametrize("op, message", [
    (lambda e: lax.add(e, e), "add does not accept dtype maxgrad32"),
    (lambda e: lax.sin(e), "sin does not accept dtype maxgrad32")])
def test_ops_without_a_rule_reject_the_dtype(op, message):
  e = lax.convert_element_type(X, md)   # JAX: TypeError "add does not accept dtype maxgrad32 .."
  with pytest.raises(TypeError, match=message):
    op(e)
  with pytest.raises(TypeError, match=message):
    ember.jit(op)(e)


def test_typed_keys_convert_to_nothing():
  key = ember.random.key(0)
  # JAX: ValueError "Cannot convert_element_type from key<fry> to uint32"
  with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to uint32"):
    lax.convert_element_type(key, np.uint32)
  with pytest.raises(ValueError, match="from uint32 to key<fry>"):
    lax.convert_element_type(np.zeros(2, np.uint32), key.dtype)


# --- differentiation -----------------------------------------------------------------------

@jit_or_not
def test_scan_accumulates_cotangents_by_the_rules(use_jit):
  grad = _maybe_jit(ember.grad(scan_sum), use_jit)
  # JAX: [3. 3. 3.] (max of 1, 3, 2; a sum would give 6)
  np.testing.assert_array_equal(grad(X, np.array([1., 3., 2.], np.float32)), [3., 3., 3.])
  # JAX: [-1. -1. -1.]: the max starts from the rules' zero (-inf), not from 0
  np.testing.assert_array_equal(grad(X, np.array([-1., -3., -2.], np.float32)), [-1.] * 3)


@jit_or_not
def test_fan_out_accumulates_by_the_rules(use_jit):
  # JAX under jit: [5. 5. 5.] (eagerly JAX 0.12.1 raises KeyError: no adder for its EArray)
  np.testing.assert_array_equal(_maybe_jit(ember.grad(fan_out), use_jit)(X), [5., 5., 5.])


def test_tangents_are_of_the_rules_tangent_dtype():
  ws = np.array([-1., -3., -2.], np.float32)
  _, t = ember.jvp(lambda x: lax.convert_element_type(x, md), (X,), (ws,))
  assert type(t) is EArray and t.dtype == md                  # JAX: EArray maxgrad32
  np.testing.assert_array_equal(lax.convert_element_type(t, f32), ws)
  _, vjp = ember.vjp(lambda x: lax.convert_element_type(x, md), X)
  (ct,) = vjp(lax.convert_element_type(ws, md))
  np.testing.assert_array_equal(ct, ws)                       # JAX: [-1. -3. -2.]


# --- the stand-ins flax's rules use (jax._src.earray, jax._src.interpreters.pxla) ----------------

def test_global_result_handler_as_flax_builds_it():
  from ember._jax_src import core, earray
  from ember._jax_src.interpreters import pxla
  aval = core.ShapedArray((3,), md)
  phys_aval = core.physical_aval(aval)
  assert phys_aval == core.ShapedArray((3,), f32)
  sharding = ember.sharding.SingleDeviceSharding(ember.devices()[0])
  phys_handler = pxla.global_result_handlers[core.ShapedArray](phys_aval, sharding, True)
  out = earray.EArray(aval, phys_handler([jnp.asarray(X)]))
  assert type(out) is EArray and out.dtype == md
  np.testing.assert_array_equal(lax.convert_element_type(out, f32), X)
  with pytest.raises(TypeError, match="needs data of type f"):
    earray.EArray(aval, jnp.zeros(2, f32))
