"""`jax.distributed`: many processes as one program, over MPI (docs/distributed.md)."""
from ember._src.distributed import (  # noqa: F401
    initialize, is_initialized, shutdown)
