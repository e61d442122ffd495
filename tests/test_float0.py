"""float0: the tangents of integers (JAX 0.12's behaviour, recorded from it): grads and
vjps of integer inputs, float0 values into and out of jitted functions, and the error an
operation on one raises."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import dtypes, lax

F0 = dtypes.float0


def _is_f0(x, shape=()):
  return type(x) is np.ndarray and x.dtype == F0 and x.shape == shape


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_grad_of_integer_inputs_is_float0_numpy(wrap):
  g = wrap(lambda x, i: ember.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(x, i))
  gx, gi = g(1.0, 2)
  assert float(gx) == 2.0 and _is_f0(gi)
  ct = wrap(lambda: ember.vjp(lambda x, i: x * i, 1.0, 2)[1](1.0))()
  assert float(ct[0]) == 2.0 and _is_f0(ct[1])


def test_float0_into_and_out_of_jit():
  z = np.zeros((2,), F0)
  f = ember.jit(lambda a, b: (a * 2, b))
  a, b = f(1.0, z)
  assert float(a) == 2.0 and _is_f0(b, (2,))
  assert _is_f0(ember.jit(lambda: np.zeros((3,), F0))(), (3,))
  # as JAX lowers float0: i1 tensors
  text = f.lower(1.0, z).as_text()
  assert "%arg1: tensor<2xi1>" in text and "return %0, %arg1 : tensor<f32>, tensor<2xi1>" in text
  assert "pred[2]" in f.lower(1.0, z).compile().as_text()
  assert str(ember.make_jaxpr(lambda b: b)(z)) == "{ lambda ; a:float0[2]. let  in (a,) }"
  s = ember.eval_shape(lambda b: b, z)
  assert s.shape == (2,) and s.dtype == F0


@pytest.mark.parametrize("wrap", [lambda f: f, ember.jit])
def test_float0_broadcast_compiles_no_kernel(wrap):
  """A broadcast of a float0 scalar (equinox's linearized checkpointed loop): no bytes to
  write, so no kernel (one that loads a float0 element cannot be compiled)."""
  z = np.zeros((), F0)
  b, y = wrap(lambda z, x: (lax.broadcast_in_dim(z, (2, 3), ()), x * 2))(z, jnp.arange(3.0))
  assert _is_f0(np.asarray(b), (2, 3))
  np.testing.assert_array_equal(np.asarray(y), [0.0, 2.0, 4.0])


def test_scan_vjp_with_an_integer_carry_under_jit():
  def run(c, xs):
    return lax.scan(lambda c, x: (c + 1, x * 2.0), c, xs)
  ct = ember.jit(lambda xs: ember.vjp(run, 0, xs)[1]((1, jnp.ones(3))))(jnp.ones(3))
  assert _is_f0(ct[0])
  np.testing.assert_array_equal(ct[1], [2.0, 2.0, 2.0])


def test_float0_creation_is_numpy():
  z = np.zeros((2,), F0)
  for out in [jnp.zeros(2, F0), jnp.ones(2, F0), jnp.zeros_like(z),
              jnp.zeros_like(jnp.ones(2), dtype=F0), jnp.asarray(z), jnp.array(z)]:
    assert _is_f0(out, (2,))


@pytest.mark.parametrize("op", [lambda a: jnp.sin(a), lambda a: jnp.multiply(a, 2),
                                lambda a: ember.jit(lambda b: b + 1)(a)])
def test_operations_on_float0_raise_as_jax(op):
  with pytest.raises(TypeError, match=r"Called \w+ with a float0 array. float0s do not support "
                                      "any operations by design"):
    op(np.zeros((2,), F0))


def test_custom_vjp_bwd_output_is_a_prefix_of_the_arguments():
  # JAX: a cotangent leaf stands for each leaf of the argument subtree under it (none for a
  # None argument); integer arguments' cotangents are float0 zeros
  @ember.custom_vjp
  def f(x, n, i):
    return x * 2
  f.defvjp(lambda x, n, i: (x * 2, None), lambda r, g: (g * 2, jnp.zeros(()), jnp.zeros(())))
  gx, gi = ember.grad(lambda x, i: f(x, None, i), argnums=(0, 1), allow_int=True)(1.0, 3)
  assert float(gx) == 2.0 and _is_f0(gi)
  with pytest.raises(TypeError, match="Custom VJP bwd rule must produce an output with the "
                                      "same container"):
    f.defvjp(lambda x, n, i: (x * 2, None), lambda r, g: (g, (1.0, 2.0), 1.0))
    ember.grad(lambda x: f(x, (1.0, 2.0, 3.0), 1))(1.0)
