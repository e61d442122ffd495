"""ember.profiler: traces written as Chrome Trace Event Format JSON, parsed back and checked
(format, annotations, one dispatch span per call, kernel spans named after the optimized
HLO with its cost analysis and named_scope op_names, compile stages, errors)."""
import functools
import gzip
import json
import os
import re
import socket
import threading
import time
import urllib.request
from collections import Counter

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.backends.cpu import dot_kernels, tiering
from ember._src.base import profiler_events
from ember._src.runtime import executor


@pytest.fixture(autouse=True)
def _no_background_compile():
  """A background tier-up compile (tiering.py) left over from an earlier test would be
  recorded in this test's trace: drop them (their executables keep their code)."""
  tiering.drop_pending()
  yield


def load(path):
  with gzip.open(path, "rt", encoding="utf-8") as f:
    return json.load(f)


def trace_file(log_dir):
  """The one <host>.trace.json.gz under log_dir, checking JAX's folder layout."""
  profile = os.path.join(log_dir, "plugins", "profile")
  (stamp,) = os.listdir(profile)
  assert re.fullmatch(r"\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d", stamp)
  folder = os.path.join(profile, stamp)
  assert f"{socket.gethostname()}.trace.json.gz" in os.listdir(folder)
  return os.path.join(folder, f"{socket.gethostname()}.trace.json.gz")


def validate(doc):
  """The Chrome Trace Event Format's rules for what ember writes: JSON object format,
  metadata events naming the process and every thread used, complete events with numeric
  ts/dur (microseconds), and per thread properly nested complete events."""
  assert doc["displayTimeUnit"] in ("ms", "ns")
  events = doc["traceEvents"]
  named_threads, named_procs, spans = set(), set(), []
  for e in events:
    assert isinstance(e["name"], str) and isinstance(e["pid"], int)
    assert isinstance(e.get("args", {}), dict)
    if e["ph"] == "M":
      assert e["name"] in ("process_name", "process_sort_index", "thread_name",
                           "thread_sort_index")
      if e["name"].startswith("thread"):
        assert isinstance(e["tid"], int)
      if e["name"].endswith("_name"):
        assert isinstance(e["args"]["name"], str)
        (named_threads if e["name"] == "thread_name" else named_procs).add(
            (e["pid"], e.get("tid")))
      else:
        assert isinstance(e["args"]["sort_index"], int)
    else:
      assert e["ph"] == "X", e
      assert isinstance(e["tid"], int)
      assert isinstance(e["ts"], (int, float)) and isinstance(e["dur"], (int, float))
      assert e["ts"] >= 0 and e["dur"] >= 0
      assert (e["pid"], e["tid"]) in named_threads and (e["pid"], None) in named_procs
      spans.append(e)
  by_thread = {}
  for e in spans:   # integer nanoseconds: no float rounding in the containment checks
    t0 = round(e["ts"] * 1000)
    by_thread.setdefault(e["tid"], []).append((t0, t0 + round(e["dur"] * 1000), e["name"]))
  for evs in by_thread.values():
    stack = []
    for t0, t1, name in sorted(evs, key=lambda s: (s[0], -s[1])):
      while stack and t0 >= stack[-1][1]:
        stack.pop()
      assert not stack or t1 <= stack[-1][1], (f"{name} [{t0}, {t1}] overlaps "
                                               f"{stack[-1][2]} {stack[-1][:2]}")
      stack.append((t0, t1, name))
  return spans


def children(spans, parent):
  """Spans on the parent's thread within its interval (the parent excluded)."""
  p0, p1 = parent["ts"], parent["ts"] + parent["dur"]
  return [e for e in spans if e is not parent and e["tid"] == parent["tid"]
          and e["ts"] >= p0 - 1e-3 and e["ts"] + e["dur"] <= p1 + 1e-3]



def make_step():
  @ember.jit
  def step(x, y):
    with ember.named_scope("my_matmul"):
      z = x @ y
    with ember.named_scope("my_epilogue"):
      return jnp.tanh(z * 0.5 + 1.0).sum(axis=1)
  return step


