"""ember.errors: the exception classes of tracer misuse and of failed runs, as in jax.errors."""
from ember._src.base.errors import (  # noqa: F401
    ConcretizationTypeError, InconclusiveDimensionOperation, JAXIndexError, JAXTypeError,
    JaxprTypeError, JaxRuntimeError, KeyReuseError,
    NonConcreteBooleanIndexError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)
