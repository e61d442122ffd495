"""ember.nn.initializers: values for a fixed key against numbers produced by JAX 0.12
(stored below as data), the statistics they promise (orthogonality, truncation bounds,
variance), dtypes, and the errors JAX raises for bad shapes, modes and dtypes."""
import math

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.nn import initializers as I

KEY = ember.random.PRNGKey(7)

# jax.nn.initializers.<builder>(key=PRNGKey(7), shape) flattened, as printed by JAX 0.12.
JAX_VALUES = {
    "uniform": [0.006740898825228214, 0.009746168740093708, 0.003028435632586479,
                0.004439584910869598, 0.0073088654316961765, 0.006309295538812876],
    "uniform_scale_f16": [0.80078125, 2.4609375, 0.810546875, 1.34765625],
    "normal": [1.3537054061889648, 5.860352516174316, -1.5487183332443237, -0.4228208661079407,
               1.8464900255203247],
    "truncated_normal": [0.08934203535318375, 0.923882007598877, -0.9353278279304504,
                         -0.5315847396850586, 0.24160823225975037, -0.025973889976739883],
    "glorot_uniform": [0.32235187292099, 0.8788197040557861, -0.36506277322769165,
                       -0.10376865416765213, 0.4275188744068146, 0.24243448674678802,
                       -0.09526625275611877, -0.1639050841331482, -0.7966422438621521,
                       -0.7596684098243713, -0.23850280046463013, 0.6318743228912354],
    "glorot_normal": [0.2609083652496338, 1.0177783966064453, -0.2981925904750824,
                      -0.08172425627708435, 0.35486385226249695, 0.19358323514461517,
                      -0.07499244064092636, -0.12967485189437866, -0.8172140717506409,
                      -0.7505244016647339, -0.1903381645679474, 0.5696313977241516],
    "lecun_uniform": [0.34817981719970703, 0.9492337703704834, -0.39431285858154297,
                      -0.11208295822143555, 0.461773157119751, 0.2618591785430908,
                      -0.10289931297302246, -0.17703771591186523, -0.8604719638824463,
                      -0.8205356597900391, -0.2576124668121338, 0.682502269744873],
    "lecun_normal": [0.28181323409080505, 1.0993263721466064, -0.32208481431007385,
                     -0.08827228844165802, 0.38329675793647766, 0.20909379422664642,
                     -0.08100109547376633, -0.14006485044956207, -0.8826920986175537,
                     -0.8106590509414673, -0.2055887132883072, 0.6152722835540771],
    "he_uniform": [0.4924006164073944, 1.3424192667007446, -0.5576425790786743,
                   -0.1585092395544052, 0.6530458331108093, 0.3703247904777527,
                   -0.1455215960741043, -0.250369131565094, -1.2168910503387451,
                   -1.1604126691818237, -0.3643190264701843, 0.9652039408683777],
    "he_normal": [0.3985441327095032, 1.5546823740005493, -0.45549675822257996,
                  -0.12483587116003036, 0.5420635342597961, 0.29570332169532776,
                  -0.11455285549163818, -0.1980816274881363, -1.2483152151107788,
                  -1.1464450359344482, -0.29074639081954956, 0.8701264262199402],
    "vs_normal_fan_out": [0.3190714120864868, 1.381298303604126, -0.36503639817237854,
                          -0.09965983033180237, 0.4352218508720398, 0.23639744520187378,
                          -0.09144634753465652, -0.15820558369159698, -1.044785976409912,
                          -0.9492244124412537, -0.23242120444774628, 0.7068332433700562],
    "vs_fan_geo_avg_conv": [
        0.20702895522117615, 0.5644177794456482, -0.23445981740951538, -0.06664492189884186,
        0.27457195520401, 0.1557023972272873, -0.061184294521808624, -0.1052672490477562,
        -0.5116396546363831, -0.48789340257644653, -0.15317729115486145, 0.40581825375556946,
        0.23938699066638947, -0.5465883016586304, 0.5110713243484497, -0.01788855716586113,
        -0.11956704407930374, 0.3185158371925354, -0.1594211608171463, 0.5642534494400024,
        0.5174331665039062, -0.12258222699165344, -0.17804193496704102, 0.2132222205400467],
    "vs_axes": [
        0.1992720663547516, 0.7773411870002747, -0.22774837911128998, -0.06241793558001518,
        0.27103176712989807, 0.14785166084766388, -0.05727642774581909, -0.09904081374406815,
        -0.6241576075553894, -0.5732225179672241, -0.14537319540977478, 0.4350632131099701,
        0.23295225203037262, -0.7166152596473694, 0.6228492856025696, -0.016707204282283783,
        -0.11274594813585281, 0.3213467597961426, -0.15150947868824005, 0.776718020439148,
        0.6377881169319153, -0.11564796417951584, -0.16997256875038147, 0.20563234388828278],
    "orthogonal": [0.9206920862197876, 0.34078067541122437, -0.19024860858917236,
                   -0.28757205605506897, 0.9218922853469849, 0.2596481144428253,
                   -0.2638717591762543, 0.1843457818031311, -0.946777880191803],
    "orthogonal_wide": [0.5168516635894775, -0.5913088321685791, 0.7049996256828308,
                        -0.14813052117824554, -1.6924097537994385, 1.8775116205215454,
                        0.5013131499290466, -0.38732072710990906, -0.11282104253768921,
                        0.24675796926021576],
    "orthogonal_col0": [0.3157532215118408, -0.09862340986728668, -0.09049534797668457,
                        -0.9393528699874878, 0.8860253691673279, 0.3719826936721802,
                        -0.0760268047451973, 0.2660973370075226, -0.15024924278259277,
                        0.1368066966533661, -0.9786949753761292, 0.0294173676520586],
    "delta_orthogonal": [0.0, 0.0, 0.0, 0.0, 0.658112645149231, 0.7529194951057434,
                         -0.7529194951057434, 0.658112645149231, 0.0, 0.0, 0.0, 0.0],
}

