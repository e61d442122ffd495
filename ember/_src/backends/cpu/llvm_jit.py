"""Everything ember's CPU backend asks of llvmlite's JIT: LLVM's initialization, target
machines for the CPU ember compiles for (host.cpu(): the host or a --cpu_max_isa level),
IR text -> optimized object code at an LLVM tier, object code -> a loaded MCJIT engine, the
check that every symbol an object needs resolves before it loads, and the registration of
symbols defined at run time.

    jit(ir_text, opt_level) -> (engine, symbol -> address, code size, optimized IR, object)
    compile_whole / compile_parts -> (code size, optimized IR, object); load(...) -> jit's
    load_object(obj, opt_level) -> (engine, symbol -> address)

Locking: foreground compiles share LLVM's global context, one at a time (`jit_lock`); a
`private` compile (the tier-up worker's, the parts of a parallel compile) uses a context and
target machine of its own and runs the pass pipeline and object emission outside llvmlite's
global lock. Both locks are held across a fork (`os.register_at_fork`).

Symbols defined at run time: code above this module that defines functions an object may
call (libcalls' float16 helpers, dot_kernels' shared dot bodies) registers a provider in
`symbol_providers` when it is imported; `load_object` lets each make its symbols resolvable
(`add_symbol`) before it checks that every undefined symbol resolves: a RuntimeError naming
the ones that do not, where MCJIT would bind them to address 0 and the first call would
kill the process.
"""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import struct
import threading
import time
from typing import Callable, NamedTuple, Sequence

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from ember._src.backends.cpu import host

# --------------------------------------------------------------------------------------
# Initialization and locks
# --------------------------------------------------------------------------------------

jit_lock = threading.RLock()


@functools.cache
def init() -> None:
  llvm.initialize_native_target()
  llvm.initialize_native_asmprinter()


def _llvm_locks() -> tuple:
  """ember's compile lock and llvmlite's global lock (every llvmlite call takes it, even the
  disposal of a garbage-collected target machine)."""
  return jit_lock, ffi.lib._lock._lock


def _hold_llvm_locks() -> None:
  # before a fork: no other thread (the tier-up worker compiles in the background) is inside
  # llvmlite when the child is made; a lock it held would hang the child at its first
  # garbage collection of an LLVM object
  for lock in _llvm_locks():
    lock.acquire()


def _release_llvm_locks() -> None:   # the parent and the child (same thread identity)
  for lock in reversed(_llvm_locks()):
    lock.release()


os.register_at_fork(before=_hold_llvm_locks, after_in_parent=_release_llvm_locks,
                    after_in_child=_release_llvm_locks)


# --------------------------------------------------------------------------------------
# Tiers and target machines
# --------------------------------------------------------------------------------------

class LLVMTier(NamedTuple):
  """What LLVM does at one `opt_level` (EMBER_FLAGS=--opt_level, XLA's
  --xla_backend_optimization_level; `jax_disable_most_optimizations` selects 0)."""
  speed_level: int     # the new pass manager's default pipeline (0: always-inline only)
  vectorize: bool      # loop and SLP vectorizers
  codegen_level: int   # the code generator's -O level (0: fast instruction selection and
                       # register allocation: a third of the time, slow code)
  unroll: bool = True  # LLVM's loop unrolling. Off (the default tiers): 15-55% less LLVM
                       # time at no measured speed (a column sum's 8-row second stage
                       # unrolled into 750 lines); short reductions then vectorize with
                       # their reassociation, so a 5-term sum may round differently from
                       # the reference evaluator (within the reduction tolerance)


# Measured (bench/compile_latency.py): LLVM's O2/O3 simplification pipelines made no kernel
# faster than O1's followed by the vectorizers (pairwise distances ran 40% slower after O3)
# and cost 10-20% more compile time; the code generator costs the same at -O1..-O3.
LLVM_TIERS = {0: LLVMTier(0, False, 0), 1: LLVMTier(1, False, 1), 2: LLVMTier(1, True, 2, False),
              3: LLVMTier(1, True, 3, False)}


def host_target_machine(opt_level: int = 3) -> llvm.TargetMachine:
  """A new target machine for the CPU ember compiles for (host.cpu(): the host's name and
  features, or a --cpu_max_isa level), JIT code model, code generator at `opt_level`. An
  MCJIT engine takes ownership of the one it is given."""
  init()
  cpu, features = host.cpu()
  target = llvm.Target.from_triple(llvm.get_process_triple())
  return target.create_target_machine(cpu=cpu, features=features, opt=opt_level,
                                      codemodel="jitdefault")


