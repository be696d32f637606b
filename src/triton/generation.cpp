// GenerationServer (triton/generation.h): Note [Serving generation].
#include "triton/generation.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "triton/server.h"

namespace aotrt::triton {
namespace {

// --- Metrics ----------------------------------------------------------------------------------

// The server's metric families are process-wide: each is made once, on the
// first model that asks for it, and deleted after the last of its metrics.
struct Family {
  TRITONSERVER_MetricFamily* family = nullptr;
  int users = 0;
};
std::mutex families_mutex;
std::map<std::string, Family>& families() {
  static std::map<std::string, Family> f;
  return f;
}

// One labelled metric of the server's /metrics endpoint; does nothing when
// the server has no metrics (a build without them answers UNSUPPORTED).
class Metric {
 public:
  Metric(const char* family, const char* help, TRITONSERVER_MetricKind kind,
         const std::string& model, const std::string& instance)
      : family_name_(family) {
    std::lock_guard<std::mutex> lock(families_mutex);
    Family& f = families()[family_name_];
    if (f.family == nullptr) {
      TRITONSERVER_Error* err = TRITONSERVER_MetricFamilyNew(&f.family, kind, family, help);
      if (err != nullptr) {
        log(TRITONSERVER_LOG_VERBOSE, std::string("aotrt: no metric ") + family + ": " +
                                          TRITONSERVER_ErrorMessage(err));
        TRITONSERVER_ErrorDelete(err);
        f.family = nullptr;
        return;
      }
    }
    TRITONSERVER_Parameter* labels[2] = {
        TRITONSERVER_ParameterNew("model", TRITONSERVER_PARAMETER_STRING, model.c_str()),
        TRITONSERVER_ParameterNew("instance", TRITONSERVER_PARAMETER_STRING, instance.c_str())};
    const TRITONSERVER_Parameter* const_labels[2] = {labels[0], labels[1]};
    TRITONSERVER_Error* err = TRITONSERVER_MetricNew(&metric_, f.family, const_labels, 2);
    for (TRITONSERVER_Parameter* p : labels) TRITONSERVER_ParameterDelete(p);
    if (err != nullptr) {
      log_failure(err, std::string("TRITONSERVER_MetricNew (") + family + ")");
      metric_ = nullptr;
    }
    if (metric_ != nullptr) ++f.users;
  }

  ~Metric() {
    if (metric_ == nullptr) return;
    std::lock_guard<std::mutex> lock(families_mutex);
    log_failure(TRITONSERVER_MetricDelete(metric_), "TRITONSERVER_MetricDelete");
    Family& f = families()[family_name_];
    if (--f.users == 0 && f.family != nullptr) {
      log_failure(TRITONSERVER_MetricFamilyDelete(f.family), "TRITONSERVER_MetricFamilyDelete");
      f.family = nullptr;
    }
  }
  Metric(const Metric&) = delete;
  Metric& operator=(const Metric&) = delete;

  void set(double v) {
    if (metric_ != nullptr) log_failure(TRITONSERVER_MetricSet(metric_, v), "TRITONSERVER_MetricSet");
  }
  void add(double v) {
    if (metric_ != nullptr) {
      log_failure(TRITONSERVER_MetricIncrement(metric_, v), "TRITONSERVER_MetricIncrement");
    }
  }

 private:
  std::string family_name_;
  TRITONSERVER_Metric* metric_ = nullptr;
};

// --- Requests ---------------------------------------------------------------------------------

// One request, from its inputs read to its release.
struct Job {
  TRITONBACKEND_Request* request = nullptr;
  TRITONBACKEND_ResponseFactory* factory = nullptr;
  std::vector<int64_t> prompt;
  int64_t max_new_tokens = 0;
  SamplingConfig sampling;
  std::optional<int64_t> end_id;
  bool streaming = false;
  bool exclude_input = false;
  bool want_ids = false, want_length = false;  // outputs the request asked for
  bool final_sent = false;                      // a response flagged final went out
  int64_t tokens_sent = 0;                      // tokens in responses the server took
  uint64_t received_ns = 0, compute_start_ns = 0, compute_end_ns = 0;
};

// A request input's values, as int64 / double / bool whatever its type.
struct InputValues {
  std::string name;
  TRITONSERVER_DataType type = TRITONSERVER_TYPE_INVALID;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    return n;
  }

