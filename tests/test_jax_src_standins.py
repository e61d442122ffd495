"""The stand-ins for JAX internals that libraries import (ember._jax_src, reached as
jax._src.X under the alias) and the public pieces behind them: traceback filtering
(api_boundary, register_exclusion), source-info exclusions, linear_util/api_util/
partial_eval staging, opaque trace state, AbstractMesh, experimental.layout.

Expected values come from real JAX 0.12 (noted where they matter) or from NumPy."""
import importlib
import sys
import traceback

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import compat
from ember._src.base import traceback_util
from ember._src.base.config import config


@pytest.fixture
def alias():
  compat.install()
  yield
  compat.uninstall()


def test_standins_are_embers_objects(alias):
  from jax._src import core, dtypes
  from jax._src import traceback_util as tu
  import jax
  assert jax._src is sys.modules["ember._jax_src"]
  assert tu.api_boundary is traceback_util.api_boundary
  assert tu.register_exclusion is traceback_util.register_exclusion
  assert tu._exclude_paths is traceback_util._exclude_paths   # flax edits the list itself
  assert core.ShapedArray is ember.core.ShapedArray
  assert dtypes.extended is ember.dtypes.extended
  assert dtypes.ExtendedDType is ember.dtypes.ExtendedDType
  assert dtypes.DType is np.dtype and dtypes.finfo is ember.dtypes.finfo
  from jax._src import earray
  from jax._src.interpreters import pxla
  from ember._src.core.earray import EArray
  assert earray.EArray is EArray and core.physical_aval is ember._src.core.physical_aval
  assert set(pxla.global_result_handlers) == {core.ShapedArray}


@pytest.mark.parametrize("name", ["jax._src.interpreters.partial_eval", "jax._src.pjit"])
def test_modules_without_a_standin_raise_importerror(alias, name):
  with pytest.raises(ImportError, match="private module of JAX"):
    importlib.import_module(name)


def test_names_a_standin_lacks_raise_attributeerror(alias):
  import jax
  with pytest.raises(AttributeError, match="jax._src.pjit is a private module"):
    jax._src.pjit


@pytest.mark.parametrize("dtype, expected", [
    # JAX 0.12's supports_inf for these
    ("float32", True), ("bfloat16", True), ("float8_e5m2", True), ("float8_e4m3fn", False),
    ("float8_e4m3fnuz", False), ("float8_e5m2fnuz", False), ("float8_e4m3b11fnuz", False),
    ("int32", False), ("bool", False)])
def test_supports_inf(dtype, expected):
  from ember._jax_src import dtypes
  dt = getattr(jnp, dtype) if dtype not in ("bool",) else np.bool_
  assert dtypes.supports_inf(dt) is expected


# --- traceback filtering -----------------------------------------------------------------------

def _library(tmp_path, name="mylib_internal"):
  """A module in its own file: `run(f, *args)` calls f from a frame of that file."""
  path = tmp_path / f"{name}.py"
  path.write_text("def run(f, *args):\n  return f(*args)\n")
  sys.path.insert(0, str(tmp_path))
  try:
    return importlib.import_module(name), str(path)
  finally:
    sys.path.remove(str(tmp_path))
    sys.modules.pop(name, None)


@pytest.fixture
def exclusions(monkeypatch):
  monkeypatch.setattr(traceback_util, "_exclude_paths", list(traceback_util._exclude_paths))
  monkeypatch.setattr(traceback_util, "source_info_exclusions",
                      traceback_util.source_info_exclusions)


def _files(tb):
  return [f.f_code.co_filename for f, _ in traceback.walk_tb(tb)]


def _fail():
  raise ValueError("bad value")


def _raised(fn):
  try:
    fn()
  except ValueError as e:
    return e
  raise AssertionError("no exception")


@pytest.mark.parametrize("mode", ["auto", "quiet_remove_frames"])
def test_api_boundary_removes_excluded_frames(tmp_path, exclusions, mode):
  lib, path = _library(tmp_path)
  traceback_util.register_exclusion(path)
  with config._override("jax_traceback_filtering", mode):
    e = _raised(traceback_util.api_boundary(lambda: lib.run(_fail)))
  files = _files(e.__traceback__)
  assert path not in files and __file__ in files
  assert not any(f.startswith(traceback_util.EMBER_DIR) for f in files)
  assert e.__notes__ == ["--------------------\n" + traceback_util.SIMPLIFIED_MESSAGE]


def test_api_boundary_off_keeps_every_frame(tmp_path, exclusions):
  lib, path = _library(tmp_path)
  traceback_util.register_exclusion(path)
  with config._override("jax_traceback_filtering", "off"):
    e = _raised(traceback_util.api_boundary(lambda: lib.run(_fail)))
  assert path in _files(e.__traceback__) and not hasattr(e, "__notes__")