@functools.cache
def shared_target_machine(opt_level: int) -> llvm.TargetMachine:
  """One target machine per level for optimizing and emitting (under `jit_lock`):
  creating one costs ~0.7 ms a compile."""
  return host_target_machine(opt_level)


_worker_tms = threading.local()


def _worker_target_machine(opt_level: int) -> llvm.TargetMachine:
  """This thread's own target machine per level, for private compiles (the tier-up worker,
  the parts of a parallel compile)."""
  tms = getattr(_worker_tms, "by_level", None)
  if tms is None:
    tms = _worker_tms.by_level = {}
  tm = tms.get(opt_level)
  if tm is None:
    tm = tms[opt_level] = host_target_machine(opt_level)
  return tm


# --------------------------------------------------------------------------------------
# IR text -> object code
# --------------------------------------------------------------------------------------

def compile_ir(ir_text: str, tier: LLVMTier, private: bool, times: dict,
               internal: Sequence[str] = ()) -> tuple[int, str, bytes]:
  """(code size, optimized IR text, object code) of the module; the functions `internal`
  become internal (only kept where another function calls them). `private`: a context and
  target machine of this thread's own, heavy calls outside llvmlite's global lock (else
  the caller holds `jit_lock`). Records seconds per stage in `times` (llvm_parse,
  llvm_optimize, llvm_ir_text, llvm_emit_object)."""
  t0 = time.perf_counter()
  mod = llvm.parse_assembly(ir_text, llvm.create_context() if private else None)
  mod.verify()
  for name in internal:
    mod.get_function(name).linkage = "internal"
  tm = _worker_target_machine(tier.codegen_level) if private else \
      shared_target_machine(tier.codegen_level)
  mod.triple = tm.triple
  mod.data_layout = str(tm.target_data)
  t1 = time.perf_counter()
  pto = llvm.create_pipeline_tuning_options(speed_level=tier.speed_level)
  pto.loop_vectorization = pto.slp_vectorization = tier.vectorize
  pto.loop_unrolling = tier.unroll
  pb = llvm.create_pass_builder(tm, pto)
  mpm = pb.getModulePassManager()
  _llvm_call("LLVMPY_RunNewModulePassManager", private)(mpm, mod, pb)
  t2 = time.perf_counter()
  opt_ir = str(mod)
  t3 = time.perf_counter()
  obj = _emit_object(tm, mod, private)
  t4 = time.perf_counter()
  code_size = sum(s.size() for s in llvm.ObjectFileRef.from_data(obj).sections()
                  if s.is_text())
  times.update(llvm_parse=t1 - t0, llvm_optimize=t2 - t1, llvm_ir_text=t3 - t2,
               llvm_emit_object=t4 - t3)
  return code_size, opt_ir, obj


def compile_whole(ir_text: str, opt_level: int, times: dict, private: bool = False
                  ) -> tuple[int, str, bytes]:
  """`compile_ir` of the whole module at `LLVM_TIERS[opt_level]`: a foreground compile
  under `jit_lock`, a `private` one outside it."""
  init()
  with (contextlib.nullcontext() if private else jit_lock):
    return compile_ir(ir_text, LLVM_TIERS[opt_level], private, times)


# the optimized IR texts of a module compiled in parts, joined
_PART_MARK = "\n; ---- ember: the next part of the module (compiled in parallel) ----\n"


def compile_parts(jobs: list[tuple], times: dict) -> tuple[int, str, bytes]:
  """`compile_ir` of two (IR text, tier, functions made internal) jobs, each on its own
  thread (private contexts), as one result: code sizes summed, optimized texts joined by
  `_PART_MARK`, objects packed (`_pack_objects`). `times`: the slower part's per stage."""
  init()
  results, errors, part_times = [None, None], [], [{}, {}]

  def run(k: int) -> None:
    text, tier, internal = jobs[k]
    try:
      results[k] = compile_ir(text, tier, True, part_times[k], internal=internal)
    except BaseException as e:  # noqa: BLE001 -- re-raised in the caller
      errors.append(e)
  helper = threading.Thread(target=run, args=(1,), name="ember-llvm-part")
  helper.start()
  run(0)
  helper.join()
  for key in part_times[0].keys() | part_times[1].keys():
    times[key] = max(part_times[0].get(key, 0.0), part_times[1].get(key, 0.0))
  if errors:
    raise errors[0]
  return (results[0][0] + results[1][0], results[0][1] + _PART_MARK + results[1][1],
          _pack_objects([results[0][2], results[1][2]]))


