// aten::convolution on cuDNN's convolution API (forward, and backward-data
// for transposed convolutions), taking the input's real strides.
//
// Note [Convolution output layout]
// The output is new memory, laid out as ATen's cuDNN path lays it out,
// because the generated code that reads it was compiled against those
// strides: channels-last (channels-last-3d for 5-D) when the input OR the
// weight suggests it (ATen's cudnn_conv_suggest_memory_format, with c10's
// is_channels_last_strides_2d/_3d applied to the strides we are given),
// contiguous otherwise, and always for float64 (that function's exception:
// inductor lays a float64 model out channels-last all the same and reads the
// convolution's output as contiguous; the H200 saw the bias kernel after a
// float64 conv2d add to the wrong pixels when aotrt returned NHWC). A 1-D
// convolution is run as a 2-D one with H = 1 on a contiguous input, as ATen
// does; only a channels-last weight makes its output [N, C, L] with strides
// [L*C, 1, C]. Depthwise convolutions follow
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
// parameters, TF32 policy) the first call builds an operation graph and
// chooses an engine config (Note [Convolution autotuning]); later calls only
// bind pointers (a variant pack, itself reused while the addresses stay the
// same) and execute. That per-call path allocates nothing on the host: the
// configuration's key is a fixed-size array (PlanKey), sizes and strides are
// small arrays in place (Dims), the bias add's descriptors are the thread's.
// cuDNN's heuristic (mode A, then its fallback mode) ranks the engine configs.
// Prebuilt engines are preferred to those cuDNN
// compiles at run time with NVRTC: on the H200 those added 2.5 s to the first
// run of mobilenet_v3_small (its depthwise convolutions); they are taken only when no prebuilt engine serves the
// configuration. Engines that down-convert
// inputs are skipped, and fp32 engines on tensor cores (TF32) when Note [TF32]
// forbids them, as ATen filters them. Plans are kept per thread, as
// ATen keeps them: an execution plan may not be used by two threads at once.
// A configuration cuDNN rejects is remembered too, so that the retry with
// packed operands (Note [Convolution operands in place]) is all that repeats.
//
// Note [Convolution autotuning]
// As torch.backends.cudnn.benchmark = True does, the first call of a
// configuration times the engines the heuristic ranks first and keeps the
// fastest. Candidates: up to kTuningCandidates (8) prebuilt engine configs of
// mode A that pass the filters of Note [Convolution plans] (TF32 policy, no
// down-conversion: each computes what the untuned plan computes, up to its
// own rounding), finalize, and whose workspace can be allocated. Eight,
// because the ranking is good - its winner is nearly always among its first
// few - and each candidate costs a plan finalization and four runs; ATen
// tries at most 10 (torch.backends.cudnn.benchmark_limit). Each runs on the
// call's stream with the call's own operands (the output is overwritten, as
// the call itself then overwrites it) and a workspace from the caching
// allocator, freed after: one warm-up run, then kTimedRuns between
// cudaEvents; the fastest median wins, and a candidate that fails to execute
// is skipped. The host waits for the device once, for the last event, on a
// configuration's first call only: a one-time cost like building the plan,
// never in a steady-state run. The profile's "cudnn conv autotune" row
// (aotrt bench --profile) measures it; on the H200 it is yet to be measured. While the stream captures a CUDA graph nothing is timed
// (a capture forbids the wait): a stored choice or the heuristic's first is
// used. Graph mode's warm-up runs are not captured (Note [CUDA graph mode]),
// so its first warm-up run tunes; the candidates' workspace blocks then stay
// in the graph's private pool. Engines compiled at run time are never timed:
// one is the only candidate when no prebuilt engine serves.
// Choices are shared by the process's threads and kept on disk
// (runtime/conv_tuning_file.h, Note [Convolution tuning file]), keyed by
// cuDNN's version (cudnnGetVersion), the device's name and compute capability
// and the plan key (less the device index); a choice is the engine's global
// index and knob choices, from which a thread or a later process rebuilds the
// same engine config without timing (one that no longer finalizes is tuned
// again). The table's mutex is taken on a configuration's first call on a
// thread only. The file is AOTRT_CUDNN_TUNING_CACHE when set ("0": memory
// only), else $XDG_CACHE_HOME/aotrt/cudnn-conv-tuning-v1.txt, else
// $HOME/.cache/aotrt/cudnn-conv-tuning-v1.txt. AOTRT_CUDNN_BENCHMARK=0 turns
// tuning off: the heuristic's first choice, and no file is read or written.
// Both are read once, at the first convolution; like
// torch.backends.cudnn.benchmark they are process-wide, not per model.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/plan_key.h"
#include "core/view.h"
#include "cuda/call_graphs.h"
#include "cuda/handles.h"
#include "cuda/library_ops.h"
#include "runtime/conv_tuning_file.h"
#include "shim/profile.h"

