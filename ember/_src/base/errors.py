"""The error classes users of JAX catch, with JAX's names (exported as ember.errors)."""
from __future__ import annotations


class JAXTypeError(TypeError):
  """Base of the tracer-misuse errors."""


class ConcretizationTypeError(JAXTypeError):
  """A traced (abstract) value was used where a concrete Python value is needed."""


class TracerBoolConversionError(ConcretizationTypeError):
  """`bool()` / `if` on a traced value."""


class TracerIntegerConversionError(JAXTypeError):
  """`int()` / `__index__` on a traced value (e.g. using it as a shape or a Python index)."""


class TracerArrayConversionError(JAXTypeError):
  """`np.asarray(tracer)`: a traced value cannot become a NumPy array."""


class NonConcreteBooleanIndexError(JAXTypeError):
  """Boolean-mask indexing whose result shape depends on traced values."""


class UnexpectedTracerError(Exception):
  """A tracer escaped the function that was being transformed (a leaked tracer)."""


class KeyReuseError(RuntimeError):
  """A PRNG key was used twice (only raised when key-reuse checking is on)."""


class JaxRuntimeError(RuntimeError):
  """An error raised while running a compiled computation (jax.errors.JaxRuntimeError): its
  message starts with a status (`INTERNAL: `, `RESOURCE_EXHAUSTED: `); the original
  exception, when there is one, is its __cause__."""


class JAXIndexError(IndexError):
  """JAX's own IndexError (`jax.errors.JAXIndexError`)."""


class JaxprTypeError(TypeError):
  """A jaxpr that does not type-check (`jax.errors.JaxprTypeError`)."""


class InconclusiveDimensionOperation(Exception):
  """A comparison of symbolic dimensions with no one answer (`jax.errors.
  InconclusiveDimensionOperation`); ember's shapes are concrete, so none is inconclusive."""
