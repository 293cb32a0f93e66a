# Compiles SOURCE with CXX and succeeds only when compilation fails with the diagnostic named
# on the snippet's first line: "// expect-error: <regular expression>".
file(STRINGS ${SOURCE} first_line LIMIT_COUNT 1)
string(REGEX REPLACE "^// expect-error: *" "" expected "${first_line}")
execute_process(
  COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} ${SOURCE}
  RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must be rejected")
endif()
if(NOT "${out}${err}" MATCHES "${expected}")
  message(FATAL_ERROR "${SOURCE} failed to compile without the expected diagnostic "
                      "'${expected}':\n${out}${err}")
endif()
message(STATUS "rejected as expected: ${expected}")
