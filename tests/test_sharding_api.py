"""ember.sharding: Mesh, NamedSharding, PartitionSpec and SingleDeviceSharding behave as
JAX 0.12's (attributes, printing, equality, hashing, errors; values recorded from JAX 0.12 on
one CPU device). ember has one device, so every sharding places the whole array on it."""
import pickle
import typing

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.sharding import (AxisType, Mesh, NamedSharding, PartitionSpec, Sharding,
                            SingleDeviceSharding)

P = PartitionSpec
DEV = ember.devices()[0]


def test_public_names():
  assert ember.P is PartitionSpec and ember.NamedSharding is NamedSharding
  assert ember.sharding.Mesh is Mesh and callable(ember.make_mesh)
  assert list(AxisType) == [AxisType.Auto, AxisType.Explicit, AxisType.Manual]
  assert repr(AxisType.Auto) == "Auto"


def test_partition_spec():
  assert repr(P("x", None)) == "P('x', None)"
  assert repr(P("x")) == "P('x',)" and repr(P()) == "P()" and repr(P(None)) == "P(None,)"
  assert repr(P(("a", "b"))) == "P(('a', 'b'),)" and str(P("x", "y")) == "P('x', 'y')"
  assert P("x", None) == P("x", None) and hash(P("x", None)) == hash(P("x", None))
  assert P("x") != P("x", None)   # trailing Nones count, as in JAX 0.12
  assert P("x", None) != ("x", None) and not isinstance(P("x"), tuple)
  p = P("x", None)
  assert len(p) == 2 and p[0] == "x" and tuple(p) == ("x", None) and P(*"ab").index("b") == 1
  assert P("a") + P("b") == P("a", "b")
  assert P("x").unreduced == frozenset() and P("x").reduced == frozenset()
  assert repr(P.UNCONSTRAINED) == "UNCONSTRAINED"
  assert pickle.loads(pickle.dumps(P("x", ("a", "b")))) == P("x", ("a", "b"))
  with pytest.raises(TypeError, match="PartitionSpec entries must be"):
    P(3)


def test_make_mesh_and_mesh():
  m = ember.make_mesh((1,), ("x",))
  assert repr(m) == "Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Explicit,))"
  assert str(m) == "Mesh('x': 1, axis_types=(Explicit,))"
  assert dict(m.shape) == {"x": 1} and m.axis_names == ("x",) and m.size == 1
  assert m.axis_sizes == (1,) and m.shape_tuple == (("x", 1),) and not m.empty
  assert m.devices.shape == (1,) and m.devices[0] == DEV
  assert m.axis_types == (AxisType.Explicit,)
  m2 = Mesh(np.array(ember.devices()).reshape(1, 1), ("a", "b"))
  assert str(m2) == "Mesh('a': 1, 'b': 1, axis_types=(Auto, Auto))"
  assert m2 == Mesh(np.array(ember.devices()).reshape(1, 1), ("a", "b"))
  assert hash(m2) == hash(Mesh(np.array(ember.devices()).reshape(1, 1), ("a", "b")))
  assert m2 != Mesh(np.array(ember.devices()).reshape(1, 1), ("a", "c"))
  assert repr(Mesh(ember.devices(), "x")) == (
      "Mesh(axis_sizes=(1,), axis_names=('x',), axis_types=(Auto,))")
  auto = ember.make_mesh((1, 1), ("a", "b"), axis_types=(AxisType.Auto,) * 2)
  assert auto == m2
  with m:   # the older `with mesh:` form
    pass


def test_mesh_errors():
  with pytest.raises(ValueError, match=r"Number of devices 1 must be >= the product of "
                     r"mesh_shape \(2,\)"):
    ember.make_mesh((2,), ("x",))
  with pytest.raises(ValueError, match=r"devices.ndim == 1 and len\(axis_names\) == 2"):
    Mesh(np.array(ember.devices()), ("a", "b"))


def test_named_sharding():
  m = ember.make_mesh((1,), ("x",))
  ns = NamedSharding(m, P("x"))
  assert repr(ns) == str(ns) == ("NamedSharding(mesh=Mesh('x': 1, axis_types=(Explicit,)), "
                                 "spec=P('x',), memory_kind=device)")
  assert ns.mesh is m and ns.spec == P("x") and ns.memory_kind == "device"
  assert ns.device_set == {DEV} and ns.addressable_devices == {DEV} and ns.num_devices == 1
  assert ns.is_fully_replicated and ns.is_fully_addressable and isinstance(ns, Sharding)
  assert ns == NamedSharding(m, P("x")) and hash(ns) == hash(NamedSharding(m, P("x")))
  assert ns != NamedSharding(m, P("x", None))
  assert ns.shard_shape((4,)) == (4,)
  assert ns.devices_indices_map((4,)) == {DEV: (slice(None),)}
  assert ns.with_memory_kind("pinned_host").memory_kind == "pinned_host"


