"""jax.tree_util.default_registry (base/tree_util.py's PyTreeRegistry): flattening and
registration on ember's one registry, with the results JAX 0.12.1's gives."""
import collections
import dataclasses

import pytest

import ember
from ember import tree_util as tu

R = tu.default_registry
_TREE = {"a": 1, "b": (2, 3)}


def test_flatten_and_flatten_with_path():
  leaves, treedef = R.flatten(_TREE)
  assert leaves == [1, 2, 3] and treedef == tu.tree_structure(_TREE)
  assert R.flatten({"a": None, "b": (2, 3)}, lambda x: isinstance(x, tuple))[0] == [(2, 3)]
  kl, treedef = R.flatten_with_path(_TREE)
  assert kl == [((tu.DictKey("a"),), 1), ((tu.DictKey("b"), tu.SequenceKey(0)), 2),
                ((tu.DictKey("b"), tu.SequenceKey(1)), 3)]
  # the predicate takes (path, value)
  kl, _ = R.flatten_with_path(_TREE, lambda path, x: path == (tu.DictKey("b"),))
  assert kl == [((tu.DictKey("a"),), 1), ((tu.DictKey("b"),), (2, 3))]


def test_flatten_one_level():
  kids, meta = R.flatten_one_level(_TREE)
  assert list(kids) == [1, (2, 3)] and meta == ("a", "b")
  assert R.flatten_one_level(3) is None   # a leaf (tree_util.flatten_one_level raises)
  assert R.flatten_one_level(ember.random.key(0)) is None   # typed keys are leaves
  kids, meta = R.flatten_one_level(None)
  assert list(kids) == [] and meta is None
  nt = collections.namedtuple("NT", "x y")
  kids, meta = R.flatten_one_level(nt(1, 2))
  assert list(kids) == [1, 2] and meta is nt
  kids, meta = R.flatten_one_level_with_keys([5, 6])
  assert list(kids) == [(tu.SequenceKey(0), 5), (tu.SequenceKey(1), 6)] and meta is None
  assert R.flatten_one_level_with_keys(3.0) is None


def test_is_node():
  assert [R.is_node(t) for t in (type(None), int, list, dict)] == [True, False, True, True]


def test_register_node_and_dataclass_node():
  class Node:
    def __init__(self, p, q):
      self.p, self.q = p, q

  R.register_node(Node, lambda n: ((n.p, n.q), "aux"), lambda aux, ch: Node(*ch),
                  lambda n: (((tu.GetAttrKey("p"), n.p), (tu.GetAttrKey("q"), n.q)), "aux"))
  assert R.is_node(Node) and tu.tree_leaves(Node(1, 2)) == [1, 2]
  kids, meta = R.flatten_one_level_with_keys(Node(1, 2))
  assert list(kids) == [(tu.GetAttrKey("p"), 1), (tu.GetAttrKey("q"), 2)] and meta == "aux"
  assert tu.tree_flatten_with_path(Node(1, 2))[0] == [((tu.GetAttrKey("p"),), 1),
                                                       ((tu.GetAttrKey("q"),), 2)]
  back = ember.jit(lambda n: n)(Node(1.0, 2.0))   # the transformations see the same registry
  assert isinstance(back, Node) and float(back.q) == 2.0
  with pytest.raises(ValueError, match="Duplicate custom PyTreeDef type registration"):
    R.register_node(Node, lambda n: ((), None), lambda aux, ch: Node(0, 0))

  @dataclasses.dataclass
  class D:
    x: int
    y: int

  R.register_dataclass_node(D, ["x"], ["y"])
  assert tu.tree_leaves(D(1, 2)) == [1]
  kids, meta = R.flatten_one_level_with_keys(D(1, 2))
  assert list(kids) == [(tu.GetAttrKey("x"), 1)] and meta == (2,)
  assert tu.tree_map(lambda v: v + 1, D(1, 2)) == D(2, 2)
