// A consumer of the installed package: includes the umbrella header and uses it.
#include <spindle/spindle.hpp>

auto main() -> int { return 0; }
