"""jax.experimental.jet: Taylor-mode automatic differentiation. `jet(f, primals, series)`
pushes a truncated Taylor polynomial through `f`, one primitive at a time, with a rule per
primitive (`jet_rules`): the primal and its K Taylor terms in, the output's K terms out.

The trace (JetTrace, JetTracer) is ember's interpreter pattern (transforms/batching.py's):
a main trace on the stack, tracers holding (primal, terms), the rules run on the values one
level down. Inside, series are the non-factorial-scaled Taylor coefficients (`jet2`); `jet`
scales in and out by k!. A term or a whole series known to be zero is `zero_term` /
`zero_series`, instantiated only where a rule needs it.

The rules are the recurrences of the coefficients of composed power series (Griewank and
Walther, Evaluating Derivatives, ch. 13): `deflinear` (the rule is the primitive itself on
each term), `defzero` (piecewise constant: zero terms), `def_deriv` (from the first
derivative: v_k = sum_j j c_{k-j} u_j / k), `def_comp` (as a composition of primitives with
rules), and explicit recurrences (exp, log, sin/cos, logistic, div, products, ...). Calls
(jit, checkpoint, custom_jvp/custom_vjp functions) are inlined: their jaxpr runs under the
jet trace (custom derivative rules do not apply to Taylor terms, as in JAX).
"""
from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ember._src import core
from ember._src.base import tree_util
from ember._src.core import api_util
from ember._src.library.lax import api as lax
from ember._src.library.numpy import creation as jnp_creation
from ember._src.library.numpy import shape as jnp_shape
from ember._src.transforms.ad import add_any_p


class ZeroTerm:
  """A Taylor term known to be zero."""
  def __repr__(self):
    return "zero_term"


class ZeroSeries:
  """A whole series (all K terms) known to be zero: a value the input does not reach."""
  def __repr__(self):
    return "zero_series"


zero_term = ZeroTerm()
zero_series = ZeroSeries()
tree_util.register_pytree_node(ZeroTerm, lambda z: ((), None), lambda _, xs: zero_term)
tree_util.register_pytree_node(ZeroSeries, lambda z: ((), None), lambda _, xs: zero_series)

# updaters of call primitives' params (JAX's extension point; ember inlines calls)
call_param_updaters: dict = {}
jet_rules: dict = {}


def fact(n):
  """n! as a float array, exp(lgamma(n + 1)) (as JAX scales series)."""
  return lax.exp(lax.lgamma(jnp_creation.asarray(n + 1.)))


