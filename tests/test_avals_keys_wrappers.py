"""JAX 0.12 behaviours libraries rely on (issue 32): the sharding in avals
(`jax.typeof(x).sharding`), `out_sharding=` of random samplers, `is_leaf_takes_path`,
typed PRNG keys as pytree leaves, vmap of unmapped non-array arguments, the metadata of
transformed functions, and jvp's outputs for inputs returned as they are. Expected values
are JAX 0.12.1's (noted beside them)."""
import copy

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember.sharding import AbstractMesh, NamedSharding, PartitionSpec as P


# --- avals' sharding --------------------------------------------------------------------

def test_typeof_sharding_eager():
  x = jnp.ones((3, 4))
  s = jax.typeof(x).sharding
  assert isinstance(s, NamedSharding)
  # JAX: NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None))
  assert repr(s) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None, None))"
  assert s.spec == P(None, None) and s.spec[1:] == (None,)
  assert isinstance(s.mesh, AbstractMesh) and s.mesh.empty and s.mesh.size == 0
  assert not s.mesh.are_all_axes_explicit and not s.mesh.are_all_axes_auto
  assert x.aval.sharding == s and hash(x.aval.sharding) == hash(s)
  assert s.memory_kind is None and s.is_fully_replicated and s.num_devices == 0
  assert s.shard_shape((3, 4)) == (3, 4)
  assert repr(jax.typeof(1.0).sharding.spec) == "P()"
  assert repr(jax.typeof(np.ones(3)).sharding.spec) == "P(None,)"
  with pytest.raises(ValueError, match="not implemented for `jax.sharding.AbstractMesh`"):
    s.device_set
  with pytest.raises(ValueError, match="not implemented for `jax.sharding.AbstractMesh`"):
    s.is_fully_addressable


def test_named_sharding_over_the_abstract_mesh():
  mesh = jax.typeof(jnp.ones(2)).sharding.mesh
  s = NamedSharding(mesh, P())
  assert repr(s) == "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P())"
  assert s.is_equivalent_to(jax.typeof(jnp.ones(2)).sharding, 1)
  assert s != jax.typeof(jnp.ones(2)).sharding   # P() != P(None,), as in JAX


def test_typeof_sharding_under_transformations():
  seen = []

  def f(x):
    seen.append(jax.typeof(x).sharding)
    return x.sum()
  x = jnp.ones((3, 4))
  jax.jit(f)(x)
  jax.vmap(f)(x)
  jax.grad(f)(x)
  assert [s.spec for s in seen] == [P(None, None), P(None,), P(None, None)]
  assert all(s.mesh == AbstractMesh((), ()) for s in seen)
  k = jax.random.key(0)
  assert jax.typeof(k).sharding.spec == P()   # JAX: key<fry>[] has P()


def test_samplers_and_creation_take_out_sharding():
  x = jnp.ones((3, 4))
  s = jax.typeof(x).sharding
  k = jax.random.key(0)
  expected = jax.random.normal(k, (3, 4))
  np.testing.assert_array_equal(jax.random.normal(k, (3, 4), out_sharding=s), expected)
  for sampler in (jax.random.uniform, jax.random.normal, jax.random.rademacher,
                  jax.random.bernoulli, jax.random.exponential):
    assert "out_sharding" in __import__("inspect").signature(sampler).parameters

  @jax.jit
  def g(x):
    sh = jax.typeof(x).sharding
    return (jnp.zeros(x.shape, out_sharding=sh)
            + jax.random.uniform(jax.random.key(1), x.shape, out_sharding=sh))
  np.testing.assert_array_equal(g(x), jax.random.uniform(jax.random.key(1), (3, 4)))


# --- is_leaf_takes_path -----------------------------------------------------------------

