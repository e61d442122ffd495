"""JAX 0.12's remaining top-level names (issue 34): the config states (debug_nans, debug_infs,
no_tracing, ...), float0, the ref functions, the mesh getters, fwd_and_bwd and the process and
environment functions. Expected values are what JAX 0.12.1 gives on one CPU process."""
import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp


# --- config states ------------------------------------------------------------------------

def test_debug_nans_eager_raises_naming_the_primitive():
  assert jax.debug_nans.value is False
  with jax.debug_nans(True):
    assert jax.debug_nans.value is True
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
      jnp.log(jnp.array([-1.0, 0.0]))
    np.testing.assert_array_equal(1.0 / (jnp.array([-1.0, 0.0]) + 1), [np.inf, 1.0])
  assert jax.debug_nans.value is False
  assert np.isnan(jnp.log(-1.0))   # off again: no check


def test_debug_nans_jit_reruns_op_by_op(capsys):
  f = jax.jit(lambda x: jnp.log(x) * 2)
  with jax.debug_nans(True):
    with pytest.raises(FloatingPointError, match=r"invalid value \(nan\) encountered in log"):
      f(jnp.array([-1.0, 0.0]))
    assert "de-optimized" in capsys.readouterr().out
    np.testing.assert_allclose(f(jnp.array([1.0])), [0.0])
  assert np.isnan(f(-1.0))


def test_debug_nans_jit_nan_input_passed_through():
  # the de-optimized run makes no nan: JAX's "did not produce invalid values" error
  with jax.debug_nans(True):
    with pytest.raises(FloatingPointError, match="de-optimized function did not produce"):
      jax.jit(lambda x: x)(np.array([np.nan], np.float32))


def test_debug_infs():
  with jax.debug_infs(True):
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in div"):
      jax.jit(lambda x: 1 / x)(jnp.array([0.0]))
    with pytest.raises(FloatingPointError, match=r"invalid value \(inf\) encountered in log"):
      jnp.log(jnp.array([0.0]))
    np.testing.assert_array_equal(jnp.log(jnp.array([1.0])), [0.0])


def test_no_tracing():
  f = jax.jit(lambda x: x * 2)
  f(1.0)
  with jax.no_tracing(True):
    assert f(2.0) == 4.0        # a cache hit traces nothing
    with pytest.raises(RuntimeError, match="'no_tracing' is set"):
      f(np.ones(3, np.float32))
  assert f(np.ones(3, np.float32)).shape == (3,)


def test_default_matmul_precision_and_explain_cache_misses():
  assert jax.default_matmul_precision.value is None
  with jax.default_matmul_precision("highest"):
    assert jax.config.jax_default_matmul_precision == "highest"
    np.testing.assert_allclose(jnp.ones((2, 2)) @ jnp.ones((2, 2)), np.full((2, 2), 2.0))
  assert jax.config.jax_default_matmul_precision is None
  with pytest.raises(ValueError, match="new enum value must be None or in"):
    with jax.default_matmul_precision("foo"):
      pass
  with jax.explain_cache_misses(True):
    assert jax.explain_cache_misses.value is True
  assert jax.explain_cache_misses.value is False


# --- names of existing things -------------------------------------------------------------

def test_float0_and_refs():
  assert jax.float0 == jax.dtypes.float0
  _, t = jax.jvp(lambda n: n * 2, (np.int32(3),), (np.zeros((), jax.float0),))
  assert t.dtype == jax.float0
  r = jax.empty_ref(jax.ShapeDtypeStruct((3,), jnp.float32))
  r[...] = jnp.arange(3.0)
  np.testing.assert_array_equal(jax.freeze(r), [0.0, 1.0, 2.0])
  assert jax.free_ref(jax.new_ref(jnp.ones(2))) is None


