"""Everything a restructuring promises not to change, written to one text file: for the
workloads of bench/cpu_workloads.py and the fuzzer's programs (tests/fuzz), the jaxpr, the
lowered text (with and without debug info), the optimized HLO, cost and memory analysis, and
hashes of the results (jit and eager; grad and vmap of the fuzz programs). Run it with
`--dump_to` and the compiler writes the LLVM IR and assembly of every compile beside it.

Before and after a change that should change no output (moving or splitting modules), from
the root of each tree:

    EMBER_FLAGS=--dump_to=/tmp/dump_old python tests/snapshot_outputs.py /tmp/snap_old.txt
    EMBER_FLAGS=--dump_to=/tmp/dump_new python tests/snapshot_outputs.py /tmp/snap_new.txt
    diff <(sed "s|$OLD_ROOT|ROOT|g" /tmp/snap_old.txt) <(sed "s|$NEW_ROOT|ROOT|g" /tmp/snap_new.txt)
    # and each dump file the same way (source_file= metadata holds the tree's path)

Both runs need the same SNAP_FUZZ (the number of fuzz seeds, default 200; each runs with and
without x64): loop bodies' dump files are named by module name, so a later program's
overwrites an earlier one's. Issue 30's moves were checked this way (SNAP_FUZZ=150: the text
of 28 workloads and 300 fuzz programs, ~100k lines, and 10,190 dump files identical).
"""
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

import numpy as np  # noqa: E402

import ember  # noqa: E402
import ember.numpy as jnp  # noqa: E402

# the bench workloads too large to run three times over in a snapshot
SKIP = {"m @ m.T", "tanh(m@m)@m", "selu 5000²"}


def digest(x):
  """(dtype, shape, hash of the bytes) of each leaf."""
  leaves = [np.asarray(leaf) for leaf in ember.tree_util.tree_leaves(x)]
  return [(str(a.dtype), a.shape, hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:16])
          for a in leaves]


def record(out, name, f, args, loss=None):
  """Write each view of `f(*args)` (and of grad(loss)), or the error it raised."""
  jitted = lambda: ember.jit(f).lower(*args)                      # noqa: E731
  as_arrays = lambda: [jnp.asarray(a) for a in args]               # noqa: E731
  views = [
      ("jaxpr", lambda: str(ember.make_jaxpr(f)(*args))),
      ("lowered", lambda: jitted().as_text()),
      ("lowered_dbg", lambda: jitted().as_text(debug_info=True)),
      ("compiled", lambda: jitted().compile().as_text()),
      ("cost", lambda: repr(jitted().compile().cost_analysis())),
      ("memory", lambda: repr(jitted().compile().memory_analysis())),
      ("jit", lambda: repr(digest(ember.jit(f)(*args)))),
      ("eager", lambda: repr(digest(f(*as_arrays())))),
  ]
  if loss is not None:
    views += [
        ("grad_jaxpr", lambda: str(ember.make_jaxpr(ember.grad(loss))(*args))),
        ("grad", lambda: repr(digest(ember.jit(ember.grad(loss))(*args)))),
        ("grad_eager", lambda: repr(digest(ember.grad(loss)(*as_arrays())))),
    ]
  print("=" * 20, name, file=out)
  for label, view in views:
    print("--", label, file=out)
    try:
      print(view(), file=out)
    except Exception as e:  # an error is an output too: it must not change either
      print("ERROR", type(e).__name__, str(e)[:300], file=out)
  out.flush()


def bench_programs():
  import cpu_workloads
  rng = np.random.default_rng(0)
  table = cpu_workloads.workloads(cpu_workloads.namespace("ember"))
  for name, (fn, specs, _, opts) in table.items():
    if name in SKIP or opts.get("jit") is False:
      continue
    args = [s(rng) if callable(s) else rng.random(s, dtype=np.float32) + 0.5 for s in specs]
    yield "bench " + name, fn, [jnp.asarray(a) for a in args], None


def main(path):
  from tests.fuzz.generator import Generator
  from tests.fuzz.runner import functions
  with open(path, "w") as out:
    for name, fn, args, _ in bench_programs():
      record(out, name, fn, args)
    for seed in range(int(os.environ.get("SNAP_FUZZ", "200"))):
      for x64 in (False, True):
        prog = Generator(seed, x64=x64, max_ops=10).build()
        ember.config.update("jax_enable_x64", x64)
        try:
          f, loss = functions(prog)
          args = prog.values()
          record(out, f"fuzz {seed} x64={x64}", f, args,
                 loss if prog.differentiable() else None)
          in_axes = (0,) + (None,) * (len(args) - 1)
          print("-- vmap", file=out)
          try:
            print(repr(digest(ember.jit(ember.vmap(f, in_axes=in_axes))(
                prog.batched(), *args[1:]))), file=out)
          except Exception as e:
            print("ERROR", type(e).__name__, str(e)[:300], file=out)
        finally:
          ember.config.update("jax_enable_x64", False)
    print("DONE", file=out)


if __name__ == "__main__":
  main(sys.argv[1])
