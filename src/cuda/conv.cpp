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
// epilogue. It is a convolution, so it follows the convolution TF32 policy
// (Note [TF32]): in eager it would run on cuDNN with TF32 allowed by
// default. Under the matmul policy instead, resnet50 b32's 1x1 convolutions
// ran as plain fp32 FFMA GEMMs: 2.8 ms of a 5.1 ms run (bench/kernel_times.py).
//
// Note [Large output padding]
// cuDNN computes a transposed convolution as the gradient of a forward one,
// which exists only when output_padding < stride in every dim (ATen sends
// the other cases to its slow kernel). For a dim with output_padding >=
// stride we run cuDNN without padding there - the full, uncropped result -
// into a temporary, and copy the window [padding, padding + out) of it into
// the output, whose remaining rows get no contribution and stay zero.
//
// Note [Convolution plans]
// Convolutions run on cuDNN's graph (backend) API, as ATen's v8 path does:
// the legacy cudnnConvolutionForward of cuDNN 9 rebuilds an engine plan on
// every call, which cost ~70 us of host time per convolution (resnet18 b1 was
// bound by it), and its algorithm enum cannot reach the newer engines. Per
// configuration (device, dtype, sizes, strides, pointer alignments,
// parameters, TF32 policy) the first call builds an operation graph, asks
// cuDNN's heuristic (mode A) for ranked engine configurations, and keeps the
// first that finalizes and whose workspace can be allocated; later calls
// only bind pointers (a variant pack, itself reused while the addresses stay
// the same) and execute. Prebuilt engines are preferred to those cuDNN
// compiles at run time with NVRTC: on the H200 those added 2.5 s to the first
// run of mobilenet_v3_small (its depthwise convolutions); they are taken only when no prebuilt engine serves the
// configuration. Engines that down-convert
// inputs are skipped, and fp32 engines on tensor cores (TF32) when Note [TF32]
// forbids them, as ATen filters them. Nothing is timed and nothing
// synchronizes (cudnn.benchmark = False). Plans are kept per thread, as
// ATen keeps them: an execution plan may not be used by two threads at once.
// A configuration cuDNN rejects is remembered too, so that the retry with
// packed operands (Note [Convolution operands in place]) is all that repeats.
#include <algorithm>
#include <array>
#include <climits>
#include <unordered_map>
#include <utility>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/view.h"
#include "cuda/handles.h"
#include "cuda/library_ops.h"
#include "shim/profile.h"

namespace aotrt::cuda {
namespace {

enum class Layout { kContiguous, kChannelsLast };

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
std::vector<int64_t> cudnn_strides(const Operand& o, Layout layout) {
  const auto order = layout_order(o.sizes.size(), layout);
  std::vector<int64_t> s = o.strides;
  int64_t inner = 1;  // stride * size of the next-inner dim in the layout
  for (size_t i = order.size(); i-- > 0;) {
    const auto d = static_cast<size_t>(order[i]);
    if (o.sizes[d] == 1) s[d] = std::max<int64_t>(inner, 1);
    inner = s[d] * std::max<int64_t>(o.sizes[d], 1);
  }
  return s;
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

// A legacy tensor descriptor (the bias add).
struct TensorDesc {
  cudnnTensorDescriptor_t desc = nullptr;
  TensorDesc() { AOTRT_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc)); }
  ~TensorDesc() { (void)cudnnDestroyTensorDescriptor(desc); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
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

// --- cuDNN graph API descriptors ------------------------------------------------------------

// One backend descriptor, destroyed with its owner.
class BackendDesc {
 public:
  BackendDesc() = default;
  explicit BackendDesc(cudnnBackendDescriptorType_t type) {
    AOTRT_CUDNN_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
  }
  ~BackendDesc() { reset(); }
  BackendDesc(BackendDesc&& other) noexcept : desc_(std::exchange(other.desc_, nullptr)) {}
  BackendDesc& operator=(BackendDesc&& other) noexcept {
    if (this != &other) {
      reset();
      desc_ = std::exchange(other.desc_, nullptr);
    }
    return *this;
  }
  BackendDesc(const BackendDesc&) = delete;
  BackendDesc& operator=(const BackendDesc&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  cudnnStatus_t set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                    int64_t count, const void* values) const {
    return cudnnBackendSetAttribute(desc_, name, type, count, values);
  }
  cudnnStatus_t set(cudnnBackendAttributeName_t name, const BackendDesc& value) const {
    cudnnBackendDescriptor_t d = value.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &d);
  }
  cudnnStatus_t set(cudnnBackendAttributeName_t name, std::span<const int64_t> values) const {
    return set(name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()), values.data());
  }
  cudnnStatus_t finalize() const { return cudnnBackendFinalize(desc_); }

