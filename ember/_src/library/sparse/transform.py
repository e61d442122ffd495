"""`sparsify`: jnp code run on BCOO operands. The function's jaxpr is evaluated with sparse
rules for the operations that keep sparsity (zero-preserving elementwise ops on the data,
products, sums, dot products, reductions and the structural ops); any other operation sees
its operands' dense values (where JAX raises NotImplementedError)."""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np


from ember._src.base import tree_util
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.core.avals import ShapedArray
from ember._src.core.trace import Trace, full_raise, new_main
from ember._src.core.tracers import Tracer
from ember._src.core.jaxpr import Literal
from ember._src.driver.jit import make_jaxpr
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import (
    BCOO, _add_sparse, bcoo_dot_general, bcoo_multiply_sparse, bcoo_transpose)
from ember._src.library.numpy import reductions
from ember._src.primitives.indexing import GatherScatterMode
from ember._src.library.sparse import ops
from ember._src.library.sparse.bcoo import bcoo_reduce_sum, bcoo_reshape


# --- sparsify -------------------------------------------------------------------------------

def _dense(x):
  return x.todense() if isinstance(x, JAXSparse) else x


def _mul(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return bcoo_multiply_sparse(a, b)
  return a * b if isinstance(a, BCOO) else b * a


def _add(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return _add_sparse(a, b)
  return _dense(a) + _dense(b)


def _sub(eqn, a, b):
  if isinstance(a, BCOO) and isinstance(b, BCOO):
    return _add_sparse(a, -b)
  return _dense(a) - _dense(b)


def _dot_general(eqn, a, b):
  p = eqn.params
  return bcoo_dot_general(a, b, dimension_numbers=p["dimension_numbers"],
                          preferred_element_type=p.get("preferred_element_type"))


def _on_data(eqn, a):
  """A zero-preserving elementwise op: it maps the stored values, the indices stay."""
  data = eqn.primitive.bind(a.data, **eqn.params)
  return BCOO((data, a.indices), shape=a.shape, indices_sorted=a.indices_sorted,
              unique_indices=a.unique_indices)


def _dense_scalar(mat):
  """A 0-d sum is returned dense (as JAX's rule does)."""
  return reductions.sum(mat.data) if mat.shape == () else mat


def _integer_pow(eqn, a):
  return _on_data(eqn, a) if eqn.params["y"] > 0 else eqn.primitive.bind(_dense(a),
                                                                         **eqn.params)


def _div(eqn, a, b):
  if isinstance(a, BCOO) and not isinstance(b, JAXSparse) and np.ndim(b) == 0:
    return BCOO((a.data / b, a.indices), shape=a.shape, indices_sorted=a.indices_sorted,
                unique_indices=a.unique_indices)
  return _dense(a) / _dense(b)


def _gather(eqn, a, idx):
  p = eqn.params
  mode = GatherScatterMode.from_any(p["mode"] if p["mode"] is not None
                                    else GatherScatterMode.PROMISE_IN_BOUNDS)
  if isinstance(idx, JAXSparse) or mode != GatherScatterMode.PROMISE_IN_BOUNDS:
    return eqn.primitive.bind(_dense(a), _dense(idx), **p)
  return ops.bcoo_gather(a, idx, p["dimension_numbers"], p["slice_sizes"],
                         unique_indices=p["unique_indices"],
                         indices_are_sorted=p["indices_are_sorted"], mode=p["mode"],
                         fill_value=p["fill_value"])


def _concatenate(eqn, *xs):
  if all(isinstance(x, BCOO) for x in xs):
    return ops.bcoo_concatenate(xs, dimension=eqn.params["dimension"])
  return eqn.primitive.bind(*map(_dense, xs), **eqn.params)


_ZERO_PRESERVING = ("abs", "sin", "tan", "sinh", "tanh", "asin", "atan", "asinh", "atanh",
                    "sqrt", "cbrt", "expm1", "log1p", "sign", "real", "imag", "conj",
                    "copy", "copy_p", "neg", "convert_element_type", "round", "floor", "ceil",
                    "erf")

_RULES = {
    **{name: _on_data for name in _ZERO_PRESERVING},
    "mul": _mul, "add": _add, "add_any": _add, "sub": _sub, "div": _div,
    "integer_pow": _integer_pow,
    "dot_general": _dot_general,
    "reduce_sum": lambda eqn, a: _dense_scalar(bcoo_reduce_sum(a, axes=eqn.params["axes"])),
    "transpose": lambda eqn, a: bcoo_transpose(a, permutation=eqn.params["permutation"]),
    "reshape": lambda eqn, a: bcoo_reshape(a, new_sizes=eqn.params["new_sizes"],
                                           dimensions=eqn.params["dimensions"]),
    "squeeze": lambda eqn, a: ops.bcoo_squeeze(a, dimensions=eqn.params["dimensions"]),
    "rev": lambda eqn, a: ops.bcoo_rev(a, eqn.params["dimensions"]),
    "slice": lambda eqn, a: ops.bcoo_slice(a, start_indices=eqn.params["start_indices"],
                                           limit_indices=eqn.params["limit_indices"],
                                           strides=eqn.params["strides"]),
    "dynamic_slice": lambda eqn, a, *starts: ops.bcoo_dynamic_slice(
        a, starts, eqn.params["slice_sizes"]),
    "broadcast_in_dim": lambda eqn, a: ops.bcoo_broadcast_in_dim(
        a, shape=eqn.params["shape"], broadcast_dimensions=eqn.params["broadcast_dimensions"]),
    "concatenate": _concatenate,
    "gather": _gather,
}


class _Eqn(NamedTuple):
  """What a sparse rule reads of the operation it handles (an equation, or a bind)."""
  primitive: object
  params: dict


def _apply(primitive, params, vals):
  """One operation on sparse-or-dense values: its sparse rule when an operand is sparse and
  it has one, else the primitive on the dense values."""
  rule = _RULES.get(primitive.name)
  if rule is not None and any(isinstance(v, BCOO) for v in vals):
    return [rule(_Eqn(primitive, params), *vals)]
  outs = primitive.bind(*map(_dense, vals), **params)
  return list(outs) if primitive.multiple_results else [outs]


def _eval_sparse(jaxpr, consts, args):
  env = {}
  read = lambda v: v.val if isinstance(v, Literal) else env[v]
  for var, val in zip(jaxpr.constvars, consts):
    env[var] = val
  for var, val in zip(jaxpr.invars, args):
    env[var] = val
  for eqn in jaxpr.eqns:
    outs = _apply(eqn.primitive, eqn.params, [read(v) for v in eqn.invars])
    for var, val in zip(eqn.outvars, outs):
      env[var] = val
  return [read(v) for v in jaxpr.outvars]


class SparseTracer(Tracer):
  """A value of `sparsify(f, use_tracer=True)`: its `spvalue` is a BCOO or a dense array;
  `aval` is the dense array's type."""
  __slots__ = ("spvalue",)

  def __init__(self, trace, spvalue):
    self._trace, self.spvalue = trace, spvalue

  @property
  def aval(self):
    return ShapedArray(tuple(self.spvalue.shape), np.dtype(self.spvalue.dtype))

  def __repr__(self):
    return f"SparseTracer<{self.aval.str_short()}>"


class SparseTrace(Trace):
  """The interpreter of `sparsify(f, use_tracer=True)`: each operation applies to the
  tracers' values with `_apply`."""

  def pure(self, val):
    return SparseTracer(self, val)

  lift = pure

  def process_primitive(self, primitive, tracers, params):
    outs = _apply(primitive, params, [t.spvalue for t in tracers])
    return [SparseTracer(self, o) for o in outs]


def _sparsify_traced(f, leaves, tree):
  with new_main(SparseTrace) as main:
    trace = SparseTrace(main)
    args, kwargs = tree_util.tree_unflatten(tree, [SparseTracer(trace, x) for x in leaves])
    outs, out_tree = tree_util.tree_flatten(f(*args, **kwargs))
    outs = [full_raise(trace, o).spvalue for o in outs]
  return tree_util.tree_unflatten(out_tree, outs)


def sparsify(f, use_tracer=False):
  """`f` made to accept BCOO arrays wherever it takes arrays: zero-preserving elementwise
  operations, products, sums, differences, dot products, reductions and the structural
  operations stay sparse; other operations see the operands' dense values. By default
  `f`'s jaxpr is evaluated; `use_tracer=True` runs `f` on SparseTracers instead."""
  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    leaves, tree = tree_util.tree_flatten((args, kwargs),
                                          is_leaf=lambda x: isinstance(x, JAXSparse))
    if use_tracer:
      return _sparsify_traced(f, leaves, tree)
    stand_ins = [ShapeDtypeStruct(x.shape, x.dtype) if isinstance(x, JAXSparse) else x
                 for x in leaves]
    out_tree = []

    def flat_fun(*xs):
      a, k = tree_util.tree_unflatten(tree, xs)
      outs, t = tree_util.tree_flatten(f(*a, **k))
      out_tree.append(t)
      return outs
    closed = make_jaxpr(flat_fun)(*stand_ins)
    jaxpr = getattr(closed, "jaxpr", closed)
    outs = _eval_sparse(jaxpr, getattr(closed, "consts", []), leaves)
    return tree_util.tree_unflatten(out_tree[0], outs)
  return wrapped


def _bcoo_getitem(self, item):
  """BCOO indexing: jnp's indexing run by sparsify (slices, squeezes and gathers stay
  sparse)."""
  return sparsify(lambda x: x[item])(self)


# BCOO's indexing is sparsify's (as in JAX, whose transform.py sets BCOO's operator methods)
BCOO.__getitem__ = _bcoo_getitem
