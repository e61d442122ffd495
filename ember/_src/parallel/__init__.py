"""Programs over many devices: one jitted program partitioned over a mesh (`spmd`, with its
collectives grouped by `all_reduce_grouping`), pmap / shard_map (`pmap`) and processes
joined over MPI (`distributed`)."""
