"""Loop bodies and branches the CPU backend cannot compile run on the reference evaluator
(backends/cpu/control_flow.py `_Sub`): slowly, so each such compile is logged on the "ember"
logger and counted in `control_flow.REFERENCE_FALLBACKS` by the opcode the backend's error
names. Every opcode that takes that path is a missing backend feature: `EXPECTED` lists them
today, a list to shrink to zero. A change that sends another op there fails
`test_the_ops_that_run_on_the_reference_evaluator`; one that gives an op native code has
to take it off the list."""
import logging

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.backends.cpu import control_flow
from ember._src.driver.compilation import compile_executable

# The opcodes whose loop bodies and branches run on the reference evaluator today.
# threefry2x32: an opcode of ember's HLO that the reference evaluator runs but the backend
# has no code for (lowering never emits it: threefry2x32_p lowers to uint32 arithmetic).
EXPECTED = {"threefry2x32"}

U32 = np.dtype(np.uint32)


def _threefry_in_a_conditional() -> tuple[hlo.Module, list]:
  """`conditional(0, k1, k2, x1, x2)` whose one branch hashes with a threefry2x32
  instruction (and adds its two words, so the branch has a single output)."""
  m = hlo.Module("jit_threefry_branch")
  s = hlo.Shape(U32, (5,))
  branch = m.new_computation("hash")
  ps = [branch.add(hlo.Instr("parameter", s, attrs={"number": j}, name=f"w{j}"))
        for j in range(4)]
  pair = branch.add(hlo.Instr("threefry2x32", hlo.TupleShape((s, s)), ps, name="fry"))
  words = [branch.add(hlo.Instr("get-tuple-element", s, [pair], {"index": k}))
           for k in range(2)]
  branch.root = branch.add(hlo.Instr("add", s, words))
  entry = m.new_computation("main")
  m.entry = entry
  index = entry.add(hlo.Instr("parameter", hlo.Shape(np.dtype(np.int32), ()),
                              attrs={"number": 0}, name="index"))
  args = [entry.add(hlo.Instr("parameter", s, attrs={"number": j + 1}, name=f"a{j}"))
          for j in range(4)]
  entry.root = entry.add(hlo.Instr("conditional", s, [index, *args], {}, [branch]))
  m.arg_names = [p.name for p in entry.params]
  values = [np.int32(0)] + [np.arange(5, dtype=U32) * (j + 3) + j for j in range(4)]
  return m, values


