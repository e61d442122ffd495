"""jax.export: export a jitted function, call the Exported (eagerly, under jit, under grad
through its exported VJP), serialize and deserialize it (here and in a fresh process), the
tree serialization registry, and the errors JAX raises (messages from JAX 0.12.1)."""
import collections
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import export

X = np.arange(9, dtype=np.float32).reshape(3, 3) / 10
Y = np.ones((3, 2), np.float32)


def f(x, y):
  return {"a": jnp.sin(x) @ y, "b": jnp.cumsum(y) * 2.0}


@pytest.fixture(scope="module")
def exp():
  return export.export(ember.jit(f))(X, ember.ShapeDtypeStruct((3, 2), np.float32))


def check_f(out):
  np.testing.assert_allclose(out["a"], np.sin(X) @ Y, rtol=1e-6)
  np.testing.assert_allclose(out["b"], np.cumsum(Y) * 2.0, rtol=1e-6)


def test_exported_fields(exp):
  assert exp.fun_name == "f"
  assert [(a.shape, a.dtype) for a in exp.in_avals] == [((3, 3), np.float32),
                                                        ((3, 2), np.float32)]
  assert [(a.shape, a.dtype) for a in exp.out_avals] == [((3, 2), np.float32),
                                                         ((6,), np.float32)]
  assert exp.in_tree == ember.tree_util.tree_structure(((X, Y), {}))
  assert exp.out_tree == ember.tree_util.tree_structure({"a": 0, "b": 0})
  assert exp.platforms == ("cpu",) == (export.default_export_platform(),)
  assert exp.nr_devices == 1 and exp.module_kept_var_idx == (0, 1)
  assert exp.in_shardings_jax() == (None, None) and exp.out_shardings_jax(None) == (None, None)
  assert (export.minimum_supported_calling_convention_version
          <= exp.calling_convention_version
          == export.maximum_supported_calling_convention_version == 10)
  text = exp.mlir_module()
  assert text.startswith("module @jit_f") and "stablehlo.sine" in text
  assert text == ember.jit(f).lower(X, Y).as_text()
  assert str(exp) == "Exported(fun_name=f, ...)" and exp.has_vjp()
  assert not export.is_symbolic_dim(3)


def test_call_eager_jit_and_grad(exp):
  check_f(exp.call(X, Y))
  doubled = ember.jit(lambda x, y: exp.call(x, y)["a"] * 2)(X, Y)
  np.testing.assert_allclose(doubled, 2 * np.sin(X) @ Y, rtol=1e-6)
  g = ember.grad(lambda x: exp.call(x, Y)["a"].sum())(X)
  np.testing.assert_allclose(g, np.cos(X) * Y.sum(1), rtol=1e-6)
  vjp = exp.vjp()
  assert [a.shape for a in vjp.in_avals] == [(3, 3), (3, 2), (3, 2), (6,)]
  assert [a.shape for a in vjp.out_avals] == [(3, 3), (3, 2)]


def test_serialize_roundtrip_with_vjp_orders(exp):
  blob = exp.serialize(vjp_order=2)
  assert isinstance(blob, bytearray)
  back = export.deserialize(blob)
  assert back.fun_name == "f" and back.in_tree == exp.in_tree and back.out_tree == exp.out_tree
  assert back.in_avals == exp.in_avals and back.mlir_module() == exp.mlir_module()
  check_f(back.call(X, Y))
  check_f(ember.jit(back.call)(X, Y))
  h = ember.grad(lambda x: ember.grad(lambda x: back.call(x, Y)["a"].sum())(x).sum())(X)
  np.testing.assert_allclose(h, -np.sin(X) * Y.sum(1), rtol=1e-5)
  plain = export.deserialize(exp.serialize())
  assert not plain.has_vjp()
  with pytest.raises(ValueError, match="No VJP is available"):
    ember.grad(lambda x: plain.call(x, Y)["a"].sum())(X)


def test_deserialize_in_a_fresh_process(exp, tmp_path):
  path = tmp_path / "f.bin"
  path.write_bytes(exp.serialize())
  code = ("import numpy as np, sys, ember\nfrom ember import export\n"
          "e = export.deserialize(open(sys.argv[1], 'rb').read())\n"
          "x = np.arange(9, dtype=np.float32).reshape(3, 3) / 10\n"
          "print(float(e.call(x, np.ones((3, 2), np.float32))['a'].sum()))\n")
  root = os.path.dirname(os.path.dirname(os.path.abspath(export.__file__)))
  env = dict(os.environ, PYTHONPATH=root)
  out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                       text=True, env=env, timeout=120)
  assert out.returncode == 0, out.stderr
  np.testing.assert_allclose(float(out.stdout), (np.sin(X) @ Y).sum(), rtol=1e-6)


