"""async_collectives: each collective between devices becomes a start and a done, scheduled
so that the device computes while the collective is in flight.

A collective lowers to a host call (primitives/parallel.py) that blocks its device's program
until every device of its group has reached it and the data has moved. Here each such call
becomes two, as XLA's all-reduce-start / all-reduce-done pairs (host functions the
collective's lowering registered beside its own; the call's config names them):

  start: the same operands -> a ticket (s32[]); hands the collective to the device's
         communication thread (runtime/collectives.py `start`) and returns at once;
  done:  the ticket -> the collective's results; waits for them;

and the schedule (the entry's instruction order, which the backend runs) puts each start as
early as its operands allow and each done just before the first instruction that reads it,
so the instructions between them, which neither feed nor read the collective, run while it
is in flight (a data-parallel backward pass computes the earlier layers' gradients while the
later layers' ones are being all-reduced; parallel/all_reduce_grouping.py issues them in buckets).

A program whose collectives move fewer than MIN_BYTES in all keeps them blocking.

Value-preserving: a done returns what the call returned, and every reader of it still comes
after it. The starts keep their order, so each device hands its collectives to its
communication thread in program order, and every device of a group runs the same program:
the groups meet in the same order everywhere, as before. A start's operands are copies taken
when it runs (the custom-call thunk copies them), so the buffers they came from may be reused
at once. A program with side effects other than collectives (callbacks, prints, loops around
them) keeps its order: it is left as it is.
"""
from __future__ import annotations

import numpy as np

from ember._src.hlo import graph as hlo
from ember._src.reference import host_callbacks

_TICKET = hlo.scalar_shape(np.int32)

# A program whose collectives move fewer bytes keeps them blocking: handing one to the
# communication thread and back costs ~0.1-0.4 ms of thread wake-ups (measured: a step with
# one 1 KB all-reduce went from 1.4 to 1.9 ms on 2 devices), more than small messages take,
# so there is nothing to hide. All or none: a blocking collective between pairs would run on
# the device's thread while its communication thread runs another.
MIN_BYTES = 256 << 10


def run(module: hlo.Module, flags=None) -> hlo.Module:
  entry = module.entry
  calls = [i for i in entry.instrs if host_callbacks.async_halves(i)]
  if (not calls or sum(o.shape.nbytes for c in calls for o in c.operands) < MIN_BYTES
      or any(hlo.has_side_effect(i) and not host_callbacks.async_halves(i)
             for i in entry.instrs)):
    return module
  starts = {c.id: _split(entry, c) for c in calls}
  entry.instrs = _schedule(entry.instrs, starts, entry.root)
  return module


def _split(entry: hlo.Computation, call: hlo.Instr) -> tuple[hlo.Instr, hlo.Instr]:
  """(start, its ticket): the pair whose done replaces `call` in every use."""
  kind, start_id, done_id = host_callbacks.async_halves(call)

  def custom_call(shape, operands, callback_id, half):
    attrs = {"target": host_callbacks.TARGET, "has_side_effect": True,
             "backend_config": host_callbacks.backend_config(callback_id,
                                                             collective=f"{kind}-{half}")}
    return hlo.Instr("custom-call", shape, operands, attrs, name=f"{kind}-{half}",
                     metadata=call.metadata)
  s = entry.add(custom_call(hlo.TupleShape((_TICKET,)), list(call.operands), start_id, "start"))
  ticket = entry.add(hlo.Instr("get-tuple-element", _TICKET, [s], {"index": 0}))
  entry.replace_all_uses(call, entry.add(custom_call(call.shape, [ticket], done_id, "done")))
  return s, ticket


def _schedule(instrs: list, starts: dict, root: hlo.Instr) -> list:
  """`instrs` in a new order, without the calls (`starts` maps each call to its start and
  ticket): every start (with its ticket) as early as its operands and the start before it
  allow, at the latest where its call was; every done (with the get-tuple-elements
  unpacking it) right before the first instruction that reads it; the root last, after
  any done nothing reads."""
  tickets = {t.id for _, t in starts.values()}
  dones = [i for i in instrs if i.operands and i.operands[0].id in tickets]
  lazy = {d.id for d in dones}
  lazy |= {i.id for i in instrs if i.opcode == "get-tuple-element" and i.operands[0].id in lazy}
  order: list = []
  placed: set[int] = set()
  upcoming = iter(starts.values())
  pending = next(upcoming, None)

  def place(i):
    for o in i.operands:         # a lazy operand (a done, its unpacking) is due now
      if o.id not in placed:
        place(o)
    order.append(i)
    placed.add(i.id)

  def place_ready_starts(due=None):
    """Place the next starts whose operands are placed; up to start `due` in any case."""
    nonlocal pending
    while pending is not None:
      s, t = pending
      if due is None and not all(o.id in placed for o in s.operands):
        return
      place(s)
      place(t)
      pending = next(upcoming, None)
      if s is due:
        due = None

  for i in instrs:
    if i.id in starts:           # the call's place: its start is due by now
      place_ready_starts(due=starts[i.id][0])
      continue
    if i.id in placed or i is root or i.id in lazy or i.id in tickets:
      continue
    place(i)
    place_ready_starts()
  for d in dones:
    if d.id not in placed:
      place(d)
  place(root)
  return order
