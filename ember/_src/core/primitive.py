"""Primitive: a named operation and the rule attributes beside its declaration.

`declare` makes one of ember's primitives; `def_impl` / `def_abstract_eval` /
`def_effectful_abstract_eval` are JAX's API for primitives defined outside ember, and
RuleRegistry is the dict view JAX's registries (`ad.primitive_jvps`, ...) give onto the
rules. The effects of an equation or a jaxpr (what keeps an equation alive through dead-code
elimination) are a primitive's rule too, so they live here. `Primitive.bind` hands the
primitive to trace.py's `bind`.
"""
from __future__ import annotations

import collections.abc
import functools
import weakref
from typing import Callable

from ember._src.core.avals import ShapedArray, get_aval
from ember._src.core.jaxpr import Jaxpr, JaxprEqn, jaxprs_in_params
from ember._src.core.trace import bind, is_concrete_array, new_array, to_numpy
from ember._src.core.tracers import Tracer


class Primitive:
  """A named operation. Its rules live as attributes, set once beside its declaration:

  - `abstract_eval(*avals, **params) -> aval | list[aval]`: shape/dtype rule (required)
  - `impl(*np_arrays, **params) -> ndarray | list`: NumPy reference implementation
  - `eval_rule(*values, **params)`: for higher-order primitives, runs them eagerly on values
  - `extended_eval(*values, **params)`: runs it eagerly when an operand is of a user's
    extended dtype, whose meaning its rules give (add_any: the rules' add)
  - `jvp`, `transpose`, `batch`, `lower`: added by the transformation/compiler issues
  - `pp_rule(eqn, ctx) -> Doc`: custom jaxpr printing (hides default params as JAX does)
  - `fold_literals`: when True, applying it to literals while staging folds to a literal
  - `effects_rule(*avals, **params) -> frozenset`: effects (host callbacks, checks): an
    equation with effects is not dead code (see `effects`)
  - `dce(used_outputs, eqn) -> (used_inputs, new_eqn | None)`: for higher-order
    primitives, the equation with only the `used_outputs` and what they need inside its
    sub-jaxprs (transforms/partial_eval.dce_deep)

  Primitives defined outside ember use JAX's API on the same attributes: `def_impl`,
  `def_abstract_eval`, `def_effectful_abstract_eval`, and the registries of
  ember.interpreters (`ad.primitive_jvps[p] = rule` sets `p.jvp`, ...).
  """

  def __init__(self, name: str, multiple_results: bool = False):
    self.name = name
    self.multiple_results = multiple_results
    self.abstract_eval: Callable | None = None
    self.impl: Callable | None = None
    self.eval_rule: Callable | None = None
    self.extended_eval: Callable | None = None
    self.jvp = self.transpose = self.batch = self.lower = None
    self.pp_rule: Callable | None = None
    self.fold_literals = False
    # `named_trace(trace, params) -> trace`: collectives run in the trace of the vmap that
    # binds their axis name, even when no argument comes from it (transforms/batching.py)
    self.named_trace: Callable | None = None
    # `effects_rule(*avals, **params) -> frozenset`: the effects of an application (callbacks)
    self.effects_rule: Callable | None = None
    # the backward pass transposes it when only zero cotangents reach its outputs from the
    # equations that use them (a custom VJP's bwd may give cotangents that do not depend on
    # them, and JAX calls it); unused outputs still skip it
    self.transpose_zero_cotangents = False
    self.dce: Callable | None = None   # pruning inside sub-jaxprs (see the docstring)
    self.impl_on_arrays = False   # set by def_impl: `impl` takes Arrays, not NumPy arrays
    self.foreign_lowering = None  # a lowering rule written for JAX (mlir.register_lowering)
    # the NumPy reference computes the compiled code's bits (correctly rounded arithmetic,
    # comparisons, casts, data movement), so eager calls may switch to compiled code at any
    # time (driver/eager.py)
    self.reference_exact = False
    # each output element is a function of the same-index elements of same-shape operands
    # alone (primitives' `unary`/`naryop`): eager calls may run it over a flat, longer array
    self.elementwise = False
    _all_primitives.add(self)

  def bind(self, /, *args, **params):   # a user primitive may take a param named `self`
    return bind(self, *args, **params)

  def get_bind_params(self, params) -> dict:
    """The params to re-bind an equation of this primitive with (JAX >= 0.9.2's form: a
    dict; interpreters of jaxprs call `eqn.primitive.bind(*args, **get_bind_params(p))`).
    ember's primitives bind with their equations' params as they are."""
    return dict(params)

  def __repr__(self):
    return self.name

  def out_avals(self, avals, params) -> list[ShapedArray]:
    out = self.abstract_eval(*avals, **params)
    return list(out) if self.multiple_results else [out]

  # --- the public API for primitives defined outside ember (jax.extend.core.Primitive) ---

  def def_impl(self, impl: Callable) -> Callable:
    """Eager evaluation: `impl(*arrays, **params)` gets ember Arrays (not NumPy arrays, as
    JAX's impls get jax Arrays). Inside compiled code a primitive without a lowering runs
    `impl` as a host callback (primitives/callbacks.py)."""
    self.impl = impl
    self.eval_rule = functools.partial(_run_user_impl, self)
    self.impl_on_arrays = True
    return impl

  def def_abstract_eval(self, abstract_eval: Callable) -> Callable:
    """`abstract_eval(*avals, **params)` -> an aval (a list of them with multiple_results);
    anything with `.shape` and `.dtype` (ShapeDtypeStruct) is accepted as an aval."""
    self.abstract_eval = functools.partial(_user_abstract_eval, self, abstract_eval)
    return abstract_eval

  def def_effectful_abstract_eval(self, effectful_abstract_eval: Callable) -> Callable:
    """`fn(*avals, **params)` -> (out avals, effects): an equation with effects is never
    dropped as dead code, and keeps its place among the other effectful ones."""
    self.abstract_eval = functools.partial(
        _user_abstract_eval, self, lambda *a, **p: effectful_abstract_eval(*a, **p)[0])
    self.effects_rule = lambda *a, **p: frozenset(effectful_abstract_eval(*a, **p)[1])
    return effectful_abstract_eval

  def effects(self, avals, params) -> frozenset:
    """The effects of one application: its own rule's, else those of its sub-jaxprs."""
    if self.effects_rule is not None:
      return self.effects_rule(*avals, **params)
    return frozenset().union(*map(jaxpr_effects, jaxprs_in_params(params)))


