"""jax.ffi: handlers written for JAX against XLA's ffi.h (tests/data/ffi/handlers.cc, compiled
here with the system C++ compiler against ember.ffi.include_dir()) called through ffi_call:
eagerly, under jit and vmap, with attributes of each kind, several results, aliasing, state
made at the instantiate stage, errors; and ffi_lowering for a user primitive."""
import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import config, ffi
from ember.errors import JaxRuntimeError

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
  cxx = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
  if cxx is None:
    pytest.skip("no C++ compiler to build the FFI handlers")
  out = str(tmp_path_factory.mktemp("ffi") / "libhandlers.so")
  build = subprocess.run([cxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-w",
                          "-I", ffi.include_dir(), os.path.join(HERE, "data", "ffi",
                                                                "handlers.cc"), "-o", out],
                         capture_output=True, text=True, timeout=300)
  if build.returncode != 0:
    pytest.skip(f"the FFI handlers do not compile here: {build.stderr[-500:]}")
  lib = ctypes.cdll.LoadLibrary(out)
  ffi.register_ffi_target("ember_test_scale", ffi.pycapsule(lib.Scale), platform="cpu")
  ffi.register_ffi_target("ember_test_row_reduce", ffi.pycapsule(lib.RowReduce))
  ffi.register_ffi_target("ember_test_increment", ffi.pycapsule(lib.Increment))
  lib.CounterTypeId.restype = lib.CounterTypeInfo.restype = ctypes.c_void_p
  ffi.register_ffi_type("ember_test_counter",
                        {"type_id": ffi.pycapsule(lib.CounterTypeId()),
                         "type_info": ffi.pycapsule(lib.CounterTypeInfo())})
  ffi.register_ffi_target("ember_test_counter", {
      "instantiate": ffi.pycapsule(lib.CounterInstantiateHandler),
      "execute": ffi.pycapsule(lib.CounterExecuteHandler)})
  return lib


def scale(x, **attrs):
  spec = ember.ShapeDtypeStruct(x.shape, x.dtype)
  return ffi.ffi_call("ember_test_scale", spec, vmap_method="broadcast_all")(x, **attrs)


def test_scale_eager_jit_and_vmap(lib):
  x = jnp.arange(6, dtype=jnp.float32)
  np.testing.assert_array_equal(scale(x, factor=np.float32(2.0), offset=1),
                                np.arange(6) * 2.0 + 1)
  jitted = ember.jit(lambda x: scale(x, factor=np.float32(3.0), offset=np.int64(-1)) + 1)
  np.testing.assert_array_equal(jitted(x), np.arange(6) * 3.0)
  batched = ember.vmap(lambda r: scale(r, factor=np.float32(0.5), offset=0))(x.reshape(2, 3))
  np.testing.assert_array_equal(batched, np.arange(6).reshape(2, 3) * 0.5)


def test_several_results_string_and_array_attributes(lib):
  with config._override("jax_enable_x64", True):
    a = jnp.arange(12.).reshape(2, 2, 3)
    call = ffi.ffi_call("ember_test_row_reduce",
                        (ember.ShapeDtypeStruct((4,), jnp.float64),
                         ember.ShapeDtypeStruct((1,), jnp.int32)), vmap_method="sequential")
    sums, rows = call(a, mode="sum", weights=np.array([1, 2], np.int64))
    w = np.array([1, 2, 1])
    np.testing.assert_allclose(sums, (np.arange(12.).reshape(4, 3) * w).sum(1))
    assert rows.tolist() == [4] and isinstance(call(a, mode="sum", weights=np.ones(1, np.int64)),
                                               tuple)
    means, _ = ember.jit(lambda a: call(a, mode="mean", weights=np.ones(1, np.int64)))(a)
    np.testing.assert_allclose(means, np.arange(12.).reshape(4, 3).mean(1))
    per_example = ffi.ffi_call("ember_test_row_reduce",
                               (ember.ShapeDtypeStruct((2,), jnp.float64),
                                ember.ShapeDtypeStruct((1,), jnp.int32)),
                               vmap_method="sequential")
    seq, seq_rows = ember.vmap(
        lambda a: per_example(a, mode="sum", weights=np.ones(1, np.int64)))(a)
    np.testing.assert_allclose(seq, np.arange(12.).reshape(2, 2, 3).sum(2))  # one call each
    assert seq_rows.tolist() == [[2], [2]]


