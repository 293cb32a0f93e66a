# run(<command> [args...]): runs a command from a cmake -P check script and stops the script
# with the command's output when it fails. Shared by tests/install/check.cmake and
# tests/abi/check.cmake.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
