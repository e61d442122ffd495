"""Pytrees: flatten/unflatten/map over the standard containers and registered classes."""
import collections
import dataclasses
import functools

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import tree_util as tu

Point = collections.namedtuple("Point", ["x", "y"])

TREES = [
    (None, 0),
    (1, 1),
    ((1, 2), 2),
    ([1, (2, 3)], 3),
    ({"b": 1, "a": [2, 3]}, 3),
    (Point(1, (2, None)), 2),
    ({"x": (), "y": [], "z": {}}, 0),
    (collections.OrderedDict([("b", 1), ("a", 2)]), 2),
]


@pytest.mark.parametrize("tree,n", TREES)
def test_flatten_unflatten_roundtrip(tree, n):
  leaves, treedef = tu.tree_flatten(tree)
  assert len(leaves) == n == treedef.num_leaves
  assert tu.tree_unflatten(treedef, leaves) == tree
  assert tu.tree_structure(tree) == treedef
  assert hash(tu.tree_structure(tree)) == hash(treedef)


def test_dict_keys_are_sorted_and_paths():
  tree = {"b": 1, "a": [2, {"c": 3}]}
  assert tu.tree_leaves(tree) == [2, 3, 1]
  paths = [tu.keystr(p) for p, _ in tu.tree_flatten_with_path(tree)[0]]
  assert paths == ["['a'][0]", "['a'][1]['c']", "['b']"]
  assert str(tu.tree_structure(tree)) == "PyTreeDef({'a': [*, {'c': *}], 'b': *})"


def test_tree_map_multiple_trees_and_is_leaf():
  a = {"x": 1, "y": (2, 3)}
  b = {"x": 10, "y": (20, 30)}
  assert tu.tree_map(lambda u, v: u + v, a, b) == {"x": 11, "y": (22, 33)}
  assert tu.tree_map(lambda t: t if isinstance(t, int) else len(t), a,
                     is_leaf=lambda t: isinstance(t, tuple)) == {"x": 1, "y": 2}
  with pytest.raises(ValueError):
    tu.tree_map(lambda u, v: u, a, {"x": 1})


def test_none_is_a_node_without_leaves():
  assert tu.tree_leaves([None, 1, None]) == [1]
  assert tu.tree_map(lambda x: x * 2, [None, 1]) == [None, 2]


def test_register_pytree_node_class_and_node():
  @tu.register_pytree_node_class
  class Box:
    def __init__(self, a, b, tag):
      self.a, self.b, self.tag = a, b, tag
    def tree_flatten(self):
      return (self.a, self.b), self.tag
    @classmethod
    def tree_unflatten(cls, aux, children):
      return cls(*children, aux)
  box = tu.tree_map(lambda v: v + 1, Box(1, 2, "t"))
  assert (box.a, box.b, box.tag) == (2, 3, "t")
  out = jax.jit(lambda bx: Box(bx.a * 2, bx.b, bx.tag))(Box(jnp.ones(2), 1.0, "t"))
  assert isinstance(out, Box) and out.tag == "t"
  np.testing.assert_array_equal(out.a, [2.0, 2.0])
  with pytest.raises(ValueError, match="Duplicate"):
    tu.register_pytree_node(Box, lambda b: ((), None), lambda a, c: None)


def test_register_dataclass():
  @functools.partial(tu.register_dataclass, data_fields=["w"], meta_fields=["name"])
  @dataclasses.dataclass
  class Layer:
    w: object
    name: str
  leaves, td = tu.tree_flatten(Layer(3, "dense"))
  assert leaves == [3] and td.unflatten([4]) == Layer(4, "dense")

  @tu.register_dataclass
  @dataclasses.dataclass
  class Auto:
    a: object
    n: int = dataclasses.field(default=1, metadata=dict(static=True))
  assert tu.tree_leaves(Auto(5, 2)) == [5]


