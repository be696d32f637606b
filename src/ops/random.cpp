// The random family's semantics (Note [Random streams]): dtype rules,
// output layouts, counters, then the device's kernel.
#include "ops/random.h"

#include <atomic>
#include <vector>

#include "aotrt/aotrt.h"
#include "core/copy.h"
#include "core/error.h"
#include "core/view.h"
#include "ops/dispatch.h"

namespace aotrt {
namespace ops {
namespace {

constexpr uint64_t kDefaultSeed = 67280421310721ull;  // torch's default_rng_seed_val

struct Generator {
  std::atomic<uint64_t> seed{kDefaultSeed};
  std::atomic<uint64_t> offset{0};
};
// One per device type (CPU, CUDA): devices of one type share a stream.
Generator& generator(Device device) {
  static Generator cpu, cuda;
  return device.is_cuda() ? cuda : cpu;
}

std::vector<int64_t> sizes_of(const TensorImpl& t) {
  return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

bool is_real_float(ScalarType t) {
  return t == ScalarType::Float32 || t == ScalarType::Float64 || t == ScalarType::Float16 ||
         t == ScalarType::BFloat16;
}
bool is_integral(ScalarType t) {
  return t == ScalarType::UInt8 || t == ScalarType::Int8 || t == ScalarType::Int16 ||
         t == ScalarType::Int32 || t == ScalarType::Int64;
}

void check_dtype(ScalarType t, const RandomDraw& draw, const char* fn) {
  if (draw.kind == RandomKind::kRandint || draw.kind == RandomKind::kBernoulli) {
    AOTRT_CHECK(is_real_float(t) || is_integral(t) || t == ScalarType::Bool, kUnsupported, fn,
                ": a random ", draw.kind == RandomKind::kRandint ? "integer" : "bernoulli",
                " tensor of dtype ", dtype_name(t), " is not served");
  } else {
    AOTRT_CHECK(is_real_float(t), kInvalidArgument, fn, ": expected a floating-point dtype ",
                "for a random tensor, got ", dtype_name(t));
  }
}

// The dtype the kernel makes values in for `t`.
ScalarType kernel_dtype(ScalarType t, const RandomDraw& draw) {
  if (draw.kind == RandomKind::kRandint) return ScalarType::Int64;
  return t == ScalarType::Float64 ? ScalarType::Float64 : ScalarType::Float32;
}

}  // namespace

std::pair<uint64_t, uint64_t> reserve_counters(Device device, uint64_t n) {
  Generator& g = generator(device);
  const uint64_t seed = g.seed.load(std::memory_order_relaxed);
  return {seed, g.offset.fetch_add(n, std::memory_order_relaxed)};
}

void set_seed(uint64_t seed) {
  for (Device d : {cpu_device(), Device{DeviceType::CUDA, 0}}) {
    Generator& g = generator(d);
    g.seed.store(seed);
    g.offset.store(0);
  }
}

TensorPtr multinomial(const TensorImpl& self, int64_t num_samples, bool replacement,
                      const char* fn) {
  AOTRT_CHECK(is_real_float(self.dtype()), kInvalidArgument, fn, ": multinomial only supports ",
              "floating-point dtypes for input, got: ", dtype_name(self.dtype()));
  AOTRT_CHECK(self.dim() == 1 || self.dim() == 2, kInvalidArgument, fn,
              ": prob_dist must be 1 or 2 dim, got ", self.dim(), " dims");
  AOTRT_CHECK(num_samples > 0, kInvalidArgument, fn, ": cannot sample n_sample <= 0 samples ",
              "(num_samples = ", num_samples, ")");
  const int64_t n = self.sizes()[self.dim() - 1];
  const int64_t rows = self.dim() == 2 ? self.sizes()[0] : 1;
  AOTRT_CHECK(replacement || num_samples <= n, kInvalidArgument, fn, ": cannot sample n_sample ",
              "> prob_dist.size(-1) samples without replacement (num_samples = ", num_samples,
              ", ", n, " categories)");
  AOTRT_CHECK(n <= (int64_t{1} << 24), kInvalidArgument, fn,
              ": number of categories cannot exceed 2^24 (got ", n, ")");
  std::vector<int64_t> out_sizes{num_samples};
  if (self.dim() == 2) out_sizes.insert(out_sizes.begin(), rows);
  TensorPtr out = empty_strided(out_sizes, contiguous_strides(out_sizes), ScalarType::Int64,
                                self.device(), fn);
  if (rows == 0) return out;
  AOTRT_CHECK(n > 0, kInvalidArgument, fn,
              ": prob_dist has no categories (its last dim is empty); ATen refuses it too");
  const int64_t dense_sizes[] = {rows, n}, dense_strides[] = {n, 1};
  TensorPtr probs = empty_strided(dense_sizes, dense_strides, ScalarType::Float64, self.device(),
                                  fn);
  copy_tensor(*make_tensor(probs->storage(), self.sizes(), contiguous_strides(self.sizes()), 0,
                           ScalarType::Float64, fn),
              self, fn);
  const uint64_t draws = static_cast<uint64_t>(rows) *
                         static_cast<uint64_t>(replacement ? num_samples : n);
  const auto [seed, base] = reserve_counters(self.device(), draws);
  kernel(&RandomKernels::multinomial, self.device(), fn)(*probs, *out, replacement, seed, base,
                                                         fn);
  return out;
}

void check_default_generator(const void* const* generator_arg, const char* fn) {
  AOTRT_CHECK(generator_arg == nullptr || *generator_arg == nullptr, kUnsupported, fn,
              ": argument 'generator' is not None; aotrt draws from its default generator ",
              "(seeded with aotrt::manual_seed) and makes no generator objects");
}

void fill_random(const TensorImpl& t, const RandomDraw& draw, const char* fn) {
  check_dtype(t.dtype(), draw, fn);
  if (draw.kind == RandomKind::kUniform) {
    AOTRT_CHECK(draw.a <= draw.b, kInvalidArgument, fn, ": uniform_ expects to return a [from, ",
                "to) range, but found from=", draw.a, " > to=", draw.b);
  }
  if (draw.kind == RandomKind::kNormal) {
    AOTRT_CHECK(draw.b >= 0, kInvalidArgument, fn, ": normal expects std >= 0.0, but found std ",
                draw.b);
  }
  if (draw.kind == RandomKind::kExponential) {
    AOTRT_CHECK(draw.a > 0, kInvalidArgument, fn,
                ": exponential_ expects lambda > 0.0, but found lambda=", draw.a);
  }
  if (draw.kind == RandomKind::kBernoulli && draw.p == nullptr) {
    AOTRT_CHECK(draw.a >= 0 && draw.a <= 1, kInvalidArgument, fn,
                ": bernoulli_ expects p to be in [0, 1], but got p=", draw.a);
  }
  if (t.numel() == 0) return;
  const auto [seed, base] = reserve_counters(t.device(), static_cast<uint64_t>(t.numel()));
  const auto generate = kernel(&RandomKernels::generate, t.device(), fn);
  const ScalarType kt = kernel_dtype(t.dtype(), draw);
  if (t.dtype() == kt && t.is_contiguous()) {
    generate(t, draw, seed, base);
    return;
  }
  const std::vector<int64_t> sizes = sizes_of(t);
  auto dense = empty_strided(sizes, contiguous_strides(sizes), kt, t.device(), fn);
  generate(*dense, draw, seed, base);
  copy_tensor(t, *dense, fn);
}

TensorPtr random_tensor(std::span<const int64_t> size, std::optional<ScalarType> dtype,
                        Device device, const RandomDraw& draw, const char* fn) {
  for (int64_t s : size) {
    AOTRT_CHECK(s >= 0, kInvalidArgument, fn, ": negative dimension ", s, " in 'size'");
  }
  const ScalarType t = dtype.value_or(draw.kind == RandomKind::kRandint ? ScalarType::Int64
                                                                        : ScalarType::Float32);
  auto out = empty_strided(size, contiguous_strides(size), t, device, fn);
  fill_random(*out, draw, fn);
  return out;
}

TensorPtr random_like(const TensorImpl& self, std::optional<ScalarType> dtype,
                      std::optional<MemoryFormatArg> format, const RandomDraw& draw,
                      const char* fn) {
  const std::vector<int64_t> sizes = sizes_of(self);
  const std::vector<int64_t> strides =
      !format || *format == MemoryFormatArg::kPreserve
          ? preserve_format_strides(self.sizes(), self.strides())
          : memory_format_strides(sizes, *format, fn);
  auto out = empty_strided(sizes, strides, dtype.value_or(self.dtype()), self.device(), fn);
  fill_random(*out, draw, fn);
  return out;
}

TensorPtr random_functional(const TensorImpl& self, const RandomDraw& draw, const char* fn) {
  return random_like(self, std::nullopt, std::nullopt, draw, fn);
}

TensorPtr randperm(int64_t n, std::optional<ScalarType> dtype, Device device, const char* fn) {
  AOTRT_CHECK(n >= 0, kInvalidArgument, fn, ": n must be non-negative, got ", n);
  const ScalarType t = dtype.value_or(ScalarType::Int64);
  AOTRT_CHECK(is_integral(t) || is_real_float(t), kUnsupported, fn, ": randperm of dtype ",
              dtype_name(t), " is not served");
  const int64_t size[] = {n};
  const int64_t stride[] = {1};
  auto out = empty_strided(size, stride, t, device, fn);
  if (n == 0) return out;
  const auto [seed, base] = reserve_counters(device, static_cast<uint64_t>(n));
  const auto perm = kernel(&RandomKernels::randperm, device, fn);
  if (t == ScalarType::Int64) {
    perm(*out, seed, base);
    return out;
  }
  auto dense = empty_strided(size, stride, ScalarType::Int64, device, fn);
  perm(*dense, seed, base);
  copy_tensor(*out, *dense, fn);
  return out;
}

void bernoulli_tensor_(const TensorImpl& self, const TensorImpl& p, const char* fn) {
  AOTRT_CHECK(is_real_float(p.dtype()), kInvalidArgument, fn,
              ": argument 'p' must be a floating-point tensor, got ", dtype_name(p.dtype()));
  const std::vector<int64_t> sizes = sizes_of(self);
  auto probs = empty_strided(sizes, contiguous_strides(sizes), ScalarType::Float64,
                             self.device(), fn);
  copy_tensor(*probs, p, fn);  // broadcasts p to self's sizes, or refuses as ATen
  RandomDraw draw;
  draw.kind = RandomKind::kBernoulli;
  draw.p = probs.get();
  fill_random(self, draw, fn);
}

TensorPtr bernoulli_tensor(const TensorImpl& self, const TensorImpl& p, const char* fn) {
  const std::vector<int64_t> sizes = sizes_of(self);
  TensorPtr out = empty_strided(sizes, preserve_format_strides(self.sizes(), self.strides()),
                                self.dtype(), self.device(), fn);
  bernoulli_tensor_(*out, p, fn);
  return out;
}

std::pair<TensorPtr, TensorPtr> native_dropout(const TensorImpl& input, double p,
                                               std::optional<bool> train, const char* fn) {
  AOTRT_CHECK(is_real_float(input.dtype()), kUnsupported, fn, ": dropout of a ",
              dtype_name(input.dtype()), " tensor is not served");
  AOTRT_CHECK(p >= 0 && p <= 1, kInvalidArgument, fn,
              ": dropout probability has to be between 0 and 1, but got ", p);
  const std::vector<int64_t> sizes = sizes_of(input);
  const std::vector<int64_t> strides = preserve_format_strides(input.sizes(), input.strides());
  TensorPtr out = empty_strided(sizes, strides, input.dtype(), input.device(), fn);
  TensorPtr mask = empty_strided(sizes, strides, ScalarType::Bool, input.device(), fn);
  if (train.has_value() && !*train) {
    copy_tensor(*out, input, fn);
    fill_random(*mask, RandomDraw{.kind = RandomKind::kBernoulli, .a = 1.0}, fn);  // all true
    return {std::move(out), std::move(mask)};
  }
  if (input.numel() == 0) return {std::move(out), std::move(mask)};
  const double keep = 1.0 - p;
  const ScalarType kt = input.dtype() == ScalarType::Float64 ? ScalarType::Float64
                                                              : ScalarType::Float32;
  const std::vector<int64_t> dense = contiguous_strides(sizes);
  auto x = empty_strided(sizes, dense, kt, input.device(), fn);
  auto y = empty_strided(sizes, dense, kt, input.device(), fn);
  auto m = empty_strided(sizes, dense, kt, input.device(), fn);
  copy_tensor(*x, input, fn);
  const auto [seed, base] = reserve_counters(input.device(), static_cast<uint64_t>(input.numel()));
  kernel(&RandomKernels::dropout, input.device(), fn)(*y, *m, *x, keep,
                                                      keep == 0 ? 0.0 : 1.0 / keep, seed, base);
  copy_tensor(*out, *y, fn);
  copy_tensor(*mask, *m, fn);
  return {std::move(out), std::move(mask)};
}

}  // namespace ops

void manual_seed(uint64_t seed) { ops::set_seed(seed); }

}  // namespace aotrt
