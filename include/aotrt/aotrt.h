// aotrt's C++ API: load a .pt2 package written by
// torch._inductor.aoti_compile_and_package (exported with
// aot_inductor.link_libtorch=False) and run it, with no libtorch in the
// process.
//
//   aotrt::Model model = aotrt::Model::load("model.pt2");
//   std::vector<float> x(3 * 8);
//   aotrt::Tensor in = aotrt::Tensor::from_blob(x.data(), {3, 8}, {8, 1},
//                                               aotrt::ScalarType::Float32);
//   std::vector<aotrt::Tensor> out = model.run({&in, 1});
//
// Errors are thrown as aotrt::Error (aotrt/error.h) with a message that says
// what was asked and what was wrong. (The C ABI in aotrt/shim.h never throws.)
//
// Ownership, the same everywhere: a Tensor owns one handle, and a handle
// holds one reference on the memory it views; memory lives as long as any
// handle to it. Memory passed to from_blob stays the caller's: aotrt never
// frees it, and the caller keeps it alive while any Tensor views it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotrt/device.h"
#include "aotrt/dtype.h"
#include "aotrt/error.h"
#include "aotrt/shim.h"

namespace aotrt {

namespace runtime {
struct ModelAccess;
}

// A strided view of memory on a device: sizes, strides and a storage offset
// (in elements), an element type and a device, like an at::Tensor. It owns
// one AtenTensorHandle, the same handles the model .so receives and returns.
//
// Copying a Tensor makes a new handle to the SAME memory (as at::Tensor's
// copy does); use dense_host_copy() or to() for a copy of the values.
class Tensor {
 public:
  // No tensor (what a model returns for a None output): defined() is false.
  Tensor() = default;
  ~Tensor();
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;

  // Views caller memory: `data` is the address of the storage start, the
  // view's element 0 is at data + storage_offset elements. Borrowed: aotrt
  // never frees it and the caller keeps it alive while any Tensor (or model
  // output that aliases it) views it. Sizes and strides count elements.
  static Tensor from_blob(void* data, const std::vector<int64_t>& sizes,
                          const std::vector<int64_t>& strides, ScalarType dtype,
                          Device device = cpu_device(), int64_t storage_offset = 0);
  // New, uninitialised, row-major memory owned by aotrt.
  static Tensor empty(const std::vector<int64_t>& sizes, ScalarType dtype,
                      Device device = cpu_device());
  // New, uninitialised memory owned by aotrt, as large as the view needs
  // (ATen's empty_strided).
  static Tensor empty_strided(const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& strides, ScalarType dtype,
                              Device device = cpu_device());
  // Takes ownership of a live handle (one a shim returned through a ret_
  // argument); the Tensor deletes it. Throws for a handle that is not live.
  static Tensor adopt(AtenTensorHandle handle);

  // A handle exists and its tensor is defined.
  bool defined() const;
  int64_t dim() const;
  // Borrowed: valid while this Tensor lives.
  std::span<const int64_t> sizes() const;
  std::span<const int64_t> strides() const;
  int64_t storage_offset() const;  // in elements
  int64_t numel() const;
  ScalarType dtype() const;
  Device device() const;
  // Address of element 0 (device memory for a CUDA tensor); borrowed.
  void* data_ptr() const;
  bool is_contiguous() const;

  // A new dense row-major CPU tensor with the same values (converted to
  // `as` when given; waits for a CUDA source to be copied, then throws a
  // linear-algebra failure that work found, as synchronize() does).
  Tensor dense_host_copy() const;
  Tensor dense_host_copy(ScalarType as) const;
  // A new dense row-major tensor with the same values on `device`.
  Tensor to(Device device) const;
  // Writes src's values into this view (ATen's copy_: broadcasts src,
  // converts its dtype, copies across devices). Returns *this.
  Tensor& copy_(const Tensor& src);

  // The handle, still owned by this Tensor (null when there is none).
  AtenTensorHandle handle() const { return handle_; }
  // Gives the handle to the caller, who must delete it with
  // aoti_torch_delete_tensor_object; this Tensor is left empty.
  AtenTensorHandle release();