def test_short_names_in_ember_tree():
  t = {"a": 1, "b": (2,)}
  assert jax.tree.leaves(t) == [1, 2]
  assert jax.tree.map(lambda x: -x, t) == {"a": -1, "b": (-2,)}
  leaves, td = jax.tree.flatten(t)
  assert jax.tree.unflatten(td, leaves) == t and jax.tree.structure(t) == td


def test_partial_is_a_pytree_passable_to_jit():
  p = tu.Partial(jnp.multiply, jnp.ones(2) * 3)
  assert len(tu.tree_leaves(p)) == 1
  out = jax.jit(lambda f, x: f(x))(p, jnp.ones(2))
  np.testing.assert_array_equal(out, [3.0, 3.0])


def test_partial_of_a_partial_keeps_its_arguments_static():
  # functools.partial would merge the inner partial's arguments into the Partial's, making
  # them leaves; JAX keeps them in the static function (flax's custom_vjp passes a treedef so)
  td = tu.tree_structure((1, 2))

  def f(t, x, y):
    return t.num_leaves, x * y
  p = tu.Partial(functools.partial(f, td), jnp.ones(2))
  assert len(tu.tree_leaves(p)) == 1    # JAX: 1 (the array)
  assert p.func.func is f and p.func.args == (td,)
  n, y = p(3.0)
  assert n == 2
  np.testing.assert_array_equal(y, [3.0, 3.0])
  n, y = jax.jit(lambda q: q(2.0))(p)
  np.testing.assert_array_equal(y, [2.0, 2.0])
  leaves, tree = tu.tree_flatten(p)
  np.testing.assert_array_equal(tu.tree_unflatten(tree, leaves)(1.0)[1], [1.0, 1.0])
  assert tu.tree_structure(p) == tu.tree_structure(tu.tree_unflatten(tree, leaves))
  # a treedef bound directly is a leaf, in JAX too
  assert len(tu.tree_leaves(tu.Partial(f, td, jnp.ones(2)))) == 2


def test_tree_transpose_and_reduce():
  outer = tu.tree_structure([0, 0])
  inner = tu.tree_structure({"a": 0, "b": 0})
  assert tu.tree_transpose(outer, inner, [{"a": 1, "b": 2}, {"a": 3, "b": 4}]) == \
      {"a": [1, 3], "b": [2, 4]}
  assert tu.tree_reduce(lambda a, b: a + b, [1, (2, 3)]) == 6


def test_namedtuple_treedef_prints_as_jax():
  Point = collections.namedtuple("Point", ["x", "y"])
  assert str(tu.tree_structure(Point(1, 2.0))) == "PyTreeDef(CustomNode(namedtuple[Point], [*, *]))"
  assert str(tu.tree_structure({"a": Point(1, 2.0), "b": [1, (2,)]})) == (
      "PyTreeDef({'a': CustomNode(namedtuple[Point], [*, *]), 'b': [*, (*,)]})")


def test_tree_util_names_of_jax_0_12():
  # outputs recorded from JAX 0.12
  assert tu.flatten_one_level({"b": 1, "a": [2]}) == ([[2], 1], ("a", "b"))
  assert tu.flatten_one_level_with_keys({"b": 1, "a": [2]}) == (
      [(tu.DictKey("a"), [2]), (tu.DictKey("b"), 1)], ("a", "b"))
  Point = collections.namedtuple("Point", ["x", "y"])
  assert tu.flatten_one_level(Point(1, 2)) == ([1, 2], Point)
  with pytest.raises(ValueError, match="can't tree-flatten type: <class 'float'>"):
    tu.flatten_one_level(1.0)
  assert [tu.is_tree_node(t) for t in (int, list, type(None), Point)] == [False, True, True, True]
  assert tu.tree_broadcast([1, {"a": 2}], [(3, 4), {"a": [5, 6]}]) == [(1, 1), {"a": [2, 2]}]
  assert jax.tree.broadcast(1, [3, 4]) == [1, 1]
  assert tu.tree_reduce_associative(lambda a, b: f"({a}+{b})", [1, 2, 3, 4, 5]) == (
      "((1+2)+(3+(4+5)))")
  assert jax.tree.reduce_associative(lambda a, b: a + b, [], identity=0) == 0
  with pytest.raises(TypeError, match="Must specify identity for parallel reduction of empty"):
    tu.tree_reduce_associative(lambda a, b: a + b, [])
  td = tu.tree_structure({"a": (1, 2), "b": 3})
  assert [str(c) for c in tu.treedef_children(td)] == ["PyTreeDef((*, *))", "PyTreeDef(*)"]
  pair = tu.treedef_tuple([td, tu.tree_structure(1)])
  assert str(pair) == "PyTreeDef(({'a': (*, *), 'b': *}, *))"
  assert pair.unflatten([1, 2, 3, 4]) == ({"a": (1, 2), "b": 3}, 4)