def test_meshes():
  assert jax.get_mesh().axis_names == () and jax.get_mesh().empty
  mesh = jax.make_mesh((1,), ("x",))
  with jax.set_mesh(mesh):
    assert jax.get_mesh() is mesh
    assert jax.get_abstract_mesh() == mesh.abstract_mesh

    @jax.jit
    def f(x):
      jax.get_mesh()
      return x
    with pytest.raises(ValueError, match="can only be used outside of `jax.jit`"):
      f(1.0)
  out = jax.reshard(jnp.ones(2), jax.NamedSharding(mesh, jax.P()))
  np.testing.assert_array_equal(out, [1.0, 1.0])
  dev = jax.devices()[0]
  s = jax.sharding.make_single_device_sharding(dev)
  assert s == jax.sharding.SingleDeviceSharding(dev)
  assert jax.sharding.is_single_device_sharding(s)
  assert not jax.sharding.is_single_device_sharding(jax.NamedSharding(mesh, jax.P()))


# --- fwd_and_bwd --------------------------------------------------------------------------

X = np.arange(4.0, dtype=np.float32).reshape(2, 2)
W = np.ones((2, 2), np.float32)
# JAX 0.12.1: jax.fwd_and_bwd(lambda x, W: jnp.sin(x @ W), (0, 1)) at X, W, cotangent ones
Y = [[0.84147096, 0.84147096], [-0.9589243, -0.9589243]]
CT_X = [[1.0806046, 1.0806046], [0.5673244, 0.5673244]]
CT_W = [[0.5673244, 0.5673244], [1.3912889, 1.3912889]]


@pytest.mark.parametrize("jitted", [True, False])
def test_fwd_and_bwd(jitted):
  fwd, bwd = jax.fwd_and_bwd(lambda x, w: jnp.sin(x @ w), argnums=(0, 1), jitted=jitted)
  y, res = fwd(X, W)
  np.testing.assert_allclose(y, Y, rtol=1e-6)
  ct_x, ct_w = bwd(res, np.ones((2, 2), np.float32))
  np.testing.assert_allclose(ct_x, CT_X, rtol=1e-6)
  np.testing.assert_allclose(ct_w, CT_W, rtol=1e-6)
  fwd, bwd = jax.fwd_and_bwd(lambda x, w: jnp.sin(x @ w), argnums=0, jitted=jitted)
  _, res = fwd(X, W)
  np.testing.assert_allclose(bwd(res, np.ones((2, 2), np.float32)), CT_X, rtol=1e-6)


def test_fwd_and_bwd_has_aux_and_errors():
  fwd, bwd = jax.fwd_and_bwd(lambda x: (jnp.sin(x).sum(), x * 2), argnums=0, has_aux=True)
  y, res, aux = fwd(X)
  np.testing.assert_allclose(y, 1.8918884, rtol=1e-6)
  np.testing.assert_array_equal(aux, X * 2)
  np.testing.assert_allclose(bwd(res, np.float32(1.0)), np.cos(X), rtol=1e-6)
  with pytest.raises(TypeError, match="argnums"):
    jax.fwd_and_bwd(lambda x: x, argnums=3)[0](X)
  with pytest.raises(TypeError):
    jax.fwd_and_bwd(3, argnums=0)


# --- processes and the environment --------------------------------------------------------

def test_process_functions():
  assert jax.host_count() == jax.process_count() == 1
  assert jax.host_id() == jax.process_index() == 0
  assert jax.host_ids() == jax.process_indices() == [0]


def test_live_arrays_and_copy_to_host_async():
  x = jnp.ones(3)
  y = jax.jit(lambda a: a * 2)(x)
  live = jax.live_arrays()
  assert any(a is x for a in live) and any(a is y for a in live)
  x.delete()
  assert not any(a is x for a in jax.live_arrays())
  tree = {"a": y, "b": 1}
  assert jax.copy_to_host_async(tree) is tree
  np.testing.assert_array_equal(tree["a"], [2.0, 2.0, 2.0])


def test_print_environment_info(capsys):
  text = jax.print_environment_info(return_string=True)
  assert "numpy:" in text and "process_count: 1" in text and "python:" in text
  assert jax.print_environment_info() is None
  assert capsys.readouterr().out.startswith("ember:")


# --- jax.stages, jax.errors, jax.ad_checkpoint, jax.experimental -----------------------------

