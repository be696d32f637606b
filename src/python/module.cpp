// aotrt._aotrt: the Python extension behind `import aotrt` (python/aotrt/).
// A thin layer over the C++ API (aotrt/aotrt.h): arrays in through DLPack or
// the buffer protocol (nanobind's ndarray), laid out by Model::prepare_input,
// run by Model::run with the GIL released, tensors out through DLPack.
//
// Note [Python tensor lifetime]
// An aotrt.Tensor owns one aotrt::Tensor (one handle, one count on its
// storage). Every consumer it is exported to (numpy(), __array__,
// __dlpack__) gets its own handle, held by the DLPack capsule's owner and
// deleted by the consumer's deleter, so the memory outlives the
// aotrt.Tensor, the Model and each other consumer. Borrowed memory (an input
// array the tensor views, or an output aliases) is not aotrt's to keep
// alive: the Python objects it came from travel with every handle to it
// (`owners`), and are released with the last one.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "aotrt/aotrt.h"
#include "aotrt/generate.h"
#include "aotrt/session.h"
#include "core/view.h"
#include "cuda/cuda.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace aotrt::python {
namespace {

// --- Errors ------------------------------------------------------------------

constexpr ErrorKind kErrorKinds[] = {
    ErrorKind::kInvalidArgument, ErrorKind::kInvalidHandle, ErrorKind::kOutOfBounds,
    ErrorKind::kUnsupported,     ErrorKind::kOutOfMemory,   ErrorKind::kPackage,
    ErrorKind::kBackend,         ErrorKind::kInternal,
};

// The Python class per ErrorKind (python/aotrt/_errors.py), handed over by
// aotrt/__init__.py; RuntimeError until then.
std::array<PyObject*, std::size(kErrorKinds)> g_error_classes{};

// {error_kind_name(kind): class}; every kind must have one.
void set_error_classes(nb::dict classes) {
  for (ErrorKind kind : kErrorKinds) {
    const char* name = error_kind_name(kind);
    AOTRT_CHECK(classes.contains(name), kInternal, "aotrt._aotrt: no Python class for errors of kind '",
                name, "'");
    nb::object cls = classes[name];
    PyObject*& slot = g_error_classes[static_cast<size_t>(kind)];
    Py_XDECREF(slot);
    slot = cls.release().ptr();  // kept for the life of the process
  }
}

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    PyObject* cls = g_error_classes[static_cast<size_t>(e.kind())];
    PyErr_SetString(cls != nullptr ? cls : PyExc_RuntimeError, e.what());
  }
}

// --- dtypes and devices ----------------------------------------------------

using nb::dlpack::dtype_code;

struct DtypeCode {
  ScalarType type;
  dtype_code code;
  uint8_t bits;
};

// ScalarType <-> DLPack's (code, bits); lanes are always 1.
constexpr DtypeCode kDtypes[] = {
    {ScalarType::UInt8, dtype_code::UInt, 8},
    {ScalarType::Int8, dtype_code::Int, 8},
    {ScalarType::Int16, dtype_code::Int, 16},
    {ScalarType::Int32, dtype_code::Int, 32},
    {ScalarType::Int64, dtype_code::Int, 64},
    {ScalarType::UInt16, dtype_code::UInt, 16},
    {ScalarType::UInt32, dtype_code::UInt, 32},
    {ScalarType::UInt64, dtype_code::UInt, 64},
    {ScalarType::Float16, dtype_code::Float, 16},
    {ScalarType::Float32, dtype_code::Float, 32},
    {ScalarType::Float64, dtype_code::Float, 64},
    {ScalarType::BFloat16, dtype_code::Bfloat, 16},
    {ScalarType::Bool, dtype_code::Bool, 8},
    {ScalarType::Complex32, dtype_code::Complex, 32},
    {ScalarType::Complex64, dtype_code::Complex, 64},
    {ScalarType::Complex128, dtype_code::Complex, 128},
    {ScalarType::Float8_e5m2, dtype_code::Float8_E5M2, 8},
    {ScalarType::Float8_e4m3fn, dtype_code::Float8_E4M3FN, 8},
    {ScalarType::Float8_e5m2fnuz, dtype_code::Float8_E5M2FNUZ, 8},
    {ScalarType::Float8_e4m3fnuz, dtype_code::Float8_E4M3FNUZ, 8},
};

nb::dlpack::dtype to_dlpack(ScalarType t) {
  for (const DtypeCode& d : kDtypes) {
    if (d.type == t) return {static_cast<uint8_t>(d.code), d.bits, 1};
  }
  AOTRT_FAIL(kUnsupported, "aotrt.Tensor: dtype ", dtype_name(t), " has no DLPack code");
}

ScalarType from_dlpack(nb::dlpack::dtype dt, const std::string& what) {
  for (const DtypeCode& d : kDtypes) {
    if (static_cast<uint8_t>(d.code) == dt.code && d.bits == dt.bits && dt.lanes == 1) return d.type;
  }
  AOTRT_FAIL(kUnsupported, what, ": DLPack dtype (code ", int(dt.code), ", bits ", int(dt.bits),
             ", lanes ", dt.lanes, ") is not one aotrt serves");
}

// DLPack's device types (dlpack.h: kDLCPU, kDLCUDA, kDLCUDAHost).
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3;

Device from_dlpack_device(int32_t type, int32_t id, const std::string& what) {
  if (type == kDLCPU || type == kDLCUDAHost) return cpu_device();  // pinned host memory is host memory
  if (type == kDLCUDA) return Device{DeviceType::CUDA, id};
  AOTRT_FAIL(kUnsupported, what, ": DLPack device type ", type,
             " is neither the CPU (1) nor CUDA (2)");
}