_all_primitives: "weakref.WeakSet[Primitive]" = weakref.WeakSet()


class RuleRegistry(collections.abc.MutableMapping):
  """A dict view onto one rule attribute of every primitive: JAX's registries
  (`ad.primitive_jvps[p] = rule`, `batching.primitive_batchers`, ...) set the rule ember's
  transformations read. `wrap(prim, rule)` adapts a rule of JAX's signature to ember's as
  it is set; `unwrap(prim, rule)` the other way as it is read."""

  def __init__(self, attr: str, wrap=lambda p, r: r, unwrap=lambda p, r: r):
    self.attr, self.wrap, self.unwrap = attr, wrap, unwrap

  def __getitem__(self, prim):
    rule = getattr(prim, self.attr, None) if isinstance(prim, Primitive) else None
    if rule is None:
      raise KeyError(prim)
    return self.unwrap(prim, rule)

  def __setitem__(self, prim, rule):
    if not isinstance(prim, Primitive):
      raise TypeError(f"rule registries are keyed by Primitive, got {type(prim).__name__}")
    setattr(prim, self.attr, self.wrap(prim, rule))

  def __delitem__(self, prim):
    self[prim]   # KeyError when unset
    setattr(prim, self.attr, None)

  def __iter__(self):
    return iter([p for p in list(_all_primitives) if getattr(p, self.attr) is not None])

  def __len__(self):
    return len(list(iter(self)))

  def __repr__(self):
    return f"<rule registry of Primitive.{self.attr}>"


def _as_aval(a) -> ShapedArray:
  if isinstance(a, ShapedArray):
    return a
  try:
    return ShapedArray(a.shape, a.dtype, getattr(a, "weak_type", False))
  except AttributeError:
    raise TypeError(f"an abstract_eval rule must return avals (ShapedArray, or objects with "
                    f".shape and .dtype), got {a!r}") from None


def _user_abstract_eval(prim, rule, /, *avals, **params):
  out = rule(*avals, **params)
  return [_as_aval(a) for a in out] if prim.multiple_results else _as_aval(out)


def _run_user_impl(prim, /, *vals, **params):
  """A user primitive's impl on concrete values as Arrays (Python scalars included)."""
  vals = [v if isinstance(v, Tracer) or is_concrete_array(v)
          else new_array(to_numpy(v), weak_type=get_aval(v).weak_type) for v in vals]
  out = prim.impl(*vals, **params)
  return list(out) if prim.multiple_results else out


class Effect:
  """The base class of effects (jax.core.Effect): an equation whose primitive reports any is
  kept by dead-code elimination and ordered among the other effectful equations."""


no_effects: frozenset = frozenset()
Effects = collections.abc.Set[Effect]   # the type of a set of effects (JAX's alias)
_effects_cache: "weakref.WeakKeyDictionary[Jaxpr, frozenset]" = weakref.WeakKeyDictionary()


def eqn_effects(eqn: JaxprEqn) -> frozenset:
  return eqn.primitive.effects([v.aval for v in eqn.invars], eqn.params)


def jaxpr_effects(jaxpr: Jaxpr) -> frozenset:
  """The effects of a jaxpr's equations, at any depth."""
  out = _effects_cache.get(jaxpr)
  if out is None:
    out = _effects_cache[jaxpr] = frozenset().union(*map(eqn_effects, jaxpr.eqns))
  return out


def declare(name: str, abstract_eval: Callable, impl: Callable | None = None, *,
            multiple_results: bool = False, exact: bool = False) -> Primitive:
  """Create a primitive with its shape/dtype rule and its NumPy reference impl (`exact`:
  the impl computes the compiled code's bits: `Primitive.reference_exact`)."""
  p = Primitive(name, multiple_results)
  p.abstract_eval = abstract_eval
  p.impl = impl
  p.reference_exact = exact
  return p