def kernel_spans(spans, module):
  return [e for e in spans if e.get("args", {}).get("hlo_module") == module
          and "hlo_op" in e["args"]]


@pytest.mark.parametrize("n", [16, 256])   # 16: runs inline; 256: on the executor thread
def test_steps_annotations_dispatch_kernels(tmp_path, monkeypatch, n):
  if n == 256:   # every call of more than a few bytes goes to the executor thread
    monkeypatch.setattr(executor, "INLINE_NS", 0)
  step = make_step()
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32))
  y = jnp.asarray(rng.standard_normal((n, n), dtype=np.float32))
  step(x, y).block_until_ready()                        # warm up: compile outside the trace
  compiled = step.lower(x, y).compile()
  hlo_text = compiled.as_text()
  with ember.profiler.trace(tmp_path) as session:
    for i in range(3):
      with ember.profiler.StepTraceAnnotation("train", step_num=i):
        out = step(x, y)
        out.block_until_ready()
  np.testing.assert_allclose(
      np.asarray(out), np.tanh(np.asarray(x, np.float64) @ np.asarray(y, np.float64) * 0.5
                               + 1.0).sum(axis=1), rtol=1e-4, atol=1e-4)  # f32 dot of n terms
  doc = load(trace_file(tmp_path))
  assert doc["metadata"] == {"highres-ticks": True}
  spans = validate(doc)
  assert session.files == [trace_file(tmp_path), trace_file(tmp_path).replace(
      ".trace.json.gz", ".xplane.pb")]      # the XSpace: tests/test_profiler_xplane.py
  assert session.events == doc["traceEvents"]

  names = Counter(e["name"] for e in spans)
  assert names["train"] == 3 and names["PjitFunction(step)"] == 3
  steps = sorted((e for e in spans if e["name"] == "train"), key=lambda e: e["ts"])
  assert [e["args"] for e in steps] == [{"step_num": str(i)} for i in range(3)]
  for s in steps:    # each step holds exactly its one dispatch span (same thread)
    assert [e["name"] for e in children(spans, s)].count("PjitFunction(step)") == 1
  assert not any(e["name"].startswith(("compile", "trace jit", "lower")) for e in spans)

  # executions: one `jit_step` span per call, holding one span per thunk
  execs = [e for e in spans if e["name"] == "jit_step"]
  assert len(execs) == 3
  kernels = kernel_spans(spans, "jit_step")
  assert kernels
  for k in kernels:
    assert re.search(rf"%{re.escape(k['name'])} = ", hlo_text), k["name"]
    assert k["args"]["long_name"] in hlo_text
  cost = compiled.cost_analysis()
  for e in execs:
    inside = [k for k in children(spans, e) if k in kernels]
    assert sum(k["args"]["flops"] for k in inside) == cost["flops"]
    assert sum(k["args"]["transcendentals"] for k in inside) == cost["transcendentals"]
    assert sum(k["args"]["bytes_accessed"] for k in inside) == cost["bytes accessed"]
  # named_scope reaches the kernels' op_names (the dot's own, the fusion's fused ones)
  op_names = " ".join(k["args"].get("op_name", "") + " " + k["args"].get("fused_op_names", "")
                      for k in kernels)
  assert "jit(step)/my_matmul/dot_general" in op_names and "my_epilogue/tanh" in op_names

  threads = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["name"] == "thread_name"}
  main = [t for t, name in threads.items() if name == "python"]
  assert len(main) == 1
  assert {e["tid"] for e in steps} == set(main)
  where = {threads[e["tid"]] for e in execs}
  if n == 256:   # dispatched asynchronously, run by the device's executor thread
    assert where == {"ember-executor-cpu:0"}
  else:          # a few KB: runs inline, inside the dispatch span
    assert where == {"python"}
    for d in (e for e in spans if e["name"] == "PjitFunction(step)"):
      assert [c["name"] for c in children(spans, d)].count("jit_step") == 1


