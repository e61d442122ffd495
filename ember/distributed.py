"""`jax.distributed`: many processes as one program, over MPI (docs/distributed.md)."""
from ember._src.parallel.distributed import initialize, is_initialized, shutdown  # noqa: F401