 private:
  explicit Tensor(AtenTensorHandle owned) : handle_(owned) {}
  AtenTensorHandle handle_ = nullptr;
};

// Weights for a model, by each constant's original FQN (the nn.Module's
// parameter or buffer name, as ModelInfo::constants and `aotrt info` list
// them): for a package exported with aot_inductor.package_constants_in_so=
// False (which then holds no weights), or instead of a package's own, or to
// swap while serving (Model::swap_weights). See Note [External weights] in
// src/runtime/weights.h for how they are checked and loaded.
struct Weights {
  // A safetensors file (Hugging Face's format: an 8-byte little-endian header
  // length, a JSON header of name -> {dtype, shape, data_offsets}, the raw
  // bytes), memory-mapped: `tensors` view the mapping, which stays mapped as
  // long as this Weights, a copy of it, or a Model using it lives. Throws
  // kInvalidArgument naming the file for a malformed one.
  static Weights from_safetensors(const std::string& path);
  // The caller's tensors (e.g. Tensor::from_blob over its arrays), on the
  // CPU or the model's device. Borrowed: a tensor of the dtype, sizes and
  // strides the model expects, on its device, is used in place, so the
  // caller keeps that memory alive while the Model lives.
  static Weights from_tensors(std::map<std::string, Tensor> tensors);

  std::map<std::string, Tensor> tensors;
  std::string source;  // the file, or "tensors"; named in errors
  // A name the model has no constant for is refused unless this is set
  // (inductor compiles 0-d and 1-d constants of <= 8 elements into the code,
  // so a different value for one would be silently ignored).
  bool allow_unused = false;
  std::shared_ptr<const void> mapping;  // what `tensors` view, if anything
};

// How a CUDA model uses CUDA graphs (LoadOptions::cuda_graph). See Note
// [CUDA graph mode] and Note [Automatic CUDA graphs] in src/runtime/cuda_graph.h.
enum class CudaGraphMode {
  // Every run launches the model's kernels and library calls one by one.
  kOff,
  // The default. A run whose inputs have the dtype, sizes and strides of an
  // earlier run is captured into a CUDA graph (up to 4 such layouts per
  // model) and replayed; other runs, and every run of a model that cannot be
  // captured or whose graph would behave differently from its plain runs (it
  // writes into its inputs, or returns views of them), run plainly. Nothing
  // is refused for graph reasons; outputs behave as in plain mode.
  kAuto,
  // Every run replays one graph captured at the first run (which fixes the
  // inputs' dtype, sizes and strides); a model that cannot be captured is
  // refused by its first run with kUnsupported naming the failing call.
  kOn,
};

// The mode's name: "off", "auto", "on".
const char* cuda_graph_mode_name(CudaGraphMode mode);

struct LoadOptions {
  // The folder under data/aotinductor/ to load (aoti_compile_and_package's
  // model_name; "model" unless the exporter chose another).
  std::string model_name = "model";
  // CUDA packages: the device to run on; -1 = the calling thread's current one.
  int32_t device_index = -1;
  // Turns on the input checks compiled into this model (dtype, sizes,
  // strides, device of each input, as AOTI_RUNTIME_CHECK_INPUTS=1 would)
  // unless the process set that variable; the process's environment is not
  // changed. Without them a wrongly shaped input makes the model read or
  // write out of bounds. See Note [Model input checks].
  bool check_inputs = true;
  // CUDA packages: whether runs are captured into CUDA graphs and replayed
  // (one launch per run instead of one per kernel). kAuto by default: graphs
  // where they change nothing but the speed (CudaGraphMode). kOn: every run
  // replays the graph of the first, with inputs of its dtype, sizes and
  // strides, and outputs that are new memory (copies of the graph's static
  // outputs). Ignored for CPU models unless kOn, which they refuse.
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;
  // Load these weights instead of the package's (required when the package
  // has none). Every constant is checked against what the model expects
  // (name, dtype, sizes, strides) before anything is loaded.
  std::optional<Weights> weights;
  // A package that holds no weights loads without them (for its ModelInfo,
  // as `aotrt info` does); run() refuses until swap_weights gives them.
  bool without_weights = false;
  // Print ModelInfo::export_advice on stderr, once per process and package
  // ("aotrt: note: ..."): a user of torch's default export options learns
  // why the package is slow. Off for a caller that shows it itself.
  bool report_export_advice = true;
};

struct ConstantInfo {
  std::string name;
  std::string original_fqn;  // the parameter or buffer's name in the nn.Module
  ScalarType dtype = ScalarType::Float32;
  uint64_t nbytes = 0;       // padded bytes the constant takes in the weights
  bool from_folded = false;  // made by constant folding, not loaded
  // The layout the model keeps it in, when the package says (the generated
  // source, Note [Reading the wrapper source]); empty sizes with
  // layout_known false when it does not.
  bool layout_known = false;
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;
  // torch's ConstantType: "parameter", "buffer", "tensor_constant", "folded",
  // or "" when the package does not say.
  std::string type;
  // The model's code writes it (a KV cache), or it is a buffer the code may
  // write: each Session owns a copy, and sessions share every other constant
  // (Note [Session state] in src/runtime/model_state.h).
  bool session_state = false;
};

// A dim of an exported input or output whose size is not fixed (a
// torch.export Dim, e.g. a batch): inputs accept any size in [min, max].
struct DynamicDim {
  int64_t dim = 0;
  int64_t min = 0;
  int64_t max = -1;  // -1: not recorded
};

// The layout an input was exported with, or the dtype and sizes of an output.
// `sizes` are the example's; a dim listed in `dynamic_dims` takes others.
struct TensorSpec {
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // empty for an output
  std::vector<DynamicDim> dynamic_dims;

