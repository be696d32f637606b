// aotrt::Generator and aotrt::Sequence (aotrt/generate.h).
//
// Note [The decode loop]
// A Sequence is a Session of the program plus, on the model's device: the
// next step's token ids ([1, 1] int64, written by the sampler), its own
// stream (CUDA: one of the pooled streams, so sequences on different threads
// overlap on the device), the
// sampler's parameters and step counter, and two pinned host slots with an
// event each. Positions are views into one arange of the cache length the
// Generator keeps on the device, so no step copies anything from the host.
// Step k (after the prompt): run the decode graph on (ids, positions[len])
// with the session's state (a CUDA graph replay once captured, Note [Session
// graphs]); sample the last logits row into ids; copy ids to host slot k % 2
// and record event k % 2. The host then queues step k + 1 before it waits on
// event k and reads token k, so the device never idles on the host's reading,
// and that wait is the only one per token. The step queued ahead of a stop
// (end of sequence, max_new_tokens reached, on_token returning false) has
// put the last token into the cache: the sequence's length counts it;
// otherwise the last token is kept as pending and fed first by the next
// generate() on the sequence. The prompt (and a pending token) goes to the
// device once per call, and through the prefill graph in chunks of at most
// max_prefill_len when the package has one, else one token per decode step.
#include "aotrt/generate.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include "core/handles.h"
#include "core/tensor.h"
#include "cuda/cuda.h"
#include "generate/config.h"
#include "generate/sampler.h"

namespace aotrt {

class Generator::Impl {
 public:
  Program program;
  GenerationConfig config;
  Device device;
  Tensor positions;  // int64 [max_cache_len]: 0, 1, 2, ... on the device

  explicit Impl(Program p) : program(std::move(p)) {}
};

class Sequence::Impl {
 public:
  std::shared_ptr<const Generator::Impl> gen;
  std::optional<Session> session;
  int64_t length = 0;                 // positions of the cache holding tokens
  std::optional<int64_t> pending;     // sampled, not yet in the cache
  Tensor ids;                         // int64 [1, 1] on the device: the next step's token
  std::unique_ptr<generate::Sampler> sampler;
  // CUDA only.
  void* stream = nullptr;  // a pooled stream (Note [Pooled streams] in cuda/cuda.h)
  std::unique_ptr<cuda::PinnedHostBuffer> host_tokens;  // 2 int64 slots
  std::unique_ptr<cuda::Event> token_ready[2];
};

namespace {

constexpr const char* kGenerate = "aotrt::Generator::generate";

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A view of `t` (contiguous 1-d int64) at [begin, begin + n) shaped `sizes`.
Tensor slice_1d(const Tensor& t, int64_t begin, std::vector<int64_t> sizes, const char* fn) {
  const TensorImpl& base = handle_get_defined(t.handle(), fn);
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t d = sizes.size(); d-- > 1;) strides[d - 1] = strides[d] * sizes[d];
  return Tensor::adopt(handle_register(make_tensor(base.storage(), sizes, strides,
                                                   base.storage_offset() + begin, base.dtype(), fn)));
}

// Row `row` of logits [B, T, V] (or [B, V]) as a [1, V] view.
Tensor logits_row(const Tensor& logits, int64_t row, const char* fn) {
  const TensorImpl& t = handle_get_defined(logits.handle(), fn);
  AOTRT_CHECK(t.dim() == 3 || t.dim() == 2, kInvalidArgument, fn, ": the graph's first output "
              "has ", t.dim(), " dims; logits [batch, tokens, vocabulary] were expected");
  const int64_t v = t.sizes()[t.dim() - 1];
  const int64_t tokens = t.dim() == 3 ? t.sizes()[1] : 1;
  AOTRT_CHECK(row < tokens, kInternal, fn, ": logits row ", row, " of ", tokens);
  const int64_t offset = t.storage_offset() + (t.dim() == 3 ? row * t.strides()[1] : 0);
  const int64_t sizes[] = {1, v};
  const int64_t strides[] = {t.strides()[0], t.strides()[t.dim() - 1]};
  return Tensor::adopt(handle_register(make_tensor(t.storage(), sizes, strides, offset, t.dtype(), fn)));
}

// On CUDA, the sequence's stream is the current one for the scope.
class OnSequenceStream {
 public:
  explicit OnSequenceStream(const Sequence::Impl& s) {
    if (s.stream != nullptr) scope_.emplace(s.gen->device.index, s.stream);
  }

