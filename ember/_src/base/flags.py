"""Compiler flags: `EMBER_FLAGS` (and the `XLA_FLAGS` spellings), read once at import.

    EMBER_FLAGS="--dump_to=/tmp/dump --disable_passes=fusion,cse --opt_level=2"
    XLA_FLAGS="--xla_dump_to=/tmp/dump --xla_dump_hlo_as_text --xla_disable_hlo_passes=fusion"

Both variables are parsed into one frozen `Flags` record (EMBER_FLAGS wins for single
values; disabled passes are the union). As in XLA, the variables are read only at process
start: set them before `import ember` (seed code does it in a subprocess). Tests use
`parse(text)` and the `override(**fields)` context manager.

Unknown `--xla_*` flags are ignored (XLA_FLAGS carries many backend flags ember does not
have); an unknown ember flag, a bad value, or an unknown ember pass name raises ValueError
naming the flag and listing the valid ones.
"""
from __future__ import annotations

import contextlib
import os
import re
import threading
from typing import Iterator, NamedTuple

from ember._src.base import config as config_lib
from ember._src.base.config import config

# The passes of `passes/pipeline.py`, by the names `--disable_passes` takes.
PASS_NAMES = ("inline", "simple_scatter", "algsimp", "constant_folding", "dot_transpose", "cse",
              "dce", "reduction_splitter", "dot_split_k", "fusion", "dot_epilogue",
              "async_collectives")

# XLA's pass names (`--xla_disable_hlo_passes`) -> ember's. Other XLA names are accepted and
# ignored: XLA has many passes ember has no counterpart for.
XLA_PASS_NAMES = {
    "inline": "inline", "call-inliner": "inline",
    "algsimp": "algsimp",
    "scatter_expander": "simple_scatter",
    "constant_folding": "constant_folding",
    "dot_transpose": "dot_transpose", "transpose-folding": "dot_transpose",
    "cse": "cse",
    "dce": "dce",
    "fusion": "fusion",
    "async-collective-creator": "async_collectives",
}
# Names `--disable_passes` accepts: ember's plus XLA's aliases of them.
_EMBER_PASS_ALIASES = {**{n: n for n in PASS_NAMES}, "call-inliner": "inline",
                       "transpose-folding": "dot_transpose"}


class Flags(NamedTuple):
  """The compiler's flags (a frozen record: compare or diff it field by field)."""
  dump_to: str | None = None            # directory for HLO/LLVM/asm/buffer-assignment dumps
  dump_hlo_as_text: bool = False        # accepted for XLA compatibility; dumps are always text
  disable_passes: frozenset = frozenset()   # pass names (PASS_NAMES) the pipeline skips
  opt_level: int = 3                    # 0..3: 0 runs only the passes the backend needs
  tiered_compilation: bool = True       # quick-tier code first, optimized in the background
  cpu_max_isa: str | None = None        # x86 level cap (backends/cpu/host.py); process start only


def _bool(flag: str, value: str | None) -> bool:
  if value is None or value.lower() in ("true", "1", "yes"):
    return True
  if value.lower() in ("false", "0", "no"):
    return False
  raise ValueError(f"flag {flag}: expected true or false, got {value!r}")


def _opt_level(flag: str, value: str | None) -> int:
  try:
    level = int(value)  # type: ignore[arg-type]
  except (TypeError, ValueError):
    level = -1
  if not 0 <= level <= 3:
    raise ValueError(f"flag {flag}: expected an optimization level 0, 1, 2 or 3, got {value!r}")
  return level


# XLA's --xla_cpu_max_isa levels, lowest first (backends/cpu/host.py maps them to CPUs)
ISA_LEVELS = ("SSE4_2", "AVX", "AVX2", "AVX512")


def _isa(flag: str, value: str | None) -> str | None:
  level = (value or "").upper()
  if level not in ISA_LEVELS:
    raise ValueError(f"flag {flag}: expected one of {', '.join(ISA_LEVELS)}, got {value!r}")
  return level


def _dir(flag: str, value: str | None) -> str | None:
  if value is None:
    raise ValueError(f"flag {flag}: expected a directory, as in {flag}=/tmp/dump")
  return value or None   # XLA: an empty --xla_dump_to means no dump


def _names(flag: str, value: str | None, *, xla: bool) -> frozenset:
  if value is None:
    raise ValueError(f"flag {flag}: expected pass names, as in {flag}=fusion,cse")
  table = XLA_PASS_NAMES if xla else _EMBER_PASS_ALIASES
  out = set()
  for name in filter(None, (n.strip() for n in value.split(","))):
    if name in table:
      out.add(table[name])
    elif not xla:
      raise ValueError(f"flag {flag}: unknown pass {name!r}; valid passes: "
                       f"{', '.join(PASS_NAMES)}")
  return frozenset(out)


