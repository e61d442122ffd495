"""Pytrees: nested containers of arrays, flattened to a list of leaves and a treedef.

None, tuples, lists, dicts (sorted keys), namedtuples and registered classes are nodes;
everything else is a leaf. The semantics follow jax.tree_util.

Two views of one registry: the functions of this module are what ember's transformations
flatten with, the `public` namespace is `jax.tree_util` / `jax.tree` (ember/tree_util.py,
ember/tree.py). They differ only on the types registered with `register_transform_node`:
typed PRNG key arrays, leaves to users as in JAX (`tree_structure(key)` is `PyTreeDef(*)`)
but nodes to ember's transformations, which so see the key's uint32 data (an ember key is a
wrapper of its data, not an array with an extended dtype).
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import textwrap
import types
from typing import Any, Callable, NamedTuple, TypeVar

# type -> (flatten(x) -> (children, aux), unflatten(aux, children) -> x, flatten_with_keys)
_registry: dict[type, tuple[Callable, Callable, Callable | None]] = {}
# type -> (flatten, unflatten, None): leaves to users, nodes to ember's transformations
_transform_nodes: dict[type, tuple[Callable, Callable, None]] = {}


class SequenceKey(NamedTuple):
  idx: int
  def __str__(self): return f"[{self.idx!r}]"


class DictKey(NamedTuple):
  key: Any
  def __str__(self): return f"[{self.key!r}]"


class GetAttrKey(NamedTuple):
  name: str
  def __str__(self): return f".{self.name}"


class FlattenedIndexKey(NamedTuple):
  key: int
  def __str__(self): return f"[<flat index {self.key}>]"


KeyEntry = TypeVar("KeyEntry", bound=Any)
KeyPath = tuple[KeyEntry, ...]


def keystr(path, *, simple: bool = False, separator: str = "") -> str:
  if simple:
    return separator.join(str(k[0]) if isinstance(k, tuple) else str(k) for k in path)
  return separator.join(str(k) for k in path)


def register_pytree_node(nodetype: type, flatten_func: Callable, unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None) -> None:
  if nodetype in _registry:
    raise ValueError(f"Duplicate custom PyTreeDef type registration for {nodetype}.")
  _registry[nodetype] = (flatten_func, unflatten_func, flatten_with_keys_func)


def register_transform_node(nodetype: type, flatten_func: Callable,
                            unflatten_func: Callable) -> None:
  """Make `nodetype` a leaf of user pytrees (jax.tree_util) but a node, with the children
  `flatten_func` gives, of the pytrees ember's transformations flatten."""
  _transform_nodes[nodetype] = (flatten_func, unflatten_func, None)


def register_pytree_with_keys(nodetype, flatten_with_keys, unflatten_func, flatten_func=None):
  def flat(x):
    kc, aux = flatten_with_keys(x)
    return [c for _, c in kc], aux
  register_pytree_node(nodetype, flatten_func or flat, unflatten_func, flatten_with_keys)


def register_pytree_with_keys_class(cls):
  """Class decorator: the class defines `tree_flatten_with_keys()` (children as (key,
  child) pairs, aux data), classmethod `tree_unflatten`, and optionally `tree_flatten()`."""
  flatten = (lambda x: x.tree_flatten()) if hasattr(cls, "tree_flatten") else None
  register_pytree_with_keys(cls, lambda x: x.tree_flatten_with_keys(), cls.tree_unflatten,
                            flatten)
  return cls


def register_pytree_node_class(cls):
  """Class decorator: the class defines `tree_flatten()` and classmethod `tree_unflatten`."""
  register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
  return cls


def register_dataclass(nodetype=None, data_fields=None, meta_fields=None, drop_fields=()):
  """Register a dataclass: `data_fields` are children, `meta_fields` are static aux data."""
  if nodetype is None:
    return functools.partial(register_dataclass, data_fields=data_fields,
                             meta_fields=meta_fields, drop_fields=drop_fields)
  if data_fields is None or meta_fields is None:
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError("register_dataclass: data_fields and meta_fields are required for "
                      f"non-dataclass {nodetype.__name__}")
    meta = set()
    data = []
    for f in dataclasses.fields(nodetype):
      if f.name in drop_fields:
        continue
      if f.metadata.get("static", False):
        meta.add(f.name)
      else:
        data.append(f.name)
    data_fields = data if data_fields is None else data_fields
    meta_fields = [f.name for f in dataclasses.fields(nodetype) if f.name in meta] \
        if meta_fields is None else meta_fields
  data_fields, meta_fields = list(data_fields), list(meta_fields)

  def flatten_with_keys(x):
    return ([(GetAttrKey(n), getattr(x, n)) for n in data_fields],
            tuple(getattr(x, n) for n in meta_fields))

  def unflatten(aux, children):
    kw = dict(zip(meta_fields, aux))
    kw.update(zip(data_fields, children))
    return nodetype(**kw)

  register_pytree_with_keys(nodetype, flatten_with_keys, unflatten)
  return nodetype


