"""The kernel thread pool (ember/_src/backends/cpu/threadpool.py): split kernels give
bitwise the results of one core, the cost model's stored decision, the environment switches
(EMBER_NUM_THREADS, EMBER_SPIN_US), fork, concurrent callers and shutdown at exit.

Splits are forced by setting a kernel thunk's `nchunks` on executables compiled here (never
the jit cache's shared ones), so the chunking is tested on any machine; the subprocess tests
set EMBER_NUM_THREADS=4 so several workers really run, even on a one-core CI machine."""
import ctypes
import os
import subprocess
import sys
import textwrap
import threading

import ml_dtypes
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.hlo import graph as hlo
from ember._src.backends.cpu import cost_model, host, threadpool
from ember._src.backends.cpu.compiler import (compile_module, deserialize_executable,
                                              serialize_executable)
from ember._src.driver.compilation import compile_executable
from ember._src.lower import lower_jaxpr
from ember._src.passes.buffer_assignment import assign_buffers
from ember._src.passes.pipeline import optimize

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
f32, f64, i32 = np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int32)


# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def lowered(f, *args):
  """The optimized module of f on args (jaxpr -> lower -> passes)."""
  return optimize(lower_jaxpr(ember.make_jaxpr(f)(*args), "f"))


def compiled(f, *args, chunks=None):
  """A fresh executable (not the jit cache's); `chunks`: force every splittable kernel into
  min(chunks, outer) chunks."""
  return build(lowered(f, *args), chunks)


def build(module, chunks=None):
  if chunks is None:
    return compile_executable(module)
  with cost_model.forced_chunks(chunks):
    return compile_executable(module)


def kernels(exe):
  """Every kernel thunk, scatter kernels included."""
  return [t.kernel if t.kind == "scatter" else t for t in exe.thunks
          if t.kind in ("kernel", "scatter")]


def split_results(module, args, n):
  """The outputs of `module` compiled with every splittable kernel in min(n, outer) chunks,
  and whether any kernel was split."""
  exe = build(module, n)
  split = any(k.nchunks > 1 for k in kernels(exe))
  return [np.array(o) for o in exe.execute(args)], split


def same_bits(a, b):
  return a.dtype == b.dtype and a.shape == b.shape and \
      a.tobytes() == b.tobytes()


def data(shape, dtype=f32, seed=0):
  rng = np.random.default_rng(seed)
  if np.dtype(dtype).kind in "iu":
    return rng.integers(-50, 50, shape).astype(dtype)
  return (rng.standard_normal(shape) * 2).astype(dtype)


def softmax(x):
  e = jnp.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


def np_softmax(x):
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)


# name -> (ember function, NumPy float64 reference, argument shapes/dtypes, rtol).
# Transcendentals come from ember's math library (a few ulp), reductions reassociate.
CASES = {
    "elementwise_2d": (lambda x: jnp.sin(x) * 2 + 1, lambda x: np.sin(x) * 2 + 1,
                       [((37, 53), f32)], 1e-5),
    "elementwise_1d": (lambda x: jnp.exp(x) - x, lambda x: np.exp(x) - x, [((1001,), f32)],
                       1e-5),
    "broadcast_outer": (lambda x, y: jnp.tanh(x[:, None] - y[None, :]),
                        lambda x, y: np.tanh(x[:, None] - y[None, :]),
                        [((37,), f32), ((29,), f32)], 1e-5),
    "transpose": (lambda x: x.T * 2 - 1, lambda x: x.T * 2 - 1, [((37, 53), f32)], 1e-6),
    "row_sum": (lambda x: x.sum(1), lambda x: x.sum(1), [((37, 53), f32)], 1e-5),
    "col_sum": (lambda x: x.sum(0), lambda x: x.sum(0), [((37, 53), f32)], 1e-5),
    "sum_inner_dims_3d": (lambda x: (x * x).sum((1, 2)), lambda x: (x * x).sum((1, 2)),
                          [((11, 13, 17), f32)], 1e-5),
    "max_middle_dim_3d": (lambda x: jnp.max(x, 1), lambda x: np.max(x, 1),
                          [((11, 13, 17), f32)], 0),
    "argmax": (lambda x: jnp.argmax(x, 1), lambda x: np.argmax(x, 1), [((37, 53), f32)], 1e-6),
    "softmax": (softmax, np_softmax, [((37, 53), f32)], 1e-5),
    "int32": (lambda x, y: (x * 3 + y) % 7, lambda x, y: np.mod(x * 3 + y, 7),
              [((37, 53), i32), ((37, 53), i32)], 0),
    "scatter_add": (lambda x, u: x.at[jnp.array([1, 3, 3, 0])].add(u),
                    lambda x, u: _np_scatter_add(x, np.array([1, 3, 3, 0]), u),
                    [((37, 5), f32), ((4, 5), f32)], 1e-6),
}