def test_is_leaf_takes_path():
  tree = {"a": [1, 2], "b": 3}
  calls = []

  def is_leaf(path, x):
    calls.append(path)
    return len(path) == 1 and path[0].key == "a"
  kl, treedef = jax.tree_util.tree_flatten_with_path(tree, is_leaf=is_leaf,
                                                     is_leaf_takes_path=True)
  # JAX: called with (), ('a',), ('b',); [('a',) -> [1, 2], ('b',) -> 3]
  assert [jax.tree_util.keystr(p) for p in calls] == ["", "['a']", "['b']"]
  assert [x for _, x in kl] == [[1, 2], 3] and str(treedef) == "PyTreeDef({'a': *, 'b': *})"
  assert [x for _, x in jax.tree_util.tree_leaves_with_path(
      tree, is_leaf, is_leaf_takes_path=True)] == [[1, 2], 3]
  out = jax.tree_util.tree_map_with_path(lambda p, x: len(x) if isinstance(x, list) else x,
                                         tree, is_leaf=is_leaf, is_leaf_takes_path=True)
  assert out == {"a": 2, "b": 3}
  assert jax.tree.map_with_path(lambda p, x: x, tree, is_leaf=lambda p, x: False,
                                is_leaf_takes_path=True) == tree
  # without the flag is_leaf takes the value alone
  assert jax.tree_util.tree_leaves_with_path(tree, lambda x: isinstance(x, list))[0][1] == [1, 2]


# --- typed keys are leaves --------------------------------------------------------------

def test_typed_keys_are_leaves():
  k = jax.random.key(0)
  ks = jax.random.split(k, 3)
  assert str(jax.tree_util.tree_structure(k)) == "PyTreeDef(*)"
  assert str(jax.tree.structure({"k": ks, "x": 1})) == "PyTreeDef({'k': *, 'x': *})"
  (path, leaf), = jax.tree_util.tree_leaves_with_path({"k": k})
  assert jax.tree_util.keystr(path) == "['k']" and leaf is k
  assert jax.tree_util.all_leaves([k, ks])
  assert not jax.tree_util.is_tree_node(type(k))
  with pytest.raises(ValueError, match="can't tree-flatten"):
    jax.tree_util.flatten_one_level(k)
  assert len(jax.tree.leaves([k, ks, jnp.ones(2)])) == 3


def test_typed_keys_through_transformations():
  k = jax.random.key(0)
  ks = jax.random.split(k, 3)
  out = jax.jit(lambda k, x: (jax.random.split(k), jax.random.normal(k, (2,)) + x))(k, 1.0)
  assert isinstance(out[0], jax.random.PRNGKeyArray) and out[0].shape == (2,)
  np.testing.assert_array_equal(jax.random.key_data(out[0]),
                                jax.random.key_data(jax.random.split(k)))
  v = jax.vmap(lambda k: jax.random.normal(k, ()))(ks)
  assert v.shape == (3,)
  same = jax.vmap(lambda k: k)(ks)
  assert isinstance(same, jax.random.PRNGKeyArray) and same.shape == (3,)
  g = jax.grad(lambda x, k: (x * jax.random.normal(k, ())).sum())(1.0, k)
  assert g.shape == ()
  c, ys = jax.lax.scan(lambda k, _: (jax.random.split(k)[0], jax.random.uniform(k)), k,
                       None, length=3)
  assert isinstance(c, jax.random.PRNGKeyArray) and ys.shape == (3,)


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit])
def test_where_and_astype_of_keys(wrap):
  """jnp.where chooses keys (broadcasting the condition), jnp.astype to the key dtype is
  the keys themselves: an optax MultiSteps state (jnp.where(emit, new, old) over its
  AddNoiseState's key) keeps its tree structure through lax.cond (JAX 0.12.1's values)."""
  ks = jax.random.split(jax.random.key(0), 3)
  k1 = jax.random.key(7)
  r = wrap(lambda c: jnp.where(c, ks, k1))(jnp.array([True, False, True]))
  assert isinstance(r, jax.random.PRNGKeyArray) and r.shape == (3,)
  assert jax.random.key_data(r).tolist() == [[1797259609, 2579123966], [0, 7],
                                             [4146024105, 2718843009]]
  r = wrap(lambda c: jnp.where(c, k1, ks))(jnp.array([[True], [False]]))
  assert jax.random.key_data(r).tolist() == [
      [[0, 7], [0, 7], [0, 7]],
      [[1797259609, 2579123966], [928981903, 3453687069], [4146024105, 2718843009]]]
  assert jnp.astype(k1, k1.dtype) is k1
  out = wrap(lambda p, k: jax.lax.cond(
      p, lambda: {"key": k}, lambda: {"key": jnp.astype(jnp.where(p, k1, k), k.dtype)}))(
      False, jax.random.key(1))
  assert jax.random.key_data(out["key"]).tolist() == [0, 1]
  with pytest.raises(ValueError, match="dtype=key<fry> is not a valid dtype for JAX type"):
    jnp.where(True, k1, 0)
  with pytest.raises(ValueError, match="Cannot convert_element_type from key<fry> to float32"):
    jnp.astype(k1, jnp.float32)


