"""The seed programs on a TPU through the PJRT backend (issue 19, step 3).

Runs only on a host with a TPU and libtpu (CI has none: every test here skips there). On such
a host: `python -m pytest -q tests/test_tpu.py` (no llvmlite needed). The machine's own JAX,
when importable, runs the same programs first in a subprocess (a chip takes one client at a
time, so JAX must let go of it before ember's client opens it); ember's results must equal
JAX's, and both are checked against NumPy in float64.
"""
import importlib.util
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
_HAS_TPU_RUNTIME = (importlib.util.find_spec("libtpu") is not None
                    or bool(os.environ.get("TPU_LIBRARY_PATH")))
pytestmark = pytest.mark.skipif(
    not _HAS_TPU_RUNTIME or importlib.util.find_spec("jaxlib") is None,
    reason="no TPU runtime here: run on a TPU host with `pip install -e .[tpu]`")

_spec = importlib.util.spec_from_file_location("pjrt_seed", ROOT / "bench" / "pjrt_seed.py")
pjrt_seed = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pjrt_seed)


@pytest.fixture(scope="module")
def jax_results(tmp_path_factory):
  """The machine's JAX on the TPU (results by name), or None when JAX is not installed."""
  if importlib.util.find_spec("jax") is None:
    return None
  out = tmp_path_factory.mktemp("jax")
  proc = subprocess.run([sys.executable, str(ROOT / "bench" / "pjrt_seed.py"), "--worker",
                         "jax", "--platform", "tpu", "--repeats", "1", "--out", str(out)],
                        capture_output=True, text=True, cwd=ROOT)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return dict(np.load(out / "jax.npz"))


@pytest.fixture(scope="module")
def ember_tpu(jax_results):   # after JAX's worker: it has let go of the chip
  import ember
  try:
    dev = ember.devices("tpu")[0]
  except RuntimeError as e:
    pytest.skip(f"libtpu is installed but no TPU answered: {e}")
  return ember, dev


def _run(ember_tpu, name):
  """(ember's results on the TPU as NumPy leaves, the program's host arguments)."""
  ember, dev = ember_tpu
  import ember.numpy as jnp
  import ember.scipy.special  # noqa: F401  (the MLP's logsumexp)
  fn, args = pjrt_seed.seed_programs(ember, jnp)[name]
  f = fn if name.startswith("eager") else ember.jit(fn)   # as bench/pjrt_seed.py runs them
  out = f(*ember.device_put(args, dev))
  leaves = ember.tree_util.tree_leaves(out)
  assert all(leaf.devices() == {dev} for leaf in leaves)
  return [np.asarray(leaf) for leaf in leaves], args


def _mlp_step64(params, x, y):
  """The seed MLP step in float64 NumPy: (new params leaves, loss)."""
  (w1, b1), (w2, b2) = [(w.astype(np.float64), b.astype(np.float64)) for w, b in params]
  pre = x @ w1 + b1
  h = np.maximum(pre, 0.0)
  logits = h @ w2 + b2
  p = np.exp(logits - logits.max(1, keepdims=True))
  p /= p.sum(1, keepdims=True)
  loss = -np.mean(np.sum(np.log(p) * y, axis=1))
  g_logits = (p * y.sum(1, keepdims=True) - y) / len(x)
  g_h = g_logits @ w2.T * (pre > 0)
  grads = [x.T @ g_h, g_h.sum(0), h.T @ g_logits, g_logits.sum(0)]
  new = [p_ - 0.01 * g for p_, g in zip([w1, b1, w2, b2], grads)]
  return new, loss


@pytest.mark.parametrize("name", pjrt_seed.NAMES)
def test_seed_program_equals_jax_on_the_same_chip(ember_tpu, jax_results, name):
  if jax_results is None:
    pytest.skip("JAX is not installed on this host")
  got, _ = _run(ember_tpu, name)
  want = [jax_results[f"{name}.{i}"] for i in range(len(got))]
  for g, w in zip(got, want):
    assert g.shape == w.shape and g.dtype == w.dtype
    # one StableHLO program, one XLA TPU compiler: ulps at most (seen: bit-equal)
    np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def test_selu_against_numpy(ember_tpu):
  (got,), (x,) = _run(ember_tpu, "selu")
  x = x.astype(np.float64)
  want = 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x))
  # XLA's TPU expm1 is good to ~1e-5 absolute near 0 (seen 6e-6), not to f32 ulps as on CPU
  np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-5)


# The TPU multiplies float32 matrices with bfloat16 passes at the default precision (as JAX
# on TPU), so dots carry ~2^-8 relative error per product: the tolerances below are that
# scale, not f32's.
def test_pairwise_distances_against_numpy(ember_tpu):
  (got,), (a,) = _run(ember_tpu, "pairwise_distances")
  a = a.astype(np.float64)
  d = np.sqrt(np.maximum(((a[:, None, :] - a[None, :, :]) ** 2).sum(-1), 0.0))
  np.testing.assert_allclose(got, d, rtol=0, atol=0.1 * np.sqrt(2 * 64))


def test_mlp_step_against_numpy(ember_tpu):
  got, (params, x, y) = _run(ember_tpu, "mlp_step")
  new, loss = _mlp_step64(params, x, y)
  np.testing.assert_allclose(got[-1], loss, rtol=1e-2)
  for g, w in zip(got[:-1], new):
    np.testing.assert_allclose(g, w, rtol=0, atol=1e-3)


def test_device_put_round_trip_and_default_device(ember_tpu):
  ember, dev = ember_tpu
  x = np.arange(12, dtype=np.float32).reshape(3, 4)
  on = ember.device_put(x, dev)
  assert on.devices() == {dev} and on.dtype == np.float32 and on.shape == (3, 4)
  np.testing.assert_array_equal(np.asarray(on), x)
  with ember.default_device(dev):
    y = ember.jit(lambda v: v * 2 + 1)(x)
  assert y.devices() == {dev}
  np.testing.assert_array_equal(np.asarray(y), x * 2 + 1)


def test_lower_compile_on_the_tpu(ember_tpu):
  """jit(f).lower(x on the TPU).compile(): XLA's TPU compile, its HLO text and analyses."""
  ember, dev = ember_tpu
  import ember.numpy as jnp
  x = np.linspace(-2, 2, 256, dtype=np.float32).reshape(16, 16)
  f = ember.jit(lambda v: jnp.tanh(v) * 2 + 1)
  compiled = f.lower(ember.device_put(x, dev)).compile()
  assert compiled.as_text().startswith("HloModule")
  # (the TPU lays a 16 x 16 float32 out in (8, 128) tiles: 8192 bytes, not 1024)
  assert compiled.memory_analysis().argument_size_in_bytes >= x.nbytes
  out = compiled(ember.device_put(x, dev))
  assert out.devices() == {dev}
  # the executable jitted calls of this signature run: the same bits
  np.testing.assert_array_equal(np.asarray(out), np.asarray(f(ember.device_put(x, dev))))
  # XLA's TPU tanh is an approximation good to ~1e-4 (seen 6.6e-5), not f32 ulps
  np.testing.assert_allclose(np.asarray(out), np.tanh(x.astype(np.float64)) * 2 + 1,
                             rtol=0, atol=2e-4)
