// expect-error: try_post_result[^ ]* declared with attribute|function declared with .nodiscard.
// try_post may refuse the task (a full injector, or shutdown): spindle::try_post_result is
// [[nodiscard]], so a call that ignores whether the task will run is diagnosed (an error here,
// as in a build with -Werror).
#include <spindle/executor.hpp>

#pragma GCC diagnostic error "-Wunused-result"

int main() {
  spindle::executor ex{1};
  ex.try_post([] {});
}
