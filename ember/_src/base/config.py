"""ember.config: global flags, set with `config.update(name, value)` or environment variables.

Names follow JAX (`jax_enable_x64`, ...). Flags that change what tracing produces are read
by the jit cache key, so keep them in this one table.
"""
from __future__ import annotations

import contextlib
import difflib
import itertools
import os
import sys
from typing import Sequence


def _env_int(name: str, default: int) -> int:
  v = os.environ.get(name, "").strip()
  try:
    return int(v) if v else default
  except ValueError:
    raise ValueError(f"{name}={v!r}: expected an integer") from None


def _env_bool(name: str, default: bool) -> bool:
  v = os.environ.get(name)
  if v is None:
    return default
  return v.strip().lower() in ("1", "true", "yes", "on", "t", "y")


_TRACEBACK_FILTERING_MODES = ("off", "auto", "tracebackhide", "remove_frames",
                              "quiet_remove_frames")


# what jax_default_matmul_precision takes: JAX's precision names (JAX's dot-algorithm preset
# names, "F32_F32_F32", ..., are not: ember's dot has no algorithm presets)
_MATMUL_PRECISIONS = (None, "default", "high", "highest", "bfloat16", "tensorfloat32",
                      "float32")


# JAX's PRNG implementations (jax_default_prng_impl); ember has the first
_PRNG_IMPLS = ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32", "philox4x32")


# The flags that change what tracing produces: part of every jit cache key.
TRACE_CONFIG = ("jax_enable_x64", "jax_numpy_rank_promotion", "jax_default_matmul_precision",
                "jax_user_contexts", "jax_threefry_partitionable", "jax_softmax_custom_jvp",
                "jax_allow_f16_reductions")


# JAX's transfer guard levels (jax_transfer_guard*); None: unset ("allow")
_TRANSFER_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_TRANSFER_GUARD_OPTIONS = ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
                           "jax_transfer_guard_device_to_host",
                           "jax_transfer_guard_device_to_device")
# options that take one of a few values or None, as JAX's optional_enum_state
_OPTIONAL_ENUMS = {**{n: _TRANSFER_GUARD_LEVELS for n in _TRANSFER_GUARD_OPTIONS},
                   "jax_array_garbage_collection_guard": ("allow", "log", "fatal")}
# JAX's bool_state options that ember keeps as plain flags: a set value is stored as bool
_BOOL_STATES = ("jax_threefry_partitionable", "jax_softmax_custom_jvp",
                "jax_allow_f16_reductions", "jax_thread_guard", "jax_enable_custom_prng",
                "jax2tf_associative_scan_reductions", "jax_remove_size_one_mesh_axis_from_type",
                "jax_auto_pcast")


