#pragma once
// Test support: a scope guard that checks, when the scope ends, that every `tracked` value made
// inside it is gone again (none leaked, none destroyed twice).

#include <gtest/gtest.h>

#include <cstdint>

#include "support/tracked.hpp"

namespace spindle_test {

/// Checks, on destruction, that every tracked object made in the scope is gone again.
class no_leak {
 public:
  no_leak() = default;
  no_leak(no_leak const&) = delete;
  auto operator=(no_leak const&) -> no_leak& = delete;
  ~no_leak() { EXPECT_EQ(tracked::live(), base_) << "tracked values leaked or destroyed twice"; }

 private:
  std::int64_t base_ = tracked::live();
};

}  // namespace spindle_test
