#!/usr/bin/env bash
# Regenerates the figures of docs/performance.md ("Scaling curves") on this machine:
#
#   bench/performance-page.sh [BUILD_DIR]
#
# Runs bench/scaling.sh (Release build, every sweep scenario up to twice the CPUs and the
# latency scenario, spindle and its peers interleaved, and the plots), then copies the JSON,
# the Markdown tables and the PNG figures into docs/perf/, replacing what was there. Run it on a
# quiet machine: about ten minutes. The page's prose (dates, commit, what the curves say) is
# edited by hand afterwards.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-${src}/build/scaling}
work=$(mktemp -d)
trap 'rm -rf "${work}"' EXIT

"${src}/bench/scaling.sh" "${work}" "${build}"
if ! ls "${work}"/*.png >/dev/null 2>&1; then
  echo "performance-page: no figures: needs a Python 3 with matplotlib" \
    "(apt-get install python3-matplotlib)" >&2
  exit 1
fi

dest=${src}/docs/perf
rm -rf "${dest}"
mkdir -p "${dest}"
cp "${work}"/*.json "${work}"/*.md "${work}"/*.png "${dest}/"
echo "== docs/perf: $(ls "${dest}" | wc -l) files"
