"""The constant-folding pass (ember/_src/passes/constant_folding.py): what folds (nested
expressions, reductions of iota/broadcast, tuple-valued instructions, inside called
computations), what does not (large results, broadcast/iota themselves, side effects,
barriers, loops), metadata kept, and values unchanged (the module is evaluated before and
after folding on random inputs with the reference evaluator)."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember._src.hlo import graph as hlo
from ember._src.hlo.evaluator import evaluate
from ember._src.passes import constant_folding

F32, I32, BF16 = np.dtype(np.float32), np.dtype(np.int32), np.dtype("bfloat16")
MD = hlo.Metadata("jit(f)/my_scope/sin", "f.py", 7)


def S(dt, *dims):
  return hlo.Shape(np.dtype(dt), tuple(dims))


class Builder:
  def __init__(self):
    self.m = hlo.Module("jit_f")
    self.c = self.m.new_computation("main")
    self.m.entry = self.c

  def param(self, dt, *dims):
    n = len(self.c.params)
    return self.c.add(hlo.Instr("parameter", S(dt, *dims), attrs={"number": n}, name=f"p{n}"))

  def const(self, value, dt=F32, comp=None):
    v = np.asarray(value, dt)
    return (comp or self.c).add(hlo.Instr("constant", S(v.dtype, *v.shape), attrs={"value": v}))

  def op(self, opcode, shape, *operands, called=(), md=None, comp=None, **attrs):
    return (comp or self.c).add(hlo.Instr(opcode, shape, operands, attrs, called, metadata=md))

  def add_comp(self, dt=F32):
    c = self.m.new_computation("add")
    a, b = (c.add(hlo.Instr("parameter", S(dt), attrs={"number": i})) for i in (0, 1))
    c.root = c.add(hlo.Instr("add", S(dt), [a, b]))
    return c

  def done(self, root):
    self.c.root = root
    return self.m


def opcodes(m):
  return [i.opcode for c in m.called_computations() for i in c.instrs]


def check_same_values(build, arg_shapes, seed=0):
  """Fold a fresh copy of the module and compare its outputs to the unfolded one's."""
  rng = np.random.default_rng(seed)
  args = [rng.normal(size=s).astype(dt) for dt, s in arg_shapes]
  before = evaluate(build(), args)
  folded = constant_folding.run(build())
  after = evaluate(folded, args)
  assert len(before) == len(after)
  for b, a in zip(before, after):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)
  return folded


# --- the seed case --------------------------------------------------------------------------

def _seed_module():
  """v*sin(2.0) + arange(4.0).sum(), instruction for instruction as lowering emits it."""
  b = Builder()
  v = b.param(F32, 4)
  s = b.op("sine", S(F32), b.const(2.0), md=MD)
  mul = b.op("multiply", S(F32, 4), v, b.op("broadcast", S(F32, 4), s, dimensions=()))
  io = b.op("iota", S(F32, 4), iota_dimension=0)
  r = b.op("reduce", S(F32), io, b.const(0.0), dimensions=(0,), called=[b.add_comp()],
           md=hlo.Metadata("jit(f)/reduce_sum"))
  return b.done(b.op("add", S(F32, 4), mul, b.op("broadcast", S(F32, 4), r, dimensions=())))


def test_seed_case_leaves_no_sine_and_no_reduce():
  m = check_same_values(_seed_module, [(F32, (4,))])
  text = hlo.to_text(m)
  assert "sine(" not in text and "reduce(" not in text and "iota(" not in text
  consts = [i for i in m.entry.instrs if i.opcode == "constant"]
  by_md = {i.metadata.op_name: i for i in consts}
  assert by_md[MD.op_name].metadata == MD                       # the folded root's metadata
  assert by_md[MD.op_name].attrs["value"] == np.float32(np.sin(2.0))
  assert by_md["jit(f)/reduce_sum"].attrs["value"] == 6.0
  assert all(c.attrs["value"].dtype == F32 and c.attrs["value"].shape == () for c in consts)
  # the remaining program: the two broadcasts of the folded scalars, multiply, add
  assert sorted(opcodes(m)) == sorted(["parameter", "constant", "broadcast", "multiply",
                                       "constant", "broadcast", "add"])


