"""ember.ref: mutable arrays (jax.ref): `new_ref`, the functional forms of reading and writing
one (`get`, `set`, `swap`, `addupdate`), `freeze`, and their types."""
from ember._src.library.state import (  # noqa: F401
    AbstractRef, Ref, addupdate, empty_ref, free_ref, freeze, get, new_ref, set, swap)
