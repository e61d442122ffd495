"""ember.nn.dot_product_attention against a NumPy float64 reference (softmax of masked,
scaled logits times the values, per head, with grouped key/value heads)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import nn

B, T, S, N, K, H = 2, 5, 7, 4, 2, 8
RNG = np.random.default_rng(0)
Q = RNG.standard_normal((B, T, N, H)).astype(np.float32)
KEY = RNG.standard_normal((B, S, K, H)).astype(np.float32)
V = RNG.standard_normal((B, S, K, H)).astype(np.float32)
BIAS = RNG.standard_normal((1, N, T, S)).astype(np.float32)
MASK = RNG.random((B, 1, T, S)) > 0.3
MASK[:, :, :, 0] = True                    # every row attends somewhere


def reference(q, k, v, bias=None, mask=None, scale=None, causal=False, window=None,
              q_len=None, kv_len=None):
  """The float64 definition, head by head (query head n reads key/value head n // G)."""
  q, k, v = (np.asarray(t, np.float64) for t in (q, k, v))
  b_, t_, n_, h_ = q.shape
  s_, k_ = k.shape[1], k.shape[2]
  scale = 1 / np.sqrt(h_) if scale is None else scale
  out = np.zeros_like(q)
  lse = np.zeros((b_, t_, n_))
  for b in range(b_):
    for n in range(n_):
      kk, vv = k[b, :, n // (n_ // k_)], v[b, :, n // (n_ // k_)]
      logits = q[b, :, n] @ kk.T * scale
      if bias is not None:
        logits = logits + np.broadcast_to(bias, (b_, n_, t_, s_))[b, n]
      keep = np.ones((t_, s_), bool)
      if mask is not None:
        keep &= np.broadcast_to(mask, (b_, n_, t_, s_))[b, n]
      i, j = np.arange(t_)[:, None], np.arange(s_)[None, :]
      if causal:
        keep &= j <= i
      if window is not None:
        keep &= (i >= j - window[1]) & (i <= j + window[0])
      if q_len is not None:
        keep &= i < q_len[b]
      if kv_len is not None:
        keep &= j < kv_len[b]
      logits = np.where(keep, logits, -0.7 * np.finfo(np.float32).max)
      m = logits.max(-1, keepdims=True)
      p = np.exp(logits - m)
      lse[b, :, n] = (m + np.log(p.sum(-1, keepdims=True)))[:, 0]
      out[b, :, n] = (p / p.sum(-1, keepdims=True)) @ vv
      if q_len is not None:
        out[b, q_len[b]:, n] = 0
  return out, lse


CASES = {
    "plain": ({}, {}),
    "bias_and_mask": (dict(bias=BIAS, mask=MASK), dict(bias=BIAS, mask=MASK)),
    "causal_window": (dict(is_causal=True, local_window_size=(2, 1)),
                      dict(causal=True, window=(2, 1))),
    "scale": (dict(scale=0.5), dict(scale=0.5)),
    "int_window": (dict(local_window_size=1), dict(window=(1, 1))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_matches_the_float64_definition_eager_and_jit(case):
  kw, ref_kw = CASES[case]
  want, _ = reference(Q, KEY, V, **ref_kw)
  for f in (nn.dot_product_attention,
            ember.jit(lambda q, k, v: nn.dot_product_attention(q, k, v, **kw))):
    got = f(Q, KEY, V, **kw) if f is nn.dot_product_attention else f(Q, KEY, V)
    assert got.shape == Q.shape and got.dtype == np.float32
    np.testing.assert_allclose(np.asarray(got), want, rtol=2e-5, atol=2e-6)


def test_sequence_lengths_residual_and_unbatched_inputs():
  q_len, kv_len = np.array([3, 5], np.int32), np.array([7, 4], np.int32)
  want, want_lse = reference(Q, KEY, V, q_len=q_len, kv_len=kv_len)
  out, lse = nn.dot_product_attention(Q, KEY, V, query_seq_lengths=q_len,
                                      key_value_seq_lengths=kv_len, return_residual=True)
  np.testing.assert_allclose(np.asarray(out), want, rtol=2e-5, atol=2e-6)
  assert lse.shape == (B, T, N)
  np.testing.assert_allclose(np.asarray(lse), want_lse, rtol=2e-6)
  one, _ = reference(Q[:1], KEY[:1], V[:1])
  np.testing.assert_allclose(np.asarray(nn.dot_product_attention(Q[0], KEY[0], V[0])), one[0],
                             rtol=2e-5, atol=2e-6)


# JAX 0.12.1: grad of sum(attention(q, k, v, is_causal=True) ** 2) w.r.t. q, float64, the
# inputs of _grad_case (entries 8..23 of the flattened gradient), with softmax's custom_jvp
# rule (jax_softmax_custom_jvp=True, the default)
JAX_GRAD = [-0.09332998629770117, 0.008651676105784361, -0.018246308168655228,
            0.048855785099013914, -0.11239235431133314, 0.010418783490988584,
            -0.021973209853221994, 0.0588343594120566, -0.11716208118837321,
            0.12867633588455987, 0.3714520911562191, 0.30513473450516043,
            -0.03857495763684427, -0.04092241017791991, -0.15648851890573393,
            -0.07189042611498947]


def _grad_case():
  rng = np.random.default_rng(0)
  return (rng.standard_normal((1, 3, 2, 4)), rng.standard_normal((1, 7, 1, 4)),
          rng.standard_normal((1, 7, 1, 4)))


def test_gradient_matches_jax_and_finite_differences():
  with ember.enable_x64():
    q, k, v = _grad_case()
    f = lambda q: jnp.sum(nn.dot_product_attention(q, k, v, is_causal=True) ** 2)
    for grad in (ember.grad(f), ember.jit(ember.grad(f))):
      g = np.asarray(grad(q))
      np.testing.assert_allclose(g.ravel()[8:24], JAX_GRAD, rtol=2e-7, atol=1e-8)
    # the softmax runs in float32 (as JAX's), so central differences use a step large
    # enough that float32 rounding (~1e-7 relative) stays below the tolerance
    eps, fd = 1e-3, np.zeros_like(q)
    for idx in np.ndindex(q.shape):
      d = np.zeros_like(q)
      d[idx] = eps
      fd[idx] = (float(f(q + d)) - float(f(q - d))) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-3, atol=2e-4)


@pytest.mark.parametrize("call, match", [
    (lambda: nn.dot_product_attention(Q, KEY, V[:, :3]), "value shape"),
    (lambda: nn.dot_product_attention(Q[:, :, :3], KEY, V), "multiple of key/value heads"),
    (lambda: nn.dot_product_attention(Q, KEY, V, mask=MASK.astype(np.float32)),
     "mask dtype should be bool"),
    (lambda: nn.dot_product_attention(Q, KEY, V, implementation="cudnn"),
     "Unsupported implementation"),
    (lambda: nn.dot_product_attention(Q, KEY, V, query_seq_lengths=np.array([1.0, 2.0])),
     "query_seq_lengths dtype"),
])
def test_errors(call, match):
  with pytest.raises(ValueError, match=match):
    call()
