// SPDX-License-Identifier: BSL-1.0
#pragma once
// A thread started with the settings of spindle::executor_options: a name, a stack size and a
// CPU set. std::thread takes none of them, so on Linux the thread is made with pthread_create
// and a pthread_attr_t (stack size, affinity), and it names itself (pthread_setname_np) before
// it runs its body. Elsewhere, and under the model checker (whose threads are model threads),
// the settings are ignored and the thread is an os_thread.
//
// The settings are checked before any thread starts (check_thread_settings), so a bad option
// is a std::invalid_argument from the executor's constructor, not a failure of its third
// thread. Also here: where the calling thread's stack ends, for the helping bound of waiting
// workers (executor_core.hpp, "Helping depth").

#include <spindle/detail/sync/atomic.hpp>
#include <spindle/detail/sync/config.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__linux__) && !defined(SPINDLE_MODEL_CHECK)
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#define SPINDLE_PTHREAD_THREADS 1
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail {

struct thread_settings {
  std::string name;            // empty: keep the process's name
  std::size_t stack_size = 0;  // 0: the system's default
  std::vector<unsigned> cpus;  // empty: not pinned
};

/// The name thread `index` of the `prefix` family gets: "<prefix>-<tag><index>", with the
/// prefix shortened so that the whole fits Linux's 15 bytes and the number is never cut.
inline auto thread_name_for(std::string const& prefix, char const* tag, std::size_t index)
    -> std::string {
  if (prefix.empty()) {
    return {};
  }
  // Built by append: g++ 12 at -O3 reports a false -Wrestrict in `"-" + std::string(...)`
  // (its memcpy range analysis of operator+ on an rvalue string), which -Werror turns into an
  // error in the user's build.
  std::string suffix(1, '-');
  suffix.append(tag);
  suffix.append(std::to_string(index));
  constexpr std::size_t max_name = 15;
  std::size_t const keep = suffix.size() >= max_name ? 0 : max_name - suffix.size();
  std::string name = prefix.substr(0, keep);
  name.append(suffix);
  return name;
}

/// Throws std::invalid_argument for a stack size below the system's minimum or a CPU outside
/// the process's affinity mask (or an empty CPU set).
inline void check_thread_settings(std::size_t stack_size,
                                  std::vector<std::vector<unsigned>> const& cpu_sets) {
#if defined(SPINDLE_PTHREAD_THREADS)
  if (stack_size != 0) {
    long const min = ::sysconf(_SC_THREAD_STACK_MIN);
    if (min > 0 && stack_size < static_cast<std::size_t>(min)) {
      throw std::invalid_argument(
          "spindle::executor_options::stack_size is below the system's "
          "minimum (sysconf(_SC_THREAD_STACK_MIN) = " +
          std::to_string(min) + " bytes)");
    }
  }
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  bool const know_mask = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  for (auto const& set : cpu_sets) {
    if (set.empty()) {
      throw std::invalid_argument("spindle::executor_options::worker_cpus holds an empty set");
    }
    for (unsigned const cpu : set) {
      if (cpu >= CPU_SETSIZE || (know_mask && !CPU_ISSET(cpu, &allowed))) {
        throw std::invalid_argument("spindle::executor_options::worker_cpus: CPU " +
                                    std::to_string(cpu) +
                                    " is not in this process's affinity mask");
      }
    }
  }
#else
  static_cast<void>(stack_size);
  static_cast<void>(cpu_sets);
#endif
}

/// A joinable thread with thread_settings. Destroying a thread that was not joined terminates,
/// as std::thread does.
class native_thread {
 public:
  /// Throws: std::system_error if the thread cannot start (the body is not run).
  native_thread(thread_settings settings, std::function<void()> body) {
#if defined(SPINDLE_PTHREAD_THREADS)
    auto start = std::make_unique<start_block>(start_block{std::move(settings), std::move(body)});
    pthread_attr_t attr;
    ::pthread_attr_init(&attr);
    struct attr_guard {
      pthread_attr_t* a;
      ~attr_guard() { ::pthread_attr_destroy(a); }
    } guard{&attr};
    if (std::size_t const size = start->settings.stack_size; size != 0) {
      long const page = ::sysconf(_SC_PAGESIZE);
      std::size_t const p = page > 0 ? static_cast<std::size_t>(page) : 4096;
      if (int const rc = ::pthread_attr_setstacksize(&attr, (size + p - 1) / p * p); rc != 0) {
        throw std::system_error(rc, std::generic_category(), "spindle: thread stack size");
      }
    }
    if (!start->settings.cpus.empty()) {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (unsigned const cpu : start->settings.cpus) {
        CPU_SET(cpu, &set);
      }
      if (int const rc = ::pthread_attr_setaffinity_np(&attr, sizeof set, &set); rc != 0) {
        throw std::system_error(rc, std::generic_category(), "spindle: thread CPU affinity");
      }
    }
    if (int const rc = ::pthread_create(&handle_, &attr, &entry, start.get()); rc != 0) {
      throw std::system_error(rc, std::generic_category(), "spindle: cannot start a thread");
    }
    static_cast<void>(start.release());  // the thread owns it now
    joinable_ = true;
#else
    static_cast<void>(settings);
    thread_ = std::make_unique<os_thread>(std::move(body));
#endif
  }

  native_thread(native_thread const&) = delete;
  auto operator=(native_thread const&) -> native_thread& = delete;

  ~native_thread() {
#if defined(SPINDLE_PTHREAD_THREADS)
    if (joinable_) {
      std::terminate();
    }
#endif
  }

  void join() {
#if defined(SPINDLE_PTHREAD_THREADS)
    if (joinable_) {
      joinable_ = false;
      if (int const rc = ::pthread_join(handle_, nullptr); rc != 0) {
        throw std::system_error(rc, std::generic_category(), "spindle: pthread_join");
      }
    }
#else
    if (auto t = std::exchange(thread_, nullptr)) {
      t->join();
    }
#endif
  }

 private:
#if defined(SPINDLE_PTHREAD_THREADS)
  struct start_block {
    thread_settings settings;
    std::function<void()> body;
  };

  static auto entry(void* arg) -> void* {
    std::unique_ptr<start_block> start(static_cast<start_block*>(arg));
    if (!start->settings.name.empty()) {
      // Best effort: a name that does not take changes nothing else.
      static_cast<void>(::pthread_setname_np(::pthread_self(), start->settings.name.c_str()));
    }
    auto body = std::move(start->body);
    start.reset();
    body();
    return nullptr;
  }

  pthread_t handle_{};
  bool joinable_ = false;
#else
  std::unique_ptr<os_thread> thread_;
#endif
};

/// The lowest stack address a waiting worker may reach and still help with other tasks: the
/// middle of the part of the calling thread's stack that is left below the caller's frame
/// (stacks grow down on every platform spindle runs on), or 0 (no bound) where the stack
/// cannot be read. Call it at the top of the thread's function. The part above the caller is
/// not counted: glibc places the thread's static TLS at the top of the stack mapping, and
/// under ThreadSanitizer that alone takes hundreds of kilobytes, so half of the mapping would
/// put the middle above the first frame.
inline auto help_floor_of_this_thread() noexcept -> std::uintptr_t {
#if defined(SPINDLE_PTHREAD_THREADS)
  pthread_attr_t attr;
  if (::pthread_getattr_np(::pthread_self(), &attr) != 0) {
    return 0;
  }
  void* low = nullptr;
  std::size_t size = 0;
  int const rc = ::pthread_attr_getstack(&attr, &low, &size);
  ::pthread_attr_destroy(&attr);
  auto const base = reinterpret_cast<std::uintptr_t>(low);
  auto const here = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  if (rc != 0 || low == nullptr || here <= base || here > base + size) {
    return 0;
  }
  return base + (here - base) / 2;
#else
  return 0;
#endif
}

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail
