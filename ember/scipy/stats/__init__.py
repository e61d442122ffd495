"""ember.scipy.stats (jax.scipy.stats): the distributions below, each a module with JAX
0.12's function names and signatures. Provided: norm, t, expon, laplace, logistic, cauchy,
uniform. Functions that need gammainc/gammaincc/betainc (not in ember.scipy.special yet)
are left out rather than stubbed."""
from ember.scipy.stats import norm  # noqa: F401
from ember.scipy.stats import t  # noqa: F401
from ember.scipy.stats import expon  # noqa: F401
from ember.scipy.stats import laplace  # noqa: F401
from ember.scipy.stats import logistic  # noqa: F401
from ember.scipy.stats import cauchy  # noqa: F401
from ember.scipy.stats import uniform  # noqa: F401
