"""Rare, expensive paths kept out of line, so loops around them still vectorize.

`_call_if(e, cond, short, impl, x, fallback)` emits `cond ? ember.<short>.<type>(x) : fallback`:
a branch around a noinline call whose `vector-function-abi-variant` attribute names masked
vector variants for the host's vector widths (`_vfabi_widths`); `_outlined` defines those
functions (the scalar one holds the code, the variants call it per active lane). sin, cos and
tan use it for huge arguments (Payne-Hanek). A unit: the library's only control flow and the
only code that knows the vector-function ABI.
"""
from __future__ import annotations


from llvmlite import ir

from ember._src.backends.cpu import host
from ember._src.backends.cpu.mathlib.emitter import _E, _suffix


def _vfabi_widths(bits: int) -> tuple:
  """Vector widths (lanes of `bits`-bit floats) the host's loop vectorizer can choose: each
  masked variant we name costs compile time, so only the host's register widths
  (host.vector_register_bits)."""
  return tuple(r // bits for r in host.vector_register_bits())


def _call_if(e, cond, short, impl, x, fallback):
  """cond ? f(x) : fallback, where f = ember.<short>.<type> is a rarely needed, expensive
  function kept out of line (noinline). Scalar: a branch around the call, which carries the
  `vector-function-abi-variant` attribute naming masked vector variants, so the loop
  vectorizer turns the predicated call into one call per vector (the variant calls f for the
  active lanes only). Vector types: the same branch on any(cond)."""
  b = e.b
  mod = b.module
  if e.n:
    callee = _outlined(mod, short, impl, e.ty, masked=True)
    i1v = cond.type
    rname = f"llvm.vector.reduce.or.{_suffix(i1v)}"
    red = mod.globals.get(rname) or ir.Function(mod, ir.FunctionType(ir.IntType(1), [i1v]),
                                               rname)
    any_ = b.call(red, [cond])
    args = [x, cond]
  else:
    callee = _outlined(mod, short, impl, e.ty, masked=False)
    any_ = cond
    args = [x]
  here = b.block
  slow = b.append_basic_block(f"{short}.slow")
  done = b.append_basic_block(f"{short}.done")
  b.cbranch(any_, slow, done)
  b.position_at_end(slow)
  val = b.call(callee, args)
  if not e.n:
    variants = []
    for vf in _vfabi_widths(64 if e.f64 else 32):
      vty = ir.VectorType(e.ty, vf)
      vfn = _outlined(mod, short, impl, vty, masked=True)
      variants.append(f"_ZGV_LLVM_M{vf}v_{callee.name}({vfn.name})")
    # llvmlite only knows a fixed list of call attributes; this one is a string attribute.
    if variants:
      set.add(val.attributes, '"vector-function-abi-variant"="%s"' % ",".join(variants))
  b.branch(done)
  b.position_at_end(done)
  phi = b.phi(e.ty)
  phi.add_incoming(fallback, here)
  phi.add_incoming(val, slow)
  return e.sel(cond, phi, fallback) if e.n else phi


def _outlined(module, short, impl, ty, masked):
  """ember.<short>.<type>: a noinline, cold, side-effect-free function (weak_odr: it must
  survive until the vectorizer looks the variants up by name). Only the scalar function holds
  the code, so LLVM optimizes the expensive path once per module. A masked vector variant
  (<N x i1> mask) returns at once when no lane is active, else calls ember.<short>.<type>.lanes,
  which calls the scalar function for each active lane. The vectorized loop calls the variant
  once per vector; both are marked "no_caller_saved_registers" (x86: a call to them clobbers
  no register, so the loop keeps its constants in registers across it, and the variant's fast
  exit saves nothing; .lanes saves what the scalar calls clobber, only when a lane is huge)."""
  name = f"ember.{short}.{_suffix(ty)}"
  fn = module.globals.get(name)
  if fn is not None:
    return fn
  args = [ty] + ([ir.VectorType(ir.IntType(1), ty.count)] if masked else [])

  def define(fname, extra=(), attrs=("noinline", "nounwind", "readnone", "cold", "optsize")):
    f = ir.Function(module, ir.FunctionType(ty, args), fname)
    f.linkage = "weak_odr"
    for attr in attrs:
      f.attributes.add(attr)
    for attr in extra:                                # string attributes: not in llvmlite's list
      set.add(f.attributes, attr)
    return f, ir.IRBuilder(f.append_basic_block("entry"))

  if not masked:
    fn, b = define(name)
    b.ret(impl(_E(b, ty), fn.args[0]))
    return fn
  scalar = _outlined(module, short, impl, ty.element, False)
  ncsr = ['"no_caller_saved_registers"']
  lanes, b = define(name + ".lanes", ncsr)            # saves every register itself (rare path)
  # for (i = 0; i < N; i++) if (mask[i]) r[i] = f(x[i]): a loop (one call site, small code)
  i32 = ir.IntType(32)
  entry = b.block
  loop, call, latch, done = (lanes.append_basic_block(n)
                             for n in ("loop", "call", "latch", "done"))
  b.branch(loop)
  b.position_at_end(loop)
  i, acc = b.phi(i32), b.phi(ty)
  i.add_incoming(ir.Constant(i32, 0), entry)
  acc.add_incoming(ir.Constant(ty, None), entry)
  b.cbranch(b.extract_element(lanes.args[1], i), call, latch)
  b.position_at_end(call)
  upd = b.insert_element(acc, b.call(scalar, [b.extract_element(lanes.args[0], i)]), i)
  b.branch(latch)
  b.position_at_end(latch)
  acc2 = b.phi(ty)
  acc2.add_incoming(acc, loop)
  acc2.add_incoming(upd, call)
  i2 = b.add(i, ir.Constant(i32, 1))
  i.add_incoming(i2, latch)
  acc.add_incoming(acc2, latch)
  b.cbranch(b.icmp_unsigned("<", i2, ir.Constant(i32, ty.count)), loop, done)
  ir.IRBuilder(done).ret(acc2)
  fn, b = define(name, ncsr, ("noinline", "nounwind", "readnone"))
  i1v = args[1]                                       # the common case: no lane active
  rname = f"llvm.vector.reduce.or.{_suffix(i1v)}"
  red = module.globals.get(rname) or ir.Function(module, ir.FunctionType(ir.IntType(1), [i1v]),
                                                 rname)
  work, skip = fn.append_basic_block("work"), fn.append_basic_block("skip")
  b.cbranch(b.call(red, [fn.args[1]]), work, skip)
  ir.IRBuilder(skip).ret(ir.Constant(ty, None))
  b = ir.IRBuilder(work)
  b.ret(b.call(lanes, list(fn.args)))
  return fn
