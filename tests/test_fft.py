"""jax.numpy.fft and lax.fft: every function against numpy.fft in float64 (per-dtype
tolerances), eager and jitted on the same cases; the `fft` primitive's jvp/transpose
(gradients recorded from JAX 0.12), vmap, the HLO fft op in hlo_eval and the printed
forms, and the errors users hit."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.hlo import graph as hlo
from ember._src.hlo.evaluator import evaluate

rng = np.random.default_rng(17)
# relative to the transform's scale: pocketfft in float32 errs ~ eps * log2(n)
RTOL = {np.float32: 3e-6, np.complex64: 3e-6, np.float64: 1e-13, np.complex128: 1e-13}


def _data(shape, dtype):
  x = rng.normal(size=shape)
  if np.dtype(dtype).kind == "c":
    x = x + 1j * rng.normal(size=shape)
  return x.astype(dtype)


def _check(got, want, dtype):
  got, want = np.asarray(got), np.asarray(want)
  assert got.shape == want.shape
  scale = max(np.abs(want).max(initial=0.0), 1.0)
  np.testing.assert_allclose(got, want, rtol=0, atol=RTOL[np.dtype(dtype).type] * scale * 8)


def _both(fn, x, want, dtype, x64=False):
  """fn(x) eagerly and jitted, each against the float64 NumPy result."""
  with ember.enable_x64(x64):
    eager = fn(x)
    jitted = ember.jit(fn)(x)
  for got in (eager, jitted):
    _check(got, want, dtype)
  return eager


C_FUNCS = ["fft", "ifft", "hfft"]
R_FUNCS = ["rfft", "ihfft"]
N_FUNCS = ["fftn", "ifftn", "fft2", "ifft2"]


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
@pytest.mark.parametrize("name", C_FUNCS + ["irfft"])
@pytest.mark.parametrize("n,axis", [(None, -1), (5, -1), (12, 0), (None, 1)])
def test_1d_complex_input(name, n, axis, norm):
  x = _data((6, 8), np.complex64)
  want = getattr(np.fft, name)(x.astype(np.complex128), n=n, axis=axis, norm=norm)
  out = _both(lambda v: getattr(jnp.fft, name)(v, n=n, axis=axis, norm=norm), x, want,
              np.complex64)
  assert out.dtype == (np.float32 if name in ("hfft", "irfft") else np.complex64)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name", R_FUNCS)
@pytest.mark.parametrize("n,axis", [(None, -1), (7, -1), (4, 0)])
def test_1d_real_input(name, n, axis, norm):
  x = _data((5, 8), np.float32)
  want = getattr(np.fft, name)(x.astype(np.float64), n=n, axis=axis, norm=norm)
  out = _both(lambda v: getattr(jnp.fft, name)(v, n=n, axis=axis, norm=norm), x, want,
              np.float32)
  assert out.dtype == np.complex64


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("name", N_FUNCS)
@pytest.mark.parametrize("s,axes", [(None, None), ((3, 5), None), (None, (0, 2)),
                                    ((4, 6), (2, 0))])
def test_nd_complex(name, s, axes, norm):
  if name.endswith("2") and axes is None:
    axes = (-2, -1)
  x = _data((4, 3, 6), np.complex64)
  want = getattr(np.fft, name)(x.astype(np.complex128), s=s, axes=axes, norm=norm)
  _both(lambda v: getattr(jnp.fft, name)(v, s=s, axes=axes, norm=norm), x, want,
        np.complex64)


@pytest.mark.parametrize("norm", [None, "ortho", "forward"])
@pytest.mark.parametrize("s,axes", [(None, None), ((3, 6), None), (None, (2, 0)),
                                    ((4, 7), (0, 1))])
def test_nd_real_round_trip(s, axes, norm):
  x = _data((4, 3, 6), np.float32)
  spec = np.fft.rfftn(x.astype(np.float64), s=s, axes=axes, norm=norm)
  got = _both(lambda v: jnp.fft.rfftn(v, s=s, axes=axes, norm=norm), x, spec, np.float32)
  want = np.fft.irfftn(spec, s=s, axes=axes, norm=norm)
  back = _both(lambda v: jnp.fft.irfftn(v, s=s, axes=axes, norm=norm),
               np.asarray(got), want, np.float32)
  assert back.dtype == np.float32
  a2 = (0, 2) if axes is None else axes
  _both(lambda v: jnp.fft.rfft2(v, axes=a2, norm=norm), x,
        np.fft.rfft2(x.astype(np.float64), axes=a2, norm=norm), np.float32)
  _both(lambda v: jnp.fft.irfft2(v, axes=a2, norm=norm), np.asarray(got),
        np.fft.irfft2(np.asarray(got).astype(np.complex128), axes=a2, norm=norm), np.float32)


@pytest.mark.parametrize("name", ["fftn", "ifftn", "rfftn", "irfftn"])
def test_more_than_three_axes_split_into_calls(name):
  dt = np.float32 if name == "rfftn" else np.complex64
  x = _data((2, 3, 4, 2, 4), dt)
  for axes in [(0, 1, 2, 3), None]:
    want = getattr(np.fft, name)(x.astype(np.complex128 if dt == np.complex64 else
                                          np.float64), axes=axes)
    _both(lambda v: getattr(jnp.fft, name)(v, axes=axes), x, want, dt)


def test_float64_under_x64():
  x = _data((8, 10), np.complex128)
  out = _both(lambda v: jnp.fft.fft2(v), x, np.fft.fft2(x), np.complex128, x64=True)
  assert out.dtype == np.complex128
  r = _data((9,), np.float64)
  out = _both(jnp.fft.rfft, r, np.fft.rfft(r), np.complex128, x64=True)
  assert out.dtype == np.complex128
  out = _both(lambda v: jnp.fft.irfft(v), np.fft.rfft(r), np.fft.irfft(np.fft.rfft(r)),
              np.float64, x64=True)
  assert out.dtype == np.float64


@pytest.mark.parametrize("dtype", [np.int32, np.bool_, np.float16])
def test_integer_and_half_inputs_compute_in_complex64(dtype):
  x = (rng.normal(size=8) > 0).astype(dtype) if dtype == np.bool_ else \
      rng.integers(-5, 5, 8).astype(dtype)
  out = _both(jnp.fft.fft, x, np.fft.fft(x.astype(np.float64)), np.complex64)
  assert out.dtype == np.complex64
  if dtype != np.float16:
    assert jnp.fft.rfft(x).dtype == np.complex64


def test_float16_rfft_is_rejected_as_in_jax():
  with pytest.raises(ValueError, match="RFFT input must be float32 or float64, got float16"):
    jnp.fft.rfft(np.ones(4, np.float16))


def test_fftfreq_rfftfreq_and_shifts():
  for n, d in [(5, 0.1), (8, 1.0), (1, 2.0)]:
    np.testing.assert_allclose(jnp.fft.fftfreq(n, d), np.fft.fftfreq(n, d), rtol=1e-6)
    np.testing.assert_allclose(jnp.fft.rfftfreq(n, d), np.fft.rfftfreq(n, d), rtol=1e-6)
  assert jnp.fft.fftfreq(4).dtype == np.float32
  np.testing.assert_array_equal(jnp.fft.fftfreq(4, dtype=jnp.int32), [0, 0, 0, 0])  # JAX's
  x = np.arange(15).reshape(3, 5)
  for axes in [None, 0, (1,), (0, 1)]:
    np.testing.assert_array_equal(jnp.fft.fftshift(x, axes), np.fft.fftshift(x, axes))
    np.testing.assert_array_equal(jnp.fft.ifftshift(x, axes), np.fft.ifftshift(x, axes))
    np.testing.assert_array_equal(ember.jit(jnp.fft.fftshift, static_argnums=1)(x, axes),
                                  np.fft.fftshift(x, axes))


def test_lax_fft_and_fft_type():
  x = _data((3, 4), np.complex64)
  _check(lax.fft(x, lax.FftType.FFT, (3, 4)), np.fft.fft2(x.astype(np.complex128)),
         np.complex64)
  _check(lax.fft(x, "ifft", (4,)), np.fft.ifft(x.astype(np.complex128)), np.complex64)
  assert lax.fft_p.name == "fft"
  assert int(lax.FftType.IRFFT) == 3
  with pytest.raises(ValueError, match="Unknown FFT type 'dct'"):
    lax.fft(x, "dct", (4,))


def test_jaxpr_and_printed_forms():
  x = np.ones((3, 8), np.float32)
  jaxpr = str(ember.make_jaxpr(jnp.fft.rfft)(x))
  assert "fft[fft_lengths=(8,) fft_type=2] a" in jaxpr and "name=fft" in jaxpr
  lowered = ember.jit(jnp.fft.rfft).lower(x)
  assert ("stablehlo.fft %arg0, type = RFFT, length = [8] : (tensor<3x8xf32>) -> "
          "tensor<3x5xcomplex<f32>>") in lowered.as_text()
  compiled = lowered.compile()
  assert "c64[3,5]{1,0} fft(%a), fft_type=RFFT, fft_length={8}" in compiled.as_text()
  # XLA's count: 8 flops per element and log2 factor (2 per FMA, 4 FMAs per complex mul)
  assert compiled.cost_analysis()["flops"] == 8 * 3 * 24


@pytest.mark.parametrize("fft_type,shape,dtype,lengths", [
    ("FFT", (2, 4, 6), np.complex64, (4, 6)), ("IFFT", (5, 8), np.complex128, (8,)),
    ("RFFT", (3, 7), np.float32, (7,)), ("IRFFT", (2, 3, 5), np.complex64, (3, 8))])
def test_hlo_eval_runs_the_fft_op(fft_type, shape, dtype, lengths):
  m = hlo.Module("t")
  c = m.new_computation("main")
  m.entry = c
  p = c.add(hlo.Instr("parameter", hlo.Shape(np.dtype(dtype), shape), attrs={"number": 0},
                      name="p0"))
  x = _data(shape, dtype)
  with ember.enable_x64():    # complex128 stays complex128
    want = lax.fft(x, fft_type, lengths)
  out_shape = hlo.Shape(np.dtype(want.dtype), want.shape)
  c.root = c.add(hlo.Instr("fft", out_shape, [p], {"fft_type": fft_type,
                                                   "fft_length": lengths}))
  got, = evaluate(m, [x])
  assert got.dtype == want.dtype
  np.testing.assert_array_equal(got, np.asarray(want))


# --- derivatives: values recorded from JAX 0.12 (jax.grad on the same functions) -------

X8 = np.arange(8.0, dtype=np.float32)
C5 = (np.arange(5) + 1j * np.arange(5)[::-1]).astype(np.complex64)
GRADS = [
    ("rfft_power", lambda x: jnp.sum(jnp.abs(jnp.fft.rfft(x)) ** 2), X8,
     [24, 40, 40, 56, 56, 72, 72, 88]),
    ("rfft_linear", lambda x: jnp.sum(jnp.fft.rfft(x).real * jnp.arange(5)
                                      + jnp.fft.rfft(x).imag), X8,
     [10, -7.8284273, 2, -3, 2, -2.1715727, 2, -3]),
    ("rfft_odd_n", lambda x: jnp.sum(jnp.fft.rfft(x, n=7).real * jnp.arange(4)
                                     + jnp.fft.rfft(x, n=7).imag), X8,
     [6.0000005, -4.715102, 0.08679806, -0.94853216, 0.3054281, -0.39477658, -0.33381557, 0]),
    ("irfft", lambda c: jnp.sum(jnp.fft.irfft(c) * jnp.arange(8)), C5,
     [3.5, -1 - 2.4142137j, -1 - 1j, -1 - 0.41421354j, -0.5]),
    ("irfft_odd_n", lambda c: jnp.sum(jnp.fft.irfft(c, n=7) * jnp.arange(7)), C5,
     [3.0000002, -1 - 2.0765216j, -1 - 0.7974734j, -1 - 0.22824344j, 0]),
    ("fft", lambda c: jnp.sum(jnp.abs(jnp.fft.fft(c)) ** 2 * jnp.arange(5)), C5,
     [-72.27033 - 27.729671j, -12.860783 - 37.13922j, 20.262215 - 20.26221j,
      37.139225 + 12.860778j, 27.729675 + 72.27033j]),
    ("ifft", lambda c: jnp.sum(jnp.fft.ifft(c).real * jnp.arange(5)), C5,
     [2, -0.5 - 0.688191j, -0.5 - 0.16245984j, -0.5 + 0.16245984j, -0.5 + 0.688191j]),
    ("rfft2", lambda x: jnp.sum(jnp.fft.rfft2(x.reshape(2, 4)).real * 3
                                + jnp.fft.rfft2(x.reshape(2, 4)).imag), X8,
     [18, -2, 6, 2, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("case", GRADS, ids=[g[0] for g in GRADS])
def test_grad_matches_jax(case):
  _, f, x, want = case
  for g in (ember.grad(f)(x), ember.jit(ember.grad(f))(x)):
    np.testing.assert_allclose(np.asarray(g), np.asarray(want, g.dtype), rtol=1e-5, atol=2e-5)


def test_jvp_is_the_transform_of_the_tangent():
  x, t = _data((6,), np.complex64), _data((6,), np.complex64)
  y, ty = ember.jvp(jnp.fft.fft, (x,), (t,))
  _check(ty, np.fft.fft(t.astype(np.complex128)), np.complex64)
  r, tr = _data((6,), np.float32), _data((6,), np.float32)
  _, ty = ember.jvp(jnp.fft.rfft, (r,), (tr,))
  _check(ty, np.fft.rfft(tr.astype(np.float64)), np.float32)


@pytest.mark.parametrize("name,dtype", [("fft", np.complex64), ("rfft", np.float32),
                                        ("irfft", np.complex64), ("ifft2", np.complex64)])
def test_vmap(name, dtype):
  x = _data((3, 4, 6), dtype)
  f = getattr(jnp.fft, name)
  want = np.stack([np.asarray(f(x[:, i])) for i in range(4)], axis=1)
  np.testing.assert_allclose(np.asarray(ember.vmap(f, in_axes=1, out_axes=1)(x)), want,
                             rtol=1e-6, atol=1e-6)
  np.testing.assert_allclose(np.asarray(ember.jit(ember.vmap(f, in_axes=1, out_axes=1))(x)),
                             want, rtol=1e-6, atol=1e-6)


def test_zero_lengths_give_empty_results():
  assert jnp.fft.irfft(np.ones((3, 1), np.complex64)).shape == (3, 0)   # JAX: (3, 0)
  assert jnp.fft.fft(np.ones((0, 4), np.complex64)).shape == (0, 4)
  assert ember.jit(jnp.fft.fft)(np.ones((0, 4), np.complex64)).shape == (0, 4)


# --- errors -----------------------------------------------------------------------------

@pytest.mark.parametrize("call,err,match", [
    (lambda: jnp.fft.fft(np.ones(4), axis=(0,)), ValueError,
     "fft does not support multiple axes. Please use jax.numpy.fft.fftn"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), s=(2,), axes=(0, 1)), ValueError,
     "shape and axes have different lengths"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), axes=(0, 0)), ValueError,
     "does not support repeated axes. Got axes"),
    (lambda: jnp.fft.fft(np.ones(2), norm="bad"), ValueError, "Invalid norm value bad"),
    (lambda: jnp.fft.fft2(np.ones((2, 2, 2)), axes=(0, 1, 2)), ValueError,
     "fft2 only supports 2 axes"),
    (lambda: jnp.fft.fft(np.ones(2), n=0), ValueError, "s should be positive"),
    (lambda: jnp.fft.rfft(np.ones(4, np.complex64)), ValueError,
     "only real valued inputs supported for rfft"),
    (lambda: jnp.fft.fft([1.0, 2.0]), TypeError, "requires ndarray or scalar arguments"),
    (lambda: jnp.fft.fftn(np.ones((2, 2)), axes=(0, 3)), ValueError, "axis 3 is out of bounds"),
    (lambda: lax.fft(np.ones((4, 4), np.complex64), "fft", (3,)), ValueError,
     r"FFT input shape \(4, 4\) minor dimensions must be equal to fft_lengths"),
    (lambda: lax.fft(np.ones((4,), np.complex64), "fft", (4, 4)), ValueError,
     "must have at least as many input dimensions as fft_lengths"),
    (lambda: lax.fft_p.bind(np.ones((4,), np.float32), fft_type=lax.FftType.FFT,
                            fft_lengths=(4,)), ValueError,
     "FFT input must be complex64 or complex128, got float32"),
    (lambda: jnp.fft.fftfreq([4]), ValueError, "n argument of jax.numpy.fft.fftfreq only "
     "takes an int"),
])
def test_errors(call, err, match):
  with pytest.raises(err, match=match):
    call()
