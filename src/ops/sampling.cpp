// The sampling family's checks (Note [Token sampling]): the views decoded
// into SampleArgs, then the device's kernel.
#include "ops/sampling.h"

#include <cmath>

#include "core/error.h"
#include "ops/dispatch.h"

namespace aotrt::ops {
namespace {

// A view of n elements laid along at most one dim (of size > 1): its first
// element and the stride between elements.
struct Line {
  void* data = nullptr;
  int64_t stride = 1;
};
Line line_of(const TensorImpl& t, int64_t n, const char* what, const char* fn) {
  AOTRT_CHECK(t.numel() == n, kInvalidArgument, fn, ": ", what, " has ", t.numel(),
              " elements; the logits have ", n, " rows");
  Line l{t.data_ptr(), 1};
  int long_dims = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.sizes()[d] > 1) {
      ++long_dims;
      l.stride = t.strides()[d];
    }
  }
  AOTRT_CHECK(long_dims <= 1, kInvalidArgument, fn, ": ", what,
              " must hold its elements along one dim ([B], [B, 1], a column), not sizes of ",
              t.dim(), " dims with more than one longer than 1");
  return l;
}

void check_device(const TensorImpl& t, Device device, const char* what, const char* fn) {
  AOTRT_CHECK(t.device() == device, kInvalidArgument, fn, ": ", what, " is on ",
              t.device().str(), ", the logits on ", device.str());
}

}  // namespace

void check_sampling_params(std::span<const SamplingParams> params, const char* fn) {
  for (size_t b = 0; b < params.size(); ++b) {
    const SamplingParams& p = params[b];
    AOTRT_CHECK(!std::isnan(p.temperature), kInvalidArgument, fn, ": row ", b,
                ": temperature is NaN (<= 0 asks for greedy)");
    AOTRT_CHECK(p.top_k >= 0, kInvalidArgument, fn, ": row ", b, ": top_k must be >= 0 (0: no ",
                "top-k), got ", p.top_k);
    AOTRT_CHECK(p.top_p > 0, kInvalidArgument, fn, ": row ", b, ": top_p must be > 0 (>= 1: no ",
                "top-p), got ", p.top_p);
  }
}

void sample_tokens(const TensorImpl& logits, const TensorImpl& params, const TensorImpl& step,
                   std::span<TensorImpl* const> outs, const char* fn) {
  AOTRT_CHECK(logits.defined() && params.defined() && step.defined(), kInvalidArgument, fn,
              ": logits, params and step must be defined tensors");
  const ScalarType dt = logits.dtype();
  AOTRT_CHECK(dt == ScalarType::Float32 || dt == ScalarType::BFloat16 ||
                  dt == ScalarType::Float16,
              kInvalidArgument, fn, ": logits must be float32, bfloat16 or float16, not ",
              dtype_name(dt));
  AOTRT_CHECK(logits.dim() == 2, kInvalidArgument, fn, ": logits must be [B, V], not ",
              logits.dim(), "-d");
  const int64_t rows = logits.sizes()[0], vocab = logits.sizes()[1];
  AOTRT_CHECK(vocab >= 1, kInvalidArgument, fn, ": logits have no vocabulary (V = 0)");
  AOTRT_CHECK(vocab <= int64_t{1} << 31, kUnsupported, fn, ": a vocabulary of ", vocab,
              " tokens; at most 2^31 are served");
  AOTRT_CHECK(!outs.empty() && outs.size() <= static_cast<size_t>(kMaxSampleOutputs),
              kInvalidArgument, fn, ": between 1 and ", kMaxSampleOutputs,
              " outputs (the tokens first), got ", outs.size());
  const Device device = logits.device();

  SampleArgs a;
  a.logits = logits.data_ptr();
  a.dtype = dt;
  a.rows = rows;
  a.vocab = vocab;
  a.row_stride = logits.strides()[0];
  a.col_stride = logits.strides()[1];
  a.device = device;

  check_device(params, device, "params", fn);
  const int64_t param_bytes = params.numel() * static_cast<int64_t>(params.itemsize());
  AOTRT_CHECK(params.is_contiguous() &&
                  param_bytes == rows * static_cast<int64_t>(sizeof(SamplingParams)),
              kInvalidArgument, fn, ": params must be B = ", rows, " SamplingParams (",
              rows * static_cast<int64_t>(sizeof(SamplingParams)),
              " contiguous bytes), got ", param_bytes, params.is_contiguous() ? "" : " strided",
              " bytes");
  a.params = static_cast<const SamplingParams*>(params.data_ptr());
  AOTRT_CHECK(reinterpret_cast<uintptr_t>(a.params) % alignof(SamplingParams) == 0,
              kInvalidArgument, fn, ": params must start at an 8-byte aligned address");

  check_device(step, device, "step", fn);
  AOTRT_CHECK(step.dtype() == ScalarType::UInt64 || step.dtype() == ScalarType::Int64,
              kInvalidArgument, fn, ": step must be uint64 (or int64), not ",
              dtype_name(step.dtype()));
  const Line s = line_of(step, rows, "step", fn);
  a.step = static_cast<uint64_t*>(s.data);
  a.step_stride = s.stride;

  for (size_t o = 0; o < outs.size(); ++o) {
    const std::string what = o == 0 ? std::string("tokens") : "output " + std::to_string(o);
    AOTRT_CHECK(outs[o] != nullptr && outs[o]->defined(), kInvalidArgument, fn, ": ", what,
                " is not a defined tensor");
    AOTRT_CHECK(outs[o]->dtype() == ScalarType::Int64, kInvalidArgument, fn, ": ", what,
                " must be int64, not ", dtype_name(outs[o]->dtype()));
    check_device(*outs[o], device, what.c_str(), fn);
    const Line l = line_of(*outs[o], rows, what.c_str(), fn);
    a.out[o] = static_cast<int64_t*>(l.data);
    a.out_stride[o] = l.stride;
  }
  a.outputs = static_cast<int>(outs.size());
  if (rows == 0) return;
  // The CPU reads the parameters where they are; on CUDA that would wait for
  // the device (Note [Token sampling]).
  if (!device.is_cuda()) check_sampling_params({a.params, static_cast<size_t>(rows)}, fn);
  kernel(&SamplingKernels::sample, device, fn)(a, fn);
}

}  // namespace aotrt::ops
