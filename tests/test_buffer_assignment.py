"""Buffer assignment: every entry value gets a slot, live values never share memory, temps
reuse memory by liveness, in-place elementwise kernels write over dying operands (also into
outputs), donated parameters hold their outputs, outputs that are parameters/constants/repeats
are copied. The strongest check runs the optimized module instruction by instruction with
the reference evaluator, reading and writing only the assigned memory (one arena, one
buffer per argument and output): a wrong overlap gives wrong numbers."""
import numpy as np
import pytest

import ember
import ember.numpy as jnp
from ember import lax
from ember._src.base import flags as flags_lib
from ember._src.hlo import graph as hlo, evaluator as hlo_eval
from ember._src.lower import lower_jaxpr
from ember._src.passes import buffer_assignment as ba
from ember._src.passes import pipeline

RNG = np.random.default_rng(1)
F32 = np.float32
NO_STORAGE = ("parameter", "constant", "tuple", "get-tuple-element", "optimization-barrier")


def normal(*shape):
  return RNG.standard_normal(shape).astype(F32)


def optimized(f, *args, donated=(), fuse=True):
  m = lower_jaxpr(ember.make_jaxpr(f)(*args), getattr(f, "__name__", "f"), donated=donated)
  flags = flags_lib.Flags(disable_passes=frozenset() if fuse else frozenset({"fusion"}))
  return pipeline.run_passes(m, flags)


class Memory:
  """The buffers one execution of an assignment uses."""

  def __init__(self, A, args):
    self.A = A
    self.args = [bytearray(np.ascontiguousarray(a).tobytes()) for a in args]
    entry = A.module.entry
    outs = entry.root.operands if entry.root.opcode == "tuple" else [entry.root]
    self.outs = [bytearray(o.shape.nbytes) for o in outs]
    self.arena = bytearray(A.temp_size)

  def view(self, slot, shape):
    if slot.kind == "constant":
      return self.A.constants[slot.index].attrs["value"]
    buf = {"temp": self.arena, "parameter": None, "output": None}[slot.kind]
    if slot.kind == "parameter":
      buf = self.args[slot.index]
    elif slot.kind == "output":
      buf = self.outs[slot.index]
    assert slot.size == shape.nbytes and slot.offset + slot.size <= len(buf)
    return np.frombuffer(buf, shape.dtype, shape.size, slot.offset).reshape(shape.dims)

  def read(self, instr):
    s = self.A.slot(instr)
    if isinstance(s, ba.Slot):
      return self.view(s, instr.shape).copy()
    return tuple(self.view(x, e).copy() for x, e in zip(s, instr.shape.elements))

  def write(self, instr, value):
    s = self.A.slot(instr)
    pairs = [(s, instr.shape, value)] if isinstance(s, ba.Slot) else \
        zip(s, instr.shape.elements, value)
    for slot, shape, v in pairs:
      assert slot.kind != "constant"
      self.view(slot, shape)[...] = v


def run_in_assigned_memory(A, args):
  """Execute the entry computation in schedule order inside the assigned buffers."""
  mem = Memory(A, args)
  for i in A.module.entry.instrs:
    if i.opcode not in NO_STORAGE:
      mem.write(i, hlo_eval.eval_instr(i, [mem.read(o) for o in i.operands]))
  results = [mem.view(s, o.shape).copy() for s, o in zip(A.outputs, _outs(A.module))]
  return results, mem


def _outs(module):
  r = module.entry.root
  return list(r.operands) if r.opcode == "tuple" else [r]


