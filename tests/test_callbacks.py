"""Host callbacks: pure_callback, io_callback, debug.callback and debug.print, eagerly and
from compiled code, under vmap/grad, and kept (or dropped) by dead-code elimination as
JAX does. Printed output and error messages were compared with JAX 0.12."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember.errors import JaxRuntimeError
from ember.experimental import io_callback

X = np.linspace(-1.0, 2.0, 4).astype(np.float32)
SDS = ember.ShapeDtypeStruct
EAGER_AND_JIT = pytest.mark.parametrize("wrap", [lambda f: f, ember.jit], ids=["eager", "jit"])


def np_sin(x):
  return np.sin(x)


def sin_cb(x):
  return ember.pure_callback(np_sin, SDS(x.shape, x.dtype), x)


# --- pure_callback -------------------------------------------------------------------------

@EAGER_AND_JIT
def test_pure_callback_values(wrap):
  np.testing.assert_allclose(wrap(sin_cb)(X), np.sin(X.astype(np.float64)), rtol=1e-6)
  calls = []

  def cb(a, *, b):
    calls.append((type(a), a.dtype))
    return {"sum": a + b, "prod": (a * b).astype(np.float32)}

  out = wrap(lambda x: ember.pure_callback(
      cb, {"sum": SDS((4,), np.float32), "prod": SDS((4,), np.float32)}, x, b=x))(X)
  np.testing.assert_allclose(out["sum"], 2 * X)
  np.testing.assert_allclose(out["prod"], X * X)
  assert calls[0] == (np.ndarray, np.float32)   # the callback sees NumPy arrays


def test_pure_callback_jaxpr():
  text = str(ember.make_jaxpr(sin_cb)(np.float32(1)))
  assert "pure_callback[" in text
  assert "callback=_FlatCallback(callback_func=<function np_sin" in text
  assert "result_avals=(ShapedArray(float32[]),)" in text and "vmap_method=None" in text


def test_pure_callback_unused_is_dead_code():
  calls = []

  def f(x):
    ember.pure_callback(lambda v: calls.append(1) or v, SDS((4,), np.float32), x)
    return x * 2

  np.testing.assert_allclose(ember.jit(f)(X), 2 * X)
  assert calls == []   # pure: dropped when unused, as in JAX


def test_pure_callback_wrong_result_shape():
  bad = lambda x: np.ones((2,), np.float32)
  f = ember.jit(lambda x: ember.pure_callback(bad, SDS((4,), np.float32), x))
  with pytest.raises(JaxRuntimeError, match=r"pure_callback <lambda>: incorrect output shape "
                     r"for return value #0: expected \(4,\), got \(2,\)"):
    np.asarray(f(X))
  with pytest.raises(JaxRuntimeError, match="returned 1 values, but its result_shape_dtypes "
                                            "describes 2"):
    np.asarray(ember.jit(lambda x: ember.pure_callback(
        lambda v: v, (SDS((4,), np.float32), SDS((4,), np.float32)), x))(X))


def test_pure_callback_dtype_is_cast():
  """JAX casts a result of another dtype to the declared one."""
  out = ember.jit(lambda x: ember.pure_callback(lambda v: np.ones(4), SDS((4,), np.float32),
                                                x))(X)
  assert out.dtype == np.float32
  np.testing.assert_array_equal(out, np.ones(4))


def _boom(x):
  raise ValueError("boom")


CALLBACK_APIS = {
    "pure_callback": (lambda x: ember.pure_callback(_boom, SDS((4,), np.float32), x) * 2,
                      "jax._src.callback", "jax.pure_callback failed"),
    "io_callback": (lambda x: io_callback(_boom, SDS((4,), np.float32), x) * 2,
                    "jax._src.callback", "jax.io_callback failed"),
    "debug_callback": (lambda x: (ember.debug.callback(_boom, x), x * 2)[1],
                       "jax._src.debugging", "jax.debug.callback failed"),
}


@EAGER_AND_JIT
@pytest.mark.parametrize("api", CALLBACK_APIS)
def test_callback_exception_raised_by_the_call(wrap, api, caplog):
  """JAX 0.12.1 runs a program calling a callback synchronously: the callback's exception
  is a JaxRuntimeError raised by the call itself (not at the first read of a result), its
  message the traceback as jaxlib writes it (JAX adds XLA's C++ frames after it); an eager
  debug.callback, which JAX calls directly, raises the exception itself. It is logged on
  JAX's logger."""
  fn, logger, logged = CALLBACK_APIS[api]
  if api == "debug_callback" and wrap is not ember.jit:
    with pytest.raises(ValueError, match="^boom$"):
      wrap(fn)(X)
  else:
    with pytest.raises(JaxRuntimeError) as info:
      wrap(fn)(X)
    msg = str(info.value)
    assert msg.startswith("INTERNAL: CpuCallback error calling callback: Traceback (most "
                          "recent call last):\n  File ")
    assert f'line {_boom.__code__.co_firstlineno + 1}, in _boom\nValueError: boom' in msg
    assert f'  File "{__file__}", line ' in msg
  assert [(r.name, r.getMessage(), r.exc_info[0]) for r in caplog.records] == \
      [(logger, logged, ValueError)]


def test_program_with_callback_runs_at_the_call():
  """Its results are ready when the call returns (JAX waits for such a program); a
  program without one is dispatched asynchronously."""
  seen = []
  x = jnp.ones((700, 700)) * 1e-3   # large enough to be dispatched to the executor

  def slow(x):
    for _ in range(2):
      x = jnp.tanh(x @ x)
    return x

  def slow_with_callback(x):
    x = slow(x)
    ember.debug.callback(seen.append, x[0, 0])
    return x
  out = ember.jit(slow_with_callback)(x)
  assert len(seen) == 1 and out.is_ready()
  out = ember.jit(slow)(x)
  assert not out.is_ready()
  out.block_until_ready()


def test_pure_callback_argument_errors():
  with pytest.raises(TypeError, match="first argument to jax.pure_callback must be callable"):
    ember.pure_callback(3, SDS((), np.float32), 1.0)
  with pytest.raises(ValueError, match="vmap_method must be one of"):
    ember.pure_callback(np_sin, SDS((), np.float32), 1.0, vmap_method="vectorize")
  with pytest.raises(TypeError, match="result_shape_dtypes must be a pytree"):
    ember.pure_callback(np_sin, 3, 1.0)


def test_pure_callback_grad_raises_jax_error():
  with pytest.raises(ValueError, match="Pure callbacks do not support JVP. Please use "
                                       "`jax.custom_jvp`"):
    ember.grad(sin_cb)(np.float32(1.0))


def test_pure_callback_under_custom_jvp():
  @ember.custom_jvp
  def f(x):
    return sin_cb(x)

  f.defjvp(lambda p, t: (f(p[0]), jnp.cos(p[0]) * t[0]))
  g = ember.jit(ember.grad(lambda x: f(x).sum()))(X)
  np.testing.assert_allclose(g, np.cos(X.astype(np.float64)), rtol=1e-6)


@pytest.mark.parametrize("method,seen", [
    ("sequential", [(), (), ()]),
    ("sequential_unrolled", [(), (), ()]),
    ("expand_dims", [((3,), (1,))]),
    ("broadcast_all", [((3,), (3,))]),
    ("legacy_vectorized", [((3,), ())]),
])
def test_pure_callback_vmap_methods(method, seen):
  shapes = []

  def cb(x, y):
    shapes.append((x.shape, y.shape) if x.shape else ())
    return x + y

  xs, y = np.arange(3, dtype=np.float32), np.float32(10)
  f = lambda x: ember.pure_callback(cb, SDS((), np.float32), x, y, vmap_method=method)
  out = ember.vmap(f)(xs)
  np.testing.assert_array_equal(out, xs + 10)
  assert shapes == seen
  np.testing.assert_array_equal(ember.jit(ember.vmap(f))(xs), xs + 10)


def test_pure_callback_vmap_without_method():
  with pytest.raises(NotImplementedError, match="vmap is only supported for the pure_callback "
                     "primitive when vmap_method is one of 'sequential'.*Got vmap_method=None"):
    ember.vmap(sin_cb)(X)


# --- io_callback ------------------------------------------------------------------------------

def test_io_callback_runs_even_when_unused():
  log = []

  def record(v):
    log.append(float(v))
    return np.float32(0)

  def f(x):
    io_callback(record, SDS((), np.float32), x)
    return x * 2

  assert float(ember.jit(f)(np.float32(5))) == 10
  assert float(f(np.float32(6))) == 12
  ember.effects_barrier()
  assert log == [5.0, 6.0]
  assert "io_callback[" in str(ember.make_jaxpr(f)(1.0))


def test_io_callback_result_and_vmap():
  log = []

  def step(v):
    log.append(float(v))
    return np.float32(v * 3)

  f = lambda x: io_callback(step, SDS((), np.float32), x)
  np.testing.assert_array_equal(ember.jit(ember.vmap(f))(np.arange(3, dtype=np.float32)),
                                [0, 3, 6])
  assert log == [0.0, 1.0, 2.0]
  g = lambda x: io_callback(step, SDS((), np.float32), x, ordered=True)
  with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback."):
    ember.vmap(g)(np.arange(3, dtype=np.float32))
  with pytest.raises(ValueError, match="IO callbacks do not support JVP."):
    ember.grad(f)(np.float32(1))


def test_io_callback_program_order():
  log = []
  rec = lambda tag: (lambda v: log.append(tag) or np.float32(0))

  def f(x):
    io_callback(rec("a"), SDS((), np.float32), x, ordered=True)
    io_callback(rec("b"), SDS((), np.float32), x * 2, ordered=True)
    io_callback(rec("c"), SDS((), np.float32), x, ordered=True)
    return x

  ember.jit(f)(np.float32(1)).block_until_ready()
  assert log == ["a", "b", "c"]


# --- debug.print / debug.callback ---------------------------------------------------------

def test_debug_print_eager_and_jit(capsys):
  def f(x):
    ember.debug.print("x={x} twice={} {s}", x * 2, x=x, s="static")
    ember.debug.print("no placeholders")
    return x + 1

  f(np.float32(1.5))
  ember.jit(f)(np.float32(2.5)).block_until_ready()
  ember.effects_barrier()
  assert capsys.readouterr().out == ("x=1.5 twice=3.0 static\nno placeholders\n"
                                     "x=2.5 twice=5.0 static\nno placeholders\n")


def test_debug_print_format_specs_and_arrays(capsys):
  ember.jit(lambda x: ember.debug.print("{a} and {b:.2f} {}", x, a=x + 1, b=x * 3))(
      np.float32(1.5))
  ember.debug.print("{} {}", jnp.arange(3), 2.0)
  y = jnp.log(np.float32(1e6))
  ember.jit(lambda y: ember.debug.print("dpj {}", y))(y)
  # JAX 0.12 prints exactly these lines
  ember.effects_barrier()
  assert capsys.readouterr().out == "2.5 and 4.50 1.5\n[0 1 2] 2.0\ndpj 13.815510749816895\n"


def test_debug_print_is_kept_and_ordered(capsys):
  def f(x):
    ember.debug.print("A {}", x)
    ember.debug.print("B")
    ember.debug.print("C {}", x * 2)
    return x

  compiled = ember.jit(f).lower(1.0).compile()
  assert compiled.as_text().count("custom_call_has_side_effect=true") == 3
  compiled(1.0)
  ember.effects_barrier()
  assert capsys.readouterr().out == "A 1.0\nB\nC 2.0\n"


def test_debug_print_under_vmap_and_grad(capsys):
  def f(x):
    ember.debug.print("x={}", x)
    return x * 2

  ember.vmap(f)(jnp.arange(3.0))
  ember.effects_barrier()
  assert capsys.readouterr().out == "x=0.0\nx=1.0\nx=2.0\n"
  ember.grad(lambda x: f(x).sum())(jnp.arange(2.0))
  ember.effects_barrier()
  assert capsys.readouterr().out == "x=[0. 1.]\n"
  assert float(ember.jit(ember.grad(f))(1.0)) == 2.0
  ember.effects_barrier()
  assert capsys.readouterr().out == "x=1.0\n"
  # checkpoint recomputes the forward pass on the backward pass: JAX prints twice too
  ember.grad(ember.checkpoint(lambda x: (ember.debug.print("ck {}", x), jnp.sin(x))[1]))(1.0)
  ember.effects_barrier()
  assert capsys.readouterr().out == "ck 1.0\nck 1.0\n"


def test_debug_print_in_loops_conds_and_nested_jit(capsys):
  def body(i, c):
    ember.debug.print("i={} c={}", i, c)
    return c + i

  assert float(ember.jit(lambda n: lax.fori_loop(0, n, body, 0.0))(3)) == 3.0
  ember.effects_barrier()
  assert capsys.readouterr().out == "i=0 c=0.0\ni=1 c=0.0\ni=2 c=1.0\n"
  ember.jit(lambda x: lax.cond(x > 0, lambda x: (ember.debug.print("pos {}", x), x)[1],
                               lambda x: x, x))(2.0)
  ember.effects_barrier()
  assert capsys.readouterr().out == "pos 2.0\n"

  @ember.jit
  def inner(x):
    ember.debug.print("inner {}", x)
    return x

  ember.jit(lambda x: (inner(x), 1.0)[1])(6.0)   # the inner call's result is unused
  ember.effects_barrier()
  assert capsys.readouterr().out == "inner 6.0\n"
  ember.jit(lambda xs: lax.scan(lambda c, x: (ember.debug.print("s {}", x), (c, x))[1],
                                0.0, xs))(jnp.arange(2.0))
  ember.effects_barrier()
  assert capsys.readouterr().out == "s 0.0\ns 1.0\n"


def test_debug_callback_gets_arrays():
  seen = []
  ember.jit(lambda x: ember.debug.callback(
      lambda a, b: seen.append((isinstance(a, ember.Array), float(a), b)), x, "tag"))(
          np.float32(2))
  ember.debug.callback(lambda a: seen.append(isinstance(a, ember.Array)), np.float32(1))
  ember.effects_barrier()
  assert seen == [(True, 2.0, "tag"), True]
  assert "debug_callback[" in str(ember.make_jaxpr(lambda x: ember.debug.callback(print, x))(1.))
  with pytest.raises(TypeError, match="first argument to jax.debug.callback must be callable"):
    ember.debug.callback(3, 1.0)


def test_hlo_eval_runs_callbacks():
  from ember._src.hlo import evaluator as hlo_eval
  from ember._src import lower
  jaxpr = ember.make_jaxpr(lambda x: sin_cb(x) + 1)(X)
  module = lower.lower_jaxpr(jaxpr, "f")
  (out,) = hlo_eval.evaluate(module, [X])
  np.testing.assert_allclose(out, np.sin(X.astype(np.float64)) + 1, rtol=1e-6)


def test_host_callbacks_skip_the_persistent_cache(tmp_path):
  """A callback's id means nothing in another process: such modules are never stored."""
  min_time = ember.config.jax_persistent_cache_min_compile_time_secs
  ember.config.update("jax_compilation_cache_dir", str(tmp_path))
  ember.config.update("jax_persistent_cache_min_compile_time_secs", 0)
  try:
    ember.jit(lambda x: sin_cb(x) * 3)(X).block_until_ready()
    assert not list(tmp_path.rglob("*"))
    ember.jit(lambda x: x * 3)(X).block_until_ready()     # a module without one is stored
    assert list(tmp_path.rglob("*"))
  finally:
    ember.config.update("jax_compilation_cache_dir", None)
    ember.config.update("jax_persistent_cache_min_compile_time_secs", min_time)


# --- jax.debug.breakpoint: the jdb debugger, driven through stdin in a subprocess ---------

BREAKPOINT_SCRIPT = '''\
import ember as jax, ember.numpy as jnp
def f(x):
  y = jnp.sin(x) * 2
  jax.debug.breakpoint({args})
  return y + 1
print("out", {wrap}(f)(jnp.arange(3.)))
'''


def _debug_session(tmp_path, commands: str, wrap: str = "", args: str = ""):
  import os
  import subprocess
  import sys
  script = tmp_path / "prog.py"
  script.write_text(BREAKPOINT_SCRIPT.format(wrap=wrap, args=args))
  env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(ember.__file__))}
  r = subprocess.run([sys.executable, str(script)], input=commands, capture_output=True,
                     text=True, env=env, timeout=120)
  return r, str(script)


