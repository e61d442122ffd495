"""jax.debug.breakpoint: stop the running program in an interactive debugger.

`breakpoint()` records the Python frames that call it (file, line, source, locals) while
tracing; the locals that are tracers become the operands of a debug callback
(primitives/callbacks.py), so when the program runs, eager or compiled, the debugger sees
their values as Arrays, and every other local as it was at trace time.

Debuggers are registered by name with a priority; `backend=` picks one by name, otherwise
the highest priority one runs. ember has JAX's text debugger, "cli" (`jdb`): it reads
commands from stdin. It is not pdb: the frames it shows are the ones recorded at trace
time (under jit they have returned long before the program runs), so it offers what a
record supports: print expressions (`p`, `pp`, or a bare expression), move between frames
(`u`/`up`, `d`/`down`), show source (`l`/`list`) and the stack (`w`/`where`/`bt`), then
continue (`c`/`continue`) or quit the program (`q`/`quit`/`exit`, or end of input).
"""
from __future__ import annotations

import cmd
import dataclasses
import inspect
import pprint
import sys
import threading
import traceback
from typing import Any, Callable

from ember._src import core
from ember._src.base import traceback_util, tree_util
from ember._src.primitives.callbacks import debug_callback


@dataclasses.dataclass(frozen=True)
class DebuggerFrame:
  """One recorded Python frame: where it is, its source, and its locals."""
  filename: str
  locals: dict[str, Any]
  globals: dict[str, Any]
  code_context: list[str] | None
  source: list[str]
  lineno: int
  offset: int | None   # the index of the current line in `source`, None if unknown

  @classmethod
  def from_frameinfo(cls, info: inspect.FrameInfo) -> "DebuggerFrame":
    try:
      lines, start = inspect.getsourcelines(info.frame)
      source = [line.rstrip("\n") for line in lines]
      offset = info.lineno - max(start, 1)  # start is 0 for a module's whole file
      if not 0 <= offset < len(source):
        source, offset = [], None
    except (OSError, TypeError):
      source, offset = [], None
    return cls(info.filename, dict(info.frame.f_locals), {}, info.code_context, source,
               info.lineno, offset)


# --- the locals' tracers travel as callback operands -------------------------------------

def _split_tracers(frames: list[DebuggerFrame]):
  """(the tracers among the frames' locals, a function rebuilding the frames from their
  values). A local that does not flatten as a pytree is kept whole."""
  tracers, records = [], []
  for frame in frames:
    traced = {}   # name -> (treedef, leaves with each tracer replaced by its index)
    for name, value in frame.locals.items():
      try:
        leaves, tree = tree_util.tree_flatten(value)
      except Exception:  # noqa: BLE001  (any user object: keep it as it is)
        continue
      if not any(isinstance(x, core.Tracer) for x in leaves):
        continue
      marked = []
      for x in leaves:
        if isinstance(x, core.Tracer):
          marked.append(_Slot(len(tracers)))
          tracers.append(x)
        else:
          marked.append(x)
      traced[name] = (tree, marked)
    records.append(traced)

  def rebuild(values) -> list[DebuggerFrame]:
    out = []
    for frame, traced in zip(frames, records):
      local = dict(frame.locals)
      for name, (tree, marked) in traced.items():
        local[name] = tree_util.tree_unflatten(
            tree, [values[x.index] if isinstance(x, _Slot) else x for x in marked])
      out.append(dataclasses.replace(frame, locals=local))
    return out

  return tracers, rebuild


@dataclasses.dataclass(frozen=True)
class _Slot:
  index: int   # where a tracer's value is among the callback's operands


# --- debuggers ------------------------------------------------------------------------------

Debugger = Callable[..., None]   # debugger(frames, thread_id, **kwargs)
_debuggers: dict[str, tuple[int, Debugger]] = {}
_debug_lock = threading.Lock()   # one debugger session at a time (callbacks may race)


def register_debugger(name: str, debugger: Debugger, priority: int) -> None:
  if name in _debuggers:
    raise ValueError(f'Debugger with name "{name}" already registered.')
  _debuggers[name] = (priority, debugger)


def get_debugger(backend: str | None = None) -> Debugger:
  """The debugger named `backend` if registered, else the highest priority one (JAX's)."""
  if backend is not None and backend in _debuggers:
    return _debuggers[backend][1]
  if not _debuggers:
    raise ValueError("No debuggers registered!")
  return max(_debuggers.values(), key=lambda entry: entry[0])[1]


