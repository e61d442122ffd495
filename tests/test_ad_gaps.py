"""The transformation gaps of issue 6 in autodiff's user-facing behaviour: checkpoint
policies (what grad(checkpoint(f)) saves and recomputes), vjp / linearize functions as
pytrees (through jit), jvp of while/scan/cond as one loop (JAX's jaxprs), jacfwd/jacrev
standard bases, custom_vjp symbolic zeros, and the all_gather / psum_scatter transposes.

Jaxpr texts and primitive counts were printed by JAX 0.12 (the oracle); values are
checked against NumPy float64 formulas.
"""
import collections

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember import checkpoint_policies as cp
from ember.ad_checkpoint import checkpoint_name
from ember.custom_derivatives import CustomVJPPrimal, SymbolicZero, custom_vjp_primal_tree_values
from ember.tree_util import Partial, tree_leaves

RTOL = 1e-5  # f32 through a few transcendental ops and two small matmuls

# --- oracle data: JAX 0.12's printed jaxprs --------------------------------------------------

ORACLE = {
    'grad_None': '''\
let jaxpr = { lambda ; a:f32[2,3] b:f32[3,3] c:f32[]. let
    d:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    e:f32[2,3] = sin d
    f:f32[2,3] = cos d
    g:f32[2,3] = name[name=a] e
    h:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] g b
    i:f32[2,3] = exp h
    j:f32[2,3] = name[name=b] i
    k:f32[2,3] = sin j
    l:f32[2,3] = broadcast_in_dim c
    m:f32[2,3] = neg l
    n:f32[2,3] = mul m k
    o:f32[2,3] = mul n i
    p:f32[2,3] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] o b
    q:f32[2,3] = mul p f
    r:f32[2,3] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] q b
  in (r,) } in
{ lambda ; s:f32[2,3] t:f32[3,3]. let
    u:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] s t
    v:f32[2,3] = sin u
    w:f32[2,3] = name[name=a] v
    x:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] w t
    y:f32[2,3] = exp x
    z:f32[2,3] = name[name=b] y
    ba:f32[2,3] = cos z
    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] ba
    bb:f32[2,3] = remat2[
      differentiated=True
      jaxpr=jaxpr
      policy=None
      prevent_cse=True
    ] s t 1.0:f32[]
  in (bb,) }''',
    'grad_everything_saveable': '''\
{ lambda ; a:f32[2,3] b:f32[3,3]. let
    c:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    d:f32[2,3] = sin c
    e:f32[2,3] = cos c
    f:f32[2,3] = name[name=a] d
    g:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] f b
    h:f32[2,3] = exp g
    i:f32[2,3] = reduce_precision[exponent_bits=8 mantissa_bits=23] h
    j:f32[2,3] = name[name=b] i
    k:f32[2,3] = cos j
    l:f32[2,3] = sin j
    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] k
    m:f32[2,3] = remat2[
      differentiated=True
      jaxpr={ lambda ; n:f32[2,3] o:f32[2,3] p:f32[2,3] q:f32[3,3] r:f32[]. let
          s:f32[2,3] = broadcast_in_dim r
          t:f32[2,3] = neg s
          u:f32[2,3] = mul t p
          v:f32[2,3] = mul u o
          w:f32[2,3] = dot_general[
            dimension_numbers=(([1], [1]), ([], []))
            preferred_element_type=float32
          ] v q
          x:f32[2,3] = mul w n
          y:f32[2,3] = dot_general[
            dimension_numbers=(([1], [1]), ([], []))
            preferred_element_type=float32
          ] x q
        in (y,) }
      policy=<function everything_saveable at 0xXXXXXXXXXXXX>
      prevent_cse=True
    ] e i l b 1.0:f32[]
  in (m,) }''',
    'grad_dots_saveable': '''\
let jaxpr = { lambda ; a:f32[2,3] b:f32[2,3] c:f32[3,3] d:f32[]. let
    e:f32[2,3] = cos a
    f:f32[2,3] = exp b
    g:f32[2,3] = name[name=b] f
    h:f32[2,3] = sin g
    i:f32[2,3] = broadcast_in_dim d
    j:f32[2,3] = neg i
    k:f32[2,3] = mul j h
    l:f32[2,3] = mul k f
    m:f32[2,3] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] l c
    n:f32[2,3] = mul m e
    o:f32[2,3] = dot_general[
      dimension_numbers=(([1], [1]), ([], []))
      preferred_element_type=float32
    ] n c
  in (o,) } in
{ lambda ; p:f32[2,3] q:f32[3,3]. let
    r:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] p q
    s:f32[2,3] = reduce_precision[exponent_bits=8 mantissa_bits=23] r
    t:f32[2,3] = sin s
    u:f32[2,3] = name[name=a] t
    v:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] u q
    w:f32[2,3] = reduce_precision[exponent_bits=8 mantissa_bits=23] v
    x:f32[2,3] = exp w
    y:f32[2,3] = name[name=b] x
    z:f32[2,3] = cos y
    _:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] z
    ba:f32[2,3] = remat2[
      differentiated=True
      jaxpr=jaxpr
      policy=<function dots_saveable at 0xXXXXXXXXXXXX>
      prevent_cse=True
    ] s w q 1.0:f32[]
  in (ba,) }''',
    'jvp': '''\
let jaxpr = { lambda ; a:f32[2,3] b:f32[3,3] c:f32[2,3] d:f32[3,3]. let
    e:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a b
    f:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] c b
    g:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] a d
    h:f32[2,3] = add_any f g
    i:f32[2,3] = sin e
    j:f32[2,3] = cos e
    k:f32[2,3] = mul h j
    l:f32[2,3] = name[name=a] i
    m:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] l b
    n:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] k b
    o:f32[2,3] = dot_general[
      dimension_numbers=(([1], [0]), ([], []))
      preferred_element_type=float32
    ] l d
    p:f32[2,3] = add_any n o
    q:f32[2,3] = exp m
    r:f32[2,3] = mul p q
    s:f32[2,3] = name[name=b] q
    t:f32[2,3] = cos s
    u:f32[2,3] = sin s
    v:f32[2,3] = mul r u
    w:f32[2,3] = neg v
    x:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] t
    y:f32[] = reduce_sum[axes=(0, 1) out_sharding=None] w
  in (x, y) } in
{ lambda ; z:f32[2,3] ba:f32[3,3]. let
    bb:f32[] bc:f32[] = remat2[
      differentiated=False
      jaxpr=jaxpr
      policy=None
      prevent_cse=True
    ] z ba z ba
  in (bb, bc) }''',
    'while_jvp': '''\
{ lambda ; a:f32[3]. let
    _:i32[] b:f32[3] c:f32[3] = while[
      body_jaxpr={ lambda ; d:i32[] e:f32[3] f:f32[3]. let
          g:i32[] = add d 1:i32[]
          h:f32[3] = sin e
          i:f32[3] = cos e
          j:f32[3] = mul f i
          k:f32[3] = mul h 2.0:f32[]
          l:f32[3] = mul j 2.0:f32[]
        in (g, k, l) }
      body_nconsts=0
      cond_jaxpr={ lambda ; m:i32[] n:f32[3] o:f32[3]. let
          p:bool[] = lt m 5:i32[]
        in (p,) }
      cond_nconsts=0
    ] 0:i32[] a a
  in (b, c) }''',
    'cond_jvp': '''\
{ lambda ; a:f32[3] b:f32[]. let
    c:bool[] = gt b 0.0:f32[]
    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c
    e:f32[3] f:f32[3] = cond[
      branches=(
        { lambda ; g:f32[3] h:f32[3]. let
            i:f32[3] = cos g
            j:f32[3] = sin g
            k:f32[3] = mul h j
            l:f32[3] = neg k
          in (i, l) }
        { lambda ; m:f32[3] n:f32[3]. let
            o:f32[3] = sin m
            p:f32[3] = cos m
            q:f32[3] = mul n p
            r:f32[3] = mul o 2.0:f32[]
            s:f32[3] = mul q 2.0:f32[]
          in (r, s) }
      )
    ] d a a
  in (e, f) }''',
    'jacfwd': '''\
{ lambda ; a:f32[3]. let
    b:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] 
    c:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] 
    d:i32[3,3] = add b 0:i32[]
    e:bool[3,3] = eq d c
    f:f32[3,3] = convert_element_type[new_dtype=float32 weak_type=False] e
    g:f32[3,3] = split[axis=1 sizes=(np.int64(3),)] f
    h:f32[3] = sin a
    i:f32[3] = cos a
    j:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] i
    k:f32[3,3] = mul g j
    _:f32[3] = mul h 2.0:f32[]
    l:f32[3,3] = mul k 2.0:f32[]
    m:f32[3,3] = transpose[permutation=(1, 0)] l
    n:f32[3,3] = split[axis=1 sizes=(np.int64(3),)] m
  in (n,) }''',
    'jacrev': '''\
{ lambda ; a:f32[3]. let
    b:f32[3] = sin a
    c:f32[3] = cos a
    _:f32[3] = mul b 2.0:f32[]
    d:i32[3,3] = iota[dimension=0 dtype=int32 shape=(3, 3) sharding=None] 
    e:i32[3,3] = iota[dimension=1 dtype=int32 shape=(3, 3) sharding=None] 
    f:i32[3,3] = add d 0:i32[]
    g:bool[3,3] = eq f e
    h:f32[3,3] = convert_element_type[new_dtype=float32 weak_type=False] g
    i:f32[3,3] = split[axis=1 sizes=(np.int64(3),)] h
    j:f32[3,3] = mul i 2.0:f32[]
    k:f32[1,3] = broadcast_in_dim[broadcast_dimensions=(np.int64(1),)] c
    l:f32[3,3] = mul j k
    m:f32[3,3] = split[axis=0 sizes=(np.int64(3),)] l
  in (m,) }''',
    'jacfwd_scalar': '''\
{ lambda ; a:f32[]. let
    b:i32[1,1] = iota[dimension=0 dtype=int32 shape=(1, 1) sharding=None] 
    c:i32[1,1] = iota[dimension=1 dtype=int32 shape=(1, 1) sharding=None] 
    d:i32[1,1] = add b 0:i32[]
    e:bool[1,1] = eq d c
    f:f32[1,1] = convert_element_type[new_dtype=float32 weak_type=False] e
    g:f32[1,1] = split[axis=1 sizes=(np.int64(1),)] f
    h:f32[1] = reshape[dimensions=None new_sizes=(1,) sharding=None] g
    i:f32[1] = convert_element_type[new_dtype=float32 weak_type=True] h
    j:f32[] = sin a
    k:f32[] = cos a
    l:f32[1] = mul i k
    _:f32[] = mul j 2.0:f32[]
    m:f32[1] = mul l 2.0:f32[]
    n:f32[1] = split[axis=0 sizes=(np.int64(1),)] m
    o:f32[] = reshape[dimensions=None new_sizes=() sharding=None] n
  in (o,) }''',
}


