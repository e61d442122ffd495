"""ember.profiler.device_memory_profile / save_device_memory_profile (issue 7 part 3b).

The profile is parsed back with a protobuf wire-format decoder written here (no protobuf
package), following profile.proto. The expected layout was read off what JAX 0.12 writes for
the same kind of program: sample_type [allocations/count, space/bytes]; one sample per
distinct stack with value [count, bytes] and labels kind=buffer, device=cpu:0; location ids
innermost frame first; location = (id, line{function_id, line}); function = (id, name,
system_name, filename, start_line); string_table[0] == "".
"""
import gc
import gzip
import sys
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.runtime.profiler import memory
from ember._src.core import array as array_mod

device_memory_profile = memory.device_memory_profile
save_device_memory_profile = memory.save_device_memory_profile


# --- a protobuf wire-format decoder, enough for profile.proto -----------------------------------

def _varint(b, i):
  r = s = 0
  while True:
    c = b[i]
    i += 1
    r |= (c & 0x7F) << s
    s += 7
    if c < 0x80:
      return r, i


def _fields(b):
  """[(field number, value)]: an int for varints, bytes for length-delimited fields."""
  out, i = [], 0
  while i < len(b):
    key, i = _varint(b, i)
    field, wire = key >> 3, key & 7
    if wire == 0:
      v, i = _varint(b, i)
    elif wire == 2:
      n, i = _varint(b, i)
      v, i = b[i:i + n], i + n
    else:
      raise AssertionError(f"unexpected wire type {wire} (field {field})")
    out.append((field, v))
  return out


def _ints(v):
  """A repeated scalar field: packed (bytes) or one unpacked varint."""
  if isinstance(v, int):
    return [v]
  out, i = [], 0
  while i < len(v):
    x, i = _varint(v, i)
    out.append(x)
  return out


def _msg(b, repeated=()):
  d = {}
  for f, v in _fields(b):
    if f in repeated:
      d.setdefault(f, []).append(v)
    else:
      d[f] = v
  return d


def parse(data: bytes) -> dict:
  """A gzip-compressed Profile as plain Python: strings resolved, ids checked."""
  assert data[:2] == b"\x1f\x8b", "not gzip"
  top = _msg(gzip.decompress(data), repeated=(1, 2, 3, 4, 5, 6))
  assert set(top) <= {1, 2, 4, 5, 6}, f"unexpected Profile fields {sorted(top)}"
  strings = [s.decode() for s in top.get(6, [])]
  assert strings and strings[0] == ""
  st = lambda i: strings[i]  # noqa: E731 (an IndexError here is a bad string index)
  functions = {}
  for raw in top.get(5, []):
    m = _msg(raw)
    assert m[1] not in functions and m[1] != 0
    functions[m[1]] = (st(m.get(2, 0)), st(m.get(3, 0)), st(m.get(4, 0)), m.get(5, 0))
  locations = {}
  for raw in top.get(4, []):
    m = _msg(raw, repeated=(4,))
    assert m[1] not in locations and m[1] != 0
    lines = []
    for ln in m.get(4, []):
      lm = _msg(ln)
      assert lm[1] in functions, "location names a missing function"
      lines.append((functions[lm[1]], lm.get(2, 0)))
    assert len(lines) == 1
    locations[m[1]] = lines[0]
  samples = []
  for raw in top.get(2, []):
    m = _msg(raw, repeated=(1, 2, 3))
    locs = [i for v in m.get(1, []) for i in _ints(v)]
    assert all(i in locations for i in locs), "sample names a missing location"
    values = [x for v in m.get(2, []) for x in _ints(v)]
    labels = {}
    for lab in m.get(3, []):
      lm = _msg(lab)
      labels[st(lm[1])] = st(lm[2])
    # stack: ((function name, filename, start line), line) innermost first
    samples.append(([locations[i] for i in locs], values, labels))
  sample_types = [(st(_msg(t).get(1, 0)), st(_msg(t).get(2, 0))) for t in top.get(1, [])]
  return {"sample_types": sample_types, "samples": samples, "strings": strings}


def _line_of(marker: str) -> int:
  """The line of this file holding `marker` (a comment at an allocation site)."""
  with open(__file__) as f:
    hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(marker)]
  assert len(hits) == 1, marker
  return hits[0]


def _mine(profile, function: str):
  """This file's samples whose innermost frame is in `function`."""
  return [s for s in profile["samples"]
          if s[0] and s[0][0][0][2] == __file__ and s[0][0][0][0] == function]


def _totals(samples):
  return sum(s[1][0] for s in samples), sum(s[1][1] for s in samples)


# --- allocation sites: two functions, eager and jitted ------------------------------------------

def make_a():
  x = jnp.ones((2, 3, 4), jnp.float32)  # alloc-a1
  y = jnp.arange(7, dtype=jnp.int32)  # alloc-a2
  return x, y


