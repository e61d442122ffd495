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
  """A jaxpr is ill-typed (check_jaxpr): a variable used before it is bound, bound twice,
  or an equation whose result types differ from its binders' annotations."""


class InconclusiveDimensionOperation(Exception):
  """An operation on symbolic dimensions whose result depends on their values (JAX's shape
  polymorphism; ember's shapes are static, so its own code never raises it)."""
