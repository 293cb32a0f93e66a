// SPDX-License-Identifier: BSL-1.0
#pragma once
// The Rust and Go anchors (bench/anchors/README.md) as rows of spindle-bench: anchor-rust
// (crossbeam-channel, crossbeam-deque, rayon, tokio) and anchor-go run as separate processes,
// one invocation per run, interleaved with the in-process implementations like any peer.
//
// Where the programs are. The build compiles in the paths bench/anchors/CMakeLists.txt leaves
// in SPINDLE_ANCHOR_RUST and SPINDLE_ANCHOR_GO, where it built them. The environment variable
// SPINDLE_ANCHORS_DIR, when set, replaces both: a folder holding anchor-rust and anchor-go, for
// a spindle-bench packed and run on another machine. A program that is not there leaves its
// rows out, and spindle-bench says so once on standard error.
//
// A run that fails (a non-zero exit, no result line, no `verified=1`, no figure) prints why on
// standard error and gives NaN, which the tables count as a failed run (print_table) instead
// of a figure: a failed anchor never stops the other rows.

#include <string>
#include <string_view>
#include <vector>

namespace spindle_bench::anchors {

enum class program { rust, go };

/// Whether `p` is there to run. The first call for a missing program prints one line on
/// standard error; later calls are silent.
auto available(program p) -> bool;

/// What a row's note says first: "Rust rayon 1.6.1, separate process" for a crate of
/// anchor-rust (its version pinned in bench/anchors/rust/Cargo.toml), "Go 1.19.8, separate
/// process" for anchor-go (`crate` unused).
auto describe(program p, std::string_view crate) -> std::string;

/// Runs `p` once with `args` and returns the number `key` of its result line times `scale`, or
/// NaN (with the reason on standard error) when the run failed.
auto figure(program p, std::vector<std::string> const& args, std::string_view key, double scale = 1)
    -> double;

/// Million `count` per second over the `secs` of one run of `p` with `args` (the programs print
/// their own rate with two decimals only), or NaN when the run failed.
auto rate(program p, std::vector<std::string> const& args, double count) -> double;

}  // namespace spindle_bench::anchors
