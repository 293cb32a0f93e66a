#!/usr/bin/env bash
# Builds one spindle-bench per channel variant (tools/variants/variants.txt) and packs them,
# with every shared library they load and the dynamic loader, into one folder that runs on a
# bare x86-64 Linux machine without a compiler: many-core machines are often production boxes
# with no toolchain.
#
#   tools/variants/build.sh OUT [NAME ...]
#
# OUT/bin/spindle-bench-NAME   one per variant (all of variants.txt, or the NAMEs given)
# OUT/bin/anchor-*             the Rust and Go anchors, when the bench build made them
# OUT/lib/                     the shared libraries and ld-linux of this machine
# OUT/run                      runs a packed program with the packed loader and libraries
# OUT/measure.sh               the measuring run (tools/variants/measure.sh)
# OUT/summarize.py             turns its raw output into tables (needs only python3)
#
# Builds go to build/variants/NAME (Release, peers as found at configure time). Run it on a
# machine with the peers' packages installed (.ci/run installs them), or the peers' rows are
# missing from the run.
set -euo pipefail
if (($# < 1)); then
  echo "usage: $0 OUT [VARIANT ...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
wanted=("$@")

mkdir -p "$out/bin" "$out/lib" "$root/build/variants"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

built=()
while read -r name flags; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  if ((${#wanted[@]})) && [[ ! " ${wanted[*]} " == *" $name "* ]]; then
    continue
  fi
  dir="$root/build/variants/$name"
  echo "variants: building $name (${flags:-defaults})"
  cmake -S "$root" -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DSPINDLE_BUILD_TESTS=OFF -DSPINDLE_BUILD_EXAMPLES=OFF -DSPINDLE_BUILD_BENCH=ON \
    -DCMAKE_CXX_FLAGS="$flags" >"$dir.configure.log"
  cmake --build "$dir" --target spindle-bench >"$dir.build.log"
  cp "$dir/tools/spindle-bench/spindle-bench" "$out/bin/spindle-bench-$name"
  if ((${#built[@]} == 0)) && cmake --build "$dir" --target deque_bench >>"$dir.build.log" 2>&1; then
    # The deque's owner and thief micro-benchmarks (Google Benchmark), from the first variant.
    cp "$dir/bench/deque_bench" "$out/bin/deque_bench"
  fi
  built+=("$name")
done <"$here/variants.txt"
if ((${#built[@]} == 0)); then
  echo "variants: no variant of that name in variants.txt" >&2
  exit 2
fi

# The anchors, from the first variant's build (they do not depend on spindle's settings).
first="$root/build/variants/${built[0]}"
for anchor in anchor-rust anchor-go; do
  if cmake --build "$first" --target "spindle_${anchor//-/_}" >>"$first.build.log" 2>&1 &&
     [ -x "$first/anchors/$anchor" ]; then
    cp "$first/anchors/$anchor" "$out/bin/"
    strip "$out/bin/$anchor" 2>/dev/null || true
  fi
done

# Every shared library the programs load, and the loader itself, so that the folder runs
# where the system's libraries are older or missing.
loader=""
for b in "$out"/bin/*; do
  while read -r line; do
    case "$line" in
      *"=> /"*)
        lib=$(echo "$line" | sed -E 's/.*=> ([^ ]+) .*/\1/')
        cp -L "$lib" "$out/lib/" ;;
      /*ld-linux*)
        loader=$(echo "$line" | awk '{print $1}')
        cp -L "$loader" "$out/lib/" ;;
    esac
  done < <(ldd "$b" 2>/dev/null || true)
done
loader_name=$(basename "${loader:-/lib64/ld-linux-x86-64.so.2}")

cat >"$out/run" <<RUN
#!/usr/bin/env bash
# Runs a packed program with the packed loader and libraries: run NAME [ARGS...]
here=\$(cd "\$(dirname "\$0")" && pwd)
prog=\$1; shift
exec "\$here/lib/$loader_name" --library-path "\$here/lib" "\$here/bin/\$prog" "\$@"
RUN
chmod +x "$out/run"
cp "$here/measure.sh" "$here/summarize.py" "$out/"
{
  echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo +changes)"
  echo "compiler: $(c++ --version | head -1)"
  grep -v '^#' "$here/variants.txt" | grep -v '^$'
} >"$out/BUILD-INFO"
echo "variants: packed ${built[*]} into $out ($(du -sh "$out" | cut -f1))"
