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
from ember._src import distributed as dist
from ember._src.runtime.mpi_collectives import MpiCommunicator
from ember.experimental import multihost_utils

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


def check_process_api(n: int, me: int):
  assert jax.process_count() == n and jax.process_index() == me
  assert jax.distributed.is_initialized()
  devs = jax.devices()
  assert [d.id for d in devs] == list(range(n)), devs
  assert [d.process_index for d in devs] == list(range(n))
  assert jax.local_devices() == [devs[me]] and jax.local_device_count() == 1
  assert jax.device_count() == n
  assert jax.local_devices(process_index=(me + 1) % n) == [devs[(me + 1) % n]]
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


def main():
  jax.distributed.initialize()
  n, me = jax.process_count(), jax.process_index()
  check_process_api(n, me)
  check_groups(n, me)
  check_errors(n, me)
  check_multihost_utils(n, me)
  check_training(n, me)
  h = np.uint32(zlib.crc32(b"done"))
  multihost_utils.assert_equal(h)
  jax.distributed.shutdown()
  assert jax.process_count() == 1 and len(jax.devices()) == 1
  print(f"OK {me}", flush=True)


if __name__ == "__main__":
  main()
