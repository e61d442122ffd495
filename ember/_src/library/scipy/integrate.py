"""jax.scipy.integrate: trapezoid (the composite trapezoidal rule, jnp.trapezoid's)."""
from __future__ import annotations

from ember._src.driver.jit import jit
from ember._src.library.numpy import differences

__all__ = ["trapezoid"]


@jit(static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integral of y along `axis` by the trapezoidal rule, at sample points x or spacing dx
  (scipy.integrate.trapezoid)."""
  return differences.trapezoid(y, x, dx, axis)
