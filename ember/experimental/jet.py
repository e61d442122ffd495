"""ember.experimental.jet (jax.experimental.jet): Taylor-mode automatic differentiation,
its trace and its rule table (ember/_src/library/jet.py)."""
from ember._src.library.jet import (  # noqa: F401
  JetTrace, JetTracer, ZeroSeries, ZeroTerm, call_param_updaters, def_comp, def_deriv,
  deflinear, defzero, deriv_prop, fact, jet, jet2, jet_fun, jet_rules, jet_subtrace,
  linear_prop, traceable, zero_prop, zero_series, zero_term,
)
