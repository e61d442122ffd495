"""jax.Ref in traced code (core/refs.py): refs created inside jit/grad/vmap, ref arguments and
captured refs of jit (threaded, written back), refs from outside a lax.scan / while_loop /
fori_loop / cond / switch body, and JAX's errors. Values and messages as JAX 0.12.1 gives
them."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax


def _values(x):
  return np.asarray(x).tolist()


def test_refs_created_inside_jit_grad_and_vmap():
  @ember.jit
  def f(x):
    r = ember.new_ref(jnp.zeros(3))
    r[...] = x
    r[1] += 1.0
    return r[...]
  assert _values(f(jnp.ones(3))) == [1.0, 2.0, 1.0]

  def g(x):
    r = ember.new_ref(0.0)
    r[...] += x ** 2
    return r[...]
  assert float(ember.grad(g)(3.0)) == 6.0
  assert float(ember.jit(ember.grad(g))(3.0)) == 6.0

  def h(x):
    r = ember.new_ref(x)
    r[...] = r[...] * 2
    return r[...]
  assert _values(ember.vmap(h)(jnp.arange(3.0))) == [0.0, 2.0, 4.0]
  assert _values(ember.vmap(g)(jnp.arange(3.0))) == [0.0, 1.0, 4.0]


def test_ref_arguments_of_jit_are_written_back():
  r = ember.new_ref(jnp.zeros(2))

  @ember.jit
  def add(ref, x):
    ref[...] += x
  add(r, jnp.ones(2))
  add(r, jnp.ones(2))           # the cached signature writes back too
  assert _values(r[...]) == [2.0, 2.0]
  assert isinstance(r, ember.Ref)
  n = ember.new_ref(1)
  ember.jit(lambda a: a.__setitem__(..., a[...] + 1))(n)
  assert int(n[...]) == 2
  s = ember.new_ref(jnp.zeros(3))
  ember.jit(lambda a: a.__setitem__(1, 5.0))(s)
  assert _values(s[...]) == [0.0, 5.0, 0.0]


def test_captured_refs_are_inputs_not_constants():
  c = ember.new_ref(jnp.array([2.0, 2.0]))
  read = ember.jit(lambda x: c[...] + x)
  assert _values(read(1.0)) == [3.0, 3.0]
  c[...] = jnp.array([5.0, 5.0])
  assert _values(read(1.0)) == [6.0, 6.0]    # the ref's value now, not the traced one

  d = ember.new_ref(jnp.zeros(2))

  @ember.jit
  def bump(x):
    d[...] += x
    return d[...] * 2
  assert _values(bump(jnp.ones(2))) == [2.0, 2.0]
  assert _values(bump(jnp.ones(2))) == [4.0, 4.0]
  assert _values(d[...]) == [2.0, 2.0]


def test_ref_of_a_typed_key_through_jit():
  """flax's Rngs: a key and a count in refs, a jitted draw advancing the count."""
  k, n = ember.new_ref(ember.random.key(0)), ember.new_ref(0)

  @ember.jit
  def draw(k, n):
    n[...] += 1
    return ember.random.key_data(ember.random.fold_in(k[...], n[...]))
  assert _values(draw(k, n)) == [928981903, 3453687069] and int(n[...]) == 1
  assert _values(draw(k, n)) == [4146024105, 2718843009] and int(n[...]) == 2


def test_refs_under_grad():
  g = ember.new_ref(0.0)

  def loss(x, ref):
    ref[...] += 1.0
    return x ** 2
  assert float(ember.grad(loss)(3.0, g)) == 6.0 and float(g[...]) == 1.0
  assert float(ember.jit(ember.grad(loss))(3.0, g)) == 6.0 and float(g[...]) == 2.0

  v = ember.new_ref(jnp.array(2.0))

  def loss2(x):   # a constant written from inside grad: stored as it is
    v[...] = lax.stop_gradient(x * 3)
    return x ** 2 + v[...]
  assert float(ember.grad(loss2)(jnp.array(4.0))) == 8.0 and float(v[...]) == 12.0

  def loss3(x, ref):
    ref[...] = x * 2
    return x ** 2 + ref[...]
  with pytest.raises(Exception, match=r"^performing a set/swap operation with a differentiated "
                     r"value on a non-differentiated array reference of type Ref\{float32\[\]\}. "
                     r"Move the array reference to be an argument of the differentiated "
                     r"function\?$"):
    ember.grad(loss3)(jnp.array(3.0), v)
  with pytest.raises(TypeError, match="^grad cannot differentiate with respect to a Ref-typed "
                     "argument, because the gradient for a ref must itself be accumulated"):
    ember.grad(lambda r: r[...] ** 2)(ember.new_ref(3.0))


