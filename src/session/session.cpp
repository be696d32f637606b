// aotrt::Program and aotrt::Session (aotrt/session.h): the graphs of one
// package over one copy of the weights, and the state each session owns.
//
// Note [Shared constants]
// Program::load loads the package's graphs one after another. Every constant
// of a later graph whose original FQN, dtype and layout (sizes, strides,
// storage offset) match a constant of an earlier one is given to its
// container as that tensor (runtime::ModelAccess::share_constants), the rest
// are copied out, and the memory the container had loaded its own copy into
// is freed; so the device holds each weight once, however many graphs use
// it. Loading passes through both copies of a graph's weights for a moment.
//
// Note [Session graphs]
// On CUDA each Session has its own CUDA graphs per graph and input layout
// (runtime::CudaGraphs, in the model's LoadOptions::cuda_graph mode): a
// captured step has the session's state addresses baked in, so a replay needs
// no binding and two sessions' replays never meet. A capture runs the step a
// few times to warm the graph's memory pool; the session's state is saved
// before those runs and restored after them (StateGuard), so that a step that
// is not idempotent (a counter the graph increments) still runs once. The
// copy costs the state's bytes once per session and layout. A swap of the
// weights drops the session's graphs (they read the old addresses).
#include "aotrt/session.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "core/copy.h"
#include "core/handles.h"
#include "core/view.h"
#include "package/layout.h"
#include "package/zip_reader.h"
#include "runtime/cuda_graph.h"
#include "runtime/model_state.h"

namespace aotrt {

using runtime::ConstantMapEntry;
using runtime::ModelAccess;

class Program::Impl {
 public:
  std::string path;
  std::vector<std::string> names;
  std::vector<std::unique_ptr<Model>> models;  // by names' index
  std::vector<StateInfo> state;
  uint64_t state_bytes = 0;
  uint64_t shared_bytes = 0;
  // Per graph, per state constant of it (ModelAccess::state order): the index
  // in `state`.
  std::vector<std::vector<size_t>> graph_state;
  // The package's values of each state constant: a graph's own tensor,
  // which no run writes (a Program runs its graphs only with sessions).
  std::vector<Tensor> initial;
  bool state_known = true;
  std::string state_unknown_graph;
  std::atomic<uint64_t> next_id{1};