class Config:
  """The flags (`_values`: name -> value), and what a jitted call reads of them on every
  call, derived whenever a flag changes (each read of `_values` costs ~0.05 us there):
  `_jit_trace_key`, the TRACE_CONFIG values (and the default device when one is set) when
  jitted calls compile for the CPU backend (None when jit is disabled or runs on the
  interpreter);
  `_jit_inline`, whether a small call may run inline (asynchronous dispatch on, checked mode
  off)."""
  _defaults = {
      "jax_enable_x64": lambda: _env_bool("JAX_ENABLE_X64", False),
      "jax_log_compiles": lambda: _env_bool("JAX_LOG_COMPILES", False),
      "jax_explain_cache_misses": lambda: _env_bool("JAX_EXPLAIN_CACHE_MISSES", False),
      "jax_numpy_rank_promotion": lambda: os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
      # "strict": no implicit promotion between distinct dtypes (only weak scalars join in)
      "jax_numpy_dtype_promotion": lambda: os.environ.get("JAX_NUMPY_DTYPE_PROMOTION",
                                                          "standard"),
      "jax_default_matmul_precision": lambda: None,
      "jax_platforms": lambda: os.environ.get("JAX_PLATFORMS", "cpu"),
      # the device jitted calls without committed arguments run on, and device_put(x)
      # puts on: a Device (ember.devices('tpu')[0]), a backend name ('tpu'), or None
      # (ember's native CPU)
      "jax_default_device": lambda: None,
      "jax_disable_jit": lambda: _env_bool("JAX_DISABLE_JIT", False),
      # look for tracers left reachable after their transformation (core/leak_check.py)
      "jax_check_tracer_leaks": lambda: _env_bool("JAX_CHECK_TRACER_LEAKS", False),
      # JAX's key-reuse checker: ember has none, so only False (off, JAX's default) is taken
      "jax_debug_key_reuse": lambda: False,
      # how many CPU devices the CPU backend has; -1: EMBER_NUM_CPU_DEVICES, else XLA_FLAGS'
      # --xla_force_host_platform_device_count, else 1 (base/flags.py). Read when the backend
      # is first used; changing it afterwards raises, as in JAX
      "jax_num_cpu_devices": lambda: _env_int("JAX_NUM_CPU_DEVICES", -1),
      # what traceback_util.api_boundary does to an exception's traceback: "off", "auto",
      # "tracebackhide", "remove_frames", "quiet_remove_frames" (JAX's modes)
      "jax_traceback_filtering": lambda: os.environ.get("JAX_TRACEBACK_FILTERING", "auto"),
      # compile at opt_level 0 (compilation.compile_flags): no HLO simplification, no LLVM IR
      # passes, fast instruction selection; read when a compilation starts
      "jax_disable_most_optimizations": lambda: _env_bool("JAX_DISABLE_MOST_OPTIMIZATIONS",
                                                          False),
      # ember: "cpu" compiles jitted functions to native code; "interpreter" runs their
      # jaxprs with the reference interpreter (each primitive's NumPy implementation)
      "ember_jit_backend": lambda: os.environ.get("EMBER_JIT_BACKEND", "cpu"),
      # ember: run the reference interpreter beside every compiled call and compare
      "ember_check_compiled": lambda: _env_bool("EMBER_CHECK_COMPILED", False),
      # jitted calls return at once and run on the device's executor thread, in call order
      "jax_cpu_enable_async_dispatch": lambda: _env_bool("JAX_CPU_ENABLE_ASYNC_DISPATCH", True),
      # ember: a jit partitioned over devices issues its independent all-reduces (same
      # axes, op and dtype) as one, at the first use of any (driver/sharding_propagation.py)
      "ember_group_all_reduces": lambda: _env_bool("EMBER_GROUP_ALL_REDUCES", True),
      # persistent compilation cache (ember/_src/base/persistent_cache.py); None = off
      "jax_compilation_cache_dir": lambda: (os.environ.get("EMBER_COMPILATION_CACHE_DIR")
                                            or os.environ.get("JAX_COMPILATION_CACHE_DIR")),
      "jax_enable_compilation_cache": lambda: _env_bool("JAX_ENABLE_COMPILATION_CACHE", True),
      "jax_persistent_cache_min_compile_time_secs": lambda: float(
          os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", 1.0)),
      # 0: no minimum (JAX lets the filesystem override 0; ember has no override); -1: none
      "jax_persistent_cache_min_entry_size_bytes": lambda: int(
          os.environ.get("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", 0)),
      # JAX's cap on the directory's size in bytes: -1 = ember's cap below, 0 = cache off
      "jax_compilation_cache_max_size": lambda: int(
          os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", -1)),
      # whether source locations (metadata) are part of the key: False = moving a function
      # to another line keeps its entry
      "jax_compilation_cache_include_metadata_in_key": lambda: _env_bool(
          "JAX_COMPILATION_CACHE_INCLUDE_METADATA_IN_KEY", False),
      # ember: total size the cache directory may reach when jax_compilation_cache_max_size
      # is -1; least recently used entries go first. -1 = no cap
      "ember_persistent_cache_max_size_bytes": lambda: int(
          os.environ.get("EMBER_PERSISTENT_CACHE_MAX_SIZE_BYTES", 1 << 30)),
      # ember: where the CPU backend keeps the object code of its runtime functions (the
      # shared dot loops) across processes (backends/cpu/runtime_cache.py); "" = off
      "ember_runtime_cache_dir": lambda: os.environ.get(
          "EMBER_RUNTIME_CACHE_DIR", os.path.join(
              os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"),
                                                               ".cache"), "ember", "runtime")),
      # ember: eager primitives' one-op compiles kept in that directory's `eager` folder
      # (driver/eager_kernels.py); False: every process compiles its own
      "ember_eager_kernel_cache": lambda: _env_bool("EMBER_EAGER_KERNEL_CACHE", True),
      # raise FloatingPointError where a primitive makes a nan (an inf): eager ops check their
      # outputs, a jitted call its outputs, then runs op by op to name the primitive
      "jax_debug_nans": lambda: _env_bool("JAX_DEBUG_NANS", False),
      "jax_debug_infs": lambda: _env_bool("JAX_DEBUG_INFS", False),
      # check JAX's invariants (slower): every jaxpr jit traces is type-checked
      # (core/typecheck.py), a JaxprTypeError when one is ill-typed
      "jax_enable_checks": lambda: _env_bool("JAX_ENABLE_CHECKS", False),
      # a jit that would trace (a cache miss) raises RuntimeError instead
      "jax_no_tracing": lambda: _env_bool("JAX_NO_TRACING", False),
      # a jitted call or an eager primitive that would run raises RuntimeError instead
      # (tracing, lowering and compiling still work)
      "jax_no_execution": lambda: _env_bool("JAX_NO_EXECUTION", False),
      # what a raw uint32 key passed to a jax.random function does: "allow", "warn", "error"
      "jax_legacy_prng_key": lambda: os.environ.get("JAX_LEGACY_PRNG_KEY", "allow"),
      # the PRNG implementation of new keys: ember has threefry2x32 only
      "jax_default_prng_impl": lambda: os.environ.get("JAX_DEFAULT_PRNG_IMPL", "threefry2x32"),
      # the values of the contexts make_user_context made, in order: part of every jit key
      "jax_user_contexts": lambda: (),
      # False: JAX's original (non-partitionable) threefry scheme for split and random bits
      # (library/random/keys.py)
      "jax_threefry_partitionable": lambda: _env_bool("JAX_THREEFRY_PARTITIONABLE", True),
      # True: jax.nn.softmax has its custom_jvp rule; False: the rule autodiff derives
      "jax_softmax_custom_jvp": lambda: _env_bool("JAX_SOFTMAX_CUSTOM_JVP", True),
      # False: lax.reduce_sum of float16/bfloat16 over a non-unit axis raises ValueError
      "jax_allow_f16_reductions": lambda: _env_bool("JAX_ALLOW_F16_REDUCTIONS", True),
      # host-to-device transfers (a NumPy or Python value made an Array by jnp.asarray,
      # device_put or a jit call) log or raise; device-to-host and device-to-device levels
      # are kept but, as in JAX on CPU (the host's memory is the device's), never fire.
      # jax_transfer_guard is set-only: setting it sets the three directions
      "jax_transfer_guard": lambda: None,
      "jax_transfer_guard_host_to_device": lambda: None,
      "jax_transfer_guard_device_to_host": lambda: None,
      "jax_transfer_guard_device_to_device": lambda: None,
      # JAX's options that do nothing on one CPU process, kept (validated) for programs that
      # set them: thread_guard checks multi-process collectives' threads;
      # array_garbage_collection_guard logs arrays freed by the cycle collector (ember's
      # arrays hold host memory, freed either way); enable_custom_prng is an internal
      # upgrade flag; jax2tf_associative_scan_reductions picks jax2tf's cumulative
      # lowering; remove_size_one_mesh_axis_from_type and auto_pcast shape
      # sharding-in-types avals, which ember's avals do not carry
      "jax_thread_guard": lambda: False,
      "jax_array_garbage_collection_guard": lambda: None,
      "jax_enable_custom_prng": lambda: False,
      "jax2tf_associative_scan_reductions": lambda: False,
      "jax_remove_size_one_mesh_axis_from_type": lambda: False,
      "jax_auto_pcast": lambda: True,
  }

  def __init__(self):
    object.__setattr__(self, "_values", {k: f() for k, f in self._defaults.items()})
    self._derive()

  def _set(self, name: str, value) -> None:
    self._values[name] = value
    self._derive()
    listener = _listeners.get(name)
    if listener is not None:
      listener(value)

  def _derive(self) -> None:
    v = self._values
    # (debug_nans/infs: every call takes the slow path, which checks the outputs)
    # (a host-to-device transfer guard: the slow path checks the arguments)
    plain = not (v["jax_disable_jit"] or v["jax_debug_nans"] or v["jax_debug_infs"]
                 or v["jax_no_execution"] or v["jax_transfer_guard_host_to_device"]
                 not in (None, "allow")) and v["ember_jit_backend"] == "cpu"
    # the default device decides where a call runs (PJRT or native): part of the key when set
    device = () if v["jax_default_device"] is None else (v["jax_default_device"],)
    object.__setattr__(self, "_jit_trace_key",
                       tuple(v[k] for k in TRACE_CONFIG) + device if plain else None)
    object.__setattr__(self, "_jit_inline", bool(v["jax_cpu_enable_async_dispatch"])
                       and not v["ember_check_compiled"])

  def update(self, name: str, value) -> None:
    if name not in self._values:
      close = difflib.get_close_matches(str(name), self._values, n=1)
      raise AttributeError(f"Unrecognized config option: {name}"
                           + (f" (did you mean {close[0]!r}?)" if close
                              else ""))
    if name == "ember_jit_backend" and value not in ("cpu", "interpreter"):
      raise ValueError(f"ember_jit_backend must be 'cpu' or 'interpreter', got {value!r}")
    if name == "jax_numpy_rank_promotion" and value not in ("allow", "warn", "raise"):
      raise ValueError(f"jax_numpy_rank_promotion must be 'allow', 'warn' or 'raise', got {value!r}")
    if name == "jax_numpy_dtype_promotion" and value not in ("standard", "strict"):
      raise ValueError(f"jax_numpy_dtype_promotion must be 'standard' or 'strict', got "
                       f"{value!r}")
    if name == "jax_debug_key_reuse" and value:
      raise NotImplementedError("jax_debug_key_reuse: ember has no key-reuse checker (JAX's "
                                "jax.experimental.key_reuse); only False (off) is supported")
    if name == "jax_traceback_filtering" and value not in _TRACEBACK_FILTERING_MODES:
      raise ValueError(f"jax_traceback_filtering must be one of {_TRACEBACK_FILTERING_MODES}, "
                       f"got {value!r}")
    if name == "jax_default_matmul_precision" and value not in _MATMUL_PRECISIONS:
      raise ValueError(f"new enum value must be None or in {list(_MATMUL_PRECISIONS[1:])}, "
                       f"got {value} of type {type(value)}.")
    if name == "jax_legacy_prng_key" and value not in ("allow", "warn", "error"):
      raise ValueError(f"{value!r} is not a valid LegacyPrngKeyState")
    if name == "jax_default_prng_impl":
      if value not in _PRNG_IMPLS:
        raise ValueError(f"new enum value must be in {list(_PRNG_IMPLS)}, got {value} of type "
                         f"{type(value)}.")
      if value != "threefry2x32":
        raise ValueError(f"jax_default_prng_impl={value!r}: ember implements the "
                         "'threefry2x32' PRNG only")
    if name == "jax_default_device" and not (value is None or isinstance(value, str)
                                             or hasattr(value, "platform")):
      raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                       "`jax.devices('tpu')[0]`) or a platform name string like 'cpu' or "
                       f"'tpu', got: {value!r}")
    if name in _OPTIONAL_ENUMS and not (value is None or value in _OPTIONAL_ENUMS[name]):
      raise ValueError(f"new enum value must be None or in {list(_OPTIONAL_ENUMS[name])}, got "
                       f"{value} of type {type(value)}.")
    if name in _BOOL_STATES:
      value = bool(value)
    check = _validators.get(name)
    if check is not None:
      check(self._values[name], value)
    if name == "jax_transfer_guard":   # set-only in JAX: sets every direction
      for direction in _TRANSFER_GUARD_OPTIONS[1:]:
        self._set(direction, value)
    self._set(name, value)

  def read(self, name: str):
    return self._values[name]

  def __getattr__(self, name):
    try:
      return self._values[name]
    except KeyError:
      raise AttributeError(f"ember.config has no option {name!r}") from None

  def __setattr__(self, name, value):
    self.update(name, value)

  def parse_flags_with_absl(self, argv: Sequence[str] | None = None) -> None:
    """Set options from the command line's `--jax...` arguments (sys.argv before a `--`),
    as absl spells them: `--jax_enable_x64`, `--nojax_enable_x64`, `--jax_name=value`,
    `--jax_name value`. Values take the option's current type; names ember lacks are
    skipped (absl's known_only). Runs once per process, as JAX's does (argv: for tests)."""
    global _parsed_command_line
    if _parsed_command_line and argv is None:
      return
    args = list(itertools.takewhile(lambda a: a != "--", sys.argv[1:] if argv is None
                                    else argv))
    i = 0
    while i < len(args):
      arg = args[i]
      i += 1
      if not arg.startswith(("--jax", "--nojax")):
        continue
      name, eq, text = arg[2:].partition("=")
      negated = name.startswith("no") and name[2:] in self._values
      if negated:
        name = name[2:]
      if name not in self._values:
        continue
      old = self._values[name]
      if isinstance(old, bool) or name in _BOOL_OPTIONS:
        if negated:
          value = False
        elif not eq:
          value = True
        elif text.lower() in ("true", "t", "1"):
          value = True
        elif text.lower() in ("false", "f", "0"):
          value = False
        else:
          raise ValueError(f"--{name}={text}: expected true or false")
      else:
        if not eq:
          if i >= len(args):
            raise ValueError(f"--{name} needs a value")
          text, i = args[i], i + 1
        value = _parse_like(name, old, text)
      self.update(name, value)
    if argv is None:
      _parsed_command_line = True

  def values(self) -> dict:
    return dict(self._values)

  @contextlib.contextmanager
  def _override(self, name, value):
    old = self._values[name]
    self.update(name, value)
    try:
      yield
    finally:
      self._set(name, old)


