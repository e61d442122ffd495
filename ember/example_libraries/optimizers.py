"""Optimizers as (init_fn, update_fn, get_params) triples (jax.example_libraries.optimizers).

An optimizer is written for one array (`init(x0) -> state`, `update(step, g, state) -> state`,
`get_params(state) -> x`) and the `optimizer` decorator lifts it to pytrees of parameters:

    opt_init, opt_update, get_params = optimizers.adam(1e-3)
    state = opt_init(params)
    state = opt_update(step, grads, state)
    params = get_params(state)

The state is an `OptimizerState` pytree (so it passes through jit); `unpack_optimizer_state`
and `pack_optimizer_state` turn it into plain nested containers and back (for pickling).
Step sizes are a number or a schedule `step -> step size` (`make_schedule`).
"""
from __future__ import annotations

import functools
from collections import namedtuple
from typing import Any, Callable, NamedTuple

import ember.numpy as jnp
from ember.tree_util import (
    register_pytree_node, tree_flatten, tree_leaves, tree_map, tree_unflatten)

Step = int
Schedule = Callable[[Step], float]
Array = Any   # (JAX: typing.Any)
Params = Any
State = Any
Updates = Params
InitFn = Callable[[Params], Any]
UpdateFn = Callable[[Step, Updates, Any], Any]
ParamsFn = Callable[[Any], Params]

# The state of a whole pytree: each leaf's state flattened (packed_state), the parameters'
# structure (tree_def) and each leaf state's own structure (subtree_defs).
OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux))


class Optimizer(NamedTuple):
  init_fn: InitFn
  update_fn: UpdateFn
  params_fn: ParamsFn


def _flatten_states(states):
  """Each leaf state's leaves and structure, as two tuples."""
  flat = [tree_flatten(s) for s in states]
  return tuple(leaves for leaves, _ in flat), tuple(tree for _, tree in flat)


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]):
  """Decorator: lift an optimizer written for one array to pytrees of arrays."""

  @functools.wraps(opt_maker)
  def tree_opt_maker(*args, **kwargs):
    init, update, get_params = opt_maker(*args, **kwargs)

    @functools.wraps(init)
    def tree_init(x0_tree):
      x0_flat, tree = tree_flatten(x0_tree)
      states_flat, subtrees = _flatten_states(init(x0) for x0 in x0_flat)
      return OptimizerState(states_flat, tree, subtrees)

    @functools.wraps(update)
    def tree_update(i, grad_tree, opt_state):
      states_flat, tree, subtrees = opt_state
      grad_flat, grad_tree_def = tree_flatten(grad_tree)
      if grad_tree_def != tree:
        raise TypeError("optimizer update: the gradient's tree structure must match the "
                        f"parameters': got {grad_tree_def}, expected {tree}.")
      states = (tree_unflatten(s, leaves) for s, leaves in zip(subtrees, states_flat))
      new_states = [update(i, g, state) for g, state in zip(grad_flat, states)]
      new_states_flat, new_subtrees = _flatten_states(new_states)
      for old, new in zip(subtrees, new_subtrees):
        if old != new:
          raise TypeError("optimizer update: the update function must keep each leaf's "
                          f"state structure: {old} became {new}.")
      return OptimizerState(new_states_flat, tree, subtrees)

    @functools.wraps(get_params)
    def tree_get_params(opt_state):
      states_flat, tree, subtrees = opt_state
      states = (tree_unflatten(s, leaves) for s, leaves in zip(subtrees, states_flat))
      return tree_unflatten(tree, [get_params(state) for state in states])

    return Optimizer(tree_init, tree_update, tree_get_params)

  return tree_opt_maker


def _identity(x):
  return x


@optimizer
def sgd(step_size):
  """Stochastic gradient descent: x -= step_size(i) * g."""
  step_size = make_schedule(step_size)

  def update(i, g, x):
    return x - step_size(i) * g

  return _identity, update, _identity


def _first(state):
  return state[0]


