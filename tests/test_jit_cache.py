"""jit's signature cache, donation, compile logging and cache-miss explanations (issue 5).

Compilations are counted as a user counts them: `Compiling jit(<name>)` records, through a
handler on the "jax" logger exactly like seed 002's CompileCounter (ember forwards its
"ember" records there), and on "ember" itself.
"""
import functools
import logging
import threading

import numpy as np
import pytest

import ember
import ember.numpy as jnp


class CompileCounter(logging.Handler):
  """Seed 002's helper: counts `Compiling jit(<name>)` records while the block runs."""

  def __init__(self, name=None, logger="jax"):
    super().__init__()
    self.name, self.records, self.all, self.logger = name, [], [], logger

  def emit(self, record):
    msg = record.getMessage()
    self.all.append(msg)
    if msg.startswith("Compiling jit("):
      fn = msg[len("Compiling jit("):].split(")")[0]
      if self.name is None or fn == self.name:
        self.records.append(msg)

  def __enter__(self):
    self._logger = logging.getLogger(self.logger)
    self._logger.addHandler(self)
    self._ctx = ember.log_compiles(True)
    self._ctx.__enter__()
    return self

  def __exit__(self, *exc):
    self._ctx.__exit__(*exc)
    self._logger.removeHandler(self)

  @property
  def count(self):
    return len(self.records)


@pytest.fixture
def explain():
  grab = CompileCounter(logger="ember")
  logging.getLogger("ember").addHandler(grab)
  ember.config.update("jax_explain_cache_misses", True)
  try:
    yield grab.all
  finally:
    ember.config.update("jax_explain_cache_misses", False)
    logging.getLogger("ember").removeHandler(grab)


def misses(msgs, name):
  return [m for m in msgs if m.startswith("TRACING CACHE MISS") and f" {name} " in m]


# --- the signature cache ----------------------------------------------------------------------

def test_exercise_2_compiles_four_times():
  @ember.jit(static_argnames="mode")
  def g(x, scale, mode="a"):
    return x * scale if mode == "a" else x + scale
  with CompileCounter("g") as cc:
    g(jnp.ones(3), 2.0)                   # 1: f32[3], weak f32[]
    g(jnp.ones(3), 3.0)                   # hit: same types
    g(jnp.ones(3), jnp.float32(3.0))      # 2: strong f32[]
    g(jnp.ones(3), 2.0, mode="b")         # 3: another static value
    g(np.ones(3, np.float64), 2.0)        # hit: float64 NumPy canonicalized under x32
    g(jnp.ones((3,)), 2)                  # 4: weak i32[]
  assert cc.count == 4
  assert g._cache_size() == 4
  np.testing.assert_allclose(np.asarray(g(jnp.ones(3), 2.0, mode="b")), np.full(3, 3.0))


def test_weak_types_are_three_keys_and_f64_hits_f32():
  @ember.jit
  def scale(v):
    return v * 2
  with CompileCounter("scale") as cc:
    scale(jnp.ones(3, jnp.float32))
    scale(np.ones(3, np.float64))
    n_after_f64 = cc.count
    scale(1)
    scale(1.0)
    scale(jnp.float32(1.0))
  assert n_after_f64 == 1 and cc.count == 4
  shapes = [r.split(" with global shapes and types ")[1].split(". Argument")[0]
            for r in cc.records]
  assert shapes == ["(ShapedArray(float32[3]),)", "(ShapedArray(int32[], weak_type=True),)",
                    "(ShapedArray(float32[], weak_type=True),)", "(ShapedArray(float32[]),)"]


def _base(v, a):
  return v * a


def test_cache_keyed_by_underlying_function():
  v3 = jnp.ones(3)
  with CompileCounter("<lambda>") as c_lambda:
    for _ in range(3):
      ember.jit(lambda v: v * 2)(v3)
  with CompileCounter("_base") as c_partial:
    for _ in range(3):
      ember.jit(functools.partial(_base, a=2.0))(v3)
  ember.clear_caches()
  with CompileCounter("_base") as c_rejit:
    for _ in range(3):
      ember.jit(_base)(v3, 2.0)
  p_once = ember.jit(functools.partial(_base, a=2.0))
  with CompileCounter("_base") as c_once:
    for _ in range(3):
      p_once(v3)
  assert (c_lambda.count, c_partial.count, c_rejit.count, c_once.count) == (3, 3, 1, 1)
  assert ember.jit(_base)._cache_size() == 1