def both(f):
  """The function eager and jitted."""
  return [f, ember.jit(f)]


# --- 1. checkpoint policies -----------------------------------------------------------------

def f_named(x, W):
  y = checkpoint_name(jnp.sin(x @ W), "a")
  z = checkpoint_name(jnp.exp(y @ W), "b")
  return jnp.sum(jnp.cos(z))


def f_named_grads64(x, W):
  """d/dx, d/dW of sum(cos(exp(sin(x W) W))) in float64."""
  x, W = np.float64(x), np.float64(W)
  A = x @ W
  s = np.sin(A)
  e = np.exp(s @ W)
  dB = -np.sin(e) * e
  dA = (dB @ W.T) * np.cos(A)
  return dA @ W.T, x.T @ dA + s.T @ dB


POLICIES = {
    "None": None,
    "everything_saveable": cp.everything_saveable,
    "nothing_saveable": cp.nothing_saveable,
    "dots_saveable": cp.dots_saveable,
    "checkpoint_dots": cp.checkpoint_dots,
    "dots_with_no_batch_dims_saveable": cp.dots_with_no_batch_dims_saveable,
    "save_only_these_names(a)": cp.save_only_these_names("a"),
    "save_only_these_names(a,b)": cp.save_only_these_names("a", "b"),
    "save_any_names_but_these(a)": cp.save_any_names_but_these("a"),
    "save_anything_except_these_names(a)": cp.save_anything_except_these_names("a"),
    "save_from_both_policies(dots,names(b))":
        cp.save_from_both_policies(cp.dots_saveable, cp.save_only_these_names("b")),
    "offload_dot_with_no_batch_dims": cp.offload_dot_with_no_batch_dims("device", "pinned_host"),
    "save_and_offload_only_these_names":
        cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                             names_which_can_be_offloaded=["b"],
                                             offload_src="device", offload_dst="pinned_host"),
}

