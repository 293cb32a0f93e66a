// expect-error: not a constant expression
// spindle::name takes only text of static storage known at compile time (a string literal): a
// dump may read a task's name after the task ended, when a buffer of the spawner's is gone.
#include <spindle/executor.hpp>

int main() {
  spindle::executor ex(1);
  char buf[6] = "parse";
  ex.spawn([] {}, spindle::name(buf)).join();
  return 0;
}
