"""Run by tests/test_multidevice.py in a subprocess with N CPU devices (EMBER_NUM_CPU_DEVICES):
checks the collectives, jit over committed and split arrays, and shard_map/pmap inside jit
against NumPy, and prints a data-parallel MLP step's parameters (pmap, shard_map, jit with
NamedShardings, jit with a sharding constraint) as JSON."""
import json
import sys

import numpy as np

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember.sharding import NamedSharding, PartitionSpec as P

n = len(jax.devices())
rng = np.random.default_rng(0)


def check_collectives():
  x = rng.standard_normal((n, 2, 3)).astype(np.float32)
  outs = jax.pmap(lambda v: (lax.psum(v, "i"), lax.pmean(v, "i"), lax.pmax(v, "i"),
                             lax.pmin(v, "i"), lax.axis_index("i"), lax.all_gather(v, "i"),
                             lax.ppermute(v, "i", [(k, (k + 1) % n) for k in range(n)])),
                  "i")(x)
  s, m, mx, mn, ai, ag, pp = map(np.asarray, outs)
  np.testing.assert_allclose(s, np.broadcast_to(x.astype(np.float64).sum(0), x.shape), 1e-6)
  np.testing.assert_allclose(m, np.broadcast_to(x.astype(np.float64).mean(0), x.shape), 1e-6)
  np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), x.shape))
  np.testing.assert_array_equal(mn, np.broadcast_to(x.min(0), x.shape))
  np.testing.assert_array_equal(ai, np.arange(n))
  np.testing.assert_array_equal(ag, np.broadcast_to(x, (n,) + x.shape))
  np.testing.assert_array_equal(pp, np.roll(x, 1, 0))
  z = rng.standard_normal((n, 2 * n)).astype(np.float32)
  rs = jax.pmap(lambda v: lax.psum_scatter(v, "i", tiled=True), "i")(z)
  np.testing.assert_allclose(np.asarray(rs), z.astype(np.float64).sum(0).reshape(n, 2), 1e-6)
  w = rng.standard_normal((n, n)).astype(np.float32)
  np.testing.assert_array_equal(np.asarray(jax.pmap(lambda v: lax.all_to_all(v, "i", 0, 0),
                                                    "i")(w)), w.T)
  assert y_sharding_ok(jax.pmap(lambda v: v * 2, "i")(x))
  if n % 2 == 0:   # replica groups: pairs of neighbours
    groups = [[2 * k, 2 * k + 1] for k in range(n // 2)]
    g = np.asarray(jax.pmap(lambda v: lax.psum(v, "i", axis_index_groups=groups), "i")(w))
    np.testing.assert_allclose(g, np.repeat(w.reshape(n // 2, 2, n).sum(1), 2, 0), 1e-6)


def y_sharding_ok(y):
  shards = y.addressable_shards
  return len(shards) == n and [s.device for s in shards] == jax.devices()[:n]


def loss(params, x, y):
  (w1, b1), (w2, b2) = params
  h = jnp.tanh(x @ w1 + b1)
  return jnp.mean((h @ w2 + b2 - y) ** 2)


def init():
  r = np.random.default_rng(1)
  return [(r.standard_normal((8, 16)).astype(np.float32) * 0.3, np.zeros(16, np.float32)),
          (r.standard_normal((16, 1)).astype(np.float32) * 0.3, np.zeros(1, np.float32))]


def batch():
  r = np.random.default_rng(2)
  x = r.standard_normal((32, 8)).astype(np.float32)
  return x, np.sin(x.sum(1, keepdims=True)).astype(np.float32)


def sgd(params, grads):
  return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def pmap_steps(steps=3):
  """Each device: its 32/n examples; grads averaged with pmean (equal shards: the mean of
  the shard means is the full batch's mean)."""
  x, y = batch()
  step = jax.pmap(lambda p, xb, yb: sgd(p, lax.pmean(jax.grad(loss)(p, xb, yb), "d")), "d",
                  in_axes=(None, 0, 0), out_axes=None)
  params = init()
  xs, ys = x.reshape(n, -1, 8), y.reshape(n, -1, 1)
  for _ in range(steps):
    params = step(params, xs, ys)
  return params


def shard_map_steps(steps=3):
  mesh = jax.make_mesh((n,), ("d",))
  x, y = batch()
  step = jax.shard_map(lambda p, xb, yb: sgd(p, lax.pmean(jax.grad(loss)(p, xb, yb), "d")),
                       mesh=mesh, in_specs=(P(), P("d"), P("d")), out_specs=P())
  params = init()
  xs = jax.device_put(x, NamedSharding(mesh, P("d")))
  for _ in range(steps):
    params = step(params, xs, y)
  return params


def check_jit_committed():
  """All committed arguments on one device: runs there, outputs committed there; on two
  devices: JAX's incompatible-devices error naming both arguments."""
  d = jax.devices()
  x = rng.standard_normal((4, 3)).astype(np.float32)
  f = jax.jit(lambda a, b: (a * 2 + b).sum(0))
  r = f(jax.device_put(x, d[-1]), 1.0)
  assert r.committed and r.sharding == jax.sharding.SingleDeviceSharding(d[-1]), r.sharding
  np.testing.assert_allclose(np.asarray(r), (x.astype(np.float64) * 2 + 1).sum(0), 1e-6)
  if n > 1:
    try:
      f(jax.device_put(x, d[0]), jax.device_put(x, d[1]))
    except ValueError as e:
      msg = str(e)
      assert msg.startswith("Received incompatible devices for jitted computation.") and \
          "argument a of <lambda> with shape float32[4,3] and with device ids [0]" in msg and \
          "argument b of <lambda> with shape float32[4,3] and with device ids [1]" in msg, msg
    else:
      raise AssertionError("no incompatible-devices error")


# Split contractions and reductions add per-device partial sums, then the partials in rank
# order: f32 rounding differs from one sum over the whole axis by a few ulps.
TOL = dict(rtol=2e-6, atol=1e-6)


def check_jit_partitioned():
  """Ops of a jit over split arguments (and with in/out_shardings) against NumPy, and the
  outputs' shardings."""
  mesh = jax.make_mesh((n,), ("data",))
  data, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  x = rng.standard_normal((8, 4)).astype(np.float32)
  w = rng.standard_normal((4, 3)).astype(np.float32)
  xs = jax.device_put(x, data)
  outs = jax.jit(lambda x, w: (jnp.tanh(x @ w) + 1.0, (x @ w).sum(), x.T @ x, x.max(0),
                               jnp.cumsum(x, 0), (x.reshape(8, 2, 2) * 3).T))(xs, w)
  x64, w64 = x.astype(np.float64), w.astype(np.float64)
  want = [np.tanh(x64 @ w64) + 1, (x64 @ w64).sum(), x64.T @ x64, x.max(0),
          np.cumsum(x64, 0), (x64.reshape(8, 2, 2) * 3).T]
  for got, ref in zip(outs, want):
    np.testing.assert_allclose(np.asarray(got), ref, **TOL)
  if n > 1:   # (on one device the arguments are committed to it: SingleDeviceShardings)
    specs = [o.sharding.spec for o in outs]
    # batch-sharded activations; replicated after the all-reduce; cumsum is computed whole
    assert specs == [P("data"), P(), P(), P(), P(), P(None, None, "data")], specs
  y = jax.jit(lambda a: a * 2, in_shardings=repl, out_shardings=data)(x)
  assert y.sharding == data and [s.data.shape for s in y.addressable_shards] == \
      [(8 // n, 4)] * n
  np.testing.assert_array_equal(np.asarray(y), x * 2)
  # a 0-d argument's pieces stay 0-d (np.ascontiguousarray made them 1-d: a "mul" shape
  # error), a Python scalar, NumPy scalar or 0-d Array, with a split argument; JAX 0.12.1:
  # 8.0 each, and a replicated 0-d device_put has 0-d shards
  f = jax.jit(lambda a, s: (a * s).sum(), in_shardings=(data, None))
  for s in (0.5, np.float32(0.5), jnp.float32(0.5)):
    assert float(f(jnp.ones((4 * n, 4)), s)) == 8.0 * n
  r = jax.device_put(jnp.float32(2.0), repl)
  assert r.shape == () and [s.data.shape for s in r.addressable_shards] == [()] * n
  z = jax.jit(lambda a: jax.sharding.reshard(a * 2, P("data")) + 1)
  with jax.set_mesh(mesh):
    zz = z(x)
  np.testing.assert_array_equal(np.asarray(zz), x * 2 + 1)
  assert n == 1 or zz.sharding.spec == P("data"), zz.sharding
  if n == 4:   # a 2-D mesh: contraction over the 'y'-split dim of both operands
    m2 = jax.make_mesh((2, 2), ("x", "y"))
    a = jax.device_put(x, NamedSharding(m2, P("x", "y")))
    b = jax.device_put(rng.standard_normal((4, 6)).astype(np.float32),
                       NamedSharding(m2, P("y", None)))
    c = jax.jit(lambda a, b: a @ b)(a, b)
    np.testing.assert_allclose(np.asarray(c), x64 @ np.asarray(b, np.float64), **TOL)
    assert c.sharding.spec == P("x"), c.sharding


def check_cached_plan():
  """A partitioned jit's second call with the same placements takes the plan the first made
  (no new plan: no checks, index maps or program lookups again), and gives the same values;
  a new placement of an argument makes a plan of its own."""
  from ember._src.parallel import spmd
  mesh = jax.make_mesh((n,), ("data",))
  data, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  a = jax.device_put(rng.standard_normal((8, 4)).astype(np.float32), data)
  b = rng.standard_normal((4, 3)).astype(np.float32)
  f = jax.jit(lambda a, b: a @ b)
  made = spmd.plans_made[0]
  first = np.asarray(f(a, b))
  assert spmd.plans_made[0] == made + 1
  second = f(a, b)
  assert spmd.plans_made[0] == made + 1, "the second call made a new plan"
  np.testing.assert_array_equal(np.asarray(second), first)
  assert n == 1 or second.sharding.spec == P("data"), second.sharding
  f(a, jax.device_put(b, repl))   # b split (replicated) over the mesh: another placement
  assert spmd.plans_made[0] == made + 2
  # the later calls take jit's fast path straight to the plan (no signature lookup): one
  # entry per placement, the same values; a changed all-reduce grouping flag is honored
  assert len(f._fast) == 2
  third = f(a, b)
  assert len(f._fast) == 2
  np.testing.assert_array_equal(np.asarray(third), first)
  g = jax.jit(lambda a: (a * a).sum(axis=0))
  ref = (np.asarray(a).astype(np.float64) ** 2).sum(axis=0)
  for grouped in (True, True, False, False, True):
    jax.config.update("ember_group_all_reduces", grouped)
    np.testing.assert_allclose(np.asarray(g(a)), ref, rtol=1e-6)
  for dev in jax.devices():   # arrays committed to one device: a fast entry per device
    x = jax.device_put(np.arange(4, dtype=np.float32), dev)
    h = jax.jit(lambda v: v * 3)
    for _ in range(2):
      out = h(x)
      assert out.devices() == {dev}
      np.testing.assert_array_equal(np.asarray(out), np.arange(4) * 3)
    assert len(h._fast) == 1


def device_program_collectives(jitted, group: bool) -> list:
  """(primitive, operand count) of each collective of the partitioned per-device program of
  `jitted`'s one cached signature (all-reduces grouped or not), in program order."""
  (entry,) = jitted._cache.values()
  (fun,) = [f for key, (f, _) in entry.programs.items() if key[-1] == group]
  (prog,) = fun.jitted._cache.values()
  return [(e.primitive.name, len(e.invars)) for e in prog.staged.jaxpr.eqns
          if e.primitive.name in ("psum", "pmax", "all_reduce_group")]


def check_all_reduce_grouping():
  """A partitioned jit's independent all-reduces run as one per (level, op, dtype): the sums
  of two f32 values go together, the max and the int32 sum apart, and a sum reading the
  first sum after them; values equal NumPy's, bit for bit those of one collective each."""
  mesh = jax.make_mesh((n,), ("data",))
  data = NamedSharding(mesh, P("data"))
  x = rng.standard_normal((8, 4)).astype(np.float32)
  k = rng.integers(-9, 9, (8, 3)).astype(np.int32)

  def f(x, k):
    s1 = x.sum(0)
    return s1 + (x * x).sum(0), x.max(0), k.sum(0), (x * s1).sum(0)
  outs = {}
  for group in (True, False):
    jax.config.update("ember_group_all_reduces", group)
    jf = jax.jit(f, in_shardings=(data, data))
    outs[group] = [np.asarray(o) for o in jf(x, k)]
    if n > 1:
      got = device_program_collectives(jf, group)
      want = ([("all_reduce_group", 2), ("pmax", 1), ("psum", 1), ("psum", 1)] if group
              else [("psum", 1), ("psum", 1), ("pmax", 1), ("psum", 1), ("psum", 1)])
      assert sorted(got[:-1]) == sorted(want[:-1]) and got[-1] == ("psum", 1), (group, got)
  jax.config.update("ember_group_all_reduces", True)
  x64 = x.astype(np.float64)
  want = [x64.sum(0) + (x64 * x64).sum(0), x.max(0), k.sum(0), (x64 * x64.sum(0)).sum(0)]
  for got, ref, same in zip(outs[True], want, outs[False]):
    np.testing.assert_allclose(got, ref, **TOL)
    np.testing.assert_array_equal(got, same)   # each element summed in the same order


def check_async_collectives():
  """A partitioned step's gradient all-reduces go in buckets (all_reduce_grouping's
  bucket_bytes) as start/done pairs (passes/async_collectives.py): the first bucket starts
  before the backward pass has made the first layer's gradient, each done waits where the
  update reads it; the values are those of blocking collectives, bit for bit."""
  from ember._src.parallel import all_reduce_grouping
  from ember._src.base import flags
  from ember._src.passes import async_collectives
  if n == 1:
    return
  mesh = jax.make_mesh((n,), ("data",))
  data, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  x, y = batch()
  params = init()
  outs = {}
  saved = all_reduce_grouping.BUCKET_BYTES, async_collectives.MIN_BYTES
  all_reduce_grouping.BUCKET_BYTES, async_collectives.MIN_BYTES = 100, 0
  try:
    for overlap in (True, False):
      with flags.override(disable_passes=() if overlap else ("async_collectives",)):
        step = jax.jit(lambda p, xb, yb: sgd(p, jax.grad(loss)(p, xb, yb)),
                       in_shardings=(repl, data, data), out_shardings=repl)
        outs[overlap] = flat(step(params, x, y))
      (entry,) = step._cache.values()
      ((fun, _),) = entry.programs.values()
      (prog,) = fun.jitted._cache.values()
      # the small gradients (b2, w2, b1: 132 bytes) go as one bucket, w1 alone
      assert device_program_collectives(step, True) == [("all_reduce_group", 3),
                                                        ("psum", 1)]
      instrs = prog.compiled.module.entry.instrs
      names = [i.name for i in instrs]
      if overlap:   # w1's gradient is computed while the first bucket is in flight
        start, done = names.index("all-reduce-start"), names.index("all-reduce-done")
        assert any(i.opcode == "dot" for i in instrs[start:done]), names
      else:
        assert not any(name.startswith("all-reduce-start") for name in names), names
    # small collectives in all (the default MIN_BYTES): blocking, no pairs
    async_collectives.MIN_BYTES = saved[1]
    small = jax.jit(lambda p, xb, yb: sgd(p, jax.grad(loss)(p, xb, yb)),
                    in_shardings=(repl, data, data), out_shardings=repl)
    assert flat(small(params, x, y)) == outs[False]
    (entry,) = small._cache.values()
    ((fun, _),) = entry.programs.values()
    (prog,) = fun.jitted._cache.values()
    assert not any(i.name.startswith("all-reduce-start")
                   for i in prog.compiled.module.entry.instrs)
  finally:
    all_reduce_grouping.BUCKET_BYTES, async_collectives.MIN_BYTES = saved
  assert outs[True] == outs[False]


def check_maps_inside_jit():
  """shard_map and pmap inside jit: the values of the top-level per-device runs (and of
  NumPy)."""
  shape = (2, n // 2) if n % 2 == 0 else (n, 1)
  mesh = jax.make_mesh(shape, ("x", "y"))
  x = rng.standard_normal((8, 6)).astype(np.float32)

  def body(b):
    return (lax.psum(b.sum(0, keepdims=True), "x"), b * 2,
            lax.all_gather(b, "x", axis=0, tiled=True))
  sm = jax.shard_map(body, mesh=mesh, in_specs=P("x", "y"),
                     out_specs=(P(None, "y"), P("x", "y"), P(None, "y")))
  top, inside = sm(x), jax.jit(sm)(x)
  want = [x.astype(np.float64).sum(0, keepdims=True), x * 2, x]
  for t, i, ref in zip(top, inside, want):
    np.testing.assert_allclose(np.asarray(t), ref, **TOL)
    np.testing.assert_allclose(np.asarray(i), ref, **TOL)
  pm = jax.pmap(lambda v: lax.psum(v, "i") * v, "i")
  v = rng.standard_normal((n, 3)).astype(np.float32)
  np.testing.assert_allclose(np.asarray(jax.jit(pm)(v)), v.sum(0) * v, **TOL)


def jit_steps(steps=3):
  """The step as one jit over the mesh: the batch split over 'data', the params
  replicated; propagation makes the weight grads local dots + psum."""
  mesh = jax.make_mesh((n,), ("data",))
  data, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())
  x, y = batch()
  step = jax.jit(lambda p, xb, yb: sgd(p, jax.grad(loss)(p, xb, yb)),
                 in_shardings=(repl, data, data), out_shardings=repl)
  params = init()
  for _ in range(steps):
    params = step(params, x, y)
  assert all(p.sharding == repl for p in jax.tree.leaves(params))
  return params


def constrained_steps(steps=3):
  """The same step with the split asked for inside (with_sharding_constraint) and the
  params' sharding left to propagation (replicated after the psum)."""
  mesh = jax.make_mesh((n,), ("data",))
  data = NamedSharding(mesh, P("data"))
  x, y = batch()
  step = jax.jit(lambda p, xb, yb: sgd(p, jax.grad(loss)(
      p, lax.with_sharding_constraint(xb, data), lax.with_sharding_constraint(yb, data))))
  params = init()
  for _ in range(steps):
    params = step(params, x, y)
  if n > 1:
    assert all(p.sharding.spec == P() for p in jax.tree.leaves(params))
  return params


def check_device_pools():
  """Each device's executor runs split kernels on its own pool, of its share of the threads
  (the test sets EMBER_NUM_THREADS=4: one device 4, two 2 each, four 1 each)."""
  from ember._src.backends.cpu import threadpool
  x = np.arange(1 << 20, dtype=np.float32)
  f = jax.jit(lambda v: v * 2 + 1)
  for d in jax.devices():
    out = f(jax.device_put(x, d))
    assert out.devices() == {d}
    np.testing.assert_array_equal(np.asarray(out), x * 2 + 1)
  pools = {0: threadpool._pool, **threadpool._device_pools}
  sizes = [len(pools[i].threads) + 1 if isinstance(pools[i], threadpool._Pool) else 1
           for i in range(n)]
  assert sizes == [threadpool.share(i) for i in range(n)] == [max(1, 4 // n)] * n, sizes
  # an executable's cached step table (two split kernels in one native call) is built by the
  # device that runs it first, and pointed at the pool of whichever device runs it next
  g = jax.jit(lambda v: jnp.exp(-v * 1e-6) + v.sum())
  exe = g.lower(x).compile().runtime_executable()
  for i, d in reversed(list(enumerate(jax.devices()))):
    out = g(jax.device_put(x, d))
    np.testing.assert_allclose(np.asarray(out), np.exp(-x * 1e-6) + x.astype(np.float64).sum(),
                               rtol=1e-6)
    pool = threadpool._device_pools[i] if i else threadpool._pool
    tables = [t[3] for t in exe._steps if type(t) is tuple and len(t) == 4]
    assert tables and all(t[0, 0] == pool.state for t in tables)


def _raises(exc, text, f, *args):
  try:
    f(*args)
  except exc as e:
    assert text in str(e), str(e)
  else:
    raise AssertionError(f"no {exc.__name__} ({text})")


def check_abstract_mesh_constraint():
  """with_sharding_constraint to a NamedSharding over an AbstractMesh (flax's shardings over
  get_abstract_mesh()) is laid out over the mesh in context, else over the array's own mesh;
  JAX 0.12's results, shardings and errors."""
  if n % 2:
    return
  mesh = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, n // 2), ("in", "out"))
  split = NamedSharding(mesh, P("in", "out"))
  x = np.arange(16.0, dtype=np.float32).reshape(4, 4)
  wide = jax.sharding.AbstractMesh((1, n), ("in", "out"), (jax.sharding.AxisType.Auto,) * 2)
  with jax.set_mesh(mesh):
    s = NamedSharding(jax.sharding.get_abstract_mesh(), P("in", "out"))
    for v in (jnp.asarray(x), x):
      r = lax.with_sharding_constraint(v, s)
      assert r.sharding == split, r.sharding
      np.testing.assert_array_equal(np.asarray(r), x)
    r = jax.jit(lambda v: lax.with_sharding_constraint(v * 2, s))(jnp.asarray(x))
    assert r.sharding.is_equivalent_to(split, 2), r.sharding
    np.testing.assert_array_equal(np.asarray(r), x * 2)
    # JAX takes the context mesh even where the abstract mesh's shape differs
    assert lax.with_sharding_constraint(x, NamedSharding(wide, P("in"))).sharding == \
        NamedSharding(mesh, P("in"))
  s = NamedSharding(mesh.abstract_mesh, P("in", "out"))
  placed = jax.device_put(x, NamedSharding(mesh, P()))
  r = lax.with_sharding_constraint(placed, s)
  assert r.sharding == split, r.sharding
  np.testing.assert_array_equal(np.asarray(r), x)
  r = jax.jit(lambda v: lax.with_sharding_constraint(v * 2, s))(jnp.asarray(x))
  assert isinstance(r.sharding, jax.sharding.SingleDeviceSharding), r.sharding
  np.testing.assert_array_equal(np.asarray(r), x * 2)
  _raises(TypeError, "The sharding on the input must be a `NamedSharding` since the target "
          "sharding has an `AbstractMesh` in it.", lax.with_sharding_constraint,
          jnp.asarray(x), s)
  _raises(ValueError, "requires the input passed should be a `jax.Array`",
          lax.with_sharding_constraint, x, s)
  _raises(ValueError, f"Mesh shape of the input (('in', 2), ('out', {n // 2})) does not match "
          f"the mesh shape of the target sharding (('in', 1), ('out', {n})) for shape "
          "float32[4,4]", lax.with_sharding_constraint, placed, NamedSharding(wide, P("in")))


def check_is_equivalent_to():
  """Shardings that put the same pieces on the same devices, split or not: JAX 0.12's."""
  if n != 4:
    return
  sq = jax.sharding.Mesh(np.array(jax.devices()).reshape(2, 2), ("in", "out"))
  tall = jax.sharding.Mesh(np.array(jax.devices()).reshape(4, 1), ("in", "out"))
  ns = lambda m, *spec: NamedSharding(m, P(*spec))   # noqa: E731
  assert ns(sq, "in", "out").is_equivalent_to(ns(sq, "in", "out"), 2)
  assert not ns(sq, "in", "out").is_equivalent_to(ns(sq, "in"), 2)
  assert ns(sq, "in").is_equivalent_to(ns(sq, "in", None), 2)
  assert ns(tall, "in").is_equivalent_to(ns(tall, "in", "out"), 2)
  assert ns(tall, "out").is_equivalent_to(ns(tall), 2)
  assert not ns(sq, ("in", "out")).is_equivalent_to(ns(sq, ("out", "in")), 1)
  assert ns(sq, ("in", "out")).is_equivalent_to(ns(tall, "in"), 1)
  assert not ns(sq).is_equivalent_to(jax.sharding.SingleDeviceSharding(jax.devices()[0]), 2)


def check_smap_and_host_local():
  """jax.smap and multihost_utils' host-local arrays over all n devices (JAX 0.12.1 with 2
  devices: [0, 2, 5, 7] and [3, 5, 3, 5] for the first two)."""
  from ember.experimental import multihost_utils as mh
  mesh = jax.make_mesh((n,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
  x = jnp.arange(2.0 * n)
  with jax.set_mesh(mesh):
    f = jax.smap(lambda v: v * 2 + lax.axis_index("x"), in_axes=0, out_axes=0, axis_name="x")
    np.testing.assert_array_equal(f(x), np.arange(2.0 * n) * 2 + np.repeat(np.arange(n), 2))
    g = jax.smap(lambda v, c: lax.psum(v, "x") + c, in_axes=(0, None), out_axes=0,
                 axis_name="x")
    sums = np.arange(2.0 * n).reshape(n, 2).sum(0) + 1
    np.testing.assert_array_equal(g(x, 1.0), np.tile(sums, n))
  glob = mh.host_local_array_to_global_array(np.arange(2.0 * n), mesh, P("x"))
  assert glob.sharding == NamedSharding(mesh, P("x"))
  local = mh.global_array_to_host_local_array(glob, mesh, P("x"))
  np.testing.assert_array_equal(local, np.arange(2.0 * n))


def flat(ps):
  return [np.asarray(a, np.float64).ravel().tolist() for a in jax.tree.leaves(ps)]


if __name__ == "__main__":
  check_collectives()
  check_jit_committed()
  check_jit_partitioned()
  check_cached_plan()
  check_all_reduce_grouping()
  check_async_collectives()
  check_maps_inside_jit()
  check_device_pools()
  check_abstract_mesh_constraint()
  check_is_equivalent_to()
  check_smap_and_host_local()
  json.dump({"n": n, "pmap": flat(pmap_steps()), "shard_map": flat(shard_map_steps()),
             "jit": flat(jit_steps()), "jit_constraint": flat(constrained_steps())},
            sys.stdout)
