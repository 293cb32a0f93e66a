#!/usr/bin/env bash
# Scaling curves on a bigger machine, in about ten minutes (sized for 16 CPUs):
#
#   bench/scaling.sh [OUT_DIR] [BUILD_DIR]
#
# Builds spindle-bench in Release (the bench preset, into BUILD_DIR, default build/scaling in
# the source tree), then sweeps every scenario (channel, fib, for, spawn, deque; see
# tools/spindle-bench/scenarios_sweep.cpp) at 1, 2, 4, ... threads up to the number of CPUs and
# twice it, spindle and every peer found, interleaved. OUT_DIR (default
# ./scaling-<host>-<date>) ends up holding, per scenario, the JSON (tools/plot/README.md), the
# Markdown table and, when a Python with matplotlib is found, the PNG and SVG figures; then the
# send-to-receive latency of every channel implementation (spindle-bench latency, about a
# minute), as a table and a CDF.
#
# Time box: each scenario has a budget it divides among its thread counts (--budget-s: a thread
# count stops after the run that passes its share, keeping at least one), and an
# implementation whose single run takes more than 10 s (a spinning queue on more threads than
# CPUs) is not run at that thread count or above (--max-run-s). The budgets add up to about
# 6 minutes; the build takes one to two. Set SCALING_THREADS=1,2,4,... to choose the thread
# counts. Prints the elapsed time at the end.
set -euo pipefail

started=$(date +%s)
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
host=$(hostname -s 2>/dev/null || hostname)
out=${1:-./scaling-${host}-$(date +%Y%m%d-%H%M)}
build=${2:-${src}/build/scaling}
mkdir -p "${out}"
out=$(cd "${out}" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)

echo "== configure and build (Release) in ${build}"
(cd "${src}" && cmake --preset bench -B "${build}" >"${out}/configure.log")
cmake --build "${build}" --target spindle-bench -j "${jobs}" >"${out}/build.log"
bench=${build}/tools/spindle-bench/spindle-bench
echo "   built in $(($(date +%s) - started)) s"

threads=()
if [[ -n "${SCALING_THREADS:-}" ]]; then
  threads=(--threads "${SCALING_THREADS}")
fi

# scenario, budget in seconds, sizes
sweeps=(
  "channel 120 --messages 1000000"
  "fib 75 --fib 28"
  "for 45 --elements 20000000"
  "spawn 60 --tasks 200000"
  "deque 60 --items 1000000"
)
for entry in "${sweeps[@]}"; do
  read -r scenario budget sizes <<<"${entry}"
  echo "== sweep ${scenario} (budget ${budget} s)"
  # shellcheck disable=SC2086 # the sizes are separate words
  "${bench}" sweep --scenario "${scenario}" ${threads[@]+"${threads[@]}"} --runs 5 \
    --budget-s "${budget}" --max-run-s 10 ${sizes} --out "${out}"
done

echo "== latency (the seed shape at half the slowest saturated rate)"
"${bench}" latency --runs 3 --duration-ms 1000 --out "${out}" >"${out}/latency-channel.md"

python=""
for candidate in python3 /usr/bin/python3; do
  if command -v "${candidate}" >/dev/null 2>&1 &&
    "${candidate}" -c "import matplotlib" >/dev/null 2>&1; then
    python=${candidate}
    break
  fi
done
if [[ -n "${python}" ]]; then
  echo "== plots"
  "${python}" "${src}/tools/plot/plot.py" "${out}"
else
  echo "== no plots: no Python 3 with matplotlib (apt-get install python3-matplotlib), then:"
  echo "   python3 ${src}/tools/plot/plot.py ${out}"
fi

elapsed=$(($(date +%s) - started))
echo "== done in $((elapsed / 60)) min $((elapsed % 60)) s: JSON, Markdown and figures in ${out}"
