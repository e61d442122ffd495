"""JAX 0.12's config states (jax.transfer_guard*, threefry_partitionable, softmax_custom_jvp,
allow_f16_reductions and the states that do nothing on one CPU process): their values,
validation, context managers, and their effects, against what JAX 0.12.1 does on CPU."""
import logging

import numpy as np
import pytest

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember.errors import JaxRuntimeError

# (top-level state, config option, default) as in JAX 0.12.1
STATES = [
    ("threefry_partitionable", "jax_threefry_partitionable", True),
    ("softmax_custom_jvp", "jax_softmax_custom_jvp", True),
    ("allow_f16_reductions", "jax_allow_f16_reductions", True),
    ("thread_guard", "jax_thread_guard", False),
    ("enable_custom_prng", "jax_enable_custom_prng", False),
    ("jax2tf_associative_scan_reductions", "jax2tf_associative_scan_reductions", False),
    ("remove_size_one_mesh_axis_from_type", "jax_remove_size_one_mesh_axis_from_type", False),
    ("auto_pcast", "jax_auto_pcast", True),
    ("array_garbage_collection_guard", "jax_array_garbage_collection_guard", None),
    ("transfer_guard_host_to_device", "jax_transfer_guard_host_to_device", None),
    ("transfer_guard_device_to_host", "jax_transfer_guard_device_to_host", None),
    ("transfer_guard_device_to_device", "jax_transfer_guard_device_to_device", None),
]
BOOL_STATES = [s for s in STATES if isinstance(s[2], bool)]
GUARD_LEVELS = ["allow", "log", "disallow", "log_explicit", "disallow_explicit"]


@pytest.mark.parametrize("name,option,default", STATES)
def test_default_value_and_context_restore(name, option, default):
  state = getattr(jax, name)
  assert state.value == default and getattr(jax.config, option) == default
  new = (not default) if isinstance(default, bool) else (
      "log" if "garbage" in name else "disallow")
  with state(new):
    assert state.value == new and jax.config.read(option) == new
  assert state.value == default
  jax.config.update(option, new)
  try:
    assert state.value == new
  finally:
    jax.config.update(option, default)


@pytest.mark.parametrize("name,option,default", BOOL_STATES)
def test_bool_states_store_truthiness(name, option, default):
  # JAX's bool_state: any value is taken as its truth value, None as False
  state = getattr(jax, name)
  with state("yes"):
    assert state.value is True
  with state(None):
    assert state.value is False
  jax.config.update(option, 1)
  try:
    assert getattr(jax.config, option) is True
  finally:
    jax.config.update(option, default)


@pytest.mark.parametrize("option,levels", [
    ("jax_transfer_guard", GUARD_LEVELS), ("jax_transfer_guard_host_to_device", GUARD_LEVELS),
    ("jax_array_garbage_collection_guard", ["allow", "log", "fatal"])])
@pytest.mark.parametrize("bad", ["foo", True, 1])
def test_enum_states_reject_other_values(option, levels, bad):
  with pytest.raises(ValueError, match=r"new enum value must be None or in "
                     + __import__("re").escape(str(levels))):
    jax.config.update(option, bad)
  assert getattr(jax.config, option) is None


def test_transfer_guard_sets_every_direction_and_restores():
  assert jax.config.jax_transfer_guard is None
  with jax.transfer_guard("log"):
    assert jax.config.jax_transfer_guard == "log"
    for d in ("host_to_device", "device_to_host", "device_to_device"):
      assert getattr(jax, f"transfer_guard_{d}").value == "log"
    with jax.transfer_guard_host_to_device("disallow"):
      assert jax.transfer_guard_device_to_host.value == "log"
      assert jax.transfer_guard_host_to_device.value == "disallow"
    assert jax.transfer_guard_host_to_device.value == "log"
  assert jax.config.jax_transfer_guard is None
  assert jax.transfer_guard_device_to_device.value is None
  jax.config.update("jax_transfer_guard", "disallow")
  try:
    assert jax.config.jax_transfer_guard_device_to_host == "disallow"
  finally:
    jax.config.update("jax_transfer_guard", None)
  assert jax.config.jax_transfer_guard_host_to_device is None
  with pytest.raises(ValueError, match="new enum value"):
    with jax.transfer_guard("nope"):
      pass