def test_register_static_and_tree_static():
  @tu.register_static
  class Opts:
    def __init__(self, v):
      self.v = v

    def __eq__(self, other):
      return isinstance(other, Opts) and other.v == self.v

    def __hash__(self):
      return hash(self.v)
  assert tu.tree_leaves([Opts(1), 2]) == [2]
  assert tu.tree_structure(Opts(1)) == tu.tree_structure(Opts(1))

  @tu.register_dataclass
  @dataclasses.dataclass
  class Op:
    x: object
    op: str = jax.tree.static(default="add")
  leaves, treedef = jax.tree.flatten(Op(x=jnp.ones(3)))
  assert len(leaves) == 1 and treedef.unflatten(leaves).op == "add"


class _Meta:
  """A custom node whose metadata is `meta` (tree.map's error cases)."""
  def __init__(self, x, meta):
    self.x, self.meta = x, meta

  def __repr__(self):
    return f"_Meta({self.x}, {self.meta})"


class _MetaSub(_Meta):
  pass


for _cls in (_Meta, _MetaSub):
  tu.register_pytree_node(_cls, lambda n: ((n.x,), n.meta),
                          lambda m, c, cls=_cls: cls(c[0], m))

_OtherPoint = collections.namedtuple("_OtherPoint", ["x", "y"])
_OD, _DD = collections.OrderedDict, collections.defaultdict

# flatten_up_to's errors, as JAX 0.12.1 words them
UP_TO_ERRORS = [
    (_Meta(1, "a"), _Meta(2, "b"), "Mismatch custom node data: 'a' != 'b'; value: _Meta(2, b)."),
    (_Meta(1, [1]), _Meta(1, [2]), "Mismatch custom node data: [1] != [2]; value: _Meta(1, [2])."),
    (_Meta(1, "a"), _MetaSub(2, "a"), "Custom node type mismatch: expected type: <class "
     "'test_tree_util._Meta'>, value: _Meta(2, a)."),
    (Point(1, 2), _OtherPoint(1, 2), "Named tuple type mismatch: expected type: <class "
     "'test_tree_util.Point'>, tuple: _OtherPoint(x=1, y=2)."),
    ({"a": 1}, _DD(list, a=1), "Expected dict, got defaultdict(<class 'list'>, {'a': 1})."),
    (_OD(a=1), {"a": 1}, "Custom node type mismatch: expected type: <class "
     "'collections.OrderedDict'>, value: {'a': 1}."),
    (_OD(a=1, b=2), _OD(b=2, a=1), "Mismatch custom node data: ('a', 'b') != ('b', 'a'); "
     "value: " + repr(_OD(b=2, a=1)) + "."),
    (_DD(list, a=1), _DD(list, b=1), "Mismatch custom node data: (<class 'list'>, ('a',)) "
     "!= (<class 'list'>, ('b',)); value: defaultdict(<class 'list'>, {'b': 1})."),
]


