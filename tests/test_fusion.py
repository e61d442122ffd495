"""The fusion pass: what it fuses (structure of the optimized entry computation on lowered
functions), the backend contract it establishes, and values unchanged (the reference HLO
evaluator on the module before and after fusion)."""
import re

import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags as flags_lib
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.lower import lower_jaxpr
from ember._src.passes import fusion, pipeline

RNG = np.random.default_rng(0)
F32 = np.float32


def lowered(f, *args, donated=()):
  """The module `jit(f)` lowers to (its consts become `constant`s), nested jits inlined."""
  m = lower_jaxpr(ember.make_jaxpr(f)(*args), getattr(f, "__name__", "f"), donated=donated)
  return pipeline.run_passes(m, flags_lib.Flags(), passes=("inline",))


def fused(f, *args, flags=None):
  return fusion.run(lowered(f, *args), flags)


def fusions(module):
  return [i for i in module.entry.instrs if i.opcode == "fusion"]


def inner_ops(module):
  """Opcodes inside all fused computations (with multiplicity)."""
  return [i.opcode for f in fusions(module) for i in f.called[0].instrs]


ENTRY_OPS = {"parameter", "constant", "fusion", "dot", "sort", "top-k", "scatter", "tuple",
             "get-tuple-element", "optimization-barrier", "copy", "while", "conditional",
             "custom-call"}


def check_contract(module):
  """compiler_design.md's "After the pass pipeline" contract for the entry computation."""
  entry = module.entry
  for i in entry.instrs:
    assert i.opcode in ENTRY_OPS, f"%{i.name} = {i.opcode} left outside a fusion"
    assert all(o in entry.instrs for o in i.operands)
    if i.opcode != "fusion":
      continue
    comp = i.called[0]
    assert comp.is_fusion and comp in module.computations
    params = comp.params
    assert [p.attrs["number"] for p in params] == list(range(len(i.operands)))
    assert [p.shape for p in params] == [o.shape for o in i.operands]
    assert all(isinstance(o.shape, hlo.Shape) for o in i.operands)   # no tuple parameters
    assert comp.root.shape == i.shape and i.metadata == comp.root.metadata
    ops = {x.opcode for x in comp.instrs}
    assert ops - {"parameter"} <= fusion.FUSIBLE | fusion.ROOT_ONLY, ops
    assert i.attrs["kind"] == ("kInput" if "reduce" in ops else "kLoop")
    assert all(x.operands[0].opcode == "reduce" for x in comp.instrs
               if x.opcode == "get-tuple-element")
    assert all(x.shape.rank == 0 for x in comp.instrs if x.opcode == "constant")
    lone = len([x for x in comp.instrs if x.opcode not in ("parameter", "constant")]) == 1
    assert re.fullmatch(r"wrapped_\w+(\.\d+)?" if lone else r"fusion(\.\d+)?", i.name), i.name
    assert re.fullmatch(r"wrapped_\w+_computation(\.\d+)?" if lone else
                        r"fused_computation(\.\d+)?", comp.name), comp.name
    assert all(re.fullmatch(r"param_\d+(\.\d+)?", p.name) for p in params)


def check_values(f, *args, flags=None):
  """Fusion changes no value: the evaluator agrees bit for bit before and after."""
  module = lowered(f, *args)
  before = hlo_eval.evaluate(module, args)
  fusion.run(module, flags)
  check_contract(module)
  after = hlo_eval.evaluate(module, args)
  assert len(before) == len(after)
  for b, a in zip(before, after):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
  return module


def normal(*shape, dtype=F32):
  return RNG.standard_normal(shape).astype(dtype)


def softmax(x):
  return ember.nn.softmax(x, axis=-1)


def pairwise_v1(X, Y):
  return jnp.sqrt(jnp.sum((X[:, None, :] - Y[None, :, :]) ** 2, axis=-1))


def pairwise_v2(X, Y):
  sq = jnp.sum(X ** 2, 1)[:, None] + jnp.sum(Y ** 2, 1)[None, :] - 2 * X @ Y.T
  return jnp.sqrt(jnp.maximum(sq, 0.0))


def pairwise_barrier(X, Y):
  diff = lax.optimization_barrier(X[:, None, :] - Y[None, :, :])
  return jnp.sqrt(jnp.sum(diff ** 2, axis=-1))


