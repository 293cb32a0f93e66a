// A consumer built without CMake: the compiler alone, with the flags of
// `pkg-config --cflags --libs spindle` (tests/install/check.cmake, tools/package/check.sh).
// Sends one value through a channel and receives it; exits 0 when it comes back intact.
#include <spindle/channel.hpp>

auto main() -> int {
  auto [tx, rx] = spindle::bounded<int>(1);
  if (!tx.try_send(7)) {
    return 1;
  }
  auto r = rx.try_recv();
  return r && r.value && *r.value == 7 ? 0 : 1;
}
