# Cross-compiling spindle for 64-bit ARM Linux with Debian's cross toolchain
# (g++-aarch64-linux-gnu), and running what it builds under qemu-user (qemu-aarch64): the
# `arm64` presets in CMakePresets.json. qemu runs the code paths of the target (its atomics,
# fences and the YIELD spin hint) but not its weak memory: it executes guest memory accesses
# in the host's order, so a missing barrier does not show here (the model checker's job).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# The target's headers and libraries only; programs (the host's tools) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# ctest runs every test executable through qemu, with the target's loader and libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