def test_args_info():
  f = jax.jit(lambda x, y, z=1: x + y, donate_argnums=1)
  lowered = f.lower(jnp.ones(2), jnp.ones(2), z=jnp.int32(3))
  # JAX 0.12.1: ((ArgInfo(float32[2], False), ArgInfo(float32[2], True)), {'z': int32[]})
  for info in (lowered.args_info, lowered.compile().args_info):
    (x, y), kw = info
    assert (x.shape, x.dtype, x.donated) == ((2,), jnp.float32, False)
    assert (y.shape, y.donated) == ((2,), True)
    assert list(kw) == ["z"] and kw["z"].dtype == jnp.int32 and kw["z"].shape == ()
  assert isinstance(x, jax.stages.ArgInfo)
  assert repr(x) == "ArgInfo(_aval=ShapedArray(float32[2]), donated=False)"
  with pytest.warns(UserWarning, match="donated"):
    (_, y), _ = f.trace(jnp.ones(2), 2.0).lower().args_info   # requested, if unusable
  assert y.donated and y.shape == ()
  (x,), kw = jax.jit(lambda x, n: x * n, static_argnums=1).trace(jnp.ones(2), 3).args_info
  assert x.shape == (2,) and kw == {}
  with pytest.raises(Exception):
    x.donated = True    # frozen, as JAX's dataclass


def test_error_classes():
  assert issubclass(jax.errors.JAXIndexError, IndexError)
  assert issubclass(jax.errors.JaxprTypeError, TypeError)
  assert issubclass(jax.errors.InconclusiveDimensionOperation, Exception)
  with pytest.raises(IndexError):
    raise jax.errors.JAXIndexError("out of range")


def test_ad_checkpoint_policy_answers():
  from ember import ad_checkpoint as adc
  assert repr(adc.Saveable) == "Saveable" and repr(adc.Recompute) == "Recompute"

  def only_sin(prim, *_, **__):
    return adc.Saveable if prim.name == "sin" else adc.Recompute
  f = jax.checkpoint(lambda x: jnp.cos(jnp.sin(x)) * 2, policy=only_sin)
  np.testing.assert_allclose(jax.grad(f)(0.5), -2 * np.sin(np.sin(0.5)) * np.cos(0.5),
                             rtol=1e-6)
  off = adc.Offloadable(src="device", dst="pinned_host")
  assert off.dst == "pinned_host"
  g = jax.checkpoint(lambda x: jnp.sin(adc.checkpoint_name_fwd(x * 2, "a")),
                     policy=jax.checkpoint_policies.save_only_these_names("a"))
  assert "name[name=a]" in str(jax.make_jaxpr(g)(1.0))
  np.testing.assert_allclose(jax.jit(jax.grad(g))(1.0), 2 * np.cos(2.0), rtol=1e-6)


def test_experimental_names(tmp_path):
  from ember.experimental import checkify
  from ember.experimental.compilation_cache import compilation_cache as cc
  assert checkify.init_error.get() is None and checkify.init_error.get_exception() is None
  checkify.init_error.throw()   # nothing failed: no raise
  key = jax.random.key(0)
  assert not isinstance(key, jax.experimental.EArray)   # keys wrap their data, as in JAX
  assert issubclass(jax.experimental.EArray, jax.Array)
  before = jax.config.jax_compilation_cache_dir
  try:
    cc.set_cache_dir(str(tmp_path))
    assert jax.config.jax_compilation_cache_dir == str(tmp_path)
    cc.reset_cache()
  finally:
    jax.config.update("jax_compilation_cache_dir", before)
  from ember.example_libraries import optimizers
  assert optimizers.Array is __import__("typing").Any


# --- jax.debug ----------------------------------------------------------------------------

