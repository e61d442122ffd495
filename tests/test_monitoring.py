"""jax.monitoring: the listener registry (JAX's semantics) and the events ember records at
JAX's moments (compile stages, persistent compilation cache)."""
import pytest

import ember
import ember.numpy as jnp
from ember import monitoring
from ember._src.driver import compilation


@pytest.fixture
def recorded():
  """Every kind of listener registered, recording into one list; all removed after."""
  log = []
  listeners = {
    "event": lambda e, **kw: log.append(("event", e, kw)),
    "duration": lambda e, d, **kw: log.append(("duration", e, d, kw)),
    "span": lambda e, s, t, **kw: log.append(("span", e, s, t, kw)),
    "scalar": lambda e, v, **kw: log.append(("scalar", e, v, kw)),
  }
  monitoring.register_event_listener(listeners["event"])
  monitoring.register_event_duration_secs_listener(listeners["duration"])
  monitoring.register_event_time_span_listener(listeners["span"])
  monitoring.register_scalar_listener(listeners["scalar"])
  yield log
  monitoring.clear_event_listeners()


def test_record_calls_each_kind_of_listener(recorded):
  monitoring.record_event("/my/event", tag="a", n=3)
  monitoring.record_event_duration_secs("/my/dur", 0.5, tag="b")
  monitoring.record_event_time_span("/my/span", 1.0, 2.5)
  monitoring.record_scalar("/my/scalar", 7, unit="x")
  assert recorded == [("event", "/my/event", {"tag": "a", "n": 3}),
                      ("duration", "/my/dur", 0.5, {"tag": "b"}),
                      ("span", "/my/span", 1.0, 2.5, {}),
                      ("scalar", "/my/scalar", 7, {"unit": "x"})]


def test_unregister_and_clear():
  seen = []
  a = lambda e, **kw: seen.append(("a", e))   # noqa: E731
  b = lambda e, **kw: seen.append(("b", e))   # noqa: E731
  monitoring.register_event_listener(a)
  monitoring.register_event_listener(b)
  monitoring.record_event("/x")
  monitoring.unregister_event_listener(a)
  monitoring.record_event("/y")
  assert seen == [("a", "/x"), ("b", "/x"), ("b", "/y")]
  with pytest.raises(AssertionError):   # as JAX: not registered
    monitoring.unregister_event_listener(a)
  d = lambda e, v, **kw: seen.append(("d", e))   # noqa: E731
  monitoring.register_event_duration_secs_listener(d)
  monitoring.unregister_event_duration_listener(d)
  s = lambda e, v, **kw: seen.append(("s", e))   # noqa: E731
  monitoring.register_scalar_listener(s)
  monitoring.unregister_scalar_listener(s)
  t = lambda e, s0, s1, **kw: seen.append(("t", e))   # noqa: E731
  monitoring.register_event_time_span_listener(t)
  monitoring.unregister_event_time_span_listener(t)
  monitoring.clear_event_listeners()
  monitoring.record_event("/z")
  monitoring.record_event_duration_secs("/z", 1.0)
  assert seen == [("a", "/x"), ("b", "/x"), ("b", "/y")]


def _stages(log, fun_name):
  return {(r[0], r[1]) for r in log if r[-1].get("fun_name") == fun_name}


def test_jit_records_trace_lower_and_compile(recorded):
  def monitored_fn(x):
    return jnp.sin(x) * 2.0
  ember.jit(monitored_fn)(jnp.ones(3)).block_until_ready()
  stages = _stages(recorded, "monitored_fn")
  for event in ("/jax/core/compile/jaxpr_trace_duration",
                "/jax/core/compile/jaxpr_to_mlir_module_duration",
                "/jax/core/compile/backend_compile_duration"):
    assert {("scalar", event), ("duration", event), ("span", event)} <= stages
  for r in recorded:
    if r[0] == "duration":
      assert r[2] >= 0.0
    if r[0] == "span":
      assert r[3] >= r[2] > 1e9   # wall-clock seconds, as time.time()
  n = len(recorded)
  ember.jit(monitored_fn)(jnp.ones(3)).block_until_ready()   # a cache hit: nothing traced
  assert not any(r[-1].get("fun_name") == "monitored_fn" and r[1].endswith("trace_duration")
                 for r in recorded[n:])


def test_lower_records_lowering(recorded):
  def lowered_fn(x):
    return x + 1.0
  ember.jit(lowered_fn).lower(jnp.ones(2))
  assert ("duration", "/jax/core/compile/jaxpr_to_mlir_module_duration") in _stages(
      recorded, "lowered_fn")


def test_persistent_cache_events(cache, recorded):
  def cached_fn(x):
    return jnp.cos(x) - x
  x = jnp.ones(4)
  ember.jit(cached_fn).lower(x).compile()
  events = [r[1] for r in recorded if r[0] == "event"]
  assert events.count("/jax/compilation_cache/compile_requests_use_cache") == 1
  assert events.count("/jax/compilation_cache/cache_misses") == 1
  assert "/jax/compilation_cache/cache_hits" not in events
  compilation._executables.clear()
  del recorded[:]
  ember.jit(cached_fn).lower(x).compile()
  events = [r[1] for r in recorded if r[0] == "event"]
  assert events.count("/jax/compilation_cache/cache_hits") == 1
  assert "/jax/compilation_cache/cache_misses" not in events
  assert any(r[0] == "duration" and r[1] == "/jax/compilation_cache/cache_retrieval_time_sec"
             for r in recorded)
