"""Every kernel compiles for aarch64 (Linux and macOS) on any host (backends/cpu/cross.py):
the programs of the benchmark (bench/cpu_workloads.py) and of the fuzzer (tests/fuzz), their
loops' and branches' programs and the dot bodies, generated while host.py answers for the
target (NEON, no x86 intrinsic) and compiled to object code by LLVM's AArch64 back end. The
process's own code is untouched: a jitted call after it still runs here."""
import sys
from pathlib import Path

import numpy as np
import pytest
import zlib

import llvmlite.binding as llvm

import ember
import ember.numpy as jnp
from ember._src.backends.cpu import cross, host
from ember._src.driver.compilation import assign_program, clone_module
from ember._src.passes.pipeline import optimize
from tests.fuzz import runner
from tests.fuzz.generator import generate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import cpu_workloads  # noqa: E402  (bench/ is not a package)

_WORKLOADS = {name: spec for name, spec in cpu_workloads.workloads(
    cpu_workloads.namespace("ember")).items() if spec[3].get("jit", True)}


def cross_compile(f, args, target) -> list[bytes]:
  lowered = ember.jit(f).lower(*args).compiler_ir()
  with cross.targeting(target):
    return cross.compile_program(assign_program(optimize(clone_module(lowered))))


def is_aarch64(obj: bytes) -> bool:
  """Whether `obj` is an AArch64 object file: ELF with e_machine 183, or 64-bit Mach-O with
  CPU type ARM64."""
  if obj[:4] == b"\x7fELF":
    return int.from_bytes(obj[18:20], "little") == 183
  return obj[:4] == b"\xcf\xfa\xed\xfe" and int.from_bytes(obj[4:8], "little") == 0x0100000C


def aarch64_objects(objects: list[bytes]) -> bool:
  """Whether every object is AArch64 code and some hold code (the dot bodies do)."""
  texts = [any(s.is_text() and s.size() for s in llvm.ObjectFileRef.from_data(o).sections())
           for o in objects]
  return all(map(is_aarch64, objects)) and any(texts)


def workload_args(name, specs):
  rng = np.random.default_rng(zlib.crc32(name.encode()))   # as the benchmark makes them
  return [spec(rng) if callable(spec) else
          (np.abs(rng.standard_normal(spec)) + 0.1).astype(np.float32) for spec in specs]


@pytest.mark.parametrize("name", sorted(_WORKLOADS))
def test_benchmark_programs_compile_for_aarch64_linux(name):
  f, specs, _, _ = _WORKLOADS[name]
  objects = cross_compile(f, workload_args(name, specs), "aarch64-linux")
  assert objects and aarch64_objects(objects)


@pytest.mark.parametrize("seed", range(12))
def test_fuzzer_programs_compile_for_aarch64(seed):
  prog = generate(seed, x64=seed % 4 == 3)
  f, _ = runner.functions(prog)
  target = "arm64-macos" if seed % 3 == 0 else "aarch64-linux"
  with ember.enable_x64(seed % 4 == 3):
    objects = cross_compile(f, prog.values(), target)
  assert objects and aarch64_objects(objects)


def test_the_target_is_aarch64_only_inside_the_block():
  x = np.linspace(-2, 2, 300, dtype=np.float32)
  with cross.targeting("aarch64-linux"):
    assert host.triple().startswith("aarch64") and not host.is_x86()
    assert host.has("neon") and host.vector_register_bits() == (128,)
    text = "\n".join(cross.program_ir(assign_program(optimize(clone_module(
        ember.jit(jnp.exp).lower(x).compiler_ir())))))
    assert "llvm.aarch64.get.fpcr" in text and "llvm.x86" not in text   # FPCR's flush bit
  assert host.triple() == llvm.get_process_triple()
  np.testing.assert_allclose(np.asarray(ember.jit(lambda v: jnp.exp(v) * 2)(x)),
                             np.exp(x.astype(np.float64)) * 2, rtol=2e-7)


def test_targeting_errors():
  with pytest.raises(ValueError, match="unknown target 'riscv'"):
    with cross.targeting("riscv"):
      pass
  with cross.targeting("aarch64-linux"):
    with pytest.raises(RuntimeError, match="already in force"):
      with cross.targeting("arm64-macos"):
        pass
    with pytest.raises(ValueError, match="x86 intrinsic @llvm.x86.sse2.pause"):
      cross.compile_ir("declare void @llvm.x86.sse2.pause()\ndefine void @f() {\n"
                       "  call void @llvm.x86.sse2.pause()\n  ret void\n}\n")
