"""jax.image: resize, scale_and_translate and ResizeMethod, with JAX 0.12's kernels
(nearest, linear/triangle, lanczos3, lanczos5, Keys cubic, OpenCV/PyTorch cubic, area) and
antialiasing. Each resized axis is one (input, output) weight matrix, contracted with the
image in one einsum; nearest-neighbour resizing is a gather."""
from __future__ import annotations

import enum
from functools import partial

import numpy as np

from ember._src.core.avals import canonicalize_shape
from ember._src.driver.jit import jit
from ember._src.library.numpy import util
from ember._src.library.numpy.einsum import einsum
from ember._src.library.scipy import _jnp as jnp

__all__ = ["ResizeMethod", "resize", "scale_and_translate"]

_ACCURATE = 1000.0 * float(np.finfo(np.float32).eps)   # sums of weights below this are 0


def _lanczos(radius: float):
  def kernel(x):
    y = radius * jnp.sin(np.pi * x) * jnp.sin(np.pi * x / radius)
    out = jnp.where(x > 1e-3, y / jnp.where(x != 0, np.pi ** 2 * x * x, 1), 1)
    return jnp.where(x > radius, 0.0, out)
  return kernel


def _keys_cubic(x):
  out = ((1.5 * x - 2.5) * x) * x + 1.0
  out = jnp.where(x >= 1.0, ((-0.5 * x + 2.5) * x - 4.0) * x + 2.0, out)
  return jnp.where(x >= 2.0, 0.0, out)


def _opencv_cubic(x):
  a = -0.75
  out = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
  out = jnp.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, out)
  return jnp.where(x >= 2.0, 0.0, out)


def _triangle(x):
  return jnp.maximum(0, 1 - jnp.abs(x))


_AREA = object()   # box-overlap weights rather than a kernel of the distance


class ResizeMethod(enum.Enum):
  """Image resize method (jax.image.ResizeMethod); `from_string` accepts the usual names."""
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str):
    for names, method in _NAMES:
      if s in names:
        return method
    raise ValueError(f'Unknown resize method "{s}"')


_NAMES = [(("nearest",), ResizeMethod.NEAREST),
          (("linear", "bilinear", "trilinear", "triangle"), ResizeMethod.LINEAR),
          (("lanczos3",), ResizeMethod.LANCZOS3), (("lanczos5",), ResizeMethod.LANCZOS5),
          (("cubic", "bicubic", "tricubic"), ResizeMethod.CUBIC),
          (("cubic-pytorch", "bicubic-pytorch"), ResizeMethod.CUBIC_PYTORCH),
          (("area",), ResizeMethod.AREA)]

