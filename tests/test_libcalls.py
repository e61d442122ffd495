"""backends/cpu/libcalls.py: ember's own float16 conversion helpers (bit-exact with NumPy's
round-to-nearest-even), the unresolved-symbol check (llvm_jit.py), and whole programs compiled for CPUs
without F16C/AVX512-FP16 (--cpu_max_isa), where LLVM calls those helpers."""
import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import llvmlite.binding as llvm
from llvmlite import ir

from ember._src.backends.cpu import host, llvm_jit
from ember._src.backends.cpu import libcalls  # noqa: F401 -- registers its helpers with llvm_jit

pytestmark = pytest.mark.skipif(not host.is_x86(), reason="x86 instruction-set levels")

PTR, I64 = ir.PointerType(), ir.IntType(64)
LOOP_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)


def _convert_loop(module, name, src, dst, op):
  """void name(src* x, dst* y, i64 n): y[i] = op(x[i])."""
  fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64]), name)
  b = ir.IRBuilder(fn.append_basic_block())
  entry, loop, done = b.block, fn.append_basic_block(), fn.append_basic_block()
  b.cbranch(b.icmp_unsigned(">", fn.args[2], ir.Constant(I64, 0)), loop, done)
  b.position_at_end(loop)
  i = b.phi(I64)
  i.add_incoming(ir.Constant(I64, 0), entry)
  x = b.load(b.gep(fn.args[0], [i], source_etype=src), typ=src)
  b.store(getattr(b, op)(x, dst), b.gep(fn.args[1], [i], source_etype=dst))
  nxt = b.add(i, ir.Constant(I64, 1))
  i.add_incoming(nxt, loop)
  b.cbranch(b.icmp_unsigned("<", nxt, fn.args[2]), loop, done)
  b.position_at_end(done)
  b.ret_void()


def _compile_for(cpu: str, ir_text: str):
  llvm_jit.init()
  tm = llvm.Target.from_triple(llvm.get_process_triple()).create_target_machine(
      cpu=cpu, features="", opt=3, codemodel="jitdefault")
  mod = llvm.parse_assembly(ir_text)
  mod.triple = tm.triple
  obj = tm.emit_object(mod)
  return obj, llvm_jit.load_object(obj, 3)


@pytest.fixture(scope="module")
def generic_conversions():
  """f64->f16, f32->f16 and f16->f32 loops compiled for x86-64 without F16C: each
  conversion is a call of one of ember's helpers."""
  m = ir.Module(name="conversions")
  H, F, D = ir.HalfType(), ir.FloatType(), ir.DoubleType()
  _convert_loop(m, "d2h", D, H, "fptrunc")
  _convert_loop(m, "f2h", F, H, "fptrunc")
  _convert_loop(m, "h2f", H, F, "fpext")
  obj, (engine, addr) = _compile_for("x86-64", str(m))
  assert llvm_jit.undefined_symbols([obj]) == {"__truncdfhf2", "__truncsfhf2", "__extendhfsf2"}

  def run(name, x, out_dtype):
    x = np.ascontiguousarray(x)
    out = np.empty(x.shape, out_dtype)
    LOOP_FN(addr(name))(x.ctypes.data, out.ctypes.data, x.size)
    return out
  yield run
  del engine


def _same_bits_or_both_nan(got, want, x):
  nan = np.isnan(want.astype(np.float32))
  assert np.isnan(got[nan].astype(np.float32)).all()
  bad = (got.view(f"u{got.itemsize}") != want.view(f"u{want.itemsize}")) & ~nan
  assert not bad.any(), (x[bad][:8], got[bad][:8], want[bad][:8])


ALL_HALVES = np.arange(1 << 16, dtype=np.uint16).view(np.float16)


def test_half_to_float_is_exact_for_all_65536_halves(generic_conversions):
  got = generic_conversions("h2f", ALL_HALVES, np.float32)
  _same_bits_or_both_nan(got, ALL_HALVES.astype(np.float32), ALL_HALVES)
  # a NaN keeps its payload and comes out quiet, as vcvtph2ps gives it
  nan = np.isnan(ALL_HALVES)
  want = ALL_HALVES.astype(np.float32).view(np.uint32)[nan] | 0x400000
  np.testing.assert_array_equal(got.view(np.uint32)[nan], want)


