"""The processor's denormal modes in native code: XLA:CPU's flush-to-zero, on every thread
that runs ember's code (base/denormals.py says what it does to values and where it applies).

x86-64: MXCSR's FTZ (bit 15: a subnormal result is written as a zero of its sign) and DAZ
(bit 6: a subnormal operand is read as a zero of its sign). aarch64: FPCR's FZ (bit 24: both
at once, for float32 and float64; FZ16, bit 19, stays off: float16 computes in float32
here). Elsewhere the helpers do nothing. The mode is a register of the thread, saved and
restored by the OS at every switch.

- `emit_flush_on(b)` / `emit_restore(b, token)`: IR (llvmlite builder) turning the modes on
  in the calling thread unless they are on (the token: the register to go back to, or -1)
  and back. Every kernel entry (fusions, dot and linalg kernels) brackets its body with
  them, so a kernel flushes on whatever thread calls it (a ctypes call from Python, the hit
  prologue, the native hit path, the thread pool, the step runner, the loop driver) and
  never leaves the caller's thread changed. Already on (a pool worker, a chain of kernels
  in the step runner or a loop), the bracket is one read of the register; switching costs
  ~13 ns (two LDMXCSR: serializing), once per top-level kernel call.
- `TEXT_HELPERS`: the same two functions as IR text, for the hand-written runtime functions
  (thread pool workers keep the modes on for their life; the step runner, loop driver and
  BLAS chunks bracket their work).
- `install(load_or_compile)`: the natives behind base/denormals.py's switches for Python
  (eager NumPy references, the HLO evaluator, the NumPy thunks of an executable, host
  callbacks): builtin functions compiled once per machine (runtime_cache), installed when
  the backend starts.
- `declare_mode(ir_text)`: every function told the modes it runs in (`MODE_ATTRIBUTE`).
"""
from __future__ import annotations

import ctypes
import platform
import re
import string
import sys

import llvmlite.binding as llvm
from llvmlite import ir

from ember._src.base import denormals as modes
from ember._src.backends.cpu import host

I32, I64 = ir.IntType(32), ir.IntType(64)
_ARCH = platform.machine().lower()
X86 = _ARCH in ("x86_64", "amd64")
AARCH64 = _ARCH in ("aarch64", "arm64")
# the bits of the control register that flush
FLUSH_BITS = (modes.MXCSR_FTZ | modes.MXCSR_DAZ) if X86 else modes.FPCR_FZ if AARCH64 else 0

ON, OFF, RESTORE = "ember.fz.on", "ember.fz.off", "ember.fz.restore"


def _target() -> tuple[bool, int]:
  """(x86?, the flush bits) of the CPU the kernels are generated for: the host's, or a
  cross-compilation target's (host.triple(); cross.py)."""
  if host.triple() == llvm.get_process_triple():
    return X86, FLUSH_BITS
  if host.is_x86():
    return True, modes.MXCSR_FTZ | modes.MXCSR_DAZ
  return False, modes.FPCR_FZ if host.triple().startswith(("aarch64", "arm64")) else 0

# What every function ember compiles is told about the modes it runs in (llvm_jit adds it to
# each definition: `declare_mode`), so that LLVM's optimizations keep to what the processor
# does with subnormals (its constant folding flushes them, as the processor would). Without
# it the optimized tier and the quick one (opt level 0: no such rewrites) gave different
# float64 cbrt and pow of subnormal arguments (tests/test_tier_agreement.py).
MODE_ATTRIBUTE = ('"denormal-fp-math"="preserve-sign,preserve-sign"' if FLUSH_BITS
                  else '"denormal-fp-math"="ieee,ieee"')
_DEFINE = re.compile(r"^(define [^\n]*?)( *\{)?$", re.M)


def declare_mode(ir_text: str) -> str:
  """The IR with MODE_ATTRIBUTE on every function it defines."""
  return _DEFINE.sub(lambda m: f"{m.group(1)} {MODE_ATTRIBUTE}{m.group(2) or ''}", ir_text)


# The control register as an i64: read (`$READ` defines %v) and write (`$WRITE` of %w),
# through a stack slot on x86 (`$SLOT`, in the entry block: no alloca inside a loop the
# helper is inlined into)
_X86_DECLARES = """declare void @llvm.x86.sse.stmxcsr(ptr)
declare void @llvm.x86.sse.ldmxcsr(ptr)
"""
_X86_SLOT = "%cw = alloca i32, align 4"
_X86_READ = """call void @llvm.x86.sse.stmxcsr(ptr %cw)
  %cw32 = load i32, ptr %cw
  %v = zext i32 %cw32 to i64"""
_X86_WRITE = """%w32 = trunc i64 %w to i32
  store i32 %w32, ptr %cw
  call void @llvm.x86.sse.ldmxcsr(ptr %cw)"""
_ARM_DECLARES = """declare i64 @llvm.aarch64.get.fpcr()
declare void @llvm.aarch64.set.fpcr(i64)
"""
_ARM_READ = "%v = call i64 @llvm.aarch64.get.fpcr()"
_ARM_WRITE = "call void @llvm.aarch64.set.fpcr(i64 %w)"