@pytest.mark.parametrize("wrap", ["", "jax.jit", "(lambda g: jax.jit(lambda x: jax.jit(g)(x)))"],
                         ids=["eager", "jit", "nested-jit"])
def test_breakpoint_shows_the_running_values(tmp_path, wrap):
  r, path = _debug_session(tmp_path, "p y\npp x\np y + 1\nundefined_name\nc\n", wrap)
  assert r.returncode == 0, r.stderr
  # as JAX 0.12's transcript of the same session
  assert r.stdout == (
      "Entering jdb:\n"
      "(jdb) Array([0.       , 1.6829419, 1.8185948], dtype=float32)\n"
      "(jdb) Array([0., 1., 2.], dtype=float32)\n"
      "(jdb) Array([1.      , 2.682942, 2.818595], dtype=float32)\n"
      "(jdb) *** NameError: name 'undefined_name' is not defined\n"
      "(jdb) out [1.       2.682942 2.818595]\n")


def test_breakpoint_moves_between_frames_and_lists_source(tmp_path):
  r, path = _debug_session(tmp_path, "w\nu\nu\nd\nd\nc\n", "jax.jit")
  assert r.returncode == 0, r.stderr
  assert r.stdout.startswith(
      "Entering jdb:\n"
      f'(jdb) Traceback:\n  File "{path}", line 6\n'
      '    print("out", jax.jit(f)(jnp.arange(3.)))\n'
      f'  File "{path}", line 4\n    jax.debug.breakpoint()\n'
      f"(jdb) > {path}(6)\n"
      "      y = jnp.sin(x) * 2\n      jax.debug.breakpoint()\n      return y + 1\n"
      '->  print("out", jax.jit(f)(jnp.arange(3.)))\n'
      f"(jdb) At topmost frame.\n> {path}(6)\n")
  assert (f"(jdb) > {path}(4)\n    def f(x):\n      y = jnp.sin(x) * 2\n"
          "->    jax.debug.breakpoint()\n      return y + 1\n"
          f"(jdb) At bottommost frame.\n> {path}(4)\n") in r.stdout