// numpy has no bfloat16, float8 or complex32: numpy() converts those, as
// `aotrt run` writes them.
ScalarType numpy_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::BFloat16:
    case ScalarType::Float8_e5m2:
    case ScalarType::Float8_e4m3fn:
    case ScalarType::Float8_e5m2fnuz:
    case ScalarType::Float8_e4m3fnuz:
      return ScalarType::Float32;
    case ScalarType::Complex32:
      return ScalarType::Complex64;
    default:
      return t;
  }
}

// --- Tensor ------------------------------------------------------------------

// See Note [Python tensor lifetime].
struct PyTensor {
  Tensor tensor;
  std::vector<nb::object> owners;
};

// What a DLPack capsule or numpy array made from a PyTensor owns: its own
// handle, and the owners of borrowed memory.
struct Export {
  Tensor tensor;
  std::vector<nb::object> owners;
};

nb::object export_owner(const Tensor& t, const std::vector<nb::object>& owners) {
  auto* e = new Export{t, owners};  // copying the Tensor makes a new handle
  return nb::capsule(e, [](void* p) noexcept { delete static_cast<Export*>(p); });
}

template <typename Framework>
nb::object as_ndarray(const Tensor& t, const std::vector<nb::object>& owners) {
  const size_t ndim = static_cast<size_t>(t.dim());
  std::vector<size_t> shape(t.sizes().begin(), t.sizes().end());
  const Device d = t.device();
  nb::ndarray<Framework> array(t.data_ptr(), ndim, shape.data(), export_owner(t, owners),
                               t.strides().data(), to_dlpack(t.dtype()),
                               d.is_cuda() ? kDLCUDA : kDLCPU, d.is_cuda() ? d.index : 0);
  return array.cast();
}

nb::object tensor_numpy(const PyTensor& self) {
  const Tensor& t = self.tensor;
  const ScalarType as = numpy_dtype(t.dtype());
  if (t.device().is_cpu() && as == t.dtype()) return as_ndarray<nb::numpy>(t, self.owners);
  Tensor host;
  {
    nb::gil_scoped_release release;
    host = t.dense_host_copy(as);
  }
  return as_ndarray<nb::numpy>(host, {});
}

nb::object tensor_dlpack(const PyTensor& self, nb::handle stream, nb::handle max_version,
                         nb::handle dl_device, nb::handle copy) {
  const Tensor& t = self.tensor;
  // A consumer that names a stream reads on it next: unless it is aotrt's
  // own (the calling thread's current stream; DLPack says 1 for the legacy
  // default stream), wait for the runs queued there.
  if (t.device().is_cuda() && !stream.is_none()) {
    const int64_t theirs = nb::cast<int64_t>(stream);
    const void* ours = cuda::current_stream(t.device().index);
    const bool same = theirs == -1 || (theirs == 1 && ours == nullptr) ||
                      (theirs > 2 && reinterpret_cast<const void*>(theirs) == ours);
    if (!same) {
      nb::gil_scoped_release release;
      synchronize(t.device());
    }
  }
  nb::object array = as_ndarray<nb::array_api>(t, self.owners);
  nb::kwargs kwargs;
  if (!max_version.is_none()) kwargs["max_version"] = max_version;
  if (!dl_device.is_none()) kwargs["dl_device"] = dl_device;
  if (!copy.is_none()) kwargs["copy"] = copy;
  return array.attr("__dlpack__")(**kwargs);
}

nb::tuple tensor_dlpack_device(const PyTensor& self) {
  const Device d = self.tensor.device();
  return d.is_cuda() ? nb::make_tuple(kDLCUDA, d.index) : nb::make_tuple(kDLCPU, 0);
}

nb::tuple int_tuple(std::span<const int64_t> values) {
  nb::list out;
  for (int64_t v : values) out.append(v);
  return nb::tuple(out);
}

bool has_negative_stride(const nb::ndarray<nb::ro>& array) {
  for (size_t d = 0; d < array.ndim(); ++d) {
    if (array.stride(d) < 0) return true;
  }
  return false;
}

// An array-like as an aotrt Tensor viewing its memory (no copy): an
// aotrt.Tensor, anything with __dlpack__ or the buffer protocol, else
// whatever numpy.asarray makes of it. A view with negative strides (numpy's
// a[::-1]; aotrt, like torch, has none) is copied by numpy first.
PyTensor to_tensor(nb::handle obj, const std::string& what) {
  if (nb::isinstance<PyTensor>(obj)) return nb::cast<const PyTensor&>(obj);
  nb::ndarray<nb::ro> array;
  if (!nb::try_cast(obj, array, false)) {
    nb::object converted = nb::module_::import_("numpy").attr("asarray")(obj);
    if (!nb::try_cast(converted, array, false)) {
      AOTRT_FAIL(kInvalidArgument, what, ": a ", nb::type_name(obj.type()).c_str(),
                 " is not an array (give a numpy array, an aotrt.Tensor or anything with "
                 "__dlpack__)");
    }
  }
  if (has_negative_stride(array) && array.device_type() == kDLCPU) {
    nb::object copied = nb::module_::import_("numpy").attr("ascontiguousarray")(obj);
    if (!nb::try_cast(copied, array, false)) {
      AOTRT_FAIL(kInvalidArgument, what, ": cannot copy an array with negative strides");
    }
  }
  std::vector<int64_t> sizes(array.ndim()), strides(array.ndim());
  for (size_t d = 0; d < array.ndim(); ++d) {
    sizes[d] = static_cast<int64_t>(array.shape(d));
    strides[d] = array.stride(d);
  }
  const ScalarType dtype = from_dlpack(array.dtype(), what);
  const Device device = from_dlpack_device(array.device_type(), array.device_id(), what);
  PyTensor out;
  out.tensor = Tensor::from_blob(const_cast<void*>(array.data()), sizes, strides, dtype, device);
  auto* held = new nb::ndarray<nb::ro>(std::move(array));
  out.owners.push_back(
      nb::capsule(held, [](void* p) noexcept { delete static_cast<nb::ndarray<nb::ro>*>(p); }));
  return out;
}

