"""ember.profiler: JAX's `jax.profiler` for ember (see docs/profiler.md).

Traces are written under `log_dir/plugins/profile/<timestamp>/` as Chrome Trace Event Format
JSON (`<host>.trace.json.gz`, and `perfetto_trace.json.gz` on request: open them in
https://ui.perfetto.dev or chrome://tracing) and as an XSpace protobuf (`<host>.xplane.pb`,
what TensorBoard/XProf read), which `ProfileData` reads back (JAX's files too). There is no
profiler server. `device_memory_profile` / `save_device_memory_profile` write pprof snapshots
of live device buffers (memory.py).
"""
from ember._src.runtime.profiler.trace import (  # noqa: F401
    ProfileSession, StepTraceAnnotation, TraceAnnotation, annotate_function,
    export_profile_data, start_server, start_trace, stop_server, stop_trace, trace)
from ember._src.runtime.profiler.memory import (  # noqa: F401
    device_memory_profile, save_device_memory_profile)
from ember._src.runtime.profiler.xplane import (  # noqa: F401
    ProfileData, ProfileEvent, ProfileLine, ProfilePlane)

__all__ = ["ProfileData", "ProfileEvent", "ProfileLine", "ProfilePlane", "ProfileSession",
           "StepTraceAnnotation", "TraceAnnotation", "annotate_function", "device_memory_profile",
           "export_profile_data",
           "save_device_memory_profile", "start_server", "start_trace", "stop_server",
           "stop_trace", "trace"]
