# Internal build settings for spindle's own tests, benchmarks and examples.
# Users of the library never see these: they link spindle::spindle only.

add_library(spindle_internal INTERFACE)
target_link_libraries(spindle_internal INTERFACE spindle::spindle)
target_compile_options(spindle_internal INTERFACE -Wall -Wextra -Wpedantic -Werror)
if(SPINDLE_ASSERTIONS)
  target_compile_definitions(spindle_internal INTERFACE SPINDLE_ENABLE_ASSERTS=1)
endif()

# g++ collects the garbage of its heap each time the heap grows past --param ggc-min-heapsize
# (at most 128 MiB by default), and a test's translation unit allocates 300 MiB to 1.4 GiB: the
# collections take about 5% of its compile time (-ftime-report). A larger threshold collects less
# often, at the cost of memory (up to about 1.2 GiB per compiler process instead of 0.9), and
# changes nothing in the code generated. The checked presets set 512; 0 keeps g++'s default.
set(SPINDLE_GCC_GC_HEAP_MB 0 CACHE STRING
    "g++ only: --param ggc-min-heapsize in MiB for the tests, benchmarks and examples (0: default)")
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND SPINDLE_GCC_GC_HEAP_MB GREATER 0)
  math(EXPR spindle_gcc_gc_heap_kb "${SPINDLE_GCC_GC_HEAP_MB} * 1024")
  target_compile_options(spindle_internal INTERFACE
                         --param=ggc-min-heapsize=${spindle_gcc_gc_heap_kb})
endif()

if(SPINDLE_SANITIZER STREQUAL "thread")
  target_compile_options(spindle_internal INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(spindle_internal INTERFACE -fsanitize=thread)
elseif(SPINDLE_SANITIZER STREQUAL "address")
  target_compile_options(spindle_internal INTERFACE
    -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  target_link_options(spindle_internal INTERFACE -fsanitize=address,undefined)
elseif(NOT SPINDLE_SANITIZER STREQUAL "")
  message(FATAL_ERROR "SPINDLE_SANITIZER must be '', 'thread' or 'address', not '${SPINDLE_SANITIZER}'")
endif()
