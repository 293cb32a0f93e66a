// expect-error: parallel_index<I>.*with I = bool|bool. does not satisfy .parallel_index
// bool is an integral type but not an index: a bool range holds at most one index, and bool has
// no unsigned counterpart to count a range in. spindle::parallel_index rejects it.
#include <spindle/parallel.hpp>

auto main() -> int {
  spindle::executor ex{1};
  spindle::parallel_for(ex, false, true, [](bool) {});
  return 0;
}