namespace aotrt::cuda {
namespace {

// Sizes, strides or per-dim parameters of at most five dims (N, C and three
// spatial), held in place so that the per-call path builds no std::vector.
constexpr size_t kMaxDims = 5;
class Dims {
 public:
  Dims() = default;
  Dims(std::span<const int64_t> values) {  // NOLINT: converts like a span
    for (int64_t v : values) push_back(v);
  }
  Dims(std::initializer_list<int64_t> values)
      : Dims(std::span<const int64_t>(values.begin(), values.size())) {}
  static Dims filled(size_t n, int64_t value) {
    Dims d;
    for (size_t i = 0; i < n; ++i) d.push_back(value);
    return d;
  }

  size_t size() const { return n_; }
  int64_t& operator[](size_t i) { return v_[i]; }
  int64_t operator[](size_t i) const { return v_[i]; }
  const int64_t* begin() const { return v_.data(); }
  const int64_t* end() const { return v_.data() + n_; }
  operator std::span<const int64_t>() const { return {v_.data(), n_}; }  // NOLINT

  void push_back(int64_t v) {
    AOTRT_CHECK(n_ < kMaxDims, kInternal, "convolution: more than ", kMaxDims, " dims");
    v_[n_++] = v;
  }
  void insert(size_t at, int64_t v) {
    push_back(0);
    for (size_t i = n_ - 1; i > at; --i) v_[i] = v_[i - 1];
    v_[at] = v;
  }

 private:
  std::array<int64_t, kMaxDims> v_{};
  size_t n_ = 0;
};

enum class Layout { kContiguous, kChannelsLast };

// c10's suggest_memory_format, for the 4-D or 5-D shapes cuDNN sees.
bool suggests_channels_last(std::span<const int64_t> sizes, std::span<const int64_t> strides) {
  return sizes.size() == 4 ? is_channels_last_strides_2d(sizes, strides)
                           : is_channels_last_strides_3d(sizes, strides);
}

// Dims from outermost to innermost in a layout.
Dims layout_order(size_t ndim, Layout layout) {
  Dims order;
  for (size_t d = 0; d < ndim; ++d) order.push_back(static_cast<int64_t>(d));
  if (layout == Layout::kChannelsLast) {
    for (size_t i = 1; i + 1 < ndim; ++i) order[i] = order[i + 1];  // N, spatial..., C
    order[ndim - 1] = 1;
  }
  return order;
}

// Strides of a dense tensor in a layout; like c10, size-0 dims count as 1.
Dims layout_strides(std::span<const int64_t> sizes, Layout layout) {
  const Dims order = layout_order(sizes.size(), layout);
  Dims strides = Dims::filled(sizes.size(), 0);
  int64_t running = 1;
  for (size_t i = order.size(); i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = running;
    running = checked_mul(running, std::max<int64_t>(sizes[static_cast<size_t>(order[i])], 1), "cuDNN strides");
  }
  return strides;
}

bool dense_in(std::span<const int64_t> sizes, std::span<const int64_t> strides, Layout layout) {
  const Dims want = layout_strides(sizes, layout);
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && strides[d] != want[d]) return false;
  }
  return true;
}

// A tensor as cuDNN will see it: 4-D or 5-D, borrowed memory.
struct Operand {
  char* data = nullptr;
  Dims sizes;
  Dims strides;
};

// 1-D convolutions run as 2-D with a size-1 H at dim 2.
Operand as_cudnn_operand(const StridedView& v) {
  Operand o{v.data, v.sizes, v.strides};
  if (o.sizes.size() == 3) {
    o.sizes.insert(2, 1);
    o.strides.insert(2, o.strides[2] * std::max<int64_t>(o.sizes[3], 1));
  }
  return o;
}

// Note [Convolution operands in place]: positive strides for size-1 dims.
Dims cudnn_strides(const Operand& o, Layout layout) {
  const Dims order = layout_order(o.sizes.size(), layout);
  Dims s = o.strides;
  int64_t inner = 1;  // stride * size of the next-inner dim in the layout
  for (size_t i = order.size(); i-- > 0;) {
    const auto d = static_cast<size_t>(order[i]);
    if (o.sizes[d] == 1) s[d] = std::max<int64_t>(inner, 1);
    inner = s[d] * std::max<int64_t>(o.sizes[d], 1);
  }
  return s;
}

