"""`ember.Array` / `jnp.ndarray`: the abstract array type user code checks against.

As in JAX (`jax.Array`), it is an abstract base class: concrete arrays (core.array.Array),
tracers (core.Tracer) and typed PRNG key arrays (prng_keys.PRNGKeyArray) register as its
subclasses, so `isinstance(x, jax.Array)` is True for each of them, inside transformations
too. Code inside ember checks the concrete classes.
"""
import abc


class Array(abc.ABC):
  """An array: a concrete ember array, a tracer standing for one, or a PRNG key array."""
  __slots__ = ()


Array.__module__ = "ember"
