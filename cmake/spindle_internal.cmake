# Internal build settings for spindle's own tests, benchmarks and examples.
# Users of the library never see these: they link spindle::spindle only.

add_library(spindle_internal INTERFACE)
target_link_libraries(spindle_internal INTERFACE spindle::spindle)
target_compile_options(spindle_internal INTERFACE -Wall -Wextra -Wpedantic -Werror)
if(SPINDLE_ASSERTIONS)
  target_compile_definitions(spindle_internal INTERFACE SPINDLE_ENABLE_ASSERTS=1)
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
