"""ember.ad_checkpoint (jax.ad_checkpoint): rematerialization and named residuals."""
from ember._src.transforms.remat import (  # noqa: F401
    checkpoint, checkpoint_name, checkpoint_policies, name_p, print_saved_residuals, remat)
from ember._src.transforms.partial_eval import Offloadable, Recompute, Saveable  # noqa: F401
# JAX 0.12's forward-only name tag: checkpoint_name itself while JAX's remat3 is off (its
# default)
from ember._src.transforms.remat import checkpoint_name as checkpoint_name_fwd  # noqa: F401