// The bytes [begin, end) a view reaches.
std::pair<uintptr_t, uintptr_t> byte_range(const Tensor& t) {
  const ViewSpan span = view_span(t.sizes(), t.strides(), 0, element_size(t.dtype()), "aotrt.Tensor");
  const auto begin = reinterpret_cast<uintptr_t>(t.data_ptr());
  return {begin, begin + static_cast<uintptr_t>(span.end_byte)};
}

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 || a.device() != b.device()) return false;
  const auto [a0, a1] = byte_range(a);
  const auto [b0, b1] = byte_range(b);
  return a0 < b1 && b0 < a1;
}

std::string tensor_repr(const PyTensor& self) {
  const Tensor& t = self.tensor;
  std::string shape;
  for (int64_t s : t.sizes()) shape += (shape.empty() ? "" : ", ") + std::to_string(s);
  std::string strides;
  for (int64_t s : t.strides()) strides += (strides.empty() ? "" : ", ") + std::to_string(s);
  return std::string("aotrt.Tensor(shape=(") + shape + "), strides=(" + strides + "), dtype=" +
         dtype_name(t.dtype()) + ", device=" + t.device().str() + ")";
}

// --- Model -------------------------------------------------------------------

struct InputInfo {
  std::string name;
  std::optional<std::string> dtype;
  std::optional<std::vector<int64_t>> sizes, strides;
};

struct PyConstantInfo {
  std::string name, original_fqn, dtype;
  uint64_t nbytes = 0;
  bool from_folded = false;
  std::optional<std::vector<int64_t>> sizes, strides;
  std::string type;
  bool session_state = false;
};

struct PyModelInfo {
  std::string package_path, model_name, device, weights_source;
  std::vector<InputInfo> inputs;
  std::vector<std::string> outputs;
  std::vector<PyConstantInfo> constants;
  std::map<std::string, std::string> metadata;
};

PyModelInfo describe_info(const ModelInfo& mi) {
  PyModelInfo out;
  out.package_path = mi.package_path;
  out.model_name = mi.model_name;
  out.device = mi.device.str();
  out.weights_source = mi.weights_source;
  for (size_t i = 0; i < mi.input_names.size(); ++i) {
    InputInfo in;
    in.name = mi.input_names[i];
    if (i < mi.input_dtypes.size() && mi.input_dtypes[i].has_value()) {
      in.dtype = dtype_name(*mi.input_dtypes[i]);
    }
    if (i < mi.input_specs.size() && mi.input_specs[i].has_value()) {
      const TensorSpec& s = *mi.input_specs[i];
      in.dtype = dtype_name(s.dtype);
      in.sizes = s.sizes;
      in.strides = s.strides;
    }
    out.inputs.push_back(std::move(in));
  }
  out.outputs = mi.output_names;
  for (const ConstantInfo& c : mi.constants) {
    PyConstantInfo pc{c.name, c.original_fqn, dtype_name(c.dtype), c.nbytes, c.from_folded, {}, {},
                      c.type, c.session_state};
    if (c.layout_known) {
      pc.sizes = c.sizes;
      pc.strides = c.strides;
    }
    out.constants.push_back(std::move(pc));
  }
  out.metadata = mi.metadata;
  return out;
}

// "cpu", "cuda", "cuda:N", an int (a CUDA device index) or anything whose
// str() is one of those (torch.device): (wants CUDA, device index or -1).
std::pair<std::optional<DeviceType>, int32_t> parse_device(nb::handle device) {
  if (device.is_none()) return {std::nullopt, -1};
  if (PyLong_Check(device.ptr())) return {DeviceType::CUDA, nb::cast<int32_t>(device)};
  const std::string text = nb::cast<std::string>(nb::str(device));
  if (text == "cpu") return {DeviceType::CPU, -1};
  if (text == "cuda") return {DeviceType::CUDA, -1};
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 &&
      text.find_first_not_of("0123456789", 5) == std::string::npos && text.size() < 12) {
    return {DeviceType::CUDA, std::stoi(text.substr(5))};
  }
  AOTRT_FAIL(kInvalidArgument, "aotrt.load: device '", text,
             "' is not 'cpu', 'cuda' or 'cuda:N'");
}

// A dtype by name: "bfloat16", numpy's dtype or its name, torch.bfloat16.
ScalarType parse_dtype(nb::handle dtype, const std::string& what) {
  std::string text = nb::cast<std::string>(nb::str(dtype));
  if (text.rfind("torch.", 0) == 0) text = text.substr(6);
  ScalarType t;
  AOTRT_CHECK(dtype_from_name(text, &t), kInvalidArgument, what, ": '", text,
              "' is not a dtype aotrt knows (e.g. 'float32', 'bfloat16', 'float16')");
  return t;
}

MemoryFormat parse_layout(nb::handle layout, const std::string& what) {
  const std::string text = nb::cast<std::string>(nb::str(layout));
  if (text == "contiguous") return MemoryFormat::Contiguous;
  if (text == "channels_last") return MemoryFormat::ChannelsLast;
  if (text == "channels_last_3d") return MemoryFormat::ChannelsLast3d;
  AOTRT_FAIL(kInvalidArgument, what, ": layout '", text,
             "' is not 'contiguous', 'channels_last' or 'channels_last_3d'");
}