  std::vector<int64_t> ints() const {
    const int64_t n = count();
    std::vector<int64_t> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* p = bytes.data();
      switch (type) {
        case TRITONSERVER_TYPE_INT32: {
          int32_t v;
          std::memcpy(&v, p + i * 4, 4);
          out[i] = v;
          break;
        }
        case TRITONSERVER_TYPE_INT64:
          std::memcpy(&out[i], p + i * 8, 8);
          break;
        case TRITONSERVER_TYPE_UINT64: {
          uint64_t v;
          std::memcpy(&v, p + i * 8, 8);
          AOTRT_CHECK(v <= static_cast<uint64_t>(INT64_MAX), kInvalidArgument, "input '", name,
                      "': ", v, " is too large");
          out[i] = static_cast<int64_t>(v);
          break;
        }
        default:
          AOTRT_FAIL(kInvalidArgument, "input '", name, "': data type ", static_cast<int>(type),
                     " is not an integer type");
      }
    }
    return out;
  }

  int64_t scalar_int() const {
    check_scalar();
    return ints()[0];
  }

  uint64_t scalar_uint64() const {
    check_scalar();
    if (type == TRITONSERVER_TYPE_UINT64) {
      uint64_t v;
      std::memcpy(&v, bytes.data(), 8);
      return v;
    }
    const int64_t v = ints()[0];
    AOTRT_CHECK(v >= 0, kInvalidArgument, "input '", name, "' is ", v, "; expected >= 0");
    return static_cast<uint64_t>(v);
  }

  double scalar_double() const {
    check_scalar();
    if (type == TRITONSERVER_TYPE_FP32) {
      float v;
      std::memcpy(&v, bytes.data(), 4);
      return v;
    }
    AOTRT_CHECK(type == TRITONSERVER_TYPE_FP64, kInvalidArgument, "input '", name,
                "': data type ", static_cast<int>(type), " is not FP32 or FP64");
    double v;
    std::memcpy(&v, bytes.data(), 8);
    return v;
  }

  bool scalar_bool() const {
    check_scalar();
    AOTRT_CHECK(type == TRITONSERVER_TYPE_BOOL, kInvalidArgument, "input '", name,
                "': data type ", static_cast<int>(type), " is not BOOL");
    return bytes[0] != 0;
  }

  void check_scalar() const {
    AOTRT_CHECK(count() == 1, kInvalidArgument, "input '", name, "': shape ", shape_text(shape),
                " holds ", count(), " values; expected one");
  }
};

uint64_t type_size(TRITONSERVER_DataType type) {
  switch (type) {
    case TRITONSERVER_TYPE_BOOL:
      return 1;
    case TRITONSERVER_TYPE_INT32:
    case TRITONSERVER_TYPE_FP32:
      return 4;
    case TRITONSERVER_TYPE_INT64:
    case TRITONSERVER_TYPE_UINT64:
    case TRITONSERVER_TYPE_FP64:
      return 8;
    default:
      return 0;
  }
}