def test_seed_case_through_lowering():
  lower = pytest.importorskip("ember._src.lower")
  from ember._src import core
  f = lambda v: v * jnp.sin(2.0) + jnp.arange(4.0).sum()
  x = np.arange(4, dtype=F32)
  jaxpr, consts = core.hoist_consts(ember.make_jaxpr(f)(x))
  m = constant_folding.run(lower.lower_jaxpr(jaxpr, "f"))
  text = hlo.to_text(m)
  assert "sine(" not in text and "reduce(" not in text
  out, = evaluate(m, list(consts) + [x])
  np.testing.assert_allclose(out, np.asarray(f(x)), rtol=1e-6)


# --- what folds -----------------------------------------------------------------------------

def test_nested_chain_folds_to_one_constant():
  def build():
    b = Builder()
    x = b.param(F32, 3)
    c = b.const([0.5, -1.0, 2.0])
    e = b.op("exponential", S(F32, 3), b.op("negate", S(F32, 3), c))
    t = b.op("add", S(F32, 3), e, b.op("convert", S(F32, 3), b.const([1, 2, 3], I32)))
    folded_root = b.op("tanh", S(F32, 3), t, md=MD)
    return b.done(b.op("multiply", S(F32, 3), x, folded_root))
  m = check_same_values(build, [(F32, (3,))])
  assert opcodes(m) == ["parameter", "constant", "multiply"]
  c = m.entry.instrs[1]
  assert c.metadata == MD
  np.testing.assert_allclose(c.attrs["value"], np.tanh(np.exp(-np.array([0.5, -1, 2])) +
                                                        [1, 2, 3]), rtol=1e-6)


def test_reductions_of_large_iota_and_broadcast_fold():
  def build():
    b = Builder()
    x = b.param(F32)
    io = b.op("iota", S(F32, 3000), iota_dimension=0)
    r1 = b.op("reduce", S(F32), io, b.const(0.0), dimensions=(0,), called=[b.add_comp()])
    bc = b.op("broadcast", S(I32, 50, 60), b.const(2, I32), dimensions=())
    r2 = b.op("reduce", S(I32, 60), bc, b.const(1, I32), dimensions=(0,),
              called=[b.add_comp(I32)])
    return b.done(b.op("tuple", hlo.TupleShape((S(F32), S(I32, 60))),
                       b.op("add", S(F32), x, r1), r2))
  m = check_same_values(build, [(F32, ())])
  assert "reduce" not in opcodes(m) and "iota" not in opcodes(m)
  r2 = m.entry.root.operands[1]      # a uniform result: broadcast of a scalar constant
  assert r2.opcode == "broadcast" and r2.operands[0].opcode == "constant"
  assert r2.operands[0].attrs["value"] == 101 and r2.operands[0].attrs["value"].dtype == I32


def test_tuple_valued_instructions_fold_through_get_tuple_element():
  """argmax of a constant: a variadic reduce (tuple-shaped) read through gte."""
  def build():
    b = Builder()
    x = b.param(I32, 2)
    vals = b.const([[1.0, 7.0, 3.0], [9.0, -1.0, 9.0]])
    io = b.op("iota", S(I32, 2, 3), iota_dimension=1)
    comb = b.m.new_computation("argmax")
    ps = [comb.add(hlo.Instr("parameter", S(dt), attrs={"number": i}))
          for i, dt in enumerate([F32, I32, F32, I32])]
    gt = comb.add(hlo.Instr("compare", S(np.bool_), [ps[0], ps[2]], {"direction": "GE"}))
    comb.root = comb.add(hlo.Instr("tuple", hlo.TupleShape((S(F32), S(I32))), [
        comb.add(hlo.Instr("select", S(F32), [gt, ps[0], ps[2]])),
        comb.add(hlo.Instr("select", S(I32), [gt, ps[1], ps[3]]))]))
    r = b.op("reduce", hlo.TupleShape((S(F32, 2), S(I32, 2))), vals, io, b.const(-np.inf),
             b.const(0, I32), dimensions=(1,), called=[comb])
    idx = b.op("get-tuple-element", S(I32, 2), r, index=1)
    return b.done(b.op("add", S(I32, 2), x, idx))
  m = check_same_values(build, [(I32, (2,))])
  assert opcodes(m) == ["parameter", "constant", "add"]
  assert m.entry.root.operands[1].attrs["value"].tolist() == [1, 0]