// dtypes= / layouts= of run(): None, or one entry (None: no hint) per input.
template <typename Parse>
void read_hints(nb::handle given, size_t count, std::vector<InputHint>& hints, const char* kw,
                Parse parse) {
  if (given.is_none()) return;
  const nb::sequence seq = nb::borrow<nb::sequence>(given);
  const size_t n = nb::len(seq);
  AOTRT_CHECK(n == count, kInvalidArgument, "aotrt.Model.run: ", kw, "= has ", n,
              " entries for ", count, " inputs (None where an input needs none)");
  for (size_t i = 0; i < n; ++i) {
    nb::object v = seq[i];
    if (!v.is_none()) parse(hints[i], v, std::string("aotrt.Model.run: ") + kw + "[" + std::to_string(i) + "]");
  }
}

// Weights from a path (a safetensors file, memory-mapped) or a mapping of
// original FQN -> array; `owners` gets the arrays' Python owners, which the
// model must keep (Weights::from_tensors uses matching arrays in place).
Weights read_weights(nb::handle weights, bool allow_unused, std::vector<nb::object>& owners) {
  Weights w;
  if (nb::isinstance<nb::str>(weights) || nb::hasattr(weights, "__fspath__")) {
    const std::string path = nb::cast<std::string>(nb::module_::import_("os").attr("fspath")(weights));
    nb::gil_scoped_release release;
    w = Weights::from_safetensors(path);
  } else {
    AOTRT_CHECK(nb::hasattr(weights, "items"), kInvalidArgument, "aotrt: weights= is a ",
                nb::type_name(weights.type()).c_str(),
                "; give a safetensors file's path or a dict of name -> array");
    std::map<std::string, Tensor> tensors;
    for (nb::handle item : weights.attr("items")()) {
      const std::string name = nb::cast<std::string>(item[0]);
      PyTensor t = to_tensor(item[1], "aotrt: weights['" + name + "']");
      owners.insert(owners.end(), t.owners.begin(), t.owners.end());
      tensors.emplace(name, std::move(t.tensor));
    }
    w = Weights::from_tensors(std::move(tensors));
  }
  w.allow_unused = allow_unused;
  return w;
}

struct PyModel {
  Model model;
  // Note [Python weights lifetime]
  // Arrays given as weights may be used in place (Weights::from_tensors), so
  // the model keeps their Python owners: those of the current set, and of the
  // set before it, which a run started before the last swap may still read.
  std::vector<nb::object> weight_owners, previous_weight_owners;

  // Note [Python input layout]
  // Where the package says the layout an input was exported with, the input
  // is laid out so (Model::prepare_input). Where it does not, a layout given
  // in layouts= is used, else a channels-last 4-d array stays channels-last
  // (what a torch user would pass) and any other is made row-major; the
  // model's own input checks then say which strides it wants.
  Tensor prepare(size_t index, const Tensor& value, InputHint hint) const {
    const ModelInfo& mi = model.info();
    const bool recorded = index < mi.input_specs.size() && mi.input_specs[index].has_value();
    if (!recorded && !hint.layout && value.dim() == 4 &&
        is_channels_last_strides_2d(value.sizes(), value.strides())) {
      hint.layout = MemoryFormat::ChannelsLast;
    }
    return model.prepare_input(index, value, hint);
  }

  nb::list run(nb::args args, nb::handle dtypes, nb::handle layouts) {
    const size_t n_in = model.num_inputs();
    std::vector<InputHint> hints(n_in);
    read_hints(dtypes, n_in, hints, "dtypes", [](InputHint& h, nb::handle v, const std::string& what) {
      h.dtype = parse_dtype(v, what);
    });
    read_hints(layouts, n_in, hints, "layouts", [](InputHint& h, nb::handle v, const std::string& what) {
      h.layout = parse_layout(v, what);
    });
    std::vector<PyTensor> given;
    given.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      given.push_back(to_tensor(args[i], "aotrt.Model.run: input " + std::to_string(i) +
                                             (i < n_in ? " ('" + model.info().input_names[i] + "')"
                                                       : std::string())));
    }
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
    {
      nb::gil_scoped_release release;
      inputs.reserve(given.size());
      // Inputs past the model's count go through as they are, for run() to
      // refuse the count.
      for (size_t i = 0; i < given.size(); ++i) {
        inputs.push_back(i < n_in ? prepare(i, given[i].tensor, hints[i]) : given[i].tensor);
      }
      outputs = model.run(inputs);
    }
    nb::list result;
    for (Tensor& out : outputs) {
      if (!out.defined()) {
        result.append(nb::none());
        continue;
      }
      PyTensor py{std::move(out), {}};
      // An output may be a view of an input's memory (Model::run keeps those).
      for (size_t i = 0; i < inputs.size(); ++i) {
        if (!given[i].owners.empty() && overlaps(py.tensor, inputs[i])) {
          py.owners.insert(py.owners.end(), given[i].owners.begin(), given[i].owners.end());
        }
      }
      result.append(nb::cast(std::move(py)));
    }
    return result;
  }

  void swap(nb::handle weights, bool allow_unused, bool partial) {
    std::vector<nb::object> owners;
    const Weights w = read_weights(weights, allow_unused, owners);
    {
      nb::gil_scoped_release release;
      if (partial) {
        model.update_weights(w);
      } else {
        model.swap_weights(w);
      }
    }
    // update_weights keeps the constants it was not given: their owners stay current.
    if (partial) owners.insert(owners.end(), weight_owners.begin(), weight_owners.end());
    previous_weight_owners = std::move(weight_owners);
    weight_owners = std::move(owners);
  }
};

