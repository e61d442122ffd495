"""ember.scipy.stats (jax.scipy.stats): each distribution a module with JAX 0.12's function
names and signatures. Provided: norm, t, expon, laplace, logistic, cauchy, uniform, gamma,
beta, chi2, poisson, binom, bernoulli, geom, nbinom, betabinom, pareto, gennorm, vonmises,
multivariate_normal, dirichlet, gumbel_r, gumbel_l, wrapcauchy, multinomial, truncnorm; and
mode, rankdata, sem and gaussian_kde."""
from ember.scipy.stats import norm  # noqa: F401
from ember.scipy.stats import t  # noqa: F401
from ember.scipy.stats import expon  # noqa: F401
from ember.scipy.stats import laplace  # noqa: F401
from ember.scipy.stats import logistic  # noqa: F401
from ember.scipy.stats import cauchy  # noqa: F401
from ember.scipy.stats import uniform  # noqa: F401
from ember.scipy.stats import gamma  # noqa: F401
from ember.scipy.stats import beta  # noqa: F401
from ember.scipy.stats import chi2  # noqa: F401
from ember.scipy.stats import poisson  # noqa: F401
from ember.scipy.stats import binom  # noqa: F401
from ember.scipy.stats import bernoulli  # noqa: F401
from ember.scipy.stats import geom  # noqa: F401
from ember.scipy.stats import nbinom  # noqa: F401
from ember.scipy.stats import betabinom  # noqa: F401
from ember.scipy.stats import pareto  # noqa: F401
from ember.scipy.stats import gennorm  # noqa: F401
from ember.scipy.stats import vonmises  # noqa: F401
from ember.scipy.stats import multivariate_normal  # noqa: F401
from ember.scipy.stats import dirichlet  # noqa: F401
from ember.scipy.stats import gumbel_r  # noqa: F401
from ember.scipy.stats import gumbel_l  # noqa: F401
from ember.scipy.stats import wrapcauchy  # noqa: F401
from ember.scipy.stats import multinomial  # noqa: F401
from ember.scipy.stats import truncnorm  # noqa: F401
from ember.scipy.stats._core import mode, rankdata, sem  # noqa: F401
from ember.scipy.stats._kde import gaussian_kde  # noqa: F401
