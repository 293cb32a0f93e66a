#!/usr/bin/env bash
# The measuring run of a packed folder (tools/variants/build.sh): every channel variant, the
# C++ peers and the Rust and Go anchors, interleaved and rotated, in the same run. Needs bash
# and coreutils only; the folder carries its own loader and libraries.
#
#   ./measure.sh [--rounds R] [--variants a,b] [--peers a,b] [--shapes LIST] [--executor R]
#                [--work DIR] [--out FILE.tar.gz]
# --work keeps the raw lines in DIR as they come (the default is a temporary folder), so that a
# run cut short by a time limit still leaves what it measured.
#
# Each round runs every shape once with every program, in an order rotated by one each
# round, so that no program always follows the same one. Every output line goes to raw.txt,
# prefixed with the round, the shape and the program; summarize.py makes the tables. The
# archive holds raw.txt, the machine's description and the build's BUILD-INFO.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
rounds=3
variants=""
out="$PWD/variants-results.tar.gz"
executor=0
work=""
peers="atomic_queue,moodycamel,xenium,tbb,boost"
# producers:consumers:messages per producer; "pp:R" is the ping-pong of R round trips.
shapes="1:1:4000000 2:2:2000000 4:2:1000000 4:4:1000000 8:8:250000 16:16:125000 pp:1000000"
while (($#)); do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --variants) variants=$2; shift 2 ;;
    --shapes) shapes=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --executor) executor=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--rounds R] [--variants a,b] [--shapes LIST] [--executor] [--out FILE]" >&2; exit 2 ;;
  esac
done

run="$here/run"
if [ -z "$work" ]; then
  work=$(mktemp -d)
fi
mkdir -p "$work"
raw="$work/raw.txt"
: >"$raw"

progs=()
for b in "$here"/bin/spindle-bench-*; do
  v=${b##*/spindle-bench-}
  if [ -z "$variants" ] || [[ ",$variants," == *",$v,"* ]]; then
    progs+=("spindle:spindle-bench-$v")
  fi
done
base=$(ls "$here"/bin/spindle-bench-* | head -1)
base=${base##*/}
progs+=("peers:$base")
[ -x "$here/bin/anchor-rust" ] && progs+=("rust:anchor-rust")
[ -x "$here/bin/anchor-go" ] && progs+=("go:anchor-go")

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "uname: $(uname -a)"
  echo "nproc: $(nproc)"
  grep -m1 'model name' /proc/cpuinfo
  command -v lscpu >/dev/null && lscpu
  echo "load: $(cat /proc/loadavg)"
} >"$work/machine.txt" 2>&1

# One measurement: the command line for program $1 at shape $2.
command_for() {
  local kind=${1%%:*} name=${1#*:} shape=$2
  local p c n
  if [[ $shape == pp:* ]]; then
    n=${shape#pp:}
    case $kind in
      spindle) echo "$name channel --scenario pingpong --messages $n --runs 1 --json --only spindle" ;;
      peers) echo "$name channel --scenario pingpong --messages $n --runs 1 --json --only $peers" ;;
      rust|go) echo "$name chan pingpong --rounds $n" ;;
    esac
    return
  fi
  IFS=: read -r p c n <<<"$shape"
  local only_spindle="spindle" only_peers="$peers"
  if ((p == 1 && c == 1)); then
    only_spindle="spindle,spindle-spsc"
    only_peers="$only_peers,bare-spsc"
  fi
  case $kind in
    spindle) echo "$name channel --producers $p --consumers $c --messages $n --capacity 1024 --runs 1 --json --only $only_spindle" ;;
    peers) echo "$name channel --producers $p --consumers $c --messages $n --capacity 1024 --runs 1 --json --only $only_peers" ;;
    rust|go) echo "$name chan mpmc --producers $p --consumers $c --messages $((p * n)) --capacity 1024" ;;
  esac
}

count=${#progs[@]}
start=$SECONDS
for ((r = 1; r <= rounds; ++r)); do
  for shape in $shapes; do
    for ((i = 0; i < count; ++i)); do
      prog=${progs[$(((i + r) % count))]}
      read -r -a cmd <<<"$(command_for "$prog" "$shape")"
      ((${#cmd[@]})) || continue
      timeout 120 "$run" "${cmd[@]}" 2>&1 | while IFS= read -r line; do
        echo "round=$r shape=$shape prog=$prog | $line"
      done >>"$raw"
    done
  done
  echo "measure: round $r done after $((SECONDS - start)) s" | tee -a "$work/progress.txt"
done

# The executor, deque and coroutine scenarios at one worker per processor, spindle and the
# anchors, interleaved: `--executor R` runs R rounds of them after the channel rounds.
if ((executor > 0)); then
  w=$(nproc)
  block=("$base executor --workers $w --only fib,for,spawn --runs 1 --json"
         "anchor-rust exec fib --n 30 --threads $w"
         "anchor-go exec fib --n 30 --threads $w"
         "$base algorithms --workers $w --only reduce,for --runs 1 --json"
         "anchor-rust exec pfor --n 10000000 --threads $w"
         "anchor-rust exec spawn --tasks 1000000 --threads $w --runtime rayon"
         "anchor-rust exec spawn --tasks 1000000 --threads $w --runtime tokio"
         "anchor-go exec spawn --tasks 1000000 --threads $w"
         "$base select --runs 1 --json --workers $w"
         "$base coro --scenario fanin --runs 1 --json --workers $w"
         "anchor-rust coro select --msgs 1000000 --capacity 1024 --threads $w"
         "anchor-go coro select --msgs 1000000 --capacity 1024 --threads $w"
         "anchor-rust coro fanin --tasks 10000 --msgs 100 --capacity 1024 --threads $w"
         "anchor-go coro fanin --tasks 10000 --msgs 100 --capacity 1024 --threads $w"
         "anchor-rust deque owner --items 10000000"
         "anchor-rust deque steal --items 10000000"
         "anchor-rust deque batch --items 10000000")
  for b in "$here"/bin/deque_bench*; do
    [ -x "$b" ] && block+=("${b##*/} --benchmark_filter=owner_push_pop/spindle|owner_and_thief.*spindle --benchmark_min_time=0.2")
  done
  for ((r = 1; r <= executor; ++r)); do
    for line in "${block[@]}"; do
      read -r -a cmd <<<"$line"
      [ -x "$here/bin/${cmd[0]}" ] || continue
      timeout 120 "$run" "${cmd[@]}" 2>&1 | while IFS= read -r l; do
        echo "round=$r shape=executor prog=${cmd[0]}:${cmd[1]} | $l"
      done >>"$raw"
    done
  done
  echo "measure: executor block done after $((SECONDS - start)) s" | tee -a "$work/progress.txt"
fi

cp "$here/BUILD-INFO" "$work/" 2>/dev/null
tar czf "$out" -C "$work" .
echo "measure: wrote $out ($((SECONDS - start)) s)"