@optimizer
def momentum(step_size: Schedule, mass: float):
  """Heavy-ball momentum: v = mass * v + g; x -= step_size(i) * v."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * velocity, velocity

  return init, update, _first


@optimizer
def nesterov(step_size: Schedule, mass: float):
  """Nesterov momentum: v = mass * v + g; x -= step_size(i) * (mass * v + g)."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, velocity = state
    velocity = mass * velocity + g
    return x - step_size(i) * (mass * velocity + g), velocity

  return init, update, _first


def _inv_sqrt_where_positive(a):
  """1/sqrt(a) where a > 0, else 0 (a coordinate that never had a gradient stays put)."""
  return jnp.where(a > 0, 1.0 / jnp.sqrt(a), 0.0)


@optimizer
def adagrad(step_size, momentum=0.9):
  """Adagrad (Duchi et al. 2011) with momentum on the rescaled gradient."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, g_sq, m = state
    g_sq = g_sq + jnp.square(g)
    m = (1.0 - momentum) * (g * _inv_sqrt_where_positive(g_sq)) + momentum * m
    return x - step_size(i) * m, g_sq, m

  return init, update, _first


@optimizer
def rmsprop(step_size, gamma=0.9, eps=1e-8):
  """RMSProp: a running average of g^2 scales each step."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    return x - step_size(i) * g / jnp.sqrt(avg_sq_grad + eps), avg_sq_grad

  return init, update, _first


@optimizer
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
  """RMSProp with momentum on the scaled step (Graves 2013)."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, avg_sq_grad, mom = state
    avg_sq_grad = avg_sq_grad * gamma + jnp.square(g) * (1.0 - gamma)
    mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq_grad + eps)
    return x - mom, avg_sq_grad, mom

  return init, update, _first


def _bias_correction(decay, i, dtype):
  """1 - decay^(i+1), in the parameters' dtype: Adam's correction of zero-initialized moments."""
  return 1 - jnp.asarray(decay, dtype) ** (i + 1)


@optimizer
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """Adam (Kingma and Ba 2015)."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, v = state
    m = (1 - b1) * g + b1 * m
    v = (1 - b2) * jnp.square(g) + b2 * v
    mhat = m / _bias_correction(b1, i, m.dtype)
    vhat = v / _bias_correction(b2, i, m.dtype)
    return x - step_size(i) * mhat / (jnp.sqrt(vhat) + eps), m, v

  return init, update, _first


@optimizer
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
  """AdaMax (Adam with the infinity norm, Kingma and Ba 2015, section 7)."""
  step_size = make_schedule(step_size)

  def init(x0):
    return x0, jnp.zeros_like(x0), jnp.zeros_like(x0)

  def update(i, g, state):
    x, m, u = state
    m = (1 - b1) * g + b1 * m
    u = jnp.maximum(b2 * u, jnp.abs(g))
    x = x - (step_size(i) / _bias_correction(b1, i, m.dtype)) * m / (u + eps)
    return x, m, u

  return init, update, _first


def _broadcast_along(ndim, v, axis):
  """The 1-d `v` as an ndim-d array varying along `axis` (size 1 elsewhere)."""
  index = [None] * ndim
  index[axis:axis + 1] = [slice(None)]
  return v[tuple(index)]


@optimizer
def sm3(step_size, momentum=0.9):
  """SM3 (Anil et al. 2019): one accumulator per row/column/... instead of per entry."""
  step_size = make_schedule(step_size)

  def init(x0):
    shape = x0.shape
    x0 = jnp.atleast_1d(x0)
    vs = [jnp.zeros(n, dtype=x0.dtype) for n in x0.shape]
    return x0, jnp.zeros_like(x0), vs, shape

  def update(i, g, state):
    x, m, vs, shape = state
    vs = [_broadcast_along(g.ndim, v, axis) for axis, v in enumerate(vs)]
    accum = functools.reduce(jnp.minimum, vs) + jnp.square(g)
    m = (1.0 - momentum) * (g * _inv_sqrt_where_positive(accum)) + momentum * m
    x = x - step_size(i) * m
    vs = [accum.max(tuple(a for a in range(x.ndim) if a != axis)) for axis in range(x.ndim)]
    return x, m, vs, shape

  def get_params(state):
    x, _, _, shape = state
    return x.reshape(shape)

  return init, update, get_params