def _np_scatter_add(x, idx, u):
  out = x.copy()
  np.add.at(out, idx, u)
  return out


# --------------------------------------------------------------------------------------
# Split results are bitwise those of one core
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(CASES))
def test_split_is_bitwise_one_core(name):
  f, ref, specs, rtol = CASES[name]
  args = [data(s, dt, seed=k) for k, (s, dt) in enumerate(specs)]
  module = lowered(f, *args)
  one, split = split_results(module, args, 1)
  assert not split
  want = ref(*[a.astype(f64) if a.dtype.kind == "f" else a for a in args])
  want = want if isinstance(want, tuple) else (want,)
  for o, w in zip(one, want):
    np.testing.assert_allclose(o, w, rtol=rtol, atol=rtol)
  for n in (2, 3, 7, 10 ** 6):    # 10**6: one outer index per chunk
    got, split = split_results(module, args, n)
    assert split
    for a, b in zip(got, one):
      assert same_bits(a, b), (name, n)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64", "int8", "bool"])
def test_split_is_bitwise_one_core_other_dtypes(dtype):
  dt = np.dtype(getattr(ml_dtypes, dtype) if dtype == "bfloat16" else dtype)
  rng = np.random.default_rng(3)
  x = (rng.random((29, 41)) > 0.5) if dt == np.bool_ else \
      (rng.standard_normal((29, 41)) * 3).astype(dt)
  if dt == np.bool_:
    f = lambda x: (x ^ x.T[:41, :29].T[:, ::-1], x.sum(1))
  elif dt.kind == "i":
    f = lambda x: (x * 3 - x[:, ::-1], x.max(1), x.sum(1))
  else:
    f = lambda x: (jnp.exp(x) * 2 - x, x.sum(1), jnp.argmax(x, 0))
  with ember.enable_x64(dt == np.float64):
    module = lowered(f, x)
  one, _ = split_results(module, [x], 1)
  for n in (2, 5, 29):
    got, split = split_results(module, [x], n)
    assert split and all(same_bits(a, b) for a, b in zip(got, one)), n


def _hand_module(params, fusion):
  """A module whose entry is one fusion `fusion(module, fused computation, its params) ->
  root`."""
  m = hlo.Module("jit_hand")
  m.entry = entry = m.new_computation("main")
  fused = m.new_computation("fused_computation")
  fused.is_fusion = True
  ps = [fused.add(hlo.Instr("parameter", s, attrs={"number": k}, name=f"param_{k}"))
        for k, s in enumerate(params)]
  fused.root = fusion(m, fused, ps)
  eps = [entry.add(hlo.Instr("parameter", s, attrs={"number": k}, name=f"p{k}"))
         for k, s in enumerate(params)]
  entry.root = entry.add(hlo.Instr("fusion", fused.root.shape, eps, {"kind": "kLoop"},
                                   [fused], name="fusion"))
  return m


def _combiner(m, op):
  S = hlo.Shape
  c = m.new_computation(op)
  a = c.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 0}, name="a"))
  b = c.add(hlo.Instr("parameter", S(f32, ()), attrs={"number": 1}, name="b"))
  c.root = c.add(hlo.Instr(op, S(f32, ()), [a, b]))
  return c


def _tuple(c, outs):
  return c.add(hlo.Instr("tuple", hlo.TupleShape(tuple(o.shape for o in outs)), outs))


