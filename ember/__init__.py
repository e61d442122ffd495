"""ember: a JIT compiler for numerical Python with a JAX-compatible API.

`import ember as jax; import ember.numpy as jnp` runs JAX code unchanged.
"""
from ember._src.base.config import (  # noqa: F401
    config, debug_key_reuse, default_device, disable_jit, enable_x64, numpy_dtype_promotion,
    numpy_rank_promotion)
from ember._src.library import numpy as _np_impl  # noqa: F401  (attaches Array methods)
from ember._src.library.numpy import array_methods as _array_methods  # noqa: F401
from ember._src.base.basearray import Array  # noqa: F401 (abstract: arrays, tracers, keys)
from ember._src.core.array import (  # noqa: F401
    Device, block_until_ready, default_backend, device_get, device_put, devices,
    make_array_from_callback, make_array_from_process_local_data,
    make_array_from_single_device_arrays)
from ember._src.core import ensure_compile_time_eval, named_call, named_scope  # noqa: F401
from ember._src.core.leak_check import check_tracer_leaks, checking_leaks  # noqa: F401
from ember._src.driver.jit import clear_caches, eval_shape, jit, make_jaxpr  # noqa: F401
from ember._src.transforms.batching import vmap  # noqa: F401
from ember._src.parallel.pmap import pmap, shard_map  # noqa: F401
from ember._src.library.state import Ref, new_ref  # noqa: F401
from ember._src.transforms.ad import (  # noqa: F401
    grad, jvp, linear_transpose, linearize, value_and_grad, vjp)
from ember._src.library.jacobians import hessian, jacfwd, jacrev  # noqa: F401
from ember._src.library.jacobians import jacrev as jacobian  # noqa: F401 (jax.jacobian)
from ember import flatten_util, test_util, typing  # noqa: F401,E402
from ember._src.transforms.custom_derivatives import (  # noqa: F401
    closure_convert, custom_gradient, custom_jvp, custom_vjp)
from ember._src.transforms.remat import checkpoint, checkpoint_policies, remat  # noqa: F401
from ember._src.driver.cache_miss import log_compiles  # noqa: F401
from ember._src.core.api_util import ShapeDtypeStruct  # noqa: F401
from ember import dtypes, errors, extend, lax, numpy, tree, tree_util  # noqa: F401
from ember import ad_checkpoint, api_util, custom_derivatives, ref, stages  # noqa: F401
from ember._src.primitives.callbacks import pure_callback  # noqa: F401
from ember._src.runtime.executor import effects_barrier  # noqa: F401
from ember import debug, experimental, interpreters  # noqa: F401
from ember import export, ffi, monitoring  # noqa: F401 (issue 34: jax.export, jax.ffi, ...)
from ember._src.library.lax import expansions as _lax_expansions  # noqa: F401 (as_text's fma, ...)
from ember._src.library.lax import (  # noqa: F401 (their jvps)
    linalg_derivatives as _linalg_derivatives)

from ember._src.base.version import __version__  # noqa: E402,F401
from ember._src.base.version import JAX_API_VERSION as __jax_version__  # noqa: E402,F401
from ember._src.base.version import version_info as _version_info  # noqa: E402
__version_info__ = _version_info(__version__)


def typeof(x):
  """The abstract value (type) of an array or tracer (`float32[3]`), of a Ref
  (`Ref{float32[3]}`), or of a value of a registered hijax type."""
  # here, not at the top: keeps ember's namespace JAX's
  from ember._src.core import AbstractValue, get_aval
  from ember._src.core.hitypes import hitype_of
  hitype = hitype_of(x)   # first: a hi value's own attributes may be its type's methods
  if hitype is not None:
    return hitype
  aval = getattr(x, "aval", None)
  return aval if isinstance(aval, AbstractValue) else get_aval(x)


def device_count(backend=None) -> int:
  """All processes' devices (`local_device_count()` for this process's)."""
  return len(devices(backend))


def local_device_count(backend=None) -> int:
  return len(local_devices(backend=backend))


from ember._src.core.sharding import local_devices  # noqa: E402,F401
from ember._src.parallel.distributed import process_count, process_index  # noqa: E402,F401
from ember import distributed  # noqa: E402,F401


from ember import random  # noqa: E402,F401
from ember import nn, scipy  # noqa: E402,F401
from ember import image  # noqa: E402,F401
from ember import lib, profiler  # noqa: E402,F401
from ember import core, sharding  # noqa: E402,F401
from ember._src.core.sharding import make_mesh, NamedSharding, set_mesh  # noqa: E402,F401
from ember._src.core.sharding import PartitionSpec as P  # noqa: E402,F401

# the rest of JAX 0.12's top level (issue 34)
from ember._src.base.config import (  # noqa: E402,F401
    debug_infs, debug_nans, default_matmul_precision, default_prng_impl, enable_checks,
    explain_cache_misses, legacy_prng_key, make_user_context, no_execution, no_tracing)
from ember._src.base.config import (  # noqa: E402,F401
    allow_f16_reductions, array_garbage_collection_guard, auto_pcast, enable_custom_prng,
    jax2tf_associative_scan_reductions, remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp, thread_guard, threefry_partitionable, transfer_guard,
    transfer_guard_device_to_device, transfer_guard_device_to_host,
    transfer_guard_host_to_device)
from ember._src.base.dtypes import float0  # noqa: E402,F401
from ember._src.library.state import empty_ref, free_ref, freeze  # noqa: E402,F401
from ember._src.core.sharding import (  # noqa: E402,F401
    get_abstract_mesh, get_mesh, reshard, use_abstract_mesh)
from ember._src.library.jacobians import fwd_and_bwd  # noqa: E402,F401
from ember._src.parallel.smap import smap  # noqa: E402,F401
from ember._src.core.api_util import Inline  # noqa: E402,F401
from ember import avals, custom_batching, dlpack, memory, ops, version  # noqa: E402,F401
from ember._src.core.array import Shard  # noqa: E402,F401
from ember._src.library.environment import (  # noqa: E402,F401
    copy_to_host_async, host_count, host_id, host_ids, live_arrays, print_environment_info,
    process_indices)

from ember._src.driver.compilation import start_cpu_backend as _start_cpu_backend  # noqa: E402
_start_cpu_backend()
from ember._src.driver.compilation import freeze_startup_objects as _freeze  # noqa: E402
_freeze()   # (after every module of the import: a full collection no longer walks them)

from ember import compat as _compat  # noqa: E402  (last: EMBER_AS_JAX=1 aliases jax to ember)
_compat.install_from_env()
