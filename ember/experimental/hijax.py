"""ember.experimental.hijax (jax.experimental.hijax): the hi-type base classes, decorators
and registry libraries define their types with, and HiPrim, whose `expand` runs on hi values
and on the tracers that stand for them in jit, grad and vmap (library/hijax.py says how)."""
from ember._src.core import AbstractValue, ShapedArray  # noqa: F401
from ember._src.library.hijax import (  # noqa: F401
    HiPrim, HiType, Zero, aval_method, aval_property, instantiate_zeros, register_hitype)
from ember._src.library.state import AbstractRef  # noqa: F401
