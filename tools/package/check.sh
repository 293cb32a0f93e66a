#!/usr/bin/env bash
# Checks the Debian package (debian/) from end to end, as CI does (.ci/run):
#   1. builds libspindle-dev with `dpkg-buildpackage -us -uc -b` from a scratch copy of the
#      committed tree (`git archive HEAD`), or of SOURCE_DIR when one is given;
#   2. runs `lintian --fail-on error` on the .changes (the .deb and the .buildinfo);
#   3. unpacks the .deb into a scratch root (`dpkg-deb -x`), checks that the model checker is
#      not in it, and builds and runs two consumers against that root:
#      tests/install/consumer/pkgconfig_main.cpp with the compiler and the flags of
#      `pkg-config --cflags --libs spindle`, and tests/install/consumer with
#      find_package(spindle) and CMAKE_PREFIX_PATH=<root>/usr.
# Needs dpkg-dev, debhelper, lintian, pkg-config, cmake and a C++20 compiler (CXX, default
# g++). Leaves nothing behind; prints what failed, and the time it took.
# Usage: tools/package/check.sh [SOURCE_DIR]
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
source_dir=${1:-}
cxx=${CXX:-g++}
start=$SECONDS

for tool in dpkg-buildpackage dh lintian pkg-config cmake "$cxx"; do
  if ! command -v "$tool" >/dev/null; then
    echo "package-check: $tool is missing (apt-get install dpkg-dev debhelper lintian" \
         "pkg-config cmake g++)" >&2
    exit 1
  fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$work/spindle
mkdir "$src"
if [[ -n $source_dir ]]; then
  echo "package-check: packaging a copy of $source_dir"
  tar -C "$source_dir" --exclude=./.git --exclude=./build --exclude='./obj-*' -cf - . |
    tar -C "$src" -xf -
else
  echo "package-check: packaging git archive HEAD of $repo"
  git -C "$repo" archive HEAD | tar -C "$src" -xf -
fi

# 1. The package. dpkg-buildpackage writes the .deb, .buildinfo and .changes to $work.
if ! (cd "$src" && dpkg-buildpackage -us -uc -b) >"$work/build.log" 2>&1; then
  cat "$work/build.log"
  echo "package-check: dpkg-buildpackage failed" >&2
  exit 1
fi
debs=("$work"/libspindle-dev_*_all.deb)
changes=("$work"/spindle_*.changes)
echo "package-check: built ${debs[0]##*/}"

# 2. lintian: errors fail the check; warnings and the rest are printed.
lintian --fail-on error --info "${changes[0]}"
echo "package-check: lintian found no errors"

# 3. The package's contents, used from a scratch root.
root=$work/root
dpkg-deb -x "${debs[0]}" "$root"
for path in usr/include/spindle/spindle.hpp usr/lib/cmake/spindle/spindleConfig.cmake \
            usr/share/pkgconfig/spindle.pc usr/share/doc/libspindle-dev/copyright; do
  if [[ ! -f $root/$path ]]; then
    echo "package-check: the package has no /$path" >&2
    exit 1
  fi
done
if [[ -e $root/usr/include/spindle/model ]] ||
   find "$root" -name 'spindle-model-targets*.cmake' | grep -q .; then
  echo "package-check: the package has the model checker (not part of the default install)" >&2
  exit 1
fi

# pkg-config: the package's spindle.pc alone (PKG_CONFIG_LIBDIR hides the host's), its paths
# moved into the root by PKG_CONFIG_SYSROOT_DIR.
flags=$(PKG_CONFIG_SYSROOT_DIR="$root" PKG_CONFIG_PATH="$root/usr/share/pkgconfig" \
        PKG_CONFIG_LIBDIR="$root/usr/share/pkgconfig" pkg-config --cflags --libs spindle)
flags=${flags%"${flags##*[![:space:]]}"} # without pkg-config's trailing space
if [[ $flags != *"-I$root/usr/include"* ]]; then
  echo "package-check: pkg-config --cflags spindle does not name $root/usr/include: $flags" >&2
  exit 1
fi
# shellcheck disable=SC2086 # $flags is a list of flags
"$cxx" -std=c++20 "$src/tests/install/consumer/pkgconfig_main.cpp" $flags \
  -o "$work/pkgconfig_consumer"
"$work/pkgconfig_consumer"
echo "package-check: consumer via pkg-config ($flags): built and ran"

# CMake: find_package(spindle) must find the package in the root, not elsewhere.
generator=()
if command -v ninja >/dev/null; then
  generator=(-G Ninja)
fi
consumer=$work/cmake_consumer
cmake -S "$src/tests/install/consumer" -B "$consumer" "${generator[@]}" \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$root/usr" \
  -DSPINDLE_CONSUME=find_package -DSPINDLE_CONSUMER_MODEL=OFF >"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; echo "package-check: the CMake consumer did not configure" >&2; exit 1; }
found=$(sed -n 's/^spindle_DIR:PATH=//p' "$consumer/CMakeCache.txt")
if [[ $found != "$root/usr/lib/cmake/spindle" ]]; then
  echo "package-check: find_package(spindle) found $found, not the package's" >&2
  exit 1
fi
cmake --build "$consumer" >>"$work/consumer.log" 2>&1 ||
  { cat "$work/consumer.log"; echo "package-check: the CMake consumer did not build" >&2; exit 1; }
"$consumer/consumer"
echo "package-check: consumer via find_package(spindle): built and ran"

echo "package-check: passed in $((SECONDS - start)) s"