def test_named_sharding_errors():
  m = Mesh(np.array(ember.devices()).reshape(1, 1), ("a", "b"))
  with pytest.raises(ValueError, match=r"Resource axis: y of P\('y',\) is not found in mesh: "
                     r"\('a', 'b'\)."):
    NamedSharding(m, P("y"))
  with pytest.raises(ValueError, match=r"can map every mesh axis to at most one positional "
                     r"dimension, but P\('a', 'b', 'a'\) has duplicate entries for `a`"):
    NamedSharding(m, P("a", "b", "a"))
  with pytest.raises(TypeError, match=r"spec must be a PartitionSpec, got \('a',\): write "
                     r"P\('a',\)"):
    NamedSharding(m, ("a",))


class FakeDevice(ember._src.core.sharding.Device):
  """A device of another process, to test the index map of a real split."""
  def __init__(self, id):
    self.id = id

  def __repr__(self):
    return f"FakeDevice({self.id})"


def test_named_sharding_splits_over_a_larger_mesh():
  devs = [FakeDevice(i) for i in range(4)]
  m = Mesh(np.array(devs, dtype=object).reshape(2, 2), ("a", "b"))
  ns = NamedSharding(m, P("a", None))
  assert ns.shard_shape((4, 6)) == (2, 6) and not ns.is_fully_replicated
  assert ns.devices_indices_map((4, 6)) == {
      devs[0]: (slice(0, 2), slice(None)), devs[1]: (slice(0, 2), slice(None)),
      devs[2]: (slice(2, 4), slice(None)), devs[3]: (slice(2, 4), slice(None))}
  both = NamedSharding(m, P(("a", "b")))
  assert both.shard_shape((8,)) == (2,)
  assert [both.devices_indices_map((8,))[d] for d in devs] == [
      (slice(0, 2),), (slice(2, 4),), (slice(4, 6),), (slice(6, 8),)]
  with pytest.raises(ValueError, match=r"dim 0 of size 3\) is not divisible by 2"):
    ns.shard_shape((3, 6))
  with pytest.raises(ValueError, match="are not devices of this process"):
    ember.device_put(jnp.zeros(4), ns)


def test_array_sharding_is_single_device_sharding():
  x = jnp.zeros(3)
  s = x.sharding
  assert isinstance(s, SingleDeviceSharding) and isinstance(s, Sharding)
  assert repr(s) == "SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)"
  assert s == SingleDeviceSharding(DEV) and hash(s) == hash(SingleDeviceSharding(DEV))
  assert s.device_set == {DEV} and s.memory_kind == "device" and s.is_fully_replicated
  assert s.num_devices == 1 and s.shard_shape((3,)) == (3,) and s._device_assignment == (DEV,)
  assert s.devices_indices_map((3,)) == {DEV: (slice(None),)}
  assert x.format.sharding == s
  assert ember.jit(lambda a: a + 1)(x).sharding == s


def test_device_put_accepts_shardings():
  m = ember.make_mesh((1,), ("x",))
  for where in (DEV, SingleDeviceSharding(DEV), NamedSharding(m, P("x"))):
    y = ember.device_put(np.arange(3.0, dtype=np.float32), where)
    np.testing.assert_array_equal(np.asarray(y), np.arange(3.0))
  with pytest.raises(TypeError, match="device_put: expected a device from ember.devices"):
    ember.device_put(np.zeros(2), "cpu:0")


AUTO_MESH = ember.make_mesh((1,), ("x",), (AxisType.Auto,))
EAGER_AND_JIT = pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])


def test_set_mesh_sets_the_context_mesh():
  # JAX 0.12: jax.set_mesh is a class: a global setter and a context manager
  assert ember.sharding.set_mesh is ember.set_mesh and isinstance(ember.set_mesh, type)
  empty = ember.sharding.get_abstract_mesh()
  assert empty.empty
  with ember.set_mesh(AUTO_MESH) as entered:
    assert entered is None
    assert ember.sharding.get_abstract_mesh() == AUTO_MESH.abstract_mesh
    assert repr(ember.sharding.get_abstract_mesh()) == "AbstractMesh('x': 1, axis_types=(Auto,))"
  assert ember.sharding.get_abstract_mesh() == empty
  ember.set_mesh(AUTO_MESH)     # called on its own: set until the next call
  try:
    assert ember.sharding.get_abstract_mesh() == AUTO_MESH.abstract_mesh
  finally:
    ember.set_mesh(None)
  assert ember.sharding.get_abstract_mesh() == empty


