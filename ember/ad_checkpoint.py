"""ember.ad_checkpoint (jax.ad_checkpoint): rematerialization and named residuals."""
from ember._src.transforms.remat import (  # noqa: F401
    checkpoint, checkpoint_name, checkpoint_policies, name_p, print_saved_residuals, remat)