_OBJS_MAGIC = b"ember-objects\0"


def _pack_objects(objs: list[bytes]) -> bytes:
  return _OBJS_MAGIC + b"".join(len(o).to_bytes(8, "little") + o for o in objs)


def _unpack_objects(data: bytes) -> list[bytes]:
  """The object files of `_pack_objects` (or the one object file `data` is)."""
  if not data.startswith(_OBJS_MAGIC):
    return [data]
  out, pos = [], len(_OBJS_MAGIC)
  while pos < len(data):
    n = int.from_bytes(data[pos:pos + 8], "little")
    out.append(data[pos + 8:pos + 8 + n])
    pos += 8 + n
  return out


def _llvm_call(name: str, unlocked: bool):
  """llvmlite's C-API function `name`; with `unlocked`, the raw function without
  llvmlite's global lock (only for objects no other thread can reach)."""
  fn = getattr(llvm.ffi.lib, name)
  return getattr(fn, "_cfn", fn) if unlocked else fn


def _emit_object(tm: llvm.TargetMachine, mod: llvm.ModuleRef, private: bool) -> bytes:
  """`tm.emit_object(mod)`, outside llvmlite's global lock when `private`."""
  if not private:
    return tm.emit_object(mod)
  lib = llvm.ffi.lib
  with llvm.ffi.OutputString() as err:
    buf = _llvm_call("LLVMPY_TargetMachineEmitToMemory", True)(tm, mod, 1, err)
    if not buf:
      raise RuntimeError(str(err))
  try:
    return ctypes.string_at(lib.LLVMPY_GetBufferStart(buf), lib.LLVMPY_GetBufferSize(buf))
  finally:
    lib.LLVMPY_DisposeMemoryBuffer(buf)


def assembly(opt_ir: str, opt_level: int) -> str:
  """The assembly of optimized IR (codegen only: the IR passes already ran); a module
  compiled in parts (`_PART_MARK`) part by part."""
  with jit_lock:
    tm = shared_target_machine(LLVM_TIERS[opt_level].codegen_level)
    return "".join(tm.emit_assembly(llvm.parse_assembly(part))
                   for part in opt_ir.split(_PART_MARK))


# --------------------------------------------------------------------------------------
# Object code -> a loaded engine
# --------------------------------------------------------------------------------------

def load_object(obj: bytes, opt_level: int):
  """An MCJIT engine holding the object code `obj` (one object file, or `_pack_objects`'
  several), and its symbol -> address lookup. Raises RuntimeError, before loading, when a
  symbol the code calls resolves nowhere (`check_resolved`)."""
  check_resolved(obj)
  with jit_lock:
    holder = llvm.parse_assembly("")
    holder.triple = llvm.get_process_triple()
    # the engine owns (and frees) its target machine: a new one, never the shared one
    engine = llvm.create_mcjit_compiler(
        holder, host_target_machine(LLVM_TIERS[opt_level].codegen_level))
    for part in _unpack_objects(obj):
      engine.add_object_file(llvm.ObjectFileRef.from_data(part))
    engine.finalize_object()

  def addr(name: str) -> int:
    a = engine.get_function_address(name)
    if not a:
      raise ValueError(f"kernel {name} was not found in the compiled object")
    return a
  return engine, addr


def load(compiled: tuple[int, str, bytes], opt_level: int, times: dict):
  """`load_object` of a compile's (code size, optimized IR, object code): (engine,
  symbol -> address, code size, optimized IR, object code); seconds in times["llvm_load"]."""
  code_size, opt_ir, obj = compiled
  t = time.perf_counter()
  engine, addr = load_object(obj, opt_level)
  times["llvm_load"] = time.perf_counter() - t
  return engine, addr, code_size, opt_ir, obj


