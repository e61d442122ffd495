"""The Jacobians (jacfwd, jacrev, hessian): JAX's construction, jvp or the pullback
vmapped over the standard basis (an `eye`, split per leaf). A library on top of the
transforms: the basis is built with jnp/lax."""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ember._src import core
from ember._src.core import api_util
from ember._src.base import dtypes, tree_util
from ember._src.base.dtypes import dtype_kind
from ember._src.library.numpy.creation import eye
from ember._src.primitives.elementwise import convert_element_type
from ember._src.primitives.structural import split_p
from ember._src.transforms import ad
from ember._src.transforms.batching import vmap
from ember._src.driver.jit import jit


def _std_basis(pytree):
  """The standard basis of the flattened leaves of `pytree`, as JAX builds it: an
  `eye(n)` (iota/eq/convert) split along axis 1 into one (n, *leaf.shape) row block per
  leaf, with the leaf's dtype and weak type."""
  leaves, _ = tree_util.tree_flatten(pytree)
  n = sum(int(np.size(x)) if not hasattr(x, "size") else int(x.size) for x in leaves)
  dt = dtypes.result_type(*leaves)
  return _unravel_array_into_pytree(pytree, 1, None, eye(n, dtype=dt))


def _unravel_array_into_pytree(pytree, axis, example, arr):
  """`arr` split along `axis` into the leaves of `pytree` (JAX's helper of the same
  name): each part reshaped to arr's shape with `axis` replaced by the leaf's shape, and
  cast to the dtype / weak type of `example` (or of the leaf)."""
  leaves, treedef = tree_util.tree_flatten(pytree)
  shape = core.get_aval(arr).shape
  axis = axis % len(shape)
  shapes = [shape[:axis] + np.shape(l) + shape[axis + 1:] for l in leaves]
  parts = _split(arr, np.cumsum([np.size(l) for l in leaves[:-1]], dtype=np.int64), axis)
  out = []
  for x, shp, leaf in zip(parts, shapes, leaves):
    ex = core.get_aval(leaf if example is None else example)
    x = x.reshape(shp)
    if dtype_kind(core.get_aval(x).dtype) == "c" and dtype_kind(ex.dtype) != "c":
      x = x.real
    out.append(convert_element_type(x, ex.dtype, ex.weak_type))
  return tree_util.tree_unflatten(treedef, out)


def _split(x, indices, axis):
  """jnp.split(x, indices, axis) as JAX's jacobians call it (sizes as NumPy ints)."""
  n = core.get_aval(x).shape[axis]
  sizes = tuple(np.diff(np.concatenate([[0], indices, [n]]).astype(np.int64)))
  return split_p.bind(x, sizes=sizes, axis=axis)


def _check_jac_input(name, x, holomorphic, allow_int):
  kind = dtype_kind(core.get_aval(x).dtype)
  if holomorphic and kind != "c":
    raise TypeError(f"{name} with holomorphic=True requires inputs with complex dtype, but "
                    f"got {core.get_aval(x).dtype.name}.")
  if not holomorphic and kind != "f" and not (allow_int and kind in "biu"):
    raise TypeError(f"{name} requires real-valued inputs (input dtype that is a sub-dtype "
                    f"of np.floating), but got {core.get_aval(x).dtype.name}. For holomorphic "
                    "differentiation, pass holomorphic=True. For differentiation of "
                    "non-holomorphic functions involving complex inputs or integer inputs, "
                    "use jax.jvp directly.")


# The docstring of jacfwd's and jacrev's functions (JAX's words).
_JAC_DOC = ("Jacobian of {fun} with respect to positional argument(s) {argnums}. Takes the "
            "same arguments as {fun} but returns the jacobian of the output with respect to "
            "the arguments at positions {argnums}.")


def jacfwd(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Jacobian of `fun` by forward mode: out.shape + in.shape per (output, input) leaf.
  As JAX: the jvp vmapped over the standard basis, tangents stacked on the last axis."""
  ad._check_callable(fun, "jacfwd")

  @api_util.wraps(fun, docstr=_JAC_DOC, argnums=argnums)
  def jacfun(*args, **kwargs):
    f_partial, dyn = ad._split_argnums(fun, args, kwargs, argnums, "jacfwd")
    for x in tree_util.tree_leaves(dyn):
      _check_jac_input("jacfwd", x, holomorphic, False)
    pushfwd = functools.partial(ad.jvp, f_partial, dyn, has_aux=has_aux)
    if has_aux:
      y, jac, aux = vmap(pushfwd, out_axes=(None, -1, None))(_std_basis(dyn))
    else:
      y, jac = vmap(pushfwd, out_axes=(None, -1))(_std_basis(dyn))
    example = dyn[0] if isinstance(argnums, (int, np.integer)) else dyn
    jac = tree_util.tree_map(lambda y_leaf, j: _unravel_array_into_pytree(example, -1, y_leaf, j),
                             y, jac)
    return (jac, aux) if has_aux else jac

  return jacfun


def jacrev(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False,
           allow_int: bool = False):
  """The Jacobian of `fun` by reverse mode: out.shape + in.shape per (output, input) leaf.
  As JAX: the pullback vmapped over the standard basis of the outputs."""
  ad._check_callable(fun, "jacrev")

  @api_util.wraps(fun, docstr=_JAC_DOC, argnums=argnums)
  def jacfun(*args, **kwargs):
    f_partial, dyn = ad._split_argnums(fun, args, kwargs, argnums, "jacrev")
    for x in tree_util.tree_leaves(dyn):
      ad._check_input_dtype("jacrev", x, holomorphic, allow_int)
    y, pullback, aux = ad._vjp(f_partial, dyn, has_aux, "jacrev")
    jac = vmap(pullback)(_std_basis(y))
    single = isinstance(argnums, (int, np.integer))
    jac = jac[0] if single else jac
    example = dyn[0] if single else dyn
    jac = tree_util.tree_map(lambda x_leaf, j: _unravel_array_into_pytree(y, 0, x_leaf, j),
                             example, jac)
    jac = tree_util.tree_transpose(tree_util.tree_structure(example),
                                   tree_util.tree_structure(y), jac)
    return (jac, aux) if has_aux else jac

  return jacfun


def hessian(fun: Callable, argnums=0, has_aux: bool = False, holomorphic: bool = False):
  """The Hessian of scalar `fun`: jacfwd(jacrev(fun))."""
  return jacfwd(jacrev(fun, argnums, has_aux, holomorphic), argnums, has_aux, holomorphic)


def fwd_and_bwd(fun: Callable, argnums, has_aux: bool = False, jitted: bool = True):
  """`(fwd, bwd)`, the forward and backward passes of `fun` (`jax.fwd_and_bwd`):
  `fwd(*args)` is `(out, residuals)` (`(out, residuals, aux)` with `has_aux`), as
  `jax.vjp(fun restricted to argnums, ...)` gives; `bwd(residuals, cotangent)` the cotangents
  of the `argnums` arguments (one, not a tuple, when `argnums` is an int). Jitted by default,
  so reusing `bwd` across steps compiles it once."""
  ad._check_callable(fun, "fwd_and_bwd")
  single = isinstance(argnums, (int, np.integer))

  def fwd(*args, **kwargs):
    partial_fun, dyn = ad._split_argnums(fun, args, kwargs, argnums, "fwd_and_bwd")
    return ad.vjp(partial_fun, *dyn, has_aux=has_aux)

  def bwd(fun_vjp, cotangent):
    cts = fun_vjp(cotangent)
    return cts[0] if single else cts
  if jitted:
    return jit(fwd), jit(bwd)
  return fwd, bwd
