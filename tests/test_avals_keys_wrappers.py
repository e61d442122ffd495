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