def test_multi_output_fusions_split_bitwise():
  S = hlo.Shape
  x, y = data((37, 53), seed=1), data((37, 53), seed=2)

  def elementwise(m, c, ps):      # three same-shaped outputs
    s = c.add(hlo.Instr("sine", S(f32, (37, 53)), [ps[0]]))
    sq = c.add(hlo.Instr("multiply", S(f32, (37, 53)), [ps[0], ps[0]]))
    e = c.add(hlo.Instr("exponential", S(f32, (37, 53)), [ps[1]]))
    return _tuple(c, [s, sq, c.add(hlo.Instr("subtract", S(f32, (37, 53)), [e, ps[0]]))])

  def reductions(m, c, ps):       # row sums and row maxima of one product
    p = c.add(hlo.Instr("multiply", S(f32, (37, 53)), [ps[0], ps[1]]))
    z = c.add(hlo.Instr("constant", S(f32, ()), attrs={"value": np.array(0, f32)}))
    lo = c.add(hlo.Instr("constant", S(f32, ()), attrs={"value": np.array(-np.inf, f32)}))
    r1 = c.add(hlo.Instr("reduce", S(f32, (37,)), [p, z], {"dimensions": (1,)},
                         [_combiner(m, "add")]))
    r2 = c.add(hlo.Instr("reduce", S(f32, (37,)), [p, lo], {"dimensions": (1,)},
                         [_combiner(m, "maximum")]))
    return _tuple(c, [r1, r2])

  wants = {elementwise: [np.sin(x), x * x, np.exp(y) - x],
           reductions: [(x * y).sum(1), (x * y).max(1)]}
  for fusion, want in wants.items():
    module = _hand_module([S(f32, (37, 53))] * 2, fusion)
    (k,) = kernels(compile_executable(module))
    assert k.splittable and k.outer == 37
    one, _ = split_results(module, [x, y], 1)
    for o, w in zip(one, want):
      np.testing.assert_allclose(o, w, rtol=1e-5, atol=1e-5)
    for n in (2, 5, 37):
      got, split = split_results(module, [x, y], n)
      assert split and all(same_bits(a, b) for a, b in zip(got, one))


def test_differently_shaped_outputs_never_split():
  S = hlo.Shape
  x = data((4, 5))

  def fusion(m, c, ps):
    e = c.add(hlo.Instr("multiply", S(f32, (4, 5)), [ps[0], ps[0]]))
    z = c.add(hlo.Instr("constant", S(f32, ()), attrs={"value": np.array(0, f32)}))
    r = c.add(hlo.Instr("reduce", S(f32, (4,)), [e, z], {"dimensions": (1,)},
                        [_combiner(m, "add")]))
    return _tuple(c, [e, r])
  exe = build(_hand_module([S(f32, (4, 5))], fusion), 8)
  (k,) = kernels(exe)
  assert not k.splittable and k.nchunks == 1
  assert cost_model.plan_chunks(k.outer, k.splittable, cost_model.KernelCost(1e12, 1e12, 0),
                                threads=8) == 1
  e, r = exe.execute([x])
  np.testing.assert_allclose(e, x * x, rtol=1e-6)
  np.testing.assert_allclose(r, (x * x).sum(1), rtol=1e-5)


# --------------------------------------------------------------------------------------
# The cost model
# --------------------------------------------------------------------------------------

def test_kernel_cost_counts_bytes_flops_transcendentals():
  x = np.ones((1000, 1000), f32)
  (k,) = kernels(compiled(lambda x: jnp.sin(x) * 2 + 1, x))
  # reads 4 MB, writes 4 MB; one sine, one multiply, one add per element
  assert k.cost == cost_model.KernelCost(8e6, 2e6, 1e6)
  (k,) = kernels(compiled(lambda x: x.sum(1), x))
  assert k.cost == cost_model.KernelCost(4e6 + 4e3, 1e6 - 1e3, 0.0)