_F = jax.jit(lambda x: x * 2)

# (what, thunk, explicit) for host-to-device transfers JAX 0.12.1 guards on CPU
_TRANSFERS = [
    ("asarray", lambda: jnp.asarray(np.ones(3, np.float32)), False),
    ("array_list", lambda: jnp.array([1.0, 2.0]), False),
    ("jit_numpy_arg", lambda: _F(np.ones(3, np.float32)), False),
    ("jit_python_arg", lambda: _F(1.0), False),
    ("device_put", lambda: jax.device_put(np.ones(3, np.float32)), True),
]
# (what, thunk) that JAX 0.12.1 never guards on CPU: Array arguments, device-to-host reads
_A = jnp.arange(3.0)
_NOT_TRANSFERS = [
    ("jit_array_arg", lambda: _F(_A)), ("asarray_array", lambda: jnp.asarray(_A)),
    ("np_asarray", lambda: np.asarray(_A)), ("tolist", lambda: _A.tolist()),
    ("device_get", lambda: jax.device_get(_A)), ("device_put_array", lambda: jax.device_put(_A)),
]


@pytest.mark.parametrize("level", GUARD_LEVELS)
def test_transfer_guard_host_to_device_levels(level, caplog):
  _F(_A)
  _F(np.ones(3, np.float32))   # compiled before the guard: the guard does not depend on it
  for what, thunk, explicit in _TRANSFERS:
    fires = level in ("log_explicit", "disallow_explicit") or (
        not explicit and level in ("log", "disallow"))
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.transfer_guard(level):
      if fires and level.startswith("disallow"):
        with pytest.raises(JaxRuntimeError, match="INVALID_ARGUMENT: Disallowed "
                           "host-to-device transfer: aval=ShapedArray"):
          thunk()
      else:
        thunk()
    logged = [r for r in caplog.records if "host-to-device transfer" in r.getMessage()]
    assert bool(logged) == (fires and level.startswith("log")), what
  caplog.clear()
  with caplog.at_level(logging.WARNING), jax.transfer_guard(level):
    for what, thunk in _NOT_TRANSFERS:
      thunk()
  assert not [r for r in caplog.records if "transfer" in r.getMessage()]


def test_transfer_guard_python_scalar_aval_is_weak():
  with jax.transfer_guard("disallow"):
    with pytest.raises(JaxRuntimeError, match=r"float32\[\], weak_type=True"):
      _F(1.0)
  np.testing.assert_array_equal(_F(np.ones(2, np.float32)), [2.0, 2.0])   # fast path again


# JAX 0.12.1's values with jax_threefry_partitionable=False, key(42)
_LEGACY = {
    "u8": [45, 179, 215, 3, 244],
    "u16": [45869, 983, 33780],
    "u32": [[3134548294, 3733159049, 3746501087], [894150801, 801545058, 2363201431]],
    "u64": [13462782411356743825, 16033796027023006562, 16091099645456652183],
    "split": [[3134548294, 3733159049], [3746501087, 894150801], [801545058, 2363201431]],
    "uniform": [0.5741443634033203, 0.1001582145690918, 0.059461116790771484],
    "randint": [12, 43, 7, 29, 84],
    "legacy_split": [[2441914641, 1384938218], [3819641963, 2025898573]],
}


def _legacy_draws(k):
  return {
      "u8": jax.random.bits(k, (5,), jnp.uint8), "u16": jax.random.bits(k, (3,), jnp.uint16),
      "u32": jax.random.bits(k, (2, 3)), "split": jax.random.key_data(jax.random.split(k, 3)),
      "uniform": jax.random.uniform(k, (3,)), "randint": jax.random.randint(k, (5,), 0, 100),
  }


