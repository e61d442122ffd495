"""PJRT clients: which platforms this host offers and one client per platform, made on
first use.

Platform names are ember's backend names: "pjrt_cpu" (jaxlib's XLA CPU client; "cpu" is
ember's own native backend), "tpu" (libtpu's PJRT plug-in, loaded through jaxlib's C API,
as JAX loads it), and any plug-in listed in PJRT_NAMES_AND_LIBRARY_PATHS
("name:/path/plugin.so,name2:/path2.so", JAX's variable; a GPU plug-in is loaded the same
way). jaxlib and libtpu are optional: `pip install ember[tpu]`.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import threading

CPU = "pjrt_cpu"
_clients: dict = {}          # platform -> jaxlib Client
_failures: dict = {}         # platform -> why its client could not be made
_lock = threading.Lock()
_lapack_registered = False


def _have(module: str) -> bool:
  try:
    return importlib.util.find_spec(module) is not None
  except (ImportError, ValueError):
    return False


def _tpu_library_path() -> str | None:
  """libtpu's shared library: TPU_LIBRARY_PATH, else the `libtpu` package's."""
  path = os.environ.get("TPU_LIBRARY_PATH")
  if path:
    return path
  if not _have("libtpu"):
    return None
  import libtpu  # optional dependency (ember[tpu]), imported only when a TPU is asked for
  return libtpu.get_library_path()


def _env_plugins() -> dict[str, str]:
  """name -> library path from PJRT_NAMES_AND_LIBRARY_PATHS."""
  out = {}
  for item in os.environ.get("PJRT_NAMES_AND_LIBRARY_PATHS", "").split(","):
    name, sep, path = item.strip().partition(":")
    if sep and name and path:
      out[name] = path
  return out


def available_platforms() -> list[str]:
  """The PJRT platforms this host could offer (their clients are not made here)."""
  if not _have("jaxlib"):
    return []
  out = [CPU]
  if os.environ.get("TPU_LIBRARY_PATH") or _have("libtpu"):
    out.append("tpu")
  out += [n for n in _env_plugins() if n not in out]
  return out


def client(platform: str):
  """The (one) jaxlib client of `platform`, made on first use; RuntimeError when it cannot
  be made (not installed, no device, the plug-in failed), saying why."""
  c = _clients.get(platform)
  if c is not None:
    return c
  with _lock:
    if platform not in _clients:
      if platform in _failures:
        raise RuntimeError(_failures[platform])
      try:
        _clients[platform] = _make_client(platform)
      except Exception as e:  # noqa: BLE001 - any failure of a plug-in: say which and why
        msg = (f"Backend {platform!r} failed to initialize: {type(e).__name__}: {e}. "
               f"Available backends are {['cpu'] + available_platforms()}")
        _failures[platform] = msg
        raise RuntimeError(msg) from e
  return _clients[platform]


class _JaxNotInstalled:
  """A meta-path finder that says at once that `jax` is not installed.

  jaxlib's execute imports `jax._src.sharding_impls` after every call (to name its outputs'
  sharding) and carries on without it when that fails. On ember's PJRT hosts JAX is not
  installed, and the failing import searched every sys.path entry on every call (~150 us,
  most of a small call). The search is redone whenever sys.path or the other finders change,
  so a JAX installed or aliased later (ember.compat) is found as usual."""

  def __init__(self):
    self._searched = None   # (sys.path, finders) when jax was last not found

  def find_spec(self, name, path=None, target=None):
    if name != "jax":
      return None
    state = (tuple(sys.path), tuple(map(id, sys.meta_path)))
    if state != self._searched:
      others = [f for f in sys.meta_path if f is not self and hasattr(f, "find_spec")]
      if any(f.find_spec("jax", None) is not None for f in others):
        return None
      self._searched = state
    raise ModuleNotFoundError("No module named 'jax'", name="jax")


def _answer_missing_jax_at_once() -> None:
  if "jax" not in sys.modules and not _have("jax") and \
      not any(isinstance(f, _JaxNotInstalled) for f in sys.meta_path):
    sys.meta_path.insert(0, _JaxNotInstalled())


def _make_client(platform: str):
  # optional dependency (ember[tpu] / the test extra): loaded when a PJRT device is asked for
  from jaxlib import xla_client
  _answer_missing_jax_at_once()
  if platform == CPU:
    _register_cpu_custom_calls(xla_client)
    return xla_client.make_cpu_client()
  path = _tpu_library_path() if platform == "tpu" else _env_plugins().get(platform)
  if path is None:
    raise RuntimeError(f"no PJRT plug-in library for {platform!r} (install it with "
                       "`pip install ember[tpu]`, or name it in PJRT_NAMES_AND_LIBRARY_PATHS)")
  if not xla_client.pjrt_plugin_loaded(platform):
    xla_client.load_pjrt_plugin_dynamically(platform, path)
  if not xla_client.pjrt_plugin_initialized(platform):
    xla_client.initialize_pjrt_plugin(platform)
  return xla_client.make_c_api_client(platform, {})


def _register_cpu_custom_calls(xla_client) -> None:
  """The LAPACK targets ember's linalg lowerings call (`lapack_spotrf_ffi`, ...), from
  jaxlib's LAPACK module, registered once for the CPU platform."""
  global _lapack_registered
  if _lapack_registered:
    return
  from jaxlib import lapack  # optional dependency, with jaxlib
  for name, value, api_version in lapack.registrations()["cpu"]:
    xla_client.register_custom_call_target(name, value, platform="cpu",
                                           api_version=api_version)
  lapack._lapack.initialize()
  _lapack_registered = True