def test_input_output_aliases_and_state(lib):
  x = jnp.array([1, 2, 3], jnp.int32)
  inc = ffi.ffi_call("ember_test_increment", ember.ShapeDtypeStruct((3,), jnp.int32),
                     input_output_aliases={0: 0})
  np.testing.assert_array_equal(inc(x), [2, 3, 4])
  np.testing.assert_array_equal(x, [1, 2, 3])        # the argument itself is not written
  count = ffi.ffi_call("ember_test_counter", ember.ShapeDtypeStruct((), jnp.int64),
                       has_side_effect=True)
  with config._override("jax_enable_x64", True):
    assert [int(count()) for _ in range(3)] == [1, 2, 3]   # one state for the call site
    other = ffi.ffi_call("ember_test_counter", ember.ShapeDtypeStruct((), jnp.int64),
                         has_side_effect=True)
    assert int(other()) == 1                              # another call site, another state


def test_errors(lib):
  x = jnp.arange(3, dtype=jnp.float32)
  with pytest.raises(JaxRuntimeError, match="INVALID_ARGUMENT: factor must be non-negative"):
    scale(x, factor=np.float32(-1.0), offset=0)
  with pytest.raises(JaxRuntimeError, match="Wrong scalar data type: expected F32 but got F64"):
    scale(x, factor=np.float64(1.0), offset=0)
  with pytest.raises(JaxRuntimeError, match="NOT_FOUND: No FFI handler registered for "
                     "ember_test_nothing"):
    ffi.ffi_call("ember_test_nothing", ember.ShapeDtypeStruct((3,), jnp.float32))(x)
  with pytest.raises(ValueError, match="cannot be differentiated"):
    ember.grad(lambda x: scale(x, factor=np.float32(1.0), offset=0).sum())(x)
  with pytest.raises(ValueError, match="vmap_method must be on of the allowed methods"):
    ffi.ffi_call("ember_test_scale", ember.ShapeDtypeStruct((3,), jnp.float32),
                 vmap_method="magic")
  no_vmap = ffi.ffi_call("ember_test_scale", ember.ShapeDtypeStruct((3,), jnp.float32))
  with pytest.raises(NotImplementedError, match="vmap is only supported"):
    ember.vmap(lambda r: no_vmap(r, factor=np.float32(1.0), offset=0))(x.reshape(1, 3))
  with pytest.raises(ValueError, match="input_output_aliases contains the mapping '1:0'"):
    ffi.ffi_call("ember_test_increment", ember.ShapeDtypeStruct((3,), jnp.int32),
                 input_output_aliases={1: 0})(x)
  with pytest.raises(TypeError, match="must be a PyCapsule"):
    ffi.register_ffi_target("bad", lib.Scale)


def test_ffi_lowering_for_a_user_primitive(lib):
  from ember.extend import core as ecore
  from ember.interpreters import mlir
  prim = ecore.Primitive("ember_test_scale_prim")
  prim.def_abstract_eval(lambda x, **_: ecore.ShapedArray(x.shape, x.dtype))
  mlir.register_lowering(prim, ffi.ffi_lowering("ember_test_scale"), platform="cpu")
  x = jnp.arange(4, dtype=jnp.float32)
  out = ember.jit(lambda x: prim.bind(x, factor=np.float32(2.0), offset=np.int64(3)))(x)
  np.testing.assert_array_equal(out, np.arange(4) * 2.0 + 3)


def test_helpers():
  assert os.path.isfile(os.path.join(ffi.include_dir(), "xla", "ffi", "api", "c_api.h"))
  assert type(ffi.pycapsule(ctypes.cast(ctypes.CFUNCTYPE(None)(lambda: None),
                                        ctypes.c_void_p).value)).__name__ == "PyCapsule"
  ffi.register_ffi_target_as_batch_partitionable("ember_test_scale")
  with pytest.raises(ValueError, match="api_version"):
    ffi.register_ffi_target("legacy", None, api_version=0)