def test_cost_model_small_on_one_core_large_split():
  small = [compiled(lambda x, y: x + y, data((8, 8)), data((8, 8))),
           compiled(lambda x: jnp.tanh(x) + 0.1, data((64, 64))),
           compiled(lambda x: x.sum(1), data((100, 100)))]
  for exe in small:
    for k in kernels(exe):
      assert cost_model.plan_chunks(k.outer, k.splittable, k.cost, threads=4) == 1
  large = [compiled(lambda x: jnp.sin(x) * 2 + 1, data((1000, 1000))),
           compiled(lambda x: x.sum(1), data((2000, 1000))),
           compiled(lambda x: jnp.exp(x), data((3, 500000)))]   # outer 3 caps the chunks
  for exe in large:
    (k,) = kernels(exe)
    n = cost_model.plan_chunks(k.outer, k.splittable, k.cost, threads=4)
    assert 2 <= n <= min(k.outer, 4 * cost_model.CHUNKS_PER_THREAD)
    assert cost_model.plan_chunks(k.outer, k.splittable, k.cost, threads=1) == 1
    assert cost_model.plan_chunks(k.outer, False, k.cost, threads=4) == 1
    # the decision is made once, at build time, for this process's thread count
    assert k.nchunks == cost_model.plan_chunks(k.outer, k.splittable, k.cost)
  assert cost_model.plan_chunks(1, True, cost_model.KernelCost(1e12, 0, 0), threads=4) == 1
  assert cost_model.plan_chunks(100, True, None, threads=4) == 1


def test_column_reductions_split_into_one_chunk_per_thread():
  # a chunk of output columns re-walks every row: more chunks than threads only adds
  # short strided passes (measured slower), so a column reduction gets one per thread
  # (1000 x 1000 stays below reduction_splitter's size: one kernel)
  (k,) = kernels(compiled(lambda x: x.sum(0), data((1000, 1000))))
  assert k.cost.column_reduction
  assert cost_model.plan_chunks(k.outer, k.splittable, k.cost, threads=4) == 4
  (k,) = kernels(compiled(lambda x: x.sum(1), data((1000, 1000))))
  assert not k.cost.column_reduction


def test_dot_chunks_by_rows_or_column_panels():
  # a dot split by rows: each chunk packs all of B again, one chunk per thread; split by
  # column panels, chunks share nothing and dynamic claiming balances them
  flops = 2 * 128 * 784 * 512
  rows = cost_model.KernelCost(2e6, 0, 0, dot_flops=flops)
  cols = rows._replace(dot_by_columns=True)
  assert cost_model.plan_chunks(128, True, rows, threads=2) == 2
  assert cost_model.plan_chunks(8, True, cols, threads=2) == 2 * cost_model.CHUNKS_PER_THREAD
  assert cost_model.plan_chunks(3, True, cols, threads=2) == 3        # at most one per panel


@pytest.mark.skipif(not host.threads_supported(), reason="no thread pool on this platform")
def test_consecutive_kernels_split_ones_included_run_in_one_native_call():
  """A chain of kernels some of which are split runs as ONE call of the pool's step runner
  (no return to Python between kernels), as does an unsplit chain: the same bits as on one
  core, and NumPy's values;
  after a fork, the child rebuilds the table for its own pool."""
  def f(x):
    y = ember.lax.optimization_barrier(jnp.sin(x))      # kernel 1
    return jnp.cos(y) + y.sum(1, keepdims=True)          # kernel 2 (+ its row sums)
  x = data((300, 200))
  one, split = compiled(f, x, chunks=1), compiled(f, x, chunks=3)
  assert [k.nchunks for k in kernels(split)] == [3] * len(kernels(split))
  outs = [np.asarray(e.execute([x])[0]) for e in (one, split, split)]   # (builds the frame)
  (step,) = split._steps
  assert type(step) is tuple and step[2] == len(kernels(split)) >= 2
  assert step[0] is threadpool._get_pool().native.run_steps
  (serial,) = one._steps          # unsplit: the same runner, no pool state in its table
  assert serial[0] is step[0] and serial[2] == step[2] and serial[3][0, 0] == 0
  assert step[3][0, 0] == threadpool._get_pool().state
  np.testing.assert_array_equal(outs[1], outs[0])
  np.testing.assert_array_equal(outs[2], outs[0])
  y = np.sin(x.astype(np.float64))
  np.testing.assert_allclose(outs[0], np.cos(y) + y.sum(1, keepdims=True), rtol=1e-5,
                             atol=1e-5 * 200)
  from ember._src.backends.cpu import executable as exm
  exm._after_fork_in_child()                    # what a forked child runs: tables rebuilt
  assert split._steps == [] and split._cached is None
  np.testing.assert_array_equal(np.asarray(split.execute([x])[0]), outs[0])