# name: (initializer, shape, dtype or None, exact). Uniform draws are bit-exact (the same
# threefry bits and the same float arithmetic); the normal-based ones go through erf_inv
# (and QR for orthogonal), where ember's float32 math library may differ from XLA's in the
# last ulp, hence rtol 1e-6.
CASES = {
    "uniform": (I.uniform(), (2, 3), None, True),
    "uniform_scale_f16": (I.uniform(5.), (4,), jnp.float16, True),
    "normal": (I.normal(3.), (5,), None, False),
    "truncated_normal": (I.truncated_normal(2., lower=-1., upper=0.5), (6,), None, False),
    "glorot_uniform": (I.glorot_uniform(), (3, 4), None, True),
    "glorot_normal": (I.glorot_normal(), (3, 4), None, False),
    "lecun_uniform": (I.lecun_uniform(), (3, 4), None, True),
    "lecun_normal": (I.lecun_normal(), (3, 4), None, False),
    "he_uniform": (I.he_uniform(), (3, 4), None, True),
    "he_normal": (I.he_normal(), (3, 4), None, False),
    "vs_normal_fan_out": (I.variance_scaling(2., "fan_out", "normal"), (3, 4), None, False),
    "vs_fan_geo_avg_conv": (I.variance_scaling(1., "fan_geo_avg", "uniform"), (3, 1, 2, 4),
                            None, True),
    "vs_axes": (I.variance_scaling(1., "fan_in", "truncated_normal", in_axis=(0, 1),
                                   out_axis=-1, batch_axis=2), (2, 3, 2, 2), None, False),
    "orthogonal": (I.orthogonal(), (3, 3), None, False),
    "orthogonal_wide": (I.orthogonal(2.), (2, 5), None, False),
    "orthogonal_col0": (I.orthogonal(column_axis=0), (3, 2, 2), None, False),
    "delta_orthogonal": (I.delta_orthogonal(), (3, 2, 2), None, False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_match_jax(name):
  init, shape, dtype, exact = CASES[name]
  out = init(KEY, shape) if dtype is None else init(KEY, shape, dtype)
  assert out.shape == shape and not out.weak_type
  assert out.dtype == np.dtype(dtype or np.float32)
  got = np.asarray(out, np.float64).ravel()
  if exact:
    np.testing.assert_array_equal(got, JAX_VALUES[name])
  else:
    np.testing.assert_allclose(got, JAX_VALUES[name], rtol=1e-6, atol=1e-7)


def test_under_jit_and_with_typed_keys():
  for init in (I.he_normal(), I.glorot_uniform(), I.orthogonal()):
    eager = np.asarray(init(KEY, (3, 4)))
    np.testing.assert_allclose(np.asarray(ember.jit(lambda k: init(k, (3, 4)))(KEY)), eager,
                               rtol=1e-6, atol=1e-7)
  typed = I.glorot_uniform()(ember.random.key(7), (3, 4))
  np.testing.assert_array_equal(np.asarray(typed), np.reshape(JAX_VALUES["glorot_uniform"],
                                                              (3, 4)))


def test_constant_zeros_ones():
  for fn, value in ((I.zeros, 0.), (I.ones, 1.), (I.constant(-7.), -7.)):
    out = fn(KEY, (2, 3))
    assert out.dtype == np.float32 and not out.weak_type and out.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(out), np.full((2, 3), value))
  assert I.ones(KEY, (2,), jnp.int32).dtype == np.int32
  assert I.constant(3, jnp.float16)(KEY, (2,)).dtype == np.float16  # builder's dtype
  assert I.constant(3, jnp.float16)(KEY, (2,), jnp.bfloat16).dtype == jnp.bfloat16
  assert I.zeros(KEY, ()).shape == ()


def test_compute_fans_and_variance():
  # conv kernel (h, w, in, out): fans include the receptive field h*w
  fan_in, fan_out = I._compute_fans((3, 5, 4, 8))
  assert (fan_in, fan_out) == (60, 120)
  assert I._compute_fans((2, 3, 4, 5), in_axis=(0, 1), out_axis=-1, batch_axis=2) == (6, 5)
  assert I._compute_fans((0, 4)) == (0, 0)  # empty: no division by zero
  # the sample variance follows scale / fan (large draw; loose statistical bound)
  for init, var in ((I.he_uniform(), 2 / 200), (I.lecun_normal(), 1 / 200),
                    (I.variance_scaling(3., "fan_out", "normal"), 3 / 100),
                    (I.variance_scaling(1., "fan_avg", "uniform"), 1 / 150)):
    w = np.asarray(init(KEY, (200, 100)), np.float64)
    assert abs(w.var() / var - 1) < 0.05, (init, w.var(), var)
    assert abs(w.mean()) < 0.05 * math.sqrt(var)


def test_distribution_bounds():
  w = np.asarray(I.truncated_normal(0.5, lower=-1., upper=0.5)(KEY, (4000,)), np.float64)
  assert w.min() > -0.5 and w.max() < 0.25
  w = np.asarray(I.glorot_normal()(KEY, (50, 30)), np.float64)
  std = math.sqrt(1 / 40) / .87962566103423978
  assert np.all(np.abs(w) < 2 * std)  # truncated at 2 (untruncated) standard deviations
  w = np.asarray(I.he_uniform()(KEY, (50, 30)), np.float64)
  assert np.all(np.abs(w) <= math.sqrt(3 * 2 / 50))
  w = np.asarray(I.uniform(3.)(KEY, (1000,)), np.float64)
  assert w.min() >= 0 and w.max() < 3


@pytest.mark.parametrize("shape,column_axis", [((4, 4), -1), ((3, 6), -1), ((6, 3), -1),
                                               ((2, 3, 4), -1), ((5, 2, 2), 0)])
def test_orthogonal_is_orthogonal(shape, column_axis):
  w = np.asarray(I.orthogonal(scale=1.5, column_axis=column_axis)(KEY, shape), np.float64)
  m = np.moveaxis(w, column_axis, -1).reshape(-1, shape[column_axis])
  gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
  np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=2e-5)
  assert I.orthogonal()(KEY, (0, 3)).shape == (0, 3)


