// SPDX-License-Identifier: BSL-1.0
#pragma once
// Replaces the global operator new and delete so the model checker's race detector forgets
// freed memory. Without it, a block freed by one thread and reused by another (a channel block,
// a deque buffer) carries the old block's access history and can be reported as a race.
//
// Include this header in exactly ONE translation unit of a model-checking program (it defines
// the replaceable allocation functions, [replacement.functions]); tests/model does so in each
// test binary. Allocation goes to malloc/aligned_alloc, so sanitizers still see every block.

#include <spindle/model/scheduler.hpp>

#include <malloc.h>

#include <cstddef>
#include <cstdlib>
#include <new>

namespace spindle::model::impl {

inline auto allocate(std::size_t n) -> void* {
  if (void* p = std::malloc(n == 0 ? 1 : n); p != nullptr) {
    return p;
  }
  throw std::bad_alloc();
}

inline auto allocate_aligned(std::size_t n, std::align_val_t al) -> void* {
  auto const a = static_cast<std::size_t>(al);
  std::size_t const rounded = ((n == 0 ? 1 : n) + a - 1) / a * a;
  if (void* p = std::aligned_alloc(a, rounded); p != nullptr) {
    return p;
  }
  throw std::bad_alloc();
}

inline void release(void* p) noexcept {
  if (p != nullptr) {
    forget_memory(p, ::malloc_usable_size(p));
    std::free(p);
  }
}

}  // namespace spindle::model::impl

auto operator new(std::size_t n) -> void* {
  return spindle::model::impl::allocate(n);
}
auto operator new[](std::size_t n) -> void* {
  return spindle::model::impl::allocate(n);
}
auto operator new(std::size_t n, std::align_val_t al) -> void* {
  return spindle::model::impl::allocate_aligned(n, al);
}
auto operator new[](std::size_t n, std::align_val_t al) -> void* {
  return spindle::model::impl::allocate_aligned(n, al);
}
auto operator new(std::size_t n, std::nothrow_t const& /*tag*/) noexcept -> void* {
  return std::malloc(n == 0 ? 1 : n);
}
auto operator new[](std::size_t n, std::nothrow_t const& /*tag*/) noexcept -> void* {
  return std::malloc(n == 0 ? 1 : n);
}
auto operator new(std::size_t n, std::align_val_t al, std::nothrow_t const& /*tag*/) noexcept
    -> void* {
  try {
    return spindle::model::impl::allocate_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
auto operator new[](std::size_t n, std::align_val_t al, std::nothrow_t const& /*tag*/) noexcept
    -> void* {
  try {
    return spindle::model::impl::allocate_aligned(n, al);
  } catch (...) {
    return nullptr;
  }
}
void operator delete(void* p, std::nothrow_t const& /*tag*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p, std::nothrow_t const& /*tag*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete(void* p, std::align_val_t /*al*/, std::nothrow_t const& /*tag*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p, std::align_val_t /*al*/, std::nothrow_t const& /*tag*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete(void* p) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p) noexcept {
  spindle::model::impl::release(p);
}
void operator delete(void* p, std::size_t /*n*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p, std::size_t /*n*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete(void* p, std::align_val_t /*al*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p, std::align_val_t /*al*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete(void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept {
  spindle::model::impl::release(p);
}
void operator delete[](void* p, std::size_t /*n*/, std::align_val_t /*al*/) noexcept {
  spindle::model::impl::release(p);
}
