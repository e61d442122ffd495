"""ember.experimental.checkify: functionalized runtime checks (jax.experimental.checkify)."""
from ember._src.library.checkify import (  # noqa: F401
    DivisionByZeroError, Error, ErrorCategory, FailedCheckError, JaxException, JaxRuntimeError,
    NaNError, OOBError, all_checks, automatic_checks, check, check_error, checkify, debug_check,
    div_checks, float_checks, index_checks, init_error, nan_checks, user_checks)
