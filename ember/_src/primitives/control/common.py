"""What cond, while and scan share: tracing the user's functions into const-free sub-jaxprs,
JAX's errors for mismatched branch outputs and loop carries, small jaxpr surgery (forwarded
outputs, pruning, merging the consts of several sub-jaxprs), and the jvp, batching and
lowering of a sub-jaxpr that their rules build on.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core import Jaxpr, ShapedArray, Var, get_aval, refs
from ember._src.hlo.graph import Shape, TupleShape
from ember._src.primitives.elementwise import convert_element_type
from ember._src.transforms import ad, batching
from ember._src.core.array import Array
from ember._src.transforms.partial_eval import dce_jaxpr
from ember._src.base.config import config

_map = map   # the builtin, by the name the rules use (scans.py defines lax.map)


def _disable_jit() -> bool:
  return bool(config.read("jax_disable_jit"))


def _concrete(x):
  """The value of `x` when it is known now (not a tracer of an abstract value)."""
  return x.to_concrete_value() if isinstance(x, core.Tracer) else core.to_numpy(x)


# ------------------------------------------------------------------------------------
# Tracing functions into sub-jaxprs
# ------------------------------------------------------------------------------------


def _trace(fun: Callable, in_avals: Sequence[ShapedArray], what: str = "function",
           frames: list | None = None):
  """Stage `fun(*flat) -> (flat outs, aux)` into a const-free jaxpr: (jaxpr, consts, aux).
  Closed-over values (outer tracers, arrays) become leading invars whose values are
  `consts`. `frames`: given, the trace's view of the refs from outside it (a threading
  core/refs.Frame) is appended to it, for the caller to thread the refs it touched."""
  def flat(*xs):
    outs, aux = fun(*xs)
    for o in outs:
      if not core.is_arraylike(o):
        raise TypeError(f"{what} returned a value of type {type(o).__name__} ({o!r}), "
                        "which is not a valid JAX type.")
    return outs, aux
  frame = None
  if frames is not None:
    frame = refs.Frame(what, threads=True)
    frames.append(frame)
  closed, aux = core.trace_to_jaxpr(flat, list(in_avals), ref_frame=frame)
  jaxpr, consts = core.hoist_consts(closed)
  return jaxpr, consts, aux


def _trace_pytree(fun: Callable, in_tree, in_avals, what: str, frames: list | None = None):
  """`fun` takes one pytree (`in_tree`, of `in_avals`): (jaxpr, consts, out_tree)."""
  def flat(*xs):
    out = fun(tree_util.tree_unflatten(in_tree, list(xs)))
    leaves, out_tree = tree_util.tree_flatten(out)
    return leaves, out_tree
  return _trace(flat, in_avals, what, frames)


# ------------------------------------------------------------------------------------
# Refs from outside a loop body or branch (core/refs.py): threaded as carries / operands
# ------------------------------------------------------------------------------------


def _new_refs(frames: list, threaded: Sequence) -> list:
  """The refs from outside that the traces of `frames` touched, not yet in `threaded`."""
  out: list = []
  for f in frames:
    for r in f.touched():
      if not any(r is t for t in threaded) and not any(r is o for o in out):
        out.append(r)
  return out


def _ref_values(rs: Sequence) -> list:
  return [refs.read(r) for r in rs]


def _set_ref_values(rs: Sequence, values: Sequence) -> None:
  for r, v in zip(rs, values):
    refs.write(r, v, r.aval)


def _trace_jaxpr_fn(fun: Callable, in_avals):
  """A const-free jaxpr of `fun(*tracers) -> list`, consts hoisted: (jaxpr, consts)."""
  jaxpr, consts, _ = _trace(lambda *xs: (list(fun(*xs)), None), in_avals)
  return jaxpr, consts


def _typematch(a: ShapedArray, b: ShapedArray) -> bool:
  return a.shape == b.shape and a.dtype == b.dtype


def _mismatch(a: ShapedArray, b: ShapedArray) -> str:
  if a.shape != b.shape and a.dtype != b.dtype:
    return "the shapes and dtypes do not match"
  return "the dtypes do not match" if a.shape == b.shape else "the shapes do not match"


def _fun_loc(fun) -> str:
  name = getattr(fun, "__name__", type(fun).__name__)
  code = getattr(fun, "__code__", None)
  return f"{name} at {code.co_filename}:{code.co_firstlineno}" if code else name


def _carry_name(fun) -> str | None:
  try:
    return next(iter(inspect.signature(fun).parameters))
  except (TypeError, ValueError, StopIteration):
    return None


def _check_carry_type(name: str, fun, in_tree, in_avals, out_tree, out_avals) -> None:
  """JAX's errors for a loop body whose carry output differs from its carry input."""
  carry = _carry_name(fun)

  def component(path):
    if carry:
      return f"the input carry component {carry}{tree_util.keystr(path)}" if path \
          else f"the input carry {carry}"
    return f"the input carry at path {tree_util.keystr(path)}" if path else "the input carry"
  if in_tree != out_tree:
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree "
        f"structure, but they differ:\n\nthe input tree structure is:\n{in_tree}\nthe "
        f"output tree structure is:\n{out_tree}\n\nRevise the function so that the carry "
        "output has the same pytree structure as the carry input.")
  paths = [p for p, _ in tree_util.tree_flatten_with_path(
      tree_util.tree_unflatten(in_tree, list(range(in_tree.num_leaves))))[0]]
  diffs = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
           f"component has type {b.str_short()}, so {_mismatch(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not _typematch(a, b)]
  if diffs:
    text = (diffs[0][0].upper() + diffs[0][1:] + ".\n" if len(diffs) == 1 else
            "".join(f"  * {d};\n" for d in diffs[:-1]) + f"  * {diffs[-1]}.\n")
    raise TypeError(f"{name} function carry input and carry output must have equal types, "
                    f"but they differ:\n\n{text}\nRevise the function so that all output "
                    "types match the corresponding input types.")


