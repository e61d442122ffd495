"""The PJRT backend (ember/_src/backends/pjrt, driver/pjrt_dispatch.py) on jaxlib's XLA CPU client.

The same path serves the TPU (libtpu's plug-in): ember's StableHLO is compiled and run by
the device's PJRT client. Here: the seed programs on `pjrt_cpu` equal ember's native CPU
results; device_put round trips keep dtype, shape and weak type; jit follows committed
arguments and jax.default_device; the errors users hit; and `import ember` plus the PJRT
path work without llvmlite.
"""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
import ember.numpy as jnp
import ember.random as er
import ember.scipy.special  # noqa: F401  (the seed MLP's logsumexp)
from ember import lax

pytest.importorskip("jaxlib", minversion="0.10.2",
                    reason="the PJRT backend needs jaxlib: pip install -e .[test] (or ember[tpu])")
pytest.importorskip("llvmlite", reason="compares with ember's native CPU backend, which needs "
                    "llvmlite (on a TPU host without it, run tests/test_tpu.py)")

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("pjrt_seed", ROOT / "bench" / "pjrt_seed.py")
pjrt_seed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pjrt_seed)


@pytest.fixture(scope="module")
def dev():
  return ember.devices("pjrt_cpu")[0]


def _leaves(tree):
  return [np.asarray(x) for x in ember.tree_util.tree_leaves(tree)]


def _on(dev, fn, args):
  """`jit(fn)` on `dev` (arguments committed there) and on ember's native CPU."""
  out = ember.jit(fn)(*ember.device_put(args, dev))
  for leaf in ember.tree_util.tree_leaves(out):
    assert leaf.devices() == {dev}
  return out, ember.jit(fn)(*args)


def _check_same(got, want, rtol=2e-6, atol=0.0):
  g, w = ember.tree_util.tree_leaves(got), ember.tree_util.tree_leaves(want)
  assert len(g) == len(w)
  for a, b in zip(g, w):
    assert (a.shape, a.dtype, a.weak_type) == (b.shape, b.dtype, b.weak_type)
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=rtol, atol=atol)


SEEDS = pjrt_seed.seed_programs(ember, jnp)


# rtol: XLA's transcendentals and its dot's summation order differ from ember's by ulps;
# pairwise distances: sqrt of a cancellation (|a|^2 - 2a.b + |b|^2 is ~1e-5 on the
# diagonal, of terms ~100), so an absolute tolerance at that scale
@pytest.mark.parametrize("name,rtol,atol", [("selu", 2e-6, 0), ("mlp_step", 1e-5, 1e-7),
                                            ("pairwise_distances", 1e-5, 2e-2)])
def test_seed_programs_equal_native_cpu(dev, name, rtol, atol):
  fn, args = SEEDS[name]
  got, want = _on(dev, fn, args)
  _check_same(got, want, rtol, atol)


def test_reduction_loops_and_random_equal_native_cpu(dev):
  x = np.random.default_rng(1).normal(size=(37, 53)).astype(np.float32)

  def f(x, key):
    s = lax.fori_loop(0, 5, lambda i, c: c * 0.5 + jnp.sin(c), x)       # a while loop
    carry, ys = lax.scan(lambda c, r: (c + r, jnp.max(c)), jnp.zeros(53), x)
    n = lax.while_loop(lambda c: c[0] < 10, lambda c: (c[0] + 1, c[1] * 1.5), (0, 1.0))
    return (jnp.sum(x, axis=0), jnp.argmax(x, axis=1), x.mean(), s, carry, ys, n,
            er.normal(key, (1000,)), er.uniform(key, (7, 3)))
  got, want = _on(dev, f, (x, er.PRNGKey(3)))
  _check_same(got, want, 2e-6, 1e-6)


def test_device_put_round_trips(dev):
  for v in (np.arange(6, dtype=np.float32).reshape(2, 3), np.array(True),
            np.arange(4, dtype=np.int32), np.ones((2, 2), jnp.bfloat16), np.float32(2.5),
            np.zeros((0, 3), np.float32)):
    x = ember.device_put(v, dev)
    assert type(x).__name__ == "PjrtArray" and x.devices() == {dev} and x.committed
    assert (x.shape, x.dtype) == (np.shape(v), np.asarray(v).dtype)
    back = ember.device_put(x, ember.devices()[0])
    assert back.devices() == {ember.devices()[0]} and back.committed
    np.testing.assert_array_equal(np.asarray(back), v)
    np.testing.assert_array_equal(np.asarray(x.block_until_ready()), v)
  w = ember.device_put(3.0, dev)                     # a Python scalar stays weakly typed
  assert (w.dtype, w.weak_type) == (np.float32, True)
  out = ember.jit(lambda a, b: a * b)(w, np.ones(3, np.float16))
  assert out.dtype == np.float16 and out.devices() == {dev}
  x = ember.device_put(np.ones(3, np.float32), dev)
  assert ember.device_put(x, dev) is x
  assert float(jnp.sum(x)) == 3.0                    # an eager op, run on the device
  assert repr(x) == "Array([1., 1., 1.], dtype=float32)"
  x.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    np.asarray(x)


def test_jit_follows_committed_arguments_and_default_device(dev):
  f = ember.jit(lambda a: a + 1)
  x = np.ones(3, np.float32)
  assert f(x).devices() == {ember.devices()[0]}            # uncommitted: native CPU
  with ember.default_device(dev):
    y = f(x)
    assert y.devices() == {dev} and not y.committed
    assert ember.device_put(x).devices() == {dev}
  with ember.default_device("pjrt_cpu"):
    assert f(x).devices() == {dev}
  assert f(y).devices() == {ember.devices()[0]}            # y is uncommitted: JAX's rule
  z = f(ember.device_put(x, dev))
  assert z.devices() == {dev} and z.committed
  assert f(x).devices() == {ember.devices()[0]}            # the native fast path still hits
  assert ember.devices("pjrt_cpu")[0] is dev and str(dev) == "pjrt_cpu:0"


def test_pjrt_compile_is_cached_per_signature_and_device(dev):
  calls = []

  def f(a):
    calls.append(1)
    return a * 2
  jf = ember.jit(f)
  x = ember.device_put(np.ones(4, np.float32), dev)
  jf(x)
  jf(x)
  jf(np.ones(4, np.float32))          # same signature on the native CPU: no new trace
  assert len(calls) == 1
  jf(ember.device_put(np.ones(5, np.float32), dev))
  assert len(calls) == 2


def test_repeated_calls_take_the_fast_path(dev, monkeypatch):
  """After the first call, a call with PJRT arguments of the same types, device and
  commitment skips the signature lookup (jit's fast path) and still runs on the device."""
  jf = ember.jit(lambda a, b: (a * b + 1, [a]))
  x = ember.device_put(np.arange(4, dtype=np.float32), dev)
  jf(x, 2.0)
  lookups = []
  real_lookup = jf._lookup
  monkeypatch.setattr(jf, "_lookup", lambda *a: lookups.append(1) or real_lookup(*a))
  for v in (1.0, 3.0):
    out, (same,) = jf(x, v)
    assert out.devices() == {dev} and out.committed and type(out).__name__ == "PjrtArray"
    np.testing.assert_array_equal(np.asarray(out), np.arange(4) * v + 1)
    np.testing.assert_array_equal(np.asarray(same), np.arange(4))
  assert lookups == []
  with ember.default_device(dev):    # uncommitted: a different key, then its own fast entry
    u = ember.device_put(np.arange(4, dtype=np.float32))
    assert not jf(u, 1.0)[0].committed and not jf(u, 1.0)[0].committed
  assert len(lookups) == 1 and len(jf._fast) == 2
  y = ember.device_put(np.ones(4, np.float32), dev)
  y.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    jf(y, 1.0)


def test_eager_ops_run_on_the_device(dev):
  v = np.random.default_rng(2).normal(size=(3, 4)).astype(np.float32)
  x = ember.device_put(v, dev)
  outs = {"sin_matmul": (jnp.sin(x) @ x.T, np.sin(v) @ v.T),
          "sum": (x.sum(axis=0), v.sum(axis=0)),
          "index": (x[1, 1:3], v[1, 1:3]),
          "host_follows": (x * np.arange(4, dtype=np.float32) - 1, v * np.arange(4) - 1),
          "sort2": (lax.sort((x[0], x[1]), num_keys=1)[1], v[1][np.argsort(v[0])]),
          "argmax": (jnp.argmax(x, axis=1), np.argmax(v, axis=1))}
  for name, (got, want) in outs.items():
    assert type(got).__name__ == "PjrtArray" and got.devices() == {dev}, name
    assert got.committed and got.dtype == np.asarray(want).dtype.name.replace("64", "32"), name
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-6, err_msg=name)
  host = ember.device_put(v, ember.devices()[0])            # committed to ember's CPU
  with pytest.raises(ValueError, match="Received incompatible devices"):
    x + host
  uncommitted = ember.device_put(x, ember.devices()[0]) + 0  # on ember's CPU, uncommitted
  assert (x + uncommitted).devices() == {dev}


def test_donation_deletes_the_donated_argument(dev):
  step = ember.jit(lambda p, g: (p - 0.5 * g, jnp.sum(g)), donate_argnums=0)
  p = ember.device_put(np.ones(5, np.float32), dev)
  g = ember.device_put(np.arange(5, dtype=np.float32), dev)
  for _ in range(3):          # the first call, then the fast path's
    new, s = step(p, g)
    assert p.is_deleted() and not g.is_deleted() and new.devices() == {dev}
    with pytest.raises(RuntimeError, match="donated"):
      np.asarray(p)
    np.testing.assert_allclose(np.asarray(new), np.ones(5) - 0.5 * np.arange(5))
    p = ember.device_put(np.ones(5, np.float32), dev)
  assert float(s) == 10.0