def make_b():
  z = jnp.zeros
  return [z((5,), jnp.float16), z((5,), jnp.float16), z((5,), jnp.float16)]  # alloc-b


def make_c():
  return jnp.full((4, 4), 2.0)  # alloc-c


_double = ember.jit(lambda x: (x * 2, x + 1))


def call_jit(x):
  return _double(x)  # alloc-jit


# --- tests ---------------------------------------------------------------------------------------

@pytest.fixture(autouse=True)
def _default_depth(monkeypatch):
  """The default 2 recorded frames, whatever EMBER_MEMORY_PROFILE_FRAMES says."""
  monkeypatch.setattr(array_mod, "ALLOC_STACK_FRAMES", 2)


def test_layout_matches_jax():
  keep = make_a()
  p = parse(device_memory_profile())
  assert p["sample_types"] == [("allocations", "count"), ("space", "bytes")]
  # JAX's prelude of strings, in its order
  assert p["strings"][:9] == ["", "allocations", "count", "space", "bytes", "kind", "buffer",
                              "executable", "device"]
  assert len(p["strings"]) == len(set(p["strings"]))
  for stack, values, labels in p["samples"]:
    assert len(values) == 2 and values[0] >= 1 and values[1] >= 0
    assert labels == {"kind": "buffer", "device": "cpu:0"}
    for (name, system_name, filename, start), line in stack:
      assert name == system_name and filename and start >= 0 and line >= start
  del keep


def test_samples_group_by_allocating_function_and_line():
  a, b = make_a(), make_b()  # call-ab
  p = parse(device_memory_profile())
  sa, sb = _mine(p, "make_a"), _mine(p, "make_b")
  assert _totals(sa) == (2, a[0].nbytes + a[1].nbytes) == (2, 96 + 28)
  assert _totals(sb) == (3, sum(x.nbytes for x in b)) == (3, 30)
  assert len(sb) == 1  # three arrays of one line and caller are one sample (count 3)
  lines = {s[0][0][1]: s[1] for s in sa}
  assert lines == {_line_of("# alloc-a1"): [1, 96], _line_of("# alloc-a2"): [1, 28]}
  assert sb[0][0][0][1] == _line_of("# alloc-b")
  (_, _, filename, start), _ = sa[0][0][0]
  assert (filename, start) == (__file__, make_a.__code__.co_firstlineno)
  # the caller is the second frame: this test, at the line calling make_a
  caller = sa[0][0][1]
  assert caller[0][0] == "test_samples_group_by_allocating_function_and_line"
  assert caller[1] == _line_of("# call-ab")
  # ember's own frames are not in the stacks
  assert not any(fn[2].startswith(array_mod._EMBER_DIR) for fn, _ in sa[0][0])
  del a, b


def test_totals_equal_live_arrays():
  arrs = make_a() + tuple(make_b())
  gc.collect()  # no unreachable Arrays that a collection could free between the two looks
  p = parse(device_memory_profile())
  mine = _totals(_mine(p, "make_a") + _mine(p, "make_b"))
  assert mine == (5, sum(x.nbytes for x in arrs))
  # the whole profile: every live Array (other tests' too), each memory once
  live = {(o.unsafe_buffer_pointer(), o.nbytes): o.nbytes for o in gc.get_objects()
          if isinstance(o, array_mod.Array) and not o.is_deleted()}
  assert _totals(p["samples"]) == (len(live), sum(live.values()))
  del arrs


def test_freed_and_deleted_arrays_disappear():
  c = make_c()
  assert _totals(_mine(parse(device_memory_profile()), "make_c")) == (1, 64)
  del c
  assert _mine(parse(device_memory_profile()), "make_c") == []
  d = make_c()
  d.delete()
  assert _mine(parse(device_memory_profile()), "make_c") == []
  del d


def test_donated_arrays_disappear():
  f = ember.jit(lambda x: x + 1, donate_argnums=0)
  x = make_c()
  y = f(x)  # alloc-donate
  p = parse(device_memory_profile())
  assert x.is_deleted() and _mine(p, "make_c") == []
  here = [s for s in _mine(p, "test_donated_arrays_disappear")
          if s[0][0][1] == _line_of("# alloc-donate")]
  assert _totals(here) == (1, y.nbytes)


