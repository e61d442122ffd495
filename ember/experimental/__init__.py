"""ember.experimental: JAX's `jax.experimental` names that libraries import.

`enable_x64` / `disable_x64` are here for code written for older JAX releases, which had
them in jax.experimental; JAX 0.12 spells the first `jax.enable_x64` (ember has it too).
"""
from ember._src.base.config import disable_x64, enable_x64  # noqa: F401
from ember._src.primitives.callbacks import io_callback  # noqa: F401
from ember.experimental import checkify  # noqa: F401,E402
from ember.experimental import multihost_utils  # noqa: F401,E402
from ember.experimental import mesh_utils  # noqa: F401,E402
from ember.experimental import compilation_cache  # noqa: F401,E402
from ember._src.core.earray import EArray  # noqa: F401,E402