def test_static_argnums_and_x64_are_part_of_the_key():
  @ember.jit(static_argnums=(1,))
  def f(x, n):
    return x * 2.0 if n > 5 else x + 1.0
  with CompileCounter("f") as cc:
    for n in (3, 3, 7, 7):
      f(jnp.ones(2), n)
    with ember.enable_x64():
      f(np.ones(2), 3)                    # float64 now, and x64 changes tracing
  assert cc.count == 3
  np.testing.assert_allclose(np.asarray(f(jnp.ones(2), 7)), [2.0, 2.0])


def test_clear_caches_forces_recompilation():
  @ember.jit
  def h(x):
    return x - 1
  with CompileCounter("h") as cc:
    h(jnp.ones(2))
    h(jnp.ones(2))
    ember.clear_caches()
    assert h._cache_size() == 0
    h(jnp.ones(2))
  assert cc.count == 2


def test_unhashable_static_argument_names_it():
  f = ember.jit(lambda x, shape: x.reshape(shape), static_argnums=1)
  with pytest.raises(TypeError, match=r"static argument 1 .* list, which is unhashable"):
    f(jnp.ones(4), [2, 2])


def test_static_argnums_and_argnames_given_both_are_taken_as_given():
  # JAX completes one from the other only where it is not given (None): given both, a
  # positional argument named in static_argnames is not static, nor a keyword one whose
  # position is in static_argnums (flax's nn.jit relies on it)
  def f(a, b, c=1):
    return a * c

  # JAX: [2. 2.]; with static_argnames alone, b is static: the dict cannot be hashed
  np.testing.assert_array_equal(
      ember.jit(f, static_argnums=(), static_argnames=("b",))(jnp.ones(2), {"x": 1}, c=2.0),
      [2.0, 2.0])
  with pytest.raises(TypeError, match="unhashable"):
    ember.jit(f, static_argnames=("b",))(jnp.ones(2), {"x": 1}, c=2.0)

  def g(a, b):
    return a if b == "hi" else -a
  # JAX: [1.] where b is static, a TypeError where the string is taken as an array
  np.testing.assert_array_equal(
      ember.jit(g, static_argnums=(), static_argnames=["b"])(jnp.ones(1), b="hi"), [1.0])
  np.testing.assert_array_equal(ember.jit(g, static_argnums=1)(jnp.ones(1), b="hi"), [1.0])
  with pytest.raises(TypeError, match="'hi' of type str"):
    ember.jit(g, static_argnums=(), static_argnames=["b"])(jnp.ones(1), "hi")
  with pytest.raises(TypeError, match="'hi' of type str"):
    ember.jit(g, static_argnums=1, static_argnames=())(jnp.ones(1), b="hi")


def test_trace_cache_hits_do_not_log_and_nested_jit_compiles_once():
  inner = ember.jit(lambda x: x * 3.0)
  inner.__name__ = "inner"

  @ember.jit
  def outer(x):
    return inner(x) + 1.0
  with CompileCounter() as cc:
    for _ in range(3):
      outer(jnp.ones(2))
    inner.lower(jnp.ones(2))              # traced already: no compilation
  assert [r.split(" with")[0] for r in cc.records] == ["Compiling jit(outer)"]
  np.testing.assert_allclose(np.asarray(outer(jnp.ones(2))), [4.0, 4.0])


def test_log_messages_and_config_option():
  grab = CompileCounter(logger="ember")
  x = jnp.ones(3)   # (made first: an eager op may compile, and log, by then)
  logging.getLogger("ember").addHandler(grab)
  ember.config.update("jax_log_compiles", True)
  try:
    @ember.jit
    def logged(x):
      return x + 1
    logged(x)
  finally:
    ember.config.update("jax_log_compiles", False)
    logging.getLogger("ember").removeHandler(grab)
  msgs = grab.all
  assert len(msgs) == 4
  assert msgs[0].startswith("Finished tracing logged for jit in ") and msgs[0].endswith(" sec")
  assert msgs[1] == ("Compiling jit(logged) with global shapes and types "
                     "(ShapedArray(float32[3]),). Argument mapping: (UnspecifiedValue,).")
  assert msgs[2].startswith("Finished jaxpr to MLIR module conversion jit(logged) in ")
  assert msgs[3].startswith("Finished XLA compilation of jit(logged) in ")
  float(msgs[3].split(" in ")[1].split()[0])   # a number of seconds


# --- cache-miss explanations ------------------------------------------------------------------