def test_eval_shape_of_keys():
  k = jax.random.key(0)
  out = jax.eval_shape(lambda k: jax.random.split(k), k)
  # JAX: ShapeDtypeStruct(shape=(2,), dtype=key<fry>)
  assert isinstance(out, jax.ShapeDtypeStruct) and out.shape == (2,) and out.dtype == k.dtype
  out = jax.eval_shape(lambda k: (k, jax.random.normal(k, (3,))),
                       jax.ShapeDtypeStruct((), k.dtype))
  assert (out[0].shape, out[0].dtype) == ((), k.dtype)
  assert (out[1].shape, out[1].dtype) == ((3,), np.float32)
  out = jax.eval_shape(jax.random.key_data, k)
  assert (out.shape, out.dtype) == ((2,), np.uint32)


def test_key_copy_and_asarray():
  k = jax.random.split(jax.random.key(3))
  for c in (k.copy(), copy.copy(k), copy.deepcopy(k), jax.jit(lambda k: k.copy())(k)):
    assert isinstance(c, jax.random.PRNGKeyArray) and bool((c == k).all())
  assert jnp.asarray(k, dtype=k.dtype) is k and jnp.asarray(k) is k
  with pytest.raises(TypeError, match="cannot be converted to a NumPy array"):
    np.asarray(k)
  assert bool(jnp.array_equal(k, k, equal_nan=True))


# --- vmap / grad wrappers, jvp outputs ------------------------------------------------

def test_vmap_unmapped_non_array_argument():
  x = jnp.arange(6.).reshape(3, 2)
  out = jax.vmap(lambda x, op: op(x), (0, None))(x, jnp.mean)
  np.testing.assert_allclose(out, [0.5, 2.5, 4.5])   # JAX: [0.5 2.5 4.5]
  # JAX: TypeError: Argument '<function mean at ...>' of type '<class 'function'>' is not a
  # valid JAX type
  for in_axes in ((0, 0), 0):
    with pytest.raises(TypeError, match="is not a valid JAX type"):
      jax.vmap(lambda x, op: op(x), in_axes)(x, jnp.mean)


def test_transformed_functions_keep_metadata():
  def h(x):
    """Doc of h."""
    return x
  h.attr = 7
  for t in (jax.vmap(h), jax.jit(h), jax.grad(h), jax.value_and_grad(h), jax.jacfwd(h),
            jax.jacrev(h)):
    assert t.attr == 7 and t.__name__ == "h" and t.__wrapped__ is h
  # JAX 0.12.1's: jacfwd/jacrev name the function; hessian is jacfwd of jacrev
  for t in (jax.jacfwd(h), jax.jacrev(h), jax.hessian(h)):
    assert t.__doc__ == ("Jacobian of h with respect to positional argument(s) 0. Takes the "
                         "same arguments as h but returns the jacobian of the output with "
                         "respect to the arguments at positions 0.")
  assert jax.hessian(h).__wrapped__.__wrapped__ is h
  assert jax.vmap(h).__doc__.startswith("Vectorized version of h. Takes similar arguments")
  assert "Original documentation:\n\nDoc of h." in jax.vmap(h).__doc__
  assert jax.grad(h).__doc__.startswith("Gradient of h with respect to positional argument(s) 0")
  assert jax.vmap(jax.jit(h)).attr == 7
  jitted = jax.jit(h)
  assert not hasattr(jax.vmap(jitted), "_native")   # a jit's own state is not copied

  class F:
    __name__ = 3   # not a string: JAX stops copying there and keeps its own name

    def __call__(self, x):
      return x
  g = jax.vmap(F())
  assert g.__name__ == "vmap_f" and g(jnp.ones((3, 2))).shape == (3, 2)


