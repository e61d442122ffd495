"""ember.tree_util: pytree utilities (jax.tree_util)."""
from ember._src.base.tree_util import (  # noqa: F401
    DictKey, FlattenedIndexKey, GetAttrKey, KeyEntry, KeyPath, Partial, PyTreeDef, SequenceKey,
    is_tree_node, keystr, register_dataclass, register_pytree_node, register_pytree_node_class,
    register_pytree_with_keys, register_pytree_with_keys_class, register_static,
    tree_transpose, tree_unflatten, treedef_children, treedef_is_leaf, treedef_tuple)
from ember._src.base.tree_util import public as _public
from ember._src.base.tree_util import default_registry  # noqa: F401

# the flattening functions as users see pytrees (typed PRNG keys are leaves, as in JAX)
all_leaves = _public.all_leaves
flatten_one_level = _public.flatten_one_level
flatten_one_level_with_keys = _public.flatten_one_level_with_keys
tree_all = _public.tree_all
tree_broadcast = _public.tree_broadcast
tree_flatten = _public.tree_flatten
tree_flatten_with_path = _public.tree_flatten_with_path
tree_leaves = _public.tree_leaves
tree_leaves_with_path = _public.tree_leaves_with_path
tree_map = _public.tree_map
tree_map_with_path = _public.tree_map_with_path
tree_reduce = _public.tree_reduce
tree_reduce_associative = _public.tree_reduce_associative
tree_structure = _public.tree_structure