std::array<int, kMaxDims> to_ints(std::span<const int64_t> v, const char* what, const char* fn) {
  std::array<int, kMaxDims> out{};
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

// An engine config made into a plan that can run now.
struct Candidate {
  BackendDesc config;
  BackendDesc plan;
  int64_t workspace = 0;
};

struct ConvPlan {
  uint64_t id = next_library_plan_id();  // Note [Library call graphs]
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;  // a rejection, remembered
  BackendDesc plan;
  int64_t workspace = 0;
  // The last variant pack and the addresses it binds (x, w, y, workspace):
  // in a steady state the caching allocator hands out the same addresses
  // run after run, and the pack is reused as it is.
  BackendDesc pack;
  std::array<void*, 4> bound{};
};

// The configuration as a PlanKey (core/plan_key.h): 8 header values, then
// six 5-d and three 3-d lists at most (47 of its 48).

// Configurations a thread keeps before it starts over: far more than the
// convolutions of any model, a bound for processes that see endless shapes.
constexpr size_t kMaxPlansPerThread = 4096;

using PlanMap = std::unordered_map<PlanKey, ConvPlan, PlanKeyHash>;

// Whether this thread made its plan map: the test hook clears only a map
// that exists, so that it never makes one before the thread's cuDNN handle
// (the plans must be destroyed before the handle they were built with).
thread_local bool t_plans_made = false;

PlanMap& thread_plans() {
  thread_local PlanMap plans;
  t_plans_made = true;
  return plans;
}

// --- Autotuning (Note [Convolution autotuning]) ---------------------------------------

constexpr size_t kTuningCandidates = 8;
constexpr int kTimedRuns = 3;

std::atomic<bool>& benchmark_flag() {
  static std::atomic<bool> on{[] {
    const char* v = std::getenv("AOTRT_CUDNN_BENCHMARK");
    return v == nullptr || std::string_view(v) != "0";
  }()};
  return on;
}

// Never destroyed: a thread still converting at exit may reach it.
runtime::ConvTuningTable& tuning_table() {
  static auto* table = new runtime::ConvTuningTable(runtime::conv_tuning_path(
      std::getenv("AOTRT_CUDNN_TUNING_CACHE"), std::getenv("XDG_CACHE_HOME"),
      std::getenv("HOME")));
  return *table;
}

struct TuningCounters {
  std::atomic<int64_t> tuned{0}, candidates_timed{0}, loaded{0}, heuristic{0};
};
TuningCounters g_tuning;

// "cudnn<version>.sm<major><minor>.<device name>", the part of a tuning key
// that says where a choice was made; "" when the device cannot say.
std::string device_tag(int device) {
  static std::mutex mu;
  static auto* tags = new std::unordered_map<int, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = tags->find(device); it != tags->end()) return it->second;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  std::string tag = "cudnn" + std::to_string(cudnnGetVersion()) + ".sm" +
                    std::to_string(prop.major) + std::to_string(prop.minor) + ".";
  for (const char* p = prop.name; p < prop.name + sizeof prop.name && *p != '\0'; ++p) {
    const char ch = *p;
    const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                       (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
    tag += plain ? ch : '_';
  }
  return tags->emplace(device, std::move(tag)).first->second;
}

// The table's key of a configuration: the device's tag and the plan key
// without the device index (position 0).
std::string tuning_key(int device, const PlanKey& key) {
  std::string s = device_tag(device);
  if (s.empty()) return s;
  s += ':';
  for (size_t i = 1; i < key.n; ++i) {
    if (i > 1) s += ',';
    s += std::to_string(key.v[i]);
  }
  return s;
}

// Note [CUDA graph mode]: nothing is timed while the stream captures; a
// stream that cannot say counts as capturing.
bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return status != cudaStreamCaptureStatusNone;
}

// The engine's global index and knob choices of an engine config: what
// rebuilds it in another process.
std::optional<runtime::ConvTuningChoice> describe(const BackendDesc& config) {
  BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t count = 0;
  runtime::ConvTuningChoice choice;
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count, &e) !=
          CUDNN_STATUS_SUCCESS ||
      cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &count,
                               &choice.engine) != CUDNN_STATUS_SUCCESS) {
    return std::nullopt;
  }
  std::array<BackendDesc, CUDNN_KNOB_TYPE_COUNTS> knobs;
  std::array<cudnnBackendDescriptor_t, CUDNN_KNOB_TYPE_COUNTS> raw{};
  for (size_t i = 0; i < knobs.size(); ++i) {
    knobs[i] = BackendDesc(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    raw[i] = knobs[i].get();
  }
  if (cudnnBackendGetAttribute(config.get(), CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(raw.size()),
                               &count, raw.data()) != CUDNN_STATUS_SUCCESS ||
      count < 0 || count > static_cast<int64_t>(raw.size())) {
    return std::nullopt;
  }
  for (int64_t i = 0; i < count; ++i) {
    cudnnBackendKnobType_t type = CUDNN_KNOB_TYPE_COUNTS;
    int64_t value = 0, n = 0;
    if (cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                 CUDNN_TYPE_KNOB_TYPE, 1, &n, &type) != CUDNN_STATUS_SUCCESS ||
        cudnnBackendGetAttribute(raw[static_cast<size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                 CUDNN_TYPE_INT64, 1, &n, &value) != CUDNN_STATUS_SUCCESS) {
      return std::nullopt;
    }
    choice.knobs.emplace_back(static_cast<int64_t>(type), value);
  }
  return choice;
}