  // The entry of `dynamic_dims` for `dim`, or null when that dim is static.
  const DynamicDim* dynamic(size_t dim) const;
};

struct ModelInfo {
  std::string package_path;
  std::string model_name;
  std::string so_name;  // entry name of the model .so in the archive
  Device device;
  std::vector<std::string> input_names;
  std::vector<std::string> output_names;
  std::vector<ConstantInfo> constants;
  std::string in_spec, out_spec;  // serialised pytree specs ("" if absent)
  std::map<std::string, std::string> metadata;  // <h>.wrapper_metadata.json
  // Per input, the example it was exported with, when the exporter recorded
  // it ("aotrt.inputs" in the metadata, written by aotrt_tools.export), else
  // as the model's input checks in its generated source state it (every
  // stride fixed; a dynamic dim's least size stands for the example); empty
  // when neither says. The compiled code indexes inputs with these strides
  // (see Model::prepare_input).
  std::vector<std::optional<TensorSpec>> input_specs;
  // Per output, its dtype and sizes ("aotrt.outputs"), when recorded.
  std::vector<std::optional<TensorSpec>> output_specs;
  // Per input, its dtype when known: from input_specs, or from the model's
  // own input checks in its generated source (also for a dynamic-shape input,
  // whose sizes are not fixed). Used by Model::prepare_input.
  std::vector<std::optional<ScalarType>> input_dtypes;
  // Per input, its number of dims when known (from input_specs or the model's
  // own input checks, which fix the rank even of a dynamic-shape input); -1
  // when not.
  std::vector<int64_t> input_ranks;
  // Where the loaded weights came from: "package", a safetensors file, or
  // "tensors" (the last swap's, after Model::swap_weights).
  std::string weights_source;
  // What the export left slow in a CPU package and the option that fixes it
  // (PackageInfo::export_advice).
  std::vector<std::string> export_advice;
};

// A memory format for an input whose layout the package does not record.
enum class MemoryFormat { Contiguous, ChannelsLast, ChannelsLast3d };

// What the caller says about a value given for an input (the CLI's
// --input FILE:bfloat16:channels_last): the dtype to convert it to and the
// layout to lay it out in, for a package that does not record them. Where the
// package does, a hint must agree with it.
struct InputHint {
  std::optional<ScalarType> dtype;
  std::optional<MemoryFormat> layout;
};

// A loaded model: its .so, its weights and a model container, all private to
// this object; two Models (even of the same package) share nothing.
class Model {
 public:
  // Opens the package, checks it (see PackageInfo::problems for what is
  // refused), extracts what the model needs into a private temporary folder,
  // dlopens the .so, creates its container on the package's device and loads
  // the weights. Throws Error; on any failure nothing stays behind.
  static Model load(const std::string& package_path, const LoadOptions& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  // Unloads: deletes the container, closes the .so, removes the folder.
  ~Model();

  // Runs the model once. Inputs are borrowed (the model gets new handles to
  // the same memory; the caller's Tensors are untouched) and must be on the
  // model's device with the dtype, sizes and strides it was exported with
  // (strides of size-1 dims aside; a dynamic dim takes any size in its range,
  // laid out as prepare_input does): checked against ModelInfo::input_specs
  // when recorded, else by the model's own checks; a mismatch throws
  // kInvalidArgument naming the input before the model runs.
  // Outputs are new Tensors owned by the caller; they may be views (offset,
  // non-dense strides) and two may share memory, as the model made them.
  // Outputs stay valid after the Model is unloaded: an output whose memory
  // aotrt neither owns nor got from an input (e.g. a view of a weight inside
  // the model) is returned as a copy (clone_preserve_strides). Safe to call
  // from several threads (runs of one Model are serialised).
  // CPU models run on the calling thread; CUDA models on the calling
  // thread's current stream of the model's device, asynchronously: run()
  // queues the work and returns without waiting for the device (use
  // synchronize() or dense_host_copy() to wait). In steady state a run makes
  // no cudaMalloc (memory comes from aotrt's caching allocator).
  std::vector<Tensor> run(std::span<const Tensor> inputs);

  // `value` as the model expects input `index`: on the model's device, with
  // the strides it was exported with (ModelInfo::input_specs; for other
  // sizes of a dynamic dim, the same dim order, dense), else in hint.layout,
  // else row-major; and in its dtype (ModelInfo::input_dtypes, else
  // hint.dtype). A float32 value is converted to a narrower floating dtype
  // the model expects (bfloat16, float16, float8: numpy has no bfloat16, and
  // aotrt writes such outputs as float32); any other dtype mismatch throws
  // kInvalidArgument naming the input and the dtype expected, unless
  // hint.dtype asks for that conversion. A new handle to `value` itself when
  // nothing changes; otherwise a copy, owned by the caller.
  Tensor prepare_input(size_t index, const Tensor& value, const InputHint& hint = {}) const;

  // Replaces every constant with `weights` while the model keeps serving:
  // they are checked as LoadOptions::weights are (nothing changes on any
  // mismatch), loaded into the container's inactive constant buffer, and
  // switched to. A run in progress finishes on the old weights; a run started
  // after this returns uses the new ones. CUDA: waits for the work queued on
  // the device before reusing memory an earlier run may still read; in CUDA
  // graph mode the next run captures a new graph. Thread-safe with run().
  void swap_weights(const Weights& weights);
  // swap_weights for some constants: the ones not in `weights` keep their
  // current values (shared with the current set, not copied).
  void update_weights(const Weights& weights);

  // What CUDA graph mode did so far (LoadOptions::cuda_graph).
  struct CudaGraphStatus {
    CudaGraphMode mode = CudaGraphMode::kOff;  // kOff for CPU models
    int graphs = 0;      // input layouts captured and replayed
    int64_t replays = 0;  // runs served by a graph
    int64_t plain_runs = 0;
    // kAuto: why this model runs plainly from now on (it cannot be captured,
    // or a graph would behave differently); empty while graphs are allowed.
    std::string declined;
  };
  CudaGraphStatus cuda_graph_status() const;

  const ModelInfo& info() const;
  size_t num_inputs() const { return info().input_names.size(); }
  size_t num_outputs() const { return info().output_names.size(); }
  Device device() const { return info().device; }

  class Impl;

 private:
  friend struct runtime::ModelAccess;  // the session layer's hooks (runtime/model_state.h)
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct ShimSymbol {
  std::string name;
  bool provided = false;  // this aotrt defines it
  // When not provided: empty if aotrt lacks it, else why aotrt declines it on
  // purpose (a sparse result, a backward-only op, ...).
  std::string refusal;
};

// An op the model calls through the proxy executor (it has no C shim).
struct ExternOp {
  std::string target;   // "aten::linalg_inv_ex"
  bool served = false;  // aotrt runs it on the package's device
  std::string refusal;  // why not, when not served
};

struct PackageFile {
  std::string name;
  uint64_t size = 0;  // uncompressed bytes
};

// What a package holds and whether this aotrt can load it, found without
// running anything: the .so is read as a file (ELF), never dlopened.
struct PackageInfo {
  std::string package_path;
  std::string model_name;
  std::string so_name;
  std::string device_key;  // AOTI_DEVICE_KEY: "cpu", "cuda", ...
  std::map<std::string, std::string> metadata;
  std::vector<PackageFile> files;           // every entry of the archive
  std::string machine;                      // the .so's machine ("x86_64")
  std::vector<std::string> needed_libraries;  // the .so's DT_NEEDED
  std::vector<ShimSymbol> shim_symbols;     // every aoti_* symbol the .so needs
  std::vector<ExternOp> extern_ops;         // ops called through the proxy executor
  bool has_weights_blob = false;
  // Where the package keeps the weights, as torch lays them out: "embedded"
  // (linked into the .so), "appended" (after the .so's ELF part: torch's
  // layout above 2 GB of constants, or aot_inductor.force_mmap_weights),
  // "binary_blob" (a *_weights.blob), "pickle_weights" (data/weights/), "none"
  // (package_constants_in_so=False: given from outside), "unknown" (a
  // stripped .so). `weights_bytes`: their size. `weights_in_place`: the
  // .pt2 stores them uncompressed, so they are mapped from it, never
  // extracted (Note [Stored entries read in place]).
  std::string weights_layout;
  uint64_t weights_bytes = 0;
  bool weights_in_place = false;
  // Why Model::load would refuse this package before loading it (empty: it
  // passes every check made without loading).
  std::vector<std::string> problems;
  // For a CPU package, what its export left slow, each a sentence naming
  // what the package shows and the inductor option that fixes it: scalar
  // kernels (cpp.vec_isa_ok=True), batch norms beside plain convolutions
  // (freezing=True). Empty when neither shows. See Note [CPU export advice]
  // in src/runtime/preflight.cpp.
  std::vector<std::string> export_advice;

  // Symbols not provided: those aotrt lacks, and those it declines on purpose
  // (ShimSymbol::refusal set). Either refuses the package.
  size_t missing_symbol_count() const;
  size_t declined_symbol_count() const;
};

// Seeds the random ops models call (rand, randn, randint, randperm,
// bernoulli, the seeds of inductor's own random kernels): every device's
// generator restarts from this seed. Before any call the seed is
// 67280421310721 (torch's default). aotrt's streams are its own (Philox
// 4x32-10), so the numbers differ from torch's for the same seed. See Note
// [Random streams] in src/ops/random.h.
void manual_seed(uint64_t seed);

// Waits until the work queued so far on the calling thread's current stream
// of `device` has finished: what a CUDA model's run() queued, for one. A
// no-op for the CPU, whose runs finish before they return. Then throws the
// first linear-algebra failure that work found (a singular or indefinite
// matrix, an SVD that did not converge: what ATen raises in the op, with its
// message), if any: a CUDA op never syncs to read it (Note [Linalg errors on
// CUDA] in src/ops/linalg.h).
void synchronize(Device device);

// Call before destroying a CUDA stream (a cudaStream_t) on which aotrt ran work, for one made
// current with aoti_torch_create_cuda_stream_guard. The memory that aotrt cached for the stream
// and its per-thread library workspaces then stop naming it, so nothing records an event on
// the destroyed stream later. It does not wait for the stream: aotrt reuses that memory only
// after the work queued there so far has run. A no-op for a CPU device, for a stream that
// aotrt never used, and in a build without CUDA. Never throws.
void forget_cuda_stream(Device device, void* stream) noexcept;

// Host time spent in one C ABI function (an aoti_torch_* shim) while shim
// profiling was on. Only the outermost shim on a thread is counted (one
// called inside another is part of the outer one's time); failed calls
// count too. Times are wall time on the steady clock, in nanoseconds.
struct ShimTiming {
  std::string function;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t max_ns = 0;  // the longest single call
  // A library call timed inside a shim (e.g. cudnnBackendExecute): its time
  // is already part of the shim's.
  bool inside_shim = false;
};

// Turns shim profiling on or off for every thread (off at start). While it
// is on, every shim call also reads the clock twice and takes a lock, which
// slows a run a little; while it is off, a shim pays one atomic load.
void set_shim_profiling(bool on) noexcept;
// Forgets every timing recorded so far.
void reset_shim_profile() noexcept;
// The timings recorded since the last reset, most total time first.
std::vector<ShimTiming> shim_profile();

// Reads a package without loading it. Throws Error only for a package that
// cannot be read at all (not a zip, corrupt, no model .so, ...); everything
// else is reported in PackageInfo::problems.
PackageInfo inspect_package(const std::string& package_path,
                            const std::string& model_name = "model");

}  // namespace aotrt
