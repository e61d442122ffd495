"""JAXSparse: the base class of the sparse array formats (jax.experimental.sparse.JAXSparse)."""
from __future__ import annotations

import abc
import math

from ember._src.core.tracers import Tracer


class JAXSparse(abc.ABC):
  """A sparse array: its buffers are a pytree's leaves, its shape static."""
  __hash__ = None
  __array_ufunc__ = None   # NumPy operands defer to our operators (ndarray @ BCOO)

  def __init__(self, args, *, shape):
    self.shape = tuple(int(s) for s in shape)

  @property
  @abc.abstractmethod
  def dtype(self): ...

  @property
  @abc.abstractmethod
  def nse(self) -> int: ...

  @abc.abstractmethod
  def tree_flatten(self): ...

  @classmethod
  @abc.abstractmethod
  def tree_unflatten(cls, aux_data, children): ...

  @abc.abstractmethod
  def transpose(self, axes=None): ...

  @abc.abstractmethod
  def todense(self): ...

  def __len__(self):
    return self.shape[0]

  @property
  def size(self) -> int:
    return math.prod(self.shape)

  @property
  def ndim(self) -> int:
    return len(self.shape)

  @property
  def T(self):
    return self.transpose()

  def block_until_ready(self):
    for buf in self.tree_flatten()[0]:
      buf.block_until_ready()
    return self

  def __repr__(self):
    name = type(self).__name__
    try:
      extra = "".join(f", {k}={getattr(self, k)}" for k in ("n_batch", "n_dense")
                      if getattr(self, k, 0))
      text = f"{name}({self.dtype}{list(self.shape)}, nse={self.nse}{extra})"
    except Exception:  # noqa: BLE001 - a malformed array still prints
      text = f"{name}(<invalid>)"
    if isinstance(self.data, Tracer):
      text = f"{type(self.data).__name__}[{text}]"
    return text
