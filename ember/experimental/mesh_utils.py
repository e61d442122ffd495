"""`jax.experimental.mesh_utils`: arrays of devices shaped for `jax.sharding.Mesh`
(ember/_src/parallel/mesh_utils.py)."""
from ember._src.parallel.mesh_utils import (  # noqa: F401
    create_device_mesh, create_hybrid_device_mesh, device_kind_handler_dict)