Point = collections.namedtuple("Point", ["x", "y"])


class Box:
  def __init__(self, v, tag):
    self.v, self.tag = v, tag


ember.tree_util.register_pytree_node(Box, lambda b: ((b.v,), b.tag),
                                     lambda tag, kids: Box(kids[0], tag))


def test_tree_serialization_registry():
  export.register_namedtuple_serialization(Point, serialized_name="test_export.Point")
  export.register_pytree_node_serialization(
      Box, serialized_name="test_export.Box", serialize_auxdata=lambda tag: tag.encode(),
      deserialize_auxdata=lambda b: b.decode())

  def g(p, box):
    return Box(p.x + p.y, "out"), [p.x * box.v, None]
  v = np.float32(2.0)
  e = export.export(ember.jit(g))(Point(v, v), Box(v, "in"))
  back = export.deserialize(e.serialize())
  assert back.in_tree == e.in_tree and back.out_tree == e.out_tree
  box, (prod, none) = back.call(Point(v, np.float32(3.0)), Box(np.float32(4.0), "in"))
  assert box.tag == "out" and float(box.v) == 5.0 and float(prod) == 8.0 and none is None
  with pytest.raises(ValueError, match="Duplicate serialization registration for type"):
    export.register_namedtuple_serialization(Point, serialized_name="other")
  with pytest.raises(ValueError, match="Use `jax.export.register_pytree_node_serialization`"):
    export.register_namedtuple_serialization(Box, serialized_name="box2")
  Unregistered = collections.namedtuple("Unregistered", ["a"])
  e2 = export.export(ember.jit(lambda u: u.a))(Unregistered(v))
  with pytest.raises(ValueError, match="unregistered type"):
    e2.serialize()


def test_errors(exp):
  with pytest.raises(ValueError, match="Function to be exported must be the result of `jit`"):
    export.export(f)
  with pytest.raises(ValueError, match=r"Shape mismatch for args\[0\].shape\[0\] \(expected "
                     r"same constant\): expected \(3, 3\) and called with \(4, 3\)"):
    exp.call(np.ones((4, 3), np.float32), Y)
  with pytest.raises(ValueError, match=r"Rank mismatch for args\[1\]: expected \(3, 2\)"):
    exp.call(X, np.ones(6, np.float32))
  with pytest.raises(ValueError, match=r"Dtype mismatch for args\[0\]: expected float32 and "
                     "called with int32"):
    exp.call(np.ones((3, 3), np.int32), Y)
  with pytest.raises(ValueError, match="must have the same pytree structure"):
    exp.call(X)
  tpu = export.export(ember.jit(jnp.sin), platforms=("tpu",))(X)
  with pytest.raises(ValueError, match="was exported for platforms"):
    tpu.call(X)
  relaxed = export.export(ember.jit(jnp.sin), platforms=("tpu",),
                          disabled_checks=[export.DisabledSafetyCheck.platform()])(X)
  np.testing.assert_allclose(relaxed.call(X), np.sin(X), rtol=1e-6)
  with_callback = export.export(ember.jit(lambda x: ember.pure_callback(
      np.sin, ember.ShapeDtypeStruct((3, 3), np.float32), x)))(X)
  np.testing.assert_allclose(with_callback.call(X), np.sin(X), rtol=1e-6)   # in-process
  with pytest.raises(ValueError, match="calls Python functions"):
    with_callback.serialize()
  with pytest.raises(NotImplementedError, match="call_exported"):   # as JAX: no batching
    ember.vmap(exp.call)(np.stack([X, X]), np.stack([Y, Y]))
  with pytest.raises(ValueError, match="not a serialized ember Exported"):
    export.deserialize(b"garbage")
  cc = export.DisabledSafetyCheck.custom_call("my_target")
  assert cc.is_custom_call() == "my_target" and str(cc) == "custom_call:my_target"
  assert export.DisabledSafetyCheck.platform().is_custom_call() is None
  assert cc == export.DisabledSafetyCheck.custom_call("my_target")