@pytest.mark.skipif(not host.threads_supported(), reason="no thread pool on this platform")
def test_lone_split_kernel_is_a_one_row_step_table():
  """A lone split kernel (a large m @ v) is a one-row table of the step runner, so a cache
  hit makes one native call for it; its values are the unsplit kernel's bits."""
  m, v = data((300, 257)), data((257,))
  f = lambda m, v: m @ v
  one, split = compiled(f, m, v, chunks=1), compiled(f, m, v, chunks=2)
  outs = [np.asarray(e.execute([m, v])[0]) for e in (one, split, split)]
  (step,) = split._steps
  assert type(step) is tuple and step[2] == 1
  assert step[0] is threadpool._get_pool().native.run_steps
  assert step[3][0, 0] == threadpool._get_pool().state and step[3][1, 3] == 2
  assert type(one._steps[0]) is tuple and len(one._steps[0]) == 3   # unsplit: a direct call
  np.testing.assert_array_equal(outs[1], outs[0])
  np.testing.assert_array_equal(outs[2], outs[0])
  np.testing.assert_allclose(outs[0], m.astype(np.float64) @ v, rtol=1e-5, atol=1e-4)


def test_replayed_executable_recomputes_costs():
  x = data((1000, 1000))
  module = lowered(lambda x: jnp.exp(jnp.sin(x)) + x.sum(1, keepdims=True), x)
  assignment = assign_buffers(module)
  exe = compile_module(module, assignment)
  again = deserialize_executable(module, assignment, serialize_executable(exe))
  a, b = kernels(exe), kernels(again)
  assert [(k.cost, k.nchunks) for k in a] == [(k.cost, k.nchunks) for k in b]
  assert all(k.cost is not None for k in b)
  assert same_bits(again.execute([x])[0], exe.execute([x])[0])


def test_bad_environment_values_are_clear_errors(monkeypatch):
  for name, fn in (("EMBER_NUM_THREADS", host.num_threads),
                   ("EMBER_SPIN_US", threadpool.spin_us)):
    for bad in ("two", "-1") + (("0",) if name == "EMBER_NUM_THREADS" else ()):
      monkeypatch.setenv(name, bad)
      with pytest.raises(ValueError, match=f"{name}={bad!r}: expected an integer"):
        fn.__wrapped__()
  monkeypatch.setenv("EMBER_NUM_THREADS", "3")
  monkeypatch.setenv("EMBER_SPIN_US", "0")
  assert host.num_threads.__wrapped__() in (3, 1)   # 1 where futexes are missing
  assert threadpool.spin_us.__wrapped__() == 0


# --------------------------------------------------------------------------------------
# Concurrent callers
# --------------------------------------------------------------------------------------

def test_many_threads_share_the_pool():
  """Several Python threads run split kernels at once: one uses the pool, the others run
  theirs on their own core; every result is right."""
  module = lowered(lambda x: jnp.sin(x) * 2 + x.sum(1, keepdims=True), data((300, 200)))
  exe = build(module, 6)
  inputs = [data((300, 200), seed=s) for s in range(8)]
  want = [split_results(module, [x], 1)[0][0] for x in inputs]
  errors = []

  def worker(j):
    try:
      for _ in range(15):
        got = exe.execute([inputs[j]])[0]
        if not same_bits(got, want[j]):
          errors.append(j)
    except Exception as e:   # noqa: BLE001 - reported below
      errors.append(e)
  ts = [threading.Thread(target=worker, args=(j,)) for j in range(8)]
  for t in ts:
    t.start()
  for t in ts:
    t.join()
  assert not errors
  np.testing.assert_allclose(want[0], np.sin(inputs[0]) * 2 + inputs[0].sum(1, keepdims=True),
                             rtol=1e-5, atol=1e-4)


