"""Cumulative ops (cumsum, cumprod, cumlogsumexp) in XLA:CPU's order and rounding, as JAX
0.12 computes them (issue 32): a scan longer than 16 runs in blocks of 16 (XLA's
ReduceWindowRewriter), a reverse scan folds each window left to right, a 16-bit float scan
rounds at every step, and a sum starts from +0.0. Values recorded from JAX 0.12 in
data/xla_scans_jax.npz (data/make_xla_scans.py); each case runs eagerly, under jit, through
the primitive's reference implementation and through the HLO evaluator.
"""
import os
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.hlo import evaluator
from ember._src.primitives import reductions

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "data"))
from xla_scan_cases import CASES, operand  # noqa: E402

_JAX = np.load(os.path.join(os.path.dirname(__file__), "data", "xla_scans_jax.npz"))
_INDEX = {name: i for i, name in enumerate(CASES)}
_PRIMS = {"cumsum": reductions.cumsum_p, "cumprod": reductions.cumprod_p,
          "cumlogsumexp": reductions.cumlogsumexp_p}


def _case(name):
  fn, dt, shape, axis, rev = CASES[name]
  x = jnp.asarray(operand(fn, dt, shape, _INDEX[name])).astype(dt)
  return fn, x, axis, rev


def _exact(name, got):
  np.testing.assert_array_equal(np.asarray(got).astype(np.float32), _JAX[name], err_msg=name)


# cumlogsumexp's steps call exp and log1p, whose last bit ember's math library and XLA's may
# round apart: its order is checked through sums and products, its values within an ulp or two
_EXACT = [n for n in CASES if CASES[n][0] != "cumlogsumexp"]
_LSE = [n for n in CASES if CASES[n][0] == "cumlogsumexp"]


@pytest.mark.parametrize("name", _EXACT)
def test_scan_bits_match_jax_eager_and_jit(name):
  fn, x, axis, rev = _case(name)
  f = lambda v: getattr(lax, fn)(v, axis=axis, reverse=rev)
  _exact(name, f(x))
  _exact(name, ember.jit(f)(x))


@pytest.mark.parametrize("name", _EXACT)
def test_scan_reference_impl_matches_jax(name):
  fn, x, axis, rev = _case(name)
  _exact(name, _PRIMS[fn].impl(np.asarray(x), axis=axis, reverse=rev))


@pytest.mark.parametrize("name", [n for n in _EXACT if "5000" not in n])
def test_scan_hlo_evaluator_matches_jax(name):
  fn, x, axis, rev = _case(name)
  lowered = ember.jit(lambda v: getattr(lax, fn)(v, axis=axis, reverse=rev)).lower(x)
  out = evaluator.evaluate(lowered.compiler_ir(), [np.asarray(x)])[0]
  _exact(name, out)


@pytest.mark.parametrize("name", _LSE)
def test_cumlogsumexp_close_to_jax(name):
  fn, x, axis, rev = _case(name)
  f = lambda v: lax.cumlogsumexp(v, axis=axis, reverse=rev)
  rtol, atol = {"float32": (3e-7, 1e-7), "bfloat16": (1e-2, 1e-2),
                "float16": (2e-3, 2e-3)}[CASES[name][1]]
  for out in (f(x), ember.jit(f)(x)):
    np.testing.assert_allclose(np.asarray(out).astype(np.float32), _JAX[name], rtol=rtol,
                               atol=atol)


def test_cumsum_of_negative_zeros_is_positive_zero_as_jax():
  x = jnp.array([-0.0, -0.0, -0.0])
  for f in (jnp.cumsum, ember.jit(jnp.cumsum), lambda v: lax.cumsum(v, reverse=True)):
    assert not np.signbit(np.asarray(f(x))).any()


def test_bfloat16_cumsum_rounds_every_step():
  # 256 + 1 + 1 in bfloat16: each step rounds back to 256 (f32 accumulation gives 258)
  x = jnp.array([256.0, 1.0, 1.0], jnp.bfloat16)
  for f in (jnp.cumsum, ember.jit(jnp.cumsum)):
    np.testing.assert_array_equal(np.asarray(f(x)).astype(np.float32), [256.0, 256.0, 256.0])


def test_reverse_scan_folds_each_window_left_to_right():
  # output 0 = (1e8 + -1e8) + 1 = 1; folding from the end gives (1 + -1e8) + 1e8 = 0
  x = jnp.array([1e8, -1e8, 1.0], jnp.float32)
  rev = lambda v: lax.cumsum(v, reverse=True)
  for f in (rev, ember.jit(rev)):
    np.testing.assert_array_equal(np.asarray(f(x)), np.float32([1.0, -1e8, 1.0]))


def test_compiled_long_scan_is_blocked():
  text = ember.jit(jnp.cumsum).lower(jnp.ones(100, jnp.float32)).compile().as_text()
  assert "window={size=1x16 pad=0_0x15_0}" in text   # blocks of 16, as XLA:CPU's


def test_integer_scans_unchanged():
  x = jnp.arange(40, dtype=jnp.int32)
  np.testing.assert_array_equal(jnp.cumsum(x), np.cumsum(np.arange(40)))
  np.testing.assert_array_equal(ember.jit(lambda v: lax.cumsum(v, reverse=True))(x),
                                np.cumsum(np.arange(40)[::-1])[::-1])