 private:
  std::optional<cuda::StreamScope> scope_;
};

// Note [The decode loop]: `prompt` after the sequence's pending token; every
// decode step also takes `encoded` (an encoder-decoder's encoder output) when given.
GenerateResult run_generation(const Generator::Impl& gen, Sequence::Impl& s,
                              std::span<const int64_t> prompt, const Tensor* encoded,
                              const GenerateOptions& options, const char* fn) {
  const GenerationConfig& c = gen.config;
  const Generator::Impl* impl = &gen;

  // Every check before anything runs: the sequence stays as it was.
  std::vector<int64_t> tokens;
  if (s.pending) tokens.push_back(*s.pending);
  tokens.insert(tokens.end(), prompt.begin(), prompt.end());
  AOTRT_CHECK(!tokens.empty(), kInvalidArgument, fn, ": the prompt is empty and the sequence "
              "holds no token to continue from");
  AOTRT_CHECK(options.max_new_tokens >= 0, kInvalidArgument, fn, ": max_new_tokens is ",
              options.max_new_tokens);
  for (int64_t t : tokens) {
    AOTRT_CHECK(t >= 0 && (c.vocab_size <= 0 || t < c.vocab_size), kInvalidArgument, fn,
                ": prompt token ", t, " is outside the vocabulary [0, ", c.vocab_size, ")");
  }
  const int64_t room = c.max_cache_len - s.length;
  AOTRT_CHECK(static_cast<int64_t>(tokens.size()) <= room, kInvalidArgument, fn, ": the prompt (",
              tokens.size(), " tokens", s.pending ? ", with the one pending" : "",
              ") does not fit the cache: ", s.length, " of its ", c.max_cache_len,
              " positions are taken, ", room, " are left");
  generate::check_sampling(options.sampling, fn);
  const std::vector<int64_t> eos = options.eos_token_ids ? *options.eos_token_ids : c.eos_token_ids;

  GenerateResult result;
  const Clock::time_point start = Clock::now();
  Clock::time_point last = start;
  const Device device = impl->device;
  OnSequenceStream on(s);
  s.sampler->configure(options.sampling);

  // The prompt, once, to the device.
  const auto n_prompt = static_cast<int64_t>(tokens.size());
  Tensor prompt_dev =
      Tensor::from_blob(tokens.data(), {n_prompt}, {1}, ScalarType::Int64).to(device);
  if (device.is_cuda()) {
    // `tokens` is pageable host memory the copy reads: the copy must be done
    // before it goes (once per call, not per token).
    cuda::synchronize(device.index);
  }
  s.pending.reset();

  // Prefill: the last chunk's last logits give the first new token.
  Tensor logits;
  int64_t logits_rows = 1;
  {
    int64_t done = 0;
    while (done < n_prompt) {
      const bool prefill = !c.prefill_graph.empty() && n_prompt - done > 1 && encoded == nullptr;
      const int64_t chunk = prefill ? std::min<int64_t>(n_prompt - done, c.max_prefill_len > 0
                                                                              ? c.max_prefill_len
                                                                              : n_prompt - done)
                                    : 1;
      const std::string& graph = prefill ? c.prefill_graph : c.decode_graph;
      std::vector<Tensor> in(gen.program.info(graph).input_names.size());
      if (!prefill && encoded != nullptr) in[c.decode_encoder_input] = *encoded;
      in[prefill ? c.prefill_ids_input : c.decode_ids_input] =
          slice_1d(prompt_dev, done, {1, chunk}, fn);
      in[prefill ? c.prefill_pos_input : c.decode_pos_input] =
          slice_1d(impl->positions, s.length + done, {chunk}, fn);
      std::vector<Tensor> out = s.session->run(graph, in);
      AOTRT_CHECK(!out.empty() && out[0].defined(), kBackend, fn, ": graph '", graph,
                  "' returned no logits");
      logits = out[0];
      const TensorImpl& lt = handle_get_defined(logits.handle(), fn);
      logits_rows = lt.dim() == 3 ? lt.sizes()[1] : 1;
      done += chunk;
    }
    s.length += n_prompt;
  }

  // Note [The decode loop].
  const size_t n_decode_inputs = gen.program.info(c.decode_graph).input_names.size();
  const bool cuda = device.is_cuda();
  auto sample_into_ids = [&](const Tensor& step_logits, int64_t rows, int64_t k) {
    s.sampler->sample(logits_row(step_logits, rows - 1, fn), s.ids);
    if (cuda) {
      const int slot = static_cast<int>(k % 2);
      cuda::copy_to_host_async(static_cast<int64_t*>(s.host_tokens->data()) + slot,
                               s.ids.data_ptr(), sizeof(int64_t), device.index, s.stream);
      s.token_ready[slot]->record(s.stream);
    }
  };
  auto read_token = [&](int64_t k) -> int64_t {
    if (!cuda) return *static_cast<const int64_t*>(s.ids.data_ptr());
    const int slot = static_cast<int>(k % 2);
    s.token_ready[slot]->synchronize();
    return static_cast<const int64_t*>(s.host_tokens->data())[slot];
  };
  // Step k feeds the token in ids at position s.length.
  auto queue_step = [&](int64_t k) {
    std::vector<Tensor> in(n_decode_inputs);
    if (encoded != nullptr) in[c.decode_encoder_input] = *encoded;
    in[c.decode_ids_input] = s.ids;
    in[c.decode_pos_input] = slice_1d(impl->positions, s.length, {1}, fn);
    std::vector<Tensor> out = s.session->run(c.decode_graph, in);
    AOTRT_CHECK(!out.empty() && out[0].defined(), kBackend, fn, ": graph '", c.decode_graph,
                "' returned no logits");
    const TensorImpl& lt = handle_get_defined(out[0].handle(), fn);
    s.length += 1;
    sample_into_ids(out[0], lt.dim() == 3 ? lt.sizes()[1] : 1, k);
  };

  if (options.max_new_tokens == 0) {
    result.stop_reason = "max_new_tokens";
    result.total_ms = ms_between(start, Clock::now());
    return result;
  }
  sample_into_ids(logits, logits_rows, 0);
  logits = Tensor();
  // Token k is sampled; step k (feeding it) is queued when k + 1 tokens may
  // still be wanted and the cache has room.
  bool step_queued = false;  // whether the token being read is already fed
  for (int64_t k = 0;; ++k) {
    const bool want_more = k + 1 < options.max_new_tokens;
    const bool room_left = s.length < c.max_cache_len;
    step_queued = want_more && room_left;
    if (step_queued && cuda) queue_step(k + 1);  // ahead of reading token k
    const int64_t token = read_token(k);
    const Clock::time_point now = Clock::now();
    if (k == 0) {
      result.ttft_ms = ms_between(start, now);
    } else {
      result.inter_token_ms.push_back(ms_between(last, now));
    }
    last = now;
    result.tokens.push_back(token);
    bool go_on = true;
    if (options.on_token) go_on = options.on_token(token);
    const bool is_eos = std::find(eos.begin(), eos.end(), token) != eos.end();
    if (is_eos) {
      result.stop_reason = "eos";
    } else if (!go_on) {
      result.stop_reason = "stopped";
    } else if (!want_more) {
      result.stop_reason = "max_new_tokens";
    } else if (!room_left) {
      result.stop_reason = "cache_full";
    }
    if (!result.stop_reason.empty()) break;
    if (!cuda) queue_step(k + 1);
  }
  // The token read last is in the cache when its step was queued ahead (CUDA)
  // or ran (the CPU queues a step only to go on); else it waits.
  if (!(cuda && step_queued)) s.pending = result.tokens.back();
  if (cuda) cuda::synchronize(device.index);  // the step queued ahead is done before we return
  result.total_ms = ms_between(start, Clock::now());
  const double decode_ms = result.total_ms - result.ttft_ms;
  if (result.tokens.size() > 1 && decode_ms > 0) {
    result.tokens_per_s = static_cast<double>(result.tokens.size() - 1) / (decode_ms / 1000.0);
  }
  return result;
}

}  // namespace

