"""ember._src.base.flags: EMBER_FLAGS / XLA_FLAGS parsing, the frozen record, override()."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ember

from ember._src.base import flags
from ember._src.base.flags import Flags


def test_defaults():
  f = flags.parse("")
  assert f == Flags(dump_to=None, dump_hlo_as_text=False, disable_passes=frozenset(), opt_level=3,
                    tiered_compilation=True, cpu_max_isa=None)
  assert isinstance(f, tuple) and f._fields == ("dump_to", "dump_hlo_as_text", "disable_passes",
                                                "opt_level", "tiered_compilation", "cpu_max_isa")
  with pytest.raises(AttributeError):
    f.opt_level = 1          # frozen


@pytest.mark.parametrize("text, field, value", [
    ("--dump_to=/tmp/d", "dump_to", "/tmp/d"),
    ("--xla_dump_to=/tmp/d", "dump_to", "/tmp/d"),
    ("--xla_dump_to=", "dump_to", None),             # XLA: empty means no dump
    ("--xla_dump_hlo_as_text", "dump_hlo_as_text", True),
    ("--dump_hlo_as_text=false", "dump_hlo_as_text", False),
    ("--xla_dump_hlo_as_text=true", "dump_hlo_as_text", True),
    ("--disable_passes=fusion,cse", "disable_passes", frozenset({"fusion", "cse"})),
    ("--disable_passes=call-inliner", "disable_passes", frozenset({"inline"})),
    ("--xla_disable_hlo_passes=fusion", "disable_passes", frozenset({"fusion"})),
    ("--xla_disable_hlo_passes=call-inliner,transpose-folding,algsimp",
     "disable_passes", frozenset({"inline", "dot_transpose", "algsimp"})),
    # XLA pass names ember has no counterpart for are accepted and ignored
    ("--xla_disable_hlo_passes=dot_decomposer,fusion,zero_sized_hlo_elimination",
     "disable_passes", frozenset({"fusion"})),
    ("--disable_passes=", "disable_passes", frozenset()),
    ("--opt_level=0", "opt_level", 0),
    ("--xla_backend_optimization_level=2", "opt_level", 2),
    ("--tiered_compilation=false", "tiered_compilation", False),
    ("--tiered_compilation", "tiered_compilation", True),
    ("--cpu_max_isa=AVX2", "cpu_max_isa", "AVX2"),
    ("--xla_cpu_max_isa=sse4_2", "cpu_max_isa", "SSE4_2"),
])
def test_each_flag_both_spellings(text, field, value):
  assert getattr(flags.parse(text), field) == value


def test_seed_002_spellings_together():
  f = flags.parse("--xla_dump_to=/tmp/xla_dump --xla_dump_hlo_as_text "
                  "--xla_cpu_experimental_ynn_fusion_type= --xla_cpu_use_thunk_runtime=false")
  assert f.dump_to == "/tmp/xla_dump" and f.dump_hlo_as_text
  assert f.disable_passes == frozenset() and f.opt_level == 3


def test_repeated_flags_last_value_wins_and_pass_sets_accumulate():
  f = flags.parse("--opt_level=1 --opt_level=2 --disable_passes=cse --disable_passes=dce")
  assert f.opt_level == 2 and f.disable_passes == frozenset({"cse", "dce"})


@pytest.mark.parametrize("text, match", [
    ("--bogus=1", r"unknown flag '--bogus=1'.*--dump_to.*--opt_level"),
    ("dump_to=/tmp", r"unknown flag 'dump_to=/tmp'"),
    ("--opt_level=4", r"--opt_level.*0, 1, 2 or 3.*'4'"),
    ("--opt_level=fast", r"--opt_level.*'fast'"),
    ("--opt_level", r"--opt_level.*None"),
    ("--xla_backend_optimization_level=-1", r"--xla_backend_optimization_level"),
    ("--xla_dump_hlo_as_text=maybe", r"--xla_dump_hlo_as_text.*true or false"),
    ("--disable_passes=fusion,nosuchpass", r"unknown pass 'nosuchpass'.*inline, simple_scatter, algsimp"),
    ("--dump_to", r"--dump_to.*directory"),
    ("--xla_disable_hlo_passes", r"--xla_disable_hlo_passes.*pass names"),
    ("--cpu_max_isa=AVX3", r"--cpu_max_isa.*SSE4_2, AVX, AVX2, AVX512.*'AVX3'"),
    ("--xla_cpu_max_isa", r"--xla_cpu_max_isa.*None"),
])
def test_errors_name_the_flag_and_the_valid_values(text, match):
  with pytest.raises(ValueError, match=match):
    flags.parse(text)


def test_error_names_the_variable():
  with pytest.raises(ValueError, match="XLA_FLAGS: unknown flag '--nope'"):
    flags.from_environ({"XLA_FLAGS": "--nope"})
  with pytest.raises(ValueError, match="EMBER_FLAGS: unknown flag '--nope'"):
    flags.from_environ({"EMBER_FLAGS": "--nope"})


def test_from_environ_ember_wins_and_pass_sets_union():
  env = {"XLA_FLAGS": "--xla_dump_to=/a --xla_disable_hlo_passes=fusion --xla_backend_optimization_level=1",
         "EMBER_FLAGS": "--dump_to=/b --disable_passes=cse"}
  f = flags.from_environ(env)
  assert f.dump_to == "/b" and f.opt_level == 1
  assert f.disable_passes == frozenset({"fusion", "cse"})
  assert flags.from_environ({}) == Flags()


def test_override_replaces_validates_and_restores():
  before = flags.get()
  with flags.override(disable_passes={"fusion"}, opt_level=1) as f:
    assert flags.get() is f
    assert f.disable_passes == frozenset({"fusion"}) and f.opt_level == 1
    assert not flags.enabled("fusion") and flags.enabled("cse")
    with flags.override(disable_passes="cse"):
      assert flags.get().disable_passes == frozenset({"cse"}) and flags.get().opt_level == 1
    assert flags.get() is f
  assert flags.get() is before
  with pytest.raises(ValueError, match="unknown pass 'fuse'"):
    with flags.override(disable_passes=["fuse"]):
      pass
  with pytest.raises(ValueError, match="unknown field.*'dump_dir'.*dump_to"):
    with flags.override(dump_dir="/tmp"):
      pass
  with pytest.raises(ValueError, match="opt_level"):
    with flags.override(opt_level=7):
      pass
  with pytest.raises(ValueError, match="cpu_max_isa is read once.*EMBER_FLAGS"):
    with flags.override(cpu_max_isa="AVX2"):
      pass
  assert flags.get() is before


def test_override_restores_after_an_exception(tmp_path):
  before = flags.get()
  with pytest.raises(RuntimeError):
    with flags.override(dump_to=tmp_path):
      assert flags.get().dump_to == str(tmp_path)
      raise RuntimeError
  assert flags.get() is before


def _child_flags(env_extra):
  env = {k: v for k, v in os.environ.items() if k not in ("EMBER_FLAGS", "XLA_FLAGS")}
  env.update(env_extra)
  code = "from ember._src.base import flags; f = flags.get(); print(f.dump_to, sorted(f.disable_passes), f.opt_level)"
  return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_read_once_at_import_in_a_fresh_process():
  r = _child_flags({"XLA_FLAGS": "--xla_dump_to=/tmp/x --xla_disable_hlo_passes=fusion",
                    "EMBER_FLAGS": "--opt_level=2"})
  assert r.returncode == 0, r.stderr
  assert r.stdout.split() == ["/tmp/x", "['fusion']", "2"]
  bad = _child_flags({"EMBER_FLAGS": "--opt_level=9"})
  assert bad.returncode != 0 and "ValueError" in bad.stderr and "--opt_level" in bad.stderr


def test_compile_compiler_options_as_jax():
  # JAX 0.12 hands compiler_options to XLA: its debug options are accepted (ember applies
  # the ones its compiler has), anything else is a JaxRuntimeError (INVALID_ARGUMENT)
  import ember.numpy as jnp
  lowered = ember.jit(lambda x: jnp.sin(x) * 2).lower(jnp.ones(4))
  for opts in [{"xla_gpu_autotune_level": "0"}, {"xla_embed_ir_in_executable": True},
               {"xla_backend_optimization_level": 0}]:
    np.testing.assert_allclose(lowered.compile(compiler_options=opts)(jnp.ones(4)),
                               2 * np.sin(np.ones(4)), rtol=1e-6)
  unfused = lowered.compile(compiler_options={"xla_disable_hlo_passes": "fusion"}).as_text()
  assert "%wrapped_sine = f32[4]{0} fusion(%x)" in unfused
  assert "%fused_computation" in lowered.compile().as_text()
  for opts, msg in [
      ({"an option that does not make sense": "bad value"},
       "INVALID_ARGUMENT: No such compile option: 'an option that does not make sense'"),
      ({"xla_dump_hlo_as_text": "notabool"}, "INVALID_ARGUMENT: While setting option "
       "xla_dump_hlo_as_text, 'notabool' is not a valid bool value."),
      ({"xla_backend_optimization_level": "x"}, "INVALID_ARGUMENT: While setting option "
       "xla_backend_optimization_level, 'x' is not a valid int32 value.")]:
    with pytest.raises(ember.errors.JaxRuntimeError, match=re.escape(msg)):
      lowered.compile(compiler_options=opts)
