// SPDX-License-Identifier: BSL-1.0
#pragma once
// The channel's waiting and layout policies as build-time settings, so that one measuring run
// on a many-core machine can compare several builds of the same benchmark side by side
// (tools/variants/build-variants.sh builds one spindle-bench per variant). Each policy was
// chosen from a measurement; the setting says which default that measurement gave and lets a
// build override it with -D. They are heuristics for how a thread waits or where a slot lies,
// never conditions of correctness: every value below keeps every channel's contract.
//
// Every translation unit of a program must see the same values (they shape inline functions);
// the installed package is built with the defaults.
//
//   SPINDLE_CHANNEL_POLLS            polls of a waiting receiver before it yields (phase (1) of
//                                    wait_budget), one pause apart, or 2^k pauses apart with
//                                    SPINDLE_CHANNEL_EXPONENTIAL.
//   SPINDLE_CHANNEL_POLL_SHARED      1: receivers of a bounded channel poll also when there are
//                                    several of them; 0: only a sole receiver polls.
//   SPINDLE_CHANNEL_SEND_POLLS       the same for a sender that found the channel full.
//   SPINDLE_CHANNEL_EXPONENTIAL      1: phase (1) pauses 1, 2, 4 ... 64 times between tries
//                                    (crossbeam's Backoff::snooze); 0: one pause between tries.
//   SPINDLE_CHANNEL_YIELD_WINDOW_US  how long phase (2) yields before the waiter parks.
//   SPINDLE_CHANNEL_FULL_EVERY       a waiter makes the full attempt once every this many
//                                    rounds and a cheap poll otherwise (1: always the full one).
//   SPINDLE_CHANNEL_PREFETCH         whether the bounded flavour takes a free slot's line
//                                    exclusive before its stamp load and value store
//                                    (PREFETCHW): 0 never, 1 always, 2 when the sender is the
//                                    channel's only one.
//   SPINDLE_CHANNEL_RESUME_ROOM      the most free slots a waiting sender wants after the first
//                                    before it sends again (room to resume; 0: none).
//   SPINDLE_CHANNEL_SPREAD_MIN_CPUS  the fewest processors on which a ring spreads its slots.

#include <spindle/detail/sync/config.hpp>

#include <chrono>
#include <cstddef>

#ifndef SPINDLE_CHANNEL_POLLS
#define SPINDLE_CHANNEL_POLLS 64
#endif
#ifndef SPINDLE_CHANNEL_POLL_SHARED
#define SPINDLE_CHANNEL_POLL_SHARED 0
#endif
#ifndef SPINDLE_CHANNEL_SEND_POLLS
#define SPINDLE_CHANNEL_SEND_POLLS 0
#endif
#ifndef SPINDLE_CHANNEL_EXPONENTIAL
#define SPINDLE_CHANNEL_EXPONENTIAL 0
#endif
#ifndef SPINDLE_CHANNEL_YIELD_WINDOW_US
#define SPINDLE_CHANNEL_YIELD_WINDOW_US 100
#endif
#ifndef SPINDLE_CHANNEL_FULL_EVERY
#define SPINDLE_CHANNEL_FULL_EVERY 8
#endif
#ifndef SPINDLE_CHANNEL_PREFETCH
#define SPINDLE_CHANNEL_PREFETCH 2
#endif
#ifndef SPINDLE_CHANNEL_RESUME_ROOM
#define SPINDLE_CHANNEL_RESUME_ROOM 512
#endif
#ifndef SPINDLE_CHANNEL_SPREAD_MIN_CPUS
#define SPINDLE_CHANNEL_SPREAD_MIN_CPUS 3
#endif

namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail::channel_tuning {

inline constexpr int polls = SPINDLE_CHANNEL_POLLS;
inline constexpr bool poll_shared = SPINDLE_CHANNEL_POLL_SHARED != 0;
inline constexpr int send_polls = SPINDLE_CHANNEL_SEND_POLLS;
inline constexpr bool exponential = SPINDLE_CHANNEL_EXPONENTIAL != 0;
inline constexpr std::chrono::microseconds yield_window{SPINDLE_CHANNEL_YIELD_WINDOW_US};
inline constexpr int full_every = SPINDLE_CHANNEL_FULL_EVERY;
inline constexpr int prefetch = SPINDLE_CHANNEL_PREFETCH;
inline constexpr std::size_t resume_room = SPINDLE_CHANNEL_RESUME_ROOM;
inline constexpr std::size_t spread_min_cpus = SPINDLE_CHANNEL_SPREAD_MIN_CPUS;

static_assert(polls >= 0 && send_polls >= 0, "SPINDLE_CHANNEL_POLLS: a count of tries");
static_assert(full_every >= 1, "SPINDLE_CHANNEL_FULL_EVERY: at least 1");
static_assert(prefetch >= 0 && prefetch <= 2, "SPINDLE_CHANNEL_PREFETCH: 0, 1 or 2");
static_assert(yield_window.count() >= 0, "SPINDLE_CHANNEL_YIELD_WINDOW_US: a duration");

}  // namespace spindle::inline SPINDLE_ABI_NAMESPACE::detail::channel_tuning
