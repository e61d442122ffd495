"""Elementwise ember.numpy functions (ufuncs): promotion + broadcasting, then lax."""
from __future__ import annotations

from ember._src import lax_api as lax
from ember._src.numpy.util import promote_args, promote_args_inexact

__all__ = ["add", "subtract", "multiply", "sin", "cos", "maximum"]


def _binary(name, lax_fn, promote=promote_args):
  def fn(x, y, /):
    x, y = promote(name, x, y)
    return lax_fn(x, y)
  fn.__name__ = fn.__qualname__ = name
  return fn


def _unary_inexact(name, lax_fn):
  def fn(x, /):
    x, = promote_args_inexact(name, x)
    return lax_fn(x)
  fn.__name__ = fn.__qualname__ = name
  return fn


add = _binary("add", lax.add)
subtract = _binary("subtract", lax.sub)
multiply = _binary("multiply", lax.mul)
maximum = _binary("maximum", lax.max)
sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
