"""A jit cache hit as one native call: JAX's C++ fast path, in LLVM IR.

The Python hit path (jit.PjitFunction.__call__ -> dispatch.hit_runner's runner ->
Executable.execute_direct) costs ~3.5 us for `f(x)` with one small Array, of which the
kernel is ~0.1 us: flattening, the signature key, argument checks, output allocation, the
prologue's ctypes call and the Arrays' construction, each a few Python lines. Here the same
work for the commonest call is one builtin function (a PyCFunction taking its arguments
as a vector, METH_FASTCALL) compiled from IR built below, driven by a descriptor of its
signature:

  1. every argument (after the constants) an `Array` of the signature's shape, dtype and
     weak type, not deleted, ready and C-contiguous (`_ptr` set);
  2. the guards: (object, attribute, expected) triples that hold what the Python path
     checks on every call: no trace open, the trace configuration (flags) unchanged, the
     profiler off, asynchronous dispatch on and checked mode off, the executable and its
     frame lock the ones the descriptor was made for; the executor idle (a call); and the
     executable's `_direct` record (read per call: a tier-up makes a new one) made for its
     current cached frame, with one kernel call and nothing after it;
  3. the outputs: `np.empty` of each, then the Arrays holding them (with the allocation
     stack of core/array.py: the caller's frame and its caller, as the Python path
     records), the result container;
  4. under the executable's frame lock (taken without blocking), the pointer patches of
     Executable.execute_direct's prologue descriptor and its one direct kernel call (the
     GIL released around it when the cost model says it is not tiny); the outputs sealed
     read-only.

Any check that fails returns the sentinel `miss` before anything is allocated or written
(or after freeing what was), and the caller takes the Python path, which handles every case
(and raises the errors users see). Nothing here is specific to a signature: the IR is
compiled once per process (and cached on disk like the other runtime code); the C API
functions it calls and the layouts it reads (slot offsets of Array, the data pointer and
flags of a NumPy array) come through a table filled and checked at start-up. Where a check
fails (another Python implementation, a free-threaded build) `available()` is False and the
Python path is the only one.
"""
from __future__ import annotations

import ctypes
import logging
import sys
import sysconfig

import numpy as np
from llvmlite import ir

from ember._src.backends.cpu import runtime_cache

I32, I64 = ir.IntType(32), ir.IntType(64)
VOID = ir.VoidType()

# The C API functions the IR calls, with their types: p/l is a 64-bit word (a pointer or a
# Py_ssize_t), i a C int, v void.
_FUNCTIONS = {
    "PyLong_FromVoidPtr": "pp", "PyLong_FromLong": "pl", "PyLong_AsLong": "lp",
    "PyLong_AsVoidPtr": "pp",
    "PyObject_RichCompareBool": "ippi", "PyObject_GetAttr": "ppp",
    "PyObject_Vectorcall": "ppplp", "PyType_GenericAlloc": "ppl",
    "PyTuple_New": "pl", "PyTuple_SetItem": "iplp", "PyList_New": "pl",
    "PyList_SetItem": "iplp", "Py_IncRef": "vp", "Py_DecRef": "vp", "PyErr_Clear": "v",
    "PyEval_GetFrame": "p", "PyFrame_GetBack": "pp", "PyFrame_GetCode": "pp",
    "PyFrame_GetLasti": "ip", "PyDict_GetItem": "ppp", "PyTuple_GetItem": "ppl",
    "PyEval_SaveThread": "p", "PyEval_RestoreThread": "vp",
}
# ... and the objects and numbers it reads, after them in the same table
_GLOBALS = ("none", "true", "false", "empty_tuple", "array_type", "np_empty", "array_module",
            "internal", "s_frames", "s_filename", "s_direct", "s_cached", "stack_fn",
            "o_buf", "o_fut", "o_ptr", "o_shape", "o_dtype", "o_weak", "o_deleted", "o_stack",
            "np_data", "np_flags")
_API = {name: i for i, name in enumerate([*_FUNCTIONS, *_GLOBALS])}

# The descriptor of one signature: words at these positions
(D_MISS, D_NCONST, D_CONSTS, D_NIN, D_INSPEC, D_NGUARD, D_GUARDS, D_IDLE, D_ACQUIRE,
 D_RELEASE, D_NOUT, D_OUTSPEC, D_EXECUTABLE, D_RESULT, D_FREE_GIL) = range(15)