# (top-level primitive counts, counts inside the remat2 equation, remat2 operand count) of
# make_jaxpr(grad(checkpoint(f_named, policy=...), argnums=(0, 1)))(ones((2,3)), ones((3,3))),
# printed by JAX 0.12. Offloading: JAX adds device_put equations (to the host memory and
# back); ember has one memory space, so an offloaded residual is a saved one (JAX's
# counts without the device_puts, and with the reduce_precision JAX puts on saved ones).
_TRANSPOSED = {'add_any': 1, 'broadcast_in_dim': 1, 'mul': 3, 'neg': 1, 'transpose': 2}
_TOP = {'cos': 1, 'dot_general': 2, 'exp': 1, 'name': 2, 'reduce_sum': 1, 'remat2': 1, 'sin': 1}
_NOTHING = (_TOP, dict(_TRANSPOSED, cos=1, dot_general=6, exp=1, name=2, sin=2), 3)
_EVERYTHING = (dict(_TOP, cos=2, sin=2, reduce_precision=2), dict(_TRANSPOSED, dot_general=4), 7)
_DOTS = (dict(_TOP, reduce_precision=2),
         dict(_TRANSPOSED, cos=1, dot_general=4, exp=1, name=2, sin=2), 5)
COUNTS = {
    "None": _NOTHING,
    "everything_saveable": _EVERYTHING,
    "nothing_saveable": _NOTHING,
    "dots_saveable": _DOTS,
    "checkpoint_dots": _DOTS,
    "dots_with_no_batch_dims_saveable": _DOTS,
    "save_only_these_names(a)": (dict(_TOP, reduce_precision=1),
                                 dict(_TRANSPOSED, cos=1, dot_general=6, exp=1, name=1, sin=1),
                                 4),
    "save_only_these_names(a,b)": (dict(_TOP, reduce_precision=2),
                                   dict(_TRANSPOSED, cos=1, dot_general=6, exp=1, sin=1), 5),
    "save_any_names_but_these(a)": (dict(_TOP, reduce_precision=1),
                                    dict(_TRANSPOSED, cos=1, dot_general=6, exp=1, name=1,
                                         sin=2), 4),
    # JAX 0.12's save_anything_except_these_names saves everything (its own TODO says so)
    "save_anything_except_these_names(a)": _EVERYTHING,
    "save_from_both_policies(dots,names(b))": (
        dict(_TOP, reduce_precision=3),
        dict(_TRANSPOSED, cos=1, dot_general=4, exp=1, name=1, sin=2), 6),
    "offload_dot_with_no_batch_dims": _DOTS,
    "save_and_offload_only_these_names": (
        dict(_TOP, reduce_precision=2),
        dict(_TRANSPOSED, cos=1, dot_general=6, exp=1, sin=1), 5),
}


def summary(jaxpr):
  top = collections.Counter(e.primitive.name for e in jaxpr.eqns)
  remats = [e for e in jaxpr.eqns if e.primitive.name == "remat2"]
  inner = collections.Counter(e.primitive.name for e in remats[0].params["jaxpr"].eqns)
  return dict(top), dict(inner), len(remats[0].invars)


X = np.linspace(-0.5, 0.5, 6, dtype=np.float32).reshape(2, 3)
W = (np.arange(9, dtype=np.float32).reshape(3, 3) - 4) / 10


@pytest.mark.parametrize("name", list(POLICIES))
def test_policy_decides_what_is_recomputed(name):
  g = ember.grad(ember.checkpoint(f_named, policy=POLICIES[name]), argnums=(0, 1))
  assert summary(ember.make_jaxpr(g)(np.ones((2, 3), np.float32),
                                     np.ones((3, 3), np.float32))) == COUNTS[name]
  want = f_named_grads64(X, W)
  for fn in both(g):
    got = fn(X, W)
    for a, b in zip(got, want):
      assert a.dtype == np.float32
      np.testing.assert_allclose(np.asarray(a), b, rtol=RTOL, atol=1e-6)


@pytest.mark.parametrize("key,policy", [("grad_None", None),
                                        ("grad_everything_saveable", cp.everything_saveable),
                                        ("grad_dots_saveable", cp.dots_saveable)])
def test_policy_jaxpr_text_is_jaxs(key, policy):
  g = ember.grad(ember.checkpoint(f_named, policy=policy))
  assert str(ember.make_jaxpr(g)(np.ones((2, 3), np.float32),
                                 np.ones((3, 3), np.float32))) == ORACLE[key]


def test_jvp_of_checkpoint_is_one_remat_of_the_jvp():
  o = np.ones((2, 3), np.float32), np.ones((3, 3), np.float32)
  text = str(ember.make_jaxpr(lambda x, W: ember.jvp(ember.checkpoint(f_named), (x, W),
                                                     (x, W)))(*o))
  assert text == ORACLE["jvp"]
  # values: the directional derivative along (X, W) from the float64 gradient
  gx, gW = f_named_grads64(X, W)
  for fn in both(lambda x, w: ember.jvp(ember.checkpoint(f_named), (x, w), (x, w))):
    y, t = fn(X, W)
    np.testing.assert_allclose(float(t), np.sum(gx * X) + np.sum(gW * W), rtol=RTOL)


