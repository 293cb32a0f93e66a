// A consumer of the installed package: includes the umbrella header and uses it.
#include <spindle/spindle.hpp>

#if defined(SPINDLE_EXPECTED_VERSION_MAJOR)
static_assert(spindle::version_major == SPINDLE_EXPECTED_VERSION_MAJOR &&
                  spindle::version_minor == SPINDLE_EXPECTED_VERSION_MINOR &&
                  spindle::version_patch == SPINDLE_EXPECTED_VERSION_PATCH,
              "the package's version is not the one in <spindle/version.hpp>");
#endif

auto main() -> int {
  auto [tx, rx] = spindle::bounded<int>(1);
  if (!tx.try_send(42)) {
    return 1;
  }
  auto r = rx.try_recv();
  return r && r.value && *r.value == 42 ? 0 : 1;
}
