"""ember.experimental.shard_map: the older home of shard_map (jax.experimental.shard_map,
deprecated in JAX for `jax.shard_map`), with its older argument names."""
from ember._src.parallel.pmap import shard_map as _shard_map


def shard_map(f, mesh, in_specs, out_specs, check_rep: bool = True, auto=frozenset()):
  """`jax.shard_map(f, mesh=mesh, ...)` over the mesh axes not in `auto`."""
  manual = frozenset(mesh.axis_names) - frozenset(auto)
  return _shard_map(f, out_specs=out_specs, in_specs=in_specs, mesh=mesh,
                    axis_names=manual, check_vma=check_rep)
