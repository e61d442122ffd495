"""ember.profiler's XSpace: the `<host>.xplane.pb` every trace writes and `ProfileData`, which
reads it (and JAX's own files) with jax.profiler.ProfileData's API. The reference readings in
tests/data/jax_xplane.json were made by real JAX's reader (tests/data/make_jax_xplane.py)."""
import glob
import gzip
import json
import os
import re
import socket
import tempfile
from collections import Counter

import numpy as np
import pytest

import ember
import ember as jax
import ember.numpy as jnp
from ember._src.base.errors import JaxRuntimeError
from ember._src.runtime.profiler import xplane
from ember.profiler import ProfileData

DATA = os.path.join(os.path.dirname(__file__), "data")
with open(os.path.join(DATA, "jax_xplane.json"), encoding="utf-8") as _f:
  REF = json.load(_f)


def reading(pdata) -> list:
  """A ProfileData as plain data (the layout of tests/data/jax_xplane.json)."""
  return [{"name": p.name, "stats": [list(s) for s in p.stats],
           "lines": [{"name": ln.name,
                      "events": [{"name": e.name, "start_ns": e.start_ns,
                                  "duration_ns": e.duration_ns, "end_ns": e.end_ns,
                                  "stats": [list(s) for s in e.stats]} for e in ln.events]}
                     for ln in p.lines]}
          for p in pdata.planes]


def test_reads_a_jax_written_xplane_as_jax_does():
  pdata = ProfileData.from_file(os.path.join(DATA, "jax_cpu.xplane.pb"))
  assert reading(pdata) == REF["jax_trace"]
  # the parts the seed workflow and TensorBoard users read, spelled out
  assert [p.name for p in pdata.planes] == ["/host:metadata", "/host:CPU", "Task Environment"]
  cpu = pdata.find_plane_with_name("/host:CPU")
  assert pdata.find_plane_with_name("/device:GPU:0") is None
  lines = {ln.name: list(ln.events) for ln in cpu.lines}
  execute = next(v for k, v in lines.items() if k.startswith("tf_XLAExecute/"))
  kernels = [e for e in execute if dict(e.stats).get("hlo_module") == "jit__lambda"]
  assert kernels and all(e.duration_ns > 0 and e.end_ns == e.start_ns + e.duration_ns
                         for e in kernels)
  assert {e.name for e in kernels} == {dict(e.stats)["hlo_op"] for e in kernels}
  (step,) = [e for e in lines["python"] if e.name == "step_0"]
  assert step.stats == [("n", 3)]
  env = dict(pdata.find_plane_with_name("Task Environment").stats)
  assert env["profile_stop_time"] > env["profile_start_time"] > 1.7e18   # epoch ns


def test_encoder_matches_jax_reader():
  """ember's encoding of tricky events reads back, through ember's reader, exactly as real
  JAX's reader read it (ints of every sign and size, doubles, unicode, empty strings, zero
  times, a thread without a name, args of other types as their str)."""
  data = xplane.xspace_from_chrome_events(REF["synthetic_events"], "testhost")
  assert reading(ProfileData(data)) == REF["synthetic_jax_view"]
  assert reading(ProfileData.from_serialized_xspace(data)) == REF["synthetic_jax_view"]
  (plane,) = ProfileData(data).planes
  ev = next(next(plane.lines).events)
  assert type(ev.start_ns) is float and type(ev.duration_ns) is float
  assert [type(v) for _, v in ev.stats] == [str, int, int, int, int, int]


