// expect-error: parallel_index
// parallel_for splits [first, last) by arithmetic on the index: spindle::parallel_index
// accepts integers and random-access iterators only (a std::list iterator cannot be split).
#include <spindle/parallel.hpp>

#include <list>

auto main() -> int {
  spindle::executor ex{1};
  std::list<int> l{1, 2, 3};
  spindle::parallel_for(ex, l.begin(), l.end(), [](auto) {});
  return 0;
}
