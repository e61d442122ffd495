"""Solvers with implicit derivatives (`jax.lax.custom_root`) and the `composite` decorator.

custom_root's derivative is the implicit function theorem's: at a root x of f(x, p) = 0,
dx = -(D_x f)^-1 D_p f dp, with (D_x f)^-1 applied by the user's `tangent_solve`; the
derivative never goes through `solve` (which may iterate). The parameters p are the arrays f
closes over (closure conversion); as in JAX the initial guess gets no derivative.
"""
from __future__ import annotations

from typing import Any, Callable

from ember._src import core
from ember._src.base import tree_util
from ember._src.base.errors import UnexpectedTracerError
from ember._src.driver.jit import eval_shape
from ember._src.library.lax import api as lax
from ember._src.transforms import ad
from ember._src.transforms.custom_derivatives import closure_convert, custom_jvp

__all__ = ["custom_root", "composite"]


def _check_tree(func_name, expected_name, out, expected_tree, has_aux=False):
  if has_aux:
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
      raise ValueError(f"{func_name}() produced a pytree with structure "
                       f"{tree_util.tree_structure(out)}, but a pair of output (solution, aux) "
                       "was expected.")
    out = out[0]
  actual_tree = tree_util.tree_structure(out)
  if actual_tree != expected_tree:
    raise TypeError(f"{func_name}() output pytree structure must match {expected_name}, "
                    f"got {actual_tree} and {expected_tree}.")


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False):
  """`solve(f, initial_guess)`, a root of f, differentiable in the arrays f closes over
  by implicit differentiation (`tangent_solve(g, y)` solves the linearized g(x) = y)."""
  guess_tree = tree_util.tree_structure(initial_guess)
  _check_tree("f", "initial_guess", eval_shape(f, initial_guess), guess_tree)
  # every array the three functions close over becomes an explicit operand (they may be
  # tracers of an enclosing transformation)
  f_conv, f_consts = closure_convert(f, initial_guess)          # f_conv(x, *f_consts)
  solve_conv, solve_consts = closure_convert(lambda g: solve(f, g), initial_guess)

  def solve_tangent(x, y, *f_consts):
    linearized = lambda v: ad.jvp(lambda z: f_conv(z, *f_consts), (x,), (v,))[1]
    return tangent_solve(linearized, y)
  tangent_conv, tangent_consts = closure_convert(solve_tangent, initial_guess, initial_guess,
                                                 *f_consts)

  @custom_jvp
  def root(consts, solve_consts, tangent_consts, guess):
    out = solve_conv(guess, *solve_consts)
    _check_tree("solve", "initial_guess", out, guess_tree, has_aux)
    return out

  def root_jvp(primals, tangents):
    consts, solve_consts, tangent_consts, guess = primals
    sol = root(*primals)
    x = sol[0] if has_aux else sol
    _, rhs = ad.jvp(lambda c: f_conv(x, *c), (consts,), (tangents[0],))
    x_dot = tree_util.tree_map(lax.neg, tangent_conv(x, rhs, *consts, *tangent_consts))
    _check_tree("tangent_solve", "x", x_dot, guess_tree)
    if has_aux:
      return sol, (x_dot, tree_util.tree_map(lambda a: lax.full_like(a, 0), sol[1]))
    return sol, x_dot

  root.defjvp(root_jvp)
  return root(tuple(f_consts), tuple(solve_consts), tuple(tangent_consts), initial_guess)


def _no_composite_jvp(primals, tangents):
  raise ValueError("JVP rule for composite not implemented. You can use `jax.custom_jvp` to "
                   "add support. See "
                   "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


def composite(decomposition: Callable, name: str, version: int = 0):
  """A function named as a composite op (`lax.composite`): ember compiles it as its
  `decomposition` (keyword arguments are static attributes; they may not be traced). As in
  JAX, it has no derivative (wrap it in a custom_jvp to give it one)."""
  def run(*args, **kwargs):
    for k, v in kwargs.items():
      if any(isinstance(leaf, core.Tracer) for leaf in tree_util.tree_leaves(v)):
        raise UnexpectedTracerError(
            f"Found a JAX Tracer as an attribute in the decomposition for the composite op "
            f"'{name}'. This means that the decomposition function closes over a value "
            f"that is involved in a JAX transformation. Any values that aren't explicitly "
            f"known at compile time must be explicitly passed as arguments to the "
            f"composite.")
    call = custom_jvp(lambda *xs: decomposition(*xs, **kwargs))
    call.defjvp(_no_composite_jvp)
    return call(*args)
  run.__name__ = run.__qualname__ = name
  run.__wrapped__ = decomposition
  return run