def test_jvp_returns_inputs_as_given():
  # JAX 0.12: (1.0, 1.0); ((Array(1.), 3.0), (1.0, Array(0., weak)))
  out = jax.jvp(lambda x: x, (1.0,), (1.0,))
  assert out == (1.0, 1.0) and all(type(o) is float for o in out)
  (p, c), (t, tc) = jax.jvp(lambda x: (x, 3.0), (jnp.float32(1.0),), (1.0,))
  assert type(t) is float and c == 3.0 and isinstance(tc, jax.Array)
  p, t = jax.jvp(lambda x: x * 2, (1.0,), (1.0,))
  assert isinstance(p, jax.Array) and isinstance(t, jax.Array) and float(t) == 2.0
  assert type(jax.linearize(lambda x: x, 1.0)[0]) is float
  p, t = jax.jit(lambda x: jax.jvp(lambda y: y, (x,), (1.0,)))(1.0)
  assert isinstance(p, jax.Array) and float(t) == 1.0


def test_jvp_and_vjp_with_key_arguments():
  k = jax.random.key(0)
  f0 = np.zeros((), jax.dtypes.float0)
  # JAX 0.12: the key's tangent is a float0 array of the key's shape, in and out
  keys, t = jax.jvp(lambda k: jax.random.split(k), (k,), (f0,))
  assert isinstance(keys, jax.random.PRNGKeyArray) and keys.shape == (2,)
  assert t.dtype == jax.dtypes.float0 and t.shape == (2,)
  y, t = jax.jvp(lambda x, k: x * jax.random.normal(k, ()), (1.0, k), (1.0, f0))
  assert float(t) == float(y)
  with pytest.raises(TypeError, match="same tree structure"):
    jax.jvp(lambda k: k, (k,), ((f0,),))
  y, pullback = jax.vjp(lambda x, k: x * jax.random.normal(k, ()), 1.0, k)
  gx, gk = pullback(1.0)
  assert float(gx) == float(y) and gk.dtype == jax.dtypes.float0 and gk.shape == ()


@pytest.mark.parametrize("prefix,full,msg", [
    # JAX 0.12.1's messages (optax's tests match "Dict key mismatch")
    ({"a": 1}, {"a": 1, "b": 2},
     "Dict key mismatch; expected keys: ['a']; present keys: ['a', 'b']."),
    ({"a": 1}, {"b": 1}, "Dict key mismatch; expected keys: ['a']; present keys: ['b']."),
    ((1, 2), (1, 2, 3), "Tuple arity mismatch: 3 != 2; tuple: (1, 2, 3)."),
    ((1, 2), [1, 2], "Expected tuple, got [1, 2]."),
    ([1, 2], [1, 2, 3], "List arity mismatch: 3 != 2; list: [1, 2, 3]."),
    ([1], {"a": 1}, "Expected list, got {'a': 1}."),
])
def test_flatten_up_to_errors(prefix, full, msg):
  with pytest.raises(ValueError) as e:
    jax.tree.structure(prefix).flatten_up_to(full)
  assert str(e.value) == msg


def test_complex_normal():
  # JAX 0.12.1: real and imaginary parts from split(key), over sqrt(2)
  expected = [0.7099454402923584 - 1.7270774841308594j, -0.6408772468566895 - 1.439443588256836j,
              -0.5290377140045166 + 0.14534172415733337j,
              -0.8282814621925354 - 0.24999773502349854j]
  k = jax.random.key(0)
  out = jax.random.normal(k, (4,), dtype=jnp.complex64)
  assert out.dtype == np.complex64
  np.testing.assert_allclose(np.asarray(out), expected, rtol=2e-6)
  np.testing.assert_allclose(
      np.asarray(jax.jit(lambda k: jax.random.normal(k, (4,), jnp.complex64))(k)), expected,
      rtol=2e-6)
  with pytest.raises(ValueError, match="must be a float or complex dtype"):
    jax.random.normal(k, (2,), dtype=jnp.int32)


