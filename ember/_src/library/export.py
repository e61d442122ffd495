"""jax.export: a jitted function exported as a self-contained artifact, called again in this
process or, after serialize()/deserialize(), in another.

An `Exported` holds the function's calling convention (the flat input and output avals,
the argument and result pytrees), the StableHLO text ember lowers (`mlir_module()`), and
the lowered HLO module itself, which is what runs: `call` compiles it with ember's backend
(once per Exported), and under jit it is inlined into the caller's module (a `call` of the
module's entry, which the inline pass removes). Differentiation uses the exported VJP (as
JAX: `vjp()` exports the VJP of the original function; a deserialized Exported has one
only to the `vjp_order` it was serialized with).

Serialization (ember's own format, not JAX's flatbuffer: ember cannot parse StableHLO or
VHLO back, so the artifact carries the HLO module): a magic line, then JSON with the
fields, the trees (node kinds; custom nodes through register_pytree_node_serialization),
the StableHLO text and the module, pickled, which deserialize() reads back with an
unpickler that only builds ember's HLO classes, NumPy arrays and dtypes (the bytes must
still be trusted, as JAX's). A module that calls Python (callbacks) cannot be serialized.

ember has no shape polymorphism: every dimension is a constant (`is_symbolic_dim` is
False for all of them) and there is no symbolic_shape.
"""
from __future__ import annotations

import base64
import collections
import dataclasses
import io
import json
import pickle
import re
from typing import Any, Callable, Sequence

import numpy as np

from ember._src import core
from ember._src.base import dtypes, tree_util
from ember._src.core.api_util import ShapeDtypeStruct
from ember._src.driver import compilation
from ember._src.driver.jit import PjitFunction, jit
from ember._src.hlo import graph as hlo
from ember._src.library.numpy import creation as jnp_creation
from ember._src.transforms.ad import vjp as ad_vjp
from ember._src.transforms.custom_derivatives import custom_vjp

minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10
_MAGIC = b"ember.export/1\n"

# nodetype -> (serialized_name, serialize_auxdata); serialized_name -> (nodetype,
# deserialize_auxdata, from_children)
serialization_registry: dict = {}
deserialization_registry: dict = {}


class DisabledSafetyCheck:
  """A safety check skipped on (de)serialization: `platform()` (call on a platform the
  function was not exported for) or `custom_call(target)`."""

  @classmethod
  def platform(cls) -> "DisabledSafetyCheck":
    """Allows the calling platform to differ from the export platform."""
    return DisabledSafetyCheck("platform")

  @classmethod
  def custom_call(cls, target_name: str) -> "DisabledSafetyCheck":
    """Allows the serialization of a call target not known to be stable."""
    return DisabledSafetyCheck(f"custom_call:{target_name}")

  def is_custom_call(self) -> str | None:
    """The custom call target this check allows, if it is one."""
    m = re.match(r"custom_call:(.+)$", self._impl)
    return m.group(1) if m else None

  def __init__(self, _impl: str):
    self._impl = _impl

  def __str__(self):
    return self._impl
  __repr__ = __str__

  def __eq__(self, other) -> bool:
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self) -> int:
    return hash(self._impl)


def default_export_platform() -> str:
  """The platform `export` lowers for when none is given: ember's, 'cpu'."""
  return "cpu"


def is_symbolic_dim(p) -> bool:
  """Whether `p` is a symbolic dimension: never on ember, which has no shape polymorphism."""
  del p
  return False


