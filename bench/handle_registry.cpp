// aotrt_handle_bench: the cost of the live-handle registry, through the C ABI
// a model calls (so it builds against any libaotrt.so, before and after a
// change to core/handles.cpp). Per operation, the median of --reps runs of
// --n operations each:
//  - create+delete: a view of one buffer (aoti_torch__reinterpret_tensor) and
//    its deletion, as a model makes and drops handles in a steady-state run;
//  - lookup: aoti_torch_get_data_ptr on one of --live handles;
//  - the same create+delete on 2 threads at once.
//
//   aotrt_handle_bench [--n N] [--reps R] [--live L]
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "aotrt/shim.h"

namespace {

void check(AOTITorchError rc, const char* what) {
  if (rc != AOTI_TORCH_SUCCESS) {
    std::fprintf(stderr, "%s failed: %s\n", what, aotrt_last_error());
    std::exit(1);
  }
}

AtenTensorHandle make_buffer() {
  const int64_t sizes[] = {64, 64}, strides[] = {64, 1};
  AtenTensorHandle h = nullptr;
  check(aoti_torch_empty_strided(2, sizes, strides, aoti_torch_dtype_float32(),
                                 aoti_torch_device_type_cpu(), 0, &h),
        "aoti_torch_empty_strided");
  return h;
}

void create_delete(AtenTensorHandle base, int64_t n) {
  const int64_t sizes[] = {32, 32}, strides[] = {64, 1};
  for (int64_t i = 0; i < n; ++i) {
    AtenTensorHandle v = nullptr;
    check(aoti_torch__reinterpret_tensor(base, 2, sizes, strides, i & 7, &v), "reinterpret");
    check(aoti_torch_delete_tensor_object(v), "delete");
  }
}

template <typename F>
double median_ns_per_op(int reps, int64_t n, F&& body) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = std::chrono::steady_clock::now();
    body();
    t.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count() /
                static_cast<double>(n));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t n = 1'000'000, live = 1000;
  int reps = 11;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--n")) n = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--live")) live = std::atoll(argv[i + 1]);
  }
  AtenTensorHandle base = make_buffer();
  std::vector<AtenTensorHandle> handles;
  for (int64_t i = 0; i < live; ++i) {
    AtenTensorHandle h = nullptr;
    check(aoti_torch_new_tensor_handle(base, &h), "new_tensor_handle");
    handles.push_back(h);
  }
  const double cd = median_ns_per_op(reps, n, [&] { create_delete(base, n); });
  void* sink = nullptr;
  const double lookup = median_ns_per_op(reps, n, [&] {
    for (int64_t i = 0; i < n; ++i) {
      check(aoti_torch_get_data_ptr(handles[static_cast<size_t>(i % live)], &sink), "get_data_ptr");
    }
  });
  const double cd2 = median_ns_per_op(reps, n, [&] {
    std::thread other([&] { create_delete(base, n); });
    create_delete(base, n);
    other.join();
  });
  std::printf("create+delete (view)           %7.1f ns\n", cd);
  std::printf("lookup (get_data_ptr, %lld live) %7.1f ns\n", static_cast<long long>(live), lookup);
  std::printf("create+delete, 2 threads        %7.1f ns (per op per thread)\n", cd2);
  for (AtenTensorHandle h : handles) check(aoti_torch_delete_tensor_object(h), "delete");
  check(aoti_torch_delete_tensor_object(base), "delete");
  return 0;
}