# name -> check(old value, new value), raising when `new` may not be set now: modules above
# this one register the checks that need their state (base/flags.py: jax_num_cpu_devices)
_validators: dict = {}
# name -> called with the new value after the option changes (driver/debug_nans.py installs
# its eager check while jax_debug_nans or jax_debug_infs is on)
_listeners: dict = {}


_parsed_command_line = False   # parse_flags_with_absl ran on sys.argv
_BOOL_OPTIONS = frozenset(n for n, f in Config._defaults.items() if isinstance(f(), bool))
_INT_OPTIONS = ("jax_num_cpu_devices", "jax_persistent_cache_min_entry_size_bytes",
                "jax_compilation_cache_max_size", "ember_persistent_cache_max_size_bytes")


def _parse_like(name: str, old, text: str):
  """A command-line value for option `name`, converted to the option's type."""
  try:
    if name in _INT_OPTIONS or isinstance(old, int):
      return int(text)
    if isinstance(old, float):
      return float(text)
  except ValueError:
    raise ValueError(f"--{name}={text}: expected a {type(old).__name__}") from None
  return text


config = Config()


def enable_x64(new_val: bool = True):
  """Context manager that turns 64-bit mode on (or off) inside its block."""
  return config._override("jax_enable_x64", bool(new_val))


