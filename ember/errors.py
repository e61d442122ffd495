"""ember.errors: the exception classes of tracer misuse and of failed runs, as in jax.errors."""
from ember._src.base.errors import (  # noqa: F401
    ConcretizationTypeError, JAXTypeError, JaxRuntimeError, KeyReuseError,
    NonConcreteBooleanIndexError, TracerArrayConversionError, TracerBoolConversionError,
    TracerIntegerConversionError, UnexpectedTracerError)
from ember._src.base.errors import InconclusiveDimensionOperation, JaxprTypeError  # noqa: F401