def test_profiler_shows_pjrt_calls(dev, tmp_path):
  import gzip
  f = ember.jit(lambda a: a * 3)
  x = ember.device_put(np.ones(3, np.float32), dev)
  f(x)
  with ember.profiler.trace(str(tmp_path)):
    f(x).block_until_ready()
  (path,) = tmp_path.rglob("*.trace.json.gz")
  with gzip.open(path, "rt") as fh:
    names = [e["name"] for e in json.load(fh)["traceEvents"] if e["ph"] == "X"]
  assert names.count("PjitFunction(<lambda>)") == 1
  assert names.count("pjrt execute jit(<lambda>)") == 1


def test_errors_users_hit(dev):
  with pytest.raises(RuntimeError, match=r"Unknown backend tpux\. Available backends are "
                                         r"\['cpu', 'pjrt_cpu'"):
    ember.devices("tpux")
  a = ember.device_put(np.ones(3, np.float32), dev)
  b = ember.device_put(np.ones(3, np.float32), ember.devices()[0])
  with pytest.raises(ValueError, match=re.escape(
      "Received incompatible devices for jitted computation. Got argument x of <lambda> "
      "with shape float32[3] and with device ids [0] on platform PJRT_CPU and argument y of "
      "<lambda> with shape float32[3] and with device ids [0] on platform CPU")):
    ember.jit(lambda x, y: x + y)(a, b)
  with pytest.raises(ValueError, match="jax.default_device must be passed either a Device"):
    ember.config.update("jax_default_device", 3)


def test_import_and_pjrt_jit_without_llvmlite(tmp_path):
  """The TPU host has no llvmlite: `import ember`, lowering and the PJRT path must not
  need it (llvmlite is blocked by a meta-path finder in a fresh interpreter)."""
  script = textwrap.dedent("""
      import sys
      class Block:
        def find_spec(self, name, path=None, target=None):
          if name.split(".")[0] == "llvmlite":
            raise ImportError("llvmlite is blocked")
      sys.meta_path.insert(0, Block())
      import json, numpy as np, ember, ember.numpy as jnp
      d = ember.devices("pjrt_cpu")[0]
      x = ember.device_put(np.arange(4.0, dtype=np.float32), d)
      y = ember.jit(lambda v: jnp.tanh(v) @ v + ember.grad(lambda u: (u * u).sum())(v))(x)
      print(json.dumps([np.asarray(y).tolist(), sorted(str(e) for e in y.devices()),
                        any(m.startswith("llvmlite") for m in sys.modules)]))
  """)
  env = dict(os.environ, PYTHONPATH=str(ROOT))
  proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                        env=env, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  v = np.arange(4.0, dtype=np.float32)
  want = [float(np.tanh(v) @ v + 2 * v[i]) for i in range(4)]
  got, devs, loaded = json.loads(proc.stdout.strip().splitlines()[-1])
  np.testing.assert_allclose(got, want, rtol=1e-6)
  assert devs == ["pjrt_cpu:0"] and loaded is False


def test_lower_compile_targets_the_arguments_device(dev):
  """jit(f).lower(x on a PJRT device).compile() is that device's client's compile (the same
  computation the signature's jitted calls run there), with XLA's text, costs and memory."""
  x = ember.device_put(np.arange(6, dtype=np.float32).reshape(2, 3), dev)
  f = ember.jit(lambda x, s: jnp.sin(x) @ x.T * s + 1)
  compiled = f.lower(x, 2.0).compile()
  assert compiled.as_text().startswith("HloModule")        # XLA's optimized HLO
  assert compiled.cost_analysis()["flops"] > 0
  mem = compiled.memory_analysis()
  assert (mem.argument_size_in_bytes, mem.output_size_in_bytes) == (24 + 4, 16)
  assert set(compiled.compile_times) == {"lower", "backend"}
  x64 = np.arange(6, dtype=np.float64).reshape(2, 3)
  want = np.sin(x64) @ x64.T * 2 + 1
  for out in (compiled(x, 2.0), f(x, 2.0)):
    assert out.devices() == {dev}
    np.testing.assert_allclose(np.asarray(out), want, rtol=2e-6)
  (entry,) = f._cache.values()
  assert list(entry.pjrt) == [dev]                           # compiled once, for dev
  with pytest.raises(TypeError, match=r"has type float32\[3, 3\], but it was compiled for "
                                      r"float32\[2, 3\]"):
    compiled(np.ones((3, 3), np.float32), 2.0)
  host = f.lower(np.ones((2, 3), np.float32), 2.0).compile()   # host arguments: ember's CPU
  assert "PjrtCompiled" not in type(host).__name__ and host.runtime_executable() is not None
