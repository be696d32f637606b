// Handing out the results of a multi-output fallback op.
//
// Note [Unused op outputs]
// Generated code passes a null ret_ pointer for an output it does not use
// (libtorch's generated shims skip those), so a null ret_ is not an error:
// that result is dropped. Either every wanted result is handed out, or, if
// anything throws before commit(), none is: handles registered so far are
// deleted and their ret_ slots set back to null.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/handles.h"

namespace aotrt {

class ShimResults {
 public:
  ShimResults() = default;
  ShimResults(const ShimResults&) = delete;
  ShimResults& operator=(const ShimResults&) = delete;
  ~ShimResults() {
    if (committed_) return;
    for (auto& [slot, handle] : given_) {
      if (handle == nullptr) continue;
      handle_delete(handle, "ShimResults rollback");
      *slot = nullptr;
    }
  }

  // Registers t as the result in *ret, or drops it when ret is null.
  void give(AtenTensorHandle* ret, std::unique_ptr<TensorImpl> t) {
    if (ret == nullptr) return;
    given_.emplace_back(ret, nullptr);  // first, so a failure below leaks nothing
    given_.back().second = handle_register(std::move(t));
    *ret = given_.back().second;
  }
  template <typename T>
  void give_value(T* ret, T value) {
    if (ret != nullptr) values_.push_back([ret, value] { *ret = value; });
  }
  void commit() {
    for (auto& set : values_) set();
    committed_ = true;
  }

 private:
  std::vector<std::pair<AtenTensorHandle*, AtenTensorHandle>> given_;
  std::vector<std::function<void()>> values_;
  bool committed_ = false;
};

}  // namespace aotrt