def test_trace_writes_xplane_and_returns_profile_data(tmp_path):
  f = ember.jit(lambda x, y: jnp.tanh(x @ y).sum(axis=0))
  rng = np.random.default_rng(0)
  x = jnp.asarray(rng.standard_normal((64, 64), dtype=np.float32))
  f(x, x).block_until_ready()
  ember.profiler.start_trace(str(tmp_path))
  for i in range(2):
    with ember.profiler.TraceAnnotation(f"step_{i}", i=i):
      out = f(x, x)
      out.block_until_ready()
  pdata = ember.profiler.stop_trace()
  np.testing.assert_allclose(
      np.asarray(out), np.tanh(np.asarray(x, np.float64) @ np.asarray(x, np.float64)).sum(0),
      rtol=1e-4, atol=1e-4)   # f32 dot of 64 terms, then a sum of 64
  assert isinstance(pdata, ProfileData)
  (folder,) = glob.glob(str(tmp_path / "plugins" / "profile" / "*"))
  host = socket.gethostname()
  assert sorted(os.listdir(folder)) == sorted([f"{host}.trace.json.gz", f"{host}.xplane.pb"])
  with open(os.path.join(folder, f"{host}.xplane.pb"), "rb") as fh:
    from_file = ProfileData.from_file(fh.name)
  assert reading(from_file) == reading(pdata)

  # every span of the JSON trace is an event of its thread's line: same name, times, args
  with gzip.open(os.path.join(folder, f"{host}.trace.json.gz"), "rt") as fh:
    doc = json.load(fh)["traceEvents"]
  threads = {e["tid"]: e["args"]["name"] for e in doc if e["name"] == "thread_name"}
  # (annotation kwargs: strings in the JSON, their typed values in the XSpace, as in JAX)
  want = Counter((threads[e["tid"]], e["name"], round(e["ts"] * 1e3), round(e["dur"] * 1e3),
                  tuple(sorted((e.get("args") or {}).items()))) for e in doc if e["ph"] == "X")
  [plane] = pdata.planes
  assert plane.name == "/host:CPU" and plane.stats == [("process_id", os.getpid())]
  got = Counter((ln.name, e.name, e.start_ns, e.duration_ns,
                 tuple(sorted((k, str(v) if e.name.startswith("step_") else v)
                              for k, v in e.stats)))
                for ln in plane.lines for e in ln.events)
  assert got == want and sum(want.values()) > 6
  names = Counter(n for _, n, *_ in got)
  assert names["step_0"] == names["step_1"] == 1 and names["PjitFunction(<lambda>)"] == 2
  steps = [e.stats for ln in plane.lines for e in ln.events if e.name.startswith("step_")]
  assert steps == [[("i", 0)], [("i", 1)]]
  lines = [ln.name for ln in plane.lines]
  assert lines[0] == "python" and len(set(lines)) == len(lines)
  dots = [dict(e.stats) for ln in plane.lines for e in ln.events if e.name == "dot_general"]
  assert len(dots) == 2 and all(d["flops"] == 2.0 * 64 ** 3 and d["kind"] == "kernel"
                                for d in dots)


def test_in_memory_trace_and_annotation_stats(tmp_path):
  with ember.profiler.trace(None) as session:
    with ember.profiler.TraceAnnotation("only", n=3, f=1.5, b=True, t="x", l=[1, 2]):
      pass
  assert session.files == [] and not os.listdir(tmp_path)
  events = [(ln.name, e.name, e.stats) for p in session.profile_data.planes
            for ln in p.lines for e in ln.events]
  # what JAX 0.12 records for these kwargs: typed stats here, strings in the JSON trace
  assert events == [("python", "only", [("n", 3), ("f", 1.5), ("b", 1), ("t", "x"),
                                         ("l", "[1, 2]")])]
  (span,) = [e for e in session.events if e["ph"] == "X"]
  assert span["args"] == {"b": "1", "f": "1.5", "l": "[1, 2]", "n": "3", "t": "x"}
  assert json.loads(json.dumps(span["args"])) == span["args"]


def test_errors_and_empty():
  assert list(ProfileData(b"").planes) == []
  assert ProfileData(b"").find_plane_with_name("/host:CPU") is None
  for bad in (b"garbage\xff\xff", b"\x0a\x05ab", b"\x08"):   # bad wire type, short, cut varint
    with pytest.raises(RuntimeError, match="Failed to parse XSpace from array"):
      ProfileData.from_serialized_xspace(bad)
  with pytest.raises(RuntimeError, match="Failed to parse XSpace from array"):
    list(ProfileData(b"\x0a\x02\x1a\x07").planes)    # a plane whose line is cut short
  with pytest.raises(JaxRuntimeError, match="NOT_FOUND: .*nope.xplane.pb; No such file"):
    ProfileData.from_file("/nonexistent/nope.xplane.pb")
  with pytest.raises(TypeError, match="expected bytes"):
    ProfileData("not bytes")


