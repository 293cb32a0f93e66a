// SPDX-License-Identifier: BSL-1.0
#pragma once
// The executor's side of spindle::dump() (spindle/dump.hpp): named tasks, and the registry of
// live executors behind spindle::dump_all().
//
// Named tasks: `ex.spawn(f, spindle::name("parse"))` spawns a named_callable, which wraps f.
// When it runs on a worker it writes its name and a process-wide id into the worker's frame at
// the depth run() gave it (worker_diag, detail/executor/diag_state.hpp), and restores what the
// frame held when it returns, so a frame never names a task that has ended. A task without a
// name is not wrapped and writes no frame: names cost nothing to the tasks that have none.
// Outside a worker (spawn_blocking's threads) a named task runs as an unnamed one.
//
// Registry: every executor_core adds itself when it is built and removes itself at the start
// of its destructor, under the registry's mutex; dump_all() walks the list under the same
// mutex, so it never reads an executor that is being destroyed. Not kept under the model
// checker (its mutex would outlive a model execution).
//
// Synchronization:
//   next_named_id, next_executor_id  fetch_add (relaxed): ids need only be unique.
//   registry       guarded by its mutex.
//   worker_diag    see detail/executor/diag_state.hpp.

#include <spindle/detail/executor/diag_state.hpp>
#include <spindle/detail/executor/worker_ctx.hpp>
#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>
#include <spindle/detail/sync/mutex.hpp>
#include <spindle/diagnostics.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>
#include <vector>

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

/// The next id of a named task, and of an executor (each from its own counter). As the
/// isolation regions' counter (spindle/isolate.hpp), these only name things and order no
/// other memory, so they are plain std::atomic rather than the model-checked alias: no
/// interleaving of their increments can change what the scheduler does, and a model atomic
/// must not outlive one model execution, as a static does.
inline auto next_named_id() noexcept -> std::uint64_t {
  static std::atomic<std::uint64_t> counter{0};
  // relaxed: the ids need only be unique.
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

inline auto next_executor_id() noexcept -> std::uint64_t {
  static std::atomic<std::uint64_t> counter{0};
  // relaxed: the ids need only be unique.
  return counter.fetch_add(1, std::memory_order_relaxed) + 1;
}

/// While alive, the calling worker's frame at its current depth names this task.
class label_scope {
 public:
  label_scope(char const* name, std::uint64_t id, void const* key = nullptr) noexcept {
    if constexpr (diag_on) {
      worker_ctx* const w = current_worker;
      if (w == nullptr) {
        return;
      }
      std::uint32_t const depth = w->diag.value.own() >> worker_diag::depth_shift;
      if (depth == 0 || depth > diag_frames) {
        return;
      }
      slot_ = &w->diag.value.frames[depth - 1];
      // relaxed (both): the owner reads its own frame.
      saved_name_ = slot_->name.load(std::memory_order_relaxed);
      saved_id_ = slot_->id.load(std::memory_order_relaxed);
      // relaxed: as above.
      saved_key_ = slot_->key.load(std::memory_order_relaxed);
      // relaxed (all three): read only by dumps (see "frames" in diag_state.hpp).
      slot_->id.store(id, std::memory_order_relaxed);
      slot_->key.store(key, std::memory_order_relaxed);
      slot_->name.store(name, std::memory_order_relaxed);
    }
  }
  label_scope(label_scope const&) = delete;
  auto operator=(label_scope const&) -> label_scope& = delete;
  ~label_scope() {
    if (slot_ != nullptr) {
      // relaxed (all three): as in the constructor.
      slot_->name.store(saved_name_, std::memory_order_relaxed);
      slot_->id.store(saved_id_, std::memory_order_relaxed);
      slot_->key.store(saved_key_, std::memory_order_relaxed);
    }
  }

 private:
  diag_label* slot_ = nullptr;
  char const* saved_name_ = nullptr;
  std::uint64_t saved_id_ = 0;
  void const* saved_key_ = nullptr;
};

/// A callable with a name: what `spawn(f, spindle::name(...))` runs instead of f.
template <class Fn>
class named_callable {
 public:
  named_callable(Fn&& fn, spindle::name n)
      : fn_(std::move(fn)), name_(n.text()), id_(next_named_id()) {}

  /// Runs the task with what its runner passes (nothing, or a task group's stop token).
  template <class... Args>
  requires std::is_invocable_v<Fn&, Args...>
  auto operator()(Args&&... args) -> std::invoke_result_t<Fn&, Args...> {
    label_scope const scope(name_, id_, key_);
    return std::invoke(fn_, std::forward<Args>(args)...);
  }

  [[nodiscard]] auto id() const noexcept -> std::uint64_t { return id_; }

  /// What a join of this task waits on (the spawned node's completion), set by the node
  /// before the task is queued; a dump names the task by it.
  void set_diag_key(void const* key) noexcept { key_ = key; }

 private:
  Fn fn_;
  char const* name_;
  std::uint64_t id_;
  void const* key_ = nullptr;
};

class executor_core;

/// The live executors, for dump_all().
class diag_registry {
 public:
  void add(executor_core* core) {
    std::lock_guard guard(mu_);
    cores_.push_back(core);
  }
  void remove(executor_core* core) noexcept {
    std::lock_guard guard(mu_);
    cores_.erase(std::remove(cores_.begin(), cores_.end(), core), cores_.end());
  }
  /// Calls `fn(core)` for every live executor, in the order they were made, under the lock.
  template <class Fn>
  void for_each(Fn&& fn) {
    std::lock_guard guard(mu_);
    for (executor_core* const c : cores_) {
      fn(*c);
    }
  }

 private:
  mutex mu_;
  std::vector<executor_core*> cores_;
};

/// The registry, never destroyed: an executor that outlives static destruction (one owned by
/// another static) still removes itself from a live list.
inline auto registry() -> diag_registry& {
  static diag_registry* const r = new diag_registry;
  return *r;
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
