"""Sparse-aware grad, value_and_grad, jacfwd, jacrev (jax.experimental.sparse.ad): a sparse
argument is differentiated through its data only, and its gradient is a sparse array with
the argument's indices (the gradient in the subspace of its sparsity pattern)."""
from __future__ import annotations

import functools
import operator

from ember._src.base import tree_util
from ember._src.library import jacobians
from ember._src.library.numpy import shape as shape_ops
from ember._src.library.sparse.base import JAXSparse
from ember._src.transforms import ad

is_sparse = lambda x: isinstance(x, JAXSparse)


def _with_data(mat, data):
  """`mat` with `data` for its data; leading extra axes of `data` (a Jacobian's output
  axes) become batch axes sharing `mat`'s indices."""
  bufs, tree = tree_util.tree_flatten(mat)
  lead = tuple(data.shape[:data.ndim - bufs[0].ndim])
  if not lead:
    return tree_util.tree_unflatten(tree, [data, *bufs[1:]])
  index_bufs = [shape_ops.broadcast_to(b, lead + tuple(b.shape)) for b in bufs[1:]]
  return type(mat)((data, *index_bufs), shape=lead + tuple(mat.shape))


def _sparse_transform(transform, fun, argnums, has_aux, returns_value, **kwargs):
  single = isinstance(argnums, int)
  nums = (operator.index(argnums),) if single else tuple(map(operator.index, argnums))

  @functools.wraps(fun)
  def wrapped(*args, **fkwargs):
    chosen = [args[i] for i in nums]
    leaves, tree = tree_util.tree_flatten(chosen, is_leaf=is_sparse)
    diff = [x.data if is_sparse(x) else x for x in leaves]

    def on_leaves(*values):
      new = [_with_data(x, v) if is_sparse(x) else v for x, v in zip(leaves, values)]
      full = list(args)
      for i, v in zip(nums, tree_util.tree_unflatten(tree, new)):
        full[i] = v
      return fun(*full, **fkwargs)
    out = transform(on_leaves, argnums=tuple(range(len(diff))), has_aux=has_aux,
                    **kwargs)(*diff)

    def sparse_grads(grads):
      grads = [_with_data(x, g) if is_sparse(x) else g for x, g in zip(leaves, grads)]
      per_arg = tree_util.tree_unflatten(tree, grads)
      return per_arg[0] if single else tuple(per_arg)
    if returns_value:
      value, grads = out
      return value, sparse_grads(grads)
    if has_aux:
      grads, aux = out
      return sparse_grads(grads), aux
    return sparse_grads(out)
  return wrapped


def value_and_grad(fun, argnums=0, has_aux=False, **kwargs):
  """jax.value_and_grad, sparse-aware."""
  return _sparse_transform(ad.value_and_grad, fun, argnums, has_aux, True, **kwargs)


def grad(fun, argnums=0, has_aux=False, **kwargs):
  """jax.grad, sparse-aware."""
  return _sparse_transform(ad.grad, fun, argnums, has_aux, False, **kwargs)


def jacfwd(fun, argnums=0, has_aux=False, **kwargs):
  """jax.jacfwd, sparse-aware."""
  return _sparse_transform(jacobians.jacfwd, fun, argnums, has_aux, False, **kwargs)


def jacrev(fun, argnums=0, has_aux=False, **kwargs):
  """jax.jacrev, sparse-aware."""
  return _sparse_transform(jacobians.jacrev, fun, argnums, has_aux, False, **kwargs)


jacobian = jacrev