// --- Generator ------------------------------------------------------------------------------

Generator::Generator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

Generator Generator::load(const std::string& package_path, const GeneratorOptions& options) {
  auto g = std::make_shared<Impl>(Program::load(package_path, options.load));
  g->config = generate::read_config(g->program, options);
  g->device = g->program.device();
  const int64_t n = g->config.max_cache_len;
  std::vector<int64_t> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = i;
  Tensor host = Tensor::from_blob(values.data(), {n}, {1}, ScalarType::Int64);
  g->positions = host.to(g->device);
  if (g->device.is_cuda()) cuda::synchronize(g->device.index);  // `values` goes out of scope
  GenerationConfig& c = g->config;
  if (c.vocab_size <= 0 && c.kind == "decoder") {
    // Note [Generation packages]: the logits' last dim, from one step of a
    // scratch session (token 0 at position 0, both views of `positions`), so
    // that a prompt token outside the vocabulary is refused before any graph
    // indexes an embedding with it.
    const char* fn = "aotrt::Generator::load";
    Session scratch = g->program.new_session();
    std::vector<Tensor> in(g->program.info(c.decode_graph).input_names.size());
    in[c.decode_ids_input] = slice_1d(g->positions, 0, {1, 1}, fn);
    in[c.decode_pos_input] = slice_1d(g->positions, 0, {1}, fn);
    const std::vector<Tensor> out = scratch.run(c.decode_graph, in);
    AOTRT_CHECK(!out.empty() && out[0].defined() && out[0].dim() >= 2, kPackage, fn, ": graph '",
                c.decode_graph, "' of ", package_path, " returned no logits [batch, (tokens,) "
                "vocabulary]");
    c.vocab_size = out[0].sizes().back();
    if (g->device.is_cuda()) cuda::synchronize(g->device.index);  // before the session goes
  }
  return Generator(std::move(g));
}

