// SPDX-License-Identifier: BSL-1.0
// Finding and running the Rust and Go anchors (anchors.hpp).
//
// The build defines, on this file only (tools/spindle-bench/CMakeLists.txt):
//   SPINDLE_BENCH_ANCHOR_RUST, SPINDLE_BENCH_ANCHOR_GO  the built programs' paths, where built;
//   SPINDLE_BENCH_ANCHOR_CRATES  "crate=version ..." as pinned in bench/anchors/rust/Cargo.toml;
//   SPINDLE_BENCH_ANCHOR_GO_VERSION  the version of the go command that built anchor-go.

#include "anchors.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;  // the process environment, handed to the anchors unchanged

namespace spindle_bench::anchors {
namespace {

auto file_name(program p) -> char const* {
  return p == program::rust ? "anchor-rust" : "anchor-go";
}

auto compiled_in(program p) -> std::string {
  if (p == program::rust) {
#if defined(SPINDLE_BENCH_ANCHOR_RUST)
    return SPINDLE_BENCH_ANCHOR_RUST;
#endif
  } else {
#if defined(SPINDLE_BENCH_ANCHOR_GO)
    return SPINDLE_BENCH_ANCHOR_GO;
#endif
  }
  return "";
}

/// Where `p` is: under SPINDLE_ANCHORS_DIR when that is set, else where the build put it; empty
/// when it is in neither place. The first lookup of a missing program says so on stderr.
auto locate(program p) -> std::string const& {
  static std::array<std::string, 2> paths;
  static std::array<bool, 2> looked{false, false};
  auto const k = static_cast<std::size_t>(p);
  if (looked[k]) {
    return paths[k];
  }
  looked[k] = true;
  std::string why;
  char const* dir = std::getenv("SPINDLE_ANCHORS_DIR");
  std::string path;
  if (dir != nullptr && *dir != '\0') {
    path = std::string(dir) + "/" + file_name(p);
    why = "not in SPINDLE_ANCHORS_DIR (" + path + ")";
  } else {
    path = compiled_in(p);
    why = path.empty() ? "not built here (bench/anchors/README.md says what it needs; or set "
                         "SPINDLE_ANCHORS_DIR to a folder holding it)"
                       : "not found at " + path + " (build it, or set SPINDLE_ANCHORS_DIR)";
  }
  if (!path.empty() && access(path.c_str(), X_OK) == 0) {
    paths[k] = path;
  } else {
    std::fprintf(stderr, "spindle-bench: %s %s: its rows are left out\n", file_name(p),
                 why.c_str());
  }
  return paths[k];
}

/// The command line, for messages.
auto command_text(program p, std::vector<std::string> const& args) -> std::string {
  std::string text = file_name(p);
  for (auto const& a : args) {
    text += " " + a;
  }
  return text;
}

/// Runs `path` with `args`; returns its standard output, or sets `error`. Its standard error is
/// ours, so that a failed check's message shows.
auto capture(std::string const& path, std::vector<std::string> const& args, std::string& error)
    -> std::string {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (auto const& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);

  std::array<int, 2> out{-1, -1};
  if (pipe2(out.data(), O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return "";
  }
  // The child's stdout is the pipe's write end; dup2 clears close-on-exec on the copy alone.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  pid_t pid = 0;
  int const spawned = posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  if (spawned != 0) {
    close(out[0]);
    error = std::string("cannot start: ") + std::strerror(spawned);
    return "";
  }
  std::string text;
  std::array<char, 4096> buf{};
  for (;;) {
    auto const got = read(out[0], buf.data(), buf.size());
    if (got > 0) {
      text.append(buf.data(), static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  close(out[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    error = "killed by signal " + std::to_string(WTERMSIG(status));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    error = "exit status " + std::to_string(WEXITSTATUS(status));
  }
  return text;
}

/// The key=value pairs of the last line that has `verified=`.
auto result_fields(std::string const& text) -> std::map<std::string, std::string> {
  std::map<std::string, std::string> fields;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("verified=") == std::string::npos) {
      continue;
    }
    fields.clear();
    std::istringstream words(line);
    for (std::string word; words >> word;) {
      if (auto const eq = word.find('='); eq != std::string::npos) {
        fields[word.substr(0, eq)] = word.substr(eq + 1);
      }
    }
  }
  return fields;
}

/// `version` of `crate` in "crate=version ..." text, or empty.
[[maybe_unused]] auto version_of(std::string_view crates, std::string_view crate) -> std::string {
  std::istringstream words{std::string(crates)};
  for (std::string word; words >> word;) {
    if (auto const eq = word.find('='); eq != std::string::npos && word.substr(0, eq) == crate) {
      return word.substr(eq + 1);
    }
  }
  return "";
}

/// "what version, separate process", or "what, separate process" without a version.
auto labelled(std::string what, std::string const& version) -> std::string {
  if (!version.empty()) {
    what += " " + version;
  }
  what += ", separate process";
  return what;
}

}  // namespace

auto available(program p) -> bool {
  return !locate(p).empty();
}

auto describe(program p, std::string_view crate) -> std::string {
  std::string version;
  if (p == program::rust) {
#if defined(SPINDLE_BENCH_ANCHOR_CRATES)
    version = version_of(SPINDLE_BENCH_ANCHOR_CRATES, crate);
#endif
    return labelled("Rust " + std::string(crate), version);
  }
#if defined(SPINDLE_BENCH_ANCHOR_GO_VERSION)
  version = SPINDLE_BENCH_ANCHOR_GO_VERSION;
#endif
  return labelled("Go", version);
}

auto figure(program p, std::vector<std::string> const& args, std::string_view key, double scale)
    -> double {
  auto const nan = std::numeric_limits<double>::quiet_NaN();
  auto const& path = locate(p);
  if (path.empty()) {
    return nan;
  }
  std::string error;
  auto const fields = result_fields(capture(path, args, error));
  double v = nan;
  if (error.empty()) {
    auto const verified = fields.find("verified");
    auto const value = fields.find(std::string(key));
    char* end = nullptr;
    if (value != fields.end()) {
      v = std::strtod(value->second.c_str(), &end);
    }
    if (verified == fields.end() || verified->second != "1") {
      error = "no result line with verified=1";
    } else if (value == fields.end() || end == value->second.c_str() || *end != '\0') {
      error = "no figure " + std::string(key) + " in its result line";
    }
  }
  if (!error.empty()) {
    std::fprintf(stderr, "spindle-bench: %s failed: %s (the run counts as failed)\n",
                 command_text(p, args).c_str(), error.c_str());
    return nan;
  }
  return v * scale;
}

auto rate(program p, std::vector<std::string> const& args, double count) -> double {
  return count / figure(p, args, "secs") / 1e6;
}

}  // namespace spindle_bench::anchors