def check_no_live_overlap(A):
  """Values alive at the same time never share bytes, unless one dies exactly where the other
  is defined by an in-place kernel."""
  entry = A.module.entry
  vals = []
  for i in entry.instrs:
    if i.opcode in NO_STORAGE:
      continue
    s = A.slot(i)
    for k, slot in enumerate((s,) if isinstance(s, ba.Slot) else s):
      vals.append((i, slot, A.live_ranges[i.name]))
  for n, (i, s, (a0, a1)) in enumerate(vals):
    if s.kind == "temp":
      assert s.offset % ba.ALIGNMENT == 0 and s.offset + s.size <= A.temp_size
    for j, t, (b0, b1) in vals[n + 1:]:
      if (s.kind, s.index) != (t.kind, t.index) or i is j:
        continue
      if s.offset + s.size <= t.offset or t.offset + t.size <= s.offset or 0 in (s.size, t.size):
        continue
      touching = a1 == b0 or b1 == a0
      assert a1 < b0 or b1 < a0 or touching, (i.name, j.name, (a0, a1), (b0, b1))
      if touching:
        later = j if b0 >= a0 else i
        assert later.opcode in ("fusion", "copy", "scatter") or later.opcode in hlo.ELEMENTWISE


def pairwise_barrier(X, Y):
  diff = lax.optimization_barrier(X[:, None, :] - Y[None, :, :])
  return jnp.sqrt(jnp.sum(diff ** 2, axis=-1))


def mlp(x, w1, w2):
  h = jnp.tanh(x @ w1)
  return jax_softmax(h @ w2)


def jax_softmax(x):
  return ember.nn.softmax(x, axis=-1)


CASES = {
    "sin_mul_add": (lambda x, a, b: jnp.sin(x) * a + b, (normal(7, 5), F32(2), F32(1))),
    "exp_log_add": (lambda x, y: jnp.exp(jnp.log(x) + y), (np.abs(normal(4, 6)), normal(4, 6))),
    "softmax": (jax_softmax, (normal(5, 7),)),
    "pairwise_barrier": (pairwise_barrier, (normal(5, 3), normal(6, 3))),
    "mlp": (mlp, (normal(4, 6), normal(6, 8), normal(8, 3))),
    "dot_chain": (lambda x: ((x @ x) @ x) @ x, (normal(4, 4),)),
    "argmax_and_max": (lambda x: (jnp.argmax(x, 1), jnp.max(x, 1)), (normal(4, 9),)),
    "sort_pair": (lambda x, y: lax.sort((x * 2, y), num_keys=1), (normal(3, 5), normal(3, 5))),
    "scatter": (lambda x, i: x.at[i].add(2.0) * 3, (normal(6), np.array([1, 1, 4], np.int32))),
    "outputs_repeat_param_const": (lambda x, y: (x, y + 1, y + 1, jnp.float32(3)),
                                   (normal(3), normal(3))),
    "same_output_twice": (lambda x: (lambda y: (y, y))(jnp.sin(x)), (normal(3),)),
    "empty": (lambda x: (jnp.sin(x), jnp.sum(x, 0)), (np.zeros((0, 3), F32),)),
    "mixed_dtypes": (lambda x: ((x * 2).astype(jnp.int32), (x > 0).astype(jnp.float16)),
                     (normal(5),)),
    "dus_after_dot": (lambda a, u: lax.dynamic_update_slice(a @ a, u, (1, 2)),
                      (normal(4, 4), normal(2, 2))),
    "scatter_after_dot": (lambda a, i: (a @ a).at[i].add(2.0),
                          (normal(4, 4), np.array([3, 0], np.int32))),
    "transposes": (lambda x: jnp.exp(jnp.transpose(jnp.log(jnp.abs(x) + 1), (1, 0, 2))) + 1,
                   (normal(2, 3, 4),)),
}