def test_checkpoint_under_scan_and_jit_grad():
  """The usual pattern: a checkpointed layer in a scan."""
  layer = ember.checkpoint(lambda h, w: (jnp.tanh(h @ w), None), policy=cp.dots_saveable)
  ws = np.stack([W, W * 0.5, -W]).astype(np.float32)
  loss = lambda h: jnp.sum(lax.scan(layer, h, ws)[0] ** 2)

  def ref(h):
    h = np.float64(h)
    hs = [h]
    for w in np.float64(ws):
      h = np.tanh(h @ w)
      hs.append(h)
    g = 2 * hs[-1]
    for w, h_out in zip(np.float64(ws)[::-1], hs[:0:-1]):
      g = (g * (1 - h_out ** 2)) @ w.T
    return g
  for fn in both(ember.grad(loss)):
    np.testing.assert_allclose(np.asarray(fn(X)), ref(X), rtol=RTOL, atol=1e-6)


def test_checkpoint_static_argnums():
  def f(x, n):
    for _ in range(n):  # Python control flow on the static argument
      x = jnp.sin(x)
    return jnp.sum(x)
  g = ember.grad(ember.checkpoint(f, static_argnums=(1,)))
  x = np.float32([0.3, -0.2])
  want = np.cos(np.float64(x)) * np.cos(np.sin(np.float64(x)))
  np.testing.assert_allclose(np.asarray(g(x, 2)), want, rtol=RTOL)
  g_neg = ember.grad(ember.checkpoint(f, static_argnums=-1))
  np.testing.assert_allclose(np.asarray(g_neg(x, 2)), want, rtol=RTOL)
  with pytest.raises(TypeError, match="must be an int, tuple of ints"):
    ember.grad(ember.checkpoint(f, static_argnums=[1]))(x, 2)
  with pytest.raises(ValueError, match=r"greater than or equal to `-len\(args\)`"):
    ember.grad(ember.checkpoint(f, static_argnums=(2,)))(x, 2)


def test_checkpoint_traces_at_top_level():
  # JAX traces the function even when nothing else is traced: it sees tracers for its
  # non-static arguments (flax's nn.remat relies on a bool being an array), the values of
  # the static ones
  seen = []

  def f(x, flag):
    seen.append((isinstance(x, ember.core.Tracer), isinstance(flag, jnp.ndarray),
                 type(flag) is bool))
    return x * 2 if type(flag) is bool and flag else x * 3
  np.testing.assert_array_equal(ember.checkpoint(f)(jnp.ones(2), True), [3.0, 3.0])
  np.testing.assert_array_equal(ember.checkpoint(f, static_argnums=(1,))(jnp.ones(2), True),
                                [2.0, 2.0])
  assert seen == [(True, True, False), (True, False, True)]


def test_checkpoint_name_and_policy_errors():
  x = np.float32([1.0, 2.0])
  y = checkpoint_name({"a": x}, "n")
  np.testing.assert_array_equal(np.asarray(y["a"]), x)
  j = ember.make_jaxpr(lambda v: checkpoint_name(v, "foo"))(x)
  assert [e.primitive.name for e in j.eqns] == ["name"] and j.eqns[0].params == {"name": "foo"}
  with pytest.raises(TypeError, match="a policy must return a bool"):
    ember.grad(ember.checkpoint(lambda v: jnp.sum(jnp.sin(v)), policy=lambda *_, **__: "x"))(x)
  with pytest.raises(TypeError, match="policy must be a callable"):
    ember.checkpoint(jnp.sin, policy=3)
  with pytest.raises(ValueError, match="should not intersect"):
    cp.save_and_offload_only_these_names(names_which_can_be_saved=["a"],
                                         names_which_can_be_offloaded=["a"],
                                         offload_src="device", offload_dst="pinned_host")


def test_prevent_cse_barrier_in_lowering():
  g = lambda pc: ember.jit(ember.grad(ember.checkpoint(f_named, prevent_cse=pc)))
  assert "optimization_barrier" in g(True).lower(X, W).as_text()
  assert "optimization_barrier" not in g(False).lower(X, W).as_text()
  j = ember.make_jaxpr(ember.checkpoint(f_named, policy=cp.dots_saveable, prevent_cse=False))(X, W)
  assert j.eqns[0].params["prevent_cse"] is False
  # the policy prints as JAX prints functions in params (address masked)
  assert "policy=<function dots_saveable at 0xXXXXXXXXXXXX>" in str(j)
  np.testing.assert_allclose(np.asarray(g(False)(X, W)), f_named_grads64(X, W)[0], rtol=RTOL,
                             atol=1e-6)


# --- 2. vjp / linearize functions are pytrees ------------------------------------------------

f_sinx = lambda x: jnp.sum(jnp.sin(x) * x)
XS = np.float32([0.0, 1.0, 2.0])
GRAD_SINX = np.cos(np.float64(XS)) * XS + np.sin(np.float64(XS))


def test_vjp_function_through_jit():
  y, vjp_fn = ember.vjp(f_sinx, XS)
  assert type(vjp_fn).__name__ == "VJP"
  assert [l.shape for l in tree_leaves(vjp_fn)] == [(3,), (3,), (3,)]  # JAX: 3 residuals
  (g,) = ember.jit(lambda fn, c: fn(c))(vjp_fn, 1.0)
  np.testing.assert_allclose(np.asarray(g), GRAD_SINX, rtol=RTOL)
  j = ember.make_jaxpr(lambda fn, c: fn(c))(vjp_fn, 1.0)
  assert len(j.invars) == 4 and [e.primitive.name for e in j.eqns].count("mul") == 3
  # returned from jit: residuals come back as arrays, the function still works
  h = ember.jit(lambda x: ember.vjp(f_sinx, x)[1])(XS)
  assert type(h).__name__ == "VJP"
  np.testing.assert_allclose(np.asarray(h(1.0)[0]), GRAD_SINX, rtol=RTOL)


