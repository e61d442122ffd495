"""The calls whose values tests/test_example_libraries.py checks against real JAX's
jax.example_libraries (stax, optimizers).

Shared by the test (run with ember's modules) and by make_example_libraries.py (run with
real JAX 0.12, which wrote example_libraries.json). Each case is (name, needs, call):
`call(ns)` returns a pytree of arrays, where ns has the attributes jax, jnp, lax, random,
stax, optimizers; `needs` names the lax functions the case uses that ember may not have yet
(the test skips the case until it does).
"""
import numpy as np

_RNG = np.random.default_rng(7)
X = _RNG.standard_normal((6, 4)).astype(np.float32)
IMAGES = _RNG.standard_normal((2, 6, 6, 3)).astype(np.float32)
PARAMS = {"w": _RNG.standard_normal((3, 2)).astype(np.float32),
          "b": _RNG.standard_normal(2).astype(np.float32),
          "s": np.float32(1.5)}
TARGET = {"w": np.ones((3, 2), np.float32), "b": np.zeros(2, np.float32), "s": np.float32(-1)}
STEPS = 5


def _grad(ns, params):
  """A fixed, nonlinear gradient field (no autodiff: the optimizers alone are under test)."""
  return ns.jax.tree_util.tree_map(
      lambda p, t: 2.0 * (p - t) + 0.1 * ns.jnp.sin(3.0 * p), params, TARGET)


def _run_optimizer(make, jit=False):
  def call(ns):
    opt_init, opt_update, get_params = make(ns.optimizers)
    update = ns.jax.jit(opt_update) if jit else opt_update
    state = opt_init(ns.jax.tree_util.tree_map(ns.jnp.asarray, PARAMS))
    trajectory = []
    for i in range(STEPS):
      state = update(i, _grad(ns, get_params(state)), state)
      trajectory.append(get_params(state))
    return trajectory
  return call


OPTIMIZERS = {
    "sgd": lambda o: o.sgd(0.1),
    "sgd_schedule": lambda o: o.sgd(o.exponential_decay(0.1, 2, 0.5)),
    "momentum": lambda o: o.momentum(0.05, 0.9),
    "nesterov": lambda o: o.nesterov(0.05, 0.9),
    "adagrad": lambda o: o.adagrad(0.3),
    "rmsprop": lambda o: o.rmsprop(0.05),
    "rmsprop_momentum": lambda o: o.rmsprop_momentum(0.05),
    "adam": lambda o: o.adam(0.1),
    "adam_schedule": lambda o: o.adam(o.polynomial_decay(0.1, 4, 0.01)),
    "adamax": lambda o: o.adamax(0.1),
    "sm3": lambda o: o.sm3(0.3),
    "sgd_piecewise": lambda o: o.sgd(o.piecewise_constant([1, 3], [0.1, 0.05, 0.01])),
}


def _schedules(ns):
  o = ns.optimizers
  steps = [0, 1, 3, 10, 100]
  made = {
      "constant": o.constant(0.3),
      "exponential_decay": o.exponential_decay(0.5, 10, 0.3),
      "inverse_time_decay": o.inverse_time_decay(0.5, 10, 0.3),
      "inverse_time_decay_staircase": o.inverse_time_decay(0.5, 4, 0.3, staircase=True),
      "polynomial_decay": o.polynomial_decay(0.5, 20, 0.01, power=2.0),
      "piecewise_constant": o.piecewise_constant([2, 10], [1.0, 0.5, 0.1]),
  }
  return {k: ns.jnp.stack([ns.jnp.asarray(s(ns.jnp.asarray(i)), ns.jnp.float32) for i in steps])
          for k, s in made.items()}


def _clip(ns):
  o = ns.optimizers
  tree = ns.jax.tree_util.tree_map(ns.jnp.asarray, PARAMS)
  return [o.l2_norm(tree), o.clip_grads(tree, 1.0), o.clip_grads(tree, 100.0)]


def _mlp(ns):
  s = ns.stax
  init, apply = s.serial(s.Dense(8), s.Relu, s.Dense(8), s.Tanh, s.Dense(3), s.LogSoftmax)
  shape, params = init(ns.random.key(0), (-1, 4))
  return [ns.jnp.asarray(shape), params, apply(params, X)]


def _mlp_grad_and_adam_step(ns):
  """stax + optimizers end to end: grad of a loss of the MLP, one jitted Adam step."""
  s, o = ns.stax, ns.optimizers
  init, apply = s.serial(s.Dense(8), s.Gelu, s.Dense(3), s.LogSoftmax)
  _, params = init(ns.random.PRNGKey(1), (-1, 4))
  labels = np.array([0, 1, 2, 0, 1, 2])

  def loss(p):
    return -ns.jnp.mean(apply(p, X)[np.arange(6), labels])

  opt_init, opt_update, get_params = o.adam(1e-2)

  @ns.jax.jit
  def step(i, state):
    return opt_update(i, ns.jax.grad(loss)(get_params(state)), state)

  state = opt_init(params)
  for i in range(3):
    state = step(i, state)
  return [ns.jax.grad(loss)(params), get_params(state), loss(get_params(state))]


def _elementwise(ns):
  s = ns.stax
  layers = [s.Tanh, s.Relu, s.Exp, s.LogSoftmax, s.Softmax, s.Softplus, s.Sigmoid, s.Elu,
            s.LeakyRelu, s.Selu, s.Gelu, s.Identity]
  return [apply((), X) for _, apply in layers]


