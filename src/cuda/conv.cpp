// aten::convolution on cuDNN's convolution API (forward, and backward-data
// for transposed convolutions), taking the input's real strides.
//
// Note [Convolution output layout]
// The output is new memory, laid out as ATen's cuDNN path lays it out,
// because the generated code that reads it was compiled against those
// strides: channels-last (channels-last-3d for 5-D) when the input OR the
// weight suggests it (ATen's cudnn_conv_suggest_memory_format, with c10's
// is_channels_last_strides_2d/_3d applied to the strides we are given),
// contiguous otherwise. A 1-D convolution is run as a 2-D one with H = 1 on
// a contiguous input, as ATen does; only a channels-last weight makes its
// output [N, C, L] with strides [L*C, 1, C]. Depthwise convolutions follow
// the same rule: ATen sends the channels-last ones to cuDNN and the others to
// a kernel that writes contiguous output.
//
// Note [Convolution operands in place]
// cuDNN's tensor descriptors take any positive strides, so the input goes in
// as it is - NCHW, NHWC, or a chunk along C of a channels-last tensor (NHWC
// with a pixel stride larger than C). Filter descriptors take no strides: the
// weight must be dense NCHW or NHWC. When cuDNN rejects a layout
// (BAD_PARAM or NOT_SUPPORTED) the input and weight are packed into the
// output's layout and the call is tried again; only then is it an error.
// Strides of size-1 dims mean nothing, so they are replaced by the values a
// dense tensor of the target layout would have (cuDNN refuses 0).
//
// Note [1x1 convolutions as GEMMs]
// A 1x1 convolution with stride 1, no padding and one group is a matmul:
// out[pixel, o] = sum_c x[pixel, c] * w[o, c]. When the pixel dims (N and the
// spatial dims) of input and output merge into one index with one stride,
// the operands are matrices cuBLAS reads in place - in particular a channel
// chunk of a channels-last tensor is [pixels, C] with ld = all its channels,
// which cuDNN's descriptors reject - and the bias rides the cuBLASLt
// epilogue. It runs with the matmul TF32 policy (Note [TF32]), so it is at
// least as precise as the cuDNN path.
//
// Note [Large output padding]
// cuDNN computes a transposed convolution as the gradient of a forward one,
// which exists only when output_padding < stride in every dim (ATen sends
// the other cases to its slow kernel). For a dim with output_padding >=
// stride we run cuDNN without padding there - the full, uncropped result -
// into a temporary, and copy the window [padding, padding + out) of it into
// the output, whose remaining rows get no contribution and stay zero.
//
// Note [Convolution algorithms]
// As ATen with torch.backends.cudnn.benchmark = False: cuDNN's heuristic
// (cudnnGet*Algorithm_v7) ranks the algorithms, the first that works with a
// workspace we can allocate wins, and the choice is cached per configuration
// (shapes, strides, dtype, parameters, math mode) for the process. Nothing is
// timed and nothing synchronizes. TF32: see Note [TF32].
#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cuda/handles.h"
#include "cuda/library_ops.h"

namespace aotrt::cuda {
namespace {

enum class Layout { kContiguous, kChannelsLast };

// c10's is_channels_last_strides_3d (the 2-D one is in core/view.h).
bool is_channels_last_strides_3d(std::span<const int64_t> sizes,
                                 std::span<const int64_t> strides) {
  if (sizes.size() != 5) return false;
  int64_t min = 0;
  if (strides[1] == 0) return false;
  for (int d : {1, 4, 3, 2, 0}) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

// c10's suggest_memory_format, for the 4-D or 5-D shapes cuDNN sees.
bool suggests_channels_last(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  return sizes.size() == 4 ? is_channels_last_strides_2d(sizes, strides)
                           : is_channels_last_strides_3d(sizes, strides);
}

// Dims from outermost to innermost in a layout.
std::vector<int> layout_order(size_t ndim, Layout layout) {
  std::vector<int> order(ndim);
  std::iota(order.begin(), order.end(), 0);
  if (layout == Layout::kChannelsLast) {
    std::rotate(order.begin() + 1, order.begin() + 2, order.end());  // N, spatial..., C
  }
  return order;
}

// Strides of a dense tensor in a layout; like c10, size-0 dims count as 1.
std::vector<int64_t> layout_strides(std::span<const int64_t> sizes, Layout layout) {
  const auto order = layout_order(sizes.size(), layout);
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = running;
    running *= std::max<int64_t>(sizes[static_cast<size_t>(order[i])], 1);
  }
  return strides;
}

bool dense_in(std::span<const int64_t> sizes, std::span<const int64_t> strides, Layout layout) {
  const auto want = layout_strides(sizes, layout);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && strides[d] != want[d]) return false;
  }
  return true;
}

