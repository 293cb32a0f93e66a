// Compiled twice by check.cmake: once as is, once with SPINDLE_MODEL_CHECK=1. Each build
// defines its own function, and both instantiate the same spindle templates (a channel's
// handles, try_send and try_recv), whose definitions differ between the two builds: the model
// build's atomics are the model checker's.
#include <spindle/channel.hpp>

#if defined(SPINDLE_MODEL_CHECK)
#define SPINDLE_ABI_ROUNDTRIP roundtrip_model
#else
#define SPINDLE_ABI_ROUNDTRIP roundtrip_plain
#endif

/// Sends `v` through a channel on this thread and returns what came out; called outside any
/// model execution, the model build's atomics act as plain ones.
auto SPINDLE_ABI_ROUNDTRIP(int v) -> int {
  auto [tx, rx] = spindle::bounded<int>(1);
  if (!tx.try_send(v)) {
    return -1;
  }
  auto r = rx.try_recv();
  return r && r.value ? *r.value : -1;
}