@dataclasses.dataclass(frozen=True)
class Exported:
  """A jitted function lowered for export (see the module docstring). Fields as JAX's."""
  fun_name: str
  in_tree: Any
  in_avals: tuple
  out_tree: Any
  out_avals: tuple
  in_shardings_hlo: tuple
  out_shardings_hlo: tuple
  nr_devices: int
  platforms: tuple
  ordered_effects: tuple
  unordered_effects: tuple
  disabled_safety_checks: Sequence[DisabledSafetyCheck]
  mlir_module_serialized: bytes
  calling_convention_version: int
  module_kept_var_idx: tuple
  uses_global_constants: bool
  _get_vjp: Callable | None
  _module: hlo.Module = dataclasses.field(repr=False, compare=False)
  _runner: dict = dataclasses.field(default_factory=dict, repr=False, compare=False)

  def mlir_module(self, serialized: bool = True) -> str:
    """The StableHLO text of the exported function."""
    del serialized
    return self.mlir_module_serialized.decode("utf-8")

  def __str__(self):
    return f"Exported(fun_name={self.fun_name}, ...)"

  def in_shardings_jax(self, mesh=None) -> tuple:
    """The inputs' shardings: None for each (ember exports for one device)."""
    del mesh
    return self.in_shardings_hlo

  def out_shardings_jax(self, mesh=None) -> tuple:
    """The outputs' shardings: None for each (ember exports for one device)."""
    del mesh
    return self.out_shardings_hlo

  def has_vjp(self) -> bool:
    return self._get_vjp is not None

  def vjp(self) -> "Exported":
    """The exported VJP: takes the flat primal inputs, then one cotangent per flat output;
    returns the cotangents of the flat inputs."""
    if self._get_vjp is None:
      raise ValueError("No VJP is available")
    return self._get_vjp(self)

  def serialize(self, vjp_order: int = 0) -> bytearray:
    """The bytes of this Exported and of `vjp_order` orders of its VJP (2 allows
    grad(grad(f)) of the deserialized function)."""
    return bytearray(_MAGIC + json.dumps(_to_json(self, vjp_order)).encode("utf-8"))

  def call(self, *args, **kwargs):
    """Call the exported function (eagerly, under jit, and under grad through its VJP)."""
    return call_exported(self)(*args, **kwargs)

  def _compiled(self):
    comp = self._runner.get("compiled")
    if comp is None:
      module = compilation.clone_module(self._module)
      comp = self._runner["compiled"] = compilation.compile_module(module, self.out_avals)
    return comp


# ------------------------------------------------------------------------------------
# export
# ------------------------------------------------------------------------------------

def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = ()) -> Callable[..., Exported]:
  """A function of argument specs (ShapeDtypeStructs, or values with .shape and .dtype)
  giving the Exported of `fun_jit` (the result of `jit`) for them."""
  if not isinstance(fun_jit, PjitFunction):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  platforms = tuple(platforms) if platforms is not None else (default_export_platform(),)

  def do_export(*args_specs, **kwargs_specs) -> Exported:
    specs = tree_util.tree_map(_as_spec, (args_specs, kwargs_specs))
    lowered = fun_jit.trace(*specs[0], **specs[1]).lower()
    staged = lowered._staged
    n_consts = len(staged.consts)
    in_avals = tuple(v.aval for v in staged.jaxpr.invars[n_consts:])
    out_avals = tuple(staged.jaxpr.out_avals)
    effects = tuple(sorted({str(e) for e in getattr(staged.jaxpr, "effects", ()) or ()}))
    return Exported(
        fun_name=staged.name, in_tree=staged.in_tree, in_avals=in_avals,
        out_tree=staged.out_tree, out_avals=out_avals,
        in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
        nr_devices=1, platforms=platforms, ordered_effects=(), unordered_effects=effects,
        disabled_safety_checks=tuple(disabled_checks),
        mlir_module_serialized=lowered.as_text().encode("utf-8"),
        calling_convention_version=maximum_supported_calling_convention_version,
        module_kept_var_idx=tuple(range(len(in_avals))), uses_global_constants=False,
        _get_vjp=lambda exp: _export_vjp(fun_jit, exp),
        _module=lowered._module_with_constants())
  return do_export


def _as_spec(x):
  if isinstance(x, ShapeDtypeStruct):
    return x
  if hasattr(x, "shape") and hasattr(x, "dtype"):
    return ShapeDtypeStruct(np.shape(x), x.dtype)
  aval = core.get_aval(x)
  return ShapeDtypeStruct(aval.shape, aval.dtype)


