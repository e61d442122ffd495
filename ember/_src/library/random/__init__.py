"""ember.random: keys (`keys`), the samplers (`samplers`), the gamma family, discrete and
linear-algebra samplers (`distributions`), and XLA:CPU's float math in lax that makes them
draw JAX's bits (`xla_math`)."""