D_WORDS = 15
RESULT_LEAF, RESULT_TUPLE, RESULT_LIST = 0, 1, 2
PY_EQ = 2
NPY_ARRAY_WRITEABLE, NPY_ARRAY_WARN_ON_WRITE = 0x400, 1 << 31
METH_FASTCALL = 0x80


def _fn_type(sig: str) -> ir.FunctionType:
  kinds = {"p": I64, "l": I64, "i": I32, "v": VOID}
  return ir.FunctionType(kinds[sig[0]], [kinds[c] for c in sig[1:]])


class _Emit:
  """IRBuilder helpers: words of memory at integer addresses, calls through the API table,
  stack slots, counted loops and early exits."""

  def __init__(self, fn: ir.Function):
    self.fn = fn
    self.b = ir.IRBuilder(fn.append_basic_block("entry"))
    self.entry = self.b.block

  def const(self, v: int):
    return ir.Constant(I64, v)

  def word(self, base, index):
    """The `index`th 64-bit word at integer address `base`."""
    p = self.b.inttoptr(base, I64.as_pointer())
    return self.b.load(self.at(p, index))

  def field(self, obj, offset_value):
    """The 64-bit word at byte `offset_value` (an i64 value) of the object at `obj`."""
    return self.b.load(self.b.inttoptr(self.b.add(obj, offset_value), I64.as_pointer()))

  def g(self, name):
    return self.word(self.api, _API[name])

  def call(self, name, *args):
    fty = _fn_type(_FUNCTIONS[name])
    fp = self.b.inttoptr(self.word(self.api, _API[name]), fty.as_pointer())
    return self.b.call(fp, list(args))

  def local(self, init=0):
    """An i64 slot on the stack holding `init` from here on, made in the entry block so
    LLVM keeps it in a register where it can."""
    with self.b.goto_block(self.entry):
      self.b.position_at_start(self.entry)
      slot = self.b.alloca(I64)
    self.b.store(self.const(init), slot)
    return slot

  def at(self, array, i):
    """&array[i] of a stack array (i an int or an i64 value)."""
    return self.b.gep(array, [i if isinstance(i, ir.Value) else self.const(i)])

  def block(self, name):
    return self.fn.append_basic_block(name)

  def unless(self, cond, target, name):
    """Go on in a new block where `cond` is false; go to `target` where it is true."""
    cont = self.block(name)
    self.b.cbranch(cond, target, cont)
    self.b.position_at_end(cont)

  def loop(self, n, body, name):
    """for i in range(n): body(i); `body` may branch away (its exits stay)."""
    b = self.b
    i = self.local()
    head, inner, after = self.block(name), self.block(name + ".body"), self.block(name + ".end")
    b.branch(head)
    b.position_at_end(head)
    iv = b.load(i)
    b.cbranch(b.icmp_signed("<", iv, n), inner, after)
    b.position_at_end(inner)
    body(iv)
    b.store(b.add(b.load(i), self.const(1)), i)
    b.branch(head)
    b.position_at_end(after)

  def is_(self, a, b):
    return self.b.icmp_unsigned("==", a, b)

  def is_not(self, a, b):
    return self.b.icmp_unsigned("!=", a, b)