@pytest.mark.parametrize("prefix,full,msg", UP_TO_ERRORS)
def test_flatten_up_to_checks_node_types_and_metadata(prefix, full, msg):
  with pytest.raises(ValueError) as info:
    tu.tree_structure(prefix).flatten_up_to(full)
  assert str(info.value) == msg.replace("test_tree_util.", f"{__name__}.")


def test_tree_map_metadata_mismatch_is_jax_error():
  """JAX 0.12.1's tree.map refuses custom nodes with other metadata (ember used to map
  them with the first tree's), naming the key path; same metadata maps."""
  assert repr(jax.tree.map(lambda a, b: a + b, _Meta(1, "a"), _Meta(2, "a"))) == "_Meta(3, a)"
  want = ("pytree structure error: different pytree metadata at key path\n"
          "    tree_map tree['k'][0]\n"
          "At that key path, the prefix pytree tree_map tree has a subtree of type\n"
          f"    {_Meta}\nwith metadata\n    a\nbut at the same key path the full pytree has "
          "a subtree of the same type but with metadata\n    b\nso the diff in the metadata "
          "at these pytree nodes is\n    - a\n    + b")
  for tree_map in (jax.tree.map, tu.tree_map):
    with pytest.raises(ValueError) as info:
      tree_map(lambda a, b: a + b, {"k": [_Meta(1, "a")]}, {"k": [_Meta(2, "b")]})
    assert str(info.value) == want
  with pytest.raises(ValueError) as info:
    tu.tree_map_with_path(lambda p, a, b: a, _Meta(1, "a"), _Meta(2, "b"))
  assert str(info.value).startswith("pytree structure error: different pytree metadata at "
                                    "key path\n    tree_map_with_path tree\n")


TREE_MAP_ERRORS = [
    ((1, 2), [1, 2], "pytree structure error: different types at key path\n    tree_map tree\n"
     "At that key path, the prefix pytree tree_map tree has a subtree of type\n    <class "
     "'tuple'>\nbut at the same key path the full pytree has a subtree of different type\n"
     "    <class 'list'>."),
    ((1, 2), (1, 2, 3), "pytree structure error: different lengths of tuple at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of "
     "type tuple of length 2, but the full pytree has a subtree of the same type but of "
     "length 3."),
    ({"a": 1}, {"a": 1, "b": 2}, "pytree structure error: different numbers of pytree "
     "children at key path\n    tree_map tree\nAt that key path, the prefix pytree tree_map "
     "tree has a subtree of type\n    <class 'dict'>\nwith 1 child keys\n    ['a']\nbut at "
     "the same key path the full pytree has a subtree of the same type but with 2 child "
     "keys\n    ['a'] ['b']\nso the symmetric difference on key sets is\n    ['b']"),
    ([None], [1], "pytree structure error: different types at key path\n    tree_map tree[0]"
     "\nAt that key path, the prefix pytree tree_map tree has a subtree of type\n    <class "
     "'NoneType'>\nbut at the same key path the full pytree has a subtree of different "
     "type\n    <class 'int'>."),
    ({"a": 1}, {"b": 1}, "pytree structure error: different pytree metadata at key path\n"
     "    tree_map tree\nAt that key path, the prefix pytree tree_map tree has a subtree of "
     "type\n    <class 'dict'>\nwith metadata\n    ('a',)\nbut at the same key path the full "
     "pytree has a subtree of the same type but with metadata\n    ('b',)\nso the diff in "
     "the metadata at these pytree nodes is\n    - ('a',)\n    ?   ^\n\n    + ('b',)\n"
     "    ?   ^\n"),
]


@pytest.mark.parametrize("a,b,msg", TREE_MAP_ERRORS)
def test_tree_map_structure_errors_as_jax(a, b, msg):
  with pytest.raises(ValueError) as info:
    jax.tree.map(lambda *xs: xs, a, b)
  assert str(info.value) == msg
  with pytest.raises(ValueError) as info:   # the failing tree among several is the one named
    jax.tree.map(lambda *xs: xs, a, a, b)
  assert str(info.value) == msg
