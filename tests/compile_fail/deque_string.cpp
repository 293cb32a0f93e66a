// expect-error: store_a_pointer_or_an_index
// A std::string is not trivially copyable: a thief's speculative read of a slot would race with
// the owner. Store a pointer or an index to the string instead.
#include <spindle/deque.hpp>

#include <string>

int main() {
  spindle::deque_owner<std::string> w;
  return 0;
}
