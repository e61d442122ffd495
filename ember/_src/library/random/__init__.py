"""ember.random: keys (`keys`), the samplers (`samplers`), the gamma family (`gamma`: gamma,
loggamma and their gradient; `gamma_family`: the samplers built on them, and wald), the
discrete samplers (`discrete`: poisson, binomial, multinomial), the linear-algebra samplers
(`linalg`: multivariate_normal, orthogonal), what those four share (`util`), and XLA:CPU's
float math in lax that makes them draw JAX's bits (`xla_math/`)."""