def _promote_weak(vals, in_avals, out_avals):
  """Weakly typed carry inits (Python scalars) whose body output has another type take
  the output's dtype (JAX's `_promote_weak_typed_input`): (new values, changed)."""
  new, changed = [], False
  for v, a, b in zip(vals, in_avals, out_avals):
    if a.weak_type and not _typematch(a, b) and a.shape == b.shape:
      v = convert_element_type(v, dtypes.result_type(v, b.dtype))
      changed = True
    new.append(v)
  return new, changed


# ------------------------------------------------------------------------------------
# Small jaxpr surgery
# ------------------------------------------------------------------------------------


def _forwarding(jaxpr: Jaxpr) -> list:
  """For each outvar, the index of the invar it is (unchanged), else None."""
  pos = {id(v): i for i, v in enumerate(jaxpr.invars)}
  return [pos.get(id(v)) if isinstance(v, Var) else None for v in jaxpr.outvars]


def _prune_outputs(jaxpr: Jaxpr, keep: Sequence[bool]) -> Jaxpr:
  if all(keep):
    return jaxpr
  return dce_jaxpr(jaxpr.replace(outvars=[v for v, k in zip(jaxpr.outvars, keep) if k]))


def _with_leading_invars(jaxpr: Jaxpr, avals: Sequence[ShapedArray], pos: int = 0) -> Jaxpr:
  """`jaxpr` with unused invars of `avals` inserted at `pos`."""
  new = [Var(a) for a in avals]
  return jaxpr.replace(invars=jaxpr.invars[:pos] + new + jaxpr.invars[pos:])


def _join_consts(jaxprs_consts):
  """[(jaxpr_i, consts_i)] -> ([jaxpr_i taking all consts first], all consts), consts
  merged by identity (JAX's `_merge_common_consts`)."""
  all_consts: list = []
  index: dict[int, int] = {}
  for _, cs in jaxprs_consts:
    for c in cs:
      if id(c) not in index:
        index[id(c)] = len(all_consts)
        all_consts.append(c)
  avals = [get_aval(c) for c in all_consts]
  out = []
  for j, cs in jaxprs_consts:
    mine = {index[id(c)]: v for c, v in zip(cs, j.invars[:len(cs)])}
    head = [mine.get(k) or Var(a) for k, a in enumerate(avals)]
    out.append(j.replace(invars=head + j.invars[len(cs):]))
  return out, all_consts


def _split(xs, *sizes):
  out, i = [], 0
  for n in sizes:
    out.append(list(xs[i:i + n]))
    i += n
  out.append(list(xs[i:]))
  return out


# ------------------------------------------------------------------------------------
# Evaluation
# ------------------------------------------------------------------------------------


def _with_avals(outs, avals):
  """Eager results as Arrays of exactly `avals` (dtype and weak type of the equation)."""
  return [o if getattr(o, "aval", None) == a else
          Array(np.asarray(core.to_numpy(o), a.dtype), weak_type=a.weak_type)
          for o, a in zip(outs, avals)]


