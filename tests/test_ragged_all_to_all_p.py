"""lax.ragged_all_to_all_p (library/lax/ragged_collectives.py): the primitive lax's
ragged_all_to_all binds, bound as JAX binds it, under vmap (over its axis and over another),
pmap, jit and grad, against JAX's docstring pseudo-code."""
import numpy as np
import pytest

import ember
from ember import lax
from ember.lax import ragged_all_to_all_p

# JAX's docstring example: results [1, 3, 0, 0] and [2, 2, 4, 0]
_OPERAND = np.array([[1, 2, 2], [3, 4, 0]], np.int32)
_OUTPUT = np.zeros((2, 4), np.int32)
_ARGS = [np.array(a, np.int32) for a in ([[0, 1], [0, 1]], [[1, 2], [1, 1]],
                                         [[0, 0], [1, 2]], [[1, 1], [2, 1]])]
_WANT = np.array([[1, 3, 0, 0], [2, 2, 4, 0]], np.int32)


def _bind(*args):
  return ragged_all_to_all_p.bind(*args, axis_name=("i",), axis_index_groups=None)


def test_lax_binds_the_primitive():
  jaxprs = []
  def staged(*a):   # the per-index jaxpr, staged where the axis name is bound
    jaxprs.append(ember.make_jaxpr(lambda *b: lax.ragged_all_to_all(*b, axis_name="i"))(*a))
    return a[1]
  ember.vmap(staged, axis_name="i")(_OPERAND, _OUTPUT, *_ARGS)
  jaxpr = jaxprs[0]
  assert [e.primitive for e in jaxpr.eqns] == [ragged_all_to_all_p]
  assert jaxpr.eqns[0].params == {"axis_name": ("i",), "axis_index_groups": None}


def test_bind_vmap_jit_pmap():
  np.testing.assert_array_equal(ember.vmap(_bind, axis_name="i")(_OPERAND, _OUTPUT, *_ARGS),
                                _WANT)
  np.testing.assert_array_equal(
      ember.jit(ember.vmap(_bind, axis_name="i"))(_OPERAND, _OUTPUT, *_ARGS), _WANT)
  # pmap over the one CPU device: index 0 sends operand[1:3] to itself, at row 1
  one = [np.array([[v]], np.int32) for v in (1, 2, 1, 2)]
  np.testing.assert_array_equal(
      ember.pmap(_bind, axis_name="i")(_OPERAND[:1], _OUTPUT[:1], *one), [[0, 2, 2, 0]])


def test_vmap_over_another_axis():
  # an outer batch of 3 (unnamed) around the exchange over "i": each batch element alone
  scale = np.array([1, 10, 100], np.int32)
  inner = ember.vmap(_bind, axis_name="i")
  out = ember.vmap(lambda s: inner(_OPERAND * s, _OUTPUT, *_ARGS))(scale)
  np.testing.assert_array_equal(out, _WANT[None] * scale[:, None, None])
  # the outer vmap batches only the output, with the exchange's operands unbatched
  outputs = np.stack([_OUTPUT, _OUTPUT + 7])
  out = ember.vmap(lambda o: inner(_OPERAND, o, *_ARGS))(outputs)
  np.testing.assert_array_equal(out, np.where(_WANT[None] == 0, np.array([0, 7])[:, None, None],
                                              _WANT[None]))


def test_grad():
  operand = np.arange(6., dtype=np.float32).reshape(2, 3)
  output = np.full((2, 4), -1., np.float32)
  weights = np.arange(8., dtype=np.float32).reshape(2, 4)
  loss = lambda x, y: (ember.vmap(_bind, axis_name="i")(x, y, *_ARGS) * weights).sum()
  gx, gy = ember.jit(ember.grad(loss, argnums=(0, 1)))(operand, output)
  # d/d operand: the weight of the output row each sent row lands on; d/d output: the
  # weights of the rows nothing is written to
  want_x = np.zeros_like(operand)
  for s in range(2):
    for i in range(2):
      for r in range(_ARGS[1][s, i]):
        # sender s's entry i goes to index i, which writes it at all_to_all'd offsets
        want_x[s, _ARGS[0][s, i] + r] += weights[i, _ARGS[2][s, i] + r]
  np.testing.assert_array_equal(gx, want_x)
  np.testing.assert_array_equal(gy, np.where(_WANT == 0, weights, 0))


def test_errors():
  with pytest.raises(ValueError, match="must have the same length"):
    ember.vmap(_bind, axis_name="i")(_OPERAND, _OUTPUT, _ARGS[0], _ARGS[1][:, :1], *_ARGS[2:])
  with pytest.raises(TypeError, match="same dtype"):
    ember.vmap(_bind, axis_name="i")(_OPERAND.astype(np.float32), _OUTPUT, *_ARGS)
  with pytest.raises(NameError):
    _bind(_OPERAND[0], _OUTPUT[0], *(a[0] for a in _ARGS))