def test_many_threads_call_one_jitted_function():
  from ember._src.base.config import config
  f = ember.jit(lambda x: jnp.exp(x) * 0.5 - x)
  inputs = [data((500, 400), seed=s) for s in range(6)]
  old = config.read("jax_cpu_enable_async_dispatch")
  results = {}
  try:
    for sync in (True, False):
      config.update("jax_cpu_enable_async_dispatch", not sync)

      def worker(j):
        results[j] = [np.asarray(f(inputs[j])) for _ in range(5)]
      ts = [threading.Thread(target=worker, args=(j,)) for j in range(6)]
      for t in ts:
        t.start()
      for t in ts:
        t.join()
      for j, x in enumerate(inputs):
        for r in results[j]:
          np.testing.assert_allclose(r, np.exp(x.astype(f64)) * 0.5 - x, rtol=1e-5,
                                     atol=1e-5)
  finally:
    config.update("jax_cpu_enable_async_dispatch", old)


def test_pool_runs_every_chunk_once():
  """The native pool on its own: a kernel that adds 1 to its [start, stop) of a counter
  array, split into many chunks, leaves every entry at exactly one per call."""
  from ember._src.backends.cpu import llvm_jit
  ir = """
  define void @count(ptr %bufs, i64 %start, i64 %stop) {
  entry:
    %p = load ptr, ptr %bufs
    br label %loop
  loop:
    %i = phi i64 [ %start, %entry ], [ %i1, %body ]
    %more = icmp slt i64 %i, %stop
    br i1 %more, label %body, label %exit
  body:
    %q = getelementptr i32, ptr %p, i64 %i
    %v = atomicrmw add ptr %q, i32 1 monotonic
    %i1 = add i64 %i, 1
    br label %loop
  exit:
    ret void
  }"""
  engine, addr, *_ = llvm_jit.jit(ir, 2)
  counts = np.zeros(1000, np.int32)
  bufs = (ctypes.c_void_p * 1)(counts.ctypes.data)
  for n in (1, 2, 3, 16, 999, 1000):
    for _ in range(20):
      threadpool.run(addr("count"), bufs, 1000, n)
  assert (counts == 6 * 20).all()
  del engine


# --------------------------------------------------------------------------------------
# Environment, fork and exit (subprocesses)
# --------------------------------------------------------------------------------------

needs_pool = pytest.mark.skipif(not host.threads_supported(),
                                reason="the pool needs Linux futexes on x86_64/aarch64")


def run_script(code: str, **env) -> subprocess.CompletedProcess:
  """Run _SETUP + code in a fresh interpreter with only the EMBER_ variables given."""
  full = dict(os.environ, PYTHONPATH=REPO, **env)
  for k in list(full):
    if k.startswith("EMBER_") and k not in env:
      del full[k]
  return subprocess.run([sys.executable, "-c", _SETUP + textwrap.dedent(code)], env=full,
                        capture_output=True, text=True, timeout=180)


_SETUP = """
import os, threading, ctypes
import numpy as np
import ember, ember.numpy as jnp
from ember._src.backends.cpu import cost_model, host, threadpool
from ember._src.backends.cpu import executable as exm
from ember._src.driver.compilation import compile_executable
from ember._src.lower import lower_jaxpr
from ember._src.passes.pipeline import optimize
rng = np.random.default_rng(0)
big = rng.standard_normal((1000, 1000)).astype(np.float32)
small = rng.standard_normal((8, 8)).astype(np.float32)

def thunk(f, *args):
  (k,) = [t for t in ember.jit(f).lower(*args).compile().runtime_executable().thunks
          if isinstance(t, exm.KernelThunk)]
  return k

def check(f, ref, x):
  got = np.asarray(ember.jit(f)(x))
  np.testing.assert_allclose(got, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-5)
  return got

sin21 = lambda x: jnp.sin(x) * 2 + 1
np_sin21 = lambda x: np.sin(x) * 2 + 1
"""


