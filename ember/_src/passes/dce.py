"""dce: dead-code elimination.

Drops every instruction its computation's root does not (transitively) use, in every
computation, then every computation the entry no longer (transitively) calls. Parameters stay:
they fix the computation's signature.

Value-preserving: a dead instruction's value reaches no output. Every op ember lowers to is
a pure function of its operands (random numbers are computed from explicit key operands),
except custom calls marked `has_side_effect` (host callbacks: io_callback, debug.print),
which stay, in their order, with the calls and loops around them (hlo.has_side_effect); so
removing one that nothing reads changes nothing observable.
"""
from __future__ import annotations

from ember._src.hlo import graph as hlo


def run(module: hlo.Module, flags=None) -> hlo.Module:
  for comp in module.called_computations():
    comp.sort_and_prune()
  module.prune_computations()
  return module