def _ir_text() -> str:
  module = ir.Module("ember_native_hit")
  # the API table's address: set once per process (ember_native_hit_set_api) after loading
  api_g = ir.GlobalVariable(module, I64, "ember_native_hit_api")
  api_g.initializer, api_g.linkage = ir.Constant(I64, 0), "internal"
  setter = ir.Function(module, ir.FunctionType(VOID, [I64]), "ember_native_hit_set_api")
  sb = ir.IRBuilder(setter.append_basic_block("entry"))
  sb.store(setter.args[0], api_g)
  sb.ret_void()
  # PyObject *ember_native_hit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
  fn = ir.Function(module, ir.FunctionType(I64, [I64, I64, I64]), "ember_native_hit")
  self_obj, argv, nargs = fn.args
  e = _Emit(fn)
  b = e.b
  e.api = b.load(api_g)
  d = e.call("PyLong_AsVoidPtr", self_obj)   # `self` is the descriptor's address
  miss = e.block("miss")
  nconst, nin, nout = e.word(d, D_NCONST), e.word(d, D_NIN), e.word(d, D_NOUT)
  e.unless(b.icmp_signed("!=", b.add(nconst, nargs), nin), miss, "nargs_ok")
  # (data pointers of the inputs, then of the outputs: the prologue's `list index`es)
  data = b.alloca(I64, size=b.add(nin, nout))
  inspec = e.word(d, D_INSPEC)
  consts = e.word(d, D_CONSTS)
  e.loop(nconst, lambda i: _check_input(e, e.word(consts, i), i, inspec, data, miss), "consts")
  e.loop(nargs, lambda i: _check_input(e, e.word(argv, i), b.add(i, nconst), inspec, data,
                                       miss), "args")
  _check_guards(e, d, miss)
  ex = e.word(d, D_EXECUTABLE)
  direct = _current_direct(e, ex, miss)     # a new reference, released on every exit below
  prologue = e.call("PyLong_AsVoidPtr", e.call("PyTuple_GetItem", direct, e.const(2)))
  # from here on a miss frees what is held (`cleanup`): the outputs not yet in an Array, the
  # Arrays not yet in the result, the stack, `direct`
  outs = b.alloca(I64, size=nout)
  arrays = b.alloca(I64, size=nout)
  stack = e.local()
  e.loop(nout, lambda j: (b.store(e.const(0), e.at(outs, j)),
                         b.store(e.const(0), e.at(arrays, j))), "zero")
  cleanup = e.block("cleanup")
  _make_outputs(e, d, nin, nout, outs, data, cleanup)
  b.store(_allocation_stack(e), stack)
  _make_arrays(e, d, nout, outs, arrays, data, b.load(stack), cleanup)
  result = _make_result(e, d, nout, arrays, cleanup)
  e.call("Py_DecRef", b.load(stack))
  b.store(e.const(0), stack)
  # the executable's frame lock, without blocking (another thread's call: the Python path)
  lock_missed = e.block("lock_missed")
  false_vec = e.local(0)
  b.store(e.g("false"), false_vec)
  got = e.call("PyObject_Vectorcall", e.word(d, D_ACQUIRE), b.ptrtoint(false_vec, I64),
               e.const(1), e.const(0))
  _decref_nonnull(e, got)
  e.unless(e.is_not(got, e.g("true")), lock_missed, "locked")
  _patch_and_run(e, d, prologue, data)
  released = e.call("PyObject_Vectorcall", e.word(d, D_RELEASE), e.const(0), e.const(0),
                    e.const(0))
  _decref_nonnull(e, released)
  e.call("PyErr_Clear")      # (a failed release cannot happen: the lock is ours)
  e.call("Py_DecRef", direct)
  b.ret(result)

  b.position_at_end(lock_missed)
  e.call("Py_DecRef", result)
  b.branch(cleanup)

  b.position_at_end(cleanup)            # free what is held, then miss
  def free(j):
    _decref_nonnull(e, b.load(e.at(outs, j)))
    _decref_nonnull(e, b.load(e.at(arrays, j)))
  e.loop(nout, free, "free")
  _decref_nonnull(e, b.load(stack))
  e.call("Py_DecRef", direct)
  b.branch(miss)

  b.position_at_end(miss)               # the Python path takes the call: no error stays set
  e.call("PyErr_Clear")
  sentinel = e.word(d, D_MISS)
  e.call("Py_IncRef", sentinel)
  b.ret(sentinel)
  return str(module)


def _decref_nonnull(e: _Emit, obj) -> None:
  b = e.b
  with b.if_then(e.is_not(obj, e.const(0))):
    e.call("Py_DecRef", obj)


def _same(e: _Emit, value, expected, miss, name: str) -> None:
  """Go on where `value` is `expected` or == it (PyObject_RichCompareBool's identity test
  first); else miss (a NULL value misses too)."""
  b = e.b
  ok, compare = e.block(name + "_ok"), e.block(name + "_cmp")
  b.cbranch(e.is_(value, expected), ok, compare)
  b.position_at_end(compare)
  e.unless(e.is_(value, e.const(0)), miss, name + "_set")
  r = e.call("PyObject_RichCompareBool", value, expected, ir.Constant(I32, PY_EQ))
  b.cbranch(b.icmp_signed("==", r, ir.Constant(I32, 1)), ok, miss)
  b.position_at_end(ok)


