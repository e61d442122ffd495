"""ember.typing (jax.typing): annotations for array-like and dtype-like arguments."""
from __future__ import annotations

from typing import Any, Protocol, Union

import numpy as np

from ember._src.base.basearray import Array


class SupportsDType(Protocol):
  @property
  def dtype(self) -> np.dtype: ...


# What jnp functions accept as an array: ember arrays, NumPy arrays and scalars, Python scalars
ArrayLike = Union[Array, np.ndarray, np.bool_, np.number, bool, int, float, complex]
# What they accept as a dtype
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]

__all__ = ["ArrayLike", "DTypeLike"]