def test_vjp_has_aux_and_errors():
  y, vjp_fn, aux = ember.vjp(lambda x: (jnp.sum(x ** 2), x * 2), XS, has_aux=True)
  np.testing.assert_allclose(np.asarray(aux), 2 * XS)
  (g,) = ember.jit(lambda fn, c: fn(c))(vjp_fn, np.float32(1.0))
  np.testing.assert_allclose(np.asarray(g), 2 * XS)
  with pytest.raises(TypeError, match="applied to <lambda> was called with 2 arguments"):
    vjp_fn(1.0, 2.0)
  with pytest.raises(ValueError, match="unexpected tree structure"):
    vjp_fn((1.0, 2.0))


@ember.tree_util.register_pytree_node_class
class _MadeIn:
  """A pytree that records the trace it is made in, as flax's Variables do."""

  def __init__(self, v):
    self.v, self.trace_state = v, ember.extend.core.get_opaque_trace_state()

  def tree_flatten(self):
    return (self.v,), None

  @classmethod
  def tree_unflatten(cls, aux, children):
    return cls(*children)


@pytest.mark.parametrize("name", ["grad", "value_and_grad", "vjp", "jvp", "linearize",
                                  "jacrev"])
def test_aux_output_is_made_in_the_callers_trace(name):
  # JAX 0.12.1: an aux output's pytrees are unflattened after the transformation's traces
  # closed, in the caller's (flax's nnx.jit refuses a Variable made in another trace)
  f = lambda x: (jnp.sin(x), _MadeIn(x * 2))
  get_aux = {
      "grad": lambda x: ember.grad(f, has_aux=True)(x)[1],
      "value_and_grad": lambda x: ember.value_and_grad(f, has_aux=True)(x)[0][1],
      "vjp": lambda x: ember.vjp(f, x, has_aux=True)[2],
      "jvp": lambda x: ember.jvp(f, (x,), (1.0,), has_aux=True)[2],
      "linearize": lambda x: ember.linearize(f, x, has_aux=True)[2],
      "jacrev": lambda x: ember.jacrev(f, has_aux=True)(x)[1],
  }[name]
  made_in_caller = []

  def outer(x):
    aux = get_aux(x)
    made_in_caller.append(aux.trace_state == ember.extend.core.get_opaque_trace_state())
    return aux.v
  assert float(ember.jit(outer)(1.0)) == 2.0 and float(outer(1.0)) == 2.0
  assert made_in_caller == [True, True]


def test_linearize_function_through_jit():
  y, lin = ember.linearize(f_sinx, XS)
  assert isinstance(lin, Partial) and len(tree_leaves(lin)) == 3
  t = np.float32([1.0, 0.5, -1.0])
  for fn in (lin, lambda tt: ember.jit(lambda l, u: l(u))(lin, tt)):
    np.testing.assert_allclose(float(fn(t)), float(np.dot(GRAD_SINX, t)), rtol=RTOL)
  back = ember.jit(lambda x: ember.linearize(f_sinx, x)[1])(XS)
  np.testing.assert_allclose(float(back(t)), float(np.dot(GRAD_SINX, t)), rtol=RTOL)
  y, lin, aux = ember.linearize(lambda x: (jnp.sum(x), x + 1), XS, has_aux=True)
  np.testing.assert_allclose(np.asarray(aux), XS + 1)
  with pytest.raises(ValueError, match="inconsistent with the original primal values"):
    lin(np.ones(2, np.float32))


# --- 3. jvp of while / scan / cond: one loop, JAX's jaxprs ------------------------------------

def _while_f(x):
  return lax.while_loop(lambda s: s[0] < 5, lambda s: (s[0] + 1, jnp.sin(s[1]) * 2.0), (0, x))[1]


def _prims(jaxpr):
  return [e.primitive.name for e in jaxpr.eqns]


def test_while_jvp_is_one_loop():
  x = np.ones(3, np.float32)
  assert str(ember.make_jaxpr(lambda x: ember.jvp(_while_f, (x,), (x,)))(x)) == ORACLE["while_jvp"]
  # under linearize, as JAX: the primal loop and the joined loop for the tangents
  j = ember.make_jaxpr(lambda x, t: ember.linearize(_while_f, x)[1](t))(x, x)
  assert _prims(j) == ["while", "while"]
  x0 = np.float32([0.1, -0.7, 1.3])
  v, d = np.float64(x0), np.ones(3)
  for _ in range(5):
    v, d = 2 * np.sin(v), 2 * np.cos(v) * d
  for fn in both(lambda x: ember.jvp(_while_f, (x,), (jnp.ones_like(x),))):
    y, t = fn(x0)
    np.testing.assert_allclose(np.asarray(y), v, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(t), d, rtol=RTOL)


def _scan_f(x, c):
  def body(carry, xi):
    y = jnp.sin(carry) * xi + c
    return y, jnp.cos(y)
  carry, ys = lax.scan(body, x, jnp.arange(4.0))
  return jnp.sum(carry) + jnp.sum(ys)


def _scan_ref(x, c):
  """value, d/dx, d/dc in float64."""
  carry, total, gx, gc = np.float64(x), 0.0, 0.0, 0.0
  dcarry_dx, dcarry_dc = np.ones(3), np.zeros(3)
  for xi in range(4):
    y = np.sin(carry) * xi + c
    dy_dx = np.cos(carry) * xi * dcarry_dx
    dy_dc = np.cos(carry) * xi * dcarry_dc + 1
    total += np.sum(np.cos(y))
    gx = gx - np.sin(y) * dy_dx
    gc = gc + np.sum(-np.sin(y) * dy_dc)
    carry, dcarry_dx, dcarry_dc = y, dy_dx, dy_dc
  return total + np.sum(carry), gx + dcarry_dx, gc + np.sum(dcarry_dc)