def jet(fun: Callable, primals, series, factorial_scaled: bool = True, **_):
  """Taylor-mode derivatives: `(fun(*primals), series_out)` where `series[i]` holds the
  derivatives (h_1, ..., h_K) of the path through `primals[i]` and `series_out` those of
  `fun` along it (Faa di Bruno's formula). With `factorial_scaled=False` the series are
  the Taylor coefficients h_k / k! instead."""
  try:
    order, = set(map(len, series))
  except ValueError:
    raise ValueError("jet terms have inconsistent lengths for different arguments") from None
  for i, (x, terms) in enumerate(zip(primals, series)):
    if not tree_util.treedef_is_leaf(tree_util.tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
    for j, t in enumerate(terms):
      if not tree_util.treedef_is_leaf(tree_util.tree_structure(t)):
        raise ValueError(f"term {j} for argument {i} is not an array")
  out_tree = api_util.Store()

  def flat_fun(*args):
    flat, tree = tree_util.tree_flatten(fun(*args))
    out_tree.store(tree)
    return flat
  if factorial_scaled:
    series = [[t / fact(k + 1) for k, t in enumerate(terms)] for terms in series]
  out_primals, out_terms = jet_fun(jet_subtrace(flat_fun), order)(primals, series)
  if factorial_scaled:
    out_terms = [[t * fact(k + 1) for k, t in enumerate(terms)] for terms in out_terms]
  tree = out_tree.val
  return tree_util.tree_unflatten(tree, out_primals), tree_util.tree_unflatten(tree, out_terms)


jet2 = functools.partial(jet, factorial_scaled=False)


def _call(f):
  return f.call_wrapped if isinstance(f, api_util.WrappedFun) else f


def jet_fun(f: Callable, order: int) -> Callable:
  """`f(main, order, primals, series)` (a jet_subtrace) as `g(primals, series)`, a fresh
  jet trace for each call, whose zero series come back as arrays of zeros."""
  def run(primals, series):
    with core.new_main(JetTrace, order) as main:
      out_primals, out_terms = _call(f)(main, order, primals, series)
    out_terms = [[_zeros_like(p)] * order if s is zero_series else
                 [_zeros_like(p) if t is zero_term else t for t in s]
                 for p, s in zip(out_primals, out_terms)]
    return out_primals, out_terms
  return run


def jet_subtrace(f: Callable) -> Callable:
  """`f(*args) -> list` as `g(main, order, primals, series) -> (primals_out, terms_out)`:
  `f` runs on JetTracers of the trace `main`."""
  def run(main, order, primals, series):
    trace = JetTrace(main)
    out = _call(f)(*[JetTracer(trace, p, s) for p, s in zip(primals, series)])
    pairs = [trace.to_primal_terms_pair(core.full_raise(trace, o)) for o in out]
    return [p for p, _ in pairs], [s for _, s in pairs]
  return run


def traceable(f: Callable, in_tree_def):
  """`f(primals, series)` as a function of the leaves of `in_tree_def` returning the leaves
  of `(primals_out, series_out)`; the second value gives their tree after a call."""
  out_tree = api_util.Store()

  def run(*leaves):
    primals, series = tree_util.tree_unflatten(in_tree_def, leaves)
    flat, tree = tree_util.tree_flatten(_call(f)(primals, series))
    out_tree.store(tree)
    return flat
  return run, lambda: out_tree.val


def _zeros_like(x):
  aval = core.get_aval(x)
  return jnp_creation.zeros(aval.shape, aval.dtype)


class JetTracer(core.Tracer):
  """A value under jet: its primal and its Taylor terms (a list, or zero_series)."""
  __slots__ = ("primal", "terms")

  def __init__(self, trace, primal, terms):
    if type(terms) not in (ZeroSeries, list, tuple):
      raise TypeError(f"JetTracer terms must be a list or zero_series, got {type(terms)}")
    self._trace, self.primal, self.terms = trace, primal, terms

  @property
  def aval(self):
    return core.get_aval(self.primal)

  def full_lower(self):
    if self.terms is zero_series or all(t is zero_term for t in self.terms):
      return core.full_lower(self.primal)
    return self


# primitives that call a jaxpr: (the param holding it); inlined under the jet trace
_CALLS = {"jit": "jaxpr", "remat2": "jaxpr", "custom_jvp_call": "call_jaxpr",
          "custom_vjp_call": "call_jaxpr"}


class JetTrace(core.Trace):
  """Runs each primitive's jet rule on the primals and terms of its operands."""

  @property
  def order(self) -> int:
    return self.main.global_data

  def pure(self, val):
    return JetTracer(self, val, zero_series)

  lift = pure

  def to_primal_terms_pair(self, val):
    if isinstance(val, JetTracer) and val._trace.main is self.main:
      return val.primal, val.terms
    return val, zero_series

  def process_primitive(self, primitive, tracers, params):
    primals_in, series_in = zip(*map(self.to_primal_terms_pair, tracers)) if tracers \
        else ((), ())
    if all(s is zero_series for s in series_in):
      out = primitive.bind(*primals_in, **params)
      outs = out if primitive.multiple_results else [out]
      return [JetTracer(self, o, zero_series) for o in outs]
    if primitive.name in _CALLS:
      jaxpr = params[_CALLS[primitive.name]]
      return [core.full_raise(self, o) for o in core.eval_jaxpr(jaxpr, jaxpr.consts, *tracers)]
    rule = jet_rules.get(primitive)
    if rule is None:
      raise NotImplementedError(f"Jet rule for '{primitive.name}' not implemented")
    order = self.order
    series_in = [[_zeros_like(x)] * order if s is zero_series else
                 [_zeros_like(x) if t is zero_term else t for t in s]
                 for x, s in zip(primals_in, series_in)]
    primal_out, terms_out = rule(primals_in, series_in, **params)
    if not primitive.multiple_results:
      return [JetTracer(self, primal_out, _as_terms(terms_out))]
    return [JetTracer(self, p, _as_terms(ts)) for p, ts in zip(primal_out, terms_out)]


def _as_terms(terms):
  return terms if terms is zero_series else list(terms)


# ------------------------------------------------------------------------------------
# Rule builders
# ------------------------------------------------------------------------------------

def defzero(prim) -> None:
  """`prim` is piecewise constant: its Taylor terms are zero."""
  jet_rules[prim] = functools.partial(zero_prop, prim)


def zero_prop(prim, primals_in, series_in, **params):
  return prim.bind(*primals_in, **params), zero_series


def deflinear(prim) -> None:
  """`prim` is linear in its operands: each term is `prim` of the operands' terms."""
  jet_rules[prim] = functools.partial(linear_prop, prim)


def linear_prop(prim, primals_in, series_in, **params):
  primal_out = prim.bind(*primals_in, **params)
  series_out = [prim.bind(*terms, **params) for terms in zip(*series_in)]
  if prim.multiple_results:
    series_out = list(zip(*series_out))
  return primal_out, series_out


def def_deriv(prim, deriv: Callable) -> None:
  """The rule of a unary `prim` from its first derivative `deriv(x)` (itself jetted)."""
  jet_rules[prim] = functools.partial(deriv_prop, prim, deriv)


def deriv_prop(prim, deriv, primals_in, series_in, **params):
  x, = primals_in
  series, = series_in
  c0, cs = jet2(deriv, primals_in, series_in)
  c, u = [c0] + cs, [x] + series
  v: list[Any] = [prim.bind(x, **params)] + [None] * len(series)
  for k in range(1, len(v)):   # v' = c u': k v_k = sum_j j c_{k-j} u_j
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def def_comp(prim, comp: Callable, **kwargs) -> None:
  """The rule of `prim` as the jet of `comp`, a composition of primitives with rules."""
  jet_rules[prim] = functools.partial(jet2, comp, **kwargs)


def _const(x, value):
  return lax.full_like(x, value, shape=())


# ------------------------------------------------------------------------------------
# The rules
# ------------------------------------------------------------------------------------

for _p in (lax.le_p, lax.lt_p, lax.gt_p, lax.ge_p, lax.eq_p, lax.ne_p, lax.not_p, lax.and_p,
           lax.or_p, lax.xor_p, lax.floor_p, lax.ceil_p, lax.round_p, lax.sign_p,
           lax.stop_gradient_p, lax.is_finite_p, lax.shift_left_p,
           lax.shift_right_arithmetic_p, lax.shift_right_logical_p,
           lax.bitcast_convert_type_p, lax.argmax_p, lax.argmin_p, lax.population_count_p,
           lax.clz_p, lax.reduce_and_p, lax.reduce_or_p, lax.reduce_xor_p, lax.nextafter_p):
  defzero(_p)

for _p in (lax.neg_p, lax.real_p, lax.complex_p, lax.conj_p, lax.imag_p, lax.add_p,
           add_any_p, lax.sub_p,
           lax.convert_element_type_p, lax.broadcast_in_dim_p, lax.concatenate_p,
           lax.split_p, lax.stack_p, lax.unstack_p, lax.pad_p, lax.reshape_p, lax.squeeze_p,
           lax.rev_p, lax.transpose_p, lax.slice_p, lax.reduce_sum_p,
           lax.reduce_window_sum_p, lax.fft_p, lax.cumsum_p, lax.tile_p, lax.psum_p,
           lax.sharding_constraint_p, lax.optimization_barrier_p, lax.reduce_precision_p):
  deflinear(_p)


def _dynamic_slice_rule(primals_in, series_in, **params):
  operand, *starts = primals_in
  return (lax.dynamic_slice_p.bind(operand, *starts, **params),
          [lax.dynamic_slice_p.bind(terms[0], *starts, **params)
           for terms in zip(*series_in)])


def _dynamic_update_slice_rule(primals_in, series_in, **params):
  operand, update, *starts = primals_in
  return (lax.dynamic_update_slice_p.bind(operand, update, *starts, **params),
          [lax.dynamic_update_slice_p.bind(*terms[:2], *starts, **params)
           for terms in zip(*series_in)])


jet_rules[lax.dynamic_slice_p] = _dynamic_slice_rule
jet_rules[lax.dynamic_update_slice_p] = _dynamic_update_slice_rule


def _cumulative_rule(primals_in, series_in, *, axis: int, reverse: bool, combine_fn):
  # the parallel prefix scan: made of primitives with rules (reduce_window has none)
  return jet2(functools.partial(lax.associative_scan, combine_fn, axis=axis, reverse=reverse),
              primals_in, series_in)


jet_rules[lax.cumprod_p] = functools.partial(_cumulative_rule, combine_fn=lax.mul)
jet_rules[lax.cummax_p] = functools.partial(_cumulative_rule, combine_fn=lax.max)
jet_rules[lax.cummin_p] = functools.partial(_cumulative_rule, combine_fn=lax.min)

def_deriv(lax.erf_p, lambda x: lax.mul(_const(x, 2. / np.sqrt(np.pi)),
                                       lax.exp(lax.neg(lax.square(x)))))
def_deriv(lax.tan_p, lambda x: lax.div(_const(x, 1.), lax.square(lax.cos(x))))   # sec^2
def_deriv(lax.asin_p, lambda x: lax.rsqrt(lax.sub(_const(x, 1.), lax.square(x))))
def_deriv(lax.acos_p, lambda x: lax.neg(lax.rsqrt(lax.sub(_const(x, 1.), lax.square(x)))))
def_deriv(lax.atan_p, lambda x: lax.div(_const(x, 1.), lax.add(_const(x, 1.), lax.square(x))))
def_deriv(lax.asinh_p, lambda x: lax.rsqrt(lax.add(lax.square(x), _const(x, 1.))))
def_deriv(lax.cbrt_p, lambda x: lax.mul(_const(x, 1. / 3.),   # |x|^(-2/3) / 3
                                        lax.pow(lax.abs(x), _const(x, -2. / 3.))))
def_comp(lax.exp2_p, lambda x: lax.exp(lax.mul(x, _const(x, np.log(2)))))
def_comp(lax.expm1_p, lambda x: lax.sub(lax.exp(x), _const(x, 1.)))
def_comp(lax.log2_p, lambda x: lax.div(lax.log(x), _const(x, np.log(2))))
def_comp(lax.log1p_p, lambda x: lax.log(lax.add(_const(x, 1.), x)))
def_comp(lax.sqrt_p, lambda x: lax.pow(x, _const(x, 0.5)))
def_comp(lax.rsqrt_p, lambda x: lax.pow(x, _const(x, -0.5)))
def_comp(lax.square_p, lambda x: lax.mul(x, x))
def_comp(lax.acosh_p, lambda x: lax.log(lax.add(x, lax.mul(lax.sqrt(lax.sub(x, _const(x, 1.))),
                                                             lax.sqrt(lax.add(x, _const(x, 1.)))))))
def_comp(lax.atanh_p, lambda x: lax.mul(_const(x, 0.5), lax.log(
    lax.div(lax.add(_const(x, 1.), x), lax.sub(_const(x, 1.), x)))))
def_comp(lax.erfc_p, lambda x: lax.sub(_const(x, 1.), lax.erf(x)))
def_comp(lax.rem_p, lambda x, y: lax.sub(x, lax.mul(y, lax.floor(lax.div(x, y)))))
def_comp(lax.clamp_p, lambda a, x, b: lax.min(lax.max(a, x), b))


def _erf_inv_rule(primals_in, series_in, **_):
  # y = erf_inv(x): y' = c x' with c = sqrt(pi)/2 exp(y^2); the series of c, y^2 and exp(y^2)
  # are built alongside y's, one order at a time
  x, = primals_in
  series, = series_in
  u = [x] + series
  v: list[Any] = [lax.erf_inv(x)] + [None] * len(series)
  half_sqrt_pi = np.sqrt(np.pi) / 2.
  sq: list[Any] = [lax.square(v[0])] + [None] * len(series)
  ex: list[Any] = [lax.exp(sq[0])] + [None] * len(series)
  c: list[Any] = [half_sqrt_pi * ex[0]] + [None] * len(series)
  for k in range(1, len(v)):
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
    if k < len(series):
      sq[k] = sum(v[k - j] * v[j] for j in range(k + 1))
      ex[k] = sum(j * ex[k - j] * sq[j] for j in range(1, k + 1)) / k
      c[k] = half_sqrt_pi * ex[k]
  return v[0], v[1:]


jet_rules[lax.erf_inv_p] = _erf_inv_rule


def _exp_rule(primals_in, series_in, **_):
  x, = primals_in
  u = [x] + series_in[0]
  v: list[Any] = [lax.exp(x)] + [None] * len(series_in[0])
  for k in range(1, len(v)):   # v' = v u'
    v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def _pow_rule(primals_in, series_in, **_):
  x, r = primals_in
  s0, ss = jet2(lambda x, y: lax.mul(y, lax.log(x)), primals_in, series_in)   # x^r = e^(r log x)
  u = [s0] + ss
  v: list[Any] = [lax.pow(x, r)] + [None] * len(ss)
  for k in range(1, len(v)):
    v[k] = sum(j * v[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def _pow_by_squaring(x, n: int):
  if n < 0:
    return _pow_by_squaring(lax.div(_const(x, 1), x), -n)
  if n == 0:
    return lax.full_like(x, 1)
  half = _pow_by_squaring(lax.mul(x, x), n // 2) if n > 1 else None
  if n % 2 == 0:
    return half
  return x if half is None else lax.mul(x, half)


def _integer_pow_rule(primals_in, series_in, *, y):
  return jet2(lambda x: _pow_by_squaring(x, y), primals_in, series_in)


def _logistic_rule(primals_in, series_in, **_):
  x, = primals_in
  series, = series_in
  u = [x] + series
  v: list[Any] = [lax.logistic(x)] + [None] * len(series)
  e: list[Any] = [v[0] * (1 - v[0])] + [None] * len(series)   # s' = s (1 - s)
  for k in range(1, len(v)):
    v[k] = sum(j * e[k - j] * u[j] for j in range(1, k + 1)) / k
    e[k] = (1 - v[0]) * v[k] - sum(v[j] * v[k - j] for j in range(1, k + 1))
  return v[0], v[1:]


def _tanh_rule(primals_in, series_in, **_):
  # tanh x = 2 logistic(2x) - 1
  x, = primals_in
  p, ts = _logistic_rule((2 * x,), ([2 * t for t in series_in[0]],))
  return 2 * p - 1, [2 * t for t in ts]


def _log_rule(primals_in, series_in, **_):
  x, = primals_in
  u = [x] + series_in[0]
  v: list[Any] = [lax.log(x)] + [None] * len(series_in[0])
  for k in range(1, len(v)):   # u v' = u'
    conv = sum(j * v[j] * u[k - j] for j in range(1, k))
    v[k] = (u[k] - conv / k) / u[0]
  return v[0], v[1:]


def _atan2_rule(primals_in, series_in, **_):
  x, y = primals_in
  primal_out = lax.atan2(x, y)
  q0, qs = jet2(lax.div, primals_in, series_in)   # atan2(x, y) = atan(x / y) + const
  c0, cs = jet2(lambda q: lax.div(_const(q, 1), lax.add(_const(q, 1), lax.square(q))),
                (q0,), (qs,))
  c, u = [c0] + cs, [q0] + qs
  v: list[Any] = [primal_out] + [None] * len(qs)
  for k in range(1, len(v)):
    v[k] = sum(j * c[k - j] * u[j] for j in range(1, k + 1)) / k
  return v[0], v[1:]


def _div_rule(primals_in, series_in, **_):
  x, y = primals_in
  u, w = [x] + series_in[0], [y] + series_in[1]
  v: list[Any] = [None] * len(u)
  for k in range(len(v)):   # u = v w
    conv = sum(v[j] * w[k - j] for j in range(k))
    v[k] = (u[k] - conv) / w[0]
  return v[0], v[1:]


def _sinusoidal_rule(sign, fns, primals_in, series_in, **_):
  # s' = c u', c' = sign s u' (sin/cos: sign -1; sinh/cosh: +1)
  x, = primals_in
  u = [x] + series_in[0]
  s = [fns[0](x)] + [None] * len(series_in[0])
  c = [fns[1](x)] + [None] * len(series_in[0])
  for k in range(1, len(s)):
    s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
    c[k] = sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k * sign
  return (s[0], s[1:]), (c[0], c[1:])


def _pick(rule, i):
  return lambda *args, **kwargs: rule(*args, **kwargs)[i]


jet_rules[lax.exp_p] = _exp_rule
jet_rules[lax.pow_p] = _pow_rule
jet_rules[lax.integer_pow_p] = _integer_pow_rule
jet_rules[lax.logistic_p] = _logistic_rule
jet_rules[lax.tanh_p] = _tanh_rule
jet_rules[lax.log_p] = _log_rule
jet_rules[lax.atan2_p] = _atan2_rule
jet_rules[lax.div_p] = _div_rule
_sin_cos = functools.partial(_sinusoidal_rule, -1, (lax.sin, lax.cos))
_sinh_cosh = functools.partial(_sinusoidal_rule, 1, (lax.sinh, lax.cosh))
jet_rules[lax.sin_p] = _pick(_sin_cos, 0)
jet_rules[lax.cos_p] = _pick(_sin_cos, 1)
jet_rules[lax.sinh_p] = _pick(_sinh_cosh, 0)
jet_rules[lax.cosh_p] = _pick(_sinh_cosh, 1)


def _bilinear_rule(prim, primals_in, series_in, **params):
  u, w = [primals_in[0]] + series_in[0], [primals_in[1]] + series_in[1]
  v = [sum(prim.bind(u[j], w[k - j], **params) for j in range(k + 1)) for k in range(len(u))]
  return v[0], v[1:]


def _fma_rule(primals_in, series_in, **_):
  u, w, z = ([p] + s for p, s in zip(primals_in, series_in))
  v = []
  for k in range(len(u)):
    acc = z[k]
    for j in range(k + 1):
      acc = lax.fma(u[j], w[k - j], acc)
    v.append(acc)
  return v[0], v[1:]


for _p in (lax.dot_general_p, lax.mul_p, lax.conv_general_dilated_p):
  jet_rules[_p] = functools.partial(_bilinear_rule, _p)
jet_rules[lax.fma_p] = _fma_rule


def _gather_rule(primals_in, series_in, **params):
  operand, indices = primals_in
  return (lax.gather_p.bind(operand, indices, **params),
          [lax.gather_p.bind(g, indices, **params) for g in series_in[0]])


def _reduce_chooser_rule(reduce):
  # the terms of the chosen elements, averaged over ties (as JAX)
  def rule(primals_in, series_in, *, axes, **params):
    operand, = primals_in
    primal_out = reduce(operand, axes)
    shape = [1 if i in axes else d for i, d in enumerate(operand.shape)]
    dtype = series_in[0][0].dtype
    at_max = lax.convert_element_type(lax.eq(operand, lax.reshape(primal_out, shape)), dtype)
    counts = lax.reduce_sum(at_max, axes)
    return primal_out, [lax.div(lax.reduce_sum(lax.mul(g, at_max), axes), counts)
                        for g in series_in[0]]
  return rule


def _abs_rule(primals_in, series_in, **params):
  x, = primals_in
  signs = lax.select(lax.lt(x, lax.full_like(x, 0)), lax.full_like(x, -1), lax.full_like(x, 1))
  return lax.abs_p.bind(x, **params), [signs * t for t in series_in[0]]


def _select_n_rule(primals_in, series_in, **params):
  which, *cases = primals_in
  return (lax.select_n(which, *cases),
          [lax.select_n(which, *terms[1:]) for terms in zip(*series_in)])


def _extremum_rule(pick_first):
  # the terms of the chosen operand; at ties the mean of both (as JAX)
  def rule(primals_in, series_in, **_):
    x, y = jnp_shape.broadcast_arrays(*primals_in)
    first, tie = pick_first(x, y), lax.eq(x, y)

    def choose(xt, yt):
      xt, yt = jnp_shape.broadcast_arrays(xt, yt)
      return lax.select(tie, (xt + yt) / 2, lax.select(first, xt, yt))
    return lax.select(first, x, y), [choose(*terms) for terms in zip(*series_in)]
  return rule


def _scatter_add_rule(primals_in, series_in, **params):
  operand, indices, updates = primals_in
  return (lax.scatter_add_p.bind(operand, indices, updates, **params),
          [lax.scatter_add_p.bind(a, indices, b, **params) for a, _, b in zip(*series_in)])


jet_rules[lax.gather_p] = _gather_rule
jet_rules[lax.reduce_max_p] = _reduce_chooser_rule(lax.reduce_max)
jet_rules[lax.reduce_min_p] = _reduce_chooser_rule(lax.reduce_min)
jet_rules[lax.abs_p] = _abs_rule
jet_rules[lax.select_n_p] = _select_n_rule
jet_rules[lax.max_p] = _extremum_rule(lax.gt)
jet_rules[lax.min_p] = _extremum_rule(lax.lt)
jet_rules[lax.scatter_add_p] = _scatter_add_rule