def test_delta_orthogonal_structure():
  w = np.asarray(I.delta_orthogonal()(KEY, (3, 3, 2, 4)), np.float64)
  centre = w[1, 1]
  np.testing.assert_allclose(centre @ centre.T, np.eye(2), atol=2e-6)
  w[1, 1] = 0
  assert not w.any()
  assert I.delta_orthogonal()(KEY, (2, 2, 2, 2, 3)).shape == (2, 2, 2, 2, 3)


def test_complex_variance_scaling():
  # complex dtypes draw on a disk / a modulus-truncated complex normal; E|w|^2 = scale / fan
  for init, scale in ((I.glorot_uniform(dtype=jnp.complex64), 1.),
                      (I.he_normal(dtype=jnp.complex64), 2.)):
    w = init(KEY, (64, 64))
    assert w.dtype == np.complex64
    second_moment = np.mean(np.abs(np.asarray(w, np.complex128)) ** 2)
    assert abs(second_moment * 64 / scale - 1) < 0.05, second_moment
    assert abs(np.mean(np.asarray(w))) < 0.01


def test_x64_default_dtype():
  with ember.enable_x64():
    assert I.glorot_uniform()(KEY, (2, 3)).dtype == np.float64
    assert I.zeros(KEY, (2,)).dtype == np.float64