def _check_input(e: _Emit, a, k, inspec, data, miss) -> None:
  """Input `k` (`a`): an Array, not deleted, ready and C-contiguous, of the signature's
  shape, dtype and weak type; its data pointer goes to data[k]."""
  b = e.b
  e.unless(e.is_not(e.field(a, e.const(8)), e.g("array_type")), miss, "is_array")  # ob_type
  e.unless(e.is_not(e.field(a, e.g("o_deleted")), e.g("false")), miss, "alive")
  buf = e.field(a, e.g("o_buf"))
  e.unless(b.or_(e.is_(buf, e.const(0)), e.is_(buf, e.g("none"))), miss, "ready")
  ptr = e.field(a, e.g("o_ptr"))
  e.unless(b.or_(e.is_(ptr, e.const(0)), e.is_(ptr, e.g("none"))), miss, "contiguous")
  base = b.mul(k, e.const(3))
  for j, slot in enumerate(("o_shape", "o_dtype", "o_weak")):
    _same(e, e.field(a, e.g(slot)), e.word(inspec, b.add(base, e.const(j))), miss, slot)
  b.store(e.field(buf, e.g("np_data")), e.at(data, k))


def _check_guards(e: _Emit, d, miss) -> None:
  """Each guard's attribute is (==) its expected value; the executor is idle."""
  b = e.b
  guards = e.word(d, D_GUARDS)

  def guard(i):
    base = b.mul(i, e.const(3))
    value = e.call("PyObject_GetAttr", e.word(guards, base),
                   e.word(guards, b.add(base, e.const(1))))
    e.unless(e.is_(value, e.const(0)), miss, "guard_read")
    expected = e.word(guards, b.add(base, e.const(2)))
    same = b.icmp_unsigned("==", value, expected)
    ok = e.block("guard_ok")
    compare = e.block("guard_cmp")
    bad = e.block("guard_bad")
    b.cbranch(same, ok, compare)
    b.position_at_end(compare)
    r = e.call("PyObject_RichCompareBool", value, expected, ir.Constant(I32, PY_EQ))
    b.cbranch(b.icmp_signed("==", r, ir.Constant(I32, 1)), ok, bad)
    b.position_at_end(bad)
    e.call("Py_DecRef", value)
    b.branch(miss)
    b.position_at_end(ok)
    e.call("Py_DecRef", value)
  e.loop(e.word(d, D_NGUARD), guard, "guards")
  idle = e.call("PyObject_Vectorcall", e.word(d, D_IDLE), e.const(0), e.const(0), e.const(0))
  _decref_nonnull(e, idle)        # (True and False outlive the reference)
  e.unless(e.is_not(idle, e.g("true")), miss, "idle")


def _current_direct(e: _Emit, ex, miss):
  """The executable's `_direct` (Executable.execute_direct's record, a new reference) when it
  is made for the current cached frame, with a prologue and no steps after its kernel call;
  else miss (the Python path makes it anew)."""
  b = e.b
  direct = e.call("PyObject_GetAttr", ex, e.g("s_direct"))
  e.unless(e.is_(direct, e.const(0)), miss, "has_direct")
  stale = e.block("direct_stale")
  e.unless(e.is_(direct, e.g("none")), stale, "direct_set")
  cached = e.call("PyObject_GetAttr", ex, e.g("s_cached"))
  e.unless(e.is_(cached, e.const(0)), stale, "has_cached")
  e.call("Py_DecRef", cached)    # (compared by address only; the direct record holds it)
  item = lambda i: e.call("PyTuple_GetItem", direct, e.const(i))   # noqa: E731
  e.unless(e.is_not(item(0), cached), stale, "current")
  e.unless(e.is_(item(1), e.g("none")), stale, "has_prologue")
  e.unless(e.is_not(item(6), e.g("empty_tuple")), stale, "one_call")
  ok = e.block("direct_ok")
  b.branch(ok)
  b.position_at_end(stale)
  e.call("Py_DecRef", direct)
  b.branch(miss)
  b.position_at_end(ok)
  return direct