// A tensor as cuDNN will see it: 4-D or 5-D, borrowed memory.
struct Operand {
  char* data = nullptr;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
};

// 1-D convolutions run as 2-D with a size-1 H at dim 2.
Operand as_cudnn_operand(const StridedView& v) {
  Operand o{v.data, {v.sizes.begin(), v.sizes.end()}, {v.strides.begin(), v.strides.end()}};
  if (o.sizes.size() == 3) {
    o.sizes.insert(o.sizes.begin() + 2, 1);
    o.strides.insert(o.strides.begin() + 2, o.strides[2] * std::max<int64_t>(o.sizes[3], 1));
  }
  return o;
}

// Note [Convolution operands in place]: positive strides for size-1 dims.
std::vector<int> cudnn_strides(const Operand& o, Layout layout, const char* fn) {
  const auto order = layout_order(o.sizes.size(), layout);
  std::vector<int64_t> s = o.strides;
  int64_t inner = 1;  // stride * size of the next-inner dim in the layout
  for (size_t i = order.size(); i-- > 0;) {
    const auto d = static_cast<size_t>(order[i]);
    if (o.sizes[d] == 1) s[d] = std::max<int64_t>(inner, 1);
    inner = s[d] * std::max<int64_t>(o.sizes[d], 1);
  }
  std::vector<int> out(s.size());
  for (size_t d = 0; d < s.size(); ++d) {
    AOTRT_CHECK(s[d] <= INT_MAX, kUnsupported, fn, ": stride ", s[d],
                " exceeds cuDNN's 32-bit descriptors");
    out[d] = static_cast<int>(s[d]);
  }
  return out;
}

std::vector<int> to_ints(std::span<const int64_t> v, const char* what, const char* fn) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    AOTRT_CHECK(v[i] >= 0 && v[i] <= INT_MAX, kUnsupported, fn, ": ", what, " ", v[i],
                " does not fit cuDNN's 32-bit descriptors");
    out[i] = static_cast<int>(v[i]);
  }
  return out;
}

// --- RAII descriptors -----------------------------------------------------------------

struct TensorDesc {
  cudnnTensorDescriptor_t desc = nullptr;
  TensorDesc() { AOTRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc)); }
  ~TensorDesc() { (void)cudnnDestroyTensorDescriptor(desc); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};