def test_eval_shape_takes_avals_and_objects_with_shape_and_dtype():
  # flax's ConvLocal: eval_shape(conv, ShapedArray, ShapedArray); JAX 0.12.1 gives these
  class Duck:
    shape, dtype = (2, 3), np.dtype("float32")
  out = jax.eval_shape(lambda a, b: a @ b.T, jax.core.ShapedArray((4, 3), jnp.float32), Duck())
  assert (out.shape, out.dtype, out.weak_type) == ((4, 2), jnp.float32, False)
  weak = jax.eval_shape(lambda a: a * 2, jax.core.ShapedArray((), jnp.float32, weak_type=True))
  assert (weak.shape, weak.dtype, weak.weak_type) == ((), jnp.float32, True)
  with pytest.raises(TypeError, match="not a valid"):
    jax.eval_shape(lambda a: a, object())


# --- flax's uses (issue 32, flax 0.12.12) -------------------------------------------------

def test_shaped_array_takes_jax_type_keywords():
  am = AbstractMesh((2,), ("x",), (jax.sharding.AxisType.Explicit,))
  # JAX: ShapedArray(float32[4@x]); ember's types carry no sharding, so the type is float32[4]
  a = jax.core.ShapedArray((4,), jnp.float32, sharding=NamedSharding(am, P("x")))
  assert a == jax.core.ShapedArray((4,), jnp.float32) and a.sharding.spec == P(None)
  b = jax.core.ShapedArray(shape=(2, 3), dtype=jnp.int32, weak_type=True,
                           sharding=jax.typeof(jnp.ones((2, 3))).sharding)
  assert b.shape == (2, 3) and b.dtype == np.int32 and b.weak_type
  assert a.update(shape=(2, 4), sharding=NamedSharding(am, P("x"))).shape == (2, 4)
  # JAX's checks of the sharding, and its messages
  with pytest.raises(ValueError, match=r"Sharding spec \('x',\) implies that array axis 0 is "
                     r"partitioned 2 times, but does not evenly divide the dimension size 3"):
    jax.core.ShapedArray((3,), jnp.float32, sharding=NamedSharding(am, P("x")))
  with pytest.raises(ValueError, match=r"Length of sharding.spec \(3\) must be equal to "
                     r"aval's ndim \(2\)"):
    jax.core.ShapedArray((4, 3), jnp.float32, sharding=NamedSharding(am, P("x", None, None)))
  with pytest.raises(ValueError, match="Mesh of an aval must be an AbstractMesh"):
    jax.core.ShapedArray((4,), jnp.float32,
                         sharding=NamedSharding(jax.make_mesh((1,), ("x",)), P("x")))
  with pytest.raises(ValueError, match="sharding with memory_kind is not allowed"):
    jax.core.ShapedArray((4,), jnp.float32,
                         sharding=NamedSharding(am, P("x"), memory_kind="device"))


def test_named_sharding_update():
  am = AbstractMesh((2,), ("x",), (jax.sharding.AxisType.Explicit,))
  s = NamedSharding(am, P(None))
  # JAX: spec=P('x',) from a tuple or a P; memory_kind given; the mesh kept
  assert s.update(spec=("x",)) == NamedSharding(am, P("x")) == s.update(spec=P("x"))
  assert s.update(memory_kind="device").memory_kind == "device"
  assert s.update(memory_kind="device").spec == P(None)
  assert repr(jax.typeof(jnp.ones((2, 3))).sharding.update(spec=P(None))) == (
      "NamedSharding(mesh=AbstractMesh((), axis_types=()), spec=P(None,))")
  mesh = jax.make_mesh((1,), ("y",))
  assert s.update(mesh=mesh, spec=P("y")) == NamedSharding(mesh, P("y"))
  with pytest.raises(ValueError, match="Resource axis: y"):
    s.update(spec=P("y"))


def test_api_util_is_an_attribute_of_jax():
  # flax's scan calls jax.api_util.debug_info after a plain `import jax`
  assert jax.api_util.debug_info is not None and jax.api_util.flatten_fun_nokwargs


KEY_DATA_3_SPLIT = [[1797259609, 2579123966], [928981903, 3453687069],
                    [4146024105, 2718843009]]   # JAX: key_data(split(key(0), 3))


