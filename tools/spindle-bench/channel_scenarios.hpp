#pragma once
// The channel implementations of `spindle-bench channel` (scenarios_channel.cpp), handed to the
// scaling sweep (scenarios_sweep.cpp): each one's throughput run, with the same exactly-once
// check, for any number of producers and consumers.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spindle_bench::channel {

struct channel_impl_ref {
  std::string key;   // the --only key: "spindle", "mutex", "moodycamel", ...
  std::string name;  // the table's row name
  std::string note;  // what the row's figure includes, at the sweep's capacity
  /// `producers` threads each send `messages` u64 through one queue of `capacity` to
  /// `consumers` threads; returns million messages per second, or fails the process when a
  /// message was lost, duplicated or reordered.
  std::function<double(int producers, int consumers, std::uint64_t messages, std::size_t capacity)>
      throughput;
};

/// Every channel implementation built, in the order of `spindle-bench channel`'s tables
/// (spindle's first); `capacity` is the one the notes describe.
auto channel_impls_for_sweep(std::size_t capacity) -> std::vector<channel_impl_ref>;

}  // namespace spindle_bench::channel