class CliDebugger(cmd.Cmd):
  """JAX's text debugger (`jdb`) over recorded frames; frame 0 is the innermost."""
  prompt = "(jdb) "

  def __init__(self, frames: list[DebuggerFrame], thread_id=None, stdin=None, stdout=None):
    super().__init__(stdin=stdin, stdout=stdout)
    self.use_rawinput = stdin is None
    self.frames, self.frame_index, self.thread_id = frames, 0, thread_id
    self.intro = "Entering jdb:"

  def _say(self, text: str) -> None:
    print(text, file=self.stdout)

  def evaluate(self, expr: str):
    frame = self.frames[self.frame_index]
    return eval(expr, {}, {**frame.globals, **frame.locals})  # noqa: S307 (a debugger)

  def _show(self, expr: str, fmt: Callable[[Any], str]) -> None:
    try:
      self._say(fmt(self.evaluate(expr)))
    except Exception:  # noqa: BLE001  (report any error of the user's expression)
      exc = sys.exc_info()
      self._say("*** " + traceback.format_exception_only(exc[0], exc[1])[-1].strip())

  def default(self, line):
    """Evaluate an expression and print its repr."""
    self._show(line, repr)

  def emptyline(self):   # an empty line does nothing (cmd.Cmd would repeat the last command)
    return False

  def do_p(self, arg):
    """p expression: evaluate and print the repr of an expression."""
    self._show(arg, repr)

  def do_pp(self, arg):
    """pp expression: evaluate and pretty-print an expression."""
    self._show(arg, pprint.pformat)

  def do_up(self, arg):
    """u(p): move one frame up (toward the caller)."""
    if self.frame_index == len(self.frames) - 1:
      self._say("At topmost frame.")
    else:
      self.frame_index += 1
    self.print_context()
  do_u = do_up

  def do_down(self, arg):
    """d(own): move one frame down (toward the breakpoint)."""
    if self.frame_index == 0:
      self._say("At bottommost frame.")
    else:
      self.frame_index -= 1
    self.print_context()
  do_d = do_down

  def do_list(self, arg):
    """l(ist): the source around the current line."""
    self.print_context(num_lines=5)
  do_l = do_list

  def do_where(self, arg):
    """w(here) / bt: the recorded stack, innermost frame last."""
    lines = ["Traceback:"]
    for frame in reversed(self.frames):
      lines.append(f'  File "{frame.filename}", line {frame.lineno}')
      lines.append("    <no source>" if frame.offset is None
                   else f"    {frame.source[frame.offset].strip()}")
    self._say("\n".join(lines))
  do_w = do_bt = do_where

  def do_continue(self, arg):
    """c(ont(inue)): leave the debugger; the program goes on."""
    return True
  do_c = do_cont = do_continue

  def do_quit(self, arg):
    """q(uit) / exit: end the program."""
    sys.exit(0)
  do_q = do_exit = do_EOF = do_quit

  def print_context(self, num_lines: int = 2) -> None:
    frame = self.frames[self.frame_index]
    lines = [f"> {frame.filename}({frame.lineno})"]
    if frame.offset is not None:
      lo, hi = frame.offset - 1 - num_lines, frame.offset + num_lines
      lines += [("->  " if i == frame.offset else "    ") + line
                for i, line in enumerate(frame.source) if lo <= i <= hi]
    self._say("\n".join(lines))

  def run(self) -> None:
    while True:
      try:
        self.cmdloop()
        return
      except KeyboardInterrupt:
        self._say("--KeyboardInterrupt--")


def _run_cli_debugger(frames, thread_id, **kwargs) -> None:
  CliDebugger(frames, thread_id, **kwargs).run()


register_debugger("cli", _run_cli_debugger, -1)


# --- jax.debug.breakpoint ----------------------------------------------------------------------

def breakpoint(*, backend: str | None = None, filter_frames: bool = True,  # noqa: A001
               num_frames: int | None = None, ordered: bool = False, token=None, **kwargs):
  """Stop here when the program runs and open a debugger on the calling frames
  (`jax.debug.breakpoint`), their traced locals showing the values computed.

  `backend`: the debugger's name ("cli"); `filter_frames`: leave out ember's own frames;
  `num_frames`: how many frames (innermost first) to record; `ordered`: keep program order
  with other ordered debug effects; `token`: a value (pytree) the breakpoint waits for and
  returns unchanged (then `ordered` must be False); `kwargs` go to the debugger.
  """
  if token is not None and ordered:
    raise ValueError("`ordered` and `token` are mutually exclusive arguments.")
  infos = inspect.stack()[1:]
  if filter_frames:
    infos = [i for i in infos if traceback_util.include_frame(i.frame)]
  if num_frames is not None:
    infos = infos[:num_frames]
  frames = [DebuggerFrame.from_frameinfo(i) for i in infos]
  del infos  # frame objects hold every local of the stack alive
  tracers, rebuild = _split_tracers(frames)
  n = len(tracers)

  def enter(*values):
    thread_id = (None if threading.current_thread() is threading.main_thread()
                 else threading.get_ident())
    debugger = get_debugger(backend)
    with _debug_lock:
      debugger(rebuild(values[:n]), thread_id, **kwargs)

  if token is None:
    debug_callback(enter, *tracers, ordered=ordered)
    return None
  debug_callback(enter, *tracers, token)   # runs once the token's values are computed
  return token
