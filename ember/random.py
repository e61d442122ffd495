"""ember.random: JAX's PRNG API (jax.random), bit for bit JAX 0.12's default threefry2x32
(partitionable) numbers. Keys live in ember._src.library.random.keys, with the design's one
deviation: typed keys wrap their uint32 data rather than being arrays with an extended
dtype (pytree leaves to users, as in JAX; ember's transformations see the data). The samplers live in ember._src.library.random.samplers, the gamma family in
ember._src.library.random.gamma and .gamma_family, poisson, binomial and multinomial in
.discrete, the linear-algebra samplers in .linalg.
JAX 0.12 has no `random.shuffle` (removed; use `permutation`), so neither does ember."""
from ember._src.library.random.samplers import (  # noqa: F401
    bernoulli, bits, categorical, cauchy, choice, double_sided_maxwell, exponential, geometric,
    gumbel, laplace, logistic, lognormal, maxwell, normal, pareto, permutation, rademacher,
    randint, rayleigh, triangular, truncated_normal, uniform, weibull_min)
from ember._src.library.random.keys import (  # noqa: F401
    PRNGKey, PRNGKeyArray, clone, fold_in, key, key_data, key_dtype, key_impl, split,
    wrap_key_data)
from ember._src.library.random.gamma import gamma, loggamma, random_gamma_p  # noqa: F401
from ember._src.library.random.gamma_family import (  # noqa: F401
    ball, beta, chisquare, dirichlet, f, generalized_normal, t, wald)
from ember._src.library.random.discrete import binomial, multinomial, poisson  # noqa: F401
from ember._src.library.random.linalg import multivariate_normal, orthogonal  # noqa: F401

Key = PRNGKeyArray  # the type of typed keys (jax.random.Key)

__all__ = [
    "Key", "PRNGKey", "ball", "bernoulli", "beta", "binomial", "bits", "categorical", "cauchy",
    "chisquare", "choice", "clone", "dirichlet", "double_sided_maxwell", "exponential", "f",
    "fold_in", "gamma", "generalized_normal", "geometric", "gumbel", "key", "key_data",
    "key_dtype", "key_impl", "laplace", "loggamma", "logistic", "lognormal", "maxwell",
    "multinomial", "multivariate_normal", "normal", "orthogonal", "pareto", "permutation",
    "poisson", "rademacher", "randint", "rayleigh", "split", "t", "triangular",
    "truncated_normal", "uniform", "wald", "weibull_min", "wrap_key_data",
]
