"""jax.experimental.hijax: a user-defined high-level type (a pair of arrays) and primitives
over it, eagerly and through jit, grad, jvp and vmap. Every value and message below is what
real JAX 0.12.1 gives for the same code (its AD rules, which JAX needs and ember does not
consult, are written as JAX needs them)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember.experimental import hijax


class Pair:
  def __init__(self, a, b):
    self.a, self.b = a, b


class PairTy(hijax.HiType):
  def __init__(self, a, b):
    self.a, self.b = a, b

  def __hash__(self):
    return hash((PairTy, self.a, self.b))

  def __eq__(self, other):
    return isinstance(other, PairTy) and (self.a, self.b) == (other.a, other.b)

  def __repr__(self):
    return f"PairTy({self.a.str_short()}, {self.b.str_short()})"

  def str_short(self, short_dtypes=False, **_):
    return "PairTy"

  def lo_ty(self):
    return [self.a, self.b]

  def lower_val(self, p):
    return [p.a, p.b]

  def raise_val(self, a, b):
    return Pair(a, b)

  def to_tangent_aval(self):
    return PairTy(self.a.to_tangent_aval(), self.b.to_tangent_aval())

  def vspace_zero(self):
    return make_pair(jnp.zeros(self.a.shape, self.a.dtype), jnp.zeros(self.b.shape, self.b.dtype))

  def vspace_add(self, x, y):
    return make_pair(first(x) + first(y), second(x) + second(y))

  first = hijax.aval_method(lambda p: first(p))
  kind = hijax.aval_property(lambda p: "pair")
  __jax_array__ = hijax.aval_method(lambda p: first(p))

  def _getitem(self, p, i):
    return (first, second)[i](p)

  def _add(self, p, other):
    return first(p) + second(p) + other


hijax.register_hitype(Pair, lambda p: PairTy(ember.typeof(p.a), ember.typeof(p.b)))


class MakePair(hijax.HiPrim):
  def __init__(self, a, b):
    self.in_avals, self.out_aval, self.params = (a, b), PairTy(a, b), {}
    super().__init__()

  def expand(self, a, b):
    return Pair(a, b)

  def jvp(self, primals, tangents):
    return make_pair(*primals), make_pair(*map(hijax.instantiate_zeros, tangents))

  def vjp_fwd(self, nzs, a, b):
    return self(a, b), None

  def vjp_bwd_retval(self, _, ct):
    return first(ct), second(ct)


class Get(hijax.HiPrim):
  def __init__(self, ty, *, i):
    self.in_avals, self.out_aval, self.params = (ty,), (ty.a, ty.b)[i], dict(i=i)
    super().__init__()

  def expand(self, p):
    return (p.a, p.b)[self.i]

  def jvp(self, primals, tangents):
    (p,), (t,) = primals, tangents
    return self(p), Get(ember.typeof(t), i=self.i)(hijax.instantiate_zeros(t))

  def vjp_fwd(self, nzs, p):
    return self(p), None

  def vjp_bwd_retval(self, _, ct):
    ty = self.in_avals[0]
    z = [jnp.zeros(ty.a.shape, ty.a.dtype), jnp.zeros(ty.b.shape, ty.b.dtype)]
    z[self.i] = ct
    return (make_pair(*z),)


def make_pair(a, b):
  return MakePair(ember.typeof(a), ember.typeof(b))(a, b)


def first(p):
  return Get(ember.typeof(p), i=0)(p)


def second(p):
  return Get(ember.typeof(p), i=1)(p)


def _pair():
  return make_pair(jnp.array([1.0, 2.0]), jnp.float32(3.0))


def _check_pair(p, a, b):
  assert type(p) is Pair
  np.testing.assert_array_equal(np.asarray(p.a), a)
  np.testing.assert_array_equal(np.asarray(p.b), b)


def test_eager_primitives_run_their_expansion():
  p = _pair()
  _check_pair(p, [1.0, 2.0], 3.0)
  assert ember.typeof(p) == PairTy(ember.typeof(jnp.ones(2)), ember.typeof(jnp.float32(0)))
  assert str(ember.typeof(p)) == "PairTy(float32[2], float32[])"
  np.testing.assert_array_equal(np.asarray(first(p)), [1.0, 2.0])
  assert ember.tree_util.tree_leaves(p)[0] is p   # a leaf of users' pytrees, as in JAX


def test_aval_members_are_records_read_through_tracers():
  assert type(PairTy.__dict__["first"]).__name__ == "aval_method"
  assert PairTy.__dict__["kind"].fget(None) == "pair"
  seen = {}

  @ember.jit
  def f(p):
    seen.update(tracer=isinstance(p, ember.core.Tracer), repr=repr(p), kind=p.kind)
    return p[0] * p[1], p.first(), p + 1.0

  outs = f(_pair())
  assert seen == dict(tracer=True, repr="JitTracer(PairTy(float32[2], float32[]))", kind="pair")
  for out, want in zip(outs, [[3.0, 6.0], [1.0, 2.0], [5.0, 6.0]]):
    np.testing.assert_array_equal(np.asarray(out), want)
  with pytest.raises(AttributeError, match="has no attribute nothing"):
    ember.jit(lambda p: p.nothing)(_pair())


def test_jnp_functions_read_a_hi_tracer_through_its_jax_array():
  outs = ember.jit(lambda p: (jnp.sin(p), jnp.sum(p), jnp.dot(p, p)))(_pair())
  for out, want in zip(outs, [np.sin(np.float32([1.0, 2.0])), 3.0, 5.0]):
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-6)
  # Tracer's array methods are not a hi value's (JAX: 'PairTy' object has no attribute)
  with pytest.raises(AttributeError, match="has no attribute copy"):
    ember.jit(lambda p: p.copy())(_pair())


def test_jit_takes_and_returns_hi_values_as_their_lo_values():
  _check_pair(ember.jit(lambda p: p)(_pair()), [1.0, 2.0], 3.0)
  _check_pair(ember.jit(lambda a, b: make_pair(a * 2, b))(jnp.ones(2), jnp.float32(5)),
              [2.0, 2.0], 5.0)
  np.testing.assert_array_equal(
      np.asarray(ember.jit(lambda a: first(make_pair(a * 2, a)))(jnp.ones(2))), [2.0, 2.0])
  # ember's jaxpr holds the lo values only (JAX's holds `a:PairTy` and a `Get` equation)
  jaxpr = ember.make_jaxpr(lambda p: first(p) * 2)(_pair())
  assert [str(v.aval) for v in jaxpr.jaxpr.invars] == ["float32[2]", "float32[]"]


def test_eval_shape_of_hi_values():
  lo = ember.eval_shape(lambda p: first(p) * 2, _pair())
  assert (lo.shape, lo.dtype) == ((2,), np.float32)
  hi = ember.eval_shape(lambda p: p, _pair())
  assert hi == ember.typeof(_pair()) and repr(hi) == "PairTy(float32[2], float32[])"
  assert ember.eval_shape(lambda p: p, ember.typeof(_pair())) == hi   # a hi type as argument


def test_jit_caches_by_hi_type():
  traces = [0]

  def g(p):
    traces[0] += 1
    return first(p).sum() * second(p)

  jg = ember.jit(g)
  assert float(jg(_pair())) == 9.0
  assert float(jg(make_pair(jnp.array([3.0, 4.0]), jnp.float32(2.0)))) == 14.0
  assert traces[0] == 1
  assert float(jg(make_pair(jnp.ones(3), jnp.float32(2.0)))) == 6.0
  assert traces[0] == 2


def test_grad_with_respect_to_a_hi_value_is_a_hi_value():
  def loss(p):
    return (first(p) ** 2).sum() * second(p)

  _check_pair(ember.grad(loss)(_pair()), [6.0, 12.0], 5.0)
  _check_pair(ember.jit(ember.grad(loss))(_pair()), [6.0, 12.0], 5.0)
  _check_pair(ember.grad(ember.jit(loss))(_pair()), [6.0, 12.0], 5.0)


def test_grad_through_hi_values_made_inside():
  def loss(x):
    p = make_pair(x, x * 3)
    return (first(p) * second(p)).sum()

  np.testing.assert_array_equal(np.asarray(ember.grad(loss)(jnp.array([1.0, 2.0]))),
                                [6.0, 12.0])


def test_hi_values_not_differentiated():
  p, x = _pair(), jnp.array([2.0, 5.0])
  np.testing.assert_array_equal(
      np.asarray(ember.grad(lambda x, p: (x * first(p)).sum())(x, p)), [1.0, 2.0])
  np.testing.assert_array_equal(
      np.asarray(ember.grad(lambda x: (x * first(p)).sum())(x)), [1.0, 2.0])


def test_jvp_through_hi_values():
  out, tan = ember.jvp(lambda x: first(make_pair(x * 2, x)), (jnp.ones(2),), (jnp.ones(2),))
  np.testing.assert_array_equal(np.asarray(out), [2.0, 2.0])
  np.testing.assert_array_equal(np.asarray(tan), [2.0, 2.0])


def test_vmap_of_a_hi_value_along_an_integer_axis_is_refused():
  p = make_pair(jnp.ones((3, 2)), jnp.arange(3.0))
  with pytest.raises(ValueError, match=r"vmap was requested to map a value of non-array type "
                                       r"PairTy\(float32\[3,2\], float32\[3\]\) along axis 0, "
                                       "but non-array types can't be mapped along an integer "
                                       "axis"):
    ember.vmap(lambda p: first(p) * second(p))(p)


def test_hiprim_subclass_errors():
  class NoAvals(hijax.HiPrim):
    def __init__(self):
      self.params = {}
      super().__init__()

  class NoExpand(hijax.HiPrim):
    def __init__(self, a, *, scale):
      self.in_avals, self.out_aval, self.params = (a,), a, dict(scale=scale)
      super().__init__()

  with pytest.raises(AttributeError, match="subclass __init__ should set `self.in_avals`"):
    NoAvals()
  prim = NoExpand(ember.typeof(jnp.ones(2)), scale=3)
  assert prim.scale == 3 and prim.params == {"scale": 3}
  with pytest.raises(NotImplementedError, match="NoExpand'> must implement `expand`"):
    prim(jnp.ones(2))


def test_instantiate_zeros_passes_arrays_through():
  x = jnp.ones(2)
  assert hijax.instantiate_zeros(x) is x
