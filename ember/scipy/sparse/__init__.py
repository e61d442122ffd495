"""ember.scipy.sparse (jax.scipy.sparse): linalg."""
from ember.scipy.sparse import linalg  # noqa: F401