def test_seed_profiling_workflow():
  """The profiling section of a JAX tutorial, run unchanged with `import ember as jax` from
  "Collecting a trace" through the device memory profile (500x500 matrices, not 2000x2000,
  to stay fast); every assert of the original is kept."""
  SCRATCH = tempfile.mkdtemp(prefix="adv02_")
  old_key = jax.random.PRNGKey(0)
  new_key = jax.random.key(0)
  try:
    _ = new_key + 1
    raise AssertionError("a typed key can be added to?")
  except TypeError:
    pass
  assert old_key.dtype == jnp.uint32 and old_key.shape == (2,)
  assert jnp.issubdtype(new_key.dtype, jax.dtypes.prng_key) and new_key.shape == ()

  @jax.jit
  def complex_computation(x, y):
    z = jnp.dot(x, y)
    z = jnp.sin(z)
    return jnp.mean(z * x + y)

  kx, ky = jax.random.split(jax.random.key(0))
  x = jax.device_put(jax.random.normal(kx, (500, 500)))
  y = jax.device_put(jax.random.normal(ky, (500, 500)))
  complex_computation(x, y).block_until_ready()
  log_dir = tempfile.mkdtemp(prefix="jax_profiling_")
  jax.profiler.start_trace(log_dir)
  for _ in range(5):
    result = complex_computation(x, y)
    result.block_until_ready()
  jax.profiler.stop_trace()
  files = sorted(p for p in glob.glob(log_dir + "/**", recursive=True) if os.path.isfile(p))
  assert any(p.endswith(".xplane.pb") for p in files)
  assert any(p.endswith(".trace.json.gz") for p in files)
  xn, yn = np.asarray(x, np.float64), np.asarray(y, np.float64)
  np.testing.assert_allclose(float(result), np.mean(np.sin(xn @ yn) * xn + yn),
                             rtol=1e-4, atol=1e-5)   # f32 dot of 500 terms inside sin

  @jax.jit
  def annotated_step(x, y):
    with jax.named_scope("my_matmul"):
      z = x @ y
    with jax.named_scope("my_epilogue"):
      out = jnp.mean(jnp.sin(z))
    return out

  a = jax.random.normal(kx, (512, 512)); b = jax.random.normal(ky, (512, 512))
  annotated_step(a, b).block_until_ready()
  log_dir2 = tempfile.mkdtemp(prefix="jax_trace_")
  with jax.profiler.trace(log_dir2, create_perfetto_trace=True):
    for i in range(3):
      with jax.profiler.TraceAnnotation(f"step_{i}"):
        annotated_step(a, b).block_until_ready()
  files2 = sorted(os.path.relpath(p, log_dir2)
                  for p in glob.glob(log_dir2 + "/**", recursive=True) if os.path.isfile(p))
  assert any(f.endswith("perfetto_trace.json.gz") for f in files2)
  tj = glob.glob(log_dir2 + "/**/*.trace.json.gz", recursive=True)[0]
  events = json.load(gzip.open(tj))["traceEvents"]
  names = Counter(e["name"] for e in events if e.get("ph") == "X")
  assert all(names[f"step_{i}"] == 1 for i in range(3))
  assert names["PjitFunction(annotated_step)"] >= 3
  xp = glob.glob(log_dir2 + "/**/*.xplane.pb", recursive=True)[0]
  pdata = jax.profiler.ProfileData.from_file(xp)
  seen = Counter()
  for plane in pdata.planes:
    lines = list(plane.lines)
    assert plane.name == "/host:CPU" and lines
    for ln in lines:
      evs = [e.name for e in ln.events]
      seen.update(evs)
  assert seen == names         # the XSpace holds the same spans as the JSON trace

  lowered = annotated_step.lower(a, b)
  hlo_ops = re.findall(r'op_name="([^"]*my_[^"]*)"', lowered.compile().as_text())
  assert any("my_matmul" in s for s in hlo_ops) and any("my_epilogue" in s for s in hlo_ops)
  assert "my_matmul" not in lowered.as_text()
  assert "my_matmul" in lowered.as_text(debug_info=True)

  mem_path = os.path.join(SCRATCH, "memory.prof")
  blob_before = jax.profiler.device_memory_profile()
  big = jnp.ones((4000, 4000)); big.block_until_ready()
  jax.profiler.save_device_memory_profile(mem_path)
  blob_after = open(mem_path, "rb").read()
  assert blob_after[:2] == b"\x1f\x8b"
  assert len(gzip.decompress(blob_after)) > len(gzip.decompress(blob_before))
  del big