def _float_cases(dtype, rng):
  h = ALL_HALVES[np.isfinite(ALL_HALVES)].astype(dtype)
  h = np.sort(h)
  ties = (h[:-1] + h[1:]) / 2                     # exact midpoints: round half to even
  edges = np.array([65504, 65519.99, 65520, 65536, 1e10, np.inf, -np.inf, np.nan,
                    2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -14, 1e-45, 0.0, -0.0], dtype)
  bits = rng.integers(0, np.iinfo(f"u{np.dtype(dtype).itemsize}").max, 1 << 20,
                      dtype=f"u{np.dtype(dtype).itemsize}", endpoint=True).view(dtype)
  x = np.concatenate([h, ties, edges, bits, rng.uniform(-7e4, 7e4, 1 << 18).astype(dtype),
                      rng.uniform(-1e-4, 1e-4, 1 << 18).astype(dtype)])
  with np.errstate(invalid="ignore"):
    return np.concatenate([x, np.nextafter(x, dtype(np.inf)), np.nextafter(x, -dtype(np.inf))])


@pytest.mark.parametrize("name, dtype", [("f2h", np.float32), ("d2h", np.float64)])
def test_float_to_half_rounds_to_nearest_even_like_numpy(generic_conversions, name, dtype):
  x = _float_cases(dtype, np.random.default_rng(0))
  got = generic_conversions(name, x, np.float16)
  with np.errstate(over="ignore", invalid="ignore"):
    want = x.astype(np.float16)      # one rounding (double -> half directly)
  _same_bits_or_both_nan(got, want, x)


def test_an_unresolved_symbol_is_a_runtime_error_naming_it_not_a_crash():
  m = ir.Module(name="calls_nothing_known")
  missing = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "ember_test_no_such_symbol")
  fn = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "kernel")
  b = ir.IRBuilder(fn.append_basic_block())
  b.call(missing, [])
  b.ret_void()
  with pytest.raises(RuntimeError, match="ember_test_no_such_symbol.*no library"):
    _compile_for("x86-64", str(m))


# Whole programs at each instruction-set level, in a fresh process (the level is fixed at
# process start). The first three lines are the programs that crashed (issue 15).
_PROGRAM = textwrap.dedent("""
    import numpy as np, ember, ember.numpy as jnp, ml_dtypes
    from ember._src.backends.cpu import host
    print(host.cpu()[0])
    f16, bf16 = np.float16, ml_dtypes.bfloat16
    def check(f, *args, x64=False, want=None):   # jit == eager (== want, NumPy's, if given)
      ember.config.update('jax_enable_x64', x64)
      got = np.asarray(ember.jit(f)(*args))
      eager = np.asarray(f(*map(jnp.asarray, args)))
      for ref in [eager] + ([] if want is None else [want]):
        assert got.dtype == ref.dtype, (got.dtype, ref.dtype)
        np.testing.assert_array_equal(got, ref)
    h = np.array([1.5, -0.0, 65504, np.inf, np.nan, 6e-8, 3.0e-5], f16)
    check(lambda h, i: h + i, np.ones(3, f16), np.ones(3, np.int32), want=np.full(3, 2, f16))
    b = np.array([True, False])
    check(lambda x: x.astype(jnp.float16), b, want=b.astype(f16))
    d = np.array([1.0, 65519.99, 65520.0, 1/3, 2.0 ** -25, 3 * 2.0 ** -26, -1e300, np.nan])
    with np.errstate(over="ignore"):
      check(lambda x: x.astype(np.float16), d, x64=True, want=d.astype(f16))
    i = np.array([3, -70000, 2049, 2 ** 62], np.int64)
    with np.errstate(over="ignore"):
      check(lambda x: x.astype(f16), i, x64=True, want=i.astype(f16))
    check(lambda h: (h * 3 + 1).astype(np.float32), h)
    check(lambda h: jnp.exp(h) - jnp.sqrt(jnp.abs(h)), h)
    check(lambda h: jnp.sum(h[:3]), h)
    check(lambda b: (b * 3).astype(f16), np.array([1.5, -2.25, 300], bf16))
    check(lambda h: h.astype(bf16).astype(np.float64), h, x64=True)
    print("ok")
""")


@pytest.mark.parametrize("isa", ["SSE4_2", "AVX2", None])
def test_float16_programs_at_each_instruction_set_level(isa, tmp_path):
  env = dict(os.environ, EMBER_RUNTIME_CACHE_DIR=str(tmp_path))
  env.pop("XLA_FLAGS", None)
  env["EMBER_FLAGS"] = f"--cpu_max_isa={isa}" if isa else ""
  r = subprocess.run([sys.executable, "-c", _PROGRAM], env=env, capture_output=True, text=True,
                     timeout=300)
  assert r.returncode == 0, (r.returncode, r.stdout, r.stderr[-3000:])
  cpu, status = r.stdout.split()
  assert status == "ok"
  if isa:
    assert cpu == host.ISA_CPUS[isa] or cpu == llvm.get_host_cpu_name()