std::map<std::string, InputValues> read_request_inputs(TRITONBACKEND_Request* request,
                                                       const GenerationModelConfig& config) {
  std::map<std::string, InputValues> values;
  uint32_t count = 0;
  CHECK_TRITON(TRITONBACKEND_RequestInputCount(request, &count));
  for (uint32_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    CHECK_TRITON(TRITONBACKEND_RequestInputName(request, i, &name));
    TRITONBACKEND_Input* input = nullptr;
    CHECK_TRITON(TRITONBACKEND_RequestInput(request, name, &input));
    InputValues v;
    v.name = name;
    const int64_t* shape = nullptr;
    uint32_t dims = 0;
    uint64_t byte_size = 0;
    CHECK_TRITON(TRITONBACKEND_InputProperties(input, nullptr, &v.type, &shape, &dims, &byte_size,
                                               nullptr));
    v.shape.assign(shape, shape + dims);
    const std::string what = "model '" + config.name + "': input '" + v.name + "'";
    auto configured = config.inputs.find(v.name);
    AOTRT_CHECK(configured != config.inputs.end(), kInvalidArgument, what, " is not configured");
    AOTRT_CHECK(dtype_from_server(v.type) == configured->second && type_size(v.type) > 0,
                kInvalidArgument, what, ": the request's data type (", static_cast<int>(v.type),
                ") is not the configured ", config_dtype_name(configured->second));
    if (config.max_batch_size > 0) {
      AOTRT_CHECK(!v.shape.empty() && v.shape[0] == 1, kInvalidArgument, what, ": shape ",
                  shape_text(v.shape), "; a request holds one sequence (batch 1)");
      v.shape.erase(v.shape.begin());
    }
    for (int64_t s : v.shape) {
      AOTRT_CHECK(s >= 0 && s <= (int64_t{1} << 40), kInvalidArgument, what, ": shape ",
                  shape_text(v.shape));
    }
    AOTRT_CHECK(byte_size == static_cast<uint64_t>(v.count()) * type_size(v.type),
                kInvalidArgument, what, ": ", byte_size, " bytes for shape ", shape_text(v.shape));
    v.bytes.resize(byte_size);
    copy_input_bytes(input, v.bytes.data(), byte_size);
    values[v.name] = std::move(v);
  }
  return values;
}

// Reads the request's inputs and requested outputs into `job` (Note
// [Generation models]); throws kInvalidArgument / kUnsupported for what
// cannot be served. What the Generator checks itself (the prompt against
// the cache and the vocabulary, the sampling parameters) it refuses when
// the request runs.
void read_job(Job& job, const GenerationModelConfig& config) {
  const std::map<std::string, InputValues> in = read_request_inputs(job.request, config);
  auto find = [&](const char* name) -> const InputValues* {
    auto it = in.find(name);
    return it == in.end() ? nullptr : &it->second;
  };
  const std::string where = "model '" + config.name + "'";
  const InputValues* ids = find("input_ids");
  AOTRT_CHECK(ids != nullptr, kInvalidArgument, where, ": the request has no input_ids");
  job.prompt = ids->ints();
  if (const InputValues* n = find("input_lengths")) {
    const int64_t len = n->scalar_int();
    AOTRT_CHECK(len >= 0 && len <= static_cast<int64_t>(job.prompt.size()), kInvalidArgument,
                where, ": input_lengths is ", len, " but input_ids holds ", job.prompt.size());
    job.prompt.resize(static_cast<size_t>(len));
  }
  const InputValues* out_len = find("request_output_len");
  AOTRT_CHECK(out_len != nullptr, kInvalidArgument, where, ": the request has no request_output_len");
  job.max_new_tokens = out_len->scalar_int();
  AOTRT_CHECK(job.max_new_tokens >= 0, kInvalidArgument, where, ": request_output_len is ",
              job.max_new_tokens, "; expected >= 0");
  if (const InputValues* v = find("end_id")) job.end_id = v->scalar_int();
  if (const InputValues* v = find("streaming")) job.streaming = v->scalar_bool();
  AOTRT_CHECK(!job.streaming || config.decoupled, kInvalidArgument, where,
              ": streaming needs a decoupled model (model_transaction_policy { decoupled: true })");
  if (const InputValues* v = find("exclude_input_in_output")) job.exclude_input = v->scalar_bool();
  if (const InputValues* v = find("beam_width")) {
    const int64_t beams = v->scalar_int();
    AOTRT_CHECK(beams == 1, kUnsupported, where, ": beam_width ", beams,
                "; the aotrt backend generates one beam");
  }
  if (const InputValues* v = find("temperature")) job.sampling.temperature = static_cast<float>(v->scalar_double());
  if (const InputValues* v = find("runtime_top_k")) job.sampling.top_k = v->scalar_int();
  if (const InputValues* v = find("runtime_top_p")) {
    // TensorRT-LLM's 0 means no top-p, as 1 does.
    const double p = v->scalar_double();
    job.sampling.top_p = p == 0.0 ? 1.f : static_cast<float>(p);
  }
  if (const InputValues* v = find("random_seed")) job.sampling.seed = v->scalar_uint64();

  uint32_t outputs = 0;
  CHECK_TRITON(TRITONBACKEND_RequestOutputCount(job.request, &outputs));
  for (uint32_t k = 0; k < outputs; ++k) {
    const char* name = nullptr;
    CHECK_TRITON(TRITONBACKEND_RequestOutputName(job.request, k, &name));
    const std::string n = name;
    job.want_ids |= n == "output_ids";
    job.want_length |= n == "sequence_length";
  }
}

