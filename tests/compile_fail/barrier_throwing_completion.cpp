// expect-error: barrier_completion
// A barrier's completion function runs while every party of the phase waits: if it threw, the
// phase could neither complete nor be abandoned and its waiters would hang. The concept
// spindle::barrier_completion requires it to be nothrow invocable, as std::barrier does.
#include <spindle/barrier.hpp>

int main() {
  spindle::barrier b(2, [] {});
  static_cast<void>(b);
}