def test_debug_log_and_effects(caplog):
  import logging
  with caplog.at_level(logging.INFO, logger="ember"):
    jax.debug.log("x={}", 1.0)
    jax.jit(lambda x: jax.debug.log("y={x}", x=x))(2.0)
    jax.effects_barrier()
  msgs = [(r.getMessage(), r.levelname, r.filename) for r in caplog.records]
  assert ("x=1.0", "INFO", "test_toplevel_api.py") in msgs
  assert ("y=2.0", "INFO", "test_toplevel_api.py") in msgs
  (eff,) = jax.make_jaxpr(lambda x: jax.debug.print("{}", x))(1.0).jaxpr.effects
  assert isinstance(eff, jax.debug.DebugEffect) and isinstance(jax.debug.DebugEffect, type)
  (eff,) = jax.make_jaxpr(lambda x: jax.debug.print("{}", x, ordered=True))(1.0).jaxpr.effects
  assert isinstance(eff, jax.debug.OrderedDebugEffect)


# --- small modules: avals, dlpack, memory, version; Shard -----------------------------------

def test_small_modules():
  from ember import avals
  t = avals.f32[3, 4]
  assert t == jax.core.ShapedArray((3, 4), jnp.float32) and str(t) == "float32[3,4]"
  assert str(avals.bf16[2]) == "bfloat16[2]" and str(avals.bool[1]) == "bool[1]"
  assert str(avals.i4[()]) == "int4[]" and avals.float0[2].dtype == jax.float0
  assert jax.typeof(jnp.ones((3, 4))) == avals.f32[3, 4]
  assert jax.dlpack.is_supported_dtype(np.float32) and jax.dlpack.is_supported_dtype("bfloat16")
  assert not jax.dlpack.is_supported_dtype(jnp.float8_e4m3fn)
  with pytest.raises(TypeError, match="Expected a string or dtype-like"):
    jax.dlpack.is_supported_dtype(None)
  np.testing.assert_array_equal(jax.dlpack.from_dlpack(np.arange(3)), [0, 1, 2])
  assert [s.name for s in jax.memory.Space] == ["Device", "Host", "Any"]
  assert repr(jax.memory.Space.Host) == "MemorySpace.Host"
  r = jax.new_ref(jnp.ones(2), memory_space=jax.memory.Space.Device)
  np.testing.assert_array_equal(jax.freeze(r), [1.0, 1.0])
  assert jax.version.__version__ == jax.__version__
  assert jax.version._version_as_tuple("0.12.1") == (0, 12, 1)
  (shard,) = jnp.arange(4.0).addressable_shards
  assert isinstance(shard, jax.Shard) and shard.replica_id == 0
  np.testing.assert_array_equal(shard.data, [0.0, 1.0, 2.0, 3.0])


def test_export_profile_data(tmp_path):
  import os
  with jax.profiler.trace(None) as session:
    jax.jit(lambda x: x * 2)(jnp.ones(3)).block_until_ready()
  jax.profiler.export_profile_data(session, tmp_path, session_id="run1")
  folder = tmp_path / "plugins" / "profile" / "run1"
  names = sorted(os.listdir(folder))
  assert len(names) == 2 and names[0].endswith(".trace.json.gz")
  assert names[1].endswith(".xplane.pb")
  data = jax.profiler.ProfileData.from_file(str(folder / names[1]))
  jax.profiler.export_profile_data(data, tmp_path / "again", create_perfetto_trace=True)
  (stamp,) = os.listdir(tmp_path / "again" / "plugins" / "profile")
  files = os.listdir(tmp_path / "again" / "plugins" / "profile" / stamp)
  assert "perfetto_trace.json.gz" in files and len(files) == 3
  with pytest.raises(TypeError, match="Expected ProfileData or ProfileSession"):
    jax.profiler.export_profile_data("x", tmp_path)
  running = jax.profiler.ProfileSession(None).start()
  try:
    with pytest.raises(RuntimeError, match="while it is running"):
      jax.profiler.export_profile_data(running, tmp_path)
  finally:
    running.stop()


# --- jax.experimental.multihost_utils (one process) -----------------------------------------