const GenerationConfig& Generator::config() const { return impl_->config; }

const Program& Generator::program() const { return impl_->program; }

Sequence Generator::new_sequence() const {
  const char* fn = "aotrt::Generator::new_sequence";
  auto s = std::make_unique<Sequence::Impl>();
  s->gen = impl_;
  const Device device = impl_->device;
  if (device.is_cuda()) {
    s->stream = cuda::pooled_stream(device.index);
    s->host_tokens = std::make_unique<cuda::PinnedHostBuffer>(2 * sizeof(int64_t));
    s->token_ready[0] = std::make_unique<cuda::Event>(device.index);
    s->token_ready[1] = std::make_unique<cuda::Event>(device.index);
  }
  OnSequenceStream on(*s);
  s->session.emplace(impl_->program.new_session());
  s->ids = Tensor::empty({1, 1}, ScalarType::Int64, device);
  s->sampler = std::make_unique<generate::Sampler>(device);
  (void)fn;
  return Sequence(std::move(s));
}

GenerateResult Generator::generate(std::span<const int64_t> prompt,
                                   const GenerateOptions& options) const {
  Sequence s = new_sequence();
  return generate(s, prompt, options);
}

GenerateResult Generator::generate(Sequence& sequence, std::span<const int64_t> prompt,
                                   const GenerateOptions& options) const {
  const char* fn = kGenerate;
  AOTRT_CHECK(sequence.impl_ != nullptr, kInvalidArgument, fn, ": the sequence was moved from");
  AOTRT_CHECK(sequence.impl_->gen.get() == impl_.get(), kInvalidArgument, fn,
              ": the sequence belongs to another Generator");
  AOTRT_CHECK(impl_->config.kind == "decoder", kInvalidArgument, fn,
              ": an encoder-decoder package generates from its encoder's input (generate_from)");
  return run_generation(*impl_, *sequence.impl_, prompt, nullptr, options, fn);
}