 private:
  void reset() noexcept {
    if (desc_ != nullptr) (void)cudnnBackendDestroyDescriptor(desc_);
    desc_ = nullptr;
  }
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// cuDNN 9 deprecates the handle attributes of graphs and plans in later
// releases but the earlier ones require them; setting them is valid in all.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle = CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle = CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

// The tensors' ids in the graph and the variant pack.
constexpr int64_t kUidX = 'x', kUidW = 'w', kUidY = 'y';

// Largest power of two (at most 16) dividing the address: what the engines
// may assume when they vectorize loads.
int64_t cudnn_alignment(const void* p) {
  return std::min<int64_t>(pointer_alignment(p), 16);
}

cudnnStatus_t make_tensor(BackendDesc& t, int64_t uid, cudnnDataType_t type,
                          std::span<const int64_t> sizes, std::span<const int64_t> strides,
                          int64_t alignment) {
  t = BackendDesc(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  AOTRT_CUDNN_TRY(t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type));
  AOTRT_CUDNN_TRY(t.set(CUDNN_ATTR_TENSOR_DIMENSIONS, sizes));
  AOTRT_CUDNN_TRY(t.set(CUDNN_ATTR_TENSOR_STRIDES, strides));
  AOTRT_CUDNN_TRY(t.set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  AOTRT_CUDNN_TRY(t.set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment));
  return t.finalize();
}

// Reads an engine's notes of one kind (numerical or behaviour) into `notes`;
// false when cuDNN cannot say.
template <typename Note, size_t N>
bool read_notes(cudnnBackendDescriptor_t engine, cudnnBackendAttributeName_t name,
                cudnnBackendAttributeType_t type, Note (&notes)[N], int64_t& count) {
  count = 0;
  return cudnnBackendGetAttribute(engine, name, type, static_cast<int64_t>(N), &count, notes) ==
         CUDNN_STATUS_SUCCESS;
}

// True when the engine of `config` may run under the TF32 policy and, unless
// `compiled_at_runtime` allows it, comes prebuilt (Note [Convolution plans]).
bool engine_allowed(const BackendDesc& config, bool fp32_without_tf32, bool compiled_at_runtime) {
  BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t count = 0;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) !=
      CUDNN_STATUS_SUCCESS) {
    return false;
  }
  cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
  if (!read_notes(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, notes, count)) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (fp32_without_tf32 && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return false;
  }
  if (compiled_at_runtime) return true;
  cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT];
  if (!read_notes(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE, behavior, count)) {
    return false;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION) return false;
  }
  return true;
}

// --- The plan cache (Note [Convolution plans]) ----------------------------------------------

struct ConvPlan {
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;  // a rejection, remembered
  BackendDesc plan;
  int64_t workspace = 0;
  // The last variant pack and the addresses it binds (x, w, y, workspace):
  // in a steady state the caching allocator hands out the same addresses
  // run after run, and the pack is reused as it is.
  BackendDesc pack;
  std::array<void*, 4> bound{};
};

struct KeyHash {
  size_t operator()(const std::vector<int64_t>& key) const noexcept {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int64_t v : key) h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
    return static_cast<size_t>(h);
  }
};

// Configurations a thread keeps before it starts over: far more than the
// convolutions of any model, a bound for processes that see endless shapes.
constexpr size_t kMaxPlansPerThread = 4096;

// --- One attempt ----------------------------------------------------------------------

