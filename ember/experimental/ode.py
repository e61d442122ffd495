"""ember.experimental.ode (jax.experimental.ode): `odeint`, adaptive Dormand-Prince
integration differentiable by the adjoint method, and the module's helpers."""
from ember._src.library.ode import (  # noqa: F401
  abs2, fit_4th_order_polynomial, initial_step_size, interp_fit_dopri, mean_error_ratio,
  odeint, optimal_step_size, ravel_first_arg, runge_kutta_step,
)