def _export_vjp(primal_fun, exp: Exported) -> Exported:
  """The Exported of (flat primals, flat output cotangents) -> flat input cotangents."""
  n_in = len(exp.in_avals)

  def fun_vjp(*primals_and_cts):
    primals, cts = primals_and_cts[:n_in], primals_and_cts[n_in:]

    def flat_fun(*flat):
      args, kwargs = exp.in_tree.unflatten(flat)
      return tree_util.tree_leaves(primal_fun(*args, **kwargs))
    _, pullback = ad_vjp(flat_fun, *primals)
    return pullback(list(cts))
  specs = [ShapeDtypeStruct(a.shape, a.dtype) for a in exp.in_avals] + \
          [ShapeDtypeStruct(a.shape, a.to_tangent_aval().dtype) for a in exp.out_avals]
  fun_vjp.__name__ = f"{exp.fun_name}_vjp"
  return export(jit(fun_vjp), platforms=exp.platforms,
                disabled_checks=exp.disabled_safety_checks)(*specs)


# ------------------------------------------------------------------------------------
# Calling an Exported
# ------------------------------------------------------------------------------------

def _arg_name(exp: Exported, i: int) -> str:
  paths = tree_util.tree_flatten_with_path(exp.in_tree.unflatten(range(exp.in_tree.num_leaves)))
  path = tree_util.keystr(paths[0][i][0]) if i < len(paths[0]) else f"[{i}]"
  # the in_tree is (args, kwargs): "[0][1]" is args[1], "[1]['k']" is kwargs['k']
  return re.sub(r"^\[0\]", "args", re.sub(r"^\[1\]", "kwargs", path))


def _call_exported_abstract_eval(*in_avals, exported: Exported):
  for i, (want, got) in enumerate(zip(exported.in_avals, in_avals)):
    name = _arg_name(exported, i)
    if len(want.shape) != len(got.shape):
      raise ValueError(f"Rank mismatch for {name}: expected {want.shape} and called with "
                       f"{got.shape}")
    if want.dtype != got.dtype:
      raise ValueError(f"Dtype mismatch for {name}: expected {want.dtype} and called with "
                       f"{got.dtype}")
    for d, (w, g) in enumerate(zip(want.shape, got.shape)):
      if w != g:
        raise ValueError(f"Shape mismatch for {name}.shape[{d}] (expected same constant): "
                         f"expected {want.shape} and called with {got.shape}")
  return list(exported.out_avals)


def _call_exported_eval(*args, exported: Exported):
  _call_exported_abstract_eval(*map(core.get_aval, args), exported=exported)   # JAX's errors
  return exported._compiled().run(list(args), ())


def _call_exported_lower(ctx, *args, exported: Exported):
  entry = hlo.adopt(ctx.module, compilation.clone_module(exported._module))
  out = ctx.emit("call", entry.root.shape, list(args), called=[entry])
  return ctx.unpack(out)


call_exported_p = core.declare("call_exported", _call_exported_abstract_eval,
                               multiple_results=True)
call_exported_p.eval_rule = _call_exported_eval
call_exported_p.lower = _call_exported_lower


def _check_platform(exp: Exported) -> None:
  if default_export_platform() not in exp.platforms and \
      DisabledSafetyCheck.platform() not in exp.disabled_safety_checks:
    raise ValueError(
        f"Function '{exp.fun_name}' was exported for platforms '{exp.platforms}' but it is "
        f"used on '('{default_export_platform()}',)'.")


def call_exported(exported: Exported) -> Callable:
  """`exported` as a function of its arguments' pytrees (jax.export.call)."""
  if not isinstance(exported, Exported):
    raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")

  @custom_vjp
  def f_flat(*args_flat):
    return call_exported_p.bind(*args_flat, exported=exported)

  def f_fwd(*args_flat):
    return f_flat(*args_flat), args_flat

  def f_bwd(args_flat, cts):
    exp_vjp = exported.vjp()
    cts = [jnp_creation.zeros(a.shape, a.dtype) if a.dtype == dtypes.float0 else ct
           for ct, a in zip(cts, exp_vjp.in_avals[len(args_flat):])]
    return tuple(call_exported(exp_vjp)(*args_flat, *cts))
  f_flat.defvjp(f_fwd, f_bwd)

  def f_imported(*args, **kwargs):
    _check_platform(exported)
    args_flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
      raise ValueError(
          "The invocation args and kwargs must have the same pytree structure as when the "
          f"function '{exported.fun_name}' was exported, but they differ: the invocation "
          f"has {in_tree} and the export {exported.in_tree}.")
    return exported.out_tree.unflatten(f_flat(*args_flat))
  return f_imported