def _combinators(ns):
  s = ns.stax
  init, apply = s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(3)), s.FanInSum)
  shape, params = init(ns.random.key(2), (6, 4))
  init2, apply2 = s.serial(s.FanOut(3), s.parallel(s.Dense(2), s.Identity, s.Tanh),
                           s.FanInConcat(axis=-1), s.Flatten)
  shape2, params2 = init2(ns.random.key(3), (6, 4))
  dep_init, dep_apply = s.shape_dependent(lambda shape: s.Dense(shape[-1] * 2))
  shape3, params3 = dep_init(ns.random.key(4), (6, 4))
  return [ns.jnp.asarray(shape), apply(params, X), ns.jnp.asarray(shape2), apply2(params2, X),
          ns.jnp.asarray(shape3), dep_apply(params3, X)]


def _batchnorm(ns):
  s = ns.stax
  out = []
  for kw in ({"axis": 0}, {"axis": (0,), "center": False}, {"axis": (0,), "scale": False}):
    init, apply = s.BatchNorm(**kw)
    _, params = init(ns.random.key(0), (6, 4))
    params = ns.jax.tree_util.tree_map(lambda p: p + 0.5, params)
    out.append(apply(params, X))
  init, apply = s.BatchNorm()  # over (0, 1, 2) of an image batch
  _, params = init(ns.random.key(0), IMAGES.shape)
  return out + [apply(params, IMAGES)]


def _dropout(ns):
  s = ns.stax
  _, apply = s.Dropout(0.7)
  _, apply_eval = s.Dropout(0.7, mode="test")
  init, apply_net = s.serial(s.Dense(5), s.Dropout(0.5), s.Dense(2))
  _, params = init(ns.random.key(5), (-1, 4))
  return [apply((), X, rng=ns.random.key(1)), apply_eval((), X, rng=ns.random.key(1)),
          apply_net(params, X, rng=ns.random.key(6))]


def _conv(ns):
  s = ns.stax
  init, apply = s.serial(s.Conv(4, (3, 3), padding="SAME"), s.Relu,
                         s.Conv(5, (2, 2), strides=(2, 2)), s.Flatten, s.Dense(3))
  shape, params = init(ns.random.key(0), (-1, 6, 6, 3))
  init1, apply1 = s.GeneralConv(("NCHW", "OIHW", "NHWC"), 2, (3, 2))
  shape1, params1 = init1(ns.random.key(1), (2, 3, 6, 6))
  return [ns.jnp.asarray(shape), params, apply(params, IMAGES), ns.jnp.asarray(shape1),
          apply1(params1, IMAGES.transpose(0, 3, 1, 2))]


def _conv_transpose(ns):
  s = ns.stax
  init, apply = s.ConvTranspose(2, (3, 3), strides=(2, 2), padding="SAME")
  shape, params = init(ns.random.key(0), (-1, 6, 6, 3))
  return [ns.jnp.asarray(shape), apply(params, IMAGES)]


def _pooling(ns):
  s = ns.stax
  out = []
  for layer in (s.MaxPool((2, 2)), s.AvgPool((3, 3), strides=(2, 2), padding="SAME"),
                s.SumPool((2, 3), padding="SAME"), s.AvgPool((2, 2), spec="NCHW")):
    init, apply = layer
    shape, _ = init(None, (-1, 6, 6, 3))
    out += [ns.jnp.asarray(shape), apply((), IMAGES)]
  return out


def _cnn_train(ns):
  """A small CNN (conv + max pooling) trained 3 jitted SGD-momentum steps."""
  s, o = ns.stax, ns.optimizers
  init, apply = s.serial(s.Conv(4, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2)),
                         s.Flatten, s.Dense(3), s.LogSoftmax)
  _, params = init(ns.random.key(0), (-1, 6, 6, 3))
  labels = np.array([2, 0])

  def loss(p):
    return -ns.jnp.mean(apply(p, IMAGES)[np.arange(2), labels])

  opt_init, opt_update, get_params = o.momentum(0.1, 0.9)

  @ns.jax.jit
  def step(i, state):
    value, grads = ns.jax.value_and_grad(loss)(get_params(state))
    return opt_update(i, grads, state), value

  state = opt_init(params)
  losses = []
  for i in range(3):
    state, value = step(i, state)
    losses.append(value)
  return [ns.jnp.stack(losses), get_params(state)]


CASES = (
    [(f"opt_{k}", (), _run_optimizer(m)) for k, m in OPTIMIZERS.items()]
    + [(f"opt_{k}_jit", (), _run_optimizer(OPTIMIZERS[k], jit=True))
       for k in ("sgd_schedule", "momentum", "adam", "adamax", "sm3")]
    + [("schedules", (), _schedules), ("clip", (), _clip), ("mlp", (), _mlp),
       ("mlp_grad_adam", (), _mlp_grad_and_adam_step), ("elementwise", (), _elementwise),
       ("combinators", (), _combinators), ("batchnorm", (), _batchnorm),
       ("dropout", (), _dropout),
       ("conv", ("conv_general_dilated",), _conv),
       ("conv_transpose", ("conv_transpose",), _conv_transpose),
       ("pooling", ("reduce_window",), _pooling),
       ("cnn_train", ("conv_general_dilated", "reduce_window"), _cnn_train)])