PyModel load(const std::string& path, nb::handle device, std::optional<bool> cuda_graph,
             nb::handle weights, const std::string& model_name, bool check_inputs,
             bool allow_unused_weights) {
  const auto [type, index] = parse_device(device);
  LoadOptions options;
  options.model_name = model_name;
  options.device_index = index;
  // None: aotrt's automatic graphs (Note [Automatic CUDA graphs]).
  options.cuda_graph = !cuda_graph.has_value() ? CudaGraphMode::kAuto
                       : *cuda_graph           ? CudaGraphMode::kOn
                                               : CudaGraphMode::kOff;
  options.check_inputs = check_inputs;
  std::vector<nb::object> owners;
  if (!weights.is_none()) options.weights = read_weights(weights, allow_unused_weights, owners);
  std::optional<Model> model;
  {
    nb::gil_scoped_release release;
    model.emplace(Model::load(path, options));
  }
  if (type.has_value() && model->device().type != *type) {
    AOTRT_FAIL(kInvalidArgument, "aotrt.load: ", path, " is a ", model->device().is_cpu() ? "cpu" : "cuda",
               " package but device '", nb::cast<std::string>(nb::str(device)),
               "' was asked for (a package runs on the device it was exported for)");
  }
  return PyModel{std::move(*model), std::move(owners), {}};
}

// --- Programs, sessions and generation (aotrt/session.h, aotrt/generate.h) ---------------

// Inputs of a session's run: arrays to tensors on the program's device.
std::vector<Tensor> session_inputs(const Program& program, const std::string& graph, nb::args args,
                                   std::vector<PyTensor>& given) {
  const ModelInfo& info = program.info(graph);
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    given.push_back(to_tensor(args[i], "aotrt.Session.run: input " + std::to_string(i) +
                                           (i < info.input_names.size()
                                                ? " ('" + info.input_names[i] + "')"
                                                : std::string())));
  }
  for (PyTensor& t : given) {
    inputs.push_back(t.tensor.device() == program.device() ? t.tensor : t.tensor.to(program.device()));
  }
  return inputs;
}

nb::list outputs_to_list(std::vector<Tensor>& outputs) {
  nb::list result;
  for (Tensor& out : outputs) {
    if (!out.defined()) {
      result.append(nb::none());
    } else {
      result.append(nb::cast(PyTensor{std::move(out), {}}));
    }
  }
  return result;
}

LoadOptions load_options(nb::handle device, std::optional<bool> cuda_graph, bool check_inputs) {
  const auto [type, index] = parse_device(device);
  (void)type;
  LoadOptions options;
  options.device_index = index;
  options.cuda_graph = !cuda_graph.has_value() ? CudaGraphMode::kAuto
                       : *cuda_graph           ? CudaGraphMode::kOn
                                               : CudaGraphMode::kOff;
  options.check_inputs = check_inputs;
  return options;
}

void check_device(const Program& program, nb::handle device, const std::string& path, const char* fn) {
  const auto [type, index] = parse_device(device);
  (void)index;
  if (type.has_value() && program.device().type != *type) {
    AOTRT_FAIL(kInvalidArgument, fn, ": ", path, " is a ", program.device().is_cpu() ? "cpu" : "cuda",
               " package but device '", nb::cast<std::string>(nb::str(device)),
               "' was asked for (a package runs on the device it was exported for)");
  }
}

nb::dict state_dict(const StateInfo& s) {
  nb::dict d;
  d["name"] = s.name;
  d["dtype"] = std::string(dtype_name(s.dtype));
  d["sizes"] = s.sizes;
  d["strides"] = s.strides;
  d["nbytes"] = s.nbytes;
  d["graphs"] = s.graphs;
  return d;
}

nb::dict config_dict(const GenerationConfig& c) {
  nb::dict d;
  d["kind"] = c.kind;
  d["decode_graph"] = c.decode_graph;
  d["prefill_graph"] = c.prefill_graph;
  d["encoder_graph"] = c.encoder_graph;
  d["max_cache_len"] = c.max_cache_len;
  d["max_prefill_len"] = c.max_prefill_len;
  d["vocab_size"] = c.vocab_size;
  d["eos_token_ids"] = c.eos_token_ids;
  d["decoder_start_token_ids"] = c.decoder_start_token_ids;
  d["source"] = c.source;
  return d;
}

GenerateOptions generate_options(int64_t max_new_tokens, float temperature, int64_t top_k,
                                 float top_p, uint64_t seed, std::optional<std::vector<int64_t>> eos,
                                 nb::handle on_token) {
  GenerateOptions o;
  o.max_new_tokens = max_new_tokens;
  o.sampling.temperature = temperature;
  o.sampling.top_k = top_k;
  o.sampling.top_p = top_p;
  o.sampling.seed = seed;
  o.eos_token_ids = std::move(eos);
  if (!on_token.is_none()) {
    nb::object fn = nb::borrow(on_token);
    // Called from the generating thread, which released the GIL; a Python
    // exception stops the generation and is raised from generate().
    o.on_token = [fn](int64_t token) {
      nb::gil_scoped_acquire gil;
      nb::object r = fn(token);
      return r.is_none() || nb::cast<bool>(r);
    };
  }
  return o;
}

}  // namespace
}  // namespace aotrt::python

