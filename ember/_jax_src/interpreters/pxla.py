"""jax._src.interpreters.pxla's name that libraries use (flax's fp8_ops builds the result
handler of its extended dtype on it): `global_result_handlers`, per abstract value type,
the maker of a function that makes a computation's per-device result buffers one array."""
import numpy as np

from ember._src.core import ShapedArray
from ember._src.core.array import Array, make_array_from_single_device_arrays


def _shaped_array_result_handler(aval: ShapedArray, sharding, committed: bool = True):
  """`bufs -> Array` of type `aval` laid out as `sharding` says (one buffer per device)."""
  del committed   # ember's results are placed where the computation ran, as JAX's are

  def handler(bufs):
    bufs = list(bufs)
    if len(bufs) == 1 and tuple(bufs[0].shape) == aval.shape:
      buf = bufs[0]
      if not isinstance(buf, Array):
        buf = Array(np.asarray(buf, aval.dtype), weak_type=aval.weak_type)
      if buf.dtype != aval.dtype:
        raise TypeError(f"result buffer of dtype {buf.dtype} for a result of type "
                        f"{aval.str_short()}")
      return buf
    return make_array_from_single_device_arrays(aval.shape, sharding, bufs)
  return handler


global_result_handlers = {ShapedArray: _shaped_array_result_handler}