_KERNELS = {  # method -> (radius, kernel)
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, _lanczos(3.0)),
    ResizeMethod.LANCZOS5: (5, _lanczos(5.0)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _normalize_columns(weights):
  total = weights.sum(axis=0, keepdims=True)
  return jnp.where(jnp.abs(total) > _ACCURATE,
                   weights / jnp.where(total != 0, total, 1), 0)


def _weight_matrix(in_size: int, out_size: int, scale, translation, kernel, antialias: bool,
                   edge_padding: bool, radius: int):
  """(in_size, out_size): the weight of input sample i in output sample j along one axis."""
  dtype = jnp.result_type(scale, translation)
  inv_scale = 1.0 / scale
  kernel_scale = jnp.maximum(inv_scale, 1.0) if antialias else 1.0
  sample = (jnp.arange(out_size, dtype=dtype) + 0.5) * inv_scale - translation * inv_scale \
      - 0.5   # output sample centres in input coordinates
  pad = radius if edge_padding else 0   # (edge padding only comes without antialias)
  positions = jnp.arange(-pad, in_size + pad, dtype=dtype)
  if kernel is _AREA:
    left = jnp.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
    right = left + inv_scale
    cell = jnp.arange(in_size, dtype=dtype)
    weights = jnp.maximum(0.0, jnp.minimum(right[None, :], cell[:, None] + 1.0)
                          - jnp.maximum(left[None, :], cell[:, None]))
  else:
    weights = kernel(jnp.abs(sample[None, :] - positions[:, None]) / kernel_scale)
  if edge_padding:
    # samples beyond the edges read the edge sample: fold their weights onto it
    owner = np.clip(np.arange(-pad, in_size + pad), 0, in_size - 1)
    fold = (owner[:, None] == np.arange(in_size)[None, :]).astype(weights.dtype)
    return _normalize_columns(jnp.matmul(fold.T, weights))
  weights = _normalize_columns(weights)
  inside = (sample >= -0.5) & (sample <= in_size - 0.5)
  return jnp.where(inside[None, :], weights, 0)


def _scale_and_translate(x, shape, spatial_dims, scale, translation, kernel, antialias,
                         precision, edge_padding=False, radius=1):
  if not spatial_dims:
    return x
  ndim = x.ndim
  operands, out_labels = [x, list(range(ndim))], list(range(ndim))
  for i, d in enumerate(spatial_dims):
    d = util.canonicalize_axis(d, ndim, "scale_and_translate")
    w = _weight_matrix(x.shape[d], shape[d], scale[i], translation[i], kernel, antialias,
                       edge_padding, radius).astype(x.dtype)
    operands += [w, [d, ndim + i]]
    out_labels[d] = ndim + i
  return einsum(*operands, out_labels, precision=precision)


def _method(method):
  return ResizeMethod.from_string(method) if isinstance(method, str) else method


def _check_rank(shape, image):
  if len(shape) != image.ndim:
    raise ValueError("shape must have length equal to the number of dimensions of x;  "
                     f"{shape} vs {image.shape}")


def scale_and_translate(image, shape, spatial_dims, scale, translation, method,
                        antialias=True, precision="highest"):
  """Resample `image` to `shape` along `spatial_dims`: output sample j reads input position
  (j + 0.5 - translation) / scale - 0.5 through the method's kernel (widened by 1/scale
  when downsampling with antialias)."""
  shape = canonicalize_shape(shape, "scale_and_translate")
  util.check_arraylike("scale_and_translate", image)
  image = jnp.asarray(image)
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  (image,) = util.promote_dtypes_inexact(image)
  scale, translation = util.promote_dtypes_inexact(jnp.asarray(scale),
                                                   jnp.asarray(translation))
  if len(spatial_dims) != scale.shape[0] or len(spatial_dims) != translation.shape[0]:
    raise ValueError("scale_and_translate: scale and translation need one entry per "
                     f"spatial dimension ({len(spatial_dims)})")
  return _scale_and_translate_jit(image, scale, translation, shape, tuple(spatial_dims),
                                  method, antialias, precision)


@partial(jit, static_argnums=(3, 4, 5, 6, 7))
def _scale_and_translate_jit(image, scale, translation, shape, spatial_dims, method,
                             antialias, precision):
  radius, kernel = _KERNELS[method]
  return _scale_and_translate(image, shape, spatial_dims, scale, translation, kernel,
                              antialias, precision,
                              edge_padding=method == ResizeMethod.CUBIC_PYTORCH,
                              radius=radius)


def _resize_nearest(x, shape):
  for d, (m, n) in enumerate(zip(x.shape, shape)):
    if m != n:
      offsets = np.floor((np.arange(n, dtype=np.float32) + 0.5) * np.float32(m)
                         / np.float32(n)).astype(np.int32)
      x = jnp.take(x, offsets, axis=d)
  return x


@jit(static_argnums=(1, 2, 3, 4))
def _resize(image, shape, method, antialias, precision):
  _check_rank(shape, image)
  method = _method(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  (image,) = util.promote_dtypes_inexact(image)
  dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in dims]
  return _scale_and_translate(image, shape, dims, scale, [0.0] * len(dims), kernel,
                              antialias, precision,
                              edge_padding=method == ResizeMethod.CUBIC_PYTORCH,
                              radius=radius)


def resize(image, shape, method, antialias=True, precision="highest"):
  """`image` resized to `shape` with `method` (a ResizeMethod or its name: 'nearest',
  'linear', 'lanczos3', 'lanczos5', 'cubic', 'cubic-pytorch', 'area'); `antialias` widens
  the kernel when downsampling."""
  util.check_arraylike("resize", image)
  if isinstance(method, str):
    ResizeMethod.from_string(method)   # an unknown name fails here, before tracing
  return _resize(image, canonicalize_shape(shape, "resize"), method, antialias, precision)