def test_threefry_non_partitionable_matches_jax():
  k = jax.random.key(42)
  with jax.threefry_partitionable(False):
    got = _legacy_draws(k)
    got["legacy_split"] = jax.random.split(jax.random.PRNGKey(1), 2)
    jitted = jax.jit(_legacy_draws)(k)
    with jax.enable_x64(True):
      got["u64"] = jax.random.bits(k, (3,), jnp.uint64)
  for name, want in _LEGACY.items():
    have = np.asarray(got[name])
    np.testing.assert_array_equal(have, np.asarray(want, have.dtype), err_msg=name)
  for name, value in jitted.items():
    np.testing.assert_array_equal(value, got[name], err_msg=name)
  # the default (partitionable) scheme again, after the block and in the same jit
  np.testing.assert_array_equal(jax.random.bits(k, (3,)), [2098992034, 2919706841, 2646866425])
  np.testing.assert_array_equal(jax.jit(_legacy_draws)(k)["u32"].ravel()[:3],
                                jax.random.bits(k, (2, 3)).ravel()[:3])


def test_softmax_custom_jvp_jaxpr_is_jaxs():
  assert str(jax.make_jaxpr(jax.nn.softmax)(np.ones((2, 3), np.float32))) == """\
{ lambda ; a:f32[2,3]. let
    b:f32[2,3] = custom_jvp_call[
      name=_softmax
      call_jaxpr={ lambda ; c:f32[2,3]. let
          d:f32[2] = reduce_max[axes=(1,) out_sharding=None] c
          e:f32[2] = max -inf:f32[] d
          f:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] e
          g:f32[2,3] = sub c f
          h:f32[2,3] = exp g
          i:f32[2] = reduce_sum[axes=(1,) out_sharding=None] h
          j:f32[2,1] = broadcast_in_dim[broadcast_dimensions=(0,)] i
          k:f32[2,3] = div h j
        in (k,) }
      jvp=_softmax_jvp
      symbolic_zeros=False
    ] a
  in (b,) }"""


def test_softmax_custom_jvp_switches_the_rule():
  x = jnp.array([1.0, 2.0, 3.0])
  w = jnp.array([0.3, -1.0, 2.0])
  want = [-0.07317348, -0.5170531, 0.59022665]   # JAX 0.12.1, both settings
  f = jax.jit(lambda x: jax.nn.softmax(x))
  for flag in (True, False):
    with jax.softmax_custom_jvp(flag):
      g = jax.grad(lambda x: jnp.sum(jax.nn.softmax(x) * w))(x)
      np.testing.assert_allclose(g, want, rtol=1e-6)
      jaxpr = str(jax.make_jaxpr(jax.nn.softmax)(x))
      assert ("custom_jvp" in jaxpr) == flag
      np.testing.assert_allclose(f(x), [0.09003057, 0.24472848, 0.66524094], rtol=1e-6)
      gm = jax.grad(lambda x: jnp.sum(jax.nn.softmax(
          x, where=jnp.array([True, False, True])) * w))(x)
      np.testing.assert_allclose(gm, [-0.17848907, 0.0, 0.17848921], rtol=1e-6)


def test_allow_f16_reductions_false_rejects_f16_sums():
  x16 = jnp.ones(3, jnp.float16)
  with jax.allow_f16_reductions(False):
    with pytest.raises(ValueError, match=r"reduce_sum on operand f16\[3\] is not allowed "
                       "when jax_allow_f16_reductions=False"):
      lax.reduce_sum(x16, (0,))
    with pytest.raises(ValueError, match=r"bf16\[2,3\]"):
      jax.jit(lambda x: lax.reduce_sum(x, (0, 1)))(jnp.ones((2, 3), jnp.bfloat16))
    # size-one axes, and jnp.sum (which sums float16 in float32), still work, as in JAX
    np.testing.assert_array_equal(lax.reduce_sum(jnp.ones((3, 1), jnp.bfloat16), (1,)), 1)
    assert float(jnp.sum(x16)) == 3.0
  assert float(lax.reduce_sum(x16, (0,))) == 3.0


@pytest.mark.parametrize("name", ["thread_guard", "array_garbage_collection_guard",
                                  "enable_custom_prng", "jax2tf_associative_scan_reductions",
                                  "remove_size_one_mesh_axis_from_type", "auto_pcast"])
def test_no_effect_states_say_so(name):
  doc = getattr(jax, name).__doc__
  assert doc.startswith("Context manager for `") and "no effect on one CPU process" in doc
