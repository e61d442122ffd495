"""The pass pipeline: lowered module -> optimized module (what `Compiled.as_text()` prints).

    inline, simple_scatter, algsimp, constant_folding, dot_transpose, algsimp, cse, dce,
    reduction_splitter, dot_split_k, fusion, dot_epilogue, dce, async_collectives

preceded by `conv_expansion` (always: the backend has no convolution kernel, each
`convolution` becomes im2col + one dot) and `scan_expansion` (always: a long float scan
becomes XLA:CPU's blocks, whose order defines its bits) and followed by `copy_outputs`
(always: the outputs get buffers of their own). Each pass is a module
`ember._src.passes.<name>` with `run(module, flags) -> module`. A pass is skipped when its
name is in `flags.disable_passes` (`EMBER_FLAGS=--disable_passes=fusion,cse`), when
`flags.opt_level` is below its level, or while its module does not exist yet; an error
raised inside a pass propagates. A disabled `fusion` still wraps each op in a fusion of
its own (`fusion.wrap_lone_ops`, see WHEN_DISABLED): the backend runs only fusions.

With `flags.dump_to` set, the module is dumped before and after (`passes/dumps.py`).
"""
from __future__ import annotations

import importlib
from typing import Callable

from ember._src.base import flags as flags_lib
from ember._src.hlo import graph as hlo
from ember._src.passes import conv_expansion, dumps, scan_expansion

PASSES = ("inline", "simple_scatter", "algsimp", "constant_folding", "dot_transpose", "algsimp",
          "cse", "dce", "reduction_splitter", "dot_split_k", "fusion", "dot_epilogue", "dce",
          "async_collectives")

# Lowest opt_level each pass runs at. At 0 only what the backend contract needs runs: no
# `call` left (inline), no dead code, every computing op in a fusion.
MIN_OPT_LEVEL = {"inline": 0, "simple_scatter": 1, "algsimp": 1, "constant_folding": 1,
                 "dot_transpose": 1, "cse": 1, "dce": 0, "reduction_splitter": 1, "dot_split_k": 1,
                 "fusion": 0, "dot_epilogue": 1, "async_collectives": 0}


# What still has to happen when a pass is switched off: with fusion disabled every computing
# op is wrapped in a fusion of its own (the backend runs only fusions), as XLA does.
WHEN_DISABLED = {"fusion": "wrap_lone_ops"}


def get_pass(name: str, function: str = "run") -> Callable | None:
  """`function` (default `run`) of pass module `name`, or None while the module does not
  exist (a pass being written). Any other import failure (a bug inside the pass's module)
  propagates."""
  module_name = f"ember._src.passes.{name}"
  try:
    module = importlib.import_module(module_name)
  except ModuleNotFoundError as e:
    if e.name == module_name:
      return None
    raise
  return getattr(module, function)


def enabled(name: str, flags) -> bool:
  return name not in flags.disable_passes and flags.opt_level >= MIN_OPT_LEVEL.get(name, 0)


def run_passes(module: hlo.Module, flags=None, passes=PASSES) -> hlo.Module:
  """Run `passes` (names, in order) on `module`, skipping disabled and missing ones."""
  flags = flags or flags_lib.get()
  for name in passes:
    if enabled(name, flags):
      run = get_pass(name)
      if run is not None:
        module = run(module, flags)
    elif name in WHEN_DISABLED:
      fallback = get_pass(name, WHEN_DISABLED[name])
      if fallback is not None:
        module = fallback(module)
  return module


def copy_outputs(module: hlo.Module, flags=None) -> hlo.Module:
  """Give every output of the entry its own buffer, as XLA's copy insertion does: an output
  that is a parameter (unless donated to that output), a constant, or an instruction that
  is already another output is returned through a `copy`."""
  entry = module.entry
  root = entry.root
  tupled = root.opcode == "tuple"
  outputs = list(root.operands) if tupled else [root]
  seen: set[int] = set()
  changed = False
  for n, out in enumerate(outputs):
    aliased = module.input_output_alias.get(n)
    needs_copy = (out.opcode == "constant" or out.id in seen or
                  (out.opcode == "parameter" and aliased != out.attrs["number"]))
    seen.add(out.id)
    if needs_copy:
      outputs[n] = entry.add(hlo.Instr("copy", out.shape, [out], name="copy",
                                       metadata=out.metadata))
      changed = True
  if changed:
    if tupled:
      root.operands = outputs
    else:
      entry.root = outputs[0]
    entry.sort_and_prune()
  return module


def donate_carry(body: hlo.Module) -> None:
  """A while body's state k is donated to its output k (its runner owns the state buffers:
  backends/cpu/control_flow.py): an element the body returns unchanged (a scan's xs, a loop's
  constants) needs no copy per iteration, and one the body updates where the buffer
  assignment can (a scan's ys by dynamic-update-slice, an elementwise carry update) is
  computed in place; the others keep buffers of their own (the runner double-buffers
  them)."""
  root = body.entry.root
  outs = list(root.operands) if root.opcode == "tuple" else [root]
  params = {p.attrs["number"]: p for p in body.entry.params}
  body.input_output_alias = {k: k for k, o in enumerate(outs)
                             if k in params and params[k].shape == o.shape}


_CONTROL_FLOW = ("while", "conditional")


def optimize_control_flow(module: hlo.Module, flags=None) -> hlo.Module:
  """Optimize the computations a `while` (condition, body) or `conditional` (branches)
  calls as programs of their own: each is copied into a module, optimized by the whole
  pipeline (so inline, algsimp, CSE, DCE and fusion apply inside loop bodies, and nested
  control flow recursively) and put back; the backend compiles each into a
  sub-executable (backends/cpu/control_flow.py). Value-preserving: each computation is
  rewritten only by the value-preserving passes."""
  flags = flags or flags_lib.get()
  changed = False
  for comp in module.called_computations():
    for instr in comp.instrs:
      if instr.opcode not in _CONTROL_FLOW:
        continue
      new = []
      for n, c in enumerate(instr.called):
        if getattr(c, "optimized", False):
          new.append(c)
          continue
        sub = hlo.module_of(c, c.name)
        if instr.opcode == "while" and n == 1:
          donate_carry(sub)      # so copy insertion copies no state the body keeps
        sub = optimize_program(sub, flags)
        body = hlo.adopt(module, sub)
        body.optimized = True
        new.append(body)
      instr.called = new
      changed = True
  if changed:
    module.prune_computations()
  return module


def optimize_program(module: hlo.Module, flags=None) -> hlo.Module:
  """Convolution and scan expansion, the passes, copy insertion and the control-flow
  recursion, without dumps."""
  module = conv_expansion.run(module, flags)
  module = scan_expansion.run(module, flags)
  module = run_passes(module, flags)
  module = copy_outputs(module, flags)
  return optimize_control_flow(module, flags)


def optimize(module: hlo.Module, flags=None) -> hlo.Module:
  """The whole pipeline, with the before/after dumps when `flags.dump_to` is set."""
  flags = flags or flags_lib.get()
  dumps.dump_before(module, flags)
  module = optimize_program(module, flags)
  dumps.dump_after(module, flags)
  return module