def _lax_loops():
  """Loop programs as users write them, over the op families lowering emits: float, integer,
  bool and complex elementwise math, reductions, scans, sorts, dots, gathers and scatters,
  dynamic slices, LAPACK custom calls, random bits, nested control flow."""
  x = np.linspace(0.1, 0.9, 6, dtype=np.float32)
  i = np.arange(1, 7, dtype=np.int32)
  m = np.eye(3, dtype=np.float32) * 2 + 0.1
  z = (x + 1j * x[::-1]).astype(np.complex64)
  key = ember.random.PRNGKey(0)

  def floats(x):
    return lax.fori_loop(0, 3, lambda _, c: jnp.tanh(jnp.sin(c) * jnp.exp(-c)) + jnp.log1p(c)
                         + lax.erf(c) + lax.lgamma(c + 1) + jnp.arctan2(c, 2.0) + c ** 1.5
                         + lax.rsqrt(c + 1) + jnp.cbrt(c) + lax.logistic(c) * 1e-3, x)

  def ints(i):
    return lax.fori_loop(0, 3, lambda _, c: (c << 1 >> 1) ^ (c & 5) | lax.population_count(c)
                         + lax.clz(c) + c % 3 + c // 2 + jnp.maximum(c, 2) + jnp.sign(-c), i)

  def bools(i):
    return lax.while_loop(lambda c: jnp.any(c[0] < 9), lambda c: (c[0] + 1, c[1] ^ (c[0] > 4)),
                          (i, i > 3))

  def complexes(z):
    return lax.fori_loop(0, 3, lambda _, c: c * c * 0.5 + jnp.exp(c) * 0.1 + jnp.abs(c) + z, z)

  def reductions(x):
    def body(c, _):
      c = c + jnp.cumsum(c) * 0.01 + jnp.sort(c)[::-1] * 0.01 + lax.top_k(c, 2)[0][0] * 0.01
      return c - jnp.max(c) + jnp.argmax(c) * 0.01, jnp.sum(c)
    return lax.scan(body, x, None, length=3)

  def linear(m):
    def body(_, c):
      c = c @ m * 0.5 + jnp.linalg.solve(m, c) * 0.1 + jnp.linalg.cholesky(m) * 0.01
      return c.at[jnp.array([0, 2])].add(1.0)[jnp.array([2, 0, 1])]
    return lax.fori_loop(0, 2, body, m)

  def slices(x):
    return lax.fori_loop(0, 3, lambda k, c: lax.dynamic_update_slice(
        c, lax.dynamic_slice(c, (k,), (2,)) * 2, (k + 1,)), x)

  def nested(x):
    def body(k, c):
      c = lax.cond(k % 2 == 0, jnp.sin, jnp.cos, c)
      c = lax.switch(k % 3, [lambda v: v + 1, lambda v: v * 2, jnp.sqrt], c)
      return lax.fori_loop(0, 2, lambda _, d: d * 0.5 + c.astype(jnp.float16).astype(c.dtype), c)
    return lax.fori_loop(0, 3, body, x)

  def randoms(x):
    def body(k, c):
      return c + ember.random.normal(ember.random.fold_in(key, k), c.shape)
    return lax.fori_loop(0, 3, body, x)

  return [(floats, x), (ints, i), (bools, i), (complexes, z), (reductions, x), (linear, m),
          (slices, x), (nested, x), (randoms, x)]


@pytest.fixture
def counted():
  """REFERENCE_FALLBACKS of this test only (the process's count is restored after)."""
  saved = control_flow.REFERENCE_FALLBACKS.copy()
  control_flow.REFERENCE_FALLBACKS.clear()
  yield control_flow.REFERENCE_FALLBACKS
  control_flow.REFERENCE_FALLBACKS.clear()
  control_flow.REFERENCE_FALLBACKS.update(saved)


def test_the_ops_that_run_on_the_reference_evaluator(counted):
  for f, arg in _lax_loops():
    compiled = ember.jit(f).lower(arg).compile()
    with ember.disable_jit():
      want = f(arg)
    for got, ref in zip(ember.tree_util.tree_leaves(compiled(arg)),
                        ember.tree_util.tree_leaves(want)):
      np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=2e-5, atol=1e-5,
                                 err_msg=f.__name__)
  assert not counted, "a loop program lowering emits ran on the reference evaluator"
  module, _ = _threefry_in_a_conditional()
  with flags.override(tiered_compilation=False):
    compile_executable(module)
  assert set(counted) == EXPECTED


def test_a_fallback_is_logged_counted_and_right(counted, caplog):
  module, values = _threefry_in_a_conditional()
  want = hlo_eval.evaluate(module, values)
  with caplog.at_level(logging.WARNING, logger="ember"), \
      flags.override(tiered_compilation=False):
    exe = compile_executable(module)
  (thunk,) = [t for t in exe.thunks if isinstance(t, control_flow.ControlFlowThunk)]
  assert thunk.native == [False] and "threefry2x32" in thunk.subs[0].error
  assert counted == {"threefry2x32": 1}
  (record,) = [r for r in caplog.records if r.name == "ember"]
  assert record.levelno == logging.WARNING
  assert "cannot compile threefry2x32 in %hash" in record.getMessage()
  assert "reference evaluator" in record.getMessage()
  np.testing.assert_array_equal(exe.execute(values)[0], want[0])
