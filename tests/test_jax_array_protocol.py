"""Objects that stand for an array through `__jax_array__` (flax's Variables, which also
forward attribute reads, such as `aval`, to their value) in jnp functions and operators,
eagerly and under jit. Expected values: JAX 0.12.1 on the same code (there, a pytree like
flax's Variable is flattened by the jitted jnp functions; ember reads `__jax_array__`).
Before the fix, under jit such an object was staged as a constant that held the trace's
tracer: the jaxpr read a captured constant instead of the argument, and the call raised
TracerArrayConversionError."""

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax, tree_util


@tree_util.register_pytree_node_class
class Boxed:
  """A flax Variable in miniature: a pytree with `__jax_array__` that forwards attributes."""

  def __init__(self, v):
    self.v = v

  def __jax_array__(self):
    return self.v

  def __getattr__(self, name):
    return getattr(self.__dict__["v"], name)

  def tree_flatten(self):
    return (self.v,), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)


X, Y = jnp.ones(3), jnp.arange(3.0)

# name -> (function of x and y, JAX 0.12.1's result for X, Y, eager and under jit)
CASES = {
    "operator": (lambda x, y: x * Boxed(y), [0.0, 1.0, 2.0]),
    "reflected_operator": (lambda x, y: Boxed(y) - x, [-1.0, 0.0, 1.0]),
    "multiply": (lambda x, y: jnp.multiply(x, Boxed(y)), [0.0, 1.0, 2.0]),
    "sin": (lambda x, y: jnp.sin(Boxed(y)), [0.0, 0.8414709568023682, 0.9092974066734314]),
    "negative": (lambda x, y: jnp.negative(Boxed(y)), [-0.0, -1.0, -2.0]),
    "sum": (lambda x, y: jnp.sum(Boxed(y)), [3.0]),
    "reshape": (lambda x, y: jnp.reshape(Boxed(y), (3, 1)), [0.0, 1.0, 2.0]),
    "concatenate": (lambda x, y: jnp.concatenate([x, Boxed(y)]),
                    [1.0, 1.0, 1.0, 0.0, 1.0, 2.0]),
    "where": (lambda x, y: jnp.where(x > 0, Boxed(y), x), [0.0, 1.0, 2.0]),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("jitted", [False, True], ids=["eager", "jit"])
def test_jnp_reads_the_array_an_object_stands_for(name, jitted):
  fn, expected = CASES[name]
  f = ember.jit(fn) if jitted else fn
  np.testing.assert_allclose(np.asarray(f(X, Y)).ravel(), expected, rtol=1e-6)


def test_the_traced_function_reads_the_argument_not_a_constant():
  # JAX 0.12.1: { lambda ; a:f32[3] b:f32[3]. let c:f32[3] = mul a b in (c,) }
  jaxpr = ember.make_jaxpr(lambda x, y: jnp.multiply(x, Boxed(y)))(X, Y)
  assert str(jaxpr) == "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = mul a b in (c,) }"
  jaxpr = ember.make_jaxpr(lambda x, y: x * Boxed(y))(X, Y)
  assert not jaxpr.jaxpr.constvars


def test_a_lax_primitive_refuses_the_object_under_jit():
  # JAX 0.12.1 raises this ValueError (eagerly too; ember's eager lax reads the value)
  with pytest.raises(ValueError, match=r"Triggering __jax_array__\(\) during abstractif"):
    ember.jit(lambda x, y: lax.mul(x, Boxed(y)))(X, Y)
  with pytest.raises(ValueError, match="register your object as a pytree"):
    ember.jit(lambda y: lax.sin(Boxed(y)))(Y)
