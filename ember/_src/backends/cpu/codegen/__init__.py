"""LLVM code generation for fusions: one module per kernel family.

Each fusion becomes one LLVM function with the backend ABI (`abi`: `void <fusion name>(i8**
buffers, i64 start, i64 stop)`, docs/compiler.md), a loop nest over the output index space
(`kernels.KernelBuilder.fusion` picks its shape) whose body asks the elemental emitter
(`emitter.ElementalEmitter`) for the value of the fusion's root at the loop's index; the
emitter computes it recursively by the rules of each op family. All kernels of one jitted
function go into one LLVM module (compiler.py). The modules, bottom first:

- ir_types: dtypes as LLVM types (registers and memory), constants, CodegenError;
- ir_helpers: IRBuilder utilities (index arithmetic, loops) shared with dot_kernels and
  linalg_kernels, and helpers for values held in registers;
- abi: the kernel signature and KernelInfo, shared by every generator of kernels;
- scalar_ops, complex_ops: one element of an elementwise op as scalar IR, XLA's semantics;
- index_maps: structural ops (broadcast, transpose, reshape, slice, pad, gather, ...) as maps
  of the element index onto their operands;
- concatenate, reductions, transpose: a kernel family each: its rule inside a fusion where it
  has one, and the loop nest of a fusion it shapes (a part of KernelBuilder each);
- emitter: the elemental emitter: rule dispatch, memo scopes, hoisting, row buffers, memory;
- kernels: KernelBuilder (the kernel scaffolding, the choice of loop nest, the generic nests,
  scatter) and wrap_as_fusion.

This namespace holds no code: callers import from the module that holds what they use.
"""
