"""Tracer misuse raises JAX's error classes, with messages that name the argument the
value came from and the fix."""
import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import errors


def test_bool_of_traced_value_seed_002():
  @jax.jit
  def value_branch(x, flag):
    if flag > 0.5:
      return jnp.sin(x)
    return jnp.cos(x)
  with pytest.raises(errors.TracerBoolConversionError) as e:
    value_branch(jnp.ones(3), 0.7)
  msg = str(e.value)
  assert msg.splitlines()[0] == "Attempted boolean conversion of traced array with shape bool[]."
  assert "tracing the function value_branch" in msg and "for jit" in msg
  assert "depends on the value of the argument flag" in msg
  assert "lax.cond" in msg and "static_argnums" in msg
  assert issubclass(errors.TracerBoolConversionError, errors.ConcretizationTypeError)
  assert issubclass(errors.ConcretizationTypeError, TypeError)


def test_if_in_make_jaxpr_and_while():
  def f(x):
    while x > 0:
      x = x - 1
    return x
  with pytest.raises(errors.TracerBoolConversionError, match="argument x"):
    jax.make_jaxpr(f)(3.0)


def test_int_of_tracer():
  with pytest.raises(errors.TracerIntegerConversionError) as e:
    jax.jit(lambda x, n: x * int(n))(1.0, 3)
  assert "argument n" in str(e.value) and "static_argnums" in str(e.value)


def test_range_over_tracer_uses_index():
  with pytest.raises(errors.TracerIntegerConversionError):
    jax.jit(lambda n: [i for i in range(n)])(3)


def test_numpy_conversion_of_tracer():
  with pytest.raises(errors.TracerArrayConversionError) as e:
    jax.jit(lambda x: np.asarray(x))(jnp.ones(2))
  msg = str(e.value)
  assert "__array__()" in msg and "float32[2]" in msg and "argument x" in msg


def test_float_of_tracer():
  with pytest.raises(errors.ConcretizationTypeError, match="`float`"):
    jax.jit(lambda x: float(x))(1.0)


def test_dependency_through_pytree_argument_is_named():
  def f(params, x):
    if params["w"].sum() > 0:
      return x
    return -x
  with pytest.raises(errors.TracerBoolConversionError, match=r"argument params\['w'\]"):
    jax.jit(f)({"w": jnp.ones(2), "b": jnp.ones(2)}, 1.0)


def test_traced_shape_raises_concretization_error():
  with pytest.raises(errors.ConcretizationTypeError) as e:
    jax.jit(lambda x, n: jnp.zeros(n))(1.0, 3)
  assert "static_argnums" in str(e.value) and "argument n" in str(e.value)


def test_leaked_tracer_is_reported():
  leaked = []
  @jax.jit
  def f(x):
    leaked.append(x)
    return x
  f(1.0)
  with pytest.raises(errors.UnexpectedTracerError, match="leaked tracer"):
    jnp.sin(leaked[0])


def test_tracer_is_unhashable_and_iterates_over_rows():
  def f(x):
    with pytest.raises(TypeError, match="unhashable"):
      hash(x)
    return [r for r in x][1]
  np.testing.assert_array_equal(jax.jit(f)(jnp.asarray(np.arange(6.0, dtype=np.float32).reshape(3, 2))),
                                [2.0, 3.0])


def test_unhashable_static_argument():
  with pytest.raises(TypeError, match="static argument 1.*unhashable"):
    jax.jit(lambda x, s: x, static_argnums=1)(1.0, [1, 2])


def test_eager_errors_name_operation_and_dtype():
  from ember import lax
  with pytest.raises(TypeError, match="sin does not accept dtype int32"):
    lax.sin(jnp.asarray(np.arange(3, dtype=np.int32)))
  with pytest.raises(TypeError, match="lax.add requires arguments to have the same dtypes"):
    lax.add(jnp.ones(3), jnp.asarray(np.arange(3, dtype=np.int32)))
  with pytest.raises(TypeError, match=r"incompatible shapes.*\(3,\).*\(4,\)"):
    lax.add(jnp.ones(3), jnp.ones(4))


def test_bad_config_option():
  # JAX 0.12: AttributeError('Unrecognized config option: jax_enable_x65')
  with pytest.raises(AttributeError, match=r"^Unrecognized config option: jax_enable_x65 "
                     r"\(did you mean 'jax_enable_x64'\?\)$"):
    jax.config.update("jax_enable_x65", True)
  with pytest.raises(AttributeError, match=r"^Unrecognized config option: no_such_thing$"):
    jax.config.update("no_such_thing", True)