// A timing event; null when the runtime could not make one.
class TimingEvent {
 public:
  TimingEvent() {
    if (cudaEventCreate(&event_) != cudaSuccess) {
      event_ = nullptr;
      (void)cudaGetLastError();
    }
  }
  ~TimingEvent() {
    if (event_ != nullptr) (void)cudaEventDestroy(event_);
  }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  bool record(cudaStream_t stream) const {
    return event_ != nullptr && cudaEventRecord(event_, stream) == cudaSuccess;
  }
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// A variant pack binding x, w, y and the workspace (bound[0..3]).
cudnnStatus_t make_pack(BackendDesc& out, const std::array<void*, 4>& bound) {
  const int64_t uids[3] = {kUidX, kUidW, kUidY};
  BackendDesc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  if (cudnnStatus_t s = pack.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
                                 bound.data());
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  if (cudnnStatus_t s = pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  if (cudnnStatus_t s =
          pack.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &bound[3]);
      s != CUDNN_STATUS_SUCCESS) {
    return s;
  }
  if (cudnnStatus_t s = pack.finalize(); s != CUDNN_STATUS_SUCCESS) return s;
  out = std::move(pack);
  return CUDNN_STATUS_SUCCESS;
}

// Runs every candidate on `stream` with the call's operands (x, w, y) and
// returns the index of the fastest median time, or nullopt when none ran.
// The one host wait of Note [Convolution autotuning].
std::optional<size_t> fastest(const std::vector<Candidate>& candidates, int device,
                              cudaStream_t stream, cudnnHandle_t h, void* x, void* w, void* y) {
  struct Timing {
    std::array<TimingEvent, kTimedRuns + 1> events;
    bool ran = false;
  };
  std::vector<Timing> timings(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Candidate& cand = candidates[i];
    DeviceBuffer workspace;
    if (cand.workspace > 0) {
      try {
        workspace = DeviceBuffer(device, static_cast<size_t>(cand.workspace));
      } catch (const Error& e) {
        if (e.kind() != ErrorKind::kOutOfMemory) throw;
        continue;
      }
    }
    BackendDesc pack;
    if (make_pack(pack, {x, w, y, workspace.data()}) != CUDNN_STATUS_SUCCESS) continue;
    // A warm-up run (first launches load kernels), then the timed ones.
    bool ok = cudnnBackendExecute(h, cand.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
    for (int r = 0; ok && r < kTimedRuns; ++r) {
      ok = timings[i].events[static_cast<size_t>(r)].record(stream) &&
           cudnnBackendExecute(h, cand.plan.get(), pack.get()) == CUDNN_STATUS_SUCCESS;
    }
    ok = ok && timings[i].events[kTimedRuns].record(stream);
    if (!ok) (void)cudaGetLastError();  // this engine failed: skipped
    timings[i].ran = ok;
    // The workspace goes back to the stream's cache; the next candidate
    // reusing it is ordered after this one by the stream.
  }
  TimingEvent done;
  if (!done.record(stream) || cudaEventSynchronize(done.get()) != cudaSuccess) {
    (void)cudaGetLastError();
    return std::nullopt;
  }
  std::optional<size_t> best;
  float best_ms = 0;
  for (size_t i = 0; i < timings.size(); ++i) {
    if (!timings[i].ran) continue;
    std::array<float, kTimedRuns> ms{};
    bool ok = true;
    for (size_t r = 0; r < ms.size(); ++r) {
      ok = ok && cudaEventElapsedTime(&ms[r], timings[i].events[r].get(),
                                      timings[i].events[r + 1].get()) == cudaSuccess;
    }
    if (!ok) {
      (void)cudaGetLastError();
      continue;
    }
    g_tuning.candidates_timed.fetch_add(1, std::memory_order_relaxed);
    std::sort(ms.begin(), ms.end());
    const float median = ms[ms.size() / 2];
    if (!best || median < best_ms) {
      best = i;
      best_ms = median;
    }
  }
  return best;
}

// --- One attempt ----------------------------------------------------------------------

struct ConvCall {
  int device = 0;
  cudaStream_t stream = nullptr;
  ScalarType dtype = ScalarType::Float32;
  bool transposed = false;
  Dims padding, stride, dilation;       // per spatial dim, cuDNN's count
  Operand x, w, y;                      // w: dense in w_layout
  Layout layout = Layout::kContiguous;  // of y (and the target for x)
  Layout w_layout = Layout::kContiguous;
  const char* fn = "";
};

// Makes `config` a plan whose workspace can be allocated now, into `out`
// (taking `config`). Returns the status with which the plan did not finalize; SUCCESS with
// out.plan unset when the workspace does not fit.
cudnnStatus_t plan_engine(Candidate& out, BackendDesc& config, const ConvCall& c,
                          cudnnHandle_t h) {
  BackendDesc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  AOTRT_CUDNN_TRY(plan.set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &h));
  AOTRT_CUDNN_TRY(plan.set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config));
  if (const cudnnStatus_t s = plan.finalize(); s != CUDNN_STATUS_SUCCESS) {
    return s;  // this engine cannot run this configuration
  }
  int64_t workspace = 0, n = 0;
  AOTRT_CUDNN_TRY(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                           CUDNN_TYPE_INT64, 1, &n, &workspace));
  if (workspace > 0) {
    try {
      DeviceBuffer probe(c.device, static_cast<size_t>(workspace));
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::kOutOfMemory) throw;
      return CUDNN_STATUS_SUCCESS;  // this engine's workspace does not fit
    }
  }
  out.config = std::move(config);
  out.plan = std::move(plan);
  out.workspace = workspace;
  return CUDNN_STATUS_SUCCESS;
}