def test_folding_inside_called_computations():
  def build():
    b = Builder()
    x = b.param(F32, 2)
    fc = b.m.new_computation("fused")
    fc.is_fusion = True
    p = fc.add(hlo.Instr("parameter", S(F32, 2), attrs={"number": 0}))
    k = b.op("multiply", S(F32), b.const(3.0, comp=fc), b.const(0.5, comp=fc), comp=fc)
    fc.root = b.op("add", S(F32, 2), p, b.op("broadcast", S(F32, 2), k, dimensions=(),
                                             comp=fc), comp=fc)
    fus = b.op("fusion", S(F32, 2), x, called=[fc], kind="kLoop")
    # a call whose operands are all constant folds entirely
    g = b.m.new_computation("g")
    q = g.add(hlo.Instr("parameter", S(F32, 2), attrs={"number": 0}))
    g.root = b.op("sqrt", S(F32, 2), q, comp=g)
    call = b.op("call", S(F32, 2), b.const([4.0, 9.0]), called=[g])
    return b.done(b.op("subtract", S(F32, 2), fus, call))
  m = check_same_values(build, [(F32, (2,))])
  fused = m.entry.root.operands[0].called[0]
  assert [i.opcode for i in fused.instrs] == ["parameter", "constant", "broadcast", "add"]
  assert fused.instrs[1].attrs["value"] == 1.5
  call = m.entry.root.operands[1]
  assert call.opcode == "constant" and call.attrs["value"].tolist() == [2.0, 3.0]


def test_uniform_results_become_broadcast_of_a_scalar():
  def build():
    b = Builder()
    x = b.param(F32, 4, 8)
    ones = b.op("broadcast", S(F32, 4, 8), b.const(1.0), dimensions=())
    twos = b.op("add", S(F32, 4, 8), ones, ones, md=MD)
    mixed = b.op("add", S(F32, 4, 8), twos, b.op("iota", S(F32, 4, 8), iota_dimension=1))
    return b.done(b.op("multiply", S(F32, 4, 8), b.op("multiply", S(F32, 4, 8), x, twos), mixed))
  m = check_same_values(build, [(F32, (4, 8))])
  inner, mixed = m.entry.root.operands
  two = inner.operands[1]
  assert two.opcode == "broadcast" and two.metadata == MD
  assert two.operands[0].opcode == "constant" and two.operands[0].attrs["value"] == 2.0
  assert two.operands[0].attrs["value"].shape == () and two.operands[0].metadata == MD
  assert mixed.opcode == "constant" and mixed.attrs["value"][0].tolist() == list(range(2, 10))


def test_whole_computation_folds_and_dtypes_are_kept():
  def build():
    b = Builder()
    b.param(F32, 1)   # unused: parameters stay (they fix the signature)
    h = b.op("convert", S(BF16, 3), b.const([1.0 + 2**-9, 3.0, -0.1]))
    i8 = b.op("convert", S(np.int8, 3), b.op("multiply", S(F32, 3), b.const([100.0, -200.0, 2.7]),
                                             b.const([2.0, 2.0, 2.0])))
    return b.done(b.op("tuple", hlo.TupleShape((h.shape, i8.shape)), h, i8))
  m = check_same_values(build, [(F32, (1,))])
  assert m.entry.root.opcode == "tuple"
  h, i8 = (o.attrs["value"] for o in m.entry.root.operands)
  assert h.dtype == BF16 and h.tolist() == np.array([1.0, 3.0, -0.1], BF16).tolist()
  assert i8.dtype == np.int8 and i8.tolist() == [127, -128, 5]    # XLA's saturation


# --- what does not fold ---------------------------------------------------------------------