@pytest.mark.parametrize("fuse", [True, False], ids=["fused", "unfused"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_correctly_in_assigned_memory(name, fuse):
  f, args = CASES[name]
  module = optimized(f, *args, fuse=fuse)
  ref = hlo_eval.evaluate(module, args)
  A = ba.assign_buffers(module)
  check_no_live_overlap(A)
  got, mem = run_in_assigned_memory(A, args)
  for g, r in zip(got, ref):
    np.testing.assert_array_equal(g, r)
  for a, buf in zip(args, mem.args):                      # arguments are never written
    assert bytes(buf) == np.ascontiguousarray(a).tobytes()


def test_seed_sizes_simple_and_unfused_chain_in_place():
  f, _ = CASES["sin_mul_add"]
  A = ba.assign_buffers(optimized(f, np.ones((1000, 1000), F32), F32(2), F32(1)))
  assert (A.argument_size, A.output_size, A.temp_size, A.alias_size) == (4_000_008, 4_000_000, 0, 0)
  f, (x, y) = CASES["exp_log_add"]
  m = optimized(f, x, y, fuse=False)
  A = ba.assign_buffers(m)
  kernels = [i for i in m.entry.instrs if i.opcode == "fusion"]
  assert len(kernels) == 3 and A.temp_size == 0       # log and add computed in the output
  assert [A.slot(k) for k in kernels] == [ba.Slot("output", 0, 0, x.nbytes)] * 3


def test_liveness_reuse_of_temps():
  n = 4 * 4 * 4
  x = normal(4, 4)
  m = optimized(CASES["dot_chain"][0], x)
  A = ba.assign_buffers(m)
  dots = [i for i in m.entry.instrs if i.opcode == "dot"]
  slots = [A.slot(d) for d in dots]
  assert [s.kind for s in slots] == ["temp", "temp", "output"]
  # x@x and (x@x)@x are alive together (a dot is not in place); the arena holds both only
  assert slots[0].offset != slots[1].offset and A.temp_size == 2 * max(n, ba.ALIGNMENT)
  x = normal(8, 8)
  m = optimized(lambda x: (((x @ x) @ x) @ x) @ x, x)
  A = ba.assign_buffers(m)
  slots = [A.slot(d) for d in m.entry.instrs if d.opcode == "dot"]
  assert slots[2].offset == slots[0].offset            # the first product's space is reused
  assert A.temp_size == 2 * x.nbytes


def test_in_place_only_for_same_index_kernels():
  x = normal(3, 3)
  m = optimized(lambda x: jnp.log(x).T + x, x, fuse=False)
  A = ba.assign_buffers(m)
  log, tr, add = [i for i in m.entry.instrs if i.opcode == "fusion"]
  assert A.slot(log).kind == "temp"                     # a transpose may not overwrite its input
  assert A.slot(tr) == A.slot(add) == ba.Slot("output", 0, 0, x.nbytes)
  assert A.temp_size == max(x.nbytes, ba.ALIGNMENT)
  assert ba._identity_params(add.called[0]) == {0, 1}
  assert ba._identity_params(tr.called[0]) == set()


@pytest.mark.parametrize("name", ["dus_after_dot", "scatter_after_dot"])
def test_update_in_place_over_a_dying_operand(name):
  f, args = CASES[name]
  m = optimized(f, *args)
  A = ba.assign_buffers(m)
  dot = next(i for i in m.entry.instrs if i.opcode == "dot")
  update = m.entry.root
  assert update.opcode in ("fusion", "scatter") and update.operands[0] is dot
  assert A.slot(dot) == A.slot(update) == ba.Slot("output", 0, 0, 64)   # the dot writes the output


def test_output_copies():
  f, (x, y) = CASES["outputs_repeat_param_const"]
  m = optimized(f, x, y)
  A = ba.assign_buffers(m)
  outs = m.entry.root.operands
  assert outs[0].opcode == "copy" and outs[0].operands[0].opcode == "parameter"
  assert outs[2].opcode == "copy" and outs[2].operands[0] is outs[1]
  assert outs[3].opcode == "copy" and outs[3].operands[0].opcode == "constant"
  assert [(s.kind, s.index) for s in A.outputs] == [("output", k) for k in range(4)]
  assert ba.insert_output_copies(m) == 0                # idempotent


def test_donated_parameter_holds_the_output():
  x = normal(4, 5)
  f = lambda x, y: jnp.exp(x) * 2 + y
  m = optimized(f, x, x, donated=(0,))
  assert m.input_output_alias == {0: 0}
  A = ba.assign_buffers(m)
  assert A.output_aliases == {0: 0} and A.outputs[0] == ba.Slot("parameter", 0, 0, x.nbytes)
  assert A.alias_size == x.nbytes and A.output_size == x.nbytes and A.temp_size == 0
  got, mem = run_in_assigned_memory(A, [x, x])
  ref = np.exp(x.astype(np.float64)) * 2 + x
  np.testing.assert_allclose(got[0], ref, rtol=1e-6)
  np.testing.assert_array_equal(np.frombuffer(mem.args[0], F32).reshape(4, 5), got[0])


def test_donation_by_flag_list_and_pass_through():
  x = normal(3)
  m = optimized(lambda x, y: (x, y * 2), x, x)
  A = ba.assign_buffers(m, donated=[True, False])          # output 0 is x itself: no copy
  assert A.output_aliases == {0: 0} and A.outputs[0] == ba.Slot("parameter", 0, 0, x.nbytes)
  assert A.copies_inserted == 0 and A.outputs[1].kind == "output"
  m = optimized(lambda x, y: (y * 2, x), x, x)             # JAX's matching: x goes to output 0,
  A = ba.assign_buffers(m, donated=[0])                    # which x outlives (it is output 1)
  assert A.output_aliases == {} and A.copies_inserted == 1
  got, _ = run_in_assigned_memory(A, [x, x])
  np.testing.assert_array_equal(got[1], x)


def test_donation_dropped_when_the_parameter_is_read_later():
  x = normal(3)
  m = optimized(lambda x: (jnp.sin(x), x), x, donated=(0,))   # x is returned after sin
  assert m.input_output_alias == {0: 0}
  A = ba.assign_buffers(m)
  assert A.output_aliases == {} and A.alias_size == 0 and A.outputs[0].kind == "output"
  got, _ = run_in_assigned_memory(A, [x])
  np.testing.assert_allclose(got[0], np.sin(x.astype(np.float64)), rtol=1e-6)
  np.testing.assert_array_equal(got[1], x)


def test_tuple_values_and_barrier_forward_slots():
  N, M, d = 5, 6, 3
  m = optimized(pairwise_barrier, normal(N, d), normal(M, d))
  A = ba.assign_buffers(m)
  barrier = next(i for i in m.entry.instrs if i.opcode == "optimization-barrier")
  gte = next(i for i in m.entry.instrs if i.opcode == "get-tuple-element")
  diff = next(i for i in m.entry.instrs if i.opcode == "fusion")
  assert A.slot(gte) == A.slot(diff) and A.slot(barrier) == (A.slot(diff),)
  assert A.temp_size >= N * M * d * 4
  m = optimized(CASES["argmax_and_max"][0], normal(4, 9))
  A = ba.assign_buffers(m)
  tup = next(i for i in m.entry.instrs
             if i.opcode == "fusion" and isinstance(i.shape, hlo.TupleShape))
  assert isinstance(A.slot(tup), tuple) and len(A.slot(tup)) == 2
  assert A.slot(tup, 1) == A.outputs[0]


def test_dump_text():
  f, (x, y) = CASES["exp_log_add"]
  m = optimized(f, x, y, fuse=False)
  A = ba.assign_buffers(m)
  text = A.to_text()
  assert text.startswith(f"BufferAssignment for {m.name}")
  assert "temp_size=0" in text and "output 0: size 96, live out as output 0" in text
  assert "value %wrapped_log: f32[4,6]{1,0} offset=0 size=96 live=[2, 3]" in text
  assert "parameter 1: size 96" in text
  assert repr(A) == "BufferAssignment(argument_size=192, output_size=96, alias_size=0, temp_size=0)"