// Up to `limit` plans in the heuristic's ranking (Note [Convolution plans]):
// the prebuilt engines of mode A; if none runs, its first engine compiled at
// run time; then the same from the fallback mode. Returns the last status
// with which an engine did not run (when `out` stays empty).
cudnnStatus_t heuristic_candidates(std::vector<Candidate>& out, size_t limit,
                                   const BackendDesc& graph, const ConvCall& c,
                                   cudnnHandle_t h) {
  const bool fp32_without_tf32 = c.dtype == ScalarType::Float32 && !conv_allows_tf32();
  cudnnStatus_t last = CUDNN_STATUS_NOT_SUPPORTED;
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
    const size_t ranked = static_cast<size_t>(std::clamp<int64_t>(returned, 0, count));
    // Prebuilt engines first; those compiled at run time only if none runs.
    for (bool compiled_at_runtime : {false, true}) {
      for (size_t i = 0; i < ranked; ++i) {
        if (!engine_allowed(configs[i], fp32_without_tf32, compiled_at_runtime) ||
            (compiled_at_runtime && engine_allowed(configs[i], fp32_without_tf32, false))) {
          continue;  // not allowed, or already tried among the prebuilt ones
        }
        Candidate cand;
        if (const cudnnStatus_t s = plan_engine(cand, configs[i], c, h);
            s != CUDNN_STATUS_SUCCESS) {
          last = s;
          continue;
        }
        if (cand.plan.get() == nullptr) continue;
        out.push_back(std::move(cand));
        // One engine compiled at run time at most: each costs seconds.
        if (out.size() >= limit || compiled_at_runtime) return CUDNN_STATUS_SUCCESS;
      }
      if (!out.empty()) return CUDNN_STATUS_SUCCESS;
    }
  }
  return last;
}

