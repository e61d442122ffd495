"""One process of tests/test_mpi.py's `mpirun -n N` runs: checks ember.distributed and the
MPI collectives against NumPy, then a data-parallel MLP training step against the full-batch
step computed alone. Every process derives every rank's inputs from the rank number, so each
can compute the expected results itself. Prints `OK <rank>` on success; a failure raises
(mpirun then exits non-zero).

    mpirun -n 4 python tests/mpi_worker.py
"""
from __future__ import annotations

import threading
import zlib

import numpy as np

import ember as jax
import ember.numpy as jnp
from ember import lax
from ember._src.parallel import distributed as dist
from ember._src.runtime.mpi_collectives import MpiCommunicator
from ember.experimental import multihost_utils
from ember.sharding import NamedSharding, PartitionSpec as P

# MPI sums the ranks' float32 values in its algorithm's order, NumPy (float64) in its own: they
# differ by rounding only, at most (n-1) ulps of the sum's magnitude for n ranks.
F32_TOL = dict(rtol=1e-5, atol=1e-5)


def inputs(rank: int, shape, dtype=np.float32) -> np.ndarray:
  rng = np.random.default_rng(1000 + rank)
  if np.dtype(dtype).kind in "iu":
    return rng.integers(-50, 50, shape).astype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  return rng.standard_normal(shape).astype(dtype)


def check_process_api(n: int, me: int, k: int):
  """n processes of k devices each."""
  assert jax.process_count() == n and jax.process_index() == me
  assert jax.distributed.is_initialized()
  devs = jax.devices()
  assert [d.id for d in devs] == list(range(n * k)), devs
  assert [d.process_index for d in devs] == [p for p in range(n) for _ in range(k)]
  assert jax.local_devices() == devs[me * k:(me + 1) * k] and jax.local_device_count() == k
  assert jax.device_count() == n * k
  other = (me + 1) % n
  assert jax.local_devices(process_index=other) == devs[other * k:(other + 1) * k]
  try:
    jax.distributed.initialize()
  except RuntimeError as e:
    assert "only be called once" in str(e)
  else:
    raise AssertionError("a second initialize did not raise")


def check_collectives(comm, ranks: list[int], held: list[int]):
  """`comm` is a group of `len(ranks)` ranks; this process holds `held` (one thread each)."""
  n = comm.size
  xs = [inputs(r, (5, 3)) for r in range(n)]
  ints = [inputs(r, (7,), np.int32) for r in range(n)]
  bools = [inputs(r, (6,), np.bool_) for r in range(n)]
  rows = [inputs(r, (n, 4)) for r in range(n)]
  pairs_cycle = [(i, (i + 1) % n) for i in range(n)]
  pairs_part = [(0, n - 1)] if n > 1 else []

  def per_rank(r):
    out = {}
    out["sum"] = comm.all_reduce(r, xs[r], "sum")
    out["max"] = comm.all_reduce(r, xs[r], "max")
    out["min"] = comm.all_reduce(r, xs[r], "min")
    out["prod"] = comm.all_reduce(r, xs[r], "prod")
    out["isum"] = comm.all_reduce(r, ints[r], "sum")
    out["bor"] = comm.all_reduce(r, bools[r], "sum")
    out["h"] = comm.all_reduce(r, xs[r].astype(np.float16), "sum")
    out["scalar"] = comm.all_reduce(r, np.float32(r), "sum")
    out["gather"] = comm.all_gather(r, xs[r])
    out["rs"] = comm.reduce_scatter(r, rows[r], "sum")
    out["a2a"] = comm.all_to_all(r, rows[r])
    out["cycle"] = comm.permute(r, xs[r], pairs_cycle)
    out["part"] = comm.permute(r, xs[r], pairs_part)
    out["again"] = comm.all_reduce(r, xs[r], "sum")
    return out

  results = run_threads(held, per_rank)
  x64 = np.stack(xs).astype(np.float64)
  for r, out in results.items():
    np.testing.assert_allclose(out["sum"], x64.sum(0), **F32_TOL)
    np.testing.assert_array_equal(out["max"], np.max(xs, 0))
    np.testing.assert_array_equal(out["min"], np.min(xs, 0))
    np.testing.assert_allclose(out["prod"], x64.prod(0), **F32_TOL)
    np.testing.assert_array_equal(out["isum"], np.sum(ints, 0))
    np.testing.assert_array_equal(out["bor"], np.any(bools, 0))
    assert out["h"].dtype == np.float16
    np.testing.assert_allclose(out["h"], x64.astype(np.float16).astype(np.float64).sum(0),
                               rtol=2e-3, atol=2e-3)  # float16's own rounding of the result
    assert out["scalar"].shape == () and out["scalar"] == sum(range(n))
    np.testing.assert_array_equal(out["gather"], np.stack(xs))
    np.testing.assert_allclose(out["rs"], np.sum(np.stack(rows).astype(np.float64), 0)[r],
                               **F32_TOL)
    np.testing.assert_array_equal(out["a2a"], np.stack([rows[j][r] for j in range(n)]))
    np.testing.assert_array_equal(out["cycle"], xs[(r - 1) % n])
    expect_part = xs[0] if (n > 1 and r == n - 1) else np.zeros_like(xs[r])
    np.testing.assert_array_equal(out["part"], expect_part)
    # deterministic: a repeated reduction gives the same bits
    np.testing.assert_array_equal(out["again"], out["sum"])
  return results


def run_threads(held, fn):
  """fn(rank) on one thread per held rank (as device executors call a communicator)."""
  results, errors = {}, []

  def body(r):
    try:
      results[r] = fn(r)
    except BaseException as e:  # reported by the main thread
      errors.append(e)
  threads = [threading.Thread(target=body, args=(r,)) for r in held]
  for t in threads:
    t.start()
  for t in threads:
    t.join(60)
  if errors:
    raise errors[0]
  assert len(results) == len(held), "a rank's collective did not finish"
  return results


def check_same_bits_everywhere(value: np.ndarray):
  """Every process got the same bits (MPI's reduction order does not depend on the rank)."""
  everyone = multihost_utils.process_allgather(value)
  for v in everyone:
    np.testing.assert_array_equal(v.view(np.uint32), value.view(np.uint32))


def check_groups(n: int, me: int):
  world = dist.cross_process_communicator(range(n))
  out = check_collectives(world, list(range(n)), [me])
  check_same_bits_everywhere(out[me]["sum"])
  assert dist.cross_process_communicator(range(n)) is world  # cached
  # a sub-group in reverse process order: its rank 0 is the last process
  group = [n - 1, 0] if n > 2 else [1, 0]
  if me in group:
    sub = dist.cross_process_communicator(group)
    check_collectives(sub, group, [group.index(me)])
  # several ranks per process, unevenly and out of process order (as when each process has
  # several devices): process p holds the ranks r with owner[r] == p
  for owner in ([(r * 3) % n for r in range(2 * n - 1)], [r % n for r in range(2 * n)]):
    procs = tuple(dict.fromkeys(owner))  # the communicator's ranks are these, in this order
    many = MpiCommunicator(dist._STATE.factory._sub_comm(procs), range(len(owner)), owner, me)
    held = [r for r in range(len(owner)) if owner[r] == me]
    check_collectives(many, list(range(len(owner))), held)


def check_errors(n: int, me: int):
  world = dist.cross_process_communicator(range(n))
  for call, msg in [(lambda: world.all_reduce((me + 1) % n, np.ones(2), "sum"), "held by"),
                    (lambda: world.all_reduce(me, np.ones(2), "mean"), "op must be"),
                    (lambda: world.reduce_scatter(me, np.ones(n + 1), "sum"), "leading"),
                    (lambda: world.permute(me, np.ones(2), [(0, 1), (0, 1)]), "at most once"),
                    (lambda: dist.cross_process_communicator([0, n]), "not devices")]:
    try:
      call()
    except (ValueError, TypeError) as e:
      assert msg in str(e), (msg, e)
    else:
      raise AssertionError(f"no error for {msg}")


def check_multihost_utils(n: int, me: int):
  mu = multihost_utils
  x = np.arange(3, dtype=np.float32) + me
  np.testing.assert_array_equal(mu.process_allgather(x), np.stack([np.arange(3) + p
                                                                   for p in range(n)]))
  np.testing.assert_array_equal(mu.process_allgather({"a": x}, tiled=True)["a"],
                                np.concatenate([np.arange(3) + p for p in range(n)]))
  np.testing.assert_array_equal(mu.process_allgather(np.int32(me), tiled=True), np.arange(n))
  np.testing.assert_array_equal(mu.broadcast_one_to_all(x), np.arange(3))
  last = mu.broadcast_one_to_all({"v": jnp.full((2,), me)}, is_source=me == n - 1)
  np.testing.assert_array_equal(last["v"], [n - 1, n - 1])
  mu.sync_global_devices("step 1")
  mu.assert_equal({"w": np.ones(3)}, "same everywhere")
  try:
    mu.assert_equal(np.float32(me), "differs")
  except AssertionError as e:
    assert "differs" in str(e)
  else:
    raise AssertionError("assert_equal passed on different values")
  try:
    mu.sync_global_devices(f"name {me}")
  except AssertionError as e:
    assert "sync_global_devices name mismatch" in str(e)
  else:
    raise AssertionError("sync_global_devices passed on different names")