def test_compile_stages_and_loops(tmp_path, monkeypatch):
  # the dot on the BLAS path (not the generated kernel AVX-512 hosts give it)
  monkeypatch.setattr(dot_kernels, "MAX_A_BYTES", 0)
  m = jnp.asarray(np.eye(128, dtype=np.float32) * 0.5)

  @ember.jit
  def loop(x):   # a BLAS dot in the body: the loop runs on compiled sub-executables
    return lax.fori_loop(0, 3, lambda i, c: jnp.sin(c @ m), x)

  x = jnp.ones((128, 128), jnp.float32)
  with ember.profiler.trace(tmp_path):
    out = loop(x)
    out.block_until_ready()
  ref = np.ones((128, 128))
  for _ in range(3):
    ref = np.sin(ref @ (np.eye(128) * 0.5))
  np.testing.assert_allclose(np.asarray(out), ref, rtol=1e-6, atol=1e-6)
  spans = validate(load(trace_file(tmp_path)))
  names = Counter(e["name"] for e in spans)
  for stage in ("trace jit(loop)", "lower jit(loop)", "compile jit(loop)", "hlo_passes",
                "buffer_assignment", "backend"):
    assert names[stage] == 1, stage
  (comp,) = [e for e in spans if e["name"] == "compile jit(loop)"]
  inner = {e["name"] for e in children(spans, comp)}
  assert {"hlo_passes", "buffer_assignment", "backend"} <= inner
  (dispatch,) = [e for e in spans if e["name"] == "PjitFunction(loop)"]
  assert comp in children(spans, dispatch)

  hlo_text = loop.lower(x).compile().as_text()
  (whl,) = [e for e in spans if e["name"] == "while"]
  assert whl["args"]["kind"] == "while" and whl["args"]["op_name"] == "jit(loop)/scan"
  inside = children(spans, whl)
  bodies = [e for e in inside if e["args"].get("hlo_op") is None and e["name"] != "while"]
  # 4 condition runs and 3 body runs, each a span named after its computation
  assert len(bodies) == 7
  for b in bodies:
    assert re.search(rf"%{re.escape(b['name'])} \(", hlo_text), b["name"]
  dots = [e for e in inside if e["args"].get("kind") == "dot"]
  assert len(dots) == 3 and all(d["args"]["flops"] == 2 * 128 ** 3 for d in dots)


def test_start_stop_errors_and_functions(tmp_path):
  with pytest.raises(RuntimeError, match="No profile started"):
    ember.profiler.stop_trace()
  session = ember.profiler.start_trace(str(tmp_path))
  assert session.is_running and profiler_events.active
  with pytest.raises(RuntimeError, match="already been started. Only one profile"):
    ember.profiler.start_trace(str(tmp_path))
  with pytest.raises(RuntimeError, match="already been started"):
    with ember.profiler.trace(tmp_path):
      pass
  assert profiler_events.active          # the failed starts left the running trace alone

  @ember.profiler.annotate_function
  def plain(a):
    return a + 1

  @functools.partial(ember.profiler.annotate_function, name="renamed", tag="x")
  def other(a):
    return a * 2

  assert plain(1) == 2 and other(3) == 6 and plain.__name__ == "plain"
  with ember.profiler.TraceAnnotation("outer", k=1.5) as ann:
    ann.set_metadata(extra="yes")
    assert ember.profiler.TraceAnnotation.is_enabled()
  assert isinstance(ember.profiler.stop_trace(), ember.profiler.ProfileData)
  assert not session.is_running and not profiler_events.active
  with pytest.raises(RuntimeError, match="No profile started"):
    ember.profiler.stop_trace()
  spans = validate(load(trace_file(tmp_path)))
  got = {e["name"]: e.get("args") for e in spans}
  assert got == {"test_start_stop_errors_and_functions.<locals>.plain": None,
                 "renamed": {"tag": "x"}, "outer": {"k": "1.5", "extra": "yes"}}

  # an exception inside the block still ends (and writes) the trace
  with pytest.raises(ZeroDivisionError):
    with ember.profiler.trace(tmp_path / "err"):
      with ember.profiler.TraceAnnotation("boom"):
        1 / 0
  assert not profiler_events.active
  assert [e["name"] for e in validate(load(trace_file(tmp_path / "err")))] == ["boom"]

  with pytest.raises(ValueError, match="profiler_options"):
    ember.profiler.start_trace(tmp_path, profiler_options=object())
  with pytest.raises(RuntimeError, match="no profiler server"):
    ember.profiler.start_server(9999)
  with pytest.raises(ValueError, match="No active profiler server"):
    ember.profiler.stop_server()
  assert not profiler_events.active