// The engine config of a stored choice, made into a plan; false when it no
// longer finalizes (another cuDNN build, another policy) or is not allowed.
bool rebuild(Candidate& out, const runtime::ConvTuningChoice& choice, const BackendDesc& graph,
             const ConvCall& c, cudnnHandle_t h) {
  BackendDesc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  if (engine.set(CUDNN_ATTR_ENGINE_OPERATION_GRAPH, graph) != CUDNN_STATUS_SUCCESS ||
      engine.set(CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &choice.engine) !=
          CUDNN_STATUS_SUCCESS ||
      engine.finalize() != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  if (choice.knobs.size() > size_t{CUDNN_KNOB_TYPE_COUNTS}) return false;
  std::vector<BackendDesc> knobs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (const auto& [type, value] : choice.knobs) {
    if (type < 0 || type >= int64_t{CUDNN_KNOB_TYPE_COUNTS}) return false;
    const auto knob_type = static_cast<cudnnBackendKnobType_t>(type);
    BackendDesc knob(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
    if (knob.set(CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &knob_type) !=
            CUDNN_STATUS_SUCCESS ||
        knob.set(CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &value) !=
            CUDNN_STATUS_SUCCESS ||
        knob.finalize() != CUDNN_STATUS_SUCCESS) {
      return false;
    }
    raw.push_back(knob.get());
    knobs.push_back(std::move(knob));
  }
  BackendDesc config(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  if (config.set(CUDNN_ATTR_ENGINECFG_ENGINE, engine) != CUDNN_STATUS_SUCCESS ||
      (!raw.empty() && config.set(CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                  static_cast<int64_t>(raw.size()), raw.data()) !=
                           CUDNN_STATUS_SUCCESS) ||
      config.finalize() != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  // The policy the choice was made under is in its key; checked again all the same.
  const bool fp32_without_tf32 = c.dtype == ScalarType::Float32 && !conv_allows_tf32();
  if (!engine_allowed(config, fp32_without_tf32, true)) return false;
  Candidate cand;
  if (plan_engine(cand, config, c, h) != CUDNN_STATUS_SUCCESS ||
      cand.plan.get() == nullptr) {
    return false;
  }
  out = std::move(cand);
  return true;
}

// The convolution as a finalized plan, or the status with which cuDNN
// rejected it. For a transposed convolution the roles swap: cuDNN computes
// the gradient of a forward convolution from y (its "input") to x (its
// "output"), so X is fwd_in and Y is fwd_out in both directions.
cudnnStatus_t build_plan(ConvPlan& out, const ConvCall& c, const Operand& fwd_in,
                         const Operand& fwd_out, std::span<const int64_t> in_strides,
                         std::span<const int64_t> w_strides, std::span<const int64_t> out_strides,
                         cudnnHandle_t h, const PlanKey& key) {
  const cudnnDataType_t t = cudnn_data_type(c.dtype, c.fn);
  BackendDesc x, w, y;
  AOTRT_CUDNN_TRY(make_tensor(x, kUidX, t, fwd_in.sizes, in_strides, cudnn_alignment(fwd_in.data)));
  AOTRT_CUDNN_TRY(make_tensor(w, kUidW, t, c.w.sizes, w_strides, cudnn_alignment(c.w.data)));
  AOTRT_CUDNN_TRY(
      make_tensor(y, kUidY, t, fwd_out.sizes, out_strides, cudnn_alignment(fwd_out.data)));

  // fp16 and bf16 accumulate in fp32, as ATen does; float64 in float64, with
  // alpha and beta as doubles (cuDNN's scaling parameters follow the compute
  // type).
  BackendDesc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const bool wide = c.dtype == ScalarType::Float64;
  const cudnnDataType_t compute = wide ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
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
  const double alpha_wide = 1.0, beta_wide = 0.0;
  const cudnnBackendAttributeType_t scale_type = wide ? CUDNN_TYPE_DOUBLE : CUDNN_TYPE_FLOAT;
  const void* alpha_ptr = wide ? static_cast<const void*>(&alpha_wide) : &alpha;
  const void* beta_ptr = wide ? static_cast<const void*>(&beta_wide) : &beta;
  BackendDesc op;
  if (!c.transposed) {
    op = BackendDesc(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, scale_type, 1, alpha_ptr));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, scale_type, 1, beta_ptr));
  } else {
    op = BackendDesc(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, x));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, w));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, y));
    AOTRT_CUDNN_TRY(op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, conv));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, scale_type, 1, alpha_ptr));
    AOTRT_CUDNN_TRY(
        op.set(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, scale_type, 1, beta_ptr));
  }
  AOTRT_CUDNN_TRY(op.finalize());

  BackendDesc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  AOTRT_CUDNN_TRY(graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op));
  AOTRT_CUDNN_TRY(graph.set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &h));
  AOTRT_CUDNN_TRY(graph.finalize());

  // Note [Convolution autotuning]: a stored choice, else timing, else the
  // heuristic's first.
  std::vector<Candidate> candidates;
  std::optional<size_t> chosen;
  if (benchmark_flag().load(std::memory_order_relaxed)) {
    const std::string table_key = tuning_key(c.device, key);
    if (!table_key.empty()) {
      if (const auto stored = tuning_table().find(table_key)) {
        Candidate cand;
        if (rebuild(cand, *stored, graph, c, h)) {
          g_tuning.loaded.fetch_add(1, std::memory_order_relaxed);
          out.plan = std::move(cand.plan);
          out.workspace = cand.workspace;
          return CUDNN_STATUS_SUCCESS;
        }
      }
    }
    if (!stream_capturing(c.stream)) {
      profiling::LibraryCallTimer timer("cudnn conv autotune (first call of a configuration)");
      const cudnnStatus_t s = heuristic_candidates(candidates, kTuningCandidates, graph, c, h);
      if (candidates.empty()) return s;
      chosen = candidates.size() == 1
                   ? std::optional<size_t>(0)
                   : fastest(candidates, c.device, c.stream, h, fwd_in.data, c.w.data,
                             fwd_out.data);
      g_tuning.tuned.fetch_add(1, std::memory_order_relaxed);
      if (chosen && !table_key.empty()) {
        if (const auto choice = describe(candidates[*chosen].config)) {
          tuning_table().put(table_key, *choice);
        }
      }
    }
  }
  if (candidates.empty()) {
    const cudnnStatus_t s = heuristic_candidates(candidates, 1, graph, c, h);
    if (candidates.empty()) return s;
    g_tuning.heuristic.fetch_add(1, std::memory_order_relaxed);
  }
  Candidate& pick = candidates[chosen.value_or(0)];  // none ran: the heuristic's first
  out.plan = std::move(pick.plan);
  out.workspace = pick.workspace;
  return CUDNN_STATUS_SUCCESS;
}