# ------------------------------------------------------------------------------------
# Differentiation
# ------------------------------------------------------------------------------------


Zero = ad.Zero


def _nonzero(t) -> bool:
  return type(t) is not Zero


def _jvp_jaxpr(jaxpr: Jaxpr, nonzeros, instantiate):
  """The jvp of const-free `jaxpr`: invars (hoisted consts, primals, nonzero tangents),
  outvars (primals, tangents that are nonzero or `instantiate`d). (jaxpr, consts, out_nz)"""
  n = len(jaxpr.invars)
  nonzeros = [nz and ad.is_differentiable(a.dtype) for nz, a in zip(nonzeros, jaxpr.in_avals)]
  in_avals = list(jaxpr.in_avals) + [a for a, nz in zip(jaxpr.in_avals, nonzeros) if nz]
  out_nz: list = []

  def fun(*args):
    primals, nzt = args[:n], iter(args[n:])
    tangents = [next(nzt) if nz else Zero(ad.tangent_aval(a))
                for a, nz in zip(jaxpr.in_avals, nonzeros)]
    p_out, t_out, _ = ad.jvp_flat(lambda *xs: (core.eval_jaxpr(jaxpr, [], *xs), None),
                                  primals, tangents)
    out_nz[:] = [ad.is_differentiable(a.dtype) and (_nonzero(t) or inst)
                 for t, a, inst in zip(t_out, jaxpr.out_avals, instantiate)]
    return list(p_out) + [ad.instantiate_zeros(t) for t, nz in zip(t_out, out_nz) if nz]
  with ad.tracing_jvp_jaxpr():
    j, consts = _trace_jaxpr_fn(fun, in_avals)
  return j, consts, out_nz


def _carry_fixpoint(body: Jaxpr, const_nz, carry_nz, rest_nz, n_out):
  """Which carries have nonzero tangents: start from the inits', add what the body makes
  nonzero, until nothing changes."""
  ncar = len(carry_nz)
  for _ in range(ncar + 1):
    out_nz = _jvp_jaxpr(body, const_nz + carry_nz + rest_nz, [False] * n_out)[2]
    new = [a or b for a, b in zip(carry_nz, out_nz[:ncar])]
    if new == carry_nz:
      break
    carry_nz = new
  return carry_nz


# ------------------------------------------------------------------------------------
# Batching
# ------------------------------------------------------------------------------------


def _batch_jaxpr_front(jaxpr: Jaxpr, axis_data, in_dims, force):
  """`jaxpr` batched at `in_dims`, its outputs batched at 0 (or unbatched where the body
  leaves them so and `force` is False): (jaxpr, consts, out_dims)."""
  closed, out_dims = batching.batch_jaxpr(jaxpr, axis_data, in_dims)
  dims = [0 if (d is not None or f) else None for d, f in zip(out_dims, force)]

  def fn(*args):
    outs = core.eval_jaxpr(closed, closed.consts, *args)
    return [batching.bdim_at_front(o, d, axis_data.size) if nd == 0 else o
            for o, d, nd in zip(outs, out_dims, dims)]
  j, consts = _trace_jaxpr_fn(fn, closed.in_avals)
  return j, consts, dims


def _to_front(x, d, size, batched):
  return batching.bdim_at_front(x, d, size) if batched else x


# ------------------------------------------------------------------------------------
# Lowering
# ------------------------------------------------------------------------------------


def _result_shape(avals):
  shapes = tuple(Shape.of(a) for a in avals)
  return shapes[0] if len(shapes) == 1 else TupleShape(shapes)


def _outs(ctx, instr, n):
  return ctx.unpack(instr) if n != 1 else [instr]


def _staged(fn, avals) -> Jaxpr:
  """The closed jaxpr of `fn(*tracers) -> list` (its consts become HLO constants)."""
  closed, _ = core.trace_to_jaxpr(lambda *xs: (list(fn(*xs)), None), list(avals))
  return closed


def _emit_while(ctx, cond_fn, body_fn, state, avals, name):
  """A `while` over `state` (HLO instrs of `avals`): condition and body computations are
  lowered from `cond_fn(*state) -> [pred]` / `body_fn(*state) -> state`."""
  cond_c = ctx.lower_computation(_staged(cond_fn, avals), f"{name}_cond")
  body_c = ctx.lower_computation(_staged(body_fn, avals), f"{name}_body")
  out = ctx.emit("while", _result_shape(avals), list(state), called=[cond_c, body_c])
  return _outs(ctx, out, len(avals))
