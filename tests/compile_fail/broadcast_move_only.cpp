// expect-error: broadcastable
// Every receiver gets its own copy of each message: spindle::broadcastable requires a copyable
// type, so a move-only one is rejected where the broadcast is made.
#include <spindle/broadcast.hpp>

#include <memory>

int main() {
  auto channel = spindle::broadcast<std::unique_ptr<int>>(4);
  static_cast<void>(channel);
}
