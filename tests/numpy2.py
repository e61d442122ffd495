"""NumPy as the tests' reference, with the names NumPy 2 added spelled with older functions
when the installed NumPy lacks them (NumPy 1.26 is the oldest ember supports). Tests write
`np2.trapezoid(...)` and get NumPy's own function on NumPy 2."""
import types

import numpy as np

_SINCE_NUMPY2 = {
    "trapezoid": lambda: np.trapz,
    "permute_dims": lambda: np.transpose,
    "matrix_transpose": lambda: lambda x: np.swapaxes(x, -1, -2),
    "concat": lambda: np.concatenate,
    "unstack": lambda: lambda x, *, axis=0: tuple(np.moveaxis(x, axis, 0)),
}


class _NumPy2(types.ModuleType):
  def __getattr__(self, name):
    if not hasattr(np, name) and name in _SINCE_NUMPY2:
      return _SINCE_NUMPY2[name]()
    return getattr(np, name)


np2 = _NumPy2("np2")