// Writes `values` as `dtype` (INT32 or INT64) into a response output of `shape`.
void add_output(TRITONBACKEND_Response* response, const char* name, ScalarType dtype,
                const std::vector<int64_t>& shape, std::span<const int64_t> values) {
  TRITONBACKEND_Output* output = nullptr;
  CHECK_TRITON(TRITONBACKEND_ResponseOutput(response, &output, name, server_dtype(dtype),
                                            shape.data(), static_cast<uint32_t>(shape.size())));
  const uint64_t elem = dtype == ScalarType::Int32 ? 4 : 8;
  const uint64_t nbytes = values.size() * elem;
  std::vector<uint8_t> host(nbytes);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == ScalarType::Int32) {
      const int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(host.data() + i * 4, &v, 4);
    } else {
      std::memcpy(host.data() + i * 8, &values[i], 8);
    }
  }
  void* buffer = nullptr;
  TRITONSERVER_MemoryType type = TRITONSERVER_MEMORY_CPU;
  int64_t type_id = 0;
  CHECK_TRITON(TRITONBACKEND_OutputBuffer(output, &buffer, nbytes, &type, &type_id));
  if (nbytes == 0) return;
  if (type == TRITONSERVER_MEMORY_GPU) {
    Tensor dst = Tensor::from_blob(buffer, {static_cast<int64_t>(nbytes)}, {1}, ScalarType::UInt8,
                                   Device{DeviceType::CUDA, static_cast<int32_t>(type_id)});
    dst.copy_(Tensor::from_blob(host.data(), {static_cast<int64_t>(nbytes)}, {1},
                                ScalarType::UInt8));
    synchronize(dst.device());
  } else {
    std::memcpy(buffer, host.data(), nbytes);
  }
}

}  // namespace

// --- GenerationServer -------------------------------------------------------------------------

class GenerationServer::Impl {
 public:
  Impl(GenerationModelConfig c, Generator g, TRITONBACKEND_ModelInstance* inst,
       const std::string& instance_name)
      : config(std::move(c)),
        generator(std::move(g)),
        instance(inst),
        active_metric("aotrt_generation_active_sessions",
                      "Requests of an aotrt generation model generating now, each in a session",
                      TRITONSERVER_METRIC_KIND_GAUGE, config.name, instance_name),
        queued_metric("aotrt_generation_queued_requests",
                      "Requests of an aotrt generation model waiting for a free session",
                      TRITONSERVER_METRIC_KIND_GAUGE, config.name, instance_name),
        sessions_metric("aotrt_generation_sessions",
                        "Sessions (KV caches) an aotrt generation model holds, in use or idle",
                        TRITONSERVER_METRIC_KIND_GAUGE, config.name, instance_name),
        tokens_metric("aotrt_generation_tokens",
                      "Tokens an aotrt generation model has generated",
                      TRITONSERVER_METRIC_KIND_COUNTER, config.name, instance_name) {
    for (int64_t k = 0; k < config.max_sessions; ++k) slots.emplace_back([this] { slot_loop(); });
  }