def test_host_local_and_global_arrays():
  from ember.experimental import multihost_utils as mh
  mesh = jax.make_mesh((1,), ("x",))
  g = mh.host_local_array_to_global_array(np.arange(4.0), mesh, mh.P("x"))
  np.testing.assert_array_equal(g, [0.0, 1.0, 2.0, 3.0])
  assert g.sharding == jax.NamedSharding(mesh, jax.P("x"))
  tree = mh.host_local_array_to_global_array(
      {"a": np.arange(4.0), "b": jnp.ones((2, 2))}, mesh, {"a": jax.P("x"), "b": jax.P()})
  assert tree["b"].sharding.spec == jax.P() and tree["a"].sharding.spec == jax.P("x")
  local = mh.global_array_to_host_local_array(g, mesh, jax.P("x"))
  np.testing.assert_array_equal(local, [0.0, 1.0, 2.0, 3.0])
  assert local.sharding == jax.NamedSharding(mesh, jax.P("x"))
  for f in (mh.host_local_array_to_global_array, mh.global_array_to_host_local_array):
    np.testing.assert_array_equal(jax.jit(lambda x: f(x, mesh, jax.P("x")))(np.arange(4.0)),
                                  [0.0, 1.0, 2.0, 3.0])
  assert mh.reached_preemption_sync_point(0) is False   # no distributed runtime
  err = mh.ProcessFailureError({jax.devices()[0]})
  assert err.failed_devices == {jax.devices()[0]} and "Devices failed" in str(err)
  assert mh.P is jax.P