# flag name -> (record field, value parser). Both spellings of each flag.
_FLAGS = {
    "--dump_to": ("dump_to", _dir),
    "--xla_dump_to": ("dump_to", _dir),
    "--dump_hlo_as_text": ("dump_hlo_as_text", _bool),
    "--xla_dump_hlo_as_text": ("dump_hlo_as_text", _bool),
    "--disable_passes": ("disable_passes", lambda f, v: _names(f, v, xla=False)),
    "--xla_disable_hlo_passes": ("disable_passes", lambda f, v: _names(f, v, xla=True)),
    "--opt_level": ("opt_level", _opt_level),
    "--xla_backend_optimization_level": ("opt_level", _opt_level),
    "--tiered_compilation": ("tiered_compilation", _bool),
    "--cpu_max_isa": ("cpu_max_isa", _isa),
    "--xla_cpu_max_isa": ("cpu_max_isa", _isa),
}


def parse(text: str, base: Flags | None = None, source: str = "EMBER_FLAGS") -> Flags:
  """Parse a flag string (`--name=value` or `--name`, whitespace-separated) on top of `base`.

  Both spellings are accepted in any string; `source` only names the variable in errors."""
  record = base or Flags()
  for token in text.split():
    name, eq, value = token.partition("=")
    entry = _FLAGS.get(name)
    if entry is None:
      if name.startswith("--xla_"):
        continue            # a backend flag of XLA's that ember does not have
      raise ValueError(f"{source}: unknown flag {token!r}; valid flags: {', '.join(_FLAGS)}")
    field, parser = entry
    parsed = parser(name, value if eq else None)
    if field == "disable_passes":
      parsed = record.disable_passes | parsed
    record = record._replace(**{field: parsed})
  return record


def from_environ(environ=os.environ) -> Flags:
  """The flags of a process environment: XLA_FLAGS, then EMBER_FLAGS on top."""
  xla = parse(environ.get("XLA_FLAGS", ""), source="XLA_FLAGS")
  return parse(environ.get("EMBER_FLAGS", ""), base=xla, source="EMBER_FLAGS")


_lock = threading.Lock()
_current = from_environ()


def get() -> Flags:
  """The current flags (the environment's, or an `override`'s while one is active)."""
  return _current


def _validate(fields: dict) -> dict:
  unknown = set(fields) - set(Flags._fields)
  if unknown:
    raise ValueError(f"flags.override: unknown field(s) {sorted(unknown)}; "
                     f"valid fields: {', '.join(Flags._fields)}")
  if "disable_passes" in fields:
    names = fields["disable_passes"]
    names = [names] if isinstance(names, str) else list(names)
    fields["disable_passes"] = _names("disable_passes", ",".join(names), xla=False)
  if "cpu_max_isa" in fields:
    raise ValueError("flags.override: cpu_max_isa is read once, when the process first "
                     "compiles; set EMBER_FLAGS=--cpu_max_isa=LEVEL before starting Python")
  if "opt_level" in fields:
    fields["opt_level"] = _opt_level("opt_level", fields["opt_level"])
  if "dump_to" in fields and fields["dump_to"] is not None:
    fields["dump_to"] = os.fspath(fields["dump_to"]) or None
  return fields


@contextlib.contextmanager
def override(**fields) -> Iterator[Flags]:
  """Temporarily replace fields of the current flags (tests: `override(disable_passes=...)`)."""
  global _current
  fields = _validate(dict(fields))
  with _lock:
    saved = _current
    _current = saved._replace(**fields)
  try:
    yield _current
  finally:
    with _lock:
      _current = saved


def enabled(name: str, record: Flags | None = None) -> bool:
  """Whether pass `name` is switched on in `record` (default: the current flags)."""
  return name not in (record or _current).disable_passes


def _option_bool(name: str, value) -> bool:
  if isinstance(value, bool):
    return value
  text = str(value).strip().lower()
  if text in ("true", "1"):
    return True
  if text in ("false", "0"):
    return False
  raise ValueError(f"While setting option {name}, {value!r} is not a valid bool value.")


def _option_int(name: str, value) -> int:
  try:
    return int(str(value).strip()) if not isinstance(value, bool) else int(value)
  except ValueError:
    raise ValueError(f"While setting option {name}, {value!r} is not a valid int32 "
                     "value.") from None


def _option_passes(name: str, value) -> frozenset:
  text = value if isinstance(value, str) else ",".join(map(str, value))
  return _names(name, text, xla=True)


# `compile(compiler_options=...)`'s options that ember's flags carry: name -> (field, parser)
_COMPILER_OPTIONS = {
    "xla_disable_hlo_passes": ("disable_passes", _option_passes),
    "xla_backend_optimization_level": ("opt_level", lambda n, v: _opt_level(n, str(_option_int(n, v)))),
    "xla_dump_to": ("dump_to", lambda n, v: str(v) or None),
    "xla_dump_hlo_as_text": ("dump_hlo_as_text", _option_bool),
}


