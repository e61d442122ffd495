"""ember.scipy.stats (jax.scipy.stats). Provided: norm."""
from ember.scipy.stats import norm  # noqa: F401
