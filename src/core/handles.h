// The registry of live tensor handles.
//
// An AtenTensorHandle is a TensorImpl* that aotrt handed out. Every shim
// looks its handle arguments up here before touching them, so a handle that
// was deleted, or never made, is refused with an error instead of being
// dereferenced. The registry is sharded by address so that threads running
// models concurrently rarely meet on a lock.
#pragma once

#include <cstdint>
#include <memory>

#include "core/tensor.h"
#include "aotrt/shim.h"

namespace aotrt {

// Takes ownership of t and returns its new handle.
AtenTensorHandle handle_register(std::unique_ptr<TensorImpl> t);

// The tensor behind a live handle; throws kInvalidHandle naming `what`
// (e.g. "aoti_torch_copy_: argument 'src'") when it is null, deleted or
// unknown. The reference stays valid until the handle is deleted.
TensorImpl& handle_get(AtenTensorHandle h, const char* what);
// handle_get, and also refuses an undefined tensor.
TensorImpl& handle_get_defined(AtenTensorHandle h, const char* what);

// Deletes a live handle (and its reference on its storage); throws
// kInvalidHandle if it is not live.
void handle_delete(AtenTensorHandle h, const char* what);

bool handle_is_live(AtenTensorHandle h);
int64_t handle_live_count();

inline AtenTensorHandle to_handle(TensorImpl* t) { return reinterpret_cast<AtenTensorHandle>(t); }

}  // namespace aotrt