def test_api_boundary_remove_frames_keeps_the_whole_trace_as_cause(tmp_path, exclusions):
  lib, path = _library(tmp_path)
  traceback_util.register_exclusion(path)
  with config._override("jax_traceback_filtering", "remove_frames"):
    e = _raised(traceback_util.api_boundary(lambda: lib.run(_fail)))
  assert path not in _files(e.__traceback__)
  assert isinstance(e.__cause__, traceback_util.UnfilteredStackTrace)
  assert path in _files(e.__cause__.__traceback__)
  assert "ValueError: bad value" in str(e.__cause__)


def test_nested_boundaries_filter_once(tmp_path, exclusions):
  inner = traceback_util.api_boundary(_fail)
  e = _raised(traceback_util.api_boundary(lambda: inner()))
  assert len(e.__notes__) == 1


def test_unregistered_library_frames_stay(tmp_path, exclusions):
  lib, path = _library(tmp_path, "mylib_public")
  e = _raised(traceback_util.api_boundary(lambda: lib.run(_fail)))
  assert path in _files(e.__traceback__)


def test_traceback_filtering_mode_is_checked():
  with pytest.raises(ValueError, match="jax_traceback_filtering must be one of"):
    config.update("jax_traceback_filtering", "sometimes")


# --- source info ------------------------------------------------------------------------------

def test_source_info_skips_registered_files(tmp_path, exclusions):
  lib, path = _library(tmp_path, "mylib_layers")

  def user_fn(x):
    return lib.run(jnp.sin, x)

  assert ember.make_jaxpr(user_fn)(1.0).jaxpr.eqns[0].source_info.file == path
  from ember.extend import source_info_util
  source_info_util.register_exclusion(path)
  info = ember.make_jaxpr(user_fn)(1.0).jaxpr.eqns[0].source_info
  assert info.file == __file__ and info.function == "user_fn"


# --- staging a WrappedFun (linear_util, api_util, partial_eval) as flax's nn.scan does -------

def _staged(fn, args):
  from ember import api_util
  from ember.extend import linear_util as lu
  from ember.interpreters import partial_eval as pe
  flat, tree = ember.tree_util.tree_flatten(args)
  dbg = api_util.debug_info("test", fn, args, {})
  f_flat, out_tree = api_util.flatten_fun_nokwargs(lu.wrap_init(fn, debug_info=dbg), tree)
  with pytest.raises(lu.StoreException, match="Store empty"):
    out_tree()
  avals = [ember.core.ShapedArray(np.shape(x), np.float32) for x in flat]
  jaxpr, out_avals, consts = pe.trace_to_jaxpr_dynamic(f_flat, avals)
  return jaxpr, out_avals, consts, out_tree(), flat


def test_trace_to_jaxpr_dynamic_hoists_consts_and_dce_drops_unused_inputs():
  from ember.interpreters import partial_eval as pe
  c = jnp.arange(3.0)

  def f(a, b):
    return {"s": jnp.sin(a) + c, "u": b * 2}, a

  jaxpr, out_avals, consts, out_tree, flat = _staged(f, (jnp.ones(3), jnp.ones(3)))
  # as JAX 0.12: the closed-over c is a leading invar, consts holds its value
  assert len(jaxpr.invars) == 3 and not jaxpr.constvars
  np.testing.assert_array_equal(consts[0], np.arange(3.0))
  assert [a.shape for a in out_avals] == [(3,)] * 3
  assert out_tree == ember.tree_util.tree_structure(({"s": 0, "u": 0}, 0))
  dced, used = pe.dce_jaxpr(jaxpr, [True, False, False])
  assert used == [True, True, False] and len(dced.eqns) == 2
  # flax evaluates the DCE'd jaxpr with the used consts and args as one list
  (out,) = ember.core.eval_jaxpr(dced, [consts[0], flat[0]])
  np.testing.assert_allclose(out, np.sin(1.0) + np.arange(3.0), rtol=1e-6)


def test_wrapped_fun_params_and_repr():
  from ember.extend import linear_util as lu
  wf = lu.wrap_init(lambda x, *, k: x * k, {"k": 3})
  assert wf.call_wrapped(2) == 6
  assert "Core: <lambda>" in repr(wf)


# --- trace state, meshes, layouts ---------------------------------------------------------------

def test_opaque_trace_state_tells_transformations_apart():
  from ember.extend.core import get_opaque_trace_state
  outside = get_opaque_trace_state(convention="flax")
  assert outside == get_opaque_trace_state()
  seen = []

  def f(x):
    seen.append(get_opaque_trace_state(convention="flax"))
    assert seen[-1] == get_opaque_trace_state()
    return x

  ember.jit(f)(1.0)
  ember.grad(f)(1.0)
  assert all(s != outside for s in seen) and seen[0] != seen[1]
  with pytest.raises(TypeError):
    hash(outside)