def layernorm(x, g, b):
  m = jnp.mean(x, -1, keepdims=True)
  v = jnp.mean((x - m) ** 2, -1, keepdims=True)
  return (x - m) / jnp.sqrt(v + 1e-5) * g + b


def argmax_and_max(x):
  return jnp.argmax(x, axis=1), jnp.max(x, axis=1) * 2


CASES = {
    "sin_mul_add": (lambda x, a, b: jnp.sin(x) * a + b, (normal(7, 5), F32(2), F32(1))),
    "exp_log_add": (lambda x, y: jnp.exp(jnp.log(x) + y), (np.abs(normal(4, 6)), normal(4, 6))),
    "softmax": (softmax, (normal(5, 7),)),
    "softmax_3d": (softmax, (normal(2, 3, 4),)),
    "pairwise_v1": (pairwise_v1, (normal(5, 3), normal(6, 3))),
    "pairwise_v2": (pairwise_v2, (normal(5, 3), normal(6, 3))),
    "pairwise_barrier": (pairwise_barrier, (normal(5, 3), normal(6, 3))),
    "layernorm": (layernorm, (normal(3, 8), normal(8), normal(8))),
    "argmax_and_max": (argmax_and_max, (normal(4, 9),)),
    "gather": (lambda x, i: x[i] * 2 + 1, (normal(6, 3), np.array([0, 5, 2, 2], np.int32))),
    "dynamic_slice": (lambda x, i: lax.dynamic_slice(x * 2, (i, 1), (2, 3)) + 1,
                      (normal(5, 6), np.int32(2))),
    "dynamic_update_slice": (lambda x, u: lax.dynamic_update_slice(x + 1, u * 3, (1, 2)),
                             (normal(5, 6), normal(2, 2))),
    "concat_pad_rev_iota": (lambda x: jnp.pad(jnp.concatenate([x, x[::-1] * 2]), 1)
                            + jnp.arange(8, dtype=F32)[:, None], (normal(3, 4),)),
    "int_ops": (lambda i, j: (i // j + i % j) * 3, (np.arange(-6, 6, dtype=np.int32),
                                                     np.array([1, 2, 3, -4] * 3, np.int32))),
    "where_bool": (lambda x: jnp.where(x > 0, x, 0.5 * x) + (x < 1), (normal(4, 4),)),
    "sort_then_elementwise": (lambda x: jnp.sort(x * 2, axis=-1) + 1, (normal(3, 5),)),
    "dot_epilogue_prologue": (lambda x, w, b: jnp.tanh(jnp.exp(x) @ w + b),
                              (normal(4, 3), normal(3, 5), normal(5))),
    "empty": (lambda x: (jnp.sin(x) + 1, jnp.sum(x, 0)), (np.zeros((0, 3), F32),)),
    "scalar": (lambda x: jnp.exp(x) * x + 1, (F32(0.5),)),
    "transpose_3d_reduce": (lambda x: jnp.sum(jnp.transpose(x, (2, 0, 1)) * 3, axis=(1, 2)),
                            (normal(2, 3, 4),)),
    "reduce_feeds_elementwise": (lambda x: jnp.sqrt(jnp.sum(x * x, 1)) * jnp.sum(x * x, 1),
                                 (normal(4, 5),)),
    "half_precision": (lambda x: (x.astype(jnp.bfloat16) * 3).astype(F32) + jnp.float16(1),
                       (normal(3, 4),)),
    "outputs_share_values": (lambda x: (jnp.exp(x) + 1, jnp.exp(x) * 2, x * 3, x * 3 + 1),
                             (normal(4),)),
    "full_reduce_broadcast": (lambda x: x / jnp.sum(x), (np.abs(normal(3, 4)) + 1,)),
    "inf_nan": (lambda x: jnp.log(x) * 0 + jnp.exp(-x),
                (np.array([0, -1, np.inf, np.nan, -0.0], F32),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_unchanged_and_contract_holds(name):
  f, args = CASES[name]
  check_values(f, *args)


@pytest.mark.parametrize("name", ["exp_log_add", "softmax", "argmax_and_max", "gather",
                                  "pairwise_barrier", "dynamic_update_slice"])
def test_values_unchanged_with_fusion_disabled(name):
  f, args = CASES[name]
  off = flags_lib.Flags(disable_passes=frozenset({"fusion"}))
  m = check_values(f, *args, flags=off)
  # one computing op per kernel (scalar constants ride along)
  for fu in fusions(m):
    assert len([i for i in fu.called[0].instrs if i.opcode not in ("parameter", "constant")]) == 1


def test_sin_mul_add_is_one_loop_fusion():
  m = fused(CASES["sin_mul_add"][0], np.ones((1000, 1000), F32), F32(2), F32(1))
  (f,) = fusions(m)
  assert f.attrs["kind"] == "kLoop" and f.name == "fusion"
  assert f.called[0].name == "fused_computation"
  assert m.entry.root is f and [o.opcode for o in f.operands] == ["parameter"] * 3
  assert sorted(inner_ops(m)) == sorted(["parameter"] * 3 + ["sine", "multiply", "add",
                                                               "broadcast", "broadcast"])
  assert "fusion(%x, %a, %b), kind=kLoop, calls=%fused_computation" in hlo.to_text(m)


def test_exp_log_add_one_fusion_and_three_wrapped_when_disabled():
  f, (x, y) = CASES["exp_log_add"]
  assert len(fusions(fused(f, x, y))) == 1
  off = flags_lib.Flags(disable_passes=frozenset({"fusion"}))
  m = fused(f, x, y, flags=off)
  assert [i.name for i in fusions(m)] == ["wrapped_log", "wrapped_add", "wrapped_exp"] or \
         [i.name for i in fusions(m)] == ["wrapped_log", "wrapped_add", "wrapped_exponential"]
  assert [i.called[0].name for i in fusions(m)][0] == "wrapped_log_computation"
  m2 = fusion.wrap_lone_ops(lowered(f, x, y))           # what the pipeline calls instead
  assert hlo.to_text(m2) == hlo.to_text(m)


def test_pairwise_is_one_input_fusion_without_the_difference():
  N, M, d = 10, 15, 8
  m = fused(pairwise_v1, normal(N, d), normal(M, d))
  (f,) = fusions(m)
  assert f.attrs["kind"] == "kInput" and m.entry.root is f
  assert [o.opcode for o in f.operands] == ["parameter", "parameter"]
  assert f.called[0].root.opcode == "sqrt" and "reduce" in inner_ops(m)
  # the [N, M, d] difference exists only inside the fused computation
  big = [i for i in m.entry.instrs if isinstance(i.shape, hlo.Shape) and i.shape.size >= N * M * d]
  assert big == []


def test_optimization_barrier_is_a_boundary():
  N, M, d = 10, 15, 8
  m = fused(pairwise_barrier, normal(N, d), normal(M, d))
  ops = [i.opcode for i in m.entry.instrs]
  assert "optimization-barrier" in ops and ops.count("fusion") == 2
  diff, reduce_ = fusions(m)
  assert diff.shape.dims == (N, M, d) and diff.called[0].root.opcode == "subtract"
  assert reduce_.attrs["kind"] == "kInput"
  barrier = next(i for i in m.entry.instrs if i.opcode == "optimization-barrier")
  assert diff in barrier.operands or diff in barrier.operands[0].operands


def test_softmax_one_kernel_exp_computed_once():
  # The row max and the row sum are read through broadcasts that drop the minor dim: the
  # emitter computes each once per row (hoisted out of the minor loop). exp(x - max) is read
  # by the row sum and by the division at different minor positions of the same row: the
  # emitter computes it once per row into a row buffer (fusion.row_cached). One kernel; exp
  # appears once and is evaluated once per element.
  m = fused(softmax, normal(8, 16))
  (f,) = fusions(m)
  assert f.attrs["kind"] == "kInput" and f.called[0].root.opcode == "divide"
  assert inner_ops(m).count("exponential") == 1 and inner_ops(m).count("reduce") == 2
  comp = f.called[0]
  (e,) = [i for i in comp.instrs if i.opcode == "exponential"]
  assert fusion.row_cached(comp.root, {i.id for i in comp.instrs}, e)
  assert fusion.symbolic_count(comp.root, {i.id for i in comp.instrs}, e) == 1.0


def test_row_cache_only_within_rows():
  # exp read at two minor positions of the same row: row-cached (one kernel). exp read in
  # another row (a column sum: exp, column sum, division) or through a transpose: materialized.
  x = normal(6, 9)
  one = lambda x: (lambda e: e / e.sum(-1, keepdims=True))(jnp.exp(x))
  two = lambda x: (lambda e: e / e.sum(0, keepdims=True))(jnp.exp(x))
  three = lambda x: (lambda e: e.T * e.sum(-1))(jnp.exp(x))
  for f, n in ((one, 1), (two, 3), (three, 3)):
    m = fused(f, x)
    assert len(fusions(m)) == n and inner_ops(m).count("exponential") == 1, f
    expected = hlo_eval.evaluate(lowered(f, x), [x])[0]
    np.testing.assert_allclose(np.asarray(ember.jit(f)(x)), expected, rtol=2e-6)


def test_expensive_producer_materialized_cheap_producer_duplicated():
  x = normal(6)
  e = lambda x: (lambda e: (e + 1, e * 2))(jnp.exp(x))
  m = fused(e, x)
  assert len(fusions(m)) == 3 and inner_ops(m).count("exponential") == 1
  c = lambda x: (lambda a: (a + 1, a * 2))(x * 3)
  m = fused(c, x)
  assert len(fusions(m)) == 2 and inner_ops(m).count("multiply") == 3   # x*3 in both, a*2
  assert all(o.opcode == "parameter" for f in fusions(m) for o in f.operands)


def test_expensive_producer_read_through_broadcast():
  # sin(x)[:, None] is computed once per row (hoisted out of the minor loop): one kernel.
  # sin(x)[None, :] would be recomputed for every row: sin stays a kernel of its own.
  x, y = normal(5), normal(5, 7)
  m = fused(lambda x, y: jnp.sin(x)[:, None] + y, x, y)
  assert len(fusions(m)) == 1 and inner_ops(m).count("sine") == 1
  m = fused(lambda x, y: jnp.sin(x)[None, :] + y.T, normal(5), y)
  assert len(fusions(m)) == 2 and inner_ops(m).count("sine") == 1
  m = fused(lambda x, y: (x * 2)[:, None] + y, x, y)       # cheap: recomputed per element
  assert len(fusions(m)) == 1


def test_reduce_fused_with_same_index_consumers_only():
  m = fused(CASES["reduce_feeds_elementwise"][0], normal(4, 5))
  (f,) = fusions(m)
  assert f.attrs["kind"] == "kInput"
  s = lambda x: (lambda s: (s + 1, s * 2))(jnp.sum(x, 1))
  m = fused(s, normal(4, 5))
  assert len(fusions(m)) == 3 and inner_ops(m).count("reduce") == 1


def test_non_fusible_ops_stay_outside():
  f, args = CASES["dot_epilogue_prologue"]
  m = fused(f, *args)
  ops = [i.opcode for i in m.entry.instrs]
  assert ops.count("dot") == 1 and "dot" not in inner_ops(m)
  dot = next(i for i in m.entry.instrs if i.opcode == "dot")
  assert all(o.opcode == "fusion" for o in dot.operands[:1])     # exp(x) is a fusion before it
  m = fused(CASES["sort_then_elementwise"][0], normal(3, 5))
  assert [i.opcode for i in m.entry.instrs].count("sort") == 1 and "sort" not in inner_ops(m)


def test_large_constants_stay_data_scalars_are_fused():
  table = np.arange(12, dtype=F32).reshape(3, 4)
  m = fused(lambda x: x * table + 2.0, normal(3, 4))
  consts = [i for i in m.entry.instrs if i.opcode == "constant"]
  assert [c.shape.dims for c in consts] == [(3, 4)]
  (f,) = fusions(m)
  assert consts[0] in f.operands
  assert all(i.shape.rank == 0 for i in f.called[0].instrs if i.opcode == "constant")


def test_variadic_reduce_and_its_elements():
  f, args = CASES["argmax_and_max"]
  m = check_values(f, *args)
  # argmax's two-operand reduce is read through get-tuple-element inside its fusion or, when
  # materialized, at the entry (never as a tuple parameter)
  for f in fusions(m):
    assert all(isinstance(p.shape, hlo.Shape) for p in f.called[0].params)


def test_integer_division_is_expensive_float_division_cheap():
  i32, f32 = hlo.Shape(np.dtype("int32"), (4,)), hlo.Shape(np.dtype("float32"), (4,))
  p = hlo.Instr("parameter", i32, attrs={"number": 0})
  q = hlo.Instr("parameter", f32, attrs={"number": 1})
  table = [(hlo.Instr("divide", i32, [p, p]), True), (hlo.Instr("remainder", i32, [p, p]), True),
           (hlo.Instr("divide", f32, [q, q]), False), (hlo.Instr("add", f32, [q, q]), False),
           (hlo.Instr("exponential", f32, [q]), True), (hlo.Instr("power", f32, [q, q]), True),
           (hlo.Instr("broadcast", f32, [q], {"dimensions": (0,)}), False)]
  for instr, expensive in table:
    assert fusion.is_expensive(instr) == expensive, instr.opcode


def test_read_factor_table():
  S = lambda *d: hlo.Shape(np.dtype("float32"), d)
  x = hlo.Instr("parameter", S(4, 5), attrs={"number": 0})
  s = hlo.Instr("parameter", S(), attrs={"number": 1})
  b = hlo.Instr("broadcast", S(3, 4, 5), [x], {"dimensions": (1, 2)})
  r = hlo.Instr("reduce", S(4), [x, s], {"dimensions": (1,)})
  sl = hlo.Instr("slice", S(2, 5), [x], {"start": (0, 0), "limit": (4, 5), "strides": (2, 1)})
  add = hlo.Instr("add", S(4, 5), [x, x])
  t = hlo.Instr("transpose", S(5, 4), [x], {"dimensions": (1, 0)})
  assert fusion.read_factor(b, 0) == (3.0, False)
  assert fusion.read_factor(r, 0) == (1.0, False) and fusion.read_factor(r, 1) == (4.0, False)
  assert fusion.read_factor(sl, 0) == (0.5, False)
  assert fusion.read_factor(add, 1) == (1.0, True)
  assert fusion.read_factor(t, 0) == (1.0, False)


def test_fusion_size_is_bounded_and_values_kept():
  def chain(x):
    for k in range(fusion.MAX_FUSED_INSTRS + 50):
      x = x * 1.0001 + 0.5 if k % 2 else x - 0.25
    return x
  m = check_values(chain, normal(3))
  assert len(fusions(m)) >= 2
  for f in fusions(m):
    ops = [i for i in f.called[0].instrs if i.opcode != "parameter"]
    assert len(ops) <= fusion.MAX_FUSED_INSTRS


def test_running_twice_changes_nothing():
  f, args = CASES["layernorm"]
  m = fused(f, *args)
  text = hlo.to_text(m)
  assert hlo.to_text(fusion.run(m)) == text


def test_metadata_of_the_root_and_scopes_kept():
  def f(x):
    with ember.named_scope("inner"):
      y = jnp.sin(x)
    return y * 2
  m = fused(f, normal(3))
  (fu,) = fusions(m)
  assert fu.metadata.op_name == "jit(f)/mul"
  assert any(i.metadata.op_name == "jit(f)/inner/sin" for i in fu.called[0].instrs)


def test_unit_dim_broadcast_then_reshape_is_the_operand():
  # algsimp: broadcast_in_dim to [n,1,d] then reshape to [n,d] is the operand itself (X[:, None]
  # in pairwise distances, keepdims reductions), so fusions see no reshape index maps
  opt = lambda f, *args: pipeline.optimize(lowered(f, *args))
  X, Y = normal(10, 4), normal(6, 4)
  m = opt(lambda X, Y: jnp.sqrt(jnp.sum((X[:, None, :] - Y[None, :, :]) ** 2, -1)), X, Y)
  (f,) = fusions(m)
  assert "reshape" not in inner_ops(m)
  m = opt(lambda x: x - x.max(-1, keepdims=True), normal(6, 5))
  assert "reshape" not in inner_ops(m)
  # a broadcast that really expands a dim, then a reshape: kept (not a no-op)
  expand = lambda v: lax.broadcast_in_dim(v, (3, 1, 4), (1, 2)).reshape(12)
  assert {"broadcast", "reshape"} <= set(inner_ops(opt(expand, normal(1, 4))))
  unit = lambda v: lax.broadcast_in_dim(v, (5, 1, 4), (0, 2)).reshape(5, 4) * 2
  assert "reshape" not in inner_ops(opt(unit, normal(5, 4)))
  for f, args in ((unit, (normal(5, 4),)), (expand, (normal(1, 4),))):
    expected = hlo_eval.evaluate(lowered(f, *args), list(args))
    np.testing.assert_array_equal(np.asarray(ember.jit(f)(*args)), expected[0])