# Schedules: step -> step size.

def constant(step_size) -> Schedule:
  def schedule(i):
    return step_size
  return schedule


def exponential_decay(step_size, decay_steps, decay_rate):
  def schedule(i):
    return step_size * decay_rate ** (i / decay_steps)
  return schedule


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
  def schedule(i):
    t = jnp.floor(i / decay_steps) if staircase else i / decay_steps
    return step_size / (1 + decay_rate * t)
  return schedule


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
  def schedule(step_num):
    step_num = jnp.minimum(step_num, decay_steps)
    step_mult = (1 - step_num / decay_steps) ** power
    return step_mult * (step_size - final_step_size) + final_step_size
  return schedule


def piecewise_constant(boundaries: Any, values: Any):
  """values[k] for steps in (boundaries[k-1], boundaries[k]]: len(values) == len(boundaries)+1."""
  boundaries = jnp.array(boundaries)
  values = jnp.array(values)
  if not boundaries.ndim == values.ndim == 1:
    raise ValueError("piecewise_constant: boundaries and values must be sequences, got "
                     f"arrays of shapes {boundaries.shape} and {values.shape}.")
  if boundaries.shape[0] != values.shape[0] - 1:
    raise ValueError("piecewise_constant: boundaries length must be one shorter than values "
                     f"length, got {boundaries.shape[0]} boundaries and {values.shape[0]} "
                     "values.")

  def schedule(i):
    return values[jnp.sum(i > boundaries)]
  return schedule


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
  if callable(scalar_or_schedule):
    return scalar_or_schedule
  if jnp.ndim(scalar_or_schedule) == 0:
    return constant(scalar_or_schedule)
  raise TypeError(f"make_schedule: the step size must be a scalar or a schedule (a function "
                  f"of the step), got {type(scalar_or_schedule)} of shape "
                  f"{jnp.shape(scalar_or_schedule)}.")


# Utilities

def l2_norm(tree):
  """The l2 norm of a pytree of arrays: the norm of all its leaves as one vector."""
  return jnp.sqrt(sum(jnp.vdot(x, x) for x in tree_leaves(tree)))


def clip_grads(grad_tree, max_norm):
  """Scale the gradient pytree down so its l2 norm is at most max_norm."""
  norm = l2_norm(grad_tree)

  def normalize(g):
    return jnp.where(norm < max_norm, g, g * (max_norm / norm))
  return tree_map(normalize, grad_tree)


# Serialization: an OptimizerState holds treedefs; these turn it into nested Python
# containers (picklable) and back.

class JoinPoint:
  """Where the parameters' tree ends and a leaf's state tree begins (a pytree leaf)."""

  def __init__(self, subtree):
    self.subtree = subtree

  def __iter__(self):  # so a JoinPoint unpacks like a 1-tuple
    yield self.subtree


def unpack_optimizer_state(opt_state):
  """An OptimizerState as nested tuples/lists/dicts with JoinPoints at the parameter leaves."""
  states_flat, tree_def, subtree_defs = opt_state
  subtrees = [tree_unflatten(s, leaves) for s, leaves in zip(subtree_defs, states_flat)]
  return tree_unflatten(tree_def, [JoinPoint(subtree) for subtree in subtrees])


def pack_optimizer_state(marked_pytree):
  """The inverse of unpack_optimizer_state."""
  sentinels, tree_def = tree_flatten(marked_pytree)
  if not all(isinstance(s, JoinPoint) for s in sentinels):
    raise TypeError("pack_optimizer_state: expected the output of unpack_optimizer_state "
                    "(a pytree whose leaves are JoinPoints).")
  states_flat, subtree_defs = _flatten_states(s.subtree for s in sentinels)
  return OptimizerState(states_flat, tree_def, subtree_defs)
