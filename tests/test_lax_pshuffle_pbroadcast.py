"""lax.pshuffle (ppermute by sources), lax.pbroadcast (every index gets the source's
value), lax.ragged_all_to_all (against the docstring's pseudo-code) under vmap and pmap
with a named axis, their derivatives and errors (semantics from
JAX 0.12's docstrings: pbroadcast == psum(where(axis_index == source, x, 0)))."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

_X = np.arange(8., dtype=np.float32).reshape(4, 2)


def test_pshuffle():
  out = ember.vmap(lambda v: lax.pshuffle(v, "i", [3, 0, 1, 2]), axis_name="i")(_X)
  np.testing.assert_array_equal(out, _X[[3, 0, 1, 2]])
  out = ember.jit(ember.vmap(lambda v: lax.pshuffle(v, "i", [1, 2, 3, 0]), axis_name="i"))(_X)
  np.testing.assert_array_equal(out, _X[[1, 2, 3, 0]])
  with pytest.raises(ValueError, match="does not represent a permutation"):
    ember.vmap(lambda v: lax.pshuffle(v, "i", [0, 0, 1, 2]), axis_name="i")(_X)


def test_pbroadcast():
  out = ember.vmap(lambda v: lax.pbroadcast(v, "i", 2), axis_name="i")(_X)
  np.testing.assert_array_equal(out, np.broadcast_to(_X[2], (4, 2)))
  out = ember.vmap(lambda v: lax.pbroadcast({"a": v}, "i", jnp.int32(1)), axis_name="i")(_X)
  np.testing.assert_array_equal(out["a"], np.broadcast_to(_X[1], (4, 2)))
  np.testing.assert_array_equal(
      ember.pmap(lambda v: lax.pbroadcast(v, "i", 0), axis_name="i")(_X[:1]), _X[:1])
  g = ember.grad(lambda x: ember.vmap(lambda v: lax.pbroadcast(v, "i", 2),
                                      axis_name="i")(x).sum())(_X)
  want = np.zeros_like(_X)
  want[2] = 4.0
  np.testing.assert_array_equal(g, want)
  with pytest.raises(ValueError, match="source 5 is outside the axis"):
    ember.vmap(lambda v: lax.pbroadcast(v, "i", 5), axis_name="i")(_X)


def _ragged_all_to_all_loop(operand, output, in_off, send, out_off, recv):
  """JAX's docstring pseudo-code over all indices of the axis."""
  p, k = in_off.shape
  per = k // p
  result = np.array(output)
  for s in range(p):
    for i in range(k):
      dst = i // per
      chunk = operand[s, in_off[s, i]:in_off[s, i] + send[s, i]]
      # on the receiver, entry s * per + (i % per) of its all_to_all'd offsets
      result[dst, out_off[s, i]:out_off[s, i] + len(chunk)] = chunk
  return result


def test_ragged_all_to_all():
  # JAX's docstring example: results [1, 3, 0, 0] and [2, 2, 4, 0]
  operand = np.array([[1, 2, 2], [3, 4, 0]], np.int32)
  output = np.zeros((2, 4), np.int32)
  args = [np.array(a, np.int32) for a in ([[0, 1], [0, 1]], [[1, 2], [1, 1]],
                                          [[0, 0], [1, 2]], [[1, 1], [2, 1]])]
  f = lambda *a: lax.ragged_all_to_all(*a, axis_name="i")
  out = ember.vmap(f, axis_name="i")(operand, output, *args)
  np.testing.assert_array_equal(out, [[1, 3, 0, 0], [2, 2, 4, 0]])
  np.testing.assert_array_equal(out, _ragged_all_to_all_loop(operand, output, *args))
  # floats, two slices per destination, and the derivative (each row sent once)
  operand = np.arange(12., dtype=np.float32).reshape(2, 6)
  output = np.full((2, 6), -1., np.float32)
  send = [[1, 2, 1, 1], [1, 1, 2, 1]]          # recv = all_to_all(send): the same here
  args = [np.array(a, np.int32) for a in ([[0, 1, 3, 4], [0, 1, 2, 4]], send,
                                          [[0, 1, 0, 1], [3, 4, 2, 4]], send)]
  out = ember.jit(ember.vmap(f, axis_name="i"))(operand, output, *args)
  np.testing.assert_array_equal(out, _ragged_all_to_all_loop(operand, output, *args))
  g = ember.grad(lambda x: ember.vmap(f, axis_name="i")(x, output, *args).sum())(operand)
  sent = np.zeros_like(operand)
  for s in range(2):
    for i in range(4):
      sent[s, args[0][s, i]:args[0][s, i] + args[1][s, i]] = 1
  np.testing.assert_array_equal(g, sent)
  with pytest.raises(ValueError, match="must have the same length"):
    ember.vmap(f, axis_name="i")(operand, output, args[0], args[1][:, :2], args[2], args[3])