struct FilterDesc {
  cudnnFilterDescriptor_t desc = nullptr;
  FilterDesc() { AOTRT_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc)); }
  ~FilterDesc() { (void)cudnnDestroyFilterDescriptor(desc); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t desc = nullptr;
  ConvDesc() { AOTRT_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc)); }
  ~ConvDesc() { (void)cudnnDestroyConvolutionDescriptor(desc); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

// A status that is a rejection goes back to the caller (who may pack and
// retry); any other failure throws.
#define AOTRT_CUDNN_TRY(expr)                                                           \
  do {                                                                                  \
    const cudnnStatus_t aotrt_try_ = (expr);                                            \
    if (aotrt_try_ != CUDNN_STATUS_SUCCESS) {                                           \
      if (cudnn_rejects(aotrt_try_)) return aotrt_try_;                                 \
      ::aotrt::cuda::detail::cudnn_fail(aotrt_try_, #expr, __FILE__, __LINE__);         \
    }                                                                                   \
  } while (0)

// --- The algorithm cache (Note [Convolution algorithms]) ----------------------------------

struct AlgoChoice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  size_t workspace = 0;
};

std::mutex g_algo_mutex;
std::map<std::vector<int64_t>, AlgoChoice> g_algos;

// --- One attempt ----------------------------------------------------------------------

struct ConvCall {
  int device = 0;
  cudaStream_t stream = nullptr;
  ScalarType dtype = ScalarType::Float32;
  bool transposed = false;
  int64_t groups = 1;
  std::vector<int64_t> padding, stride, dilation;  // per spatial dim, cuDNN's count
  Operand x, w, y;                                 // w: dense in w_layout
  Layout layout = Layout::kContiguous;             // of y (and the target for x)
  Layout w_layout = Layout::kContiguous;
  const char* fn = "";
};

cudnnMathType_t math_type(ScalarType t) {
  if (t != ScalarType::Float32) return CUDNN_TENSOR_OP_MATH;
  return conv_allows_tf32() ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

// Runs the convolution; returns SUCCESS or the status with which cuDNN
// rejected this layout.
cudnnStatus_t try_conv(const ConvCall& c) {
  const char* fn = c.fn;
  const cudnnDataType_t t = cudnn_data_type(c.dtype, fn);
  const int nd = static_cast<int>(c.y.sizes.size());
  // For a transposed convolution the roles swap: cuDNN computes the gradient
  // of a forward convolution from y (its "input") to x (its "output").
  const Operand& fwd_in = c.transposed ? c.y : c.x;
  const Operand& fwd_out = c.transposed ? c.x : c.y;

  TensorDesc in_desc, out_desc;
  FilterDesc w_desc;
  ConvDesc conv;
  const auto in_sizes = to_ints(fwd_in.sizes, "size", fn);
  const auto out_sizes = to_ints(fwd_out.sizes, "size", fn);
  const auto in_strides = cudnn_strides(fwd_in, c.layout, fn);
  const auto out_strides = cudnn_strides(fwd_out, c.layout, fn);
  AOTRT_CUDNN_TRY(cudnnSetTensorNdDescriptor(in_desc.desc, t, nd, in_sizes.data(),
                                             in_strides.data()));
  AOTRT_CUDNN_TRY(cudnnSetTensorNdDescriptor(out_desc.desc, t, nd, out_sizes.data(),
                                             out_strides.data()));
  const auto w_sizes = to_ints(c.w.sizes, "weight size", fn);
  AOTRT_CUDNN_TRY(cudnnSetFilterNdDescriptor(
      w_desc.desc, t, c.w_layout == Layout::kChannelsLast ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
      nd, w_sizes.data()));
  const auto pad = to_ints(c.padding, "padding", fn);
  const auto stride = to_ints(c.stride, "stride", fn);
  const auto dilation = to_ints(c.dilation, "dilation", fn);
  // fp16 and bf16 accumulate in fp32, as ATen does.
  AOTRT_CUDNN_TRY(cudnnSetConvolutionNdDescriptor(conv.desc, nd - 2, pad.data(), stride.data(),
                                                  dilation.data(), CUDNN_CROSS_CORRELATION,
                                                  CUDNN_DATA_FLOAT));
  AOTRT_CUDNN_TRY(cudnnSetConvolutionGroupCount(conv.desc, static_cast<int>(c.groups)));
  const cudnnMathType_t math = math_type(c.dtype);
  AOTRT_CUDNN_TRY(cudnnSetConvolutionMathType(conv.desc, math));

  cudnnHandle_t h = cudnn_handle(c.device, c.stream);
  const float one = 1.0f, zero = 0.0f;
  auto run = [&](const AlgoChoice& a) -> cudnnStatus_t {
    AOTRT_CUDNN_TRY(cudnnSetConvolutionMathType(conv.desc, a.math));
    DeviceBuffer workspace;
    if (a.workspace > 0) workspace = DeviceBuffer(c.device, a.workspace);
    if (!c.transposed) {
      return cudnnConvolutionForward(h, &one, in_desc.desc, fwd_in.data, w_desc.desc, c.w.data,
                                     conv.desc, static_cast<cudnnConvolutionFwdAlgo_t>(a.algo),
                                     workspace.data(), a.workspace, &zero, out_desc.desc,
                                     fwd_out.data);
    }
    return cudnnConvolutionBackwardData(
        h, &one, w_desc.desc, c.w.data, out_desc.desc, fwd_out.data, conv.desc,
        static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), workspace.data(), a.workspace,
        &zero, in_desc.desc, fwd_in.data);
  };

  // The cache key: everything the choice depends on.
  std::vector<int64_t> key{c.device, static_cast<int64_t>(c.dtype), c.transposed, c.groups,
                           static_cast<int64_t>(math), static_cast<int64_t>(c.w_layout)};
  for (const auto* v : {&fwd_in.sizes, &fwd_out.sizes, &c.w.sizes, &c.padding, &c.stride,
                        &c.dilation}) {
    key.insert(key.end(), v->begin(), v->end());
  }
  key.insert(key.end(), in_strides.begin(), in_strides.end());
  key.insert(key.end(), out_strides.begin(), out_strides.end());
  std::optional<AlgoChoice> cached;
  {
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    auto it = g_algos.find(key);
    if (it != g_algos.end()) cached = it->second;
  }
  if (cached) {
    const cudnnStatus_t s = run(*cached);
    if (s == CUDNN_STATUS_SUCCESS) return s;
    if (!cudnn_rejects(s)) {
      detail::cudnn_fail(s, "cudnnConvolution (cached algorithm)", __FILE__, __LINE__);
    }
    // A rejection with the cached algorithm: rank them again below.
  }

  // The heuristic's ranking; the first algorithm that runs wins.
  std::vector<AlgoChoice> candidates;
  int returned = 0;
  if (!c.transposed) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    AOTRT_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(
        h, in_desc.desc, w_desc.desc, conv.desc, out_desc.desc,
        CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (math == CUDNN_FMA_MATH && perf[i].mathType != CUDNN_FMA_MATH) continue;
      candidates.push_back({static_cast<int>(perf[i].algo), perf[i].mathType, 0});
    }
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    AOTRT_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, w_desc.desc, out_desc.desc, conv.desc, in_desc.desc,
        CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
    for (int i = 0; i < returned; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      if (math == CUDNN_FMA_MATH && perf[i].mathType != CUDNN_FMA_MATH) continue;
      candidates.push_back({static_cast<int>(perf[i].algo), perf[i].mathType, 0});
    }
  }
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  for (AlgoChoice& a : candidates) {
    AOTRT_CUDNN_TRY(cudnnSetConvolutionMathType(conv.desc, a.math));
    cudnnStatus_t s;
    if (!c.transposed) {
      s = cudnnGetConvolutionForwardWorkspaceSize(h, in_desc.desc, w_desc.desc, conv.desc,
                                                  out_desc.desc,
                                                  static_cast<cudnnConvolutionFwdAlgo_t>(a.algo),
                                                  &a.workspace);
    } else {
      s = cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, w_desc.desc, out_desc.desc, conv.desc, in_desc.desc,
          static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), &a.workspace);
    }
    if (s != CUDNN_STATUS_SUCCESS) {
      last = s;
      continue;
    }
    try {
      s = run(a);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kOutOfMemory) throw;
      continue;  // this algorithm's workspace does not fit; try the next
    }
    if (s == CUDNN_STATUS_SUCCESS) {
      std::lock_guard<std::mutex> lock(g_algo_mutex);
      g_algos[key] = a;
      return s;
    }
    if (!cudnn_rejects(s)) {
      detail::cudnn_fail(s, c.transposed ? "cudnnConvolutionBackwardData"
                                         : "cudnnConvolutionForward",
                         __FILE__, __LINE__);
    }
    last = s;
  }
  return last;
}

