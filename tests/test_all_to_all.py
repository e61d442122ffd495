"""lax.all_to_all and lax.pswapaxes under vmap, against values recorded from real JAX 0.12
(tests/data/all_to_all.json, made by tests/data/make_all_to_all.py), and their errors."""
import json
import os
import sys

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
sys.path.insert(0, DATA)
from all_to_all_cases import CASES, X  # noqa: E402

with open(os.path.join(DATA, "all_to_all.json")) as f:
  RECORDED = json.load(f)


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_jax(name):
  got = np.asarray(CASES[name](ember, lax, jnp))
  want = RECORDED[name]
  assert got.dtype.name == want["dtype"]
  assert list(got.shape) == want["shape"]
  np.testing.assert_array_equal(got.ravel(), np.array(want["values"], got.dtype))


def test_jit_matches_eager():
  f = ember.vmap(lambda v: lax.all_to_all(v, "i", 0, 1), axis_name="i")
  np.testing.assert_array_equal(np.asarray(ember.jit(f)(X)), np.asarray(f(X)))


def test_jaxpr_keeps_the_collective_inside_vmap_only():
  jaxpr = ember.make_jaxpr(ember.vmap(lambda v: lax.pswapaxes(v, "i", 0), axis_name="i"))(X)
  assert "all_to_all" not in str(jaxpr)   # the batching rule made it a reshape/transpose


def test_split_size_must_equal_axis_size():
  f = ember.vmap(lambda v: lax.all_to_all(v, "i", 1, 0), axis_name="i")
  with pytest.raises(ValueError, match="they are 4 and 6 respectively"):
    f(X)


def test_tiled_split_must_divide():
  f = ember.vmap(lambda v: lax.all_to_all(v, "i", 1, 0, tiled=True), axis_name="i")
  with pytest.raises(ValueError, match=r"split_axis \(6\) has to be divisible"):
    f(X)


def test_axis_out_of_bounds():
  f = ember.vmap(lambda v: lax.all_to_all(v, "i", 2, 0), axis_name="i")
  with pytest.raises(ValueError, match="split_axis 2 is out of bounds.*shape \\(4, 6\\)"):
    f(X)


def test_unbound_axis_name():
  with pytest.raises(NameError, match="unbound axis name: i"):
    lax.all_to_all(X[0], "i", 0, 0)


def test_axis_index_groups_not_supported():
  f = ember.vmap(lambda v: lax.all_to_all(v, "i", 0, 0, axis_index_groups=[[0, 1], [2, 3]]),
                 axis_name="i")
  with pytest.raises(NotImplementedError, match="axis_index_groups"):
    f(X)
