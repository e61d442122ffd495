"""What the formulas of XLA:CPU's math share: the dtypes they compute in, makers of float32
and float64 constants (`_cst`: a constant of an operand's dtype, which the distribution
modules use too), XLA:CPU's flush-to-zero (`_ftz`) and denormals-are-zero (`_daz64`), glibc's
hex-float data (`_hex_table`, `_hexfloats`) and the gathers that read its tables (`_lookup`),
and ln2 in two parts (glibc's log and pow).
"""
from __future__ import annotations

import numpy as np

from ember._src import core
from ember._src.base import dtypes
from ember._src.library.lax import api as lax


_F32 = dtypes.float32
_U32 = dtypes.uint32


def _f32c(v):
  return np.array(v, np.float32)


def _f32bits(b):
  """The float32 of bit pattern b."""
  return np.array(b, np.uint32).view(np.float32)


_F64 = dtypes.float64
_U64 = dtypes.uint64


def _f64c(v):
  return np.array(v, np.float64)


_TINY64 = np.finfo(np.float64).tiny


def _daz64(x):
  """XLA:CPU's denormals-are-zero and flush-to-zero: a subnormal reads (is written) as a
  zero of its sign. (ember's kernels and NumPy paths run with those modes on too,
  base/denormals.py; this and `_ftz` keep the formulas' flushes explicit, whatever the
  thread's modes.)"""
  return lax.select(lax.lt(lax.abs(x), _f64c(_TINY64)), lax.mul(x, _f64c(0)), x)


def _ftz(x):
  """float32 x with subnormals flushed to (signed) zero, as XLA:CPU's arithmetic does."""
  return lax.select(lax.lt(lax.abs(x), np.float32(np.finfo(np.float32).tiny)),
                    lax.mul(x, np.float32(0)), x)


def _cst(x, v):
  return np.array(v, core.get_aval(x).dtype)


def _hex_table(words: str, dtype=np.float64):
  """A table written as big-endian hex bit patterns (glibc's hex-float data)."""
  return np.frombuffer(bytes.fromhex("".join(words.split())), np.dtype(dtype).newbyteorder(">")
                       ).astype(dtype)


def _hexfloats(vs):
  return [float.fromhex(v) for v in vs]


def _lookup(table, i):
  """table[i] (i int32, in range by construction): gathers of the constant table. A 64-bit
  table travels as two uint32 word tables (array constants become arguments of compiled
  code, which 32-bit mode would narrow) joined after the gather."""
  dn = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  shape = core.get_aval(i).shape
  idx = lax.broadcast_in_dim(i, (*shape, 1), tuple(range(len(shape))))
  gather = lambda t: lax.gather(t, idx, dn, (1,), mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS)
  words = np.ascontiguousarray(table).view(np.uint32).reshape(-1, 2)   # little-endian
  lo, hi = (lax.convert_element_type(gather(np.ascontiguousarray(words[:, j])), _U64)
            for j in (0, 1))
  bits = lax.bitwise_or(lax.shift_left(hi, np.uint64(32)), lo)
  return lax.bitcast_convert_type(bits, table.dtype)


# ln2 in two parts (glibc's log data; pow's log uses it too)
_LN2HI, _LN2LO = _hexfloats(["0x1.62e42fefa3800p-1", "0x1.ef35793c76730p-45"])