def test_scan_jvp_is_one_scan_and_grad_hoists_invariants():
  x, c = np.ones(3, np.float32), np.float32(2.0)
  j = ember.make_jaxpr(lambda x, c: ember.jvp(_scan_f, (x, c), (x, c)))(x, c)
  assert _prims(j).count("scan") == 1  # JAX: one scan over primals and tangents
  scan = next(e for e in j.eqns if e.primitive.name == "scan")
  assert len(scan.invars) == 5 and len(scan.outvars) == 4  # (c, ċ), (x, ẋ), xs -> ...
  g = ember.make_jaxpr(ember.grad(_scan_f, argnums=(0, 1)))(x, 2.0)  # weak c: converted
  # JAX: the loop-invariant convert_element_type of c is computed once, before the loops
  assert _prims(g)[:3] == ["iota", "convert_element_type", "scan"]
  assert _prims(g).count("scan") == 2
  x0 = np.float32([0.2, -0.4, 0.9])
  val, gx, gc = _scan_ref(x0, 0.3)
  for fn in both(ember.value_and_grad(_scan_f, argnums=(0, 1))):
    v, (ax, ac) = fn(x0, np.float32(0.3))
    np.testing.assert_allclose(float(v), val, rtol=RTOL)
    np.testing.assert_allclose(np.asarray(ax), gx, rtol=RTOL, atol=1e-6)
    np.testing.assert_allclose(float(ac), gc, rtol=RTOL)
  for fn in both(lambda x, c: ember.jvp(_scan_f, (x, c), (jnp.ones_like(x), jnp.zeros_like(c)))):
    v, t = fn(x0, np.float32(0.3))
    np.testing.assert_allclose(float(t), np.sum(gx), rtol=RTOL)


def _cond_f(x, p):
  return lax.cond(p > 0, lambda x: jnp.sin(x) * 2.0, lambda x: jnp.cos(x), x)


def test_cond_jvp_is_one_cond_and_grad_merges_residuals():
  x = np.ones(3, np.float32)
  j = ember.make_jaxpr(lambda x, p: ember.jvp(lambda x: _cond_f(x, p), (x,), (x,)))(x, 1.0)
  assert str(j) == ORACLE["cond_jvp"]
  g = ember.make_jaxpr(ember.grad(lambda x, p: jnp.sum(_cond_f(x, p))))(x, 1.0)
  conds = [e for e in g.eqns if e.primitive.name == "cond"]
  # JAX: the branches' residuals (sin x | cos x) share one slot: 2 outputs, not 3
  assert len(conds) == 2 and len(conds[0].outvars) == 2
  x0 = np.float32([0.3, -1.2, 2.0])
  for p, want in ((1.0, 2 * np.cos(np.float64(x0))), (-1.0, -np.sin(np.float64(x0)))):
    for fn in both(ember.grad(lambda x, p: jnp.sum(_cond_f(x, p)))):
      np.testing.assert_allclose(np.asarray(fn(x0, p)), want, rtol=RTOL)
    for fn in both(lambda x, p: ember.jvp(lambda x: _cond_f(x, p), (x,), (jnp.ones_like(x),))[1]):
      np.testing.assert_allclose(np.asarray(fn(x0, p)), want, rtol=RTOL)


# --- 4. jacfwd / jacrev: JAX's standard basis ------------------------------------------------

def test_jacobian_jaxprs_are_jaxs():
  fj = lambda x: jnp.sin(x) * 2.0
  assert str(ember.make_jaxpr(ember.jacfwd(fj))(np.ones(3, np.float32))) == ORACLE["jacfwd"]
  assert str(ember.make_jaxpr(ember.jacrev(fj))(np.ones(3, np.float32))) == ORACLE["jacrev"]
  assert str(ember.make_jaxpr(ember.jacfwd(fj))(1.0)) == ORACLE["jacfwd_scalar"]


def test_jacobians_of_pytrees():
  g = lambda x, y: (jnp.sin(x) * y.sum(), x[0] * y)
  x = np.float32([0.5, -1.0])
  y = np.float32([[1.0, 2.0], [3.0, -4.0]])
  x64, y64 = np.float64(x), np.float64(y)
  want = ((np.diag(np.cos(x64) * y64.sum()), np.broadcast_to(np.sin(x64)[:, None, None], (2, 2, 2))),
          (np.stack([y64, np.zeros((2, 2))], -1), x64[0] * np.eye(4).reshape(2, 2, 2, 2)))
  for jac in (ember.jacfwd, ember.jacrev):
    for fn in both(jac(g, argnums=(0, 1))):
      got = fn(x, y)
      for (a, b), (wa, wb) in zip(got, want):
        assert a.shape == wa.shape and b.shape == wb.shape
        np.testing.assert_allclose(np.asarray(a), wa, rtol=RTOL)
        np.testing.assert_allclose(np.asarray(b), wb, rtol=RTOL)
  jx, aux = ember.jacfwd(lambda x: (jnp.sin(x), x * 3), has_aux=True)(x)
  np.testing.assert_allclose(np.asarray(jx), np.diag(np.cos(x64)), rtol=RTOL)
  np.testing.assert_allclose(np.asarray(aux), 3 * x)
  jw = ember.jacfwd(lambda s: jnp.sin(s) * 2.0)(1.0)  # weak scalar in, weak scalar out
  assert jw.shape == () and jw.weak_type
  np.testing.assert_allclose(float(jw), 2 * np.cos(1.0), rtol=RTOL)


# --- 5. custom_vjp / custom_jvp symbolic zeros -----------------------------------------------