def disable_x64():
  """Context manager that turns 64-bit mode off inside its block."""
  return enable_x64(False)


def default_device(device):
  """Context manager: jitted calls without committed arguments, and device_put(x), use
  `device` (a Device or a backend name) inside the block (`jax.default_device`)."""
  return config._override("jax_default_device", device)


def disable_jit(disable: bool = True):
  """Context manager: jitted functions run op by op (eagerly) inside the block."""
  return config._override("jax_disable_jit", bool(disable))


def numpy_dtype_promotion(mode: str):
  """Context manager: the dtype promotion rules inside the block, "standard" or "strict"."""
  return config._override("jax_numpy_dtype_promotion", mode)


def debug_key_reuse(enabled: bool):
  """Context manager: JAX's key-reuse checking on or off inside the block
  (`jax.debug_key_reuse`); ember has no checker, so only False is taken."""
  return config._override("jax_debug_key_reuse", bool(enabled))


def numpy_rank_promotion(mode: str):
  """Context manager: what implicit rank promotion does inside the block, "allow", "warn"
  or "raise"."""
  return config._override("jax_numpy_rank_promotion", mode)


def x64_enabled() -> bool:
  return config._values["jax_enable_x64"]


class State:
  """One option as JAX's `jax.<name>` holds it (`jax.debug_nans`): `.value` reads it, and
  `with jax.debug_nans(True):` sets it inside the block. `doc` (what the option does) is
  the instance's docstring, as JAX's states have."""

  def __init__(self, name: str, convert=None, doc: str | None = None):
    self._name, self._convert = name, convert
    if doc is not None:
      self.__doc__ = f"Context manager for `{name}` config option.\n\n{doc}"

  @property
  def value(self):
    return config._values[self._name]

  def __call__(self, new_val):
    return config._override(self._name, new_val if self._convert is None
                            else self._convert(new_val))

  def __repr__(self):
    return f"<State {self._name}={self.value!r}>"