def test_use_abstract_mesh_and_explicit_axes():
  from ember.sharding import AbstractMesh, explicit_axes, get_abstract_mesh, use_abstract_mesh
  assert jax.use_abstract_mesh is use_abstract_mesh
  mesh = jax.make_mesh((1,), ("x",))
  assert get_abstract_mesh().empty
  with use_abstract_mesh(mesh.abstract_mesh):
    assert get_abstract_mesh() == mesh.abstract_mesh and jax.get_mesh().empty
  assert get_abstract_mesh().empty
  with pytest.raises(ValueError, match="Expected mesh of type `jax.sharding.AbstractMesh`"):
    with use_abstract_mesh(mesh):
      pass
  with pytest.raises(ValueError, match="cannot change the size of the mesh"):
    with use_abstract_mesh(mesh.abstract_mesh):
      with use_abstract_mesh(AbstractMesh((2,), ("z",))):
        pass
  f = explicit_axes(lambda x: x * 2, in_sharding=jax.P("x"))
  with pytest.raises(ValueError, match="Context mesh cannot be empty"):
    f(jnp.ones(2))
  with jax.set_mesh(mesh):
    np.testing.assert_array_equal(f(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_array_equal(jax.jit(f)(jnp.ones(2)), [2.0, 2.0])
    g = explicit_axes(lambda x: x + 1)
    np.testing.assert_array_equal(g(jnp.ones(2), in_sharding=jax.P()), [2.0, 2.0])
    with pytest.raises(TypeError, match="Missing required keyword argument: 'in_sharding'"):
      g(jnp.ones(2))


def test_no_execution_and_user_contexts():
  x = jnp.ones(3)
  f = jax.jit(jnp.sin)
  with jax.no_execution(True):
    with pytest.raises(RuntimeError, match=r"execute function jit\(sin\), but the "
                                           "no_execution config option is set"):
      jnp.sin(x)
    with pytest.raises(RuntimeError, match="no_execution"):
      f(x)
    assert "sin" in str(jax.make_jaxpr(jnp.sin)(x))
    assert "stablehlo.sine" in f.lower(x).as_text()
  assert jax.no_execution.value is False
  np.testing.assert_allclose(f(x), np.sin(np.ones(3)), rtol=1e-6)
  traces = []

  @jax.jit
  def g(v):
    traces.append(1)
    return v * 2
  ctx = jax.make_user_context(default_value=None)
  assert ctx.value is None
  g(1.0), g(1.0)
  with ctx(1):
    assert ctx.value == 1
    g(1.0), g(1.0)
  with ctx(2):
    g(1.0)
  assert g(1.0) == 2.0 and len(traces) == 3   # JAX 0.12.1: one trace per value


def test_smap():
  auto = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  with jax.set_mesh(auto):
    f = jax.smap(lambda x: x * 2, in_axes=0, out_axes=0, axis_name="x")
    np.testing.assert_array_equal(f(jnp.arange(4.0)), [0.0, 2.0, 4.0, 6.0])
    g = jax.smap(lambda x, y: jax.lax.psum(x, "x") + y, in_axes=(0, None), out_axes=0,
                 axis_name="x")
    np.testing.assert_array_equal(g(jnp.arange(4.0), 1.0), [1.0, 2.0, 3.0, 4.0])
    h = jax.jit(jax.smap(lambda x: x.sum(1, keepdims=True), in_axes=1, out_axes=1,
                         axis_name="x"))
    np.testing.assert_array_equal(h(jnp.ones((2, 3))), [[3.0], [3.0]])
    k = jax.smap(in_axes=0, out_axes=0, axis_name="x")(lambda x: jax.lax.axis_index("x") + x)
    np.testing.assert_array_equal(k(jnp.ones(2)), [1.0, 1.0])
    with pytest.raises(TypeError, match="smap in_axes must be an int"):
      jax.smap(lambda x: x, in_axes=[0], out_axes=0, axis_name="x")
    with pytest.raises(TypeError, match="smap axis_name should be a `str`"):
      jax.smap(lambda x: x, in_axes=0, out_axes=0, axis_name=("x",))
    with pytest.raises(TypeError, match="in_axes was not specified .* AxisType.Auto"):
      jax.smap(lambda x: x, out_axes=0, axis_name="x")(jnp.ones(2))
  with jax.set_mesh(jax.make_mesh((1,), ("x",))):   # Explicit: in_axes inferred
    np.testing.assert_array_equal(
        jax.smap(lambda x: x + 1, out_axes=None, axis_name="x")(jnp.ones(2)), [2.0, 2.0])
  with pytest.raises(ValueError, match="context mesh cannot be empty"):
    jax.smap(lambda x: x, in_axes=0, out_axes=0, axis_name="x")(jnp.ones(2))


class _Dev:
  platform = "cpu"

  def __init__(self, i):
    self.id = i


class _FourDeviceSharding:
  """A 2 x 2 mesh's blocks of a (4, 8) array, as NamedSharding gives them on 4 devices:
  `by_rows_and_cols` for P('a', 'b'), else P('b') (rows by b, replicated over a)."""

  def __init__(self, by_rows_and_cols):
    self.by_rows_and_cols = by_rows_and_cols

  def devices_indices_map(self, shape):
    out = {}
    for a in range(2):
      for b in range(2):
        if self.by_rows_and_cols:
          out[_Dev(2 * a + b)] = (slice(2 * a, 2 * a + 2), slice(4 * b, 4 * b + 4))
        else:
          out[_Dev(2 * a + b)] = (slice(2 * b, 2 * b + 2), slice(None))
    return out


# JAX 0.12.1 with 4 CPU devices: visualize_sharding((4, 8), NamedSharding(mesh_2x2, P('a',
# 'b'))) and (..., P('b')), printed without a terminal (no colors: boxed)
_GRID = """\
┌───────────────────────┬───────────────────────┐
│                       │                       │
│         CPU 0         │         CPU 1         │
│                       │                       │
│                       │                       │
├───────────────────────┼───────────────────────┤
│                       │                       │
│         CPU 2         │         CPU 3         │
│                       │                       │
│                       │                       │
└───────────────────────┴───────────────────────┘
"""
_ROWS = """\
┌────────────────────────────────────────────────┐
│                                                │
│                    CPU 0,2                     │
│                                                │
│                                                │
├────────────────────────────────────────────────┤
│                                                │
│                    CPU 1,3                     │
│                                                │
│                                                │
└────────────────────────────────────────────────┘
"""


def test_visualize_sharding(capsys):
  pytest.importorskip("rich")
  jax.debug.visualize_array_sharding(jnp.ones(3))
  assert capsys.readouterr().out.strip("\n") == "┌───────┐\n│ CPU 0 │\n└───────┘"
  jax.debug.visualize_array_sharding(jnp.ones((2, 4)))
  lines = capsys.readouterr().out.strip("\n").split("\n")
  assert len(lines) == 11 and lines[5].strip("│ ") == "CPU 0" and len(lines[0]) == 50
  jax.debug.visualize_sharding((4, 8), _FourDeviceSharding(True))
  assert capsys.readouterr().out.strip("\n") == _GRID.strip("\n")
  jax.debug.visualize_sharding((4, 8), _FourDeviceSharding(False))
  assert capsys.readouterr().out.strip("\n") == _ROWS.strip("\n")
  with pytest.raises(ValueError, match="only works for shapes with 1 and 2 dimensions"):
    jax.debug.visualize_sharding((2, 2, 2), jax.sharding.SingleDeviceSharding(jax.devices()[0]))
  with pytest.raises(TypeError, match="concrete arrays only"):
    jax.jit(jax.debug.visualize_array_sharding)(jnp.ones(2))


def test_inline_options():
  assert [m.value for m in jax.Inline] == ["jax_early", "jax_late", "xla_early", "xla_late",
                                           "auto"]
  for v in (jax.Inline.JAX_EARLY, jax.Inline.AUTO, True):
    assert jax.jit(lambda x: jax.jit(lambda y: y * 2, inline=v)(x))(1.0) == 2.0
  with pytest.raises(ValueError, match="Invalid inline option: 'x'"):
    jax.jit(lambda y: y, inline="x")
  early = str(jax.make_jaxpr(lambda x: jax.jit(lambda y: y * 2,
                                               inline=jax.Inline.JAX_EARLY)(x))(1.0))
  assert early == "{ lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }"   # JAX's
  for v in (True, jax.Inline.XLA_LATE):
    assert "jit[" in str(jax.make_jaxpr(lambda x: jax.jit(lambda y: y * 2, inline=v)(x))(1.0))
  inner = jax.jit(lambda y: y * y, inline=jax.Inline.JAX_EARLY)
  assert jax.grad(lambda x: inner(x))(3.0) == 6.0 and inner(2.0) == 4.0


_LEGACY = "Legacy uint32 key array passed as key to jax.random function"


def test_legacy_prng_key_and_default_prng_impl():
  import warnings
  raw = jax.random.PRNGKey(0)
  assert jax.legacy_prng_key.value == "allow"
  with jax.legacy_prng_key("warn"):
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      jax.random.normal(raw, (2,))
      jax.random.split(raw)
      jax.random.fold_in(raw, 1)
      jax.random.normal(jax.random.key(0))     # typed keys: no warning
      jax.jit(lambda k: jax.random.uniform(k))(raw)
    assert [str(x.message).startswith(_LEGACY) for x in w] == [True] * 4   # JAX 0.12.1: 4
  with jax.legacy_prng_key("error"):
    jax.random.PRNGKey(1)    # making one is fine
    with pytest.raises(ValueError, match=_LEGACY):
      jax.random.normal(raw)
  with pytest.raises(ValueError, match="'bogus' is not a valid LegacyPrngKeyState"):
    with jax.legacy_prng_key("bogus"):
      pass
  assert jax.default_prng_impl.value == "threefry2x32"
  with jax.default_prng_impl("threefry2x32"):
    assert str(jax.random.key(0).dtype) == "key<fry>"
  with pytest.raises(ValueError, match="new enum value must be in"):
    with jax.default_prng_impl("bogus"):
      pass
  with pytest.raises(ValueError, match="ember implements the 'threefry2x32' PRNG only"):
    with jax.default_prng_impl("rbg"):
      pass


def test_enable_checks_type_checks_traced_jaxprs(monkeypatch):
  from ember._src import core
  assert jax.enable_checks.value is False
  checked = []
  real = core.check_jaxpr
  monkeypatch.setattr(core, "check_jaxpr", lambda j: (checked.append(j), real(j)))

  def f(x):
    return jax.lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x) + jax.lax.scan(
        lambda c, v: (c + v, c), 0.0, x)[1]
  with jax.enable_checks(True):
    np.testing.assert_allclose(jax.jit(f)(jnp.arange(3.0)), np.sin(np.arange(3.0))
                               + np.array([0.0, 0.0, 1.0]), rtol=1e-6)
  assert len(checked) == 1
  jax.jit(lambda x: x + 1)(1.0)   # off again: no check
  assert len(checked) == 1