def test_abstract_mesh():
  from ember.sharding import AbstractMesh, AxisType, get_abstract_mesh
  m = get_abstract_mesh()   # nothing sets a mesh: JAX 0.12 gives the empty one
  assert m.empty and m.size == 0 and repr(m) == "AbstractMesh((), axis_types=())"
  a = AbstractMesh((2, 4), ("x", "y"))
  assert repr(a) == "AbstractMesh('x': 2, 'y': 4, axis_types=(Explicit, Explicit))"
  assert a.size == 8 and not a.empty and a == AbstractMesh((2, 4), ("x", "y"))
  assert a.axis_types == (AxisType.Explicit,) * 2 and dict(a.shape) == {"x": 2, "y": 4}
  mesh = ember.make_mesh((1,), ("d",))
  assert mesh.abstract_mesh == AbstractMesh((1,), ("d",))
  with pytest.raises(ValueError, match="one size per axis name"):
    AbstractMesh((2,), ("x", "y"))


def test_layout_format_is_the_arrays():
  from ember.experimental.layout import Format, Layout
  fmt = jnp.ones((2, 3)).format
  assert isinstance(fmt, Format) and fmt.layout == Layout((0, 1))


def test_nnx_and_chex_standins_are_embers_objects(alias):
  from jax._src import checkify, compiler
  from jax._src.state import types
  from jax._src.tree_util import _registry
  from ember._src.library import checkify as ember_checkify
  from ember.experimental import hijax  # a submodule: loaded by its import, not by ember's
  assert types.AbstractRef is hijax.AbstractRef
  for name in ("Error", "JaxException", "checkify", "user_checks"):
    assert getattr(checkify, name) is getattr(ember_checkify, name)
  # chex's restrict_backends patches one of these only when present: ember has neither
  assert not hasattr(compiler, "backend_compile_and_load")
  assert not hasattr(compiler, "backend_compile")


def test_tree_util_registry_has_jax_keys(alias):
  """As JAX 0.12's `_registry`: built-in containers and registered classes are keys;
  namedtuples (flattened by their fields, not registered) and leaves are not."""
  import collections
  from jax._src.tree_util import _registry

  class Point(collections.namedtuple("Point", "x y")):
    pass

  class Box:
    pass

  for t in (tuple, list, dict, type(None), collections.OrderedDict, collections.defaultdict,
            ember.tree_util.Partial):
    assert t in _registry
  for t in (Point, Box, int, np.ndarray, type(jnp.ones(2))):
    assert t not in _registry
  ember.tree_util.register_static(Box)
  assert Box in _registry and _registry[Box] is not None   # a live view
  assert len(_registry) == len(list(_registry))


def test_equinox_standins_are_embers_objects(alias):
  # equinox: jax._src.dispatch.wait_for_tokens (re-registered at exit), dtypes'
  # TypePromotionError (nn.Embedding), traceback_util.include_frame (error_if's stack)
  import jax._src.dispatch
  from jax._src import dtypes
  from jax._src import traceback_util as tu
  import jax
  assert jax._src.dispatch.wait_for_tokens is ember.effects_barrier
  assert dtypes.TypePromotionError is ember.dtypes.TypePromotionError
  assert tu.include_frame is traceback_util.include_frame
  assert not tu.include_frame(_ember_frame())
  assert tu.include_frame(sys._getframe())


def _ember_frame():
  """A frame of ember's own code (excluded from users' tracebacks)."""
  frames = []
  ember.pure_callback(lambda: frames.append(sys._getframe(1)) or np.float32(0),
                      ember.ShapeDtypeStruct((), np.float32))
  return frames[0]


def test_wait_for_tokens_waits_for_dispatched_callbacks(alias):
  import jax._src.dispatch
  seen = []
  f = ember.jit(lambda x: ember.debug.callback(lambda v: seen.append(float(v)), x) or x + 1)
  f(np.float32(2.0))
  jax._src.dispatch.wait_for_tokens()
  assert seen == [2.0]


def test_stages_are_embers_stage_classes(alias):
  import jax
  from ember._src.driver import compilation, jit
  assert jax.stages is ember.stages
  assert jax.stages.Wrapped is jit.PjitFunction
  f = ember.jit(lambda x: x * 2)
  traced = f.trace(np.float32(1.0))
  lowered = traced.lower()
  compiled = lowered.compile()
  assert isinstance(f, jax.stages.Wrapped) and isinstance(traced, jax.stages.Traced)
  assert isinstance(lowered, jax.stages.Lowered) and isinstance(compiled, jax.stages.Compiled)
  assert compilation.Compiled is jax.stages.Compiled