def register_static(cls: type) -> type:
  """Register `cls` as a node with no children: its instances are static aux data (they
  must be hashable) and never leaves."""
  register_pytree_node(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def static(**kwargs):
  """`dataclasses.field(...)` marked static, for register_dataclass (`jax.tree.static`)."""
  metadata = {**kwargs.pop("metadata", {}), "static": True}
  return dataclasses.field(metadata=metadata, **kwargs)


def is_tree_node(typ: type) -> bool:
  """Whether instances of `typ` are pytree nodes (built-in containers or registered)."""
  return (typ in (tuple, list, dict, collections.OrderedDict, collections.defaultdict,
                  type(None)) or typ in _registry
          or (issubclass(typ, tuple) and hasattr(typ, "_fields")))


def _is_namedtuple(x) -> bool:
  return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _node_children(x, transform: bool = True):
  """(kind, aux, [(key, child)]) for a pytree node, or None for a leaf; `transform`: as
  ember's transformations see it (register_transform_node's types are nodes)."""
  t = type(x)
  if x is None:
    return ("none", None, [])
  if t is tuple:
    return ("tuple", len(x), [(SequenceKey(i), c) for i, c in enumerate(x)])
  if t is list:
    return ("list", len(x), [(SequenceKey(i), c) for i, c in enumerate(x)])
  if t is dict or t is collections.OrderedDict or t is collections.defaultdict:
    try:
      keys = sorted(x) if t is not collections.OrderedDict else list(x)
    except TypeError:
      keys = list(x)
    aux = (t, tuple(keys), getattr(x, "default_factory", None))
    return ("dict", aux, [(DictKey(k), x[k]) for k in keys])
  if _is_namedtuple(x) and t not in _registry:
    return ("namedtuple", t, [(GetAttrKey(f), getattr(x, f)) for f in t._fields])
  reg = _registry.get(t) or (_transform_nodes.get(t) if transform else None)
  if reg is not None:
    flatten, _, with_keys = reg
    if with_keys is not None:
      kc, aux = with_keys(x)
      return ("custom", (t, aux), list(kc))
    children, aux = flatten(x)
    return ("custom", (t, aux), [(FlattenedIndexKey(i), c) for i, c in enumerate(children)])
  return None


class PyTreeDef:
  """The structure of a pytree: node kinds and aux data, with leaves as holes."""
  __slots__ = ("kind", "aux", "children", "num_leaves", "_hash")

  def __init__(self, kind, aux, children):
    self.kind, self.aux, self.children = kind, aux, tuple(children)
    self.num_leaves = 1 if kind == "leaf" else sum(c.num_leaves for c in self.children)
    self._hash = None

  @property
  def num_nodes(self) -> int:
    return 1 + sum(c.num_nodes for c in self.children)

  def _key(self):
    return (self.kind, _hashable(self.aux), self.children)

  def __eq__(self, other):
    return isinstance(other, PyTreeDef) and self._key() == other._key()

  def __hash__(self):
    if self._hash is None:
      self._hash = hash(self._key())
    return self._hash

  def unflatten(self, leaves):
    leaves = list(leaves)
    if len(leaves) != self.num_leaves:
      raise ValueError(f"Too {'few' if len(leaves) < self.num_leaves else 'many'} leaves "
                       f"for PyTreeDef; expected {self.num_leaves}, got {len(leaves)}.")
    it = iter(leaves)
    return self._build(it)

  def _build(self, it):
    k = self.kind
    if k == "leaf":
      return next(it)
    kids = [c._build(it) for c in self.children]
    if k == "none":
      return None
    if k == "tuple":
      return tuple(kids)
    if k == "list":
      return kids
    if k == "dict":
      t, keys, factory = self.aux
      if t is collections.defaultdict:
        return collections.defaultdict(factory, zip(keys, kids))
      return t(zip(keys, kids))
    if k == "namedtuple":
      return self.aux(*kids)
    t, aux = self.aux
    return (_registry.get(t) or _transform_nodes[t])[1](aux, kids)

  def flatten_up_to(self, tree):
    """The subtrees of `tree` at the leaf positions of this treedef."""
    out = []
    self._up_to(tree, out)
    return out

  def _up_to(self, tree, out):
    if self.kind == "leaf":
      out.append(tree)
      return
    node = _node_children(tree)
    if node is not None and node[0] == self.kind == "dict" and node[1] != self.aux:
      raise ValueError(self._dict_mismatch(tree, node[1]))
    if node is None or node[0] != self.kind or len(node[2]) != len(self.children):
      raise ValueError(self._mismatch(tree, node))
    if self.kind == "namedtuple" and node[1] is not self.aux:
      raise ValueError(f"Named tuple type mismatch: expected type: {self.aux}, tuple: "
                       f"{tree!r}.")
    if self.kind == "custom" and not _same_custom_node(self.aux, node[1]):
      raise ValueError(self._custom_mismatch(tree, node[1]))
    for c, (_, sub) in zip(self.children, node[2]):
      c._up_to(sub, out)

  def _dict_mismatch(self, tree, aux) -> str:
    """JAX's words: a dict's keys differ, or its type; an OrderedDict or defaultdict (custom
    nodes to JAX) has other data (its keys in order; its default factory and keys)."""
    t = self.aux[0]
    if aux[0] is not t:
      return (f"Expected dict, got {tree!r}." if t is dict else
              f"Custom node type mismatch: expected type: {t}, value: {tree!r}.")
    if t is dict:
      return (f"Dict key mismatch; expected keys: {list(self.aux[1])}; present keys: "
              f"{list(aux[1])}.")
    meta = (lambda a: a[1]) if t is collections.OrderedDict else (lambda a: (a[2], a[1]))
    return f"Mismatch custom node data: {meta(self.aux)!r} != {meta(aux)!r}; value: {tree!r}."

  def _custom_mismatch(self, tree, aux) -> str:
    if aux[0] is not self.aux[0]:
      return f"Custom node type mismatch: expected type: {self.aux[0]}, value: {tree!r}."
    return f"Mismatch custom node data: {self.aux[1]!r} != {aux[1]!r}; value: {tree!r}."

  def _mismatch(self, tree, node) -> str:
    """Why `tree` does not have this node at its root, in JAX's words."""
    kind = self.kind
    same_kind = node is not None and node[0] == kind
    if kind == "none":
      return (f"Expected None, got {tree!r}.\n\nIn previous releases of JAX, flatten-up-to "
              "used to consider None to be a tree-prefix of non-None values. To obtain the "
              "previous behavior, you can usually write:\n  jax.tree.map(lambda x, y: None "
              "if x is None else f(x, y), a, b, is_leaf=lambda x: x is None)")
    if kind in ("tuple", "list"):
      if not same_kind:
        return f"Expected {kind}, got {tree!r}."
      return (f"{kind.capitalize()} arity mismatch: {len(node[2])} != {len(self.children)}; "
              f"{kind}: {tree!r}.")
    if kind == "dict":
      if node is None or node[0] != "dict":
        return f"Expected dict, got {tree!r}."
      return (f"Dict key mismatch; expected keys: {list(self.aux[1])}; present keys: "
              f"{[k.key for k, _ in node[2]]}.")
    if kind == "namedtuple":
      return f"Expected named tuple, got {tree!r}."
    return f"Custom node type mismatch: expected type: {self.aux[0]}, value: {tree!r}."

  def leaf_counts_under(self, full: "PyTreeDef", loose: bool = False) -> list[int]:
    """For each leaf of this treedef, a prefix of `full`: how many leaves of `full` sit at
    or under its position. Works on structures alone: nothing is unflattened, so classes
    whose unflatten converts its children (`jnp.asarray`) are never handed placeholders.
    `loose`: containers match by their number of children alone (and keys, where both are
    dicts), as JAX's vmap matches its axis specs."""
    out = []
    self._counts_under(full, out, loose)
    return out

  def _counts_under(self, full: "PyTreeDef", out: list, loose: bool) -> None:
    if self.kind == "leaf":
      out.append(full.num_leaves)
      return
    if not (self._same_arity(full) if loose else self._same_node(full)):
      raise ValueError(f"Tree structure mismatch: expected {self}, got {full}")
    for c, f in zip(self.children, full.children):
      c._counts_under(f, out, loose)

  def _same_arity(self, other: "PyTreeDef") -> bool:
    """Both containers, with as many children, and for two dicts the same keys."""
    if other.kind == "leaf" or len(other.children) != len(self.children):
      return False
    return not (self.kind == other.kind == "dict") or self.aux[1] == other.aux[1]

  def _same_node(self, other: "PyTreeDef") -> bool:
    """Same kind and arity, and for dicts the same keys, for other nodes the same type."""
    if other.kind != self.kind or len(other.children) != len(self.children):
      return False
    if self.kind == "dict":
      return self.aux[1] == other.aux[1]
    if self.kind == "custom":
      return self.aux[0] is other.aux[0]
    return self.kind != "namedtuple" or self.aux is other.aux

  def __repr__(self):
    return f"PyTreeDef({self._str()})"

  def _str(self):
    k = self.kind
    if k == "leaf":
      return "*"
    if k == "none":
      return "None"
    kids = [c._str() for c in self.children]
    if k == "tuple":
      return "(" + ", ".join(kids) + ("," if len(kids) == 1 else "") + ")"
    if k == "list":
      return "[" + ", ".join(kids) + "]"
    if k == "dict":
      return "{" + ", ".join(f"{key!r}: {s}" for key, s in zip(self.aux[1], kids)) + "}"
    if k == "namedtuple":  # as JAX 0.12 prints it
      return f"CustomNode(namedtuple[{self.aux.__name__}], [" + ", ".join(kids) + "])"
    return f"CustomNode({self.aux[0].__name__}[{self.aux[1]!r}], [" + ", ".join(kids) + "])"


def _same_custom_node(a: tuple, b: tuple) -> bool:
  """(type, node data) pairs of two custom nodes: the same type and equal data (compared as
  JAX compares them: identical, or `==`)."""
  return a[0] is b[0] and (a[1] is b[1] or bool(a[1] == b[1]))


def _prefix_error(path: tuple, prefix, full, is_leaf, transform: bool):
  """Why `full` does not have the structure of `prefix` up to its leaves, at the first place
  they differ: a function of the name of the prefix tree giving JAX's ValueError; None when
  `prefix` is a prefix of `full`."""
  if is_leaf is not None and is_leaf(prefix):
    return None
  node = _node_children(prefix, transform)
  if node is None or prefix is None and full is None:
    return None
  at = keystr(path)
  if type(prefix) is not type(full):
    return lambda name: ValueError(
        f"pytree structure error: different types at key path\n    {name}{at}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix)}\nbut at the same key path the full pytree has a subtree of "
        f"different type\n    {type(full)}.")
  kind, aux, kids = node
  full_kids = _node_children(full, transform)[2]
  if kind in ("tuple", "list"):
    if len(kids) != len(full_kids):
      return lambda name: ValueError(
          f"pytree structure error: different lengths of {kind} at key path\n"
          f"    {name}{at}\nAt that key path, the prefix pytree {name} has a subtree of "
          f"type {kind} of length {len(kids)}, but the full pytree has a subtree of the "
          f"same type but of length {len(full_kids)}.")
  elif len(kids) != len(full_kids):
    keys, full_keys = [k for k, _ in kids], [k for k, _ in full_kids]
    diff = set(keys) ^ set(full_keys)
    return lambda name: ValueError(
        f"pytree structure error: different numbers of pytree children at key path\n"
        f"    {name}{at}\nAt that key path, the prefix pytree {name} has a subtree of type"
        f"\n    {type(prefix)}\nwith {len(keys)} child keys\n"
        f"    {' '.join(map(str, keys))}\nbut at the same key path the full pytree has a "
        f"subtree of the same type but with {len(full_keys)} child keys\n"
        f"    {' '.join(map(str, full_keys))}\nso the symmetric difference on key sets is\n"
        f"    {' '.join(map(str, diff))}")
  meta, full_meta = _node_meta(prefix, transform), _node_meta(full, transform)
  if not (meta is full_meta or bool(meta == full_meta)):
    diff = "\n".join(difflib.ndiff(str(meta).splitlines(), str(full_meta).splitlines()))
    return lambda name: ValueError(
        f"pytree structure error: different pytree metadata at key path\n    {name}{at}\n"
        f"At that key path, the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix)}\nwith metadata\n    {meta}\nbut at the same key path the "
        f"full pytree has a subtree of the same type but with metadata\n    {full_meta}\n"
        f"so the diff in the metadata at these pytree nodes is\n"
        f"{textwrap.indent(diff, '    ')}")
  for (k, sub), (_, full_sub) in zip(kids, full_kids):
    err = _prefix_error(path + (k,), sub, full_sub, is_leaf, transform)
    if err is not None:
      return err
  return None


def _node_meta(tree, transform: bool):
  """A node's metadata as JAX's flatten_one_level gives it (a dict's keys, a custom node's
  data, a namedtuple's type)."""
  kind, aux, _ = _node_children(tree, transform)
  if kind == "dict":
    return aux[1] if aux[0] is not collections.defaultdict else (aux[2], aux[1])
  return aux if kind == "namedtuple" else aux[1] if kind == "custom" else None


def _hashable(aux):
  try:
    hash(aux)
    return aux
  except TypeError:
    return repr(aux)


_LEAF = PyTreeDef("leaf", None, ())


def _flatten(tree, is_leaf, leaves, paths, path, transform=True, leaf_takes_path=False):
  if is_leaf is not None and (is_leaf(path, tree) if leaf_takes_path else is_leaf(tree)):
    leaves.append(tree)
    if paths is not None:
      paths.append(path)
    return _LEAF
  node = _node_children(tree, transform)
  if node is None:
    leaves.append(tree)
    if paths is not None:
      paths.append(path)
    return _LEAF
  kind, aux, kc = node
  children = [_flatten(c, is_leaf, leaves, paths, path + (k,), transform, leaf_takes_path)
              for k, c in kc]
  return PyTreeDef(kind, aux, children)


class _Unspecified:
  def __repr__(self):
    return "<unspecified>"


_UNSPECIFIED = _Unspecified()


def tree_unflatten(treedef: PyTreeDef, leaves):
  return treedef.unflatten(leaves)


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  return treedef.kind == "leaf"


def _tree_api(transform: bool):
  """The flattening functions, as ember's transformations (`transform`) or users see pytrees
  (register_transform_node's types are leaves to users)."""

  def tree_flatten(tree, is_leaf: Callable | None = None):
    leaves: list = []
    treedef = _flatten(tree, is_leaf, leaves, None, (), transform)
    return leaves, treedef

  def tree_flatten_with_path(tree, is_leaf: Callable | None = None,
                             is_leaf_takes_path: bool = False):
    """(path, leaf) pairs and the treedef; with `is_leaf_takes_path`, `is_leaf` is called
    as `is_leaf(path, x)`."""
    leaves: list = []
    paths: list = []
    treedef = _flatten(tree, is_leaf, leaves, paths, (), transform, is_leaf_takes_path)
    return list(zip(paths, leaves)), treedef

  def tree_leaves_with_path(tree, is_leaf: Callable | None = None,
                            is_leaf_takes_path: bool = False):
    return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]

  def tree_leaves(tree, is_leaf: Callable | None = None):
    return tree_flatten(tree, is_leaf)[0]

  def tree_structure(tree, is_leaf: Callable | None = None) -> PyTreeDef:
    return tree_flatten(tree, is_leaf)[1]

  def rest_up_to(name: str, treedef: PyTreeDef, tree, rest, is_leaf) -> list:
    """Each of `rest` flattened up to `treedef`; a mismatch is JAX's error, which names the
    key path where `tree` and the failing one differ."""
    others = []
    for r in rest:
      try:
        others.append(treedef.flatten_up_to(r))
      except Exception as e:
        err = _prefix_error((), tree, r, is_leaf, transform)
        raise (err(f"{name} tree") if err is not None else e) from None
    return others

  def tree_map(f: Callable, tree, *rest, is_leaf: Callable | None = None):
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = rest_up_to("tree_map", treedef, tree, rest, is_leaf) if rest else ()
    return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))

  def tree_map_with_path(f: Callable, tree, *rest, is_leaf: Callable | None = None,
                         is_leaf_takes_path: bool = False):
    kl, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
    others = rest_up_to("tree_map_with_path", treedef, tree, rest,
                        None if is_leaf_takes_path else is_leaf) if rest else ()
    return treedef.unflatten(f(p, x, *xs) for (p, x), *xs in zip(kl, *others))

  def tree_reduce(function: Callable, tree, initializer=_UNSPECIFIED,
                  is_leaf: Callable | None = None):
    leaves = tree_leaves(tree, is_leaf)
    if initializer is _UNSPECIFIED:
      return functools.reduce(function, leaves)
    return functools.reduce(function, leaves, initializer)

  def tree_reduce_associative(operation: Callable, tree, *, identity=_UNSPECIFIED,
                              is_leaf: Callable | None = None):
    """Reduce the leaves with an associative `operation` as a balanced tree of calls:
    `((a+b)+(c+(d+e)))`."""
    leaves = tree_leaves(tree, is_leaf)
    if not leaves:
      if identity is _UNSPECIFIED:
        raise TypeError("Must specify identity for parallel reduction of empty sequence.")
      return identity

    def reduce(xs):
      if len(xs) == 1:
        return xs[0]
      return operation(reduce(xs[:len(xs) // 2]), reduce(xs[len(xs) // 2:]))
    return reduce(leaves)

  def tree_broadcast(prefix_tree, full_tree, is_leaf: Callable | None = None):
    """`prefix_tree` with each leaf repeated over the subtree of `full_tree` at its place."""
    leaves, prefix_def = tree_flatten(prefix_tree, is_leaf)
    subtrees = prefix_def.flatten_up_to(full_tree)
    return prefix_def.unflatten(tree_map(lambda _: x, sub, is_leaf=is_leaf)
                                for x, sub in zip(leaves, subtrees))

  def flatten_one_level(tree) -> tuple[list, Any]:
    """The children of the node `tree` and its node data; ValueError for a leaf."""
    kids, meta = flatten_one_level_with_keys(tree)
    return [c for _, c in kids], meta

  def flatten_one_level_with_keys(tree) -> tuple[list, Any]:
    """The (key, child) pairs of the node `tree` and its node data; ValueError for a leaf."""
    node = _node_children(tree, transform)
    if node is None:
      raise ValueError(f"can't tree-flatten type: {type(tree)}")
    kind, aux, kids = node
    meta = {"dict": lambda: aux[1], "namedtuple": lambda: aux,
            "custom": lambda: aux[1]}.get(kind, lambda: None)()
    return list(kids), meta

  def tree_all(tree, *, is_leaf: Callable | None = None) -> bool:
    return all(tree_leaves(tree, is_leaf))

  def all_leaves(iterable, is_leaf: Callable | None = None) -> bool:
    return all(treedef_is_leaf(tree_structure(x, is_leaf)) for x in iterable)

  return types.SimpleNamespace(**{k: v for k, v in locals().items() if callable(v)})


# what jax.tree_util / jax.tree are (typed keys are leaves)
public = _tree_api(transform=False)
# what ember's transformations flatten with (typed keys are nodes over their data)
_transform_api = _tree_api(transform=True)


class PyTreeRegistry:
  """A registry of pytree node types as JAX's `PyTreeRegistry` presents it
  (`jax.tree_util.default_registry`): flattening and registration on ember's one registry
  (the one `register_pytree_node` and the `tree_*` functions use), as users see pytrees."""

  def flatten(self, tree, leaf_predicate: Callable | None = None):
    """(leaves, treedef); `leaf_predicate(x)` marks more leaves."""
    return public.tree_flatten(tree, leaf_predicate)

  def flatten_with_path(self, tree, leaf_predicate: Callable | None = None):
    """((key path, leaf) pairs, treedef); `leaf_predicate(path, x)` marks more leaves."""
    return public.tree_flatten_with_path(tree, leaf_predicate, is_leaf_takes_path=True)

  def flatten_one_level(self, tree):
    """(children, node data) of a node; None for a leaf."""
    return public.flatten_one_level(tree) if self._is_node_value(tree) else None

  def flatten_one_level_with_keys(self, tree):
    """((key, child) pairs, node data) of a node; None for a leaf."""
    return public.flatten_one_level_with_keys(tree) if self._is_node_value(tree) else None

  def is_node(self, type) -> bool:   # noqa: A002 (JAX's parameter name)
    """Whether instances of `type` are nodes (built-in containers or registered)."""
    return is_tree_node(type)

  def register_node(self, type, to_iterable: Callable, from_iterable: Callable,   # noqa: A002
                    to_iterable_with_keys: Callable | None = None) -> None:
    """`register_pytree_node` (ValueError for a type registered already)."""
    register_pytree_node(type, to_iterable, from_iterable, to_iterable_with_keys)

  def register_dataclass_node(self, type, data_fields, meta_fields, /) -> None:   # noqa: A002
    """`register_dataclass` with the fields given: data fields are children, meta fields
    the node data."""
    register_dataclass(type, data_fields, meta_fields)

  @staticmethod
  def _is_node_value(tree) -> bool:
    return _node_children(tree, transform=False) is not None


default_registry = PyTreeRegistry()   # ember's registry (jax.tree_util.default_registry)
tree_flatten = _transform_api.tree_flatten
tree_flatten_with_path = _transform_api.tree_flatten_with_path
tree_leaves_with_path = _transform_api.tree_leaves_with_path
tree_leaves = _transform_api.tree_leaves
tree_structure = _transform_api.tree_structure
tree_map = _transform_api.tree_map
tree_map_with_path = _transform_api.tree_map_with_path
tree_reduce = _transform_api.tree_reduce
tree_reduce_associative = _transform_api.tree_reduce_associative
tree_broadcast = _transform_api.tree_broadcast
flatten_one_level = _transform_api.flatten_one_level
flatten_one_level_with_keys = _transform_api.flatten_one_level_with_keys
tree_all = _transform_api.tree_all
all_leaves = _transform_api.all_leaves


def leaves_of_transform_nodes(treedef: PyTreeDef) -> list[bool]:
  """Per leaf of `treedef` (as ember's transformations flatten): whether it is a child of a
  register_transform_node type (a typed key's data)."""
  if treedef.kind == "leaf":
    return [False]
  if treedef.kind == "custom" and treedef.aux[0] in _transform_nodes:
    return [True] * treedef.num_leaves
  return [b for c in treedef.children for b in leaves_of_transform_nodes(c)]


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  return list(treedef.children)


def treedef_tuple(treedefs) -> PyTreeDef:
  """The treedef of a tuple whose elements have the structures `treedefs`."""
  treedefs = tuple(treedefs)
  return PyTreeDef("tuple", len(treedefs), treedefs)


def tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
  flat = outer_treedef.flatten_up_to(pytree_to_transpose)
  inner = [inner_treedef.flatten_up_to(x) for x in flat]
  cols = list(zip(*inner)) if inner else [[] for _ in range(inner_treedef.num_leaves)]
  return inner_treedef.unflatten(outer_treedef.unflatten(c) for c in cols)


class Partial(functools.partial):
  """A functools.partial that is a pytree: its bound arguments are leaves, the function
  is static. Pass it to jitted functions as an ordinary argument."""

  def __new__(cls, func, *args, **kwargs):
    # functools.partial merges a partial `func`'s arguments into its own: they would turn
    # into leaves (flax's `Partial(partial(f, treedef), vjp_fn)`); as in JAX, the partial
    # stays the static function
    if isinstance(func, functools.partial):
      func = _PartialFunc(func)
    return super().__new__(cls, func, *args, **kwargs)


class _PartialFunc:
  """A functools.partial as Partial's function, unmerged: called, compared and hashed as it
  is (its func, args and keywords readable as the partial's)."""
  __slots__ = ("partial",)

  def __init__(self, partial: functools.partial):
    self.partial = partial

  def __call__(self, *args, **kwargs):
    return self.partial(*args, **kwargs)

  func = property(lambda self: self.partial.func)
  args = property(lambda self: self.partial.args)
  keywords = property(lambda self: self.partial.keywords)

  def __eq__(self, other):
    return isinstance(other, _PartialFunc) and other.partial is self.partial

  def __hash__(self):
    return hash(self.partial)

  def __repr__(self):
    return repr(self.partial)



register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, xs: Partial(func, *xs[0], **xs[1]))
