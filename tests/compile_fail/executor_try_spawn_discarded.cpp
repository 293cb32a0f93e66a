// expect-error: try_spawn_result[^ ]* declared with attribute|function declared with .nodiscard.
// try_spawn's result holds the only handle to the task and says whether it was accepted at
// all: spindle::try_spawn_result is [[nodiscard]], so dropping it is diagnosed (an error here,
// as in a build with -Werror).
#include <spindle/executor.hpp>

#pragma GCC diagnostic error "-Wunused-result"

int main() {
  spindle::executor ex{1};
  ex.try_spawn([] { return 1; });
}
