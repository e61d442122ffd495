// FFI handlers written for JAX (against XLA's ffi.h), used by tests/test_ffi.py to check that
// they run on ember unchanged. Compiled at test time with the system C++ compiler.
#include <cstdint>
#include <string_view>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

// y = x * factor + offset
static ffi::Error ScaleImpl(ffi::Buffer<ffi::F32> x, ffi::ResultBuffer<ffi::F32> y,
                            float factor, int64_t offset) {
  if (factor < 0) return ffi::Error::InvalidArgument("factor must be non-negative");
  for (size_t i = 0; i < x.element_count(); ++i) {
    y->typed_data()[i] = x.typed_data()[i] * factor + static_cast<float>(offset);
  }
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Scale, ScaleImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::F32>>()
                                  .Ret<ffi::Buffer<ffi::F32>>()
                                  .Attr<float>("factor")
                                  .Attr<int64_t>("offset"));

// the sums (mode "sum") or means ("mean") of the rows of a float64 array of any rank, and
// the number of rows
static ffi::Error RowReduceImpl(ffi::AnyBuffer x, ffi::ResultBuffer<ffi::F64> y,
                                ffi::ResultBuffer<ffi::S32> rows_out, std::string_view mode,
                                ffi::Span<const int64_t> weights) {
  if (x.element_type() != ffi::F64) return ffi::Error::InvalidArgument("x must be float64");
  auto dims = x.dimensions();
  int64_t cols = dims.back(), rows = x.element_count() / cols;
  const double* d = x.typed_data<double>();
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += d[r * cols + c] * weights[c % weights.size()];
    y->typed_data()[r] = mode == "mean" ? s / cols : s;
  }
  rows_out->typed_data()[0] = static_cast<int32_t>(rows);
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(RowReduce, RowReduceImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::Buffer<ffi::F64>>()
                                  .Ret<ffi::Buffer<ffi::S32>>()
                                  .Attr<std::string_view>("mode")
                                  .Attr<ffi::Span<const int64_t>>("weights"));

// in place: x += 1 (the result aliases the argument)
static ffi::Error IncrementImpl(ffi::Buffer<ffi::S32> x, ffi::ResultBuffer<ffi::S32> y) {
  for (size_t i = 0; i < x.element_count(); ++i) y->typed_data()[i] += 1;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(Increment, IncrementImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::Buffer<ffi::S32>>()
                                  .Ret<ffi::Buffer<ffi::S32>>());

// a call site's state made at the instantiate stage: how many times it ran
struct Counter {
  static ffi::TypeId id;
  int64_t calls = 0;
};
ffi::TypeId Counter::id = {};
static const XLA_FFI_TypeInfo counter_info = ffi::MakeTypeInfo<Counter>();
// registered from Python (jax.ffi.register_ffi_type), which gives the type its id
extern "C" XLA_FFI_TypeId* CounterTypeId() { return &Counter::id; }
extern "C" const XLA_FFI_TypeInfo* CounterTypeInfo() { return &counter_info; }

static ffi::ErrorOr<std::unique_ptr<Counter>> CounterInstantiate() {
  return std::make_unique<Counter>();
}

static ffi::Error CounterExecute(Counter* counter, ffi::ResultBuffer<ffi::S64> out) {
  out->typed_data()[0] = ++counter->calls;
  return ffi::Error::Success();
}

XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterInstantiateHandler, CounterInstantiate,
                              ffi::Ffi::BindInstantiate());
XLA_FFI_DEFINE_HANDLER_SYMBOL(CounterExecuteHandler, CounterExecute,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::State<Counter>>()
                                  .Ret<ffi::Buffer<ffi::S64>>());