def _make_outputs(e: _Emit, d, nin, nout, outs, data, cleanup) -> None:
  """outs[j] = np.empty(dims_j, dtype_j); its data pointer in data[nin + j]."""
  b = e.b
  spec = e.word(d, D_OUTSPEC)
  vec = b.alloca(I64, size=e.const(2))   # np.empty's arguments: (dims, dtype)

  def output(j):
    base = b.mul(j, e.const(3))
    b.store(e.word(spec, base), e.at(vec, 0))
    b.store(e.word(spec, b.add(base, e.const(1))), e.at(vec, 1))
    o = e.call("PyObject_Vectorcall", e.g("np_empty"), b.ptrtoint(vec, I64), e.const(2),
               e.const(0))
    e.unless(e.is_(o, e.const(0)), cleanup, "allocated")
    b.store(o, e.at(outs, j))
    b.store(e.field(o, e.g("np_data")), e.at(data, b.add(nin, j)))
  e.loop(nout, output, "outputs")


def _allocation_stack(e: _Emit):
  """core/array.py's allocation stack of a jit cache hit's outputs, a new reference:
  (code, lasti) of the caller of PjitFunction.__call__ and of its caller (ALLOC_STACK_FRAMES
  of 1 or 2, the caller a user frame); () for 0; else array.py's own walk (`stack_fn`)."""
  b = e.b
  out = e.local()
  done, walk, held_u = e.block("stack_done"), e.block("stack_walk"), e.block("stack_held")
  frames = e.call("PyObject_GetAttr", e.g("array_module"), e.g("s_frames"))
  e.unless(e.is_(frames, e.const(0)), walk, "frames_read")
  n = e.call("PyLong_AsLong", frames)
  e.call("Py_DecRef", frames)
  some = e.block("stack_some")
  with b.if_then(b.icmp_signed("<=", n, e.const(0))):
    empty = e.g("empty_tuple")
    e.call("Py_IncRef", empty)
    b.store(empty, out)
    b.branch(done)
  b.cbranch(b.icmp_signed(">", n, e.const(2)), walk, some)
  b.position_at_end(some)
  frame = e.call("PyEval_GetFrame")               # PjitFunction.__call__'s (borrowed)
  e.unless(e.is_(frame, e.const(0)), walk, "has_frame")
  user = e.call("PyFrame_GetBack", frame)         # its caller's (new)
  e.unless(e.is_(user, e.const(0)), walk, "has_caller")
  code = e.call("PyFrame_GetCode", user)
  name = e.call("PyObject_GetAttr", code, e.g("s_filename"))
  e.unless(e.is_(name, e.const(0)), held_u, "has_filename")
  flag = e.call("PyDict_GetItem", e.g("internal"), name)   # (borrowed; NULL: not seen)
  e.call("Py_DecRef", name)
  users = e.block("stack_user")
  b.cbranch(e.is_(flag, e.g("false")), users, held_u)   # ember's or not yet seen: the walk
  b.position_at_end(held_u)
  e.call("Py_DecRef", code)
  e.call("Py_DecRef", user)
  b.branch(walk)
  b.position_at_end(users)
  lasti = e.call("PyLong_FromLong", b.sext(e.call("PyFrame_GetLasti", user), I64))
  outer = e.local()
  with b.if_then(b.icmp_signed(">", n, e.const(1))):
    b.store(e.call("PyFrame_GetBack", user), outer)
  e.call("Py_DecRef", user)
  back = b.load(outer)
  one, two = e.block("stack_one"), e.block("stack_two")
  b.cbranch(e.is_(back, e.const(0)), one, two)
  b.position_at_end(one)
  t = e.call("PyTuple_New", e.const(2))
  _fill_tuple(e, t, [code, lasti], done, out)
  b.position_at_end(two)
  back_code = e.call("PyFrame_GetCode", back)
  back_lasti = e.call("PyLong_FromLong", b.sext(e.call("PyFrame_GetLasti", back), I64))
  e.call("Py_DecRef", back)
  t = e.call("PyTuple_New", e.const(4))
  _fill_tuple(e, t, [code, lasti, back_code, back_lasti], done, out)
  b.position_at_end(walk)
  e.call("PyErr_Clear")
  s = e.call("PyObject_Vectorcall", e.g("stack_fn"), e.const(0), e.const(0), e.const(0))
  with b.if_then(e.is_(s, e.const(0))):           # (cannot fail but by memory: no stack)
    e.call("PyErr_Clear")
    e.call("Py_IncRef", e.g("empty_tuple"))
  b.store(b.select(e.is_(s, e.const(0)), e.g("empty_tuple"), s), out)
  b.branch(done)
  b.position_at_end(done)
  return b.load(out)