def _make_custom(symbolic_zeros, log):
  @ember.custom_vjp
  def f(x, y):
    return jnp.sin(x) * y, x + y

  def fwd(x, y):
    log.append(("fwd", type(x).__name__, getattr(x, "perturbed", None),
                type(y).__name__, getattr(y, "perturbed", None)))
    xv, yv = (x.value, y.value) if symbolic_zeros else (x, y)
    return f(xv, yv), (xv, yv)

  def bwd(res, cts):
    x, y = res
    c1, c2 = cts
    log.append(("bwd", type(c1).__name__, type(c2).__name__))
    c2 = jnp.zeros_like(x) if isinstance(c2, SymbolicZero) else c2
    return c1 * jnp.cos(x) * y + c2, c1 * jnp.sin(x) + c2
  f.defvjp(fwd, bwd, symbolic_zeros=symbolic_zeros)
  return f


def test_custom_vjp_fwd_and_bwd_arguments():
  log = []
  f = _make_custom(False, log)
  g = ember.grad(lambda x, y: f(x, y)[0])(1.0, 2.0)
  np.testing.assert_allclose(float(g), 2 * np.cos(1.0), rtol=RTOL)
  assert log == [("fwd", "Array", None, "float", None), ("bwd", "Array", "Array")]
  for argnums, perturbed_y in ((0, False), ((0, 1), True)):
    log = []
    f = _make_custom(True, log)
    g = ember.grad(lambda x, y: f(x, y)[0], argnums=argnums)(1.0, 2.0)
    # JAX 0.12: CustomVJPPrimal leaves with .perturbed; the unused output's cotangent is
    # a SymbolicZero
    assert log == [("fwd", "CustomVJPPrimal", True, "CustomVJPPrimal", perturbed_y),
                   ("bwd", "Array", "SymbolicZero")]
    gx = g if argnums == 0 else g[0]
    np.testing.assert_allclose(float(gx), 2 * np.cos(1.0), rtol=RTOL)
    if argnums != 0:
      np.testing.assert_allclose(float(g[1]), np.sin(1.0), rtol=RTOL)
  log = []
  g = ember.jit(ember.grad(lambda x, y: _make_custom(True, log)(x, y)[0]))(1.0, 2.0)
  np.testing.assert_allclose(float(g), 2 * np.cos(1.0), rtol=RTOL)
  assert log[1][2] == "SymbolicZero"


def test_custom_vjp_symbolic_zero_helpers():
  p = CustomVJPPrimal(np.float32(1.0), True)
  assert custom_vjp_primal_tree_values({"a": p}) == {"a": np.float32(1.0)}
  with pytest.raises(TypeError, match="unexpected leaf type"):
    custom_vjp_primal_tree_values([1.0])
  z = SymbolicZero.from_primal_value(np.ones((2, 3), np.float32))
  assert (z.shape, z.dtype, z.ndim, repr(z)) == ((2, 3), np.float32, 2, "SymbolicZero")
  zi = SymbolicZero.from_primal_value(np.int32(1))  # integers have float0 tangents
  assert zi.dtype == ember.dtypes.float0

  @ember.custom_vjp
  def h(x, y):
    return x * y
  h.defvjp(lambda x, y: (x * y, (x, y)), lambda r, c: (c * r[1], None))  # None: zero
  gx, gy = ember.grad(h, argnums=(0, 1))(3.0, 4.0)
  assert (float(gx), float(gy)) == (4.0, 0.0)


def test_custom_jvp_symbolic_zeros():
  seen = []

  @ember.custom_jvp
  def f(x, y):
    return x * y

  @f.defjvp
  def f_jvp(primals, tangents):
    seen.append(tuple(type(t).__name__ for t in tangents))
    (x, y), (tx, ty) = primals, tangents
    tx = 0.0 if isinstance(tx, SymbolicZero) else tx * y
    ty = 0.0 if isinstance(ty, SymbolicZero) else ty * x
    return x * y, tx + ty
  f.defjvp(f_jvp, symbolic_zeros=True)
  g = ember.grad(f)(3.0, 5.0)
  assert float(g) == 5.0 and seen[-1][1] == "SymbolicZero" and seen[-1][0] != "SymbolicZero"


# --- 6. all_gather / psum_scatter transposes --------------------------------------------------

XG = (np.arange(12, dtype=np.float32).reshape(4, 3) / 10)
WG = (np.arange(12, dtype=np.float32).reshape(4, 3) / 7)


def test_all_gather_grad_under_vmap():
  def f(x):
    return jnp.sum(jnp.sin(lax.all_gather(x, "i")) * WG)
  # each example's cotangent of the gathered value is summed over the 4 examples
  # (psum_scatter), so example j gets 4 * cos(x_j) * W_j (JAX 0.12's values)
  want = 4 * np.cos(np.float64(XG)) * WG
  for fn in both(ember.vmap(ember.grad(f), axis_name="i")):
    np.testing.assert_allclose(np.asarray(fn(XG)), want, rtol=RTOL)
  j = ember.make_jaxpr(ember.vmap(ember.grad(f), axis_name="i"))(XG)
  assert "all_gather" not in str(j) and "reduce_scatter" not in str(j)

  def f_tiled(x):
    return jnp.sum(lax.all_gather(x, "i", tiled=True) ** 2 * jnp.arange(12.0))
  want = 8 * np.float64(XG) * np.arange(12.0).reshape(4, 3)
  for fn in both(ember.vmap(ember.grad(f_tiled), axis_name="i")):
    np.testing.assert_allclose(np.asarray(fn(XG)), want, rtol=RTOL)


