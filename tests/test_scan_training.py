"""Training loops as `lax.scan` / `fori_loop` / `while_loop` (issue 18): the body runs the
same kernels as the jitted step alone, on state buffers the loop owns (control_flow.py:
xs and constants read in place, ys written in place, the carry double-buffered or updated in
place), so the results equal a Python loop of the jitted step bit for bit, and nothing the
body keeps is copied per iteration. Values are checked against NumPy in float64."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.driver import compilation
from ember._src.base import flags
from ember._src.backends.cpu import control_flow, cost_model, tiering
from ember._src.backends.cpu.codegen import kernels
from ember._src.backends.cpu import executable as ex

RNG = np.random.default_rng(18)
STEPS, BATCH, SIZES = 6, 16, (24, 32, 32, 5)
LR = 0.05


def mlp_loss(params, x, y):
  h = x
  for k, w in enumerate(params):
    h = h @ w
    if k < len(params) - 1:
      h = jnp.maximum(h, 0.0)
  return jnp.mean((h - y) ** 2)


def sgd(params, x, y):
  grads = ember.grad(mlp_loss)(params, x, y)
  return tuple(w - LR * g for w, g in zip(params, grads))


def numpy_sgd(params, x, y):
  """One SGD step of the same MLP in float64 (backpropagation by hand)."""
  hs, h = [x], x
  for k, w in enumerate(params):
    h = h @ w
    if k < len(params) - 1:
      h = np.maximum(h, 0.0)
    hs.append(h)
  delta = 2.0 * (h - y) / h.size
  grads = []
  for k in range(len(params) - 1, -1, -1):
    grads.append(hs[k].T @ delta)
    if k:
      delta = (delta @ params[k].T) * (hs[k] > 0)
  return tuple(w - LR * g for w, g in zip(params, grads[::-1]))


def problem():
  xs = RNG.standard_normal((STEPS, BATCH, SIZES[0])).astype(np.float32)
  ys = RNG.standard_normal((STEPS, BATCH, SIZES[-1])).astype(np.float32)
  params = tuple((RNG.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
                 for a, b in zip(SIZES[:-1], SIZES[1:]))
  return xs, ys, params


def epoch_scan(params, xs, ys):
  return lax.scan(lambda p, b: (sgd(p, *b), None), params, (xs, ys))[0]


def epoch_fori(params, xs, ys):
  return lax.fori_loop(0, xs.shape[0], lambda i, p: sgd(p, xs[i], ys[i]), params)


def epoch_while(params, xs, ys, n):    # a traced trip count: a while loop
  return lax.fori_loop(0, n, lambda i, p: sgd(p, xs[i], ys[i]), params)


def python_loop(params, xs, ys):
  step = ember.jit(sgd)
  for i in range(xs.shape[0]):
    params = step(params, xs[i], ys[i])
  return params


def numpy_loop(params, xs, ys):
  params = tuple(p.astype(np.float64) for p in params)
  for x, y in zip(xs.astype(np.float64), ys.astype(np.float64)):
    params = numpy_sgd(params, x, y)
  return params


def loop_thunk(f, *args, chunks: int = 2) -> control_flow.ControlFlowThunk:
  compilation._executables.clear()
  with cost_model.forced_chunks(chunks):
    exe = ember.jit(f).lower(*args).compile().runtime_executable()
  [t] = [t for t in exe.thunks if isinstance(t, control_flow.ControlFlowThunk)]
  return t


@pytest.mark.parametrize("chunks", [1, 2], ids=["generated loop", "runner"])
@pytest.mark.parametrize("epoch", [epoch_scan, epoch_fori,
                                   lambda p, xs, ys: epoch_while(p, xs, ys, STEPS)],
                         ids=["scan", "fori_loop", "while_loop"])
def test_training_loop_equals_python_loop_of_the_jitted_step(epoch, chunks):
  xs, ys, params = problem()
  compilation._executables.clear()
  with cost_model.forced_chunks(chunks):
    g = ember.jit(epoch).lower(params, xs, ys).compile()
  got = g(params, xs, ys)
  want = python_loop(params, xs, ys)
  ref = numpy_loop(params, xs, ys)
  for g, w, r in zip(got, want, ref):
    assert g.dtype == np.float32 and g.shape == r.shape
    np.testing.assert_array_equal(np.asarray(g), np.asarray(w))   # the same kernels
    np.testing.assert_allclose(np.asarray(g), r, rtol=2e-5, atol=2e-6)


def test_scan_training_loop_eager_equals_jit():
  xs, ys, params = problem()
  eager = epoch_scan(params, xs, ys)
  jitted = ember.jit(epoch_scan)(params, xs, ys)
  for e, j in zip(eager, jitted):
    np.testing.assert_allclose(np.asarray(j), np.asarray(e), rtol=2e-6, atol=2e-7)


def test_scan_body_copies_no_state():
  """xs are read where they live, the weights double-buffered: the body has no copy."""
  xs, ys, params = problem()
  t = loop_thunk(epoch_scan, params, xs, ys)
  body = t.subs[1].exe
  assert all(t.native) and t.loop is None          # kernels split across threads: the runner
  assert not [th for th in body.thunks if isinstance(th, ex.CopyThunk)]
  modes = dict(zip(map(tuple, (s.dims for s in t.in_shapes)), t.state_modes))
  assert modes[xs.shape] == modes[ys.shape] == "invariant"
  assert [m for m in t.state_modes if m == "double"]   # the new weights read the old ones


def copies_of_a_run(monkeypatch, f, *args) -> list[int]:
  """Bytes of each copy the loop runner makes during one call of jit(f)."""
  copied = []
  real = control_flow._copy

  def counting(dst, src):
    if dst.size and ex._data_ptr(dst) != ex._data_ptr(src):
      copied.append(dst.nbytes)
    real(dst, src)
  compilation._executables.clear()
  with cost_model.forced_chunks(2):
    g = ember.jit(f).lower(*args).compile()
  assert [t for t in g.runtime_executable().thunks if getattr(t, "loop", 0) is None]
  ember.block_until_ready(g(*args))
  monkeypatch.setattr(control_flow, "_copy", counting)
  ember.block_until_ready(g(*args))
  monkeypatch.setattr(control_flow, "_copy", real)
  return copied


def test_loop_runner_copies_do_not_grow_with_the_trip_count(monkeypatch):
  """The carry is copied in once (and out at most once), xs never: the bytes copied are the
  same for 2 and for 6 steps, and less than the weights twice over."""
  xs, ys, params = problem()
  short = copies_of_a_run(monkeypatch, epoch_scan, params, xs[:2], ys[:2])
  long = copies_of_a_run(monkeypatch, epoch_scan, params, xs, ys)
  assert short == long
  assert sum(long) <= 2 * sum(p.nbytes for p in params) + 64


def test_scan_ys_are_written_in_place():
  """ys computed by dynamic-update-slice in the state's own buffer: the kernel writes the
  update window only (its range is the update's), and the values match NumPy."""
  xs = RNG.standard_normal((7, 8, 16)).astype(np.float32)
  w = RNG.standard_normal((16, 16)).astype(np.float32)

  def f(xs, w):
    def body(c, x):
      h = jnp.tanh(x @ w + c)
      return c * 0.5 + h.mean(), h
    return lax.scan(body, jnp.zeros((8, 16), jnp.float32), xs)
  c, ys = ember.jit(f)(xs, w)
  cr, yl = np.zeros((8, 16)), []
  for x in xs.astype(np.float64):
    h = np.tanh(x @ w.astype(np.float64) + cr)
    cr = cr * 0.5 + h.mean()
    yl.append(h)
  np.testing.assert_allclose(np.asarray(ys), np.array(yl), rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(np.asarray(c), cr, rtol=2e-5, atol=2e-6)
  t = loop_thunk(f, xs, w)
  assert t.state_modes[-1] == "in_place"
  module = t.subs[1].assignment.module
  [dus] = [i for i in module.entry.instrs if i.opcode == "fusion"
           and i.called[0].root.opcode == "dynamic-update-slice"]
  [kernel] = [th for th in t.subs[1].exe.thunks if th.name == dus.name]
  assert kernel.outer == 1           # the window [1, 8, 16], not the 7 rows of ys


def test_in_place_update_kernel_needs_the_sole_in_place_operand():
  comp = kernels.wrap_as_fusion(_dus_instr())
  assert kernels.in_place_update(comp, {0: 0}) is comp.root
  assert kernels.in_place_update(comp, {}) is None
  assert kernels.in_place_update(comp, {0: 0, 1: 0}) is None


def _dus_instr():
  from ember._src.hlo import graph as hlo
  f32 = np.dtype(np.float32)
  base = hlo.Instr("parameter", hlo.Shape(f32, (5, 3)), attrs={"number": 0}, name="b")
  upd = hlo.Instr("parameter", hlo.Shape(f32, (1, 3)), attrs={"number": 1}, name="u")
  i = hlo.Instr("parameter", hlo.Shape(np.dtype(np.int32), ()), attrs={"number": 2}, name="i")
  return hlo.Instr("dynamic-update-slice", base.shape, [base, upd, i, i], name="dus")


def test_fori_loop_with_constants_reads_them_in_place():
  """A generated loop (small kernels only): a large loop constant shares one buffer
  between the two carry states instead of being copied every iteration."""
  table = RNG.standard_normal((64, 256)).astype(np.float32)
  x = RNG.standard_normal(256).astype(np.float32)

  def f(x, table):
    return lax.fori_loop(0, 64, lambda i, c: c * 0.9 + table[i], x)
  out = ember.jit(f)(x, table)
  ref = x.astype(np.float64)
  for i in range(64):
    ref = ref * 0.9 + table[i]
  np.testing.assert_allclose(np.asarray(out), ref, rtol=2e-5, atol=2e-6)
  t = loop_thunk(f, x, table, chunks=1)
  assert t.loop is not None
  a, b = t.loop.states
  k = [s.dims for s in t.in_shapes].index(table.shape)
  assert a[k] is b[k]
  assert not [th for th in t.subs[1].exe.thunks if isinstance(th, ex.CopyThunk)]


def test_tiered_body_gives_the_same_bits_after_its_tier_up():
  """A loop body that pays starts at the quick tier, like the jitted step alone; its
  optimized code (swapped in while or after the loop runs) computes the same values."""
  xs, ys, params = problem()
  compilation._executables.clear()
  with cost_model.forced_chunks(1), flags.override(tiered_compilation=True, opt_level=3):
    g = ember.jit(epoch_scan).lower(params, xs, ys).compile()   # a generated loop
  [t] = [t for t in g.runtime_executable().thunks
         if isinstance(t, control_flow.ControlFlowThunk)]
  assert t.loop is not None and t.subs[1].exe.tier_up_pending is not None
  first = [np.asarray(p) for p in g(params, xs, ys)]
  t.subs[1].exe.tier_up_pending.wait()
  again = g(params, xs, ys)
  for a, b in zip(first, again):
    np.testing.assert_array_equal(a, np.asarray(b))
  assert t.built_for[1] is t.subs[1].exe.thunks       # the loop runs the optimized code


def test_loop_runs_under_the_profiler(tmp_path):
  """Under a trace the body runs thunk by thunk (one span each): the same values."""
  xs, ys, params = problem()
  g = ember.jit(epoch_scan)
  want = g(params, xs, ys)
  with ember.profiler.trace(str(tmp_path)):
    got = ember.block_until_ready(g(params, xs, ys))
  for a, b in zip(want, got):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_runner_checks_outputs_against_other_elements_operands():
  from ember._src.passes.buffer_assignment import Slot
  a, b = Slot("parameter", 0, 0, 64), Slot("parameter", 1, 0, 64)
  t1, t2 = Slot("temp", -1, 0, 64), Slot("temp", -1, 64, 64)
  assert not control_flow._overlaps([a, b], [Slot("output", 0, 0, 64), Slot("output", 1, 0, 64)])
  assert not control_flow._overlaps([a, t1], [a, t2])        # element k in its own operand
  assert control_flow._overlaps([a, t1], [t1, t2])            # output 0 on operand 1
  assert control_flow._overlaps([t1, a], [Slot("temp", -1, 32, 64), t2])


@pytest.mark.parametrize("chunks", [1, 2], ids=["generated loop", "runner"])
@pytest.mark.parametrize("reverse,unroll,length", [(False, 1, 5), (True, 1, 5), (False, 2, 5),
                                                   (True, 3, 7), (False, 1, 0)])
def test_scan_ys_carry_and_xs_in_every_order(chunks, reverse, unroll, length):
  """ys rows written in place by the window kernel land where they belong (reverse,
  unrolled bodies and their remainder), next to an in-place and a double-buffered carry."""
  xs = RNG.standard_normal((length, 4, 6)).astype(np.float32)
  w = RNG.standard_normal((6, 6)).astype(np.float32)

  def f(xs, w):
    def body(c, x):
      s, m = c
      h = jnp.tanh(x @ m + s)
      return (s * 0.5 + 1.0, m * 0.9 + h.T @ h * 0.01), (h, jnp.sum(h))
    return lax.scan(body, (jnp.zeros((4, 6), jnp.float32), w), xs, reverse=reverse,
                    unroll=unroll)
  s, m = np.zeros((4, 6)), w.astype(np.float64)
  hs, sums = [None] * length, [0.0] * length
  for i in (range(length - 1, -1, -1) if reverse else range(length)):
    h = np.tanh(xs[i].astype(np.float64) @ m + s)
    s, m = s * 0.5 + 1.0, m * 0.9 + h.T @ h * 0.01
    hs[i], sums[i] = h, h.sum()
  compilation._executables.clear()
  with cost_model.forced_chunks(chunks):
    g = ember.jit(f).lower(xs, w).compile()
  (gs, gm), (gh, gsum) = g(xs, w)
  np.testing.assert_allclose(np.asarray(gs), s, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(np.asarray(gm), m, rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(np.asarray(gh), np.array(hs).reshape(gh.shape), rtol=2e-5,
                             atol=2e-6)
  np.testing.assert_allclose(np.asarray(gsum), np.array(sums), rtol=2e-5, atol=2e-5)


def _loop(f, *args) -> control_flow.ControlFlowThunk:
  """The thunk of jit(f)'s only loop, compiled with tiering on."""
  compilation._executables.clear()
  with flags.override(tiered_compilation=True, opt_level=3):
    exe = ember.jit(f).lower(*args).compile().runtime_executable()
  [t] = [t for t in exe.thunks if isinstance(t, control_flow.ControlFlowThunk)]
  return t


def test_loop_bodies_tier_only_when_the_whole_loop_of_quick_code_pays(two_core_cost_model):
  """The quick tier's slower code runs once per iteration until the swap: a body tiers when
  its trip count times its quick run time is under the limit, as a jitted function when
  it runs once; a trip count not known (a traced bound) never tiers. A body with math whose
  quick code would run too long starts at the vector-call tier (tiering.pays)."""
  x = RNG.standard_normal((256, 256)).astype(np.float32)

  def scan_of(length):
    return lambda x: lax.scan(lambda c, _: (jnp.tanh(c) * 1.5, None), x, None,
                              length=length)[0]

  def body_tiered(f, *args) -> tuple:
    t = _loop(f, *args)
    return t.trip_count, t.subs[1].exe.tier_up_pending is not None
  assert body_tiered(scan_of(1), x) == (1, True)
  assert body_tiered(scan_of(50), x) == (50, True)
  assert _loop(scan_of(1), x).subs[1].exe.first_tier == tiering.QUICK
  assert _loop(scan_of(50), x).subs[1].exe.first_tier == tiering.VECTOR_CALLS
  assert body_tiered(lambda x: lax.scan(lambda c, _: (c * 1.5 + 1.0, None), x, None,
                                        length=1000)[0], x) == (1000, False)
  assert body_tiered(lambda x: lax.fori_loop(3, 10, lambda i, c: c * 2.0, x), x[0]) == (7, True)
  traced = lambda x, n: lax.fori_loop(0, n, lambda i, c: c * 2.0, x)
  assert body_tiered(traced, x[0], 4) == (None, False)
  np.testing.assert_allclose(np.asarray(ember.jit(scan_of(3))(x)),
                             np.tanh(np.tanh(np.tanh(x) * 1.5) * 1.5) * 1.5, rtol=2e-6,
                             atol=2e-6)