// Packs a view into a dense tensor of `layout` (a gather of the view
// permuted into that layout's dim order).
struct PackedOperand {
  DeviceBuffer buffer;
  Operand operand;
};

PackedOperand pack_to_layout(const StridedView& v, Layout layout, int device,
                             cudaStream_t stream) {
  const auto order = layout_order(v.sizes.size(), layout);
  std::vector<int64_t> psizes, pstrides;
  for (int d : order) {
    psizes.push_back(v.sizes[static_cast<size_t>(d)]);
    pstrides.push_back(v.strides[static_cast<size_t>(d)]);
  }
  PackedOperand p;
  p.buffer = DeviceBuffer(device, static_cast<size_t>(v.numel()) * v.itemsize());
  gather_for_library(p.buffer.data(),
                     StridedView{v.data, psizes, pstrides, v.dtype, v.device}, stream);
  const auto strides = layout_strides(v.sizes, layout);
  StridedView dense{static_cast<char*>(p.buffer.data()), v.sizes, strides, v.dtype, v.device};
  p.operand = as_cudnn_operand(dense);
  return p;
}

// The stride of the merged pixel index (N, then the spatial dims, row-major)
// of an [N, C, spatial...] view, or nullopt when those dims do not merge.
std::optional<int64_t> pixel_stride(const StridedView& v) {
  int64_t stride = 1, expected = -1;
  for (size_t i = v.sizes.size(); i-- > 0;) {
    if (i == 1 || v.sizes[i] == 1) continue;
    if (expected < 0) {
      stride = v.strides[i];
      expected = stride * v.sizes[i];
    } else if (v.strides[i] != expected) {
      return std::nullopt;
    } else {
      expected *= v.sizes[i];
    }
  }
  return stride;
}

