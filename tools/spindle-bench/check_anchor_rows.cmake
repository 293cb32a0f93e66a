# SPDX-License-Identifier: BSL-1.0
# The anchors' smoke test (headline_sweep.cmake): runs spindle-bench with ARGS and checks that
# it succeeded, that no run failed (no "FAILED" in its output: an anchor run that failed is
# counted, not fatal, in spindle-bench), and that each row named in ROWS has a figure: a
# Markdown table line "| ROW | <digit>...". Fails otherwise, with the output.
#
#   cmake -DBENCH=spindle-bench "-DARGS=sweep;--scenario;channel" "-DROWS=Go channel;..."
#         -P check_anchor_rows.cmake

foreach(var BENCH ARGS ROWS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_anchor_rows.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(COMMAND ${BENCH} ${ARGS} RESULT_VARIABLE result OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
message("${out}${err}")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "spindle-bench ${ARGS}: exit status ${result}")
endif()
if(out MATCHES "FAILED" OR err MATCHES "FAILED")
  message(FATAL_ERROR "spindle-bench ${ARGS}: a run failed")
endif()
foreach(name IN LISTS ROWS)
  string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" pattern "${name}")
  if(NOT out MATCHES "\n\\| ${pattern} \\| [0-9]")
    message(FATAL_ERROR "spindle-bench ${ARGS}: no figure in a row '${name}'")
  endif()
endforeach()