def test_refs_from_outside_loops_and_branches():
  s = ember.new_ref(0.0)

  def scanned(xs):
    def body(c, x):
      s[...] += x
      return c, None
    lax.scan(body, None, xs)
    return s[...]
  assert float(scanned(jnp.arange(4.0))) == 6.0 and float(s[...]) == 6.0
  assert float(ember.jit(scanned)(jnp.arange(4.0))) == 12.0 and float(s[...]) == 12.0

  def conditional(p, x):
    q = ember.new_ref(x)
    lax.cond(p, lambda: q.__setitem__(..., q[...] * 2), lambda: None)
    return q[...]
  assert float(ember.jit(conditional)(True, 3.0)) == 6.0
  assert float(ember.jit(conditional)(False, 3.0)) == 3.0

  def looped(x):
    q = ember.new_ref(x)

    def body(i):
      q[...] += 1.0
      return i + 1
    lax.while_loop(lambda i: i < 3, body, 0)
    return q[...]
  assert float(ember.jit(looped)(1.0)) == 4.0

  acc = ember.new_ref(0.0)

  def fori_body(i, carry):
    acc[...] += carry
    return carry * 2.0
  assert float(ember.jit(lambda: lax.fori_loop(0, 4, fori_body, 1.0))()) == 16.0
  assert float(acc[...]) == 15.0
  acc2 = ember.new_ref(0)
  out = ember.jit(lambda n: lax.fori_loop(
      0, n, lambda i, c: (acc2.__setitem__(..., acc2[...] + i), c)[1], 0))(5)
  assert int(out) == 0 and int(acc2[...]) == 10
  sw = ember.new_ref(jnp.float32(0))
  ember.jit(lambda i: lax.switch(i, [lambda: sw.__setitem__(..., 1.0),
                                     lambda: sw.__setitem__(..., 2.0), lambda: None]))(1)
  assert float(sw[...]) == 2.0


def test_jax_ref_functions_in_jit():
  r = ember.new_ref(jnp.zeros(3))

  @ember.jit
  def ops(x):
    ember.ref.set(r, (), x)
    old = ember.ref.swap(r, 1, 7.0)
    ember.ref.addupdate(r, 0, 2.0)
    return old, ember.ref.get(r, ())
  old, now = ops(jnp.ones(3))
  assert float(old) == 1.0 and _values(now) == [3.0, 7.0, 1.0] and _values(r[...]) == _values(now)
  assert _values(ember.jit(lambda x: ember.ref.freeze(ember.new_ref(x)) * 2)(jnp.ones(2))) == \
      [2.0, 2.0]
  assert sorted(n for n in dir(ember.ref) if not n.startswith("_")) == [
      "AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref",
      "set", "swap"]


def test_eval_shape_of_a_ref_argument_writes_nothing():
  r = ember.new_ref(jnp.ones(2))
  out = ember.eval_shape(lambda q: (q.__setitem__(..., q[...] * 3), q[...])[1], r)
  assert out.shape == (2,) and out.dtype == np.float32 and _values(r[...]) == [1.0, 1.0]


def test_ref_errors_as_jax():
  r = ember.new_ref(jnp.zeros(2))
  with pytest.raises(ValueError, match=r"^function <lambda> at .*test_refs.py:\d+ traced for "
                     r"jit returned a mutable array reference of type Ref\{float32\[2\]\}, but "
                     r"mutable array references cannot be returned.\n\nThe returned mutable "
                     r"array was passed in as the argument ref.$"):
    ember.jit(lambda ref: ref)(r)
  # (JAX adds the line that created it)
  with pytest.raises(ValueError, match="returned a mutable array reference of type "
                     r"Ref\{float32\[2\]\}, but mutable array references cannot be returned."):
    ember.jit(lambda x: ember.new_ref(x))(jnp.ones(2))
  with pytest.raises(ValueError, match=r"^only one reference to a mutable array may be passed "
                     r"as an argument to a function, but when tracing <lambda> at .* for jit the "
                     r"mutable array reference of type Ref\{float32\[2\]\} appeared at both a "
                     r"and b.$"):
    ember.jit(lambda a, b: a[...] + b[...])(r, r)
  u = ember.new_ref(jnp.zeros(3))
  with pytest.raises(Exception, match=r"^performing a set/swap operation with vmapped value on "
                     r"an unbatched array reference of type Ref\{float32\[3\]\}. Move the array "
                     r"reference to be an argument to the vmapped function\?$"):
    ember.vmap(lambda x: u.__setitem__(..., x))(jnp.ones((2, 3)))
  assert _values(ember.vmap(lambda x: u[...] + x)(jnp.ones((2, 3)))) == [[1.0] * 3] * 2