debug_nans = State("jax_debug_nans", bool)
debug_infs = State("jax_debug_infs", bool)
no_tracing = State("jax_no_tracing", bool)
no_execution = State("jax_no_execution", bool)
enable_checks = State("jax_enable_checks", bool)
legacy_prng_key = State("jax_legacy_prng_key", lambda v: getattr(v, "value", v))
default_prng_impl = State("jax_default_prng_impl")
explain_cache_misses = State("jax_explain_cache_misses", bool)
default_matmul_precision = State("jax_default_matmul_precision")
threefry_partitionable = State(
    "jax_threefry_partitionable", bool,
    "True (the default): split and random bits hash per-element counters (partitionable). "
    "False: JAX's original scheme, one counter stream for the whole draw (other values).")
softmax_custom_jvp = State(
    "jax_softmax_custom_jvp", bool,
    "True (the default): jax.nn.softmax has its custom_jvp rule; False: the derivative "
    "autodiff takes through it (the max under stop_gradient).")
allow_f16_reductions = State(
    "jax_allow_f16_reductions", bool,
    "False: lax.reduce_sum of float16/bfloat16 over a non-unit axis raises ValueError.")
_GUARD_DOC = ("The transfer guard level of {} transfers: None/'allow', 'log', 'disallow', "
              "'log_explicit', 'disallow_explicit'. {}")