// Note [1x1 convolutions as GEMMs]: true when it ran the convolution.
bool try_conv_as_gemm(const StridedView& x, const StridedView& w, const StridedView& y,
                      const TensorImpl* bias, const char* fn) {
  const auto xs = pixel_stride(x), ys = pixel_stride(y);
  if (!xs || !ys) return false;
  int64_t pixels = x.sizes[0];
  for (size_t i = 2; i < x.sizes.size(); ++i) pixels *= x.sizes[i];
  const int64_t c = x.sizes[1], o = y.sizes[1];
  const std::vector<int64_t> x_sizes{pixels, c}, x_strides{*xs, x.strides[1]};
  const std::vector<int64_t> y_sizes{pixels, o}, y_strides{*ys, y.strides[1]};
  const std::vector<int64_t> w_sizes{c, o}, w_strides{w.strides[1], w.strides[0]};
  const StridedView xm{x.data, x_sizes, x_strides, x.dtype, x.device};
  const StridedView ym{y.data, y_sizes, y_strides, y.dtype, y.device};
  const StridedView wt{w.data, w_sizes, w_strides, w.dtype, w.device};  // w^T
  if (!cublas_addressable(xm) || !cublas_addressable(ym) || !cublas_addressable(wt)) {
    return false;
  }
  if (bias != nullptr) {
    const StridedView b = strided_view(*bias);
    linear_views(ym, xm, wt, &b, fn);
  } else {
    linear_views(ym, xm, wt, nullptr, fn);
  }
  return true;
}

std::vector<int64_t> expand_param(std::span<const int64_t> p, size_t n, const char* name,
                                  const char* fn) {
  AOTRT_CHECK(p.size() == n || p.size() == 1, kInvalidArgument, fn, ": '", name, "' has ",
              p.size(), " values for ", n, " spatial dims");
  if (p.size() == 1) return std::vector<int64_t>(n, p[0]);
  return {p.begin(), p.end()};
}