def _fill_tuple(e: _Emit, t, items, done, out) -> None:
  """The new tuple `t` of `items` (new references, stolen) into `out`, then to `done`; a
  failed allocation anywhere (a NULL) gives the empty tuple."""
  b = e.b
  bad = b.icmp_unsigned("==", t, e.const(0))
  for it in items:
    bad = b.or_(bad, e.is_(it, e.const(0)))
  fill, fail = e.block("tuple_fill"), e.block("tuple_fail")
  b.cbranch(bad, fail, fill)
  b.position_at_end(fill)
  for i, it in enumerate(items):
    e.call("PyTuple_SetItem", t, e.const(i), it)
  b.store(t, out)
  b.branch(done)
  b.position_at_end(fail)
  for it in [t, *items]:
    _decref_nonnull(e, it)
  e.call("PyErr_Clear")
  e.call("Py_IncRef", e.g("empty_tuple"))
  b.store(e.g("empty_tuple"), out)
  b.branch(done)


def _make_arrays(e: _Emit, d, nout, outs, arrays, data, stack, cleanup) -> None:
  """arrays[j]: an Array holding outs[j] (sealed read-only), its address, the signature's
  shape, dtype and weak type, and the allocation stack (as Array._ready_all makes them)."""
  b = e.b
  spec = e.word(d, D_OUTSPEC)
  nin = e.word(d, D_NIN)

  def array(j):
    arr = e.call("PyType_GenericAlloc", e.g("array_type"), e.const(0))
    e.unless(e.is_(arr, e.const(0)), cleanup, "array_alloc")
    b.store(arr, e.at(arrays, j))
    ptr = e.call("PyLong_FromVoidPtr", b.load(e.at(data, b.add(nin, j))))
    e.unless(e.is_(ptr, e.const(0)), cleanup, "ptr_alloc")
    o = b.load(e.at(outs, j))
    b.store(e.const(0), e.at(outs, j))
    flags = b.inttoptr(b.add(o, e.g("np_flags")), I32.as_pointer())
    b.store(b.and_(b.load(flags), ir.Constant(I32, ~(NPY_ARRAY_WRITEABLE |
                                                     NPY_ARRAY_WARN_ON_WRITE) & 0xFFFFFFFF)),
            flags)
    base = b.mul(j, e.const(3))
    fields = {"o_buf": o, "o_ptr": ptr, "o_fut": e.g("none"), "o_deleted": e.g("false"),
              "o_shape": e.word(spec, base), "o_dtype": e.word(spec, b.add(base, e.const(1))),
              "o_weak": e.word(spec, b.add(base, e.const(2))), "o_stack": stack}
    for slot, value in fields.items():
      if slot not in ("o_buf", "o_ptr"):    # (those two references are the Array's own)
        e.call("Py_IncRef", value)
      b.store(value, b.inttoptr(b.add(arr, e.g(slot)), I64.as_pointer()))
  e.loop(nout, array, "arrays")


def _make_result(e: _Emit, d, nout, arrays, cleanup):
  """The call's result: the one Array, or a tuple or list of them (RESULT_*), a new
  reference; arrays[] hands its references over."""
  b = e.b
  kind = e.word(d, D_RESULT)
  out = e.local()
  leaf, seq, done = e.block("result_leaf"), e.block("result_seq"), e.block("result_done")
  b.cbranch(b.icmp_signed("==", kind, e.const(RESULT_LEAF)), leaf, seq)
  b.position_at_end(leaf)
  b.store(b.load(e.at(arrays, 0)), out)
  b.store(e.const(0), e.at(arrays, 0))
  b.branch(done)
  b.position_at_end(seq)
  is_tuple = b.icmp_signed("==", kind, e.const(RESULT_TUPLE))
  made = e.local()
  with b.if_else(is_tuple) as (then, otherwise):
    with then:
      b.store(e.call("PyTuple_New", nout), made)
    with otherwise:
      b.store(e.call("PyList_New", nout), made)
  container = b.load(made)
  e.unless(e.is_(container, e.const(0)), cleanup, "container")

  def put(j):
    item = b.load(e.at(arrays, j))
    b.store(e.const(0), e.at(arrays, j))
    with b.if_else(is_tuple) as (then, otherwise):
      with then:
        e.call("PyTuple_SetItem", container, j, item)
      with otherwise:
        e.call("PyList_SetItem", container, j, item)
  e.loop(nout, put, "result_items")
  b.store(container, out)
  b.branch(done)
  b.position_at_end(done)
  return b.load(out)


