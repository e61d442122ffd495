"""Which frames are ember's (or a library's that asked to be hidden from its users), and
tracebacks without them (JAX's traceback_util and source_info_util exclusions).

Two registries, as JAX keeps them:
- traceback exclusions (`register_exclusion`, `_exclude_paths`): the frames `api_boundary`
  removes from the traceback of an exception leaving the function it wraps, as
  jax_traceback_filtering says;
- source-info exclusions (`register_source_info_exclusion`): the frames skipped when finding
  the user's line of a traced operation (core.current_source_info, the `loc(...)` of
  lowered text).
Both start with ember's own package; libraries built on ember (flax registers each of its
modules) add theirs.
"""
from __future__ import annotations

import functools
import os
import sys
import traceback
import types

from ember._src.base.config import config

# the ember package: this file is ember/_src/base/traceback_util.py
EMBER_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep

# a list, as JAX's: libraries (flax) append and remove entries directly
_exclude_paths: list[str] = [EMBER_DIR]
# a tuple, so a filename is checked against all of them in one str.startswith
source_info_exclusions: tuple[str, ...] = (EMBER_DIR,)

SIMPLIFIED_MESSAGE = (
    "For simplicity, ember has removed its internal frames (and those of the libraries "
    "that registered theirs) from the traceback of the following exception. Set "
    "JAX_TRACEBACK_FILTERING=off to include these.")


def register_exclusion(path: str) -> None:
  """Hide frames of files under `path` from the tracebacks api_boundary filters."""
  _exclude_paths.append(os.path.abspath(path))


def register_source_info_exclusion(path: str) -> None:
  """Skip frames of files under `path` when finding the user's line of a traced operation."""
  global source_info_exclusions
  source_info_exclusions = source_info_exclusions + (os.path.abspath(path),)


def include_filename(filename: str) -> bool:
  filename = os.path.abspath(filename)
  return not any(filename.startswith(p) for p in _exclude_paths)


def include_frame(f: types.FrameType) -> bool:
  return include_filename(f.f_code.co_filename)


def filter_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
  """`tb` without the frames of excluded files."""
  out = None
  for f, lineno in reversed(list(traceback.walk_tb(tb))):
    if include_frame(f):
      out = types.TracebackType(out, f, f.f_lasti, lineno)
  return out


class UnfilteredStackTrace(Exception):
  """The cause attached by remove_frames: the original exception's whole traceback."""


def filtering_mode() -> str:
  mode = config.jax_traceback_filtering
  if mode in (None, "auto"):
    return "tracebackhide" if _running_under_ipython() else "quiet_remove_frames"
  return mode


def _running_under_ipython() -> bool:
  return "IPython" in sys.modules and getattr(
      sys.modules["IPython"], "get_ipython", lambda: None)() is not None


def api_boundary(fun):
  """Wrap `fun` so an exception leaving it has the excluded frames taken out of its
  traceback (the outermost boundary filters; inner ones let it pass)."""

  @functools.wraps(fun)
  def reraise_with_filtered_traceback(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841 - IPython and pytest hide this frame
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      mode = filtering_mode()
      if mode == "off" or _under_another_boundary():
        raise
      if mode == "tracebackhide":
        _hide_excluded_frames(e.__traceback__)
        raise
      _remove_excluded_frames(e, mode)
      raise

  return reraise_with_filtered_traceback


# every wrapper shares this code object: a frame running it is a boundary
_BOUNDARY_CODE = api_boundary(lambda: None).__code__


def _under_another_boundary() -> bool:
  f = sys._getframe(2)  # the caller of the boundary that is handling the exception
  while f is not None:
    if f.f_code is _BOUNDARY_CODE:
      return True
    f = f.f_back
  return False


def _hide_excluded_frames(tb) -> None:
  for f, _ in traceback.walk_tb(tb):
    if not include_frame(f):
      f.f_locals["__tracebackhide__"] = True


def _remove_excluded_frames(e: Exception, mode: str) -> None:
  tb = e.__traceback__
  e.with_traceback(filter_traceback(tb))
  if mode == "quiet_remove_frames":
    e.add_note("--------------------\n" + SIMPLIFIED_MESSAGE)
    return
  unfiltered = UnfilteredStackTrace(
      "".join(traceback.format_exception_only(e)).rstrip() + "\n\nThe stack trace below "
      "excludes ember-internal frames; the preceding is the original exception.")
  unfiltered.with_traceback(tb)
  unfiltered.__cause__, unfiltered.__context__ = e.__cause__, e.__context__
  unfiltered.__suppress_context__ = e.__suppress_context__
  e.__cause__, e.__context__ = unfiltered, None