def jit(ir_text: str, opt_level: int, times: dict | None = None, private: bool = False):
  """The whole module compiled at `LLVM_TIERS[opt_level]` (`compile_whole`) and loaded
  (`load`): (engine, symbol -> address, code size, optimized IR, object code)."""
  times = {} if times is None else times
  return load(compile_whole(ir_text, opt_level, times, private), opt_level, times)


# --------------------------------------------------------------------------------------
# The process's library: functions compiled once, called by quick-tier code
# --------------------------------------------------------------------------------------

_library: dict[str, object] = {}   # symbol -> the engine holding it (kept for the process)


def library(symbol: str, make_ir: Callable[[], str], opt_level: int) -> None:
  """Compile the module `make_ir()`, which defines the exported function `symbol`, at
  `LLVM_TIERS[opt_level]` into an engine kept for the life of the process and make
  `symbol` resolvable for every object loaded from now on (`add_symbol`); nothing when it
  already is (the symbol names its IR: compiler._quick_math)."""
  with jit_lock:
    if symbol in _library:
      return
    compiled = compile_whole(make_ir(), opt_level, {})
    engine, addr = load_object(compiled[2], opt_level)
    add_symbol(symbol, addr(symbol))
    _library[symbol] = engine


# --------------------------------------------------------------------------------------
# Symbols: defined at run time, needed by an object
# --------------------------------------------------------------------------------------

# Called by `load_object` with the object code about to load and the names it leaves
# undefined; each makes the symbols it defines resolvable (`add_symbol`). Filled by the
# modules that define them, when imported (libcalls, dot_kernels).
symbol_providers: list[Callable[[bytes, set], None]] = []


def add_symbol(name: str, address: int) -> None:
  """Make `name` resolve to `address` for every object loaded from now on (MCJIT links by
  name)."""
  llvm.add_symbol(name, address)


_SHN_UNDEF = 0
_ELF_SYM = struct.Struct("<IBBHQQ")            # Elf64_Sym, little-endian
# names MCJIT's ELF linker defines itself
_LINKER_DEFINED = {"_GLOBAL_OFFSET_TABLE_"}


def _elf_symbols(obj: bytes) -> tuple[set, set]:
  """(defined global names, undefined names) of an ELF64 object; ((), ()) for another
  format (the check below then trusts the linker)."""
  if not obj.startswith(b"\x7fELF\x02\x01"):
    return set(), set()
  sections = {s.name(): s.data() for s in llvm.ObjectFileRef.from_data(obj).sections()}
  symtab, strtab = sections.get(b".symtab", b""), sections.get(b".strtab", b"")
  defined, undefined = set(), set()
  for off in range(_ELF_SYM.size, len(symtab) - _ELF_SYM.size + 1, _ELF_SYM.size):
    st_name, info, _, shndx, _, _ = _ELF_SYM.unpack_from(symtab, off)
    if not st_name or info >> 4 == 0:           # unnamed or local
      continue
    name = strtab[st_name:strtab.index(b"\0", st_name)].decode()
    (undefined if shndx == _SHN_UNDEF else defined).add(name)
  return defined, undefined


def undefined_symbols(objects) -> set:
  """The names the object files refer to and none of them defines."""
  defined, undefined = set(), set()
  for obj in objects:
    d, u = _elf_symbols(obj)
    defined |= d
    undefined |= u
  return undefined - defined - _LINKER_DEFINED


def _in_process(name: str) -> bool:
  """Whether the process's own libraries define `name` (libm's fmodf for a float `frem`):
  MCJIT's linker resolves those through the dynamic loader, which address_of_symbol does
  not consult."""
  try:
    getattr(ctypes.CDLL(None), name)
    return True
  except AttributeError:
    return False


def check_resolved(obj: bytes) -> None:
  """Let the `symbol_providers` define what the object code needs, then raise a
  RuntimeError naming every symbol that still resolves nowhere (before MCJIT binds it to
  address 0)."""
  needed = undefined_symbols(_unpack_objects(obj))
  for provide in symbol_providers:
    provide(obj, needed)
  missing = sorted(n for n in needed if not llvm.address_of_symbol(n) and not _in_process(n))
  if missing:
    raise RuntimeError(
        f"the compiled code refers to {', '.join(missing)}, which no library loaded in "
        "this process defines (an LLVM runtime helper ember does not provide for this "
        "CPU); calling it would crash. Please report this with your CPU model and the "
        "llvmlite version; EMBER_FLAGS=--dump_to=DIR writes the module's IR.")