def check_host_local_arrays(n: int, me: int, k: int):
  """host_local_array_to_global_array and back: each process's rows of a global array split
  over all n*k devices; a replicated spec keeps the local shape."""
  mu = multihost_utils
  mesh = jax.make_mesh((n * k,), ("x",))
  x = inputs(9, (2 * n * k, 3))
  g = mu.host_local_array_to_global_array(local_rows(x, me, n), mesh, P("x"))
  assert g.shape == x.shape and g.sharding == NamedSharding(mesh, P("x"))
  back = mu.global_array_to_host_local_array(g, mesh, P("x"))
  np.testing.assert_array_equal(np.asarray(back), local_rows(x, me, n))
  assert back.shape == local_rows(x, me, n).shape
  r = mu.host_local_array_to_global_array(x[:2], mesh, P())
  assert r.shape == (2, 3)
  np.testing.assert_array_equal(np.asarray(mu.global_array_to_host_local_array(r, mesh, P())),
                                x[:2])
  try:   # a distributed runtime without a preemption service: JAX's RuntimeError
    mu.reached_preemption_sync_point(0)
  except RuntimeError as e:
    assert "Preemption sync manager" in str(e)
  else:
    raise AssertionError("reached_preemption_sync_point without a preemption service")


# --- data-parallel training ------------------------------------------------------------------

def init_params():
  rng = np.random.default_rng(0)
  return {"w1": rng.standard_normal((8, 16)).astype(np.float32) * 0.3,
          "b1": np.zeros(16, np.float32),
          "w2": rng.standard_normal((16, 2)).astype(np.float32) * 0.3,
          "b2": np.zeros(2, np.float32)}


def loss(params, x, y):
  h = jnp.tanh(x @ params["w1"] + params["b1"])
  return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


grad_fn = jax.jit(jax.grad(loss))


@jax.jit
def sgd(params, grads):
  return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def check_training(n: int, me: int):
  rng = np.random.default_rng(1)
  x = rng.standard_normal((32, 8)).astype(np.float32)
  y = rng.standard_normal((32, 2)).astype(np.float32)
  lo, hi = me * 32 // n, (me + 1) * 32 // n
  procs = dist.process_communicator()
  full = init_params()
  dp = init_params()
  for _ in range(3):
    full = sgd(full, grad_fn(full, x, y))
    grads = grad_fn(dp, x[lo:hi], y[lo:hi])  # this process's shard of the batch
    mean = jax.tree_util.tree_map(
        lambda g: procs.all_reduce(me, np.asarray(g), "sum") / np.float32(n), grads)
    dp = sgd(dp, mean)
  for k in full:
    # the mean of n shard means is the full-batch mean, summed in another order: f32 rounding
    np.testing.assert_allclose(np.asarray(dp[k]), np.asarray(full[k]), rtol=1e-5, atol=1e-6)
  multihost_utils.assert_equal(jax.tree_util.tree_map(np.asarray, dp), "params diverged")


# --- pmap and shard_map across processes ---------------------------------------------------

def local_rows(x: np.ndarray, me: int, n: int) -> np.ndarray:
  """This process's contiguous block of rows of the global `x` (n equal blocks)."""
  b = len(x) // n
  return x[me * b:(me + 1) * b]


# made before initialize(): pmap reads the devices when called, as JAX does
psum_over_all = jax.pmap(lambda v: lax.psum(v, "i"), "i")


def check_pmap_collectives(n: int, me: int, k: int):
  """pmap over every process's k devices: each process maps its own k rows of the global
  x (n*k rows, the same on every process); the collectives see all n*k devices."""
  g = n * k
  x = inputs(7, (g, 5, 3))
  cycle = [(i, (i + 1) % g) for i in range(g)]
  outs = jax.pmap(lambda v: (lax.psum(v, "i"), lax.pmax(v, "i"), lax.axis_index("i"),
                             lax.psum(1, "i"), lax.all_gather(v, "i"),
                             lax.ppermute(v, "i", cycle)), "i")(local_rows(x, me, n))
  s, mx, ai, size, ag, pp = map(np.asarray, outs)   # this process's k rows of each
  np.testing.assert_allclose(s, np.broadcast_to(x.astype(np.float64).sum(0), s.shape),
                             **F32_TOL)
  np.testing.assert_array_equal(mx, np.broadcast_to(x.max(0), mx.shape))
  np.testing.assert_array_equal(ai, np.arange(me * k, (me + 1) * k))
  np.testing.assert_array_equal(size, [g] * k)
  np.testing.assert_array_equal(ag, np.broadcast_to(x, (k,) + x.shape))
  np.testing.assert_array_equal(pp, local_rows(np.roll(x, 1, 0), me, n))
  assert [sh.device for sh in outs[0].addressable_shards] == jax.local_devices()
  check_same_bits_everywhere(s[0])
  np.testing.assert_array_equal(np.asarray(psum_over_all(local_rows(x, me, n))), s)
  try:   # under jit pmap would be vmap over this process's slices: not the global psum
    jax.jit(jax.pmap(lambda v: lax.psum(v, "i"), "i"))(local_rows(x, me, n))
  except NotImplementedError as e:
    assert "only at top level" in str(e), e
  else:
    raise AssertionError("pmap across processes inside jit did not raise")