  ~Impl() {
    std::deque<Job> dropped;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      dropped.swap(queue);
    }
    ready.notify_all();
    for (Job& job : dropped) {
      finish(job, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                        ("aotrt: model '" + config.name + "' is unloading").c_str()));
    }
    for (std::thread& t : slots) t.join();
  }

  void submit(TRITONBACKEND_Request* request) {
    Job job;
    job.request = request;
    job.received_ns = now_ns();
    TRITONSERVER_Error* made = TRITONBACKEND_ResponseFactoryNew(&job.factory, request);
    if (made != nullptr) {
      job.factory = nullptr;  // answered with a response of the request's own
      finish(job, made);
      return;
    }
    try {
      read_job(job, config);
    } catch (const Error& e) {
      finish(job, server_error(e));
      return;
    } catch (const std::exception& e) {
      finish(job, server_error(Error(ErrorKind::kInternal, e.what())));
      return;
    }
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!stopping) {
        queue.push_back(std::move(job));
        queued_metric.set(static_cast<double>(queue.size()));
        queued = true;
      }
    }
    if (!queued) {
      finish(job, TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                        ("aotrt: model '" + config.name + "' is unloading").c_str()));
      return;
    }
    ready.notify_one();
  }

  const GenerationModelConfig config;
  const Generator generator;

 private:
  bool cancelled(const Job& job) {
    bool is_cancelled = false;
    TRITONSERVER_Error* err = TRITONBACKEND_RequestIsCancelled(job.request, &is_cancelled);
    if (err != nullptr) {
      TRITONSERVER_ErrorDelete(err);
      return false;
    }
    return is_cancelled;
  }

  // Sends `tokens` as one response (output_ids [(1,) 1, n], sequence_length [(1,) 1]).
  // Returns null when it went out, else the error to finish the request with.
  TRITONSERVER_Error* send_tokens(const Job& job, std::span<const int64_t> tokens, uint32_t flags) {
    TRITONBACKEND_Response* response = nullptr;
    TRITONSERVER_Error* made = TRITONBACKEND_ResponseNewFromFactory(&response, job.factory);
    if (made != nullptr) return made;
    const bool batched = config.max_batch_size > 0;
    try {
      if (job.want_ids) {
        std::vector<int64_t> shape = {1, static_cast<int64_t>(tokens.size())};
        if (batched) shape.insert(shape.begin(), 1);
        add_output(response, "output_ids", config.outputs.at("output_ids"), shape, tokens);
      }
      if (job.want_length) {
        std::vector<int64_t> shape = {1};
        if (batched) shape.insert(shape.begin(), 1);
        const int64_t n = static_cast<int64_t>(tokens.size());
        add_output(response, "sequence_length", config.outputs.at("sequence_length"), shape,
                   std::span<const int64_t>(&n, 1));
      }
    } catch (const Error& e) {
      log_failure(TRITONBACKEND_ResponseDelete(response), "TRITONBACKEND_ResponseDelete");
      return server_error(e);
    }
    // The server takes the response whatever this returns.
    return TRITONBACKEND_ResponseSend(response, flags, nullptr);
  }

  // The request's last word: `error` (owned here, may be null) as a final
  // response, or the final flag alone; then statistics, release.
  void finish(Job& job, TRITONSERVER_Error* error) {
    const bool ok = error == nullptr;
    TRITONSERVER_Error* sent = nullptr;  // the last word's own failure (e.g. the client is gone)
    if (error != nullptr) {
      TRITONBACKEND_Response* response = nullptr;
      TRITONSERVER_Error* made = job.factory != nullptr
                                     ? TRITONBACKEND_ResponseNewFromFactory(&response, job.factory)
                                     : TRITONBACKEND_ResponseNew(&response, job.request);
      if (made == nullptr) {
        sent = TRITONBACKEND_ResponseSend(response, TRITONSERVER_RESPONSE_COMPLETE_FINAL, error);
      } else {
        log_failure(made, "an error response of model '" + config.name + "'");
      }
    } else if (!job.final_sent && job.factory != nullptr) {
      sent = TRITONBACKEND_ResponseFactorySendFlags(job.factory, TRITONSERVER_RESPONSE_COMPLETE_FINAL);
    }
    log_ending(job, error, sent);
    if (sent != nullptr) TRITONSERVER_ErrorDelete(sent);
    if (error != nullptr) TRITONSERVER_ErrorDelete(error);
    const uint64_t end = now_ns();
    const uint64_t start = job.compute_start_ns ? job.compute_start_ns : job.received_ns;
    const uint64_t compute_end = job.compute_end_ns ? job.compute_end_ns : start;
    TRITONSERVER_Error* stats = TRITONBACKEND_ModelInstanceReportStatistics(
        instance, job.request, ok, job.received_ns, start, compute_end, end);
    if (stats != nullptr) TRITONSERVER_ErrorDelete(stats);
    log_failure(TRITONBACKEND_RequestRelease(job.request, TRITONSERVER_REQUEST_RELEASE_ALL),
                "releasing a request of model '" + config.name + "'");
    job.request = nullptr;
    if (job.factory != nullptr) {
      log_failure(TRITONBACKEND_ResponseFactoryDelete(job.factory),
                  "TRITONBACKEND_ResponseFactoryDelete");
      job.factory = nullptr;
    }
  }

  // Note [A request's ending in the log]
  // With verbose logging (tritonserver --log-verbose=1) each request's ending is
  // one line: its id, the tokens the server took in responses, and its last word
  // (the final flag, the final response, or an error response) with the server's
  // answer to it. A client left waiting can then tell a request this backend
  // never finished from a last word the server took and did not deliver
  // (tests/triton/test_generation.py's cancellation storm reads it).
  void log_ending(const Job& job, TRITONSERVER_Error* error, TRITONSERVER_Error* sent) const {
    if (!TRITONSERVER_LogIsEnabled(TRITONSERVER_LOG_VERBOSE)) return;
    const char* id = nullptr;
    if (TRITONSERVER_Error* e = TRITONBACKEND_RequestId(job.request, &id)) {
      TRITONSERVER_ErrorDelete(e);
      id = nullptr;
    }
    std::string last = error != nullptr   ? std::string("an error response (") +
                                              TRITONSERVER_ErrorMessage(error) + ")"
                       : job.final_sent   ? std::string("the response flagged final")
                                          : std::string("the final flag");
    last += sent != nullptr ? std::string(", refused: ") + TRITONSERVER_ErrorMessage(sent)
                            : std::string(", taken");
    log(TRITONSERVER_LOG_VERBOSE, "aotrt: model '" + config.name + "': request '" +
                                      (id != nullptr ? id : "") + "' ended: " +
                                      std::to_string(job.tokens_sent) + " tokens sent; " + last);
  }

  // Generates `job` in `sequence`; returns the error to answer with (null: done).
  TRITONSERVER_Error* generate(Job& job, Sequence& sequence) {
    bool was_cancelled = false, unloading = false;
    TRITONSERVER_Error* send_error = nullptr;
    GenerateOptions options;
    options.max_new_tokens = job.max_new_tokens;
    options.sampling = job.sampling;
    if (job.end_id) options.eos_token_ids = std::vector<int64_t>{*job.end_id};
    options.on_token = [&](int64_t token) {
      if (cancelled(job)) {
        was_cancelled = true;
        return false;
      }
      if (stopping.load(std::memory_order_relaxed)) {
        unloading = true;
        return false;
      }
      tokens_metric.add(1);
      if (job.streaming) {
        send_error = send_tokens(job, std::span<const int64_t>(&token, 1), 0);
        if (send_error == nullptr) ++job.tokens_sent;
      }
      return send_error == nullptr;
    };
    GenerateResult result;
    try {
      result = generator.generate(sequence, job.prompt, options);
    } catch (const std::exception& e) {
      job.compute_end_ns = now_ns();
      if (send_error != nullptr) TRITONSERVER_ErrorDelete(send_error);
      const auto* error = dynamic_cast<const Error*>(&e);
      return server_error(error != nullptr ? *error : Error(ErrorKind::kInternal, e.what()));
    }
    job.compute_end_ns = now_ns();
    if (was_cancelled) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_CANCELLED, "aotrt: the request was cancelled");
    }
    if (send_error != nullptr) return send_error;
    if (unloading) {
      return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_UNAVAILABLE,
                                   ("aotrt: model '" + config.name + "' is unloading").c_str());
    }
    if (!job.streaming) {
      std::vector<int64_t> all;
      if (!job.exclude_input) all = job.prompt;
      all.insert(all.end(), result.tokens.begin(), result.tokens.end());
      if (TRITONSERVER_Error* e = send_tokens(job, all, TRITONSERVER_RESPONSE_COMPLETE_FINAL)) {
        return e;
      }
      job.final_sent = true;
      job.tokens_sent = static_cast<int64_t>(result.tokens.size());
    }
    return nullptr;
  }

  void slot_loop() {
    std::optional<Sequence> sequence;
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex);
        ready.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) return;  // the destructor answers what is queued
        job = std::move(queue.front());
        queue.pop_front();
        queued_metric.set(static_cast<double>(queue.size()));
        active_metric.set(static_cast<double>(++active));
      }
      job.compute_start_ns = now_ns();
      TRITONSERVER_Error* error = nullptr;
      bool ran = false;
      if (cancelled(job)) {
        error = TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_CANCELLED,
                                      "aotrt: the request was cancelled");
      } else {
        try {
          if (!sequence) {
            std::lock_guard<std::mutex> lock(sessions_mutex);
            sequence.emplace(generator.new_sequence());
            sessions_metric.set(static_cast<double>(++sessions));
          }
          ran = true;
          error = generate(job, *sequence);
        } catch (const Error& e) {
          error = server_error(e);
        } catch (const std::exception& e) {
          error = server_error(Error(ErrorKind::kInternal, e.what()));
        }
      }
      finish(job, error);
      // The cache back to the package's values for the next request; a
      // sequence that cannot be reset is dropped, and the slot makes a new one.
      if (ran) {
        try {
          sequence->reset();
        } catch (const std::exception& e) {
          log(TRITONSERVER_LOG_ERROR, "aotrt: model '" + config.name +
                                          "': a session could not be reset (" + e.what() +
                                          "); it is replaced");
          drop(sequence);
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        active_metric.set(static_cast<double>(--active));
      }
    }
  }

  void drop(std::optional<Sequence>& sequence) {
    if (!sequence) return;
    sequence.reset();
    std::lock_guard<std::mutex> lock(sessions_mutex);
    sessions_metric.set(static_cast<double>(--sessions));
  }

  TRITONBACKEND_ModelInstance* const instance;
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Job> queue;
  std::atomic<bool> stopping{false};
  int64_t active = 0;  // under `mutex`
  std::mutex sessions_mutex;
  int64_t sessions = 0;  // under `sessions_mutex`
  Metric active_metric, queued_metric, sessions_metric, tokens_metric;
  std::vector<std::thread> slots;
};

GenerationServer::GenerationServer(GenerationModelConfig config, Generator generator,
                                   TRITONBACKEND_ModelInstance* instance,
                                   const std::string& instance_name)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(generator), instance,
                                   instance_name)) {}

GenerationServer::~GenerationServer() = default;

void GenerationServer::submit(TRITONBACKEND_Request* request) noexcept {
  try {
    impl_->submit(request);
  } catch (const std::exception& e) {
    // Only an allocation can fail here; the request stays unanswered.
    log(TRITONSERVER_LOG_ERROR, std::string("aotrt: a request could not be queued: ") + e.what());
  }
}

const Generator& GenerationServer::generator() const { return impl_->generator; }

}  // namespace aotrt::triton