def test_large_results_and_broadcast_iota_are_not_materialized():
  def build():
    b = Builder()
    x = b.param(F32, 2000)
    big = b.op("add", S(F32, 2000), b.op("iota", S(F32, 2000), iota_dimension=0),
               b.op("broadcast", S(F32, 2000), b.const(1.0), dimensions=()))
    small_bc = b.op("broadcast", S(F32, 4), b.const(2.0), dimensions=())
    small_io = b.op("iota", S(F32, 4), iota_dimension=0)
    s = b.op("slice", S(F32, 4), x, start=(0,), limit=(4,), strides=(1,))
    small = b.op("multiply", S(F32, 4), b.op("add", S(F32, 4), s, small_bc), small_io)
    return b.done(b.op("tuple", hlo.TupleShape((S(F32, 2000), S(F32, 4))),
                       b.op("multiply", S(F32, 2000), x, big), small))
  m = check_same_values(build, [(F32, (2000,))])
  ops = opcodes(m)
  assert ops.count("iota") == 2 and ops.count("broadcast") == 2
  assert all(i.attrs["value"].size == 1 for i in m.entry.instrs if i.opcode == "constant")
  assert m.entry.root.operands[0].operands[1].opcode == "add"      # 2000 elements: kept


def test_small_results_of_large_operands_fold_but_not_beyond_the_eval_limit(monkeypatch):
  def build():
    b = Builder()
    x = b.param(F32)
    io = b.op("iota", S(F32, 100, 100), iota_dimension=1)
    r = b.op("reduce", S(F32), io, b.const(0.0), dimensions=(0, 1), called=[b.add_comp()])
    return b.done(b.op("add", S(F32), x, r))
  assert "reduce" not in opcodes(check_same_values(build, [(F32, ())]))
  monkeypatch.setattr(constant_folding, "MAX_EVAL_ELEMENTS", 5000)
  assert "reduce" in opcodes(constant_folding.run(build()))


@pytest.mark.parametrize("kind", ["custom-call", "optimization-barrier", "rng-bit-generator",
                                  "while"])
def test_side_effects_barriers_and_loops_are_kept(kind):
  b = Builder()
  x = b.param(F32, 2)
  c = b.op("negate", S(F32, 2), b.const([1.0, 2.0]))      # this part folds
  if kind == "custom-call":
    keep = b.op("custom-call", S(F32, 2), c, target="side_effect")
  elif kind == "optimization-barrier":
    keep = b.op("optimization-barrier", S(F32, 2), c)
  elif kind == "rng-bit-generator":
    keep = b.op("convert", S(F32, 2), b.op("rng-bit-generator", S(np.uint32, 2),
                                           b.const([1, 2], np.uint32)))
  else:
    cond = b.m.new_computation("cond")
    cond.add(hlo.Instr("parameter", S(F32, 2), attrs={"number": 0}))
    cond.root = cond.add(hlo.Instr("constant", S(np.bool_), attrs={"value": np.bool_(False)}))
    body = b.m.new_computation("body")
    body.root = body.add(hlo.Instr("parameter", S(F32, 2), attrs={"number": 0}))
    keep = b.op("while", S(F32, 2), c, called=[cond, body])
  after = b.op("exponential", S(F32, 2), keep)              # depends on it: not folded
  m = constant_folding.run(b.done(b.op("add", S(F32, 2), x, after)))
  ops = opcodes(m)
  assert kind in ops and "exponential" in ops and "negate" not in ops


def test_nothing_constant_nothing_changes():
  b = Builder()
  x, y = b.param(F32, 3), b.param(F32, 3)
  m = b.done(b.op("add", S(F32, 3), b.op("sine", S(F32, 3), x), y))
  before = hlo.to_text(m)
  assert constant_folding.run(m) is m and hlo.to_text(m) == before


def test_evaluator_rejections_stay_code():
  """An instruction the evaluator refuses (LT on complex) is left for the backend to report."""
  b = Builder()
  z = b.const([1 + 1j], np.complex64)
  lt = b.op("compare", S(np.bool_, 1), z, z, direction="LT")
  m = constant_folding.run(b.done(b.op("not", S(np.bool_, 1), lt)))
  assert "compare" in opcodes(m) and "not" in opcodes(m)


def test_run_accepts_pipeline_flags():
  flags = pytest.importorskip("ember._src.base.flags")
  m = _seed_module()
  assert constant_folding.run(m, flags.get()) is m
  assert "sine" not in opcodes(m)
