"""The kernel ABI (docs/compiler.md), the same for every kernel of a module, whether
generated here (fusions, scatter) or by dot_kernels and linalg_kernels:

    void <kernel name>(i8** buffers, i64 start, i64 stop)

`buffers` holds the operands' data pointers in operand order, then one pointer per output
(per tuple element of a tuple root). The function runs the outermost loop over
[start, stop): the first output dimension, or the flat index for outputs of rank <= 1, so
the caller may split that range across threads. `KernelInfo` tells the runtime the symbol,
that range and whether it may be split.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from llvmlite import ir

from ember._src.backends.cpu.codegen.ir_types import I64, PTR, VOID


KERNEL_TYPE = ir.FunctionType(VOID, [PTR, I64, I64])


class KernelInfo(NamedTuple):
  """What the runtime needs to call a kernel: its symbol and its outer-loop range."""
  name: str               # the LLVM function name (the fusion's name)
  outer: int              # the kernel runs [start, stop) within [0, outer)
  splittable: bool        # whether sub-ranges of [0, outer) may run concurrently


def outer_extent(dims: Sequence[int]) -> int:
  if len(dims) >= 2:
    return dims[0]
  return dims[0] if dims else 1