def test_breakpoint_num_frames_backend_and_quit(tmp_path):
  r, _ = _debug_session(tmp_path, "u\nc\n", "jax.jit", "num_frames=1, backend='cli'")
  assert "At topmost frame." in r.stdout   # one frame recorded: f's
  r, _ = _debug_session(tmp_path, "q\n", "jax.jit")
  assert r.returncode == 0 and "out" not in r.stdout   # quit ends the program
  r, _ = _debug_session(tmp_path, "", "")
  assert r.returncode == 0 and "out" not in r.stdout   # so does the end of input


def test_breakpoint_under_vmap_stops_once_per_example(tmp_path):
  r, _ = _debug_session(tmp_path, "p y\nc\np y\nc\np y\nc\n", "jax.vmap")
  assert r.returncode == 0, r.stderr
  assert r.stdout.count("Entering jdb:") == 3
  assert "(jdb) Array(1.6829419, dtype=float32)" in r.stdout


def test_breakpoint_token_and_errors():
  from ember._src.library import debugger
  with pytest.raises(ValueError, match="`ordered` and `token` are mutually exclusive"):
    ember.debug.breakpoint(token=jnp.zeros(2), ordered=True)
  seen = []
  debugger.register_debugger("record", lambda frames, thread_id, **kw: seen.append(
      (frames[0].locals["y"], kw)), priority=-2)
  try:
    @ember.jit
    def f(x):
      y = x * 3
      x = ember.debug.breakpoint(backend="record", token=x, tag=1)
      return x + 1
    np.testing.assert_array_equal(f(jnp.ones(2)), [2.0, 2.0])
    ember.effects_barrier()
    (y, kw), = seen
    np.testing.assert_array_equal(y, [3.0, 3.0])
    assert isinstance(y, ember.Array) and kw == {"tag": 1}
    with pytest.raises(ValueError, match='Debugger with name "record" already registered'):
      debugger.register_debugger("record", print, 0)
  finally:
    del debugger._debuggers["record"]