def test_one_thread_means_no_pool():
  r = run_script("""
  assert host.num_threads() == 1
  before = threading.active_count()
  assert thunk(sin21, big).nchunks == 1
  for _ in range(3):
    check(sin21, np_sin21, big)
  workers = [t for t in threading.enumerate() if t.name != "ember-tier-up"]  # LLVM, not a pool
  assert threadpool._pool is None and len(workers) <= before + 1  # + executor
  print("ok")
  """, EMBER_NUM_THREADS="1")
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@needs_pool
def test_four_threads_no_spin_bitwise_and_decisions():
  r = run_script("""
  assert host.num_threads() == 4 and threadpool.spin_us() == 0
  k_small, k_big = thunk(sin21, small), thunk(sin21, big)
  assert k_small.nchunks == 1 and 2 <= k_big.nchunks <= 16
  check(sin21, np_sin21, small)
  assert threadpool._pool is None          # a small kernel is a plain call: no pool
  got = [check(sin21, np_sin21, big) for _ in range(5)]
  jobs, worker_chunks = threadpool.stats()
  assert jobs == 5 and 0 <= worker_chunks <= 5 * k_big.nchunks
  pool = threadpool._pool
  assert len(pool.threads) == 3 and all(t.is_alive() for t in pool.threads)
  assert ctypes.c_int64.from_address(pool.state + threadpool._SPIN_NS).value == 0
  with cost_model.forced_chunks(1):
    one = compile_executable(optimize(lower_jaxpr(ember.make_jaxpr(sin21)(big), "f")))
  assert [k.nchunks for k in one.thunks] == [1]
  one = one.execute([big])[0]
  assert all(g.tobytes() == one.tobytes() for g in got)
  rowsum = thunk(lambda x: x.sum(1), np.ones((4000, 1000), np.float32))
  assert rowsum.nchunks > 1
  x = rng.standard_normal((4000, 1000)).astype(np.float32)
  check(lambda x: x.sum(1), lambda x: x.sum(1), x)
  print("ok")
  """, EMBER_NUM_THREADS="4", EMBER_SPIN_US="0")
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@needs_pool
def test_child_after_fork_runs_jitted_code():
  r = run_script("""
  import warnings
  warnings.simplefilter("ignore", DeprecationWarning)   # fork with threads (3.12+)
  assert thunk(sin21, big).nchunks > 1
  ref = check(sin21, np_sin21, big)                     # the parent's pool is running
  assert threadpool._pool is not None
  pid = os.fork()
  if pid == 0:
    try:
      assert threadpool._pool is None                   # the parent's threads are gone
      ok = np.asarray(ember.jit(sin21)(big)).tobytes() == ref.tobytes()
      check(lambda x: jnp.cos(x) - x, lambda x: np.cos(x) - x, big)   # a fresh compile
      ok = ok and threadpool._pool is not None and threadpool._pool.threads[0].is_alive()
      os._exit(0 if ok else 3)
    except BaseException:
      os._exit(4)
  _, status = os.waitpid(pid, 0)
  assert os.waitstatus_to_exitcode(status) == 0, status
  assert np.asarray(ember.jit(sin21)(big)).tobytes() == ref.tobytes()   # parent still fine
  print("ok")
  """, EMBER_NUM_THREADS="2")
  assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@needs_pool
def test_clean_exit_while_kernels_run():
  """The interpreter exits (atexit stops and joins the workers) while a daemon thread keeps
  running split kernels: exit status 0, nothing on stderr. (The daemon thread calls the
  executable itself, so only the pool, not the dispatch queue, sees the exit.)"""
  r = run_script("""
  exe = ember.jit(sin21).lower(big).compile().runtime_executable()
  assert thunk(sin21, big).nchunks > 1
  def spam():
    while True:
      exe.execute([big])
  threading.Thread(target=spam, daemon=True).start()
  for _ in range(3):
    check(sin21, np_sin21, big)
  print("ok")
  """, EMBER_NUM_THREADS="3")
  assert r.returncode == 0 and r.stdout.strip() == "ok" and not r.stderr, r.stderr


@pytest.mark.parametrize("threads,devices,shares", [
    (13, 4, [4, 3, 3, 3]), (2, 4, [1, 1, 1, 1]), (4, 1, [4]), (5, 2, [3, 2])])
def test_devices_share_the_threads(monkeypatch, threads, devices, shares):
  """Several CPU devices split the kernel threads as evenly as it goes, one at least each
  (tests/multidevice_worker.py checks the pools the devices' executors really use)."""
  monkeypatch.setattr(host, "num_threads", lambda: threads)
  assert [threadpool.share(i, devices) for i in range(devices)] == shares