GenerateResult Generator::generate_from(Sequence& sequence, const Tensor& encoder_input,
                                        const GenerateOptions& options) const {
  const char* fn = "aotrt::Generator::generate_from";
  AOTRT_CHECK(sequence.impl_ != nullptr, kInvalidArgument, fn, ": the sequence was moved from");
  Sequence::Impl& s = *sequence.impl_;
  AOTRT_CHECK(s.gen.get() == impl_.get(), kInvalidArgument, fn,
              ": the sequence belongs to another Generator");
  const GenerationConfig& c = impl_->config;
  AOTRT_CHECK(c.kind == "encoder_decoder", kInvalidArgument, fn,
              ": a decoder-only package generates from a prompt (generate)");
  AOTRT_CHECK(s.length == 0 && !s.pending, kInvalidArgument, fn, ": the sequence already holds ",
              s.length + (s.pending ? 1 : 0), " tokens; an encoder-decoder generation starts from "
              "an empty one (reset() it, or make a new one)");
  AOTRT_CHECK(!c.decoder_start_token_ids.empty(), kPackage, fn, ": the package records no decoder "
              "start tokens (\"decoder_start_token_ids\" in its \"aotrt.generation\" metadata)");
  AOTRT_CHECK(encoder_input.defined(), kInvalidArgument, fn, ": the encoder input is an empty Tensor");
  // Note [The decode loop]: the encoder runs once, on the sequence's stream; its
  // output is an input of every decoder step.
  std::vector<Tensor> encoded;
  {
    OnSequenceStream on(s);
    const Tensor in = encoder_input.device() == impl_->device ? encoder_input
                                                              : encoder_input.to(impl_->device);
    encoded = s.session->run(c.encoder_graph, std::span<const Tensor>(&in, 1));
  }
  AOTRT_CHECK(!encoded.empty() && encoded[0].defined(), kBackend, fn, ": graph '",
              c.encoder_graph, "' returned nothing");
  return run_generation(*impl_, s, c.decoder_start_token_ids, &encoded[0], options, fn);
}

// --- Sequence -------------------------------------------------------------------------------

Sequence::Sequence(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sequence::Sequence(Sequence&&) noexcept = default;
Sequence& Sequence::operator=(Sequence&&) noexcept = default;
Sequence::~Sequence() {
  if (impl_ == nullptr) return;
  // The work queued on the sequence's stream uses its buffers: wait for it
  // before they go (the stream itself would let it finish, the buffers not).
  if (impl_->stream != nullptr) {
    try {
      cuda::StreamScope on(impl_->gen->device.index, impl_->stream);
      cuda::synchronize(impl_->gen->device.index);
    } catch (...) {
    }
  }
}

int64_t Sequence::length() const {
  return impl_ != nullptr ? impl_->length + (impl_->pending ? 1 : 0) : 0;
}

void Sequence::reset() {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Sequence::reset: moved from");
  OnSequenceStream on(*impl_);
  impl_->session->reset();
  impl_->length = 0;
  impl_->pending.reset();
}

Sequence Sequence::fork() const {
  const char* fn = "aotrt::Sequence::fork";
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, fn, ": moved from");
  Generator g{std::const_pointer_cast<Generator::Impl>(impl_->gen)};
  Sequence copy = g.new_sequence();
  {
    // The copy of the state is queued on this sequence's stream, after its work.
    OnSequenceStream on(*impl_);
    *copy.impl_->session = impl_->session->fork();
    if (impl_->stream != nullptr) cuda::synchronize(impl_->gen->device.index);
  }
  copy.impl_->length = impl_->length;
  copy.impl_->pending = impl_->pending;
  return copy;
}

uint64_t Sequence::memory_bytes() const {
  if (impl_ == nullptr) return 0;
  return impl_->session->memory_bytes() + impl_->sampler->memory_bytes() +
         static_cast<uint64_t>(sizeof(int64_t));
}

Session& Sequence::session() {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Sequence::session: moved from");
  return *impl_->session;
}

}  // namespace aotrt