def with_compiler_options(options, base: Flags | None = None) -> Flags:
  """The flags of `Lowered.compile(compiler_options=options)` on top of `base`.

  JAX hands the options to XLA, which accepts the names of its debug options and refuses
  anything else. Here: the options ember's flags carry (xla_disable_hlo_passes,
  xla_backend_optimization_level, xla_dump_to, xla_dump_hlo_as_text) are applied, with
  XLA's checks of their values; other `xla_*` options are accepted and have no effect (as
  in XLA_FLAGS: backend options ember has no counterpart for, e.g. xla_gpu_autotune_level,
  xla_embed_ir_in_executable); any other name raises ValueError with XLA's message."""
  record = base or _current
  for name, value in dict(options or {}).items():
    entry = _COMPILER_OPTIONS.get(name)
    if entry is None:
      if isinstance(name, str) and name.startswith("xla_"):
        continue
      raise ValueError(f"No such compile option: {name!r}")
    field, parser = entry
    parsed = parser(name, value)
    if field == "disable_passes":
      parsed = record.disable_passes | parsed
    record = record._replace(**{field: parsed})
  return record


__all__ = ["Flags", "PASS_NAMES", "XLA_PASS_NAMES", "parse", "from_environ", "get",
           "override", "enabled", "with_compiler_options", "num_cpu_devices",
           "requested_cpu_devices", "cpu_backend_started", "on_cpu_backend_start"]


# --- the CPU backend's device count ------------------------------------------------------
# As in JAX, the count is read when the CPU backend is first used (ember.devices(), a device's
# executor or thread pool starting), not at import: `jax.config.update("jax_num_cpu_devices",
# N)`, or XLA_FLAGS set after `import ember` (chex.set_n_cpu_devices), still count until then;
# afterwards it is fixed for the process.
_cpu_devices: int | None = None          # the fixed count, once the backend has started
_cpu_start_hooks: list = []              # called with the count when the backend starts
_cpu_lock = threading.Lock()


def requested_cpu_devices() -> int:
  """The CPU device count the settings ask for now: the config option jax_num_cpu_devices
  when set (>= 0; JAX_NUM_CPU_DEVICES sets it from the environment), else
  EMBER_NUM_CPU_DEVICES, else XLA_FLAGS' --xla_force_host_platform_device_count, else 1."""
  n = config.read("jax_num_cpu_devices")
  if n is not None and n >= 0:
    raw, what = str(n), f"jax_num_cpu_devices={n}"
  else:
    raw = os.environ.get("EMBER_NUM_CPU_DEVICES", "").strip()
    what = f"EMBER_NUM_CPU_DEVICES={raw!r}"
    if not raw:
      m = re.search(r"--xla_force_host_platform_device_count=(\S*)",
                    os.environ.get("XLA_FLAGS", ""))
      raw, what = (m.group(1), f"XLA_FLAGS' {m.group(0)}") if m else ("1", "")
  try:
    n = int(raw)
  except ValueError:
    n = 0
  if n < 1:
    raise ValueError(f"{what}: the number of CPU devices must be an integer >= 1")
  return n


def num_cpu_devices() -> int:
  """How many CPU devices this process has. The first call starts the CPU backend: the count
  (requested_cpu_devices()) is fixed from then on and the start hooks run."""
  global _cpu_devices
  n = _cpu_devices
  if n is None:
    with _cpu_lock:
      if _cpu_devices is None:
        n = requested_cpu_devices()
        for hook in _cpu_start_hooks:
          hook(n)
        _cpu_devices = n
      n = _cpu_devices
  return n


def cpu_backend_started() -> bool:
  """Whether the CPU backend has started (its device count is fixed)."""
  return _cpu_devices is not None


def on_cpu_backend_start(hook) -> None:
  """Call `hook(count)` when the CPU backend starts (now, if it has): modules that keep the
  device count (core/sharding.py's device list) set it up there. Hooks must not call
  num_cpu_devices()."""
  with _cpu_lock:
    _cpu_start_hooks.append(hook)
    n = _cpu_devices
  if n is not None:
    hook(n)


def _check_num_cpu_devices(old, new) -> None:
  """config.update's check of jax_num_cpu_devices: an int (negative: not set), not 0, and
  unchanged once the CPU backend has started (JAX's rule)."""
  if isinstance(new, bool) or not (new is None or isinstance(new, int)):
    raise ValueError(f"jax_num_cpu_devices must be None or an int, got {new!r} of type "
                     f"{type(new)}")
  if new == 0:
    raise ValueError("jax_num_cpu_devices=0: the CPU backend needs at least one device "
                     "(-1 takes the count from XLA_FLAGS' "
                     "--xla_force_host_platform_device_count)")
  if cpu_backend_started() and new != old:
    raise RuntimeError(
        "jax_num_cpu_devices config should be updated before backends are initialized, "
        "i.e. before any JAX operation is executed: the CPU backend already runs with "
        f"{num_cpu_devices()} device(s). Set it right after `import jax` (or set "
        "JAX_NUM_CPU_DEVICES in the environment).")


config_lib._validators["jax_num_cpu_devices"] = _check_num_cpu_devices