# on: the flush bits set unless all are (-1: nothing to restore); off: cleared unless none
# is; restore: the flush bits as the token holds them (the exception flags raised meanwhile
# stay raised)
_HELPERS = """
define $LINKAGE i64 @"$ON"() $ATTRS {
entry:
  $SLOT
  $READ
  %bits = and i64 %v, $BITS
  %done = icmp eq i64 %bits, $BITS
  br i1 %done, label %keep, label %set
keep:
  ret i64 -1
set:
  %w = or i64 %v, $BITS
  $WRITE
  ret i64 %v
}

define $LINKAGE i64 @"$OFF"() $ATTRS {
entry:
  $SLOT
  $READ
  %bits = and i64 %v, $BITS
  %done = icmp eq i64 %bits, 0
  br i1 %done, label %keep, label %set
keep:
  ret i64 -1
set:
  %w = and i64 %v, $NOT_BITS
  $WRITE
  ret i64 %v
}

define $LINKAGE void @"$RESTORE"(i64 %t) $ATTRS {
entry:
  $SLOT
  %none = icmp slt i64 %t, 0
  br i1 %none, label %keep, label %set
keep:
  ret void
set:
  $READ
  %rest = and i64 %v, $NOT_BITS
  %mode = and i64 %t, $BITS
  %w = or i64 %rest, %mode
  $WRITE
  ret void
}
"""
_NO_HELPERS = """
define $LINKAGE i64 @"$ON"() $ATTRS {
  ret i64 -1
}

define $LINKAGE i64 @"$OFF"() $ATTRS {
  ret i64 -1
}

define $LINKAGE void @"$RESTORE"(i64 %t) $ATTRS {
  ret void
}
"""


def helpers_text(linkage: str = "internal", attrs: str = "alwaysinline nounwind",
                 on: str = ON, off: str = OFF, restore: str = RESTORE) -> str:
  """The declarations and the three functions as IR text."""
  if X86 or AARCH64:
    declares, slot, read, write = (_X86_DECLARES, _X86_SLOT, _X86_READ, _X86_WRITE) if X86 \
        else (_ARM_DECLARES, "", _ARM_READ, _ARM_WRITE)
    body = declares + _HELPERS
  else:
    slot = read = write = ""
    body = _NO_HELPERS
  return string.Template(body).substitute(
      LINKAGE=linkage, ATTRS=attrs, ON=on, OFF=off, RESTORE=restore, SLOT=slot, READ=read,
      WRITE=write, BITS=FLUSH_BITS, NOT_BITS=~FLUSH_BITS)


# for the hand-written runtime modules: `call i64 @"ember.fz.on"()` ...
TEXT_HELPERS = helpers_text()


# --- the builder form (kernels) ------------------------------------------------------

def _helper(module: ir.Module, name: str) -> ir.Function:
  """This module's copy of helper `name` (internal, always inlined), defined at first use."""
  fn = module.globals.get(name)
  if fn is None:
    _define_helpers(module)
    fn = module.globals[name]
  return fn


def _define_helpers(module: ir.Module) -> None:
  on = ir.Function(module, ir.FunctionType(I64, []), ON)
  off = ir.Function(module, ir.FunctionType(I64, []), OFF)
  back = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64]), RESTORE)
  for fn in (on, off, back):
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
  x86, flush_bits = _target()
  if not flush_bits:
    for fn in (on, off):
      ir.IRBuilder(fn.append_basic_block("entry")).ret(ir.Constant(I64, -1))
    ir.IRBuilder(back.append_basic_block("entry")).ret_void()
    return
  access = _register_access(module, x86)
  for fn, flush in ((on, True), (off, False)):
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    read, write = access(b)
    v = read()
    bits = b.and_(v, ir.Constant(I64, flush_bits))
    done = b.icmp_unsigned("==", bits, ir.Constant(I64, flush_bits if flush else 0))
    with b.if_then(done):
      b.ret(ir.Constant(I64, -1))
    write(b.or_(v, ir.Constant(I64, flush_bits)) if flush
          else b.and_(v, ir.Constant(I64, ~flush_bits)))
    b.ret(v)
  b = ir.IRBuilder(back.append_basic_block("entry"))
  read, write = access(b)
  token = back.args[0]
  with b.if_then(b.icmp_signed(">=", token, ir.Constant(I64, 0))):   # the mode bits only
    write(b.or_(b.and_(read(), ir.Constant(I64, ~flush_bits)),
                b.and_(token, ir.Constant(I64, flush_bits))))
  b.ret_void()


def _register_access(module: ir.Module, x86: bool):
  """access(b) -> (read() -> i64, write(i64)): the thread's control register at builder
  `b` (x86: through a stack slot made now, at the function's entry)."""
  def declared(name, fty):
    return module.globals.get(name) or ir.Function(module, fty, name)
  if x86:
    to_slot = ir.FunctionType(ir.VoidType(), [ir.PointerType()])
    st = declared("llvm.x86.sse.stmxcsr", to_slot)
    ld = declared("llvm.x86.sse.ldmxcsr", to_slot)

    def access(b):
      slot = b.alloca(I32)

      def read():
        b.call(st, [slot])
        return b.zext(b.load(slot, typ=I32), I64)

      def write(v):
        b.store(b.trunc(v, I32), slot)
        b.call(ld, [slot])
      return read, write
    return access
  get = declared("llvm.aarch64.get.fpcr", ir.FunctionType(I64, []))
  put = declared("llvm.aarch64.set.fpcr", ir.FunctionType(ir.VoidType(), [I64]))
  return lambda b: ((lambda: b.call(get, [])), (lambda v: b.call(put, [v])))