std::string dims_str(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

std::unique_ptr<TensorImpl> convolution(const TensorImpl& input, const TensorImpl& weight,
                                        const TensorImpl* bias, const ConvParams& params,
                                        const char* fn) {
  // --- Arguments, as ATen checks them.
  AOTRT_CHECK(input.device().is_cuda(), kInvalidArgument, fn, ": 'input' is on ",
              input.device().str(), ", not on a CUDA device");
  AOTRT_CHECK(weight.device() == input.device(), kInvalidArgument, fn, ": 'weight' is on ",
              weight.device().str(), " but 'input' is on ", input.device().str());
  const ScalarType dtype = input.dtype();
  (void)cudnn_data_type(dtype, fn);
  AOTRT_CHECK(weight.dtype() == dtype, kInvalidArgument, fn, ": input type (",
              dtype_name(dtype), ") and weight type (", dtype_name(weight.dtype()),
              ") should be the same");
  const int64_t ndim = input.dim();
  AOTRT_CHECK(ndim >= 3 && ndim <= 5, kUnsupported, fn, ": a ", ndim,
              "-d input is not served (1-d, 2-d and 3-d convolutions take 3-d to 5-d input)");
  AOTRT_CHECK(weight.dim() == ndim, kInvalidArgument, fn, ": weight has ", weight.dim(),
              " dims but input has ", ndim);
  const size_t spatial = static_cast<size_t>(ndim - 2);
  const auto stride = expand_param(params.stride, spatial, "stride", fn);
  const auto padding = expand_param(params.padding, spatial, "padding", fn);
  const auto dilation = expand_param(params.dilation, spatial, "dilation", fn);
  std::vector<int64_t> output_padding(spatial, 0);
  if (params.transposed) {
    output_padding = expand_param(params.output_padding, spatial, "output_padding", fn);
  }
  const int64_t groups = params.groups;
  AOTRT_CHECK(groups > 0, kInvalidArgument, fn, ": groups ", groups, " must be positive");
  for (size_t i = 0; i < spatial; ++i) {
    AOTRT_CHECK(stride[i] > 0, kInvalidArgument, fn, ": stride ", dims_str(stride),
                " must be positive");
    AOTRT_CHECK(dilation[i] > 0, kInvalidArgument, fn, ": dilation ", dims_str(dilation),
                " must be positive");
    AOTRT_CHECK(padding[i] >= 0, kInvalidArgument, fn, ": padding ", dims_str(padding),
                " must be non-negative");
    AOTRT_CHECK(output_padding[i] >= 0 &&
                    (output_padding[i] < stride[i] || output_padding[i] < dilation[i]),
                kInvalidArgument, fn, ": output padding ", dims_str(output_padding),
                " must be smaller than either stride or dilation");
  }
  const auto in = input.sizes();
  const auto w = weight.sizes();
  const int64_t c_in = in[1];
  int64_t c_out;
  if (!params.transposed) {
    AOTRT_CHECK(w[0] % groups == 0 && w[1] * groups == c_in, kInvalidArgument, fn,
                ": weight of size ", dims_str(w), " with groups=", groups,
                " expects input with ", w[1] * groups, " channels, but got ", c_in);
    c_out = w[0];
  } else {
    AOTRT_CHECK(w[0] == c_in && c_in % groups == 0, kInvalidArgument, fn, ": weight of size ",
                dims_str(w), " with groups=", groups, " expects input with ", w[0],
                " channels (transposed), but got ", c_in);
    c_out = w[1] * groups;
  }
  std::vector<int64_t> out_sizes{in[0], c_out};
  for (size_t i = 0; i < spatial; ++i) {
    const int64_t extent = dilation[i] * (w[i + 2] - 1) + 1;
    const int64_t size = params.transposed
                             ? (in[i + 2] - 1) * stride[i] - 2 * padding[i] + extent +
                                   output_padding[i]
                             : (in[i + 2] + 2 * padding[i] - extent) / stride[i] + 1;
    AOTRT_CHECK(size > 0 && (params.transposed || in[i + 2] + 2 * padding[i] >= extent),
                kInvalidArgument, fn, ": input size per channel ",
                dims_str(in.subspan(2)), " with kernel ", dims_str(w.subspan(2)),
                " gives an output that is too small");
    out_sizes.push_back(size);
  }
  if (bias != nullptr) {
    AOTRT_CHECK(bias->device() == input.device() && bias->dtype() == dtype &&
                    bias->dim() == 1 && bias->sizes()[0] == c_out,
                kInvalidArgument, fn, ": bias must be a ", dtype_name(dtype), " [", c_out,
                "] tensor on ", input.device().str(), ", got ", dtype_name(bias->dtype()),
                " ", dims_str(bias->sizes()), " on ", bias->device().str());
  }

  // --- The output (Note [Convolution output layout]).
  const StridedView x_view = strided_view(input);
  const StridedView w_view = strided_view(weight);
  Operand x4 = as_cudnn_operand(x_view);
  Operand w4 = as_cudnn_operand(w_view);
  if (ndim == 3) {
    // ATen makes a 1-d input contiguous before unsqueezing it.
    x4.strides = layout_strides(x4.sizes, Layout::kContiguous);
  }
  const bool channels_last = suggests_channels_last(x4.sizes, x4.strides) ||
                             suggests_channels_last(w4.sizes, w4.strides);
  const Layout layout = channels_last ? Layout::kChannelsLast : Layout::kContiguous;
  std::vector<int64_t> out_strides;
  if (ndim == 3) {
    const int64_t l = out_sizes[2];
    out_strides = channels_last ? std::vector<int64_t>{l * c_out, 1, c_out}
                                : layout_strides(out_sizes, Layout::kContiguous);
  } else {
    out_strides = layout_strides(out_sizes, layout);
  }
  auto out = empty_strided(out_sizes, out_strides, dtype, input.device(), fn);
  if (out->numel() == 0) return out;

  const int device = input.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = current_cuda_stream(device);
  const StridedView y_view = strided_view(*out);

  bool pointwise = !params.transposed && groups == 1;
  for (size_t i = 0; i < spatial; ++i) {
    pointwise = pointwise && w[i + 2] == 1 && stride[i] == 1 && padding[i] == 0;
  }
  if (pointwise && try_conv_as_gemm(x_view, w_view, y_view, bias, fn)) return out;

  // Note [Large output padding]: dims cuDNN computes uncropped.
  std::vector<bool> uncropped(spatial, false);
  bool any_uncropped = false;
  for (size_t i = 0; i < spatial && params.transposed; ++i) {
    uncropped[i] = output_padding[i] >= stride[i];
    any_uncropped = any_uncropped || uncropped[i];
  }
  std::unique_ptr<TensorImpl> full;
  StridedView target_view = y_view;
  if (any_uncropped) {
    std::vector<int64_t> full_sizes{in[0], c_out};
    for (size_t i = 0; i < spatial; ++i) {
      full_sizes.push_back(uncropped[i] ? (in[i + 2] - 1) * stride[i] +
                                              dilation[i] * (w[i + 2] - 1) + 1
                                        : out_sizes[i + 2]);
    }
    std::vector<int64_t> full_strides = layout_strides(full_sizes, layout);
    if (ndim == 3 && channels_last) full_strides = {full_sizes[2] * c_out, 1, c_out};
    full = empty_strided(full_sizes, full_strides, dtype, input.device(), fn);
    target_view = strided_view(*full);
  }

  ConvCall call;
  call.device = device;
  call.stream = stream;
  call.dtype = dtype;
  call.transposed = params.transposed;
  call.groups = groups;
  call.layout = layout;
  call.fn = fn;
  call.padding = padding;
  call.stride = stride;
  call.dilation = dilation;
  for (size_t i = 0; i < spatial; ++i) {
    if (uncropped[i]) call.padding[i] = 0;
  }
  if (ndim == 3) {  // the size-1 H
    call.padding.insert(call.padding.begin(), 0);
    call.stride.insert(call.stride.begin(), 1);
    call.dilation.insert(call.dilation.begin(), 1);
  }
  call.x = as_cudnn_operand(x_view);
  call.y = as_cudnn_operand(target_view);

  const int64_t reduced = params.transposed ? c_in / groups : w[1];
  if (reduced == 0 || x_view.numel() == 0) {
    fill_zero_device(target_view, stream);  // an empty sum
  } else {
    // Note [Convolution operands in place]: the weight in whichever dense
    // layout it has (preferring the output's), the input as it is.
    std::vector<PackedOperand> packs;
    call.w = as_cudnn_operand(w_view);
    if (dense_in(call.w.sizes, call.w.strides, layout)) {
      call.w_layout = layout;
    } else {
      const Layout other = layout == Layout::kChannelsLast ? Layout::kContiguous
                                                           : Layout::kChannelsLast;
      if (dense_in(call.w.sizes, call.w.strides, other)) {
        call.w_layout = other;
      } else {
        packs.push_back(pack_to_layout(w_view, layout, device, stream));
        call.w = packs.back().operand;
        call.w_layout = layout;
      }
    }
    cudnnStatus_t status = try_conv(call);
    if (status != CUDNN_STATUS_SUCCESS) {
      // Rejected: pack what is not already dense in the output's layout.
      const bool x_dense = dense_in(call.x.sizes, call.x.strides, layout);
      const bool w_dense = call.w_layout == layout;
      AOTRT_CHECK(!(x_dense && w_dense), kBackend, fn, ": cuDNN rejected the convolution (",
                  cudnnGetErrorString(status), ") for input ", dims_str(in), " weight ",
                  dims_str(w), " in ",
                  layout == Layout::kChannelsLast ? "channels-last" : "contiguous",
                  " layout");
      if (!x_dense) {
        packs.push_back(pack_to_layout(x_view, layout, device, stream));
        call.x = packs.back().operand;
      }
      if (!w_dense) {
        packs.push_back(pack_to_layout(w_view, layout, device, stream));
        call.w = packs.back().operand;
        call.w_layout = layout;
      }
      status = try_conv(call);
      AOTRT_CHECK(status == CUDNN_STATUS_SUCCESS, kBackend, fn,
                  ": cuDNN rejected the convolution even with packed operands (",
                  cudnnGetErrorString(status), ") for input ", dims_str(in), " weight ",
                  dims_str(w), " stride ", dims_str(stride), " padding ", dims_str(padding),
                  " dilation ", dims_str(dilation), " groups ", groups);
    }
  }

  if (full) {
    // Note [Large output padding]: the window of the uncropped result.
    fill_zero_device(y_view, stream);
    std::vector<int64_t> window(out_sizes.begin(), out_sizes.begin() + 2);
    char* src = target_view.data;
    bool empty = false;
    for (size_t i = 0; i < spatial; ++i) {
      int64_t len = out_sizes[i + 2];
      if (uncropped[i]) {
        len = std::min(len, full->sizes()[i + 2] - padding[i]);
        src += padding[i] * target_view.strides[i + 2] * static_cast<int64_t>(y_view.itemsize());
      }
      empty = empty || len <= 0;
      window.push_back(len);
    }
    if (!empty) {
      copy_for_library(StridedView{y_view.data, window, y_view.strides, dtype, y_view.device},
                       StridedView{src, window, target_view.strides, dtype, y_view.device},
                       stream);
    }
  }

  // --- Bias, broadcast over N and the spatial dims.
  if (bias != nullptr) {
    const Operand y = as_cudnn_operand(y_view);
    const PackedInput dense_bias = pack_for_library(strided_view(*bias), stream);
    Operand b;
    b.data = dense_bias.view.data;
    b.sizes.assign(y.sizes.size(), 1);
    b.sizes[1] = c_out;
    b.strides.assign(y.sizes.size(), 1);
    const cudnnDataType_t t = cudnn_data_type(dtype, fn);
    TensorDesc b_desc, y_desc;
    const auto b_sizes = to_ints(b.sizes, "size", fn), y_sizes = to_ints(y.sizes, "size", fn);
    const auto b_strides = cudnn_strides(b, Layout::kContiguous, fn);
    const auto y_strides = cudnn_strides(y, layout, fn);
    AOTRT_CUDNN_CHECK(cudnnSetTensorNdDescriptor(b_desc.desc, t, static_cast<int>(b.sizes.size()),
                                                 b_sizes.data(), b_strides.data()));
    AOTRT_CUDNN_CHECK(cudnnSetTensorNdDescriptor(y_desc.desc, t, static_cast<int>(y.sizes.size()),
                                                 y_sizes.data(), y_strides.data()));
    const float one = 1.0f;
    AOTRT_CUDNN_CHECK(cudnnAddTensor(cudnn_handle(device, stream), &one, b_desc.desc, b.data,
                                     &one, y_desc.desc, y.data));
  }
  return out;
}

}  // namespace aotrt::cuda