transfer_guard_host_to_device = State(
    "jax_transfer_guard_host_to_device", None, _GUARD_DOC.format(
        "host-to-device", "jnp.asarray/jnp.array of host values and jitted calls' NumPy "
        "and Python arguments are implicit, device_put explicit (base/transfer_guard.py)."))
transfer_guard_device_to_host = State(
    "jax_transfer_guard_device_to_host", None, _GUARD_DOC.format(
        "device-to-host", "On CPU, as in JAX, none happen: the level never fires."))
transfer_guard_device_to_device = State(
    "jax_transfer_guard_device_to_device", None, _GUARD_DOC.format(
        "device-to-device", "On CPU, as in JAX, none happen: the level never fires."))
# no effect on one CPU process, as in JAX
_NO_EFFECT = " It has no effect on one CPU process, in JAX as in ember."
thread_guard = State(
    "jax_thread_guard", bool,
    "True: a multi-process operation called from another thread than the one that set "
    "the guard raises." + _NO_EFFECT)
array_garbage_collection_guard = State(
    "jax_array_garbage_collection_guard", None,
    "What an Array freed by the garbage collector (not by reference counting) does: "
    "None/'allow', 'log', 'fatal'. ember's Arrays hold host memory, freed either way;"
    + _NO_EFFECT)
enable_custom_prng = State(
    "jax_enable_custom_prng", bool,
    "An internal upgrade flag for custom PRNG implementations." + _NO_EFFECT)
jax2tf_associative_scan_reductions = State(
    "jax2tf_associative_scan_reductions", bool,
    "jax2tf's lowering of cumulative reductions (associative scan instead of "
    "reduce_window); jax2tf only." + _NO_EFFECT)
remove_size_one_mesh_axis_from_type = State(
    "jax_remove_size_one_mesh_axis_from_type", bool,
    "Drops size-1 mesh axes from avals' sharding and vma (sharding in types, which "
    "ember's avals do not carry)." + _NO_EFFECT)
auto_pcast = State(
    "jax_auto_pcast", bool,
    "True: simple ops insert pvary to match their operands' varying manual axes "
    "(sharding in types, which ember's avals do not carry)." + _NO_EFFECT)


@contextlib.contextmanager
def transfer_guard(new_val: str):
  """Context manager: the transfer guard level of every direction inside the block
  (`jax.transfer_guard`): "allow", "log", "disallow", "log_explicit" or
  "disallow_explicit". On CPU only host-to-device transfers are guarded, as in JAX."""
  with contextlib.ExitStack() as stack:
    for name in _TRANSFER_GUARD_OPTIONS[1:] + _TRANSFER_GUARD_OPTIONS[:1]:   # (set-only last)
      stack.enter_context(config._override(name, new_val))
    yield


class UserContext:
  """A context `make_user_context` made: `.value`, and `with ctx(value):` sets it inside the
  block; its value is part of every jit cache key, so a change re-traces and recompiles."""
  __slots__ = ("_index",)

  def __init__(self, index: int):
    self._index = index

  @property
  def value(self):
    return config._values["jax_user_contexts"][self._index]

  @contextlib.contextmanager
  def __call__(self, new_val):
    values = config._values["jax_user_contexts"]
    old = values[self._index]
    config._set("jax_user_contexts", values[:self._index] + (new_val,) + values[self._index + 1:])
    try:
      yield
    finally:
      values = config._values["jax_user_contexts"]
      config._set("jax_user_contexts", values[:self._index] + (old,) + values[self._index + 1:])


def make_user_context(default_value=None) -> UserContext:
  """A new jit-cache-sensitive context (`jax.make_user_context`): `with ctx(v):` inside,
  jitted functions trace and compile anew for each value (values must hash). Not
  thread-safe while being made, as JAX's."""
  values = config._values["jax_user_contexts"]
  config._set("jax_user_contexts", values + (default_value,))
  return UserContext(len(values))