def emit_flush_on(b: ir.IRBuilder):
  """At `b`: flush-to-zero and denormals-are-zero on in the calling thread; returns the
  token `emit_restore` takes."""
  return b.call(_helper(b.module, ON), [])


def emit_restore(b: ir.IRBuilder, token) -> None:
  """At `b` (before each return of a function that called emit_flush_on): the caller's
  modes back."""
  b.call(_helper(b.module, RESTORE), [token])


# --- the natives of base/denormals.py's switches ------------------------------------

# As builtins (PyCFunctions: ~40 ns a call, where a ctypes call costs ~150 ns; an eager
# reference pays two): on() and off() return the token as a Python int (PyLong_FromLong),
# restore(token) reads it (PyLong_AsLong) and returns 0. The two C API functions' addresses
# are handed in at start-up (`ember_fz_set_api`). Elsewhere than CPython: ctypes functions.
_BUILTINS_IR = """
@api = internal global [2 x i64] zeroinitializer

define void @ember_fz_set_api(i64 %from_long, i64 %as_long) {
  store i64 %from_long, ptr @api
  %p = getelementptr [2 x i64], ptr @api, i64 0, i64 1
  store i64 %as_long, ptr %p
  ret void
}

define internal ptr @py_int(i64 %v) {
  %fa = load i64, ptr @api
  %f = inttoptr i64 %fa to ptr
  %r = call ptr %f(i64 %v)
  ret ptr %r
}

define ptr @ember_fz_on_py(ptr %self, ptr %unused) {
  %t = call i64 @ember_fz_on()
  %r = call ptr @py_int(i64 %t)
  ret ptr %r
}

define ptr @ember_fz_off_py(ptr %self, ptr %unused) {
  %t = call i64 @ember_fz_off()
  %r = call ptr @py_int(i64 %t)
  ret ptr %r
}

define ptr @ember_fz_restore_py(ptr %self, ptr %token) {
  %p = getelementptr [2 x i64], ptr @api, i64 0, i64 1
  %fa = load i64, ptr %p
  %f = inttoptr i64 %fa to ptr
  %t = call i64 %f(ptr %token)
  call void @ember_fz_restore(i64 %t)
  %r = call ptr @py_int(i64 0)
  ret ptr %r
}
"""
_NATIVE_NAMES = ("ember_fz_on", "ember_fz_off", "ember_fz_restore")
_NATIVE_IR = helpers_text("", "nounwind", *_NATIVE_NAMES) + _BUILTINS_IR
METH_NOARGS, METH_O = 0x4, 0x8


class _MethodDef(ctypes.Structure):
  _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
              ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


_natives_made: list = []


def _natives(load_or_compile):
  """(what must stay alive, on, off, restore): the switches, compiled once per machine
  (install runs once, at start-up)."""
  if _natives_made:
    return _natives_made[0]
  engine, addr = load_or_compile("ember_fz", lambda: _NATIVE_IR, _NATIVE_IR, 2)
  made = _builtins(engine, addr) if sys.implementation.name == "cpython" else None
  if made is None:
    switch = ctypes.CFUNCTYPE(ctypes.c_int64)
    back = ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr(_NATIVE_NAMES[2]))
    made = (engine, switch(addr(_NATIVE_NAMES[0])), switch(addr(_NATIVE_NAMES[1])), back)
  _natives_made.append(made)
  return made


def _builtins(engine, addr):
  """(engine and method defs, on, off, restore) as builtin functions."""
  api = ctypes.pythonapi
  address = lambda f: ctypes.cast(f, ctypes.c_void_p).value
  ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64)(addr("ember_fz_set_api"))(
      address(api.PyLong_FromLong), address(api.PyLong_AsLong))
  new = api.PyCFunction_NewEx
  new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.py_object,
                                                 ctypes.py_object]
  defs = [_MethodDef(name.encode(), addr(name + "_py"), flags, None)
          for name, flags in zip(_NATIVE_NAMES, (METH_NOARGS, METH_NOARGS, METH_O))]
  on, off, back = (new(ctypes.addressof(d), None, None) for d in defs)
  if back(on()) != 0:   # (a first use: the modes on, and back as they were)
    return None
  return (engine, defs), on, off, back


def install(load_or_compile) -> None:
  """Give base/denormals.py its switches (once per process; a no-op where the modes do not
  exist). `load_or_compile`: runtime_cache's (which sits above this module: llvm_jit
  declares MODE_ATTRIBUTE)."""
  if not FLUSH_BITS or modes.installed():
    return
  _, on, off, back = _natives(load_or_compile)
  modes.install(on, off, back)
