"""ember.extend.random (jax.extend.random): the threefry2x32 hash, as a primitive and as
JAX's `threefry_2x32(keypair, count)`.

Left out: the PRNG-implementation API (`define_prng_impl`, `seed_with_impl`,
`random_seed`, `threefry_prng_impl`, `rbg_prng_impl`, `unsafe_rbg_prng_impl`): ember's keys
have the one threefry2x32 implementation and no implementation objects."""
from ember._src.library.random.keys import threefry_2x32  # noqa: F401
from ember._src.primitives.prng import threefry2x32_p  # noqa: F401
