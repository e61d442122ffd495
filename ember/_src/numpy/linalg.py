"""ember.numpy: linear algebra (and the ember.numpy.linalg namespace)."""
from __future__ import annotations

__all__: list[str] = []      # names in ember.numpy
LINALG_ALL: list[str] = []   # names in ember.numpy.linalg
