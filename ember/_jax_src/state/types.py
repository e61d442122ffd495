"""jax._src.state.types's names that libraries use (flax.nnx's variablelib: AbstractRef, the
type of a `jax.Ref`): ember's."""
from ember._src.library.state import AbstractRef  # noqa: F401
