"""inline: replace every `call` by the instructions of the computation it calls.

A nested `jit` lowers to `call(args...), to_apply=%jit_g`. Inlining puts the callee's
instructions in the caller, with the callee's parameters replaced by the call's operands and
the call's uses replaced by the callee's root, so later passes (algsimp, CSE, fusion) see
across the boundary. Calls inside callees are inlined first (callees are processed before
their callers), so the result has no `call` at any depth. Computations nothing calls any
more are dropped.

Value-preserving: a call means exactly "evaluate the callee on these operands"; the inlined
instructions compute the same values from the same inputs. Each keeps its own metadata
(`jit(f)/jit(g)/sin`).
"""
from __future__ import annotations

from ember._src.hlo import graph as hlo


def _call_sites(module: hlo.Module) -> dict[int, int]:
  """id(computation) -> how many instructions refer to it (by `call` or otherwise)."""
  count: dict[int, int] = {}
  for comp in module.computations:
    for i in comp.instrs:
      for sub in i.called:
        count[id(sub)] = count.get(id(sub), 0) + 1
  return count


def _inline_call(comp: hlo.Computation, call: hlo.Instr, move: bool) -> list[hlo.Instr]:
  """The instructions replacing `call` in `comp` (in order); rewires the call's users.

  `move`: the callee has no other user, so its instructions are moved (keeping their
  names) instead of cloned."""
  callee = call.called[0]
  if len(callee.params) != len(call.operands):
    raise ValueError(f"inline: %{call.name} passes {len(call.operands)} operands to "
                     f"%{callee.name}, which has {len(callee.params)} parameters")
  env = {p.id: arg for p, arg in zip(callee.params, call.operands)}
  new: list[hlo.Instr] = []
  for i in callee.instrs:
    if i.opcode == "parameter":
      continue
    operands = [env[o.id] for o in i.operands]
    if move:
      i.operands = operands
      c = i
    else:
      c = hlo.Instr(i.opcode, i.shape, operands, i.attrs, i.called, metadata=i.metadata,
                    name=comp.module.unique_name(i.name))   # `sin.1`: placed where the call was
    env[i.id] = c
    new.append(c)
  root = env[callee.root.id]
  comp.replace_all_uses(call, root)
  return new


def _inline_computation(comp: hlo.Computation, sites: dict[int, int]) -> bool:
  if not any(i.opcode == "call" for i in comp.instrs):
    return False
  out: list[hlo.Instr] = []
  for i in list(comp.instrs):
    if i.opcode != "call":
      out.append(i)
      continue
    callee = i.called[0]
    move = sites.get(id(callee), 0) == 1
    sites[id(callee)] = sites.get(id(callee), 0) - 1
    # The call's operands must be final before the call's replacement reads them.
    out.extend(_inline_call(comp, i, move))
  comp.instrs = out
  return True


def run(module: hlo.Module, flags=None) -> hlo.Module:
  sites = _call_sites(module)
  # Callees before callers: a callee's own calls are gone by the time it is inlined.
  for comp in module.called_computations():
    _inline_computation(comp, sites)
  module.prune_computations()
  return module
