"""ember.sharding: devices meshes and shardings (jax.sharding).

ember runs on one device: every sharding places the whole array there, and `Array.sharding`
is a `SingleDeviceSharding`. Multi-device semantics come later.
"""
from ember._src.core.sharding import (  # noqa: F401
    AbstractMesh, AxisType, Mesh, NamedSharding, PartitionSpec, Sharding, SingleDeviceSharding,
    auto_axes, explicit_axes, get_abstract_mesh, get_mesh, is_single_device_sharding,
    make_single_device_sharding, reshard, set_mesh, use_abstract_mesh)
from ember._src.core.sharding import Device  # noqa: F401

P = PartitionSpec
