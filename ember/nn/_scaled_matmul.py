"""jax.nn's block-scaled (microscaling) matmuls, as JAX 0.12 runs them on CPU
(jax/_src/cudnn/scaled_matmul_stablehlo.py's CPU path): scaled_matmul multiplies each
block of `block = K // K_scales` contracted elements by its scale and contracts in
`preferred_element_type`; scaled_dot_general quantizes both operands to the configured
block format (MXFP8 / MXFP4: power-of-two E8M0 scales rounded up; NVFP4: E4M3 scales
after a global scale), then runs scaled_matmul, with JAX's custom VJP (the cotangent
quantized with the third config). Under jit ember compiles the 8-bit float conversions
only: the 4-bit formats run eagerly (the backend's error says so)."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from functools import partial

import ml_dtypes
import numpy as np

import ember.numpy as jnp
from ember._src.base import dtypes
from ember._src.library.lax import api as lax
from ember._src.transforms.custom_derivatives import custom_vjp

__all__ = ["BlockScaleConfig", "scaled_matmul", "get_scaled_dot_general_config",
           "scaled_dot_general"]


@dataclass(slots=True)
class BlockScaleConfig:
  """How one operand is quantized: mode, block size, element and scale dtypes, the global
  scale (NVFP4), and whether the config is for inference only."""
  mode: str
  block_size: int
  data_type: object
  scale_type: object
  global_scale: object
  infer_only: bool


def _check_scaled_matmul_shapes(a, b, a_scales, b_scales):
  if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  (ba, _, ka), (bb, _, kb) = a.shape, b.shape
  if ka != kb or ba != bb:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  (bas, mas, kas), (bbs, nbs, kbs) = a_scales.shape, b_scales.shape
  if kas != kbs or bas != bbs:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract "
                     f"(K) dimensions, but got shapes {a_scales.shape} and {b_scales.shape}")
  if mas != a.shape[1] or nbs != b.shape[1]:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                     f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                     f"{a_scales.shape}, b_scales: {b_scales.shape}")


def _apply_block_scales(x, scales, dtype):
  """x (B, R, K) times each block of K // Ks elements' scale (B, R, Ks), in `dtype`."""
  x, scales = x.astype(dtype), scales.astype(dtype)
  bsz, rows, k = x.shape
  ks = scales.shape[2]
  blocks = jnp.reshape(x, (bsz, rows, ks, k // ks)) * jnp.reshape(scales, (bsz, rows, ks, 1))
  return jnp.reshape(blocks, (bsz, rows, k))


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """out[b, m, n] = sum_k (lhs[b,m,k] s_l[b,m,k//bl]) (rhs[b,n,k] s_r[b,n,k//br]): lhs
  (B, M, K), rhs (B, N, K), scales (B, M, K/block) and (B, N, K/block)."""
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  lhs_scales, rhs_scales = jnp.asarray(lhs_scales), jnp.asarray(rhs_scales)
  _check_scaled_matmul_shapes(lhs, rhs, lhs_scales, rhs_scales)
  dt = dtypes.check_user_dtype(preferred_element_type, "scaled_matmul")
  a = _apply_block_scales(lhs, lhs_scales, dt)
  b = _apply_block_scales(rhs, rhs_scales, dt)
  return lax.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=dt)


def get_scaled_dot_general_config(mode, global_scale=None):
  """The BlockScaleConfig of 'nvfp4' (16-element blocks of float4_e2m1fn, float8_e4m3fn
  scales, a global scale), 'mxfp8' (32 of float8_e4m3fn, float8_e8m0fnu scales) or
  'mxfp4' (32 of float4_e2m1fn, float8_e8m0fnu scales)."""
  if mode == "nvfp4":
    one = jnp.asarray(1.0, dtype=np.float32)
    return BlockScaleConfig("nvfp4", 16, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e4m3fn,
                            one if global_scale is None else global_scale, False)
  if mode == "mxfp8":
    return BlockScaleConfig("mxfp8", 32, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e8m0fnu,
                            None, False)
  if mode == "mxfp4":
    if global_scale is not None:
      raise ValueError("mxfp4 does not use a global_scale; its E8M0 block scales cover the "
                       "whole range.")
    return BlockScaleConfig("mxfp4", 32, ml_dtypes.float4_e2m1fn, ml_dtypes.float8_e8m0fnu,
                            None, False)
  raise ValueError(f"Unsupported mode: {mode}")


# --- quantization -------------------------------------------------------------------------

def _to_3d(x, dims):
  """x transposed to (batch, kept, contracted) dims and reshaped to (B, rows, cols)."""
  contract, batch = dims
  order = list(range(x.ndim))
  kept = [d for d in order if d not in contract and d not in batch]
  b_ord, c_ord = [d for d in order if d in batch], [d for d in order if d in contract]
  size = lambda ds: int(np.prod([x.shape[d] for d in ds], dtype=int))
  return jnp.reshape(jnp.transpose(x, b_ord + kept + c_ord), (size(b_ord), size(kept),
                                                               size(c_ord)))


def _dot_output_shape(lhs_shape, rhs_shape, lhs_dims, rhs_dims):
  (lc, lb), (rc, rb) = lhs_dims, rhs_dims
  return (tuple(d for i, d in enumerate(lhs_shape) if i in lb)
          + tuple(d for i, d in enumerate(lhs_shape) if i not in lc and i not in lb)
          + tuple(d for i, d in enumerate(rhs_shape) if i not in rc and i not in rb))


def _e8m0_round_up(x):
  """The E8M0 exponent byte of x's float32 value, rounded up to the next power of two."""
  bits = lax.bitcast_convert_type(x.astype(np.float32), np.uint32)
  exp, mant = bits >> 23, bits & 0x7FFFFF
  round_up = (mant > 0) & (exp != 0xFE) & ~((exp == 0) & (mant <= 0x400000))
  return jnp.where(round_up, exp + 1, exp).astype(np.uint8)


def _e8m0_value(byte):
  value = lax.bitcast_convert_type(byte.astype(np.uint32) << 23, np.float32)
  return jnp.where(value == 0, jnp.array(2.0 ** -127, np.float32), value)


def _quantize(x, config):
  """(x in config.data_type, one scale per block of config.block_size along the last
  axis), the largest |x| of each block mapping to the type's max (then clipped)."""
  shape = x.shape
  bsize = config.block_size
  if shape[-1] < bsize or shape[-1] % bsize:
    raise ValueError(f"scaled_dot_general: the contracted size {shape[-1]} must be a "
                     f"multiple of the block size {bsize}")
  x = x.reshape(shape[:-1] + (shape[-1] // bsize, bsize))
  top = np.float32(dtypes.finfo(config.data_type).max)
  amax = lambda v: jnp.max(jnp.abs(v), axis=-1, keepdims=True).astype(np.float32) / top
  if config.mode in ("mxfp8", "mxfp4"):
    # the E8M0 scales stay float32 powers of two (the same values: ember's backend does
    # not compile float8_e8m0fnu, so jit would refuse the bitcast)
    scales = _e8m0_value(_e8m0_round_up(amax(x)))
    scaled = x.astype(np.float32) / scales
  elif config.mode == "nvfp4":
    x = x / config.global_scale
    scale_max = dtypes.finfo(config.scale_type).max.astype(x.dtype)
    scales = jnp.clip(amax(x), 0, scale_max).astype(config.scale_type)
    scaled = x / scales.astype(np.float32)
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  x_q = jnp.clip(scaled, -top, top).astype(config.data_type).reshape(shape)
  return x_q, jnp.reshape(scales, scales.shape[:-1])


def _scaled_dot(lhs, rhs, dims, preferred_element_type, configs):
  (lc, rc), (lb, rb) = dims
  lhs_q, lhs_s = _quantize(_to_3d(lhs, (lc, lb)), configs[0])
  rhs_q, rhs_s = _quantize(_to_3d(rhs, (rc, rb)), configs[1])
  nvfp4 = configs[0].mode == "nvfp4"
  out = scaled_matmul(lhs_q, rhs_q, lhs_s, rhs_s,
                      preferred_element_type=np.float32 if nvfp4 else preferred_element_type)
  if nvfp4:
    out = (out * (configs[0].global_scale * configs[1].global_scale)).astype(
        preferred_element_type)
  return jnp.reshape(out, _dot_output_shape(lhs.shape, rhs.shape, (lc, lb), (rc, rb)))


def _remaining(original, *removed):
  gone = set().union(*removed)
  return [i for i in original if i not in gone]


def _transpose_lhs(g, x, y, dims, preferred_element_type, configs, swap_ans=False):
  """The lhs cotangent: g (quantized with configs[0]) contracted with y (configs[1])."""
  (x_contract, y_contract), (x_batch, y_batch) = dims
  x_kept = _remaining(range(x.ndim), x_contract, x_batch)
  y_kept = _remaining(range(y.ndim), y_contract, y_batch)
  nb = len(x_batch)
  if swap_ans:
    ans_batch, ans_y = list(range(nb)), list(range(nb, nb + len(y_kept)))
  else:
    ans_batch = list(range(nb))
    ans_y = list(range(nb + len(x_kept), nb + len(x_kept) + len(y_kept)))
  by_y = list(np.take(x_contract, np.argsort(y_contract)))
  out_axes = np.argsort(list(x_batch) + x_kept + by_y)
  y_3d, g_3d = _to_3d(y, (y_kept, y_batch)), _to_3d(g, (ans_y, ans_batch))
  if configs[0].mode != "nvfp4":
    g_q, g_s = _quantize(g_3d, configs[0])
    y_q, y_s = _quantize(y_3d, configs[1])
    out = scaled_matmul(g_q, y_q, g_s, y_s, preferred_element_type)
  else:
    out = jnp.matmul(g_3d, jnp.permute_dims(y_3d, (0, 2, 1)),
                     preferred_element_type=preferred_element_type)
  out = jnp.reshape(out, _dot_output_shape(g.shape, y.shape, (ans_y, ans_batch),
                                           (y_kept, y_batch)))
  return lax.transpose(out, tuple(int(i) for i in out_axes))


@partial(custom_vjp, nondiff_argnums=(2, 3, 4))
def _scaled_dot_fn(lhs, rhs, dims, preferred_element_type, configs):
  return _scaled_dot(lhs, rhs, dims, preferred_element_type, configs)


def _scaled_dot_fwd(lhs, rhs, dims, preferred_element_type, configs):
  return _scaled_dot(lhs, rhs, dims, preferred_element_type, configs), (lhs, rhs)


def _scaled_dot_bwd(dims, preferred_element_type, configs, res, g):
  lhs, rhs = res
  (xc, yc), (xb, yb) = dims
  d_lhs = _transpose_lhs(g, lhs, rhs, dims, preferred_element_type,
                         [configs[2], configs[1]])
  d_rhs = _transpose_lhs(g, rhs, lhs, ((yc, xc), (yb, xb)), preferred_element_type,
                         [configs[2], configs[0]], swap_ans=True)
  if configs[2].mode == "nvfp4":   # nothing flows back through clipped elements
    top = dtypes.finfo(configs[0].data_type).max.astype(lhs.dtype)
    scale_max = dtypes.finfo(configs[0].scale_type).max.astype(lhs.dtype)
    d_lhs = jnp.where(jnp.abs(lhs) <= configs[0].global_scale * top * scale_max, d_lhs, 0)
    d_rhs = jnp.where(jnp.abs(rhs) <= configs[1].global_scale * top * scale_max, d_rhs, 0)
  return d_lhs, d_rhs


_scaled_dot_fn.defvjp(_scaled_dot_fwd, _scaled_dot_bwd)


class _Configs(tuple):
  """The configs as a non-differentiable argument: hashed by identity (the dataclass is
  mutable, hence unhashable)."""
  __hash__ = object.__hash__
  __eq__ = lambda self, other: self is other   # noqa: E731


def _as_tuples(dims):
  (lc, rc), (lb, rb) = dims
  return (tuple(lc), tuple(rc)), (tuple(lb), tuple(rb))


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """dot_general through block-scaled quantization of both operands (configs: the lhs,
  rhs and cotangent BlockScaleConfigs; None: a plain dot_general)."""
  if implementation is not None:
    warnings.warn("Backend selector, now ignored. The system chooses the backend "
                  "automatically.", DeprecationWarning, stacklevel=2)
  lhs, rhs = jnp.asarray(lhs), jnp.asarray(rhs)
  if configs is None:
    return lax.dot_general(lhs, rhs, dimension_numbers,
                           preferred_element_type=preferred_element_type)
  dt = dtypes.check_user_dtype(preferred_element_type, "scaled_dot_general")
  if dt not in (np.float32, dtypes.bfloat16, np.float16):
    raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                    f"{dt}")
  dims = _as_tuples(dimension_numbers)
  (lc, rc), (lb, rb) = dims
  batched = dims
  if lb == ():   # a size-1 batch dimension at the end of each operand
    lhs, lb = jnp.expand_dims(lhs, lhs.ndim), (lhs.ndim,)
  if rb == ():
    rhs, rb = jnp.expand_dims(rhs, rhs.ndim), (rhs.ndim,)
  batched = ((lc, rc), (lb, rb))
  out = _scaled_dot_fn(lhs, rhs, batched, dt, _Configs(configs))
  if batched != dims:
    out = lax.squeeze(out, (0,))
  return out