@pytest.mark.parametrize("mode", ["inline", "async"])
def test_jit_outputs_attributed_to_callers_line(mode, monkeypatch):
  from ember._src.runtime import executor
  n = 3 if mode == "inline" else 5       # a new signature: its run plan is made here
  if mode == "async":                    # no call counts as small: dispatched to the executor,
    monkeypatch.setattr(executor, "INLINE_NS", 0)       # outputs made by Array._pending
    monkeypatch.setattr(executor, "_INLINE_BYTES", 0)
  x = np.arange(n, dtype=np.float32)
  o1 = call_jit(x)  # call-jit-1 (a cache miss: traces and compiles)
  o2 = call_jit(x)  # call-jit-2 (a cache hit)
  p = parse(device_memory_profile())
  s = _mine(p, "call_jit")
  assert _totals(s) == (4, 4 * 4 * n)
  assert {smp[0][0][1] for smp in s} == {_line_of("# alloc-jit")}
  callers = {smp[0][1][1]: smp[1] for smp in s}
  assert callers == {_line_of("# call-jit-1 (a cache miss: traces and compiles)"): [2, 8 * n],
                     _line_of("# call-jit-2 (a cache hit)"): [2, 8 * n]}
  # the outputs of one call share one capture (inline calls too: one per output would cost
  # ~0.4 us each on the dispatch path)
  assert o2[0]._stack is o2[1]._stack
  np.testing.assert_array_equal(o2[0], 2 * x)
  np.testing.assert_array_equal(o2[1], x + 1)
  del o1, o2


def test_eager_op_attributed_to_its_line():
  x = make_c()
  y = jnp.sin(x) + 1.0  # alloc-eager
  z = x.sum(axis=0)  # alloc-method
  p = parse(device_memory_profile())
  lines = [s[0][0][1] for s in _mine(p, "test_eager_op_attributed_to_its_line")]
  assert lines.count(_line_of("# alloc-eager")) == 1  # sin's temporary is freed already
  assert lines.count(_line_of("# alloc-method")) == 1
  del y, z


def test_arrays_made_in_a_thread():
  out = []
  t = threading.Thread(target=lambda: out.append(make_c()))
  t.start()
  t.join()
  p = parse(device_memory_profile())
  s = _mine(p, "make_c")
  assert _totals(s) == (1, 64) and s[0][0][1][0][0] == "<lambda>"
  del out


def test_stack_depth_limit(monkeypatch):
  monkeypatch.setattr(array_mod, "ALLOC_STACK_FRAMES", 1)
  a = make_c()
  monkeypatch.setattr(array_mod, "ALLOC_STACK_FRAMES", 5)
  b = make_b()
  p = parse(device_memory_profile())
  assert [len(s[0]) for s in _mine(p, "make_c")] == [1]
  assert [len(s[0]) for s in _mine(p, "make_b")] == [5]  # this test and pytest's frames
  del a, b


def test_no_frames_recorded_still_counts_the_buffer(monkeypatch):
  monkeypatch.setattr(array_mod, "ALLOC_STACK_FRAMES", 0)  # EMBER_MEMORY_PROFILE_FRAMES=0
  a = jnp.zeros((777,), jnp.uint8)
  assert a._stack == ()
  p = parse(device_memory_profile())
  assert not _mine(p, "test_no_frames_recorded_still_counts_the_buffer")
  rootless = [s for s in p["samples"] if not s[0]]
  assert len(rootless) == 1 and rootless[0][1][0] >= 1 and rootless[0][1][1] >= 777
  del a


def test_aliases_of_one_buffer_count_once():
  a = make_c()
  b = array_mod.Array(a._value)  # the same memory
  p = parse(device_memory_profile())
  assert _totals(_mine(p, "make_c")) == (1, 64)
  assert not [s for s in _mine(p, "test_aliases_of_one_buffer_count_once")]
  del a, b


def test_line_from_lasti_matches_f_lineno():
  def frames():
    f, out = sys._getframe(), []
    while f is not None:
      out.append((f.f_code, f.f_lasti, f.f_lineno))
      f = f.f_back
    return out
  for code, lasti, lineno in frames():
    assert memory._line(code, lasti, {}) == lineno


def test_save_and_bytes_agree_and_backend(tmp_path):
  keep = make_c()
  gc.collect()   # (a collection between the two profiles would drop earlier tests' garbage)
  path = tmp_path / "memory.prof"
  assert save_device_memory_profile(str(path)) is None
  data = path.read_bytes()
  assert data[:2] == b"\x1f\x8b"
  assert _totals(_mine(parse(data), "make_c")) == (1, 64)
  assert parse(data)["samples"] == parse(device_memory_profile("cpu"))["samples"]
  with pytest.raises(RuntimeError, match="backend"):
    device_memory_profile("gpu")
  with pytest.raises(RuntimeError, match="backend"):
    save_device_memory_profile(str(tmp_path / "x.prof"), backend="tpu")
  assert not (tmp_path / "x.prof").exists()
  del keep


def test_public_api():
  prof = pytest.importorskip("ember.profiler")
  if not hasattr(prof, "device_memory_profile"):
    pytest.skip("ember.profiler does not re-export the memory profile yet")
  assert prof.device_memory_profile is device_memory_profile
  assert prof.save_device_memory_profile is save_device_memory_profile