def test_explain_shape_change(explain):
  @ember.jit
  def explain_me(v, w):
    return v @ w
  explain_me(jnp.ones((4, 4)), jnp.ones((4, 4)))
  explain_me(jnp.ones((4, 4)), jnp.ones((4, 4)))
  explain_me(jnp.ones((4, 4)), jnp.ones((4, 8)))
  first, second = misses(explain, "explain_me")
  assert "never seen function:\n    explain_me id=" in first
  lines = second.split("\n")
  assert lines[0].startswith("TRACING CACHE MISS at ") and __file__ in lines[0]
  assert lines[0].endswith(" (test_explain_shape_change):")
  assert lines[1].startswith("  for explain_me defined at " + __file__ + ":")
  assert lines[2:] == ["  all previously seen cache keys differ. For the closest previous key:",
                       "  different input types:",
                       "  * at w, now f32[4,8] and before f32[4,4]"]


def test_explain_weak_type_static_and_pytree(explain):
  @ember.jit
  def wk(v, w):
    return v * w
  wk(1.0, jnp.ones(3))
  wk(jnp.float32(1.0), jnp.ones(3))
  assert misses(explain, "wk")[1].endswith(
      "  * at v, now f32[]{weak_type=False} and before f32[]{weak_type=True}"
      "https://docs.jax.dev/en/latest/101/type_promotion.html#weak-types")

  @functools.partial(ember.jit, static_argnames="mode")
  def st(x, mode="a"):
    return x * 2 if mode == "a" else x + 1
  st(jnp.ones(3), mode="a")
  st(jnp.ones(3), mode="b")
  assert misses(explain, "st")[1].endswith(   # JAX 0.12 names no static value
      "For the closest previous key:\n  cache miss explanation unavailable")

  @ember.jit
  def tr(d):
    return d["a"]
  tr({"a": jnp.ones(3)})
  tr({"a": jnp.ones(3), "b": jnp.ones(2)})
  assert misses(explain, "tr")[1].endswith(
      "  different input pytree:\n  * at input path [0][0], now <class 'dict'> with 2 "
      "children and before <class 'dict'> with 1 child, so the numbers of children do not "
      "match, with the symmetric difference of key sets: {'b'}")


def test_explain_redefined_function(explain):
  for _ in range(2):
    ember.jit(lambda v: v * 2)(jnp.ones(3))
  last = misses(explain, "<lambda>")[-1]
  assert last.endswith("  but seen another function defined on the same line; maybe the "
                       "function is\n  being re-defined repeatedly, preventing caching?")


def test_no_explanations_when_off():
  grab = CompileCounter(logger="ember")
  logging.getLogger("ember").addHandler(grab)
  try:
    f = ember.jit(lambda x: x + 2)
    f(jnp.ones(2))
    f(jnp.ones(3))
  finally:
    logging.getLogger("ember").removeHandler(grab)
  assert not [m for m in grab.all if "CACHE MISS" in m]


# --- donation ---------------------------------------------------------------------------------

def test_donation_aliases_and_deletes():
  @functools.partial(ember.jit, donate_argnums=0)
  def step(x, y):
    return x + y
  x, y = jnp.arange(4.0), jnp.ones(4)
  mem = step.lower(x, y).compile().memory_analysis()
  assert mem.alias_size_in_bytes == 16
  assert ember.jit(lambda x, y: x + y).lower(x, y).compile().memory_analysis() \
      .alias_size_in_bytes == 0
  out = step(x, y)
  np.testing.assert_allclose(np.asarray(out), [1.0, 2.0, 3.0, 4.0])
  assert x.is_deleted() and not y.is_deleted()
  with pytest.raises(RuntimeError, match="deleted.*donated|donated.*deleted"):
    np.asarray(x)
  with pytest.raises(RuntimeError, match="deleted"):
    step(x, y)                            # a deleted array cannot be passed again
  out2 = step(out, y)                     # donating a (possibly pending) output
  assert out.is_deleted()
  np.testing.assert_allclose(np.asarray(out2), [2.0, 3.0, 4.0, 5.0])


def test_donate_argnames_and_numpy_input_untouched():
  @functools.partial(ember.jit, donate_argnames="state")
  def upd(state, g):
    return state - 0.5 * g
  s = np.arange(3, dtype=np.float32)
  out = upd(state=s, g=jnp.ones(3))
  np.testing.assert_allclose(np.asarray(out), [-0.5, 0.5, 1.5])
  np.testing.assert_array_equal(s, [0.0, 1.0, 2.0])   # a NumPy argument is never overwritten
  a = jnp.ones(3)
  upd(a, jnp.ones(3))                                  # positional: donated by name too
  assert a.is_deleted()


class _Model:
  def __init__(self, k):
    self.k = k

  @functools.partial(ember.jit, static_argnums=0)
  def apply(self, x):
    return x * self.k

  def __hash__(self):
    return hash(self.k)

  def __eq__(self, other):
    return isinstance(other, _Model) and other.k == self.k