call = call_exported

# ------------------------------------------------------------------------------------
# Serialization
# ------------------------------------------------------------------------------------

def register_pytree_node_serialization(nodetype, *, serialized_name: str,
                                       serialize_auxdata: Callable[[Any], bytes],
                                       deserialize_auxdata: Callable[[bytes], Any],
                                       from_children: Callable | None = None):
  """Register how the pytree nodes of `nodetype` (registered with register_pytree_node,
  or given `from_children(aux, children)`) are serialized in an Exported's trees."""
  if nodetype in serialization_registry:
    raise ValueError(f"Duplicate serialization registration for type `{nodetype}`. Previous "
                     f"registration was with serialized_name "
                     f"`{serialization_registry[nodetype][0]}`.")
  if serialized_name in deserialization_registry:
    raise ValueError(f"Duplicate serialization registration for serialized_name "
                     f"`{serialized_name}`. Previous registration was for type "
                     f"`{deserialization_registry[serialized_name][0]}`.")
  if from_children is None:
    if nodetype not in tree_util._registry:
      raise ValueError(f"If `from_children` is not present, you must call first"
                       f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
    from_children = tree_util._registry[nodetype][1]
  serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
  deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
  return nodetype


def register_namedtuple_serialization(nodetype, *, serialized_name: str):
  """Register a collections.namedtuple type for serialization (its fields by name)."""
  if not (issubclass(nodetype, tuple) and hasattr(nodetype, "_fields")):
    raise ValueError("Use `jax.export.register_pytree_node_serialization` for types other "
                     "than `collections.namedtuple`.")
  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name,
      serialize_auxdata=lambda aux: json.dumps(list(nodetype._fields)).encode("utf-8"),
      deserialize_auxdata=lambda data: json.loads(data.decode("utf-8")),
      from_children=lambda keys, children: nodetype(**dict(zip(keys, children))))


def _tree_to_json(t) -> dict:
  kids = [_tree_to_json(c) for c in t.children]
  if t.kind in ("leaf", "none", "tuple", "list"):
    return {"kind": t.kind, "children": kids}
  if t.kind == "dict":
    kind, keys, _ = t.aux
    if not all(isinstance(k, str) for k in keys):
      raise TypeError(f"Serialization is supported only for dictionaries with string keys. "
                      f"Found keys {keys}.")
    name = "ordereddict" if kind is collections.OrderedDict else "dict"
    return {"kind": name, "keys": list(keys), "children": kids}
  nodetype, aux = (t.aux, None) if t.kind == "namedtuple" else t.aux
  if nodetype not in serialization_registry:
    raise ValueError(f"Cannot serialize PyTreeDef containing an unregistered type "
                     f"`{nodetype}`. Use `export.register_pytree_node_serialization` or "
                     "`export.register_namedtuple_serialization`.")
  name, ser = serialization_registry[nodetype]
  return {"kind": "custom", "name": name, "aux": base64.b64encode(ser(aux)).decode(),
          "children": kids}


def _tree_from_json(d):
  kids = [_tree_from_json(c) for c in d["children"]]
  kind = d["kind"]
  if kind == "leaf":
    return tree_util.tree_structure(0)
  if kind == "none":
    return tree_util.tree_structure(None)
  if kind in ("tuple", "list"):
    example = tuple(range(len(kids))) if kind == "tuple" else list(range(len(kids)))
  elif kind in ("dict", "ordereddict"):
    cls = dict if kind == "dict" else collections.OrderedDict
    example = cls(zip(d["keys"], range(len(kids))))
  else:
    if d["name"] not in deserialization_registry:
      raise ValueError(f"Cannot deserialize a PyTreeDef containing an unregistered type "
                       f"`{d['name']}`. Use `export.register_pytree_node_serialization`.")
    _, deser, from_children = deserialization_registry[d["name"]]
    example = from_children(deser(base64.b64decode(d["aux"])), list(range(len(kids))))
  # the node's structure from an example built with placeholder leaves, then the children
  node = tree_util.tree_structure(example, is_leaf=lambda x: isinstance(x, int))
  return tree_util.PyTreeDef(node.kind, node.aux, kids)


