"""Runs fuzz programs under real JAX: started by runner.JaxWorker with JAX's Python.

Protocol on stdin/stdout: length-prefixed (8 bytes, little endian) pickles. A request is
{"source", "inputs", "batch", "x64", "modes"}; the answer maps each mode to ("ok", array)
or ("error", "Class: message"). Imports only numpy and jax (no ember, no tests package).
"""
import os
import pickle
import struct
import sys
import warnings

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402


def _read(stream):
  head = stream.read(8)
  if len(head) < 8:
    return None
  (n,) = struct.unpack("<Q", head)
  return pickle.loads(stream.read(n))


def _write(stream, obj):
  data = pickle.dumps(obj, protocol=4)
  stream.write(struct.pack("<Q", len(data)) + data)
  stream.flush()


def run(req):
  warnings.simplefilter("ignore")
  jax.config.update("jax_enable_x64", bool(req["x64"]))
  ns = {"jax": jax, "jnp": jnp, "lax": lax, "np": np}
  exec(req["source"], ns)   # noqa: S102 -- the fuzzer's own generated program
  f, loss = ns["f"], ns["loss"]
  args = [jnp.asarray(v) for v in req["inputs"]]
  axes = (0,) + (None,) * (len(args) - 1)
  # jitted: one XLA compile per program, not one per op and shape as op-by-op would be
  xb = jnp.asarray(req["batch"])
  calls = {
      "eager": lambda: jax.jit(f)(*args),
      "grad": lambda: jax.jit(jax.grad(loss))(*args),
      "jvp": lambda: jax.jit(lambda x, t: jax.jvp(lambda x: loss(x, *args[1:]), (x,), (t,))[1])(
          args[0], xb[1]),
      "loop": lambda: jax.jit(jax.vmap(f, in_axes=axes))(xb, *args[1:]),
      "loop_grad": lambda: jax.jit(jax.vmap(jax.grad(loss), in_axes=axes))(xb, *args[1:]),
  }
  out = {}
  for mode in req["modes"]:
    try:
      out[mode] = ("ok", np.asarray(calls[mode]()))
    except Exception as e:  # noqa: BLE001 -- reported to the fuzzer
      out[mode] = ("error", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
  return out


def main():
  stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
  sys.stdout = sys.stderr        # stray prints must not corrupt the protocol
  _write(stdout, {"jax": jax.__version__})
  served = 0
  while True:
    req = _read(stdin)
    if req is None:
      return
    served += 1
    if served % 100 == 0:
      jax.clear_caches()      # every program compiles anew: keep memory flat
    try:
      _write(stdout, run(req))
    except Exception as e:  # noqa: BLE001 -- a program JAX cannot even trace
      _write(stdout, {"__error__": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
  main()