def test_jit_on_methods_with_static_self():
  x = jnp.ones(2)
  with CompileCounter("apply") as cc:
    np.testing.assert_allclose(np.asarray(_Model(3.0).apply(x)), [3.0, 3.0])
    np.testing.assert_allclose(np.asarray(_Model(3.0).apply(x)), [3.0, 3.0])   # equal self
    np.testing.assert_allclose(np.asarray(_Model(4.0).apply(x)), [4.0, 4.0])
  assert cc.count == 2


# --- threads ----------------------------------------------------------------------------------

def test_one_jitted_function_from_several_threads():
  @ember.jit
  def work(x, k):
    return jnp.sin(x) * k + x
  shapes = [(3,), (4,), (3,), (2, 2)]
  errors, results = [], {}

  def run(t):
    try:
      for i in range(20):
        x = np.full(shapes[(t + i) % 4], float(t), np.float32)
        results[(t, i)] = (x, np.asarray(work(x, 2.0)))
    except Exception as e:  # noqa: BLE001 - reported below
      errors.append(e)
  with CompileCounter("work") as cc:
    threads = [threading.Thread(target=run, args=(t,)) for t in range(6)]
    for th in threads:
      th.start()
    for th in threads:
      th.join()
  assert not errors
  assert cc.count == 3 and work._cache_size() == 3
  for x, out in results.values():
    np.testing.assert_allclose(out, np.sin(x.astype(np.float64)) * 2 + x, rtol=1e-6)


def test_container_kinds_and_keys_are_distinct_signatures():
  @ember.jit
  def total(xs):
    return sum(xs) if not isinstance(xs, dict) else sum(xs.values())
  with CompileCounter("total") as cc:
    a = total([jnp.ones(2), jnp.ones(2)])
    b = total((jnp.ones(2), jnp.ones(2)))
    c = total({"p": jnp.ones(2), "q": 2.0 * jnp.ones(2)})
    d = total({"p": jnp.ones(2), "r": 3.0 * jnp.ones(2)})
    total([jnp.ones(2), jnp.ones(2)])
  assert cc.count == 4
  for out, want in ((a, 2.0), (b, 2.0), (c, 3.0), (d, 4.0)):
    np.testing.assert_allclose(np.asarray(out), [want, want])


def test_jitted_function_has_the_wrapped_signature():
  # JAX 0.12: inspect.signature of jit(f) is f's, also with follow_wrapped=False (chex's
  # fake pmap asks that way; ember's jit object has __get__, which inspect would otherwise
  # take for a builtin method descriptor)
  import functools
  import inspect

  def f(x, y=2, *, z=3):
    return x

  for g in (ember.jit(f), ember.jit(f, static_argnums=1), ember.jit(ember.vmap(f))):
    assert str(inspect.signature(g, follow_wrapped=False)) in ("(x, y=2, *, z=3)",
                                                               "(*args, **kwargs)")
  assert str(inspect.signature(ember.jit(f), follow_wrapped=False)) == "(x, y=2, *, z=3)"
  assert str(inspect.signature(ember.jit(functools.partial(f, 1)),
                               follow_wrapped=False)) == "(y=2, *, z=3)"


def test_jitted_function_type_repr_and_method_binding_as_jax():
  """JAX 0.12.1: type(jit(f)).__name__ is PjitFunction, repr `<PjitFunction of <function f
  at 0x...>>` (nested: of the inner one), a jitted method binds as a bound method; libraries
  recognise jitted functions by these (chex.assert_max_traces refuses to wrap one)."""
  import functools
  import types

  def f(x):
    return x + 1
  g = ember.jit(f)
  assert type(g).__name__ == "PjitFunction" and "PjitFunction" in str(type(g))
  assert repr(g) == str(g) == f"<PjitFunction of {f!r}>"
  assert repr(ember.jit(g)) == f"<PjitFunction of <PjitFunction of {f!r}>>"
  assert repr(ember.jit(f, static_argnums=0)) == f"<PjitFunction of {f!r}>"

  class M:
    def __init__(self, k):
      self.k = k

    @functools.partial(ember.jit, static_argnums=0)
    def meth(self, x):
      return x * self.k

  m = M(3.0)
  assert isinstance(M.meth, type(g)) and isinstance(m.meth, types.MethodType)
  assert repr(m.meth).startswith("<bound method test_jitted_function_type_repr_and_method_"
                                 "binding_as_jax.<locals>.M.meth of <")
  assert float(m.meth(2.0)) == 6.0
  assert m.meth.__self__ is m and m.meth.__func__ is M.__dict__["meth"]
