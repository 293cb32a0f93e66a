# The plots of the benchmark results (tools/plot/plot.py, README.md beside it), included by
# tools/spindle-bench/CMakeLists.txt.
#
# SPINDLE_PLOT_PYTHON: a Python 3 interpreter that can import matplotlib. Set it to choose one;
# otherwise the first of `python3` on PATH and /usr/bin/python3 that imports matplotlib is
# taken, at each configure (so installing python3-matplotlib and re-configuring is enough).
# Without one, the plots and their test are skipped, with a message saying how to get them.

set(SPINDLE_PLOT_PYTHON "" CACHE FILEPATH
    "Python 3 with matplotlib for tools/plot/plot.py (empty: look for one)")
set(spindle_plot_script ${PROJECT_SOURCE_DIR}/tools/plot/plot.py)
set(spindle_plot_python "")
if(SPINDLE_PLOT_PYTHON)
  set(spindle_plot_candidates ${SPINDLE_PLOT_PYTHON})
else()
  find_program(spindle_python3_on_path NAMES python3 NO_CACHE)
  set(spindle_plot_candidates ${spindle_python3_on_path} /usr/bin/python3)
endif()
foreach(candidate IN LISTS spindle_plot_candidates)
  if(candidate AND EXISTS ${candidate})
    execute_process(COMMAND ${candidate} -c "import matplotlib"
                    RESULT_VARIABLE spindle_plot_import OUTPUT_QUIET ERROR_QUIET)
    if(spindle_plot_import EQUAL 0)
      set(spindle_plot_python ${candidate})
      break()
    endif()
  endif()
endforeach()
if(spindle_plot_python)
  message(STATUS "spindle: plots: ${spindle_plot_python} (with matplotlib)")
else()
  message(STATUS "spindle: plots: no Python 3 with matplotlib found (tried: "
                 "${spindle_plot_candidates}); the plots and their test are skipped. Install "
                 "it with `apt-get install python3-matplotlib` and re-configure, or set "
                 "SPINDLE_PLOT_PYTHON.")
endif()

# Smoke test (label "smoke", in the test presets): plot.py renders the small checked-in sweep
# and latency files, and check_png.cmake checks that each PNG it names is a real PNG of a
# plausible size.
if(spindle_plot_python)
  set(spindle_plot_smoke_dir ${CMAKE_CURRENT_BINARY_DIR}/plot-smoke)
  add_test(NAME spindle_plot_smoke
           COMMAND ${CMAKE_COMMAND}
                   -DPYTHON=${spindle_plot_python}
                   -DSCRIPT=${spindle_plot_script}
                   -DINPUT=${PROJECT_SOURCE_DIR}/tools/plot/testdata
                   -DOUT=${spindle_plot_smoke_dir}
                   "-DEXPECT=sweep-channel.png;sweep-channel-ratio.png;latency-channel.png"
                   -P ${PROJECT_SOURCE_DIR}/tools/plot/check_png.cmake)
  set_tests_properties(spindle_plot_smoke PROPERTIES LABELS "smoke")
endif()
