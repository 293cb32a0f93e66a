// expect-error: store_a_pointer_or_an_index
// A 16-byte value does not fit a lock-free atomic word, so a slot could not be read
// speculatively without a data race. Store a pointer or an index to it instead.
#include <spindle/deque.hpp>

#include <cstdint>

struct job {
  std::uint64_t id;
  std::uint64_t payload;
};

int main() {
  spindle::deque_owner<job> w;
  return 0;
}