struct ConvCall {
  int device = 0;
  cudaStream_t stream = nullptr;
  ScalarType dtype = ScalarType::Float32;
  bool transposed = false;
  std::vector<int64_t> padding, stride, dilation;  // per spatial dim, cuDNN's count
  Operand x, w, y;                                 // w: dense in w_layout
  Layout layout = Layout::kContiguous;             // of y (and the target for x)
  Layout w_layout = Layout::kContiguous;
  const char* fn = "";
};

// The convolution as a finalized plan, or the status with which cuDNN
// rejected it. For a transposed convolution the roles swap: cuDNN computes
// the gradient of a forward convolution from y (its "input") to x (its
// "output"), so X is fwd_in and Y is fwd_out in both directions.
cudnnStatus_t build_plan(ConvPlan& out, const ConvCall& c, const Operand& fwd_in,
                         const Operand& fwd_out, std::span<const int64_t> in_strides,
                         std::span<const int64_t> w_strides, std::span<const int64_t> out_strides,
                         cudnnHandle_t h) {
  const cudnnDataType_t t = cudnn_data_type(c.dtype, c.fn);
  BackendDesc x, w, y;
  AOTRT_CUDNN_TRY(make_tensor(x, kUidX, t, fwd_in.sizes, in_strides, cudnn_alignment(fwd_in.data)));
  AOTRT_CUDNN_TRY(make_tensor(w, kUidW, t, c.w.sizes, w_strides, cudnn_alignment(c.w.data)));
  AOTRT_CUDNN_TRY(
      make_tensor(y, kUidY, t, fwd_out.sizes, out_strides, cudnn_alignment(fwd_out.data)));

  // fp16 and bf16 accumulate in fp32, as ATen does.
  BackendDesc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = static_cast<int64_t>(c.padding.size());
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute));
  AOTRT_CUDNN_TRY(
      conv.set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial));
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_DILATIONS, c.dilation));
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, c.stride));
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, c.padding));
  AOTRT_CUDNN_TRY(conv.set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, c.padding));
  AOTRT_CUDNN_TRY(conv.finalize());

  const float alpha = 1.0f, beta = 0.0f;
  BackendDesc op;
  if (!c.transposed) {
    op = BackendDesc(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  } else {
    op = BackendDesc(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta));
  }
  AOTRT_CUDNN_TRY(op.finalize());

  BackendDesc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  AOTRT_CUDNN_TRY(graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op));
  AOTRT_CUDNN_TRY(graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &h));
  AOTRT_CUDNN_TRY(graph.finalize());

  const bool fp32_without_tf32 = c.dtype == ScalarType::Float32 && !conv_allows_tf32();
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
  // The heuristic's ranking first; cuDNN's fallback engines if none of it runs.
  for (cudnnBackendHeurMode_t heur_mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    BackendDesc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    AOTRT_CUDNN_TRY(heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph));
    AOTRT_CUDNN_TRY(heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &heur_mode));
    if (const cudnnStatus_t s = heur.finalize(); s != CUDNN_STATUS_SUCCESS) {
      last = s;
      continue;
    }
    int64_t count = 0;
    AOTRT_CUDNN_TRY(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<BackendDesc> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    for (int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    int64_t returned = 0;
    AOTRT_CUDNN_TRY(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                             raw.data()));
    // Prebuilt engines first; those compiled at run time only if none runs.
    for (int64_t k = 0; k < 2 * std::min(returned, count); ++k) {
      const int64_t i = k % std::min(returned, count);
      const bool compiled_at_runtime = k >= std::min(returned, count);
      if (!engine_allowed(configs[static_cast<size_t>(i)], fp32_without_tf32, compiled_at_runtime) ||
          (compiled_at_runtime &&
           engine_allowed(configs[static_cast<size_t>(i)], fp32_without_tf32, false))) {
        continue;  // not allowed, or already tried among the prebuilt ones
      }
      BackendDesc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      AOTRT_CUDNN_TRY(plan.set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &h));
      AOTRT_CUDNN_TRY(plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                               configs[static_cast<size_t>(i)]));
      if (const cudnnStatus_t s = plan.finalize(); s != CUDNN_STATUS_SUCCESS) {
        last = s;
        continue;  // this engine cannot run this configuration
      }
      int64_t workspace = 0, n = 0;
      AOTRT_CUDNN_TRY(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                               CUDNN_TYPE_INT64, 1, &n, &workspace));
      if (workspace > 0) {
        try {
          DeviceBuffer probe(c.device, static_cast<size_t>(workspace));
        } catch (const Error& e) {
          if (e.kind() != ErrorKind::kOutOfMemory) throw;
          continue;  // this engine's workspace does not fit; try the next
        }
      }
      out.plan = std::move(plan);
      out.workspace = workspace;
      return CUDNN_STATUS_SUCCESS;
    }
  }
  return last;
}