def test_aliases_and_protocol():
  assert I.xavier_uniform is I.glorot_uniform and I.xavier_normal is I.glorot_normal
  assert I.kaiming_uniform is I.he_uniform and I.kaiming_normal is I.he_normal
  assert isinstance(I.he_normal(), I.Initializer) and isinstance(I.zeros, I.Initializer)
  assert ember.nn.initializers is I


ERRORS = [
    (lambda: I.glorot_uniform()(KEY, (4,)), ValueError,
     "Can't compute input and output sizes of a 1-dimensional"),
    (lambda: I.variance_scaling(1., "fan", "normal")(KEY, (3, 4)), ValueError,
     "invalid mode for variance scaling initializer: fan"),
    (lambda: I.variance_scaling(1., "fan_in", "cauchy")(KEY, (3, 4)), ValueError,
     "invalid distribution for variance scaling initializer: cauchy"),
    (lambda: I.variance_scaling(1., "fan_in", "normal", in_axis=5)(KEY, (3, 4)), IndexError,
     r"in_axis=5, out_axis=-1, batch_axis=\(\) do not all index a dimension of shape"),
    (lambda: I.orthogonal()(KEY, (3,)), ValueError,
     "orthogonal initializer requires at least a 2D shape"),
    (lambda: I.delta_orthogonal()(KEY, (3, 3)), ValueError,
     "requires a 3D, 4D or 5D shape"),
    (lambda: I.delta_orthogonal()(KEY, (3, 3, 2)), ValueError,
     "`fan_in` must be less or equal than `fan_out`"),
    (lambda: I.uniform()(KEY, (2,), jnp.int32), ValueError,
     "dtype argument to `uniform` must be a float dtype, got int32"),
    (lambda: I.truncated_normal()(KEY, (2,), jnp.int32), ValueError,
     "dtype argument to `truncated_normal` must be a float dtype"),
    (lambda: I.glorot_uniform(dtype=jnp.int32)(KEY, (2, 2)), ValueError,
     "dtype argument to `uniform` must be a float dtype"),
    (lambda: I.zeros(KEY, (2,), out_sharding="x"), ValueError,
     "out_sharding='x' is not supported"),
]


@pytest.mark.parametrize("thunk,cls,msg", ERRORS)
def test_errors(thunk, cls, msg):
  with pytest.raises(cls, match=msg):
    thunk()