def check_shard_map_collectives(n: int, me: int, k: int):
  """shard_map over a global 2 x (n*k/2) mesh; the input is built from each process's own
  rows (make_array_from_process_local_data), so with several processes no process holds it
  all. Groups along 'x', 'y' and both span processes (for 2 x 2 local devices, the 'x'
  groups {0, 2} and {1, 3} run at once over the same two processes)."""
  g = n * k
  mesh = jax.make_mesh((2, g // 2), ("x", "y"))
  assert list(mesh.devices.flat) == jax.devices()
  x = inputs(8, (2 * g, 3))   # device (a, b) holds rows block a * g/2 + b
  xs = jax.make_array_from_process_local_data(NamedSharding(mesh, P(("x", "y"))),
                                              local_rows(x, me, n))
  assert xs.shape == x.shape and xs.is_fully_addressable == (n == 1)
  if n > 1:
    try:
      np.asarray(xs)
    except RuntimeError as e:
      assert "other processes" in str(e), e
    else:
      raise AssertionError("reading an array spanning other processes did not raise")
  cycle = [(i, (i + 1) % (g // 2)) for i in range(g // 2)]
  f = jax.shard_map(lambda v: (lax.psum(v, "x"), lax.psum(v, "y"), lax.psum(v, ("x", "y")),
                               lax.all_gather(v, ("x", "y"), tiled=True),
                               lax.ppermute(v, "y", cycle)),
                    mesh=mesh, in_specs=P(("x", "y")),
                    out_specs=(P("y"), P("x"), P(), P(), P(("x", "y"))))
  sx, sy, sxy, ag, pp = f(xs)
  blocks = x.astype(np.float64).reshape(2, g // 2, 2, 3)   # [x, y, rows, 3]
  np.testing.assert_allclose(np.asarray(sxy), blocks.sum((0, 1)), **F32_TOL)
  np.testing.assert_array_equal(np.asarray(ag), x)
  expect = {"sx": blocks.sum(0).reshape(-1, 3), "sy": blocks.sum(1).reshape(-1, 3),
            "pp": np.roll(blocks, 1, 1).reshape(-1, 3)}
  for name, out in (("sx", sx), ("sy", sy), ("pp", pp)):
    assert len(out.addressable_shards) == k
    for shard in out.addressable_shards:   # each local piece against NumPy's
      np.testing.assert_allclose(np.asarray(shard.data), expect[name][shard.index],
                                 err_msg=name, **F32_TOL)


def check_pmap_training(n: int, me: int, k: int):
  """The data-parallel step over n processes x k devices (pmap, lax.pmean of the grads; and
  shard_map over the global mesh) against the full-batch step on one device."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((32, 8)).astype(np.float32)
  y = rng.standard_normal((32, 2)).astype(np.float32)

  def step(p, xb, yb, axis):
    return sgd(p, lax.pmean(jax.grad(loss)(p, xb, yb), axis))
  pstep = jax.pmap(lambda p, xb, yb: step(p, xb, yb, "i"), "i", in_axes=(None, 0, 0),
                   out_axes=None)
  mesh = jax.make_mesh((n * k,), ("d",))
  sstep = jax.shard_map(lambda p, xb, yb: step(p, xb, yb, "d"), mesh=mesh,
                        in_specs=(P(), P("d"), P("d")), out_specs=P())
  split = NamedSharding(mesh, P("d"))
  xs, ys = (jax.make_array_from_process_local_data(split, local_rows(v, me, n)) for v in (x, y))
  full, dp, sm = init_params(), init_params(), init_params()
  for _ in range(3):
    full = sgd(full, grad_fn(full, x, y))
    dp = pstep(dp, local_rows(x, me, n).reshape(k, -1, 8), local_rows(y, me, n).reshape(k, -1, 2))
    sm = sstep(sm, xs, ys)
  for k_ in full:
    # pmean of n*k equal shards' mean grads is the full batch's mean, summed in another
    # order (each shard's mean, then MPI's and the local devices' order): f32 rounding only
    np.testing.assert_allclose(np.asarray(dp[k_]), np.asarray(full[k_]), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(sm[k_]), np.asarray(full[k_]), rtol=1e-5, atol=1e-6)
  multihost_utils.assert_equal(jax.tree_util.tree_map(np.asarray, dp), "pmap params diverged")


def check_jit_training(n: int, me: int, k: int):
  """The data-parallel step as `jit(step, in_shardings=(P(), P('data'), P('data')))` over a
  mesh of every process's devices: each process runs the partitioned program on its own
  devices, the gradient psums (grouped into one all-reduce, and not) go through MPI. Params
  (replicated outputs) equal the one-device full-batch step's and are readable everywhere;
  a batch-split output holds this process's rows."""
  rng = np.random.default_rng(1)
  x = rng.standard_normal((32, 8)).astype(np.float32)
  y = rng.standard_normal((32, 2)).astype(np.float32)
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  split, rep = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())

  def step(p, xb, yb):
    preds = jnp.tanh(xb @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]
    return sgd(p, jax.grad(loss)(p, xb, yb)), preds
  jstep = jax.jit(step, in_shardings=(P(), P("data"), P("data")), out_shardings=(P(), P("data")))
  xs, ys = (jax.make_array_from_process_local_data(split, local_rows(v, me, n)) for v in (x, y))
  xd, yd = jax.device_put(x, split), jax.device_put(y, split)   # every process passes all rows
  full, params = init_params(), {}
  for group in (True, False):   # the gradient psums as one all-reduce, and one per weight
    jax.config.update("ember_group_all_reduces", group)
    params[group] = jax.device_put(init_params(), rep)   # one compiled program per setting
    with jax.set_mesh(mesh):
      for i in range(3):
        params[group], preds = jstep(params[group], *((xs, ys) if i % 2 else (xd, yd)))
  jax.config.update("ember_group_all_reduces", True)
  for _ in range(3):
    expect_preds = np.asarray(jnp.tanh(x @ full["w1"] + full["b1"]) @ full["w2"] + full["b2"])
    full = sgd(full, grad_fn(full, x, y))
  for group, got in params.items():
    for name in full:
      assert got[name].sharding == rep, got[name].sharding
      assert [s.device for s in got[name].addressable_shards] == jax.local_devices()
      # per-device mean grads summed by MPI and the local devices, not in one pass as the
      # full batch is: f32 rounding only, a few ulps of each weight
      np.testing.assert_allclose(np.asarray(got[name]), np.asarray(full[name]), rtol=1e-5,
                                 atol=1e-6, err_msg=f"{name} group={group}")
    multihost_utils.assert_equal(jax.tree_util.tree_map(np.asarray, got), "jit params diverged")
  assert preds.sharding == split and preds.is_fully_addressable == (n == 1)
  assert [s.device for s in preds.addressable_shards] == jax.local_devices()
  for shard in preds.addressable_shards:   # the last step's predictions, this process's rows
    np.testing.assert_allclose(np.asarray(shard.data), expect_preds[shard.index], rtol=1e-5,
                               atol=1e-6)
  # a split argument whose in_sharding asks for it whole (gathered inside, across processes)
  # and a NumPy one (the whole value in every process) asked for split
  rev = np.ascontiguousarray(x[::-1])
  out = jax.jit(lambda a, b: 2 * a + b, in_shardings=(rep, split), out_shardings=rep)(xs, rev)
  np.testing.assert_array_equal(np.asarray(out), 2 * x + rev)   # exact: no sum across devices


def main():
  jax.distributed.initialize()
  n, me = jax.process_count(), jax.process_index()
  k = jax.local_device_count()
  check_process_api(n, me, k)
  if k == 1:   # the communicator itself, with device ids = process ranks
    check_groups(n, me)
    check_errors(n, me)
    check_training(n, me)
  check_multihost_utils(n, me)
  check_host_local_arrays(n, me, k)
  check_pmap_collectives(n, me, k)
  check_shard_map_collectives(n, me, k)
  check_pmap_training(n, me, k)
  check_jit_training(n, me, k)
  h = np.uint32(zlib.crc32(b"done"))
  multihost_utils.assert_equal(h)
  jax.distributed.shutdown()
  assert jax.process_count() == 1 and len(jax.devices()) == k
  print(f"OK {me}", flush=True)


if __name__ == "__main__":
  main()
