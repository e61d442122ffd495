"""ember.errors: the exception classes of tracer misuse, as in jax.errors."""
from ember._src.errors import (  # noqa: F401
    ConcretizationTypeError, JAXTypeError, KeyReuseError, NonConcreteBooleanIndexError,
    TracerArrayConversionError, TracerBoolConversionError, TracerIntegerConversionError,
    UnexpectedTracerError)