  size_t index_of(const std::string& graph, const char* fn) const {
    const auto it = std::find(names.begin(), names.end(), graph);
    if (it != names.end()) return static_cast<size_t>(it - names.begin());
    std::string there;
    for (const std::string& n : names) there += (there.empty() ? "" : ", ") + n;
    AOTRT_FAIL(kInvalidArgument, fn, ": package ", path, " has no graph '", graph,
               "' (its graphs: ", there, ")");
  }
};

namespace {

std::string key_of(const ConstantInfo& c) { return c.original_fqn.empty() ? c.name : c.original_fqn; }

std::string list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// New memory laid out as `like`, holding a copy of its values (queued on
// the current stream for CUDA).
Tensor copy_of(const Tensor& like, uint64_t nbytes, const char* fn) {
  const TensorImpl& t = handle_get_defined(like.handle(), fn);
  const ViewSpan span = view_span(t.sizes(), t.strides(), t.storage_offset(),
                                  element_size(t.dtype()), fn);
  const auto bytes = std::max<uint64_t>(nbytes, static_cast<uint64_t>(span.end_byte));
  Tensor out = Tensor::adopt(handle_register(make_tensor(Storage::allocate(t.device(), bytes),
                                                         t.sizes(), t.strides(),
                                                         t.storage_offset(), t.dtype(), fn)));
  out.copy_(like);
  return out;
}

}  // namespace

Program::Program(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Program::Program(Program&&) noexcept = default;
Program& Program::operator=(Program&&) noexcept = default;
Program::~Program() = default;

std::vector<std::string> Program::graph_names(const std::string& package_path) {
  const package::ZipArchive archive = package::ZipArchive::open(package_path);
  return package::model_names(archive);
}

Program Program::load(const std::string& package_path, const LoadOptions& options,
                      const std::vector<std::string>& graphs) {
  const char* fn = "aotrt::Program::load";
  auto p = std::make_shared<Impl>();
  p->path = package_path;
  const std::vector<std::string> all = graph_names(package_path);
  p->names = graphs.empty() ? all : graphs;
  AOTRT_CHECK(!p->names.empty(), kPackage, fn, ": package ", package_path,
              " holds no model under data/aotinductor/");
  for (const std::string& g : p->names) {
    AOTRT_CHECK(std::find(all.begin(), all.end(), g) != all.end(), kInvalidArgument, fn,
                ": package ", package_path, " has no graph '", g, "'");
  }

  // Note [Shared constants]: every constant loaded so far, by FQN.
  std::map<std::string, Tensor> pool;
  std::map<std::string, size_t> state_index;  // FQN -> index in p->state
  for (const std::string& g : p->names) {
    LoadOptions o = options;
    o.model_name = g;
    auto model = std::make_unique<Model>(Model::load(package_path, o));
    if (!p->models.empty()) {
      AOTRT_CHECK(model->device() == p->models.front()->device(), kPackage, fn, ": graph '", g,
                  "' of ", package_path, " runs on ", model->device().str(), " but graph '",
                  p->names.front(), "' on ", p->models.front()->device().str());
      if (!pool.empty()) p->shared_bytes += ModelAccess::share_constants(*model, pool);
    }
    const std::map<std::string, Tensor> own = ModelAccess::constants(*model);
    for (const ConstantInfo& c : model->info().constants) {
      const auto it = own.find(c.name);
      if (it != own.end() && !c.original_fqn.empty()) pool.emplace(c.original_fqn, it->second);
    }

    if (!ModelAccess::state_known(*model)) {
      p->state_known = false;
      p->state_unknown_graph = g;
    }
    std::vector<size_t> indices;
    for (const ConstantInfo* c : ModelAccess::state(*model)) {
      const std::string key = key_of(*c);
      const auto mine = own.find(c->name);
      AOTRT_CHECK(mine != own.end(), kInternal, fn, ": graph '", g, "' holds no tensor for '",
                  c->name, "'");
      const TensorImpl& t = handle_get_defined(mine->second.handle(), fn);
      auto [it, fresh] = state_index.emplace(key, p->state.size());
      if (fresh) {
        StateInfo s;
        s.name = key;
        s.dtype = t.dtype();
        s.sizes.assign(t.sizes().begin(), t.sizes().end());
        s.strides.assign(t.strides().begin(), t.strides().end());
        s.storage_offset = t.storage_offset();
        const ViewSpan span = view_span(t.sizes(), t.strides(), t.storage_offset(),
                                        element_size(t.dtype()), fn);
        s.nbytes = std::max<uint64_t>(c->nbytes, static_cast<uint64_t>(span.end_byte));
        p->state.push_back(std::move(s));
        p->initial.push_back(mine->second);
      }
      StateInfo& s = p->state[it->second];
      AOTRT_CHECK(s.dtype == t.dtype() && std::ranges::equal(s.sizes, t.sizes()) &&
                      std::ranges::equal(s.strides, t.strides()) &&
                      s.storage_offset == t.storage_offset(),
                  kPackage, fn, ": the state constant '", key, "' is ", dtype_name(t.dtype()),
                  " ", list(t.sizes()), " strides ", list(t.strides()), " in graph '", g,
                  "' but ", dtype_name(s.dtype), " ", list(s.sizes), " strides ", list(s.strides),
                  " in graph '", s.graphs.front(), "': the graphs cannot share a session's state");
      s.graphs.push_back(g);
      indices.push_back(it->second);
    }
    p->graph_state.push_back(std::move(indices));
    p->models.push_back(std::move(model));
  }
  for (const StateInfo& s : p->state) p->state_bytes += s.nbytes;
  return Program(std::move(p));
}

const std::vector<std::string>& Program::graphs() const { return impl_->names; }

bool Program::has_graph(const std::string& graph) const {
  return std::find(impl_->names.begin(), impl_->names.end(), graph) != impl_->names.end();
}

const ModelInfo& Program::info(const std::string& graph) const {
  return impl_->models[impl_->index_of(graph, "aotrt::Program::info")]->info();
}

Device Program::device() const { return impl_->models.front()->device(); }

const std::vector<StateInfo>& Program::state() const { return impl_->state; }

uint64_t Program::session_state_bytes() const { return impl_->state_bytes; }

uint64_t Program::shared_constant_bytes() const { return impl_->shared_bytes; }

// --- Session ------------------------------------------------------------------------------

class Session::Impl final : public runtime::StateGuard {
 public:
  std::shared_ptr<Program::Impl> program;
  std::optional<Program> handle;  // Session::program()
  uint64_t id = 0;
  std::vector<Tensor> state;  // by Program::Impl::state's index
  std::vector<std::vector<ConstantMapEntry>> entries;  // per graph
  std::vector<std::unique_ptr<runtime::CudaGraphs>> graphs;  // per graph; null: plain
  std::vector<uint64_t> graphs_version;                      // weights_version at creation
  std::vector<Tensor> saved;                                 // StateGuard

  void init_entries() {
    const Program::Impl& p = *program;
    entries.assign(p.models.size(), {});
    for (size_t g = 0; g < p.models.size(); ++g) {
      const std::vector<const ConstantInfo*> consts = ModelAccess::state(*p.models[g]);
      for (size_t k = 0; k < consts.size(); ++k) {
        entries[g].push_back({consts[k]->name.c_str(), state[p.graph_state[g][k]].handle()});
      }
    }
    graphs.resize(p.models.size());
    graphs_version.assign(p.models.size(), 0);
  }

  // Note [Session graphs].
  void save() override {
    saved.clear();
    for (size_t k = 0; k < state.size(); ++k) {
      saved.push_back(copy_of(state[k], program->state[k].nbytes, "aotrt::Session (capture)"));
    }
  }
  void restore() override {
    for (size_t k = 0; k < state.size() && k < saved.size(); ++k) state[k].copy_(saved[k]);
    saved.clear();  // freed on the current stream, after the copies
  }
};

Session Program::new_session() const {
  const char* fn = "aotrt::Program::new_session";
  AOTRT_CHECK(impl_->state_known, kUnsupported, fn, ": graph '", impl_->state_unknown_graph,
              "' of ", impl_->path, " does not say which of its constants it writes (neither "
              "the constants' types nor the generated source are in the package), so a "
              "session cannot tell its own state from the shared weights");
  auto s = std::make_unique<Session::Impl>();
  s->program = impl_;
  s->handle.emplace(Program(impl_));
  s->id = impl_->next_id.fetch_add(1);
  for (size_t k = 0; k < impl_->state.size(); ++k) {
    s->state.push_back(copy_of(impl_->initial[k], impl_->state[k].nbytes, fn));
  }
  s->init_entries();
  return Session(std::move(s));
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

std::vector<Tensor> Session::run(const std::string& graph, std::span<const Tensor> inputs) {
  const char* fn = "aotrt::Session::run";
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, fn, ": the session was moved from");
  Impl& s = *impl_;
  const size_t g = s.program->index_of(graph, fn);
  Model& model = *s.program->models[g];
  const uint64_t version = ModelAccess::weights_version(model);
  if (s.graphs[g] == nullptr || s.graphs_version[g] != version) {
    s.graphs[g] = ModelAccess::make_graphs(model);
    s.graphs_version[g] = version;
  }
  runtime::RunState rs;
  rs.id = s.id;
  rs.entries = s.entries[g];
  rs.graphs = s.graphs[g].get();
  rs.guard = &s;
  return ModelAccess::run(model, inputs, rs);
}

void Session::reset() {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Session::reset: the session was moved from");
  for (size_t k = 0; k < impl_->state.size(); ++k) impl_->state[k].copy_(impl_->program->initial[k]);
}

Session Session::fork() const {
  const char* fn = "aotrt::Session::fork";
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, fn, ": the session was moved from");
  auto s = std::make_unique<Impl>();
  s->program = impl_->program;
  s->handle.emplace(Program(impl_->program));
  s->id = impl_->program->next_id.fetch_add(1);
  for (size_t k = 0; k < impl_->state.size(); ++k) {
    s->state.push_back(copy_of(impl_->state[k], impl_->program->state[k].nbytes, fn));
  }
  s->init_entries();
  return Session(std::move(s));
}

const Program& Session::program() const {
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, "aotrt::Session::program: the session was moved from");
  return *impl_->handle;
}

uint64_t Session::id() const { return impl_ != nullptr ? impl_->id : 0; }

uint64_t Session::memory_bytes() const {
  if (impl_ == nullptr) return 0;
  uint64_t bytes = 0;
  for (size_t k = 0; k < impl_->state.size(); ++k) {
    bytes += handle_get_defined(impl_->state[k].handle(), "aotrt::Session::memory_bytes")
                 .storage()
                 ->nbytes();
  }
  for (const auto& g : impl_->graphs) {
    if (g != nullptr) bytes += g->pool_bytes();
  }
  return bytes;
}

Tensor Session::state(const std::string& name) const {
  const char* fn = "aotrt::Session::state";
  AOTRT_CHECK(impl_ != nullptr, kInvalidArgument, fn, ": the session was moved from");
  const auto& st = impl_->program->state;
  for (size_t k = 0; k < st.size(); ++k) {
    if (st[k].name == name) return impl_->state[k];
  }
  AOTRT_FAIL(kInvalidArgument, fn, ": the program keeps no state constant '", name, "'");
}

}  // namespace aotrt