namespace aotrt::python {
namespace {

void bind_generation(nb::module_& m) {
  nb::class_<Session>(m, "Session",
                      "A session of a Program: its own copy of the state the graphs write (KV "
                      "caches), the weights shared with every other session.")
      .def(
          "run",
          [](Session& s, const std::string& graph, nb::args args) {
            std::vector<PyTensor> given;
            std::vector<Tensor> inputs = session_inputs(s.program(), graph, args, given);
            std::vector<Tensor> outputs;
            {
              nb::gil_scoped_release release;
              outputs = s.run(graph, inputs);
            }
            return outputs_to_list(outputs);
          },
          "graph"_a, "inputs"_a,
          nb::sig("def run(self, graph: str, *inputs: object) -> list[Tensor | None]"),
          "Runs one graph of the program with this session's state.")
      .def("reset", [](Session& s) { nb::gil_scoped_release r; s.reset(); },
           "The state back to the package's initial values.")
      .def("fork", [](const Session& s) { nb::gil_scoped_release r; return s.fork(); },
           "A new session holding a copy of this one's state.")
      .def_prop_ro("id", &Session::id)
      .def_prop_ro("memory_bytes", &Session::memory_bytes,
                   "Bytes the session holds: its state and its CUDA graphs' memory.");

  nb::class_<Program>(m, "Program",
                      "Every graph of a package over one copy of the weights (aotrt.load_program).")
      .def_prop_ro("graphs", &Program::graphs)
      .def("info", [](const Program& p, const std::string& g) { return describe_info(p.info(g)); },
           "graph"_a)
      .def_prop_ro("device", [](const Program& p) { return p.device().str(); })
      .def_prop_ro("state",
                   [](const Program& p) {
                     nb::list l;
                     for (const StateInfo& s : p.state()) l.append(state_dict(s));
                     return l;
                   },
                   "What each session owns: name, dtype, sizes, strides, nbytes, graphs.")
      .def_prop_ro("session_state_bytes", &Program::session_state_bytes)
      .def_prop_ro("shared_constant_bytes", &Program::shared_constant_bytes)
      .def("new_session", [](const Program& p) { nb::gil_scoped_release r; return p.new_session(); });

  m.def(
      "load_program",
      [](const std::string& path, nb::handle device, std::optional<bool> cuda_graph,
         std::optional<std::vector<std::string>> graphs, bool check_inputs) {
        const LoadOptions options = load_options(device, cuda_graph, check_inputs);
        std::optional<Program> program;
        {
          nb::gil_scoped_release release;
          program.emplace(Program::load(path, options, graphs.value_or(std::vector<std::string>{})));
        }
        check_device(*program, device, path, "aotrt.load_program");
        return std::move(*program);
      },
      "path"_a, "device"_a = nb::none(), "cuda_graph"_a = nb::none(), "graphs"_a = nb::none(),
      "check_inputs"_a = true, "Loads every graph of a package (see aotrt.load_program).");

  nb::class_<GenerateResult>(m, "GenerateResult", "What one generate() call gave.")
      .def_ro("tokens", &GenerateResult::tokens, "The new token ids (the prompt excluded).")
      .def_ro("stop_reason", &GenerateResult::stop_reason,
              "'eos', 'max_new_tokens', 'stopped' or 'cache_full'.")
      .def_ro("ttft_ms", &GenerateResult::ttft_ms)
      .def_ro("total_ms", &GenerateResult::total_ms)
      .def_ro("tokens_per_s", &GenerateResult::tokens_per_s)
      .def_ro("inter_token_ms", &GenerateResult::inter_token_ms)
      .def("__repr__", [](const GenerateResult& r) {
        return nb::str("GenerateResult({} tokens, stop_reason={!r}, ttft_ms={:.3f}, tokens_per_s={:.1f})")
            .format(r.tokens.size(), r.stop_reason, r.ttft_ms, r.tokens_per_s);
      });

  nb::class_<Sequence>(m, "Sequence", "A sequence being generated: a session and its length.")
      .def_prop_ro("length", &Sequence::length, "Tokens in the cache (prompt and generated).")
      .def("reset", [](Sequence& s) { nb::gil_scoped_release r; s.reset(); })
      .def("fork", [](const Sequence& s) { nb::gil_scoped_release r; return s.fork(); })
      .def_prop_ro("memory_bytes", &Sequence::memory_bytes)
      .def_prop_ro("session", [](Sequence& s) -> Session& { return s.session(); },
                   nb::rv_policy::reference_internal);

  nb::class_<Generator>(m, "Generator", "A generation package (see aotrt.load_generator).")
      .def_prop_ro("config", [](const Generator& g) { return config_dict(g.config()); })
      .def_prop_ro("program", [](const Generator& g) -> const Program& { return g.program(); },
                   nb::rv_policy::reference_internal)
      .def("new_sequence", [](const Generator& g) { nb::gil_scoped_release r; return g.new_sequence(); })
      .def(
          "generate",
          [](const Generator& g, std::vector<int64_t> prompt, int64_t max_new_tokens,
             float temperature, int64_t top_k, float top_p, uint64_t seed,
             std::optional<std::vector<int64_t>> eos, Sequence* sequence, nb::handle on_token) {
            const GenerateOptions o = generate_options(max_new_tokens, temperature, top_k, top_p,
                                                       seed, std::move(eos), on_token);
            nb::gil_scoped_release release;
            return sequence != nullptr ? g.generate(*sequence, prompt, o) : g.generate(prompt, o);
          },
          "prompt"_a, "max_new_tokens"_a = 64, "temperature"_a = 0.f, "top_k"_a = 0,
          "top_p"_a = 1.f, "seed"_a = 0, "eos_token_ids"_a = nb::none(),
          "sequence"_a = nb::none(), "on_token"_a = nb::none(),
          "Generates after prompt (a list of token ids), in `sequence` (continuing it) or a new "
          "one; on_token(token) is called with each new token as it comes (return False to "
          "stop).")
      .def(
          "generate_from",
          [](const Generator& g, Sequence& sequence, nb::handle encoder_input,
             int64_t max_new_tokens, float temperature, int64_t top_k, float top_p, uint64_t seed,
             std::optional<std::vector<int64_t>> eos, nb::handle on_token) {
            const GenerateOptions o = generate_options(max_new_tokens, temperature, top_k, top_p,
                                                       seed, std::move(eos), on_token);
            PyTensor in = to_tensor(encoder_input, "aotrt.Generator.generate_from: encoder_input");
            nb::gil_scoped_release release;
            return g.generate_from(sequence, in.tensor, o);
          },
          "sequence"_a, "encoder_input"_a, "max_new_tokens"_a = 64, "temperature"_a = 0.f,
          "top_k"_a = 0, "top_p"_a = 1.f, "seed"_a = 0, "eos_token_ids"_a = nb::none(),
          "on_token"_a = nb::none(),
          "Encoder-decoder packages: encodes encoder_input, then generates.");

  m.def(
      "load_generator",
      [](const std::string& path, nb::handle device, std::optional<bool> cuda_graph,
         std::optional<int64_t> max_cache_len, std::optional<std::vector<int64_t>> eos) {
        GeneratorOptions options;
        options.load = load_options(device, cuda_graph, true);
        options.max_cache_len = max_cache_len;
        if (eos) options.eos_token_ids = *eos;
        std::optional<Generator> gen;
        {
          nb::gil_scoped_release release;
          gen.emplace(Generator::load(path, options));
        }
        check_device(gen->program(), device, path, "aotrt.load_generator");
        return std::move(*gen);
      },
      "path"_a, "device"_a = nb::none(), "cuda_graph"_a = nb::none(),
      "max_cache_len"_a = nb::none(), "eos_token_ids"_a = nb::none(),
      "Loads a generation package (see aotrt.load_generator).");
}

}  // namespace
}  // namespace aotrt::python