def _patch_and_run(e: _Emit, d, prologue, data) -> None:
  """The prologue descriptor's pointer patches (each a destination and an index into
  `data`), then its kernel call, the GIL released around it where D_FREE_GIL says."""
  b = e.b

  def patch(i):
    k = b.mul(i, e.const(2))
    dest = e.word(prologue, b.add(k, e.const(5)))
    idx = e.word(prologue, b.add(k, e.const(6)))
    b.store(b.load(e.at(data, idx)), b.inttoptr(dest, I64.as_pointer()))
  e.loop(e.word(prologue, 4), patch, "patches")
  fn = e.word(prologue, 0)
  kernel_t = ir.FunctionType(VOID, [I64, I64, I64])
  with b.if_then(e.is_not(fn, e.const(0))):
    free = b.icmp_signed("!=", e.word(d, D_FREE_GIL), e.const(0))
    state = e.local()
    with b.if_then(free):
      b.store(e.call("PyEval_SaveThread"), state)
    b.call(b.inttoptr(fn, kernel_t.as_pointer()),
           [e.word(prologue, 1), e.const(0), e.word(prologue, 2)])
    with b.if_then(free):
      e.call("PyEval_RestoreThread", b.load(state))


# --------------------------------------------------------------------------------------
# The process's copy: the table, the compiled function, the builtins made from it
# --------------------------------------------------------------------------------------

class _MethodDef(ctypes.Structure):
  _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
              ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]


class _Signature(int):
  """The builtin's `self`: the address of its descriptor (an int, which the IR reads with
  PyLong_AsVoidPtr), holding the descriptor and every object whose address it holds."""