@pytest.mark.parametrize("wrap", [lambda f: f, jax.jit], ids=["eager", "jit"])
def test_keys_broadcast_compare_and_update(wrap):
  ks = jax.random.split(jax.random.key(0), 3)
  np.testing.assert_array_equal(jax.random.key_data(ks), KEY_DATA_3_SPLIT)
  b = wrap(lambda k: jnp.broadcast_to(k, (2, 3)))(ks)
  assert b.shape == (2, 3) and b.dtype == ks.dtype
  np.testing.assert_array_equal(jax.random.key_data(b), [KEY_DATA_3_SPLIT] * 2)
  one = wrap(lambda k: jnp.broadcast_to(k[1], (2,)))(ks)
  np.testing.assert_array_equal(jax.random.key_data(one), [KEY_DATA_3_SPLIT[1]] * 2)
  # JAX: [False  True False], True, False and [ True  True  True] / [False True True]
  np.testing.assert_array_equal(wrap(jnp.isclose)(ks, ks[1]), [False, True, False])
  assert bool(wrap(jnp.allclose)(ks, ks)) and not bool(wrap(jnp.allclose)(ks, ks[0]))
  np.testing.assert_array_equal(wrap(jnp.equal)(ks, ks[1]), [False, True, False])
  np.testing.assert_array_equal(wrap(jnp.not_equal)(ks, ks[0]), [False, True, True])
  k5 = jax.random.key(5)
  # JAX: the rows replaced by key(5)'s data [0, 5]
  np.testing.assert_array_equal(
      jax.random.key_data(wrap(lambda k, n: k.at[1].set(n))(ks, k5)),
      [KEY_DATA_3_SPLIT[0], [0, 5], KEY_DATA_3_SPLIT[2]])
  np.testing.assert_array_equal(
      jax.random.key_data(wrap(lambda k, n: k.at[1:].set(n))(ks, k5)),
      [KEY_DATA_3_SPLIT[0], [0, 5], [0, 5]])
  np.testing.assert_array_equal(jax.random.key_data(wrap(lambda k: k.at[2].get())(ks)),
                                KEY_DATA_3_SPLIT[2])


def test_key_update_and_broadcast_errors():
  ks = jax.random.split(jax.random.key(0), 3)
  # JAX: ValueError Incompatible types for broadcasting: input type=key<fry>[3] and
  # requested type=key<fry>[2]
  with pytest.raises(ValueError, match=r"input type=key<fry>\[3\] and requested "
                     r"type=key<fry>\[2\]"):
    jnp.broadcast_to(ks, (2,))
  # JAX raises TypeErrors here too (its messages name no key operation)
  with pytest.raises(TypeError, match="must be PRNG keys"):
    ks.at[0].set(jnp.uint32(3))
  with pytest.raises(TypeError, match="no arithmetic"):
    ks.at[0].add(jax.random.key(5))


def test_debug_key_reuse_off_only():
  with jax.debug_key_reuse(False):
    assert jax.config.jax_debug_key_reuse is False
    jax.random.uniform(jax.random.key(0))
  with pytest.raises(NotImplementedError, match="no key-reuse checker"):
    jax.config.update("jax_debug_key_reuse", True)
  with pytest.raises(NotImplementedError, match="no key-reuse checker"):
    with jax.debug_key_reuse(True):
      pass
  assert jax.config.jax_debug_key_reuse is False


def test_trace_to_jaxpr_dynamic_with_a_key_argument():
  from ember.extend import linear_util as lu
  from ember.interpreters import partial_eval as pe

  def body(key, x):
    return jax.random.uniform(jax.random.fold_in(key, 7), (2,)) + x, jax.random.split(key)

  key = jax.random.key(3)
  f_flat, out_tree = jax.api_util.flatten_fun_nokwargs(
      lu.wrap_init(body, debug_info=jax.api_util.debug_info("s", body, (0, 0), {})),
      jax.tree.structure((0, 0)))
  jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(
      f_flat, [jax.typeof(key), jax.core.ShapedArray((2,), jnp.float32)])
  # JAX: invars key<fry>[], float32[2]; out_avals float32[2], key<fry>[2]. ember's jaxprs
  # hold keys as their data (uint32[..., 2])
  assert [str(v.aval) for v in jaxpr.invars[len(consts):]] == ["uint32[2]", "float32[2]"]
  assert [str(a) for a in out_avals] == ["float32[2]", "uint32[2,2]"]
  u, split = jax.core.eval_jaxpr(jaxpr, consts, jax.random.key_data(key), jnp.ones(2))
  np.testing.assert_allclose(u, [1.4369426, 1.3668886], rtol=1e-6)   # JAX's
  np.testing.assert_array_equal(split, [[3716834203, 3481239269], [1946498123, 2217676430]])


