"""JAX's example programs mnist_classifier.py and mnist_vae.py (issue 18): ember vs JAX 0.12.

Both programs as JAX ships them (examples/ in the JAX repository), written against the JAX
API of a library module (`import ember as jax` or `import jax`), with synthetic data of
MNIST's shapes in place of the download: 28x28 images flattened to 784 values in [0, 1],
N_TRAIN training rows (60000 in MNIST; fewer so an epoch takes about a second) and N_TEST
test rows, one-hot labels for the classifier.

- classifier: stax MLP 784-1024-1024-10, optimizers.momentum, a jitted `update` called
  from a Python loop over host (NumPy) batches drawn by a generator (`next(batches)`);
  "evaluate" is the program's un-jitted `accuracy` on the training and the test set.
- vae: stax encoder/decoder 784-512-512-(10,10) / 10-512-512-784, a jitted `run_epoch`
  (a `lax.fori_loop` over the batches, with the optimizer state as carry, binarizing each
  batch with `random.bernoulli`), a jitted `evaluate` (test ELBO and a 10x10 grid of
  sampled images, `image_grid`).

Phases: first epoch (tracing and compiling included), steady epoch (median of the later
epochs), evaluate first call and steady. Every epoch and evaluate ends with
`block_until_ready`. Each library runs in worker processes of its own, one after the
other (JAX under JAX_PYTHON, default /work/jaxvenv312/bin/python: it cannot import ember);
BENCH_ROUNDS (default 3) fresh processes each, alternating, and the table shows medians.

    PYTHONPATH=. .venv/bin/python bench/examples_mnist.py [classifier|vae]
"""
from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import numpy.random as npr

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEFAULT_JAX_PYTHON = "/work/jaxvenv312/bin/python"
N_TRAIN = int(os.environ.get("MNIST_N_TRAIN", 6000))
N_TEST = int(os.environ.get("MNIST_N_TEST", 1000))
EPOCHS = int(os.environ.get("MNIST_EPOCHS", 4))
EVALS = 4
PROGRAMS = ("classifier", "vae")


def synthetic_mnist(seed=0):
  """MNIST's shapes and value ranges: images in [0, 1] (float32), one-hot labels."""
  rng = np.random.default_rng(seed)
  def images(n):
    return rng.random((n, 28 * 28), dtype=np.float32)
  def labels(n):
    return np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
  return images(N_TRAIN), labels(N_TRAIN), images(N_TEST), labels(N_TEST)


def import_library(name):
  if name == "ember":
    import ember as jax
    from ember.example_libraries import optimizers, stax
  else:
    import jax
    from jax.example_libraries import optimizers, stax
  return jax, optimizers, stax


def timed(fn):
  t0 = time.perf_counter()
  out = fn()
  return out, time.perf_counter() - t0


def classifier(name) -> dict:
  """examples/mnist_classifier.py, timed."""
  jax, optimizers, stax = import_library(name)
  jnp, random, jit, grad = jax.numpy, jax.random, jax.jit, jax.grad
  Dense, Relu, LogSoftmax = stax.Dense, stax.Relu, stax.LogSoftmax

  init_random_params, predict = stax.serial(
      Dense(1024), Relu, Dense(1024), Relu, Dense(10), LogSoftmax)

  def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))

  def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)

  rng = random.key(0)
  step_size, batch_size, momentum_mass = 0.001, 128, 0.9
  train_images, train_labels, test_images, test_labels = synthetic_mnist()
  num_train = train_images.shape[0]
  num_complete_batches, leftover = divmod(num_train, batch_size)
  num_batches = num_complete_batches + bool(leftover)

  def data_stream():
    rng = npr.RandomState(0)
    while True:
      perm = rng.permutation(num_train)
      for i in range(num_batches):
        batch_idx = perm[i * batch_size:(i + 1) * batch_size]
        yield train_images[batch_idx], train_labels[batch_idx]
  batches = data_stream()

  opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=momentum_mass)

  @jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, grad(loss)(params, batch), opt_state)

  _, init_params = init_random_params(rng, (-1, 28 * 28))
  opt_state = opt_init(init_params)
  itercount = itertools.count()

  def epoch():
    nonlocal opt_state
    for _ in range(num_batches):
      opt_state = update(next(itercount), opt_state, next(batches))
    return jax.block_until_ready(opt_state)

  def evaluate():
    params = get_params(opt_state)
    return (float(accuracy(params, (train_images, train_labels))),
            float(accuracy(params, (test_images, test_labels))))

  return phases(epoch, evaluate)