def _slot_offsets(cls, names) -> dict:
  """Byte offsets of `cls`'s __slots__ `names` in its instances, found by setting each on a
  probe instance to an object of its own and finding that object's address."""
  probe = object.__new__(cls)
  marks = {name: object() for name in names}
  for name, mark in marks.items():
    object.__setattr__(probe, name, mark)
  words = list((ctypes.c_int64 * (cls.__basicsize__ // 8)).from_address(id(probe)))
  return {name: 8 * words.index(id(mark)) for name, mark in marks.items()}   # (ValueError:
  # not found, caught by _native)


def _numpy_layout() -> tuple[int, int] | None:
  """(offset of the data pointer, offset of the flags) in a NumPy array object, checked on
  arrays with different flags; None if they are not where NumPy 1.x and 2.x put them."""
  data, flags = 16, 64
  probes = [np.empty(3, np.float32), np.empty((2, 3))[:, 1], np.zeros(2)]
  probes[2].setflags(write=False)
  for a in probes:
    if ctypes.c_int64.from_address(id(a) + data).value != a.ctypes.data or \
        ctypes.c_uint32.from_address(id(a) + flags).value != a.flags.num:
      return None
  return data, flags


@runtime_cache.once
def _native():
  """(the PyMethodDef of the compiled function, the objects the table holds) or None where
  this process cannot run it (not CPython 3.11+ with the GIL on 64 bits, or a layout the
  checks do not find, or a failure making it: logged, and the Python path runs)."""
  if sys.implementation.name != "cpython" or sys.version_info < (3, 11) or \
      sysconfig.get_config_var("Py_GIL_DISABLED") or ctypes.sizeof(ctypes.c_void_p) != 8:
    return None
  try:
    return _make_native()
  except Exception as e:  # noqa: BLE001 -- a missing C API function, an LLVM failure, ...
    logging.getLogger("ember").warning("ember: jit cache hits run in Python (%s: %s)",
                                       type(e).__name__, e)
    return None


def _make_native():
  layout = _numpy_layout()
  if layout is None or not _array_module:
    return None
  array_module = _array_module[0]
  Array = array_module.Array
  offsets = _slot_offsets(Array, ("_buf", "_fut", "_ptr", "_shape", "_dtype", "_weak_type",
                                  "_deleted", "_stack"))
  keep = {"none": None, "true": True, "false": False, "empty_tuple": (), "array_type": Array,
          "np_empty": np.empty, "array_module": array_module,
          "internal": array_module._internal, "s_frames": "ALLOC_STACK_FRAMES",
          "s_filename": "co_filename", "s_direct": "_direct", "s_cached": "_cached",
          "stack_fn": array_module.native_hit_stack}
  numbers = {"o_buf": offsets["_buf"], "o_fut": offsets["_fut"], "o_ptr": offsets["_ptr"],
             "o_shape": offsets["_shape"], "o_dtype": offsets["_dtype"],
             "o_weak": offsets["_weak_type"], "o_deleted": offsets["_deleted"],
             "o_stack": offsets["_stack"], "np_data": layout[0], "np_flags": layout[1]}
  table = (ctypes.c_int64 * len(_API))()
  for name in _FUNCTIONS:
    table[_API[name]] = ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value
  for name, obj in keep.items():
    table[_API[name]] = id(obj)
  for name, value in numbers.items():
    table[_API[name]] = value
  engine, addr = runtime_cache.load_or_compile(
      "ember_native_hit", _ir_text, runtime_cache.generator_digest(__file__), 2)
  ctypes.CFUNCTYPE(None, ctypes.c_int64)(addr("ember_native_hit_set_api"))(
      ctypes.addressof(table))
  method = _MethodDef(b"jit_cache_hit", addr("ember_native_hit"), METH_FASTCALL, None)
  return method, (engine, table, keep)


_new_builtin = ctypes.pythonapi.PyCFunction_NewEx
_new_builtin.restype = ctypes.py_object
_new_builtin.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]


_array_module: list = []   # core/array.py, handed down by the dispatcher (a layer above)


def available(array_module) -> bool:
  """Whether builtins can be made here (`array_module`: core/array.py)."""
  if not _array_module:
    _array_module.append(array_module)
  return _native() is not None


def hit_function(*, array_module, executable, consts, arg_types, guards, idle, out_specs,
                 result: int, free_gil: bool, miss):
  """The builtin running a cache hit of one signature: `f(*args)` -> the result, or `miss`
  (nothing done) for anything it does not check for itself; None where it cannot be made
  (no native support here, or the executable does not run as one prologue call: see
  Executable.execute_direct). `array_module`: core/array.py. `arg_types`: (shape, dtype,
  weak type) per argument; `guards`: (object, attribute, expected value) triples;
  `out_specs`: (dims, dtype, weak type) per output; `result`: RESULT_*."""
  native = _native() if available(array_module) else None
  direct = getattr(executable, "_direct", None)
  if native is None or direct is None or direct[1] is None or direct[4] is None or \
      direct[6] != () or not out_specs:
    return None
  if any(type(c) is not array_module.Array or c._ptr is None for c in consts):
    return None
  const_types = [(c._shape, c._dtype, c._weak_type) for c in consts]
  specs = [x for t in [*const_types, *arg_types] for x in t]
  outs = [x for dims, dtype, weak in out_specs for x in (tuple(dims), dtype, bool(weak))]
  guard_words = [x for g in guards for x in g]
  lock = executable._frame_lock
  objects = (consts, specs, outs, guard_words, idle, lock.acquire, lock.release, executable,
             miss)

  def words(objs):
    return (ctypes.c_int64 * max(len(objs), 1))(*map(id, objs))
  arrays = [words(consts), words(specs), words(guard_words), words(outs)]
  desc = (ctypes.c_int64 * D_WORDS)()
  desc[D_MISS], desc[D_NCONST], desc[D_CONSTS] = id(miss), len(consts), ctypes.addressof(arrays[0])
  desc[D_NIN], desc[D_INSPEC] = len(consts) + len(arg_types), ctypes.addressof(arrays[1])
  desc[D_NGUARD], desc[D_GUARDS] = len(guards), ctypes.addressof(arrays[2])
  desc[D_IDLE], desc[D_ACQUIRE], desc[D_RELEASE] = id(idle), id(objects[5]), id(objects[6])
  desc[D_NOUT], desc[D_OUTSPEC] = len(out_specs), ctypes.addressof(arrays[3])
  desc[D_EXECUTABLE], desc[D_RESULT], desc[D_FREE_GIL] = id(executable), result, free_gil
  sig = _Signature(ctypes.addressof(desc))
  sig.keep = (desc, arrays, objects, native)
  return _new_builtin(ctypes.addressof(native[0]), sig, None)