// Runs the convolution; returns SUCCESS or the status with which cuDNN
// rejected this layout.
cudnnStatus_t try_conv(const ConvCall& c) {
  const Operand& fwd_in = c.transposed ? c.y : c.x;
  const Operand& fwd_out = c.transposed ? c.x : c.y;
  const Dims in_strides = cudnn_strides(fwd_in, c.layout);
  const Dims out_strides = cudnn_strides(fwd_out, c.layout);
  const Dims w_strides = cudnn_strides(c.w, c.w_layout);
  // Before the thread's plans exist, so that they are destroyed before it.
  cudnnHandle_t h = cudnn_handle(c.device, c.stream);
  PlanMap& plans = thread_plans();

  // The cache key: everything the plan depends on.
  PlanKey key;
  for (int64_t v : {int64_t{c.device}, static_cast<int64_t>(c.dtype), int64_t{c.transposed},
                    int64_t{conv_allows_tf32()}, static_cast<int64_t>(fwd_in.sizes.size()),
                    cudnn_alignment(fwd_in.data), cudnn_alignment(c.w.data),
                    cudnn_alignment(fwd_out.data)}) {
    key.push(v);
  }
  for (const Dims* v : {&fwd_in.sizes, &fwd_out.sizes, &c.w.sizes, &w_strides, &c.padding,
                        &c.stride, &c.dilation, &in_strides, &out_strides}) {
    key.push(*v);
  }
  auto it = plans.find(key);
  if (it == plans.end()) {
    if (plans.size() >= kMaxPlansPerThread) plans.clear();
    ConvPlan built;
    built.status = build_plan(built, c, fwd_in, fwd_out, in_strides, w_strides, out_strides, h, key);
    it = plans.emplace(key, std::move(built)).first;
  }
  ConvPlan& plan = it->second;
  if (plan.status != CUDNN_STATUS_SUCCESS) return plan.status;

  DeviceBuffer workspace;
  if (plan.workspace > 0) workspace = DeviceBuffer(c.device, static_cast<size_t>(plan.workspace));
  const std::array<void*, 4> bound{fwd_in.data, c.w.data, fwd_out.data, workspace.data()};
  // Note [Library call graphs]: the plan and the addresses it binds.
  PlanKey call;
  for (int64_t v : {int64_t{kConvCall}, int64_t{c.device}, static_cast<int64_t>(plan.id)}) call.push(v);
  for (void* p : bound) call.push(address_value(p));
  cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
  const bool ran = replay_or_call(call, c.device, c.stream, [&](cudaStream_t on) {
    if (plan.pack.get() == nullptr || plan.bound != bound) {
      profiling::LibraryCallTimer timer("cudnn variant pack (new addresses)");
      AOTRT_CUDNN_CHECK(make_pack(plan.pack, bound));
      plan.bound = bound;
    }
    profiling::LibraryCallTimer timer("cudnnBackendExecute");
    s = cudnnBackendExecute(on == c.stream ? h : cudnn_handle(c.device, on), plan.plan.get(),
                            plan.pack.get());
    return s == CUDNN_STATUS_SUCCESS;
  });
  if (ran) return CUDNN_STATUS_SUCCESS;
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
  const Dims order = layout_order(v.sizes.size(), layout);
  Dims psizes, pstrides;
  for (int64_t d : order) {
    psizes.push_back(v.sizes[static_cast<size_t>(d)]);
    pstrides.push_back(v.strides[static_cast<size_t>(d)]);
  }
  PackedOperand p;
  p.buffer = DeviceBuffer(device, static_cast<size_t>(v.numel()) * v.itemsize());
  gather_for_library(p.buffer.data(),
                     StridedView{v.data, psizes, pstrides, v.dtype, v.device}, stream);
  const Dims strides = layout_strides(v.sizes, layout);
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
  const std::array<int64_t, 2> x_sizes{pixels, c}, x_strides{*xs, x.strides[1]};
  const std::array<int64_t, 2> y_sizes{pixels, o}, y_strides{*ys, y.strides[1]};
  const std::array<int64_t, 2> w_sizes{c, o}, w_strides{w.strides[1], w.strides[0]};
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

// The calling thread's descriptors for the bias add: set on every call (which
// allocates nothing), made once.
struct BiasDescs {
  TensorDesc bias, out;
};
BiasDescs& thread_bias_descs() {
  thread_local BiasDescs descs;
  return descs;
}

Dims expand_param(std::span<const int64_t> p, size_t n, const char* name, const char* fn) {
  AOTRT_CHECK(p.size() == n || p.size() == 1, kInvalidArgument, fn, ": '", name, "' has ",
              p.size(), " values for ", n, " spatial dims");
  if (p.size() == 1) return Dims::filled(n, p[0]);
  return p;
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
  const Dims stride = expand_param(params.stride, spatial, "stride", fn);
  const Dims padding = expand_param(params.padding, spatial, "padding", fn);
  const Dims dilation = expand_param(params.dilation, spatial, "dilation", fn);
  Dims output_padding = Dims::filled(spatial, 0);
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
  Dims out_sizes{in[0], c_out};
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
  const Operand w4 = as_cudnn_operand(w_view);
  if (ndim == 3) {
    // ATen makes a 1-d input contiguous before unsqueezing it.
    x4.strides = layout_strides(x4.sizes, Layout::kContiguous);
  }
  const bool channels_last = dtype != ScalarType::Float64 &&
                             (suggests_channels_last(x4.sizes, x4.strides) ||
                              suggests_channels_last(w4.sizes, w4.strides));
  const Layout layout = channels_last ? Layout::kChannelsLast : Layout::kContiguous;
  Dims out_strides;
  if (ndim == 3) {
    const int64_t l = out_sizes[2];
    out_strides = channels_last ? Dims{l * c_out, 1, c_out}
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
  std::array<bool, kMaxDims> uncropped{};
  bool any_uncropped = false;
  for (size_t i = 0; i < spatial && params.transposed; ++i) {
    uncropped[i] = output_padding[i] >= stride[i];
    any_uncropped = any_uncropped || uncropped[i];
  }
  std::unique_ptr<TensorImpl> full;
  StridedView target_view = y_view;
  if (any_uncropped) {
    Dims full_sizes{in[0], c_out};
    for (size_t i = 0; i < spatial; ++i) {
      full_sizes.push_back(uncropped[i] ? (in[i + 2] - 1) * stride[i] +
                                              dilation[i] * (w[i + 2] - 1) + 1
                                        : out_sizes[i + 2]);
    }
    Dims full_strides = layout_strides(full_sizes, layout);
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
    call.padding.insert(0, 0);
    call.stride.insert(0, 1);
    call.dilation.insert(0, 1);
  }
  call.x = as_cudnn_operand(x_view);
  call.y = as_cudnn_operand(target_view);

  const int64_t reduced = params.transposed ? c_in / groups : w[1];
  if (reduced == 0 || x_view.numel() == 0) {
    fill_zero_device(target_view, stream);  // an empty sum
  } else {
    // Note [Convolution operands in place]: the weight in whichever dense
    // layout it has (preferring the output's), the input as it is.
    std::vector<PackedOperand> packs;  // allocates only when something is packed
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
    Dims window{out_sizes[0], out_sizes[1]};
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
    b.sizes = Dims::filled(y.sizes.size(), 1);
    b.sizes[1] = c_out;
    b.strides = Dims::filled(y.sizes.size(), 1);
    const cudnnDataType_t t = cudnn_data_type(dtype, fn);
    BiasDescs& descs = thread_bias_descs();
    const auto b_sizes = to_ints(b.sizes, "size", fn), y_sizes = to_ints(y.sizes, "size", fn);
    const auto b_strides = to_ints(cudnn_strides(b, Layout::kContiguous), "stride", fn);
    const auto y_strides = to_ints(cudnn_strides(y, layout), "stride", fn);
    AOTRT_CUDNN_CHECK(cudnnSetTensorNdDescriptor(descs.bias.desc, t,
                                                 static_cast<int>(b.sizes.size()),
                                                 b_sizes.data(), b_strides.data()));
    AOTRT_CUDNN_CHECK(cudnnSetTensorNdDescriptor(descs.out.desc, t,
                                                 static_cast<int>(y.sizes.size()),
                                                 y_sizes.data(), y_strides.data()));
    const float one = 1.0f;
    const double one_wide = 1.0;  // double tensors take double scaling parameters
    const void* scale = dtype == ScalarType::Float64 ? static_cast<const void*>(&one_wide) : &one;
    AOTRT_CUDNN_CHECK(cudnnAddTensor(cudnn_handle(device, stream), scale, descs.bias.desc, b.data,
                                     scale, descs.out.desc, y.data));
  }
  return out;
}

// --- Autotuning's switches for tests (library_ops.h) -------------------------------------

void reset_conv_tuning_for_testing(bool benchmark, const std::string& tuning_file) {
  benchmark_flag().store(benchmark);
  tuning_table().reset(tuning_file);
  if (t_plans_made) thread_plans().clear();
}

ConvTuningCounters conv_tuning_counters() {
  ConvTuningCounters c;
  c.tuned = g_tuning.tuned.load();
  c.candidates_timed = g_tuning.candidates_timed.load();
  c.loaded = g_tuning.loaded.load();
  c.heuristic = g_tuning.heuristic.load();
  return c;
}

}  // namespace aotrt::cuda
