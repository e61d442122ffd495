"""jax.nn.dot_product_attention: softmax(Q K^T * scale + bias, masked) V per head, with
grouped-query heads (N query heads share N / K key/value heads), causal, sliding-window and
padding masks. JAX 0.12's 'xla' implementation, in the same order of operations: logits in
promote(dtype, float32), the mask applied as a large negative number, softmax in float32."""
from __future__ import annotations

import numpy as np

import ember.numpy as jnp
from ember._src.base import dtypes
from ember._src.library.lax import api as lax


def _ensure_4d(t):
  t = jnp.asarray(t)
  return jnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check(t, shape, dtype, name: str) -> None:
  """JAX's checks: rank, dtype and every dim of `shape` that is not -1."""
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
  if any(s != -1 and d != s for d, s in zip(t.shape, shape)):
    raise ValueError(f"{name} shape should be {list(shape)}: but got {t.shape}")


def _grouped(t, K: int, G: int):
  """A (B, N or 1, T, S) bias or mask as (B, K, G, T, S), matching the grouped logits."""
  if t is None:
    return None
  b, n, tt, s = t.shape
  return t[:, :, None] if n == 1 else jnp.reshape(t, (b, K, G, tt, s))


def _combined_mask(mask, is_causal, T, S, q_seqlen, kv_seqlen, window):
  """Every mask as one boolean array broadcastable to the (B, K, G, T, S) logits."""
  out = mask
  both = lambda m: m if out is None else jnp.logical_and(out, m)
  if is_causal:
    out = both(jnp.tril(jnp.ones((T, S), bool)))
  if window is not None:
    left, right = window
    q, k = jnp.arange(T)[:, None], jnp.arange(S)[None, :]
    out = both(jnp.logical_and(q >= k - right, q <= k + left))
  if q_seqlen is not None or kv_seqlen is not None:
    pad = True
    if q_seqlen is not None:
      pad = jnp.arange(T)[None, :, None] < q_seqlen[:, None, None]
    if kv_seqlen is not None:
      pad = jnp.logical_and(pad, jnp.arange(S)[None, None, :] < kv_seqlen[:, None, None])
    out = both(pad[:, None, None])
  return out


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual=False):
  """Scaled dot-product attention over (B, T, N, H) queries and (B, S, K, H) keys/values
  (or without the batch dim): softmax(Q K^T * scale + bias) V, scale = 1/sqrt(H) by default.
  `mask` (boolean, True = attend), `is_causal`, `local_window_size` and the sequence
  lengths mask logits out; `return_residual` also returns the softmax's logsumexp."""
  if implementation not in (None, "xla"):
    raise ValueError(f"Unsupported implementation option: {implementation!r} (ember runs "
                     "the 'xla' implementation; 'cudnn' needs an NVIDIA GPU)")
  out_shape = jnp.shape(query)
  q, k, v = _ensure_4d(query), _ensure_4d(key), _ensure_4d(value)
  bias = None if bias is None else _ensure_4d(bias)
  mask = None if mask is None else _ensure_4d(mask)
  q_len = None if query_seq_lengths is None else jnp.asarray(query_seq_lengths)
  kv_len = None if key_value_seq_lengths is None else jnp.asarray(key_value_seq_lengths)
  window = (local_window_size,) * 2 if isinstance(local_window_size, int) \
      else local_window_size
  B, S, K, H = k.shape
  _check(v, [B, S, K, H], k.dtype, "value")
  _check(q, [B, -1, -1, H], k.dtype, "query")
  _check(mask, [-1] * 4, np.dtype(bool), "mask")
  _check(bias, [-1] * 4, None, "bias")
  _check(q_len, [B], np.dtype("int32"), "query_seq_lengths")
  _check(kv_len, [B], np.dtype("int32"), "key_value_seq_lengths")
  T, N = q.shape[1], q.shape[2]
  if N % K:
    raise ValueError(f"The number of query heads must be a multiple of key/value heads, "
                     f"but got {N} vs {K}")
  G = N // K
  scale = 1.0 / np.sqrt(H) if scale is None else scale

  logits_dtype = dtypes.promote_types(q.dtype, np.float32)
  logits = jnp.einsum("BTKGH,BSKH->BKGTS", jnp.reshape(q, (B, T, K, G, H)), k,
                      preferred_element_type=logits_dtype)
  logits = logits * jnp.array(scale, logits.dtype)
  if bias is not None:
    logits = (logits + _grouped(bias, K, G)).astype(logits.dtype)
  combined = _combined_mask(_grouped(mask, K, G), is_causal, T, S, q_len, kv_len, window)
  if combined is not None:
    big_negative = -0.7 * min(float(dtypes.finfo(logits.dtype).max),
                              float(np.finfo(np.float32).max))
    logits = jnp.where(combined, logits, jnp.asarray(big_negative, logits.dtype))
  logits = logits.astype(np.float32)           # the softmax is always float32
  from ember.nn import softmax   # deferred: cycle (ember.nn imports this module)
  probs = softmax(logits, axis=-1).astype(k.dtype)
  encoded = jnp.einsum("BKGTS,BSKH->BTKGH", probs, v)
  if q_len is not None:   # padded query rows are zero
    encoded = encoded * (jnp.arange(T)[None, :] < q_len[:, None])[:, :, None, None, None] \
        .astype(encoded.dtype)
  encoded = jnp.reshape(jnp.reshape(encoded, (B, T, N, H)), out_shape)
  if not return_residual:
    return encoded
  from ember.nn import logsumexp   # deferred: cycle (ember.nn imports this module)
  lse = logsumexp(logits, axis=-1).astype(k.dtype)            # (B, K, G, T)
  lse = jnp.reshape(jnp.transpose(lse, (0, 3, 1, 2)), (B, T, N))
  return encoded, lax.stop_gradient(jnp.reshape(lse, out_shape[:-1]))