def test_traced_and_lowered_out_info():
  f = jax.jit(lambda x: (x * 2, {"a": x.sum(), "b": x > 1}))
  x = jnp.ones((3,))
  # JAX: (ShapeDtypeStruct(shape=(3,), dtype=float32),
  #       {'a': ShapeDtypeStruct(shape=(), dtype=float32), 'b': ...(shape=(3,), dtype=bool)})
  for info in (f.lower(x).out_info, f.trace(x).out_info, f.trace(x).lower().out_info):
    assert isinstance(info, tuple) and set(info[1]) == {"a", "b"}
    assert (info[0].shape, info[0].dtype) == ((3,), np.float32)
    assert (info[1]["a"].shape, info[1]["a"].dtype) == ((), np.float32)
    assert (info[1]["b"].shape, info[1]["b"].dtype) == ((3,), np.bool_)
    assert isinstance(info[0], jax.ShapeDtypeStruct)
  # JAX: a weak-typed result is weak in Traced.out_info, not in Lowered.out_info
  assert jax.jit(lambda y: y).trace(1.0).out_info.weak_type is True
  assert jax.jit(lambda y: y).lower(1.0).out_info.weak_type is False


class _ArrayBox:
  """An object standing for an array (`__jax_array__`, with shape, dtype and aval), as flax's
  nnx.Variable: inside a trace it may hold a tracer."""

  def __init__(self, v):
    self.v = v

  def __jax_array__(self):
    return self.v

  shape = property(lambda self: jnp.shape(self.v))
  dtype = property(lambda self: self.v.dtype)
  aval = property(lambda self: jax.typeof(self.v))


def test_objects_with_jax_array_holding_tracers():
  # JAX 0.12.1: 6.0 12.0 and `mul a b` of the traced box's value (no constant captured)
  f = jax.jit(lambda x: x * _ArrayBox(x + 1))
  assert float(f(jnp.float32(2.0))) == 6.0 and float(f(jnp.float32(3.0))) == 12.0
  jaxpr = jax.make_jaxpr(lambda x: x * _ArrayBox(x + 1))(jnp.float32(1.0))
  assert str(jaxpr) == "{ lambda ; a:f32[]. let b:f32[] = add a 1.0:f32[]; c:f32[] = mul a b in (c,) }"
  assert float(jnp.float32(2.0) * _ArrayBox(jnp.float32(3.0))) == 6.0
# --- out_info of the stages (flax's nnx.tabulate reads Lowered.out_info) -----------------

def test_out_info_of_traced_lowered_and_compiled():
  f = jax.jit(lambda x, y: (x * 2, {"a": y + 1}))
  traced = f.trace(jnp.ones(3), 1.0)
  lowered = f.lower(jnp.ones(3), 1.0)
  # JAX 0.12.1: the traced jaxpr's types keep weak types; the lowered module's do not
  assert repr(traced.out_info) == ("(ShapeDtypeStruct(shape=(3,), dtype=float32), {'a': "
                                   "ShapeDtypeStruct(shape=(), dtype=float32, weak_type=True)})")
  assert repr(lowered.out_info) == ("(ShapeDtypeStruct(shape=(3,), dtype=float32), {'a': "
                                    "ShapeDtypeStruct(shape=(), dtype=float32)})")
  compiled = lowered.compile()
  outs = jax.tree.leaves(compiled.out_info)
  assert [(o.shape, o.dtype, o.weak_type) for o in outs] == [
      ((3,), np.dtype("float32"), False), ((), np.dtype("float32"), False)]
  assert jax.tree.structure(compiled.out_info) == jax.tree.structure(
      compiled(jnp.ones(3), 1.0))