def vae(name) -> dict:
  """examples/mnist_vae.py, timed (the image grid is returned, not plotted)."""
  jax, optimizers, stax = import_library(name)
  jnp, lax, random, jit, grad = jax.numpy, jax.lax, jax.random, jax.jit, jax.grad
  Dense, FanOut, Relu, Softplus = stax.Dense, stax.FanOut, stax.Relu, stax.Softplus

  def gaussian_kl(mu, sigmasq):
    return -0.5 * jnp.sum(1. + jnp.log(sigmasq) - mu**2. - sigmasq)

  def gaussian_sample(rng, mu, sigmasq):
    return mu + jnp.sqrt(sigmasq) * random.normal(rng, mu.shape)

  def bernoulli_logpdf(logits, x):
    return -jnp.sum(jnp.logaddexp(0., jnp.where(x, -1., 1.) * logits))

  def elbo(rng, params, images):
    enc_params, dec_params = params
    mu_z, sigmasq_z = encode(enc_params, images)
    logits_x = decode(dec_params, gaussian_sample(rng, mu_z, sigmasq_z))
    return bernoulli_logpdf(logits_x, images) - gaussian_kl(mu_z, sigmasq_z)

  def image_sample(rng, params, nrow, ncol):
    _, dec_params = params
    code_rng, img_rng = random.split(rng)
    logits = decode(dec_params, random.normal(code_rng, (nrow * ncol, 10)))
    sampled_images = random.bernoulli(img_rng, jnp.logaddexp(0., logits))
    return image_grid(nrow, ncol, sampled_images, (28, 28))

  def image_grid(nrow, ncol, imagevecs, imshape):
    images = iter(imagevecs.reshape((-1,) + imshape))
    return jnp.vstack([jnp.hstack([next(images).T for _ in range(ncol)][::-1])
                       for _ in range(nrow)]).T

  encoder_init, encode = stax.serial(
      Dense(512), Relu, Dense(512), Relu, FanOut(2),
      stax.parallel(Dense(10), stax.serial(Dense(10), Softplus)))
  decoder_init, decode = stax.serial(
      Dense(512), Relu, Dense(512), Relu, Dense(28 * 28))

  step_size, batch_size = 0.001, 32
  nrow, ncol = 10, 10
  test_rng = random.key(1)
  train_images, _, test_images, _ = synthetic_mnist()
  num_complete_batches, leftover = divmod(train_images.shape[0], batch_size)
  num_batches = num_complete_batches + bool(leftover)

  enc_init_rng, dec_init_rng = random.split(random.key(2))
  _, init_encoder_params = encoder_init(enc_init_rng, (batch_size, 28 * 28))
  _, init_decoder_params = decoder_init(dec_init_rng, (batch_size, 10))
  init_params = init_encoder_params, init_decoder_params
  opt_init, opt_update, get_params = optimizers.momentum(step_size, mass=0.9)
  train_images = jax.device_put(train_images)
  test_images = jax.device_put(test_images)

  def binarize_batch(rng, i, images):
    i = i % num_batches
    batch = lax.dynamic_slice_in_dim(images, i * batch_size, batch_size)
    return random.bernoulli(rng, batch)

  @jit
  def run_epoch(rng, opt_state, images):
    def body_fun(i, opt_state):
      elbo_rng, data_rng = random.split(random.fold_in(rng, i))
      batch = binarize_batch(data_rng, i, images)
      loss = lambda params: -elbo(elbo_rng, params, batch) / batch_size
      g = grad(loss)(get_params(opt_state))
      return opt_update(i, g, opt_state)
    return lax.fori_loop(0, num_batches, body_fun, opt_state)

  @jit
  def evaluate(opt_state, images):
    params = get_params(opt_state)
    elbo_rng, data_rng, image_rng = random.split(test_rng, 3)
    binarized_test = random.bernoulli(data_rng, images)
    test_elbo = elbo(elbo_rng, params, binarized_test) / images.shape[0]
    sampled_images = image_sample(image_rng, params, nrow, ncol)
    return test_elbo, sampled_images

  opt_state = opt_init(init_params)
  epoch_count = itertools.count()

  def epoch():
    nonlocal opt_state
    opt_state = run_epoch(random.key(next(epoch_count)), opt_state, train_images)
    return jax.block_until_ready(opt_state)

  def evaluate_call():
    test_elbo, sampled_images = evaluate(opt_state, test_images)
    return float(test_elbo), np.asarray(sampled_images).shape

  return phases(epoch, evaluate_call)


def phases(epoch, evaluate) -> dict:
  """First epoch, then the first evaluate, then the steady epochs and evaluates."""
  _, epoch_first = timed(epoch)
  _, evaluate_first = timed(evaluate)
  epochs = [timed(epoch)[1] for _ in range(EPOCHS - 1)]
  evals = [timed(evaluate)[1] for _ in range(EVALS)]
  return {"epoch first": epoch_first, "epoch steady": statistics.median(epochs),
          "evaluate first": evaluate_first, "evaluate steady": statistics.median(evals)}


def run_worker(lib: str, python: str, program: str) -> dict | None:
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  r = subprocess.run([python, os.path.abspath(__file__), "--worker", lib, program],
                     capture_output=True, text=True, env=env)
  if r.returncode:
    print(f"{lib} {program} worker failed:\n{r.stderr[-3000:]}", file=sys.stderr)
    return None
  return json.loads(r.stdout.strip().splitlines()[-1])


def main(programs):
  rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
  jax_python = os.environ.get("JAX_PYTHON") or (
      DEFAULT_JAX_PYTHON if os.path.exists(DEFAULT_JAX_PYTHON) else None)
  libs = [("ember", sys.executable)] + ([("jax", jax_python)] if jax_python else [])
  print(f"N_TRAIN={N_TRAIN} N_TEST={N_TEST}, medians of {rounds} processes each")
  print(f"{'program':12s}{'phase':17s}{'ember':>11s}{'jax':>11s}  ember/jax")
  for program in programs:
    runs = {lib: [] for lib, _ in libs}
    for _ in range(rounds):          # alternate, so both see the same machine load
      for lib, python in libs:
        out = run_worker(lib, python, program)
        if out is not None:
          runs[lib].append(out)
    for phase in ("epoch first", "epoch steady", "evaluate first", "evaluate steady"):
      med = {lib: statistics.median(r[phase] for r in rs) if rs else None
             for lib, rs in runs.items()}
      e, j = med.get("ember"), med.get("jax")
      cell = lambda v: f"{v * 1e3:9.1f}ms" if v is not None else f"{'-':>11s}"
      ratio = f"{e / j:10.2f}" if e and j else ""
      print(f"{program:12s}{phase:17s}{cell(e)}{cell(j)}{ratio}", flush=True)


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--worker":
    print(json.dumps({"classifier": classifier, "vae": vae}[sys.argv[3]](sys.argv[2])))
  else:
    main([p for p in PROGRAMS if len(sys.argv) < 2 or p in sys.argv[1:]])