def test_psum_scatter_values_and_grad():
  x = np.arange(16, dtype=np.float32).reshape(4, 4)
  x3 = np.arange(32, dtype=np.float32).reshape(4, 2, 4)
  cases = [
      (lambda v: lax.psum_scatter(v, "i"), x, x.sum(0)),
      (lambda v: lax.psum_scatter(v, "i", tiled=True), x, x.sum(0)[:, None]),
      (lambda v: lax.psum_scatter(v, "i", scatter_dimension=1, tiled=True), x3,
       x3.sum(0).reshape(2, 4, 1).transpose(1, 0, 2)),
  ]
  for f, arg, want in cases:
    for fn in both(ember.vmap(f, axis_name="i")):
      np.testing.assert_allclose(np.asarray(fn(arg)), want)
  g = ember.vmap(ember.grad(lambda v: jnp.sum(lax.psum_scatter(v, "i") ** 2)), axis_name="i")
  np.testing.assert_allclose(np.asarray(g(x)), np.broadcast_to(2 * x.sum(0), (4, 4)))
  with pytest.raises(ValueError, match="must match shard count 4"):
    ember.vmap(lambda v: lax.psum_scatter(v, "i"), axis_name="i")(np.ones((4, 3), np.float32))
  with pytest.raises(ValueError, match="must be divisible by shard_count 4"):
    ember.vmap(lambda v: lax.psum_scatter(v, "i", tiled=True),
               axis_name="i")(np.ones((4, 6), np.float32))
  with pytest.raises(NameError):
    lax.psum_scatter(np.ones(4, np.float32), "nope")


# --- nested control flow: a jvp of a sub-jaxpr keeps primal and tangent work apart ----------

def _nested_cases():
  def cond_in_scan(c):
    def body(c, x):
      c = lax.cond(x > 1, lambda c: jnp.sin(c), lambda c: c * 2.0, c)
      return c, c
    return jnp.sum(lax.scan(body, c, jnp.arange(3.0))[1])

  def scan_in_scan(c):
    def body(c, x):
      c = lax.scan(lambda a, b: (jnp.sin(a) * b, a), c, jnp.arange(2.0) + x + 0.5)[0]
      return c, c
    return jnp.sum(lax.scan(body, c, jnp.arange(3.0))[1])

  def while_in_jit(c):
    inner = ember.jit(lambda c: lax.while_loop(lambda s: s[0] < 3,
                                               lambda s: (s[0] + 1, jnp.sin(s[1]) + s[1]),
                                               (0, c))[1])
    return jnp.sum(inner(c) ** 2)

  def checkpoint_in_cond(c):
    layer = ember.checkpoint(lambda c: jnp.sin(c) * jnp.cos(c), policy=cp.dots_saveable)
    return jnp.sum(lax.cond(jnp.sum(c) > 0, layer, jnp.exp, c))
  return [cond_in_scan, scan_in_scan, while_in_jit, checkpoint_in_cond]


@pytest.mark.parametrize("f", _nested_cases(), ids=lambda f: f.__name__)
def test_nested_derivatives_against_finite_differences(f):
  with ember.enable_x64():
    c = np.array([0.5, 1.25])
    eps = 1e-6
    fd = np.array([(float(f(c + eps * e)) - float(f(c - eps * e))) / (2 * eps)
                   for e in np.eye(2)])
    t = np.array([1.0, -2.0])
    if f.__name__ != "while_in_jit":  # reverse mode: no while_loop (JAX's error)
      for fn in both(ember.grad(f)):
        np.testing.assert_allclose(np.asarray(fn(c)), fd, rtol=1e-6, atol=1e-8)
    for fn in both(lambda c, t: ember.jvp(f, (c,), (t,))[1]):
      np.testing.assert_allclose(float(fn(c, t)), fd @ t, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(float(ember.linearize(f, c)[1](t)), fd @ t, rtol=1e-6, atol=1e-8)


def test_jvp_of_jit_is_one_call():
  f = ember.jit(lambda x: jnp.sin(x) * 2.0)
  x = np.float32([0.1, 0.5, -2.0])
  j = ember.make_jaxpr(lambda x: ember.jvp(f, (x,), (x,)))(x)
  assert _prims(j) == ["jit"] and len(j.eqns[0].outvars) == 2  # JAX: one jit of the jvp
  assert _prims(ember.make_jaxpr(lambda x, t: ember.linearize(f, x)[1](t))(x, x)) == ["jit", "jit"]
  for fn in both(lambda x: ember.jvp(f, (x,), (x,))):
    y, t = fn(x)
    np.testing.assert_allclose(np.asarray(y), 2 * np.sin(np.float64(x)), rtol=RTOL)
    np.testing.assert_allclose(np.asarray(t), 2 * np.cos(np.float64(x)) * x, rtol=RTOL)


# --- print_saved_residuals (jax.ad_checkpoint) -------------------------------------------

def _named_sin(x):
  y = checkpoint_name(jnp.sin(x), "y")
  return jnp.sin(y) * x


def _saved(f, *args):
  from ember._src.transforms.remat import saved_residuals
  return sorted(where.split(" from ")[0] if "argument" not in where else where
                for _, where in saved_residuals(f, *args))


@pytest.mark.parametrize("policy, want", [   # JAX 0.12's print_saved_residuals, as sets
    ("none_no_checkpoint", ["from the argument x", "output of cos", "output of cos",
                            "output of sin"]),
    (None, ["from the argument x"]),
    ("save_only_these_names", ["from the argument x", "named 'y'"]),
    ("everything_saveable", ["from the argument x", "output of cos", "output of cos",
                             "output of sin"]),
])
def test_print_saved_residuals_reports_what_each_policy_saves(policy, want, capsys):
  from ember.ad_checkpoint import print_saved_residuals
  if policy == "none_no_checkpoint":
    f = _named_sin
  elif policy is None:
    f = ember.checkpoint(_named_sin)
  elif policy == "save_only_these_names":
    f = ember.checkpoint(_named_sin, policy=ember.checkpoint_policies.save_only_these_names("y"))
  else:
    f = ember.checkpoint(_named_sin, policy=getattr(ember.checkpoint_policies, policy))
  assert _saved(f, 1.0) == sorted(want)
  print_saved_residuals(f, 1.0)
  lines = capsys.readouterr().out.splitlines()
  assert len(lines) == len(want) and all(line.startswith("f32[] ") for line in lines)
  line_of_sin = _named_sin.__code__.co_firstlineno + 1   # the source line JAX names
  if policy == "save_only_these_names":
    assert any(f"named 'y' from {__file__}:{line_of_sin} (_named_sin)" in line
               for line in lines)
