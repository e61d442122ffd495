"""`sparsify`: jnp code run on BCOO operands. The function's jaxpr is evaluated with sparse
rules for the operations that keep sparsity; any other operation sees its operands' dense
values."""
from __future__ import annotations

import functools


from ember._src.base import tree_util
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.core.jaxpr import Literal
from ember._src.driver.jit import make_jaxpr
from ember._src.library.sparse.base import JAXSparse
from ember._src.library.sparse.bcoo import (
    BCOO, _add_sparse, bcoo_dot_general, bcoo_multiply_sparse, bcoo_transpose)
from ember._src.library.sparse.ops import bcoo_reduce_sum


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


_RULES = {
    "mul": _mul, "add": _add, "add_any": _add, "sub": _sub,
    "neg": lambda eqn, a: -a,
    "dot_general": _dot_general,
    "reduce_sum": lambda eqn, a: bcoo_reduce_sum(a, axes=eqn.params["axes"]),
    "transpose": lambda eqn, a: bcoo_transpose(a, permutation=eqn.params["permutation"]),
    "convert_element_type": lambda eqn, a: a.astype(eqn.params["new_dtype"]),
}


def _eval_sparse(jaxpr, consts, args):
  env = {}
  read = lambda v: v.val if isinstance(v, Literal) else env[v]
  for var, val in zip(jaxpr.constvars, consts):
    env[var] = val
  for var, val in zip(jaxpr.invars, args):
    env[var] = val
  for eqn in jaxpr.eqns:
    vals = [read(v) for v in eqn.invars]
    rule = _RULES.get(eqn.primitive.name)
    if rule is not None and any(isinstance(v, BCOO) for v in vals):
      outs = [rule(eqn, *vals)]
    else:
      outs = eqn.primitive.bind(*map(_dense, vals), **eqn.params)
      outs = outs if eqn.primitive.multiple_results else [outs]
    for var, val in zip(eqn.outvars, outs):
      env[var] = val
  return [read(v) for v in jaxpr.outvars]


def sparsify(f, use_tracer=False):
  """`f` made to accept BCOO arrays wherever it takes arrays: elementwise products, sums,
  differences, negation, dot products, reductions and transposes stay sparse; other
  operations see the operands' dense values."""
  @functools.wraps(f)
  def wrapped(*args, **kwargs):
    leaves, tree = tree_util.tree_flatten((args, kwargs),
                                          is_leaf=lambda x: isinstance(x, JAXSparse))
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
