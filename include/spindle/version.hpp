// SPDX-License-Identifier: BSL-1.0
#pragma once
// spindle's version, for code that needs to check it at compile time.

#include <spindle/detail/sync/config.hpp>

namespace spindle::inline SPINDLE_ABI_NAMESPACE {

inline constexpr int version_major = 0;
inline constexpr int version_minor = 1;
inline constexpr int version_patch = 0;

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE
