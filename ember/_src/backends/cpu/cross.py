"""Cross-compilation: ember's generated code for another CPU, as object code that is never
run here. It shows that every kernel compiles for aarch64 (Linux and macOS), with no x86
intrinsic outside an ISA guard, on a machine that is not one:

    with cross.targeting("aarch64-linux"):
      ...                                   # code generators see the target (host.py)
    cross.compile_program(assignment) -> [object code, ...]   # an optimized program

While a target is in force, host.py answers for it (triple, CPU, features, vector widths),
so the passes and code generators make the choices they would make there; the kernels'
IR is compiled by a target machine of that triple. The programs of loops and branches are
compiled the same way (what control_flow.py would compile at run time), and so are the
dot kernels' shared bodies, which the process otherwise compiles once for itself. Nothing
compiled here is loaded: the process's own caches (math library, shared bodies, runtime
functions) are left as they are.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import llvmlite.binding as llvm
from llvmlite import ir

from ember._src.backends.cpu import denormals, dot_kernels, host, llvm_jit
from ember._src.backends.cpu.codegen.kernels import KernelBuilder

# name -> (LLVM triple, CPU, features): the targets ember's code is checked to compile for
TARGETS = {
    "aarch64-linux": ("aarch64-unknown-linux-gnu", "generic", "+neon,+fp-armv8"),
    "arm64-macos": ("arm64-apple-macosx13.0.0", "apple-m1", ""),
}

_CONTROL_FLOW = ("while", "conditional")


@contextlib.contextmanager
def targeting(name: str) -> Iterator[None]:
  """Generate code for target `name` (TARGETS) inside the block, not for this host."""
  if name not in TARGETS:
    raise ValueError(f"cross.targeting: unknown target {name!r}; known: {sorted(TARGETS)}")
  if host._cross is not None:
    raise RuntimeError("cross.targeting: a cross-compilation target is already in force")
  host._cross = TARGETS[name]
  try:
    yield
  finally:
    host._cross = None


def target_machine() -> llvm.TargetMachine:
  """A target machine for the target in force (static code: no JIT code model)."""
  llvm_jit.init()
  llvm.initialize_all_targets()
  llvm.initialize_all_asmprinters()
  triple, cpu, features = host._cross
  return llvm.Target.from_triple(triple).create_target_machine(cpu=cpu, features=features,
                                                               opt=2)


def compile_ir(ir_text: str) -> bytes:
  """Object code of the module `ir_text` for the target in force, optimized as the full
  tier optimizes (O1 pipeline with the vectorizers)."""
  if not host.is_x86() and "@llvm.x86." in ir_text:   # (LLVM would abort the process)
    intrinsic = ir_text[ir_text.index("@llvm.x86."):].split("(")[0]
    raise ValueError(f"cross.compile_ir: the IR calls the x86 intrinsic {intrinsic} while "
                     f"generating code for {host.triple()}: guard it with host.has(...)")
  tm = target_machine()
  mod = llvm.parse_assembly(denormals.declare_mode(ir_text))
  mod.triple, mod.data_layout = tm.triple, str(tm.target_data)
  mod.verify()
  pto = llvm.create_pipeline_tuning_options(speed_level=1)
  pto.loop_vectorization = pto.slp_vectorization = True
  pb = llvm.create_pass_builder(tm, pto)
  pb.getModulePassManager().run(mod, pb)
  return tm.emit_object(mod)


def program_ir(assignment) -> list[str]:
  """The IR of the kernels of a program (a buffer assignment made by
  compilation.assign_program, under the target), then of the programs its loops and
  branches call, recursively."""
  # deferred: cross-compilation is a test's tool; the compiler loads only when one runs
  from ember._src.backends.cpu import compiler
  module = ir.Module(name=assignment.module.name)
  plan = compiler._ThunkPlan(assignment, KernelBuilder(module))
  texts = []
  for instr in assignment.module.entry.instrs:
    if instr.opcode in _CONTROL_FLOW:
      for sub in assignment.called[instr.name]:
        texts += program_ir(sub)
    else:
      plan.add(instr)
  return [str(module)] + texts


def shared_bodies_ir() -> list[str]:
  """The IR of the dot kernels' shared bodies for the target (dot_kernels.ensure_shared_bodies
  compiles them for the process)."""
  return [make() for _, make in dot_kernels.shared_body_makers()]


def compile_program(assignment) -> list[bytes]:
  """Object code for the target in force of an optimized program's kernels (`assignment`:
  its buffer assignment, compilation.assign_program's, made under the target), its loops'
  and branches' programs', and the dot bodies."""
  return [compile_ir(t) for t in program_ir(assignment) + shared_bodies_ir()]