def _aval_to_json(a) -> list:
  return [list(a.shape), np.dtype(a.dtype).name, bool(a.weak_type)]


def _aval_from_json(d):
  return core.ShapedArray(tuple(d[0]), dtypes.dtype(d[1]), d[2])


def _to_json(exp: Exported, vjp_order: int) -> dict:
  if compilation._calls_host(exp._module):
    raise ValueError(f"Cannot serialize the Exported of '{exp.fun_name}': it calls Python "
                     "functions (callbacks), which do not exist in another process.")
  return {
      "fun_name": exp.fun_name, "in_tree": _tree_to_json(exp.in_tree),
      "out_tree": _tree_to_json(exp.out_tree),
      "in_avals": [_aval_to_json(a) for a in exp.in_avals],
      "out_avals": [_aval_to_json(a) for a in exp.out_avals],
      "nr_devices": exp.nr_devices, "platforms": list(exp.platforms),
      "unordered_effects": list(exp.unordered_effects),
      "disabled_safety_checks": [str(c) for c in exp.disabled_safety_checks],
      "calling_convention_version": exp.calling_convention_version,
      "module_kept_var_idx": list(exp.module_kept_var_idx),
      "mlir": exp.mlir_module(),
      "module": base64.b64encode(pickle.dumps(exp._module, protocol=4)).decode(),
      "vjp": _to_json(exp.vjp(), vjp_order - 1) if vjp_order > 0 else None,
  }


class _ModuleUnpickler(pickle.Unpickler):
  """Builds only what an HLO module holds: ember's HLO classes, NumPy arrays and dtypes."""
  _ALLOWED_MODULES = ("ember._src.hlo.graph", "numpy", "numpy.core.multiarray",
                      "numpy._core.multiarray", "numpy.dtypes", "ml_dtypes",
                      "numpy.core.numeric", "numpy._core.numeric")
  _ALLOWED_BUILTINS = ("set", "frozenset", "slice", "complex", "tuple", "list", "dict",
                       "getattr", "range")

  def find_class(self, module, name):
    if module == "builtins" and name in self._ALLOWED_BUILTINS or \
        (module, name) == ("itertools", "count") or \
        module in self._ALLOWED_MODULES or module.startswith("ml_dtypes"):
      return super().find_class(module, name)
    raise pickle.UnpicklingError(f"an exported module cannot hold {module}.{name}")


def deserialize(blob) -> Exported:
  """The Exported of bytes serialize() wrote (in this or another process)."""
  blob = bytes(blob)
  if not blob.startswith(_MAGIC):
    raise ValueError("not a serialized ember Exported (bytes from Exported.serialize())")
  return _from_json(json.loads(blob[len(_MAGIC):].decode("utf-8")))


def _from_json(d: dict) -> Exported:
  version = d["calling_convention_version"]
  if not (minimum_supported_calling_convention_version <= version
          <= maximum_supported_calling_convention_version):
    raise ValueError(f"The calling convention version {version} is not supported "
                     f"(supported: {minimum_supported_calling_convention_version} to "
                     f"{maximum_supported_calling_convention_version}).")
  module = _ModuleUnpickler(io.BytesIO(base64.b64decode(d["module"]))).load()
  vjp = d["vjp"]
  in_avals = tuple(_aval_from_json(a) for a in d["in_avals"])
  out_avals = tuple(_aval_from_json(a) for a in d["out_avals"])
  return Exported(
      fun_name=d["fun_name"], in_tree=_tree_from_json(d["in_tree"]), in_avals=in_avals,
      out_tree=_tree_from_json(d["out_tree"]), out_avals=out_avals,
      in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
      nr_devices=d["nr_devices"], platforms=tuple(d["platforms"]), ordered_effects=(),
      unordered_effects=tuple(d["unordered_effects"]),
      disabled_safety_checks=tuple(DisabledSafetyCheck(c)
                                   for c in d["disabled_safety_checks"]),
      mlir_module_serialized=d["mlir"].encode("utf-8"), calling_convention_version=version,
      module_kept_var_idx=tuple(d["module_kept_var_idx"]), uses_global_constants=False,
      _get_vjp=(lambda exp: _from_json(vjp)) if vjp is not None else None, _module=module)
