"""pmap on ember's one device: the leading axis (size 1) maps with its name bound for
collectives, compiled once per signature; in_axes/out_axes/static_broadcasted_argnums/
donate_argnums as JAX's; an axis longer than the devices is JAX's error. Values as real
JAX 0.12 gives them on one CPU device."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

f32 = np.float32
X = np.array([[0.5, -1.0, 2.0]], f32)


def test_pmap_maps_the_leading_axis_with_collectives():
  out = ember.pmap(lambda x: x - lax.psum(x, "i"), axis_name="i")(X)
  assert isinstance(out, ember.Array) and out.shape == (1, 3)
  np.testing.assert_array_equal(out, np.zeros((1, 3), f32))
  np.testing.assert_array_equal(
      ember.pmap(lambda x: lax.axis_index("i"), axis_name="i")(X), np.array([0], np.int32))
  np.testing.assert_array_equal(
      ember.jit(ember.pmap(lambda x: lax.pmean(x, "i"), axis_name="i"))(X), X)
  np.testing.assert_allclose(ember.pmap(lambda x: x.sum())(X), [1.5])


def test_pmap_axes_static_and_donated_arguments():
  np.testing.assert_array_equal(
      ember.pmap(lambda x, y: x * y, in_axes=(0, None))(X, f32(2.0)), X * 2)
  assert ember.pmap(lambda x: x, out_axes=1)(X).shape == (3, 1)
  scale = ember.pmap(lambda x, n: x * n, static_broadcasted_argnums=(1,))
  np.testing.assert_array_equal(scale(X, 3), X * 3)
  np.testing.assert_array_equal(scale(X, 4), X * 4)   # a new static value: a new compile
  # a tuple in_axes names every positional argument, the static one too (JAX)
  np.testing.assert_array_equal(
      ember.pmap(lambda n, x: x + n, in_axes=(None, 0), static_broadcasted_argnums=0)(1, X),
      X + 1)
  np.testing.assert_array_equal(ember.pmap(lambda x: x * 2, donate_argnums=0)(jnp.asarray(X)),
                                X * 2)
  np.testing.assert_array_equal(ember.pmap(lambda x, k: x + k)(X, k=X), X + X)  # kwargs map


def test_pmap_composes_with_grad_and_vmap():
  g = ember.grad(lambda x: ember.pmap(jnp.sin)(x).sum())(X)
  np.testing.assert_allclose(g, np.cos(X), rtol=1e-6)
  assert ember.vmap(ember.pmap(lambda x: x * 2))(np.ones((3, 1, 2), f32)).shape == (3, 1, 2)


def test_pmap_errors():
  with pytest.raises(ValueError, match=r"compiling computation `pmap_<lambda>` that requires 2 "
                     r"logical devices, but only 1 XLA devices are available \(num_replicas=2\)"):
    ember.pmap(lambda x: x)(np.ones((2, 3), f32))
  with pytest.raises(ValueError, match="requires 2 logical devices"):
    ember.pmap(lambda x: x, in_axes=None, axis_size=2)(f32(1.0))
  with pytest.raises(ValueError, match="pmap requires at least one argument with a mapped axis"):
    ember.pmap(lambda x: x, in_axes=None)(f32(1.0))
  with pytest.raises(ValueError, match="rank should be at least 1, but is only 0"):
    ember.pmap(lambda x: x)(f32(1.0))
  with pytest.raises(TypeError, match="pmap expects a callable"):
    ember.pmap(3)


# --- shard_map on a one-device mesh (values as JAX 0.12 gives them on one CPU device) -----

from ember.sharding import AxisType, Mesh, PartitionSpec as P  # noqa: E402

MESH = ember.make_mesh((1,), ("x",), (AxisType.Auto,))
XS = np.arange(8.0, dtype=f32).reshape(4, 2)
EAGER_AND_JIT = pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])


@EAGER_AND_JIT
def test_shard_map_runs_f_on_the_whole_array_with_axes_bound(wrap):
  def f(a):
    return lax.psum(a.sum(0), "x"), lax.axis_index("x") + jnp.zeros(1, jnp.int32)
  total, index = wrap(ember.shard_map(f, mesh=MESH, in_specs=P("x"),
                                      out_specs=(P(), P("x"))))(XS)
  np.testing.assert_array_equal(total, [12.0, 16.0])
  np.testing.assert_array_equal(index, [0])
  assert index.dtype == np.int32
  double = ember.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x"), out_specs=P("x"))
  np.testing.assert_array_equal(wrap(double)(XS), 2 * XS)
  gathered = ember.shard_map(lambda a: lax.all_gather(a, "x"), mesh=MESH, in_specs=P(),
                             out_specs=P())
  assert wrap(gathered)(XS).shape == (1, 4, 2)


def test_shard_map_forms():
  @ember.shard_map(mesh=MESH, in_specs=P("x"), out_specs=P("x"))   # a decorator
  def h(a):
    return a + lax.pmean(a, "x")
  np.testing.assert_array_equal(h(XS), 2 * XS)
  with ember.set_mesh(MESH):   # the mesh in context
    np.testing.assert_array_equal(
        ember.shard_map(lambda a: a * 2, in_specs=P("x"), out_specs=P("x"))(XS), 2 * XS)
  two = ember.shard_map(lambda a, b: a * b, mesh=MESH, in_specs=(P("x"), P()),
                        out_specs=P("x"), check_vma=False)
  np.testing.assert_array_equal(two(XS, 2.0), 2 * XS)
  mesh2 = ember.make_mesh((1, 1), ("a", "b"), (AxisType.Auto,) * 2)
  both = ember.shard_map(lambda a: lax.psum(a, ("a", "b")), mesh=mesh2, in_specs=P("a", "b"),
                         out_specs=P("a", "b"))
  np.testing.assert_array_equal(both(XS), XS)
  only_a = ember.shard_map(lambda a: lax.axis_size("a"), mesh=mesh2, in_specs=P("a"),
                           out_specs=P(), axis_names={"a"})
  assert int(only_a(XS)) == 1
  from ember.experimental.shard_map import shard_map as old_shard_map
  np.testing.assert_array_equal(old_shard_map(lambda a: a * 2, MESH, P("x"), P("x"))(XS),
                                2 * XS)


def test_shard_map_under_grad_and_vmap():
  def loss(x):
    return ember.shard_map(lambda a: lax.psum((a ** 2).sum(), "x"), mesh=MESH,
                           in_specs=P("x"), out_specs=P())(x)
  np.testing.assert_array_equal(ember.grad(loss)(XS), 2 * XS)
  np.testing.assert_array_equal(ember.jit(ember.grad(loss))(XS), 2 * XS)
  double = ember.shard_map(lambda a: a * 2, mesh=MESH, in_specs=P("x"), out_specs=P("x"))
  np.testing.assert_array_equal(ember.vmap(double)(XS), 2 * XS)


def test_shard_map_errors():
  double = lambda a: a * 2  # noqa: E731
  with pytest.raises(ValueError, match=r"The context mesh cannot be empty. Use "
                     r"`jax.set_mesh\(mesh\)`"):
    ember.shard_map(double, in_specs=P("x"), out_specs=P("x"))(XS)
  with pytest.raises(ValueError, match=r"in_specs argument must refer to an axis marked as "
                     r"manual \(\{'x'\}\).*refers to 'y'"):
    ember.shard_map(double, mesh=MESH, in_specs=P("y"), out_specs=P("x"))(XS)
  with pytest.raises(ValueError, match="shard_map in_specs specification must be a tree prefix"):
    ember.shard_map(double, mesh=MESH, in_specs=(P("x"), P()), out_specs=P("x"))(XS)
  with pytest.raises(ValueError, match=r"out_specs P\('x', None, None\) has 3 entries, more "
                     r"than the rank of its value of shape \(4, 2\)"):
    ember.shard_map(double, mesh=MESH, in_specs=P(), out_specs=P("x", None, None))(XS)
  with pytest.raises(TypeError, match="keyword arguments"):
    ember.shard_map(double, mesh=MESH, in_specs=P(), out_specs=P())(a=XS)
  with pytest.raises(TypeError, match="requires a callable"):
    ember.shard_map(3, mesh=MESH, in_specs=P(), out_specs=P())


class _OtherDevice(ember._src.core.sharding.Device):
  def __init__(self, id):
    self.id = id


def test_shard_map_over_devices_of_another_process_is_an_error():
  mesh = Mesh(np.array([_OtherDevice(0), _OtherDevice(1)], dtype=object), ("x",))
  with pytest.raises(ValueError, match=r"shard_map over Mesh.*not devices of this process"):
    ember.shard_map(lambda a: a, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(XS)


def test_pmap_lower_compile_and_call():
  """JAX 0.12.1's pmap(f).lower(*args): the whole mapped axis as one program; its Compiled
  takes the dynamic arguments only (static_broadcasted_argnums left out) and checks them."""
  f = ember.pmap(lambda x, y: 2 * x + y, in_axes=(0, None))
  x = jnp.array([3])
  lowered = f.lower(x, 4)
  text = lowered.as_text()
  assert "func.func public @main(%arg0: tensor<1xi32>" in text and "tensor<i32>" in text
  compiled = lowered.compile()
  out = compiled(x, 4)
  assert isinstance(out, ember.Array) and out.dtype == np.int32
  np.testing.assert_array_equal(out, [10])
  np.testing.assert_array_equal(compiled(jnp.array([5]), 1), [11])
  with pytest.raises(TypeError):            # compiled for int32[1]
    compiled(jnp.array([3, 4]), 4)
  g = ember.pmap(lambda s, x: x * s, static_broadcasted_argnums=0)
  cg = g.lower(3.0, jnp.asarray(X)).compile()
  np.testing.assert_array_equal(cg(jnp.asarray(X)), X * 3)
  with pytest.raises(TypeError):   # the static one is left out
    cg(3.0, jnp.asarray(X))
  with pytest.raises(ValueError):          # more than the devices (JAX: a ValueError too)
    f.lower(jnp.array([3, 4]), 4)