def test_set_mesh_errors():
  with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.Mesh`"):
    ember.set_mesh("x")
  with pytest.raises(ValueError, match="`set_mesh` can only be used outside of `jax.jit`"):
    ember.jit(lambda x: ember.set_mesh(AUTO_MESH) and x)(1.0)
  manual = ember.make_mesh((1,), ("x",), (AxisType.Manual,))
  with pytest.raises(ValueError, match="contains manual axes"):
    ember.set_mesh(manual)


@EAGER_AND_JIT
def test_with_sharding_constraint_is_the_identity_on_one_device(wrap):
  x = jnp.arange(4.0)
  s = NamedSharding(AUTO_MESH, P("x"))
  wsc = ember.lax.with_sharding_constraint
  np.testing.assert_array_equal(wrap(lambda a: wsc(a, s))(x), np.arange(4.0))
  pair = wrap(lambda a: wsc((a, 2 * a), (s, SingleDeviceSharding(DEV))))(x)
  np.testing.assert_array_equal(pair[1], 2 * np.arange(4.0))
  np.testing.assert_array_equal(wrap(lambda a: wsc({"k": a}, {"k": None}))(x)["k"], x)
  with ember.set_mesh(AUTO_MESH):   # a PartitionSpec is over the mesh in context
    np.testing.assert_array_equal(wrap(lambda a: wsc(a, P("x")))(x), np.arange(4.0))
  grad = ember.grad(lambda a: wsc(a, s).sum())(x)
  np.testing.assert_array_equal(grad, np.ones(4))   # JAX 0.12: [1. 1. 1. 1.]


def test_with_sharding_constraint_adds_no_equation():
  s = NamedSharding(AUTO_MESH, P("x"))
  jaxpr = ember.make_jaxpr(lambda a: ember.lax.with_sharding_constraint(a, s))(jnp.zeros(4))
  assert not jaxpr.jaxpr.eqns


def test_with_sharding_constraint_errors():
  # messages as JAX 0.12's
  wsc = ember.lax.with_sharding_constraint
  s = NamedSharding(AUTO_MESH, P("x"))
  with pytest.raises(ValueError, match=r"only valid for values of rank at least 1, but was "
                     r"applied to a value of rank 0. For scalars the PartitionSpec should be P\(\)"):
    wsc(jnp.float32(1), s)
  with pytest.raises(RuntimeError, match=r"requires a non-empty mesh in context .*jax.set_mesh"):
    wsc(jnp.zeros(4), P("x"))
  with pytest.raises(TypeError, match="expected to be PartitionSpec instances or None, but got bad"):
    wsc(jnp.zeros(4), "bad")
  with pytest.raises(ValueError, match=r"one per array of x \(2\), got 3"):
    wsc((jnp.zeros(4), jnp.zeros(4)), (s, s, s))


@EAGER_AND_JIT
def test_reshard_and_auto_axes_keep_the_values(wrap):
  x = jnp.arange(8.0).reshape(4, 2)
  s = NamedSharding(AUTO_MESH, P("x"))
  np.testing.assert_array_equal(wrap(lambda a: ember.sharding.reshard(a, s))(x), x)
  with ember.set_mesh(AUTO_MESH):   # a shorter spec leaves the other dims whole, as JAX's
    np.testing.assert_array_equal(wrap(lambda a: ember.sharding.reshard(a, P()))(x), x)
    doubled = ember.sharding.auto_axes(lambda a: a * 2, out_sharding=P("x"))
    np.testing.assert_array_equal(wrap(doubled)(x), 2 * x)
  deco = ember.sharding.auto_axes(out_sharding=s)(lambda a: a + 1)
  np.testing.assert_array_equal(wrap(deco)(x), x + 1)
  with pytest.raises(ValueError, match="only valid for values of rank at least 1"):
    ember.sharding.reshard(jnp.float32(1), s)
  with pytest.raises(RuntimeError, match="non-empty mesh in context"):
    ember.sharding.reshard(x, P("x"))
  assert ember.stages.CompilerOptions == dict[str, typing.Any]
