#!/usr/bin/env bash
# Checks that every tracked C++ file (git ls-files '*.hpp' '*.cpp') is formatted as the pinned
# clang-format formats it with the repository's .clang-format; CI runs it before the builds.
#
#   tools/format/check.sh          # lists the files that differ and fails if there are any
#   tools/format/check.sh --diff   # the same, and prints what would change
#   tools/format/check.sh --fix    # formats the files that differ in place
#
# The pinned version is clang-format 16 (Debian 12: package clang-format-16): version 14
# misreads requires-clauses whose constraint has a template argument list with a reference,
# such as `requires std::invocable<F&, blocked_range2d<I> const&>`, and breaks the signature
# apart. CLANG_FORMAT names another binary; it must still be version 16.
#
# A file counts as formatted when clang-format's output equals it byte for byte, not when
# `--dry-run -Werror` is silent: for every `namespace spindle::inline SPINDLE_ABI_NAMESPACE`
# the namespace-comment fixer proposes a replacement identical to the text already there, so
# the dry run would flag nearly every header.
set -euo pipefail
cd "$(dirname "$0")/../.."

pinned_major=16
mode=check
case "${1:-}" in
  "") ;;
  --diff) mode="diff" ;;
  --fix) mode="fix" ;;
  -h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "usage: $0 [--diff | --fix]" >&2
    exit 2
    ;;
esac

clang_format=${CLANG_FORMAT:-clang-format-$pinned_major}
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format: $clang_format not found (Debian 12: apt-get install clang-format-$pinned_major)" >&2
  exit 2
fi
version=$("$clang_format" --version)
if [[ ! $version =~ version\ $pinned_major\. ]]; then
  echo "format: $clang_format is not clang-format $pinned_major: $version" >&2
  exit 2
fi

if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "format: not in a git work tree: the files to check are the ones git tracks" >&2
  exit 2
fi
mapfile -d '' files < <(git ls-files -z -- '*.hpp' '*.cpp')
# One clang-format per file, on every core; a file tracked but deleted in the working tree is
# skipped.
# shellcheck disable=SC2016 # the inner script's variables are its own
mapfile -t differ < <(
  printf '%s\0' "${files[@]}" |
    xargs -0 -n 8 -P "$(nproc)" bash -c '
      for f; do
        [[ -f $f ]] || continue
        "$0" --style=file "$f" | cmp -s - "$f" || printf "%s\n" "$f"
      done' "$clang_format" |
    LC_ALL=C sort
)

if ((${#differ[@]} == 0)); then
  echo "format: all ${#files[@]} C++ files are formatted ($clang_format)"
  exit 0
fi

if [[ $mode == fix ]]; then
  "$clang_format" --style=file -i -- "${differ[@]}"
  printf 'format: formatted %s\n' "${differ[@]}"
  echo "format: ${#differ[@]} of ${#files[@]} files formatted in place"
  exit 0
fi

printf 'format: not formatted: %s\n' "${differ[@]}"
if [[ $mode == diff ]]; then
  for f in "${differ[@]}"; do
    "$clang_format" --style=file "$f" | diff -u --label "a/$f" --label "b/$f" "$f" - || true
  done
fi
echo "format: ${#differ[@]} of ${#files[@]} files differ from $clang_format's output;" \
  "run tools/format/check.sh --fix" >&2
exit 1
