// The registry of live tensor handles.
//
// Every shim looks its handle arguments up here before touching them, so a
// handle that was deleted, or never made, is refused with an error instead
// of being dereferenced.
//
// Note [Handle values]
// An AtenTensorHandle is not the TensorImpl's address: it is a slot of this
// registry and the slot's generation when the handle was made, packed as
// `generation << 32 | slot` (generated code never looks inside a handle; it
// only passes it back). Deleting a handle advances its slot's generation, so
// that value never names a tensor again, even when the slot, or the
// TensorImpl's address, is reused by a later handle. A slot whose generation
// would wrap is retired instead of reused. Lookups take no lock; slots are
// grouped in shards, one per thread that makes handles (round robin), so
// threads running models concurrently rarely meet on a shard's lock.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"
#include "aotrt/shim.h"

namespace aotrt {

// Takes ownership of t and returns its new handle.
AtenTensorHandle handle_register(std::unique_ptr<TensorImpl> t);

// The tensor behind a live handle; throws kInvalidHandle naming `what`
// (e.g. "aoti_torch_copy_: argument 'src'") when it is null, deleted or
// unknown. The reference stays valid until the handle is deleted.
TensorImpl& handle_get(AtenTensorHandle h, const char* what);
// The tensor behind a live handle, or null for a null, deleted or unknown
// one; never throws. For callers that compose their own message (a handle
// value is not a TensorImpl*: never cast one, see Note [Handle values]).
TensorImpl* handle_lookup(AtenTensorHandle h) noexcept;
// handle_get, and also refuses an undefined tensor.
TensorImpl& handle_get_defined(AtenTensorHandle h, const char* what);

// Deletes a live handle (and its reference on its storage); throws
// kInvalidHandle if it is not live.
void handle_delete(AtenTensorHandle h, const char* what);

bool handle_is_live(AtenTensorHandle h);
int64_t handle_live_count();

// Note [Handles a container keeps]
// AOTInductorModelContainerUpdateUserManagedConstantBuffer stores, per
// constant, a new handle it makes with aoti_torch_new_tensor_handle. In
// torch <= 2.13 (MaybeOwningAtenTensorHandle) the container never deletes
// those handles, neither when an entry is replaced nor when it is destroyed;
// later torch (pytorch#194480) deletes them. aotrt watches the calls it makes
// into the container on its own thread: the handles made and deleted inside
// them. Whatever was made and not deleted once the container is gone is
// aotrt's to delete, whichever torch the model came from.
//
// While a HandleWatch lives, the handles its thread registers and deletes are
// recorded in it (watches do not nest; one per thread at a time).
class HandleWatch {
 public:
  HandleWatch();
  ~HandleWatch();
  HandleWatch(const HandleWatch&) = delete;
  HandleWatch& operator=(const HandleWatch&) = delete;
  std::vector<AtenTensorHandle> made, deleted;
};

// The registry slot a handle value names (Note [Handle values]), live or
// not: for tests that wait for a slot to be reused.
uint32_t handle_slot(AtenTensorHandle h);

}  // namespace aotrt