using namespace aotrt;
using namespace aotrt::python;

NB_MODULE(_aotrt, m) {
  m.doc() = "aotrt's extension: load AOTInductor .pt2 packages and run them, without libtorch.";
  nb::register_exception_translator(translate_error);
  m.def("_set_error_classes", &set_error_classes, "classes"_a,
        "Which Python class each aotrt error kind raises ({kind name: class}).");

  nb::class_<PyTensor>(m, "Tensor",
                       "A strided view of memory aotrt holds (a model output, or an array given to "
                       "as_tensor). Zero-copy into numpy (numpy(), __array__) for CPU tensors and "
                       "into any DLPack consumer (torch.from_dlpack, cupy.from_dlpack).")
      .def_prop_ro("shape", [](const PyTensor& t) { return int_tuple(t.tensor.sizes()); },
                   nb::for_getter(nb::sig("def shape(self, /) -> tuple[int, ...]")))
      .def_prop_ro("strides", [](const PyTensor& t) { return int_tuple(t.tensor.strides()); },
                   nb::for_getter(nb::sig("def strides(self, /) -> tuple[int, ...]")),
                   "Strides in elements (as torch counts them; numpy's count bytes).")
      .def_prop_ro("dtype", [](const PyTensor& t) { return std::string(dtype_name(t.tensor.dtype())); },
                   "The element type's name: 'float32', 'bfloat16', 'int64', ...")
      .def_prop_ro("device", [](const PyTensor& t) { return t.tensor.device().str(); },
                   "'cpu' or 'cuda:N'.")
      .def_prop_ro("ndim", [](const PyTensor& t) { return t.tensor.dim(); })
      .def_prop_ro("data_ptr", [](const PyTensor& t) { return reinterpret_cast<uintptr_t>(t.tensor.data_ptr()); },
                   "Address of element 0 (device memory for a CUDA tensor).")
      // typing.Any: in the stub, `numpy.ndarray` would name this method (class scope).
      .def("numpy", &tensor_numpy, nb::sig("def numpy(self) -> typing.Any"),
           "The values as a numpy array: a view of the same memory for a CPU tensor of a dtype numpy "
           "has; otherwise a dense host copy (bfloat16 and float8 as float32, complex32 as complex64; "
           "a CUDA tensor waits for its values).")
      .def("__array__",
           [](const PyTensor& self, nb::handle dtype, nb::handle copy) {
             const Tensor& t = self.tensor;
             if (!copy.is_none() && !nb::cast<bool>(copy) &&
                 (!t.device().is_cpu() || numpy_dtype(t.dtype()) != t.dtype())) {
               throw nb::value_error("aotrt.Tensor.__array__: copy=False, but a numpy array of "
                                     "this tensor is a copy (CUDA memory, or a dtype numpy lacks)");
             }
             nb::object array = tensor_numpy(self);
             if (!dtype.is_none()) array = array.attr("astype")(dtype, "copy"_a = false);
             if (!copy.is_none() && nb::cast<bool>(copy)) array = array.attr("copy")();
             return array;
           },
           "dtype"_a = nb::none(), "copy"_a = nb::none(),
           nb::sig("def __array__(self, dtype: object | None = None, copy: bool | None = None) "
                   "-> typing.Any"))
      .def("__dlpack__", &tensor_dlpack, nb::kw_only(), "stream"_a = nb::none(),
           "max_version"_a = nb::none(), "dl_device"_a = nb::none(), "copy"_a = nb::none(),
           "A DLPack capsule holding its own handle on the memory (released by the consumer).")
      .def("__dlpack_device__", &tensor_dlpack_device,
           nb::sig("def __dlpack_device__(self) -> tuple[int, int]"))
      .def("__repr__", &tensor_repr);

  m.def("as_tensor", [](nb::handle obj) { return to_tensor(obj, "aotrt.as_tensor"); }, "array"_a,
        "An aotrt.Tensor viewing an array's memory (no copy): numpy, or anything with __dlpack__.");

  nb::class_<InputInfo>(m, "InputInfo", "One model input: its name and, where the package records "
                                        "it, the dtype, sizes and strides it was exported with.")
      .def_ro("name", &InputInfo::name)
      .def_ro("dtype", &InputInfo::dtype)
      .def_ro("sizes", &InputInfo::sizes)
      .def_ro("strides", &InputInfo::strides)
      .def("__repr__", [](const InputInfo& i) {
        return nb::str("InputInfo(name={!r}, dtype={!r}, sizes={!r}, strides={!r})")
            .format(i.name, i.dtype, i.sizes, i.strides);
      });
  nb::class_<PyConstantInfo>(m, "ConstantInfo", "One constant (weight or buffer) of the model.")
      .def_ro("name", &PyConstantInfo::name)
      .def_ro("original_fqn", &PyConstantInfo::original_fqn,
              "The parameter's or buffer's name in the nn.Module.")
      .def_ro("dtype", &PyConstantInfo::dtype)
      .def_ro("nbytes", &PyConstantInfo::nbytes)
      .def_ro("from_folded", &PyConstantInfo::from_folded)
      .def_ro("sizes", &PyConstantInfo::sizes, "As the model keeps it, where the package says.")
      .def_ro("strides", &PyConstantInfo::strides)
      .def_ro("type", &PyConstantInfo::type,
              "torch's ConstantType: 'parameter', 'buffer', 'tensor_constant', 'folded' or ''.")
      .def_ro("session_state", &PyConstantInfo::session_state,
              "The model writes it (a KV cache): each Session owns a copy.")
      .def("__repr__", [](const PyConstantInfo& c) {
        return nb::str("ConstantInfo(name={!r}, original_fqn={!r}, dtype={!r}, nbytes={})")
            .format(c.name, c.original_fqn, c.dtype, c.nbytes);
      });
  nb::class_<PyModelInfo>(m, "ModelInfo", "What a loaded package holds.")
      .def_ro("package_path", &PyModelInfo::package_path)
      .def_ro("model_name", &PyModelInfo::model_name)
      .def_ro("device", &PyModelInfo::device)
      .def_ro("inputs", &PyModelInfo::inputs)
      .def_ro("outputs", &PyModelInfo::outputs, "Output names.")
      .def_ro("constants", &PyModelInfo::constants)
      .def_ro("metadata", &PyModelInfo::metadata)
      .def_ro("weights_source", &PyModelInfo::weights_source,
              "Where the weights came from: 'package', a safetensors file, or 'tensors'.")
      .def("__repr__", [](const PyModelInfo& i) {
        return nb::str("ModelInfo(package_path={!r}, device={!r}, inputs={!r}, outputs={!r}, "
                       "{} constants)")
            .format(i.package_path, i.device, i.inputs, i.outputs, i.constants.size());
      });

  nb::class_<PyModel>(m, "Model",
                      "A loaded package. run() / __call__ take one array per input and return a "
                      "list of aotrt.Tensor (None for a None output). Several threads may run one "
                      "Model (runs are serialised; the GIL is released while one runs).")
      .def("run", &PyModel::run, "inputs"_a, nb::kw_only(), "dtypes"_a = nb::none(),
           "layouts"_a = nb::none(),
           nb::sig("def run(self, *inputs: object, dtypes: collections.abc.Sequence[str | None] | None = None, "
                   "layouts: collections.abc.Sequence[str | None] | None = None) -> list[Tensor | None]"),
           "Runs the model once. Each input is laid out as the model expects (see "
           "aotrt.load); dtypes= and layouts= (one entry per input, None for none) say what "
           "the package does not: a dtype to convert to ('bfloat16', ...) and a layout "
           "('contiguous', 'channels_last', 'channels_last_3d').")
      .def("__call__", &PyModel::run, "inputs"_a, nb::kw_only(), "dtypes"_a = nb::none(),
           "layouts"_a = nb::none(),
           nb::sig("def __call__(self, *inputs: object, dtypes: collections.abc.Sequence[str | None] | None = None, "
                   "layouts: collections.abc.Sequence[str | None] | None = None) -> list[Tensor | None]"))
      .def("swap_weights",
           [](PyModel& m, nb::handle weights, bool allow_unused) { m.swap(weights, allow_unused, false); },
           "weights"_a, "allow_unused"_a = false,
           nb::sig("def swap_weights(self, weights: str | os.PathLike[str] | collections.abc.Mapping[str, object], "
                   "allow_unused: bool = False) -> None"),
           "Replaces every constant while the model keeps serving (runs in progress finish on "
           "the old weights). weights: a safetensors file or a dict of original FQN -> array.")
      .def("update_weights",
           [](PyModel& m, nb::handle weights, bool allow_unused) { m.swap(weights, allow_unused, true); },
           "weights"_a, "allow_unused"_a = false,
           nb::sig("def update_weights(self, weights: str | os.PathLike[str] | collections.abc.Mapping[str, object], "
                   "allow_unused: bool = False) -> None"),
           "swap_weights for some constants; the others keep their values.")
      .def_prop_ro("info", [](const PyModel& m) { return describe_info(m.model.info()); })
      .def_prop_ro("device", [](const PyModel& m) { return m.model.device().str(); })
      .def_prop_ro(
          "cuda_graph_status",
          [](const PyModel& m) {
            Model::CudaGraphStatus st;
            {
              nb::gil_scoped_release release;  // waits for a run in progress
              st = m.model.cuda_graph_status();
            }
            nb::dict d;
            d["mode"] = cuda_graph_mode_name(st.mode);
            d["graphs"] = st.graphs;
            d["replays"] = st.replays;
            d["plain_runs"] = st.plain_runs;
            d["declined"] = st.declined;
            return d;
          },
          nb::for_getter(nb::sig("def cuda_graph_status(self, /) -> dict[str, object]")),
          "What CUDA graph mode did so far: mode ('off', 'auto', 'on'), graphs captured, "
          "replays, plain_runs, and why graphs were declined ('' while they are not).");

  m.def("load", &load, "path"_a, "device"_a = nb::none(), "cuda_graph"_a = nb::none(),
        "weights"_a = nb::none(), "model_name"_a = "model", "check_inputs"_a = true,
        "allow_unused_weights"_a = false, "Loads a .pt2 package (see aotrt.load).");
  bind_generation(m);
}