// Runs the convolution; returns SUCCESS or the status with which cuDNN
// rejected this layout.
cudnnStatus_t try_conv(const ConvCall& c) {
  const Operand& fwd_in = c.transposed ? c.y : c.x;
  const Operand& fwd_out = c.transposed ? c.x : c.y;
  const std::vector<int64_t> in_strides = cudnn_strides(fwd_in, c.layout);
  const std::vector<int64_t> out_strides = cudnn_strides(fwd_out, c.layout);
  const std::vector<int64_t> w_strides = cudnn_strides(c.w, c.w_layout);
  // Before the thread's plans exist, so that they are destroyed before it.
  cudnnHandle_t h = cudnn_handle(c.device, c.stream);
  thread_local std::unordered_map<std::vector<int64_t>, ConvPlan, KeyHash> t_plans;

  // The cache key: everything the plan depends on.
  std::vector<int64_t> key{c.device, static_cast<int64_t>(c.dtype), c.transposed,
                           conv_allows_tf32(), static_cast<int64_t>(fwd_in.sizes.size()),
                           cudnn_alignment(fwd_in.data), cudnn_alignment(c.w.data),
                           cudnn_alignment(fwd_out.data)};
  key.reserve(key.size() + 7 * fwd_in.sizes.size());
  for (const auto* v : {&fwd_in.sizes, &fwd_out.sizes, &c.w.sizes, &w_strides, &c.padding,
                        &c.stride, &c.dilation, &in_strides, &out_strides}) {
    key.insert(key.end(), v->begin(), v->end());
  }
  auto it = t_plans.find(key);
  if (it == t_plans.end()) {
    if (t_plans.size() >= kMaxPlansPerThread) t_plans.clear();
    ConvPlan built;
    built.status = build_plan(built, c, fwd_in, fwd_out, in_strides, w_strides, out_strides, h);
    it = t_plans.emplace(std::move(key), std::move(built)).first;
  }
  ConvPlan& plan = it->second;
  if (plan.status != CUDNN_STATUS_SUCCESS) return plan.status;

  DeviceBuffer workspace;
  if (plan.workspace > 0) workspace = DeviceBuffer(c.device, static_cast<size_t>(plan.workspace));
  const std::array<void*, 4> bound{fwd_in.data, c.w.data, fwd_out.data, workspace.data()};
  if (plan.pack.get() == nullptr || plan.bound != bound) {
    profiling::LibraryCallTimer timer("cudnn variant pack (new addresses)");
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    BackendDesc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    AOTRT_CUDNN_CHECK(
        pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, bound.data()));
    AOTRT_CUDNN_CHECK(pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
    AOTRT_CUDNN_CHECK(
        pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &bound[3]));
    AOTRT_CUDNN_CHECK(pack.finalize());
    plan.pack = std::move(pack);
    plan.bound = bound;
  }
  cudnnStatus_t s;
  {
    profiling::LibraryCallTimer timer("cudnnBackendExecute");
    s = cudnnBackendExecute(h, plan.plan.get(), plan.pack.get());
  }
  if (s != CUDNN_STATUS_SUCCESS) {
    if (!cudnn_rejects(s)) detail::cudnn_fail(s, "cudnnBackendExecute", __FILE__, __LINE__);
    plan.status = s;  // remembered: the caller packs from now on
  }
  return s;
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
    linear_views(ym, xm, wt, &b, conv_allows_tf32(), fn);
  } else {
    linear_views(ym, xm, wt, nullptr, conv_allows_tf32(), fn);
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
    const auto b_strides = to_ints(cudnn_strides(b, Layout::kContiguous), "stride", fn);
    const auto y_strides = to_ints(cudnn_strides(y, layout), "stride", fn);
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
