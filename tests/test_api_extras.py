"""jax.flatten_util.ravel_pytree, jax.test_util.check_grads, jax.typing, jax.jacobian."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.flatten_util import ravel_pytree
from ember.test_util import check_grads

TREE = {"w": np.arange(6, dtype=np.float32).reshape(2, 3) / 7,
        "b": (np.array([1, -2, 3], np.int32), np.float32(2.5))}


def _expected_flat(tree):
  leaves = [np.asarray(x) for x in ember.tree_util.tree_leaves(tree)]
  return np.concatenate([x.astype(np.float64).ravel() for x in leaves])


@pytest.mark.parametrize("jit", [False, True])
def test_ravel_pytree_concatenates_leaves_and_unravels_back(jit):
  ravel = (lambda t: ravel_pytree(t)[0])
  flat = (ember.jit(ravel) if jit else ravel)(TREE)
  assert flat.dtype == np.float32 and flat.shape == (10,)   # int32 + float32 -> float32
  np.testing.assert_allclose(np.asarray(flat, np.float64), _expected_flat(TREE), rtol=1e-6)
  _, unravel = ravel_pytree(TREE)
  back = (ember.jit(unravel) if jit else unravel)(flat)
  assert ember.tree_util.tree_structure(back) == ember.tree_util.tree_structure(TREE)
  for got, want in zip(ember.tree_util.tree_leaves(back), ember.tree_util.tree_leaves(TREE)):
    assert got.dtype == np.asarray(want).dtype and got.shape == np.shape(want)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_ravel_pytree_of_no_leaves_is_an_empty_float32_vector():
  flat, unravel = ravel_pytree({"a": (), "b": []})
  assert flat.shape == (0,) and flat.dtype == np.float32
  assert unravel(flat) == {"a": (), "b": []}


def test_unravel_rejects_the_wrong_shape_and_dtype():
  flat, unravel = ravel_pytree(TREE)
  with pytest.raises(ValueError, match=r"expected an array of shape \(10,\)"):
    unravel(jnp.zeros(9, np.float32))
  with pytest.raises(TypeError, match="expected an array of dtype float32"):
    unravel(jnp.zeros(10, np.int32))


def test_ravel_pytree_composes_with_grad():
  # the optimizer pattern: a loss of the flat parameter vector
  flat, unravel = ravel_pytree({"a": np.float32(1.5), "b": np.array([1., 2.], np.float32)})
  loss = lambda v: jnp.sum(unravel(v)["b"] ** 2) + unravel(v)["a"] ** 3   # noqa: E731
  np.testing.assert_allclose(np.asarray(ember.grad(loss)(flat)), [3 * 1.5 ** 2, 2., 4.],
                             rtol=1e-6)


@pytest.mark.parametrize("order", [1, 2])
def test_check_grads_accepts_correct_derivatives(order):
  x = np.array([[0.3, -0.2], [0.5, 0.1], [-0.4, 0.7]], np.float32)
  check_grads(lambda a: jnp.tanh(a @ a.T), (x,), order=order)
  check_grads(lambda a, b: jnp.sin(a) * b, (np.float32(0.3), np.float32(1.2)), order=order)


@pytest.mark.parametrize("modes", [["fwd"], ["rev"]])
def test_check_grads_catches_a_wrong_derivative(modes):
  wrong = ember.custom_jvp(jnp.sin)
  wrong.defjvp(lambda p, t: (jnp.sin(p[0]), 2.0 * t[0]))   # the true tangent is cos(x) t
  with pytest.raises(AssertionError, match="JVP|VJP"):
    check_grads(wrong, (np.float32(1.0),), order=1, modes=modes)


def test_check_grads_rejects_an_unknown_mode():
  with pytest.raises(ValueError, match="modes"):
    check_grads(jnp.sin, (1.0,), order=1, modes=["sideways"])


def test_typing_names_and_jacobian():
  from ember.typing import ArrayLike, DTypeLike
  assert ember.Array in ArrayLike.__args__ and np.ndarray in ArrayLike.__args__
  assert np.dtype in DTypeLike.__args__
  x = jnp.arange(3.0)
  np.testing.assert_array_equal(np.asarray(ember.jacobian(lambda v: v ** 2)(x)),
                                np.diag(2 * np.arange(3.0)))


def test_device_is_the_devices_base_class():
  d = ember.devices()[0]
  assert isinstance(d, ember.Device) and d.platform == "cpu" and d.id == 0
  assert all(isinstance(x, ember.Device) for x in jnp.ones(2).devices())


def test_register_pytree_with_keys_class_gives_key_paths():
  @ember.tree_util.register_pytree_with_keys_class
  class Pair:
    def __init__(self, a, b):
      self.a, self.b = a, b

    def tree_flatten_with_keys(self):
      return ((ember.tree_util.GetAttrKey("a"), self.a),
              (ember.tree_util.GetAttrKey("b"), self.b)), None

    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children)

  p = Pair(np.float32(1.0), np.arange(2, dtype=np.float32))
  paths = [ember.tree_util.keystr(k) for k, _ in ember.tree_util.tree_flatten_with_path(p)[0]]
  assert paths == [".a", ".b"]
  doubled = ember.jit(lambda q: ember.tree_util.tree_map(lambda x: 2 * x, q))(p)
  assert isinstance(doubled, Pair)
  np.testing.assert_array_equal(np.asarray(doubled.b), [0.0, 2.0])


def test_check_grads_draws_directions_as_jax():
  # JAX 0.12's check_jvp / check_vjp: a fresh np.random.RandomState(0) per check, randn per
  # leaf in the leaf's dtype; check_vjp draws the input direction, then the cotangent
  from ember.test_util import check_jvp, check_vjp
  x = np.linspace(-1, 1, 4).astype(np.float32)
  y = np.float32(2.0)
  seen = {}

  def f(a, b):
    return a * b

  def f_jvp(p, t):
    seen["t"] = t
    return ember.jvp(f, p, t)

  check_jvp(f, f_jvp, (x, y))
  rs = np.random.RandomState(0)
  np.testing.assert_array_equal(seen["t"][0], rs.randn(4).astype(np.float32))
  np.testing.assert_array_equal(seen["t"][1], np.float32(rs.randn()))

  def f_vjp(*p):
    out, pullback = ember.vjp(f, *p)
    def pb(ct):
      seen["ct"] = ct
      return pullback(ct)
    return out, pb

  check_vjp(f, f_vjp, (x, y))
  rs = np.random.RandomState(0)
  rs.randn(4), rs.randn()
  np.testing.assert_array_equal(seen["ct"], rs.randn(4).astype(np.float32))
  # the modes JAX has, "lin" included; a wrong derivative still fails
  ember.test_util.check_grads(lambda a: a * 3.0, (1.5,), order=2, modes=("fwd", "rev", "lin"))
  with pytest.raises(AssertionError):
    ember.test_util.check_grads(
        lambda a: ember.numpy.sin(a) + ember.lax.stop_gradient(a), (x,), order=1)
