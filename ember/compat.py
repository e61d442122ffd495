"""ember.compat: run programs and libraries written for JAX on ember, unchanged.

`install()` adds an import hook so that `import jax` gives ember and every `import jax.X`
gives `ember.X`: `jax.numpy` is `ember.numpy`, `jax.lax` is `ember.lax`, and so on.
`python -m ember script.py` runs a script with the hook installed; so does `import ember`
when the environment has EMBER_AS_JAX=1. docs/ecosystem.md describes it.

- `jax` itself is a thin module that forwards every attribute to `ember`, except the
  version: `jax.__version__` / `jax.__version_info__` / `jax.version` report the JAX release
  whose API ember follows (`JAX_API_VERSION`), so libraries choosing code paths by version
  take the current ones. `ember.__version__` stays ember's.
- `jax._src.*` (JAX's internals): the few modules libraries import unguarded have
  stand-ins in ember._jax_src (`jax._src.X` is `ember._jax_src.X`, holding ember's
  equivalents of the names libraries use); importing any other raises ImportError naming
  the module.
- `jaxlib` is not aliased: it is XLA's runtime, which ember does not have.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import types

import ember
from ember._src.base.version import JAX_API_VERSION, version_info

ENV_VAR = "EMBER_AS_JAX"
_ALIAS = "jax"
_TARGET = "ember"
_STANDINS = "ember._jax_src"


class _JaxModule(types.ModuleType):
  """`jax` under the alias: ember's namespace with JAX's version."""

  def __getattr__(self, name):
    if name == "_src":   # not ember's internals: the stand-ins for JAX's (ember._jax_src)
      return importlib.import_module(f"{_ALIAS}._src")
    try:
      return getattr(ember, name)
    except AttributeError:
      raise AttributeError(f"module 'jax' (ember, through ember.compat) has no attribute "
                           f"{name!r}: ember has no ember.{name}") from None

  def __dir__(self):
    return sorted(set(dir(ember)) | set(self.__dict__))


def _private_message(name: str) -> str:
  return (f"{name} is a private module of JAX: ember (standing in for jax through "
          "ember.compat) does not provide JAX's internals (jax._src), apart from the few "
          "names libraries import (ember._jax_src). Use the public API "
          "(jax.numpy, jax.lax, jax.extend, ...).")


def _jax_module() -> _JaxModule:
  mod = _JaxModule(_ALIAS, ember.__doc__)
  mod.__path__ = []  # a package: `import jax.numpy` asks the finder below
  mod.__file__ = ember.__file__
  mod.__version__ = JAX_API_VERSION
  mod.__version_info__ = version_info(JAX_API_VERSION)
  mod.version = _version_module()
  return mod


def _version_module() -> types.ModuleType:
  """`jax.version`: JAX's version attributes, with JAX_API_VERSION."""
  mod = types.ModuleType(f"{_ALIAS}.version", "JAX's version (ember follows JAX's API of it).")
  mod.__version__ = mod._version = JAX_API_VERSION
  mod.__version_info__ = version_info(JAX_API_VERSION)
  mod._minimum_jaxlib_version = JAX_API_VERSION
  mod.ember_version = ember.__version__
  return mod


class _ExistingModuleLoader(importlib.abc.Loader):
  """Hands the import system a module that already exists (ember's), keeping its spec."""

  def __init__(self, module: types.ModuleType):
    self._module = module
    self._spec = getattr(module, "__spec__", None)

  def create_module(self, spec):
    return self._module

  def exec_module(self, module):
    # the import system set module.__spec__ to the alias's spec: give ember's back
    if self._spec is not None:
      module.__spec__ = self._spec


class JaxAliasFinder(importlib.abc.MetaPathFinder):
  """Resolves `jax` and `jax.X.Y` to ember's modules (see the module docstring)."""

  def find_spec(self, fullname, path=None, target=None):
    if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
      return None
    rest = fullname[len(_ALIAS):]
    if rest.split(".")[1:2] == ["_src"]:
      module = _standin_for(rest[len("._src"):])
      if module is None:
        raise ImportError(_private_message(fullname), name=fullname)
    else:
      module = _module_for(fullname, rest)
    if module is None:
      raise ModuleNotFoundError(
          f"No module named {fullname!r}: ember stands in for jax (ember.compat) and has no "
          f"{_TARGET + rest}", name=fullname)
    return importlib.machinery.ModuleSpec(fullname, _ExistingModuleLoader(module),
                                          is_package=hasattr(module, "__path__"))


def _module_for(fullname: str, rest: str) -> types.ModuleType | None:
  if fullname == _ALIAS:
    return _jax_module()
  if fullname == f"{_ALIAS}.version":
    return sys.modules[_ALIAS].version
  return _import_if_exists(_TARGET + rest)


def _standin_for(rest: str) -> types.ModuleType | None:
  """ember._jax_src's stand-in for jax._src<rest>, if it has one."""
  return _import_if_exists(_STANDINS + rest)


def _import_if_exists(target: str) -> types.ModuleType | None:
  try:
    if importlib.util.find_spec(target) is None:
      return None
  except ModuleNotFoundError:  # a parent of target is missing
    return None
  return importlib.import_module(target)


def _real_jax_loaded() -> types.ModuleType | None:
  mod = sys.modules.get(_ALIAS)
  return None if mod is None or isinstance(mod, _JaxModule) else mod


def installed() -> bool:
  return any(isinstance(f, JaxAliasFinder) for f in sys.meta_path)


def install() -> None:
  """Make `import jax` (and `import jax.X`) give ember from now on, in this process.

  Raises RuntimeError when the real JAX is already imported: its arrays and ember's do not
  mix, so the alias must be in place before anything imports jax.
  """
  real = _real_jax_loaded()
  if real is not None:
    raise RuntimeError(
        f"ember.compat.install(): the real JAX is already imported (sys.modules['jax'] is "
        f"{real!r}), so `import jax` can no longer be redirected to ember, and arrays of the "
        "two do not mix. Install the alias before anything imports jax: run the program "
        "with `python -m ember script.py`, set EMBER_AS_JAX=1 and import ember first, or "
        "call ember.compat.install() at the very top of the program.")
  if not installed():
    sys.meta_path.insert(0, JaxAliasFinder())


def uninstall() -> None:
  """Remove the hook and the `jax` modules it made (tests use this)."""
  sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, JaxAliasFinder)]
  for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
    del sys.modules[name]


def install_from_env() -> None:
  """`import ember` calls this: EMBER_AS_JAX=1 installs the alias."""
  if os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on"):
    install()