def test_nothing_recorded_without_a_trace(tmp_path):
  f = ember.jit(lambda a: jnp.cos(a) * 2)
  x = jnp.arange(8, dtype=jnp.float32)
  ann = ember.profiler.TraceAnnotation("outside")
  with ann:
    np.testing.assert_allclose(np.asarray(f(x)), np.cos(np.arange(8)) * 2, rtol=1e-6)
    with ember.profiler.StepTraceAnnotation("s", step_num=0):
      f(x).block_until_ready()
    assert not ember.profiler.TraceAnnotation.is_enabled()
  assert profiler_events.spans == []
  late = ember.profiler.TraceAnnotation("entered before the trace")
  late.__enter__()
  tiering.wait_idle()     # f's background tier-up compile would be recorded in the trace
  with ember.profiler.trace(None) as session:   # in memory only: no files
    late.__exit__(None, None, None)
  assert session.files == [] and not os.listdir(tmp_path)
  assert [e for e in session.events if e["ph"] == "X"] == []
  f(x).block_until_ready()
  assert profiler_events.spans == []


def test_perfetto_trace_and_link(tmp_path, capsys):
  f = ember.jit(lambda a: a + 1)
  x = jnp.zeros(4, jnp.float32)
  f(x).block_until_ready()
  with ember.profiler.trace(tmp_path / "a", create_perfetto_trace=True):
    f(x).block_until_ready()
  folder = os.path.dirname(trace_file(tmp_path / "a"))
  perfetto = load(os.path.join(folder, "perfetto_trace.json.gz"))
  assert "metadata" not in perfetto     # Perfetto rejects unknown top-level keys
  assert perfetto["traceEvents"] == load(trace_file(tmp_path / "a"))["traceEvents"]
  assert Counter(e["name"] for e in validate(perfetto))["PjitFunction(<lambda>)"] == 1

  # create_perfetto_link: serves the file on 127.0.0.1:9001 until it has been fetched
  fetched = []

  def fetch():
    for _ in range(200):
      try:
        with urllib.request.urlopen("http://127.0.0.1:9001/perfetto_trace.json.gz",
                                    timeout=5) as r:
          fetched.append((r.headers["Access-Control-Allow-Origin"], r.read()))
          return
      except OSError:
        time.sleep(0.05)
  t = threading.Thread(target=fetch, daemon=True)
  t.start()
  with ember.profiler.trace(tmp_path / "b", create_perfetto_link=True):
    f(x).block_until_ready()
  t.join()
  folder = os.path.dirname(trace_file(tmp_path / "b"))
  ((origin, body),) = fetched
  assert origin == "*"
  with open(os.path.join(folder, "perfetto_trace.json.gz"), "rb") as fh:
    assert body == fh.read()
  assert ("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/perfetto_trace.json.gz"
          in capsys.readouterr().out)


def test_public_module():
  import ember as e2
  assert e2.profiler is ember.profiler
  for name in ("trace", "start_trace", "stop_trace", "TraceAnnotation", "StepTraceAnnotation",
               "annotate_function", "start_server", "stop_server", "ProfileSession",
               "device_memory_profile", "save_device_memory_profile"):
    assert callable(getattr(ember.profiler, name)), name
