# Headline scaling sweep, run last by `cmake --workflow --preset bench` (label "headline"): every
# sweep scenario (channel, fib, for, spawn, deque) with small sizes (--quick) at 1, 2, 4, ... up
# to twice the CPUs, spindle and its peers interleaved, every run checked; about a minute on 2
# CPUs (--budget-s and --max-run-s bound it on a busy machine). It writes the JSON and
# Markdown into <build>/bench-results, and headline_plots then draws them there (PNG and SVG,
# tools/plot/plot.py) and prints the folder; without a Python with matplotlib it says how to
# get one instead. The labels "bench" keep both out of the test presets.
set(spindle_results_dir ${CMAKE_BINARY_DIR}/bench-results)

# After every headline test defined so far, so that the sweep measures a machine the others
# have left, and the plots include any result file they wrote into the folder.
get_directory_property(spindle_tests_so_far TESTS)
set(spindle_headline_before "")
foreach(t IN LISTS spindle_tests_so_far)
  get_test_property(${t} LABELS t_labels)
  if("headline" IN_LIST t_labels)
    list(APPEND spindle_headline_before ${t})
  endif()
endforeach()

add_test(NAME headline_sweep
         COMMAND spindle-bench sweep --scenario all --quick --runs 3 --budget-s 60
                 --max-run-s 5 --out ${spindle_results_dir})
set_tests_properties(headline_sweep PROPERTIES LABELS "headline;bench" TIMEOUT 600
                     DEPENDS "${spindle_headline_before}"
                     FIXTURES_SETUP spindle_sweep_results)

if(spindle_plot_python)
  add_test(NAME headline_plots
           COMMAND ${spindle_plot_python} ${spindle_plot_script} ${spindle_results_dir})
else()
  add_test(NAME headline_plots
           COMMAND ${CMAKE_COMMAND} -E echo
                   "spindle: no plots: no Python 3 with matplotlib was found at configure time. \
Install it (apt-get install python3-matplotlib), re-configure, and re-run; the tables are above, \
and the JSON is in ${spindle_results_dir}.")
endif()
set_tests_properties(headline_plots PROPERTIES LABELS "headline;bench" TIMEOUT 300
                     DEPENDS "headline_sweep;${spindle_headline_before}"
                     FIXTURES_REQUIRED spindle_sweep_results)

# Smoke run in the test presets (label "smoke"): two thread counts, tiny sizes, one run; every
# implementation still checks its result.
add_test(NAME spindle_bench_sweep_smoke
         COMMAND spindle-bench sweep --scenario all --threads 1,3 --runs 1 --messages 20000
                 --fib 15 --tasks 2000 --elements 100000 --items 20000)
set_tests_properties(spindle_bench_sweep_smoke PROPERTIES LABELS "smoke")

# The anchors' smoke run (label "smoke"), where this build makes them: one short sweep in which
# each library of bench/anchors has a row, checked by check_anchor_rows.cmake to have a figure
# and no failed run (spindle-bench counts a failed anchor run instead of stopping). Seconds: a
# dozen anchor processes at one thread count.
set(spindle_bench_anchor_rows "")
if(spindle_bench_anchor_rust)
  list(APPEND spindle_bench_anchor_rows "crossbeam-channel" "crossbeam-deque" "rayon spawn"
       "tokio spawn")
endif()
if(spindle_bench_anchor_go)
  list(APPEND spindle_bench_anchor_rows "Go channel" "Go goroutines")
endif()
if(spindle_bench_anchor_rows)
  add_test(NAME spindle_bench_anchors_smoke
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:spindle-bench>
                   "-DARGS=sweep;--scenario;channel,deque,spawn;--threads;2;--runs;1;--messages;20000;--items;20000;--tasks;2000"
                   "-DROWS=${spindle_bench_anchor_rows}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/check_anchor_rows.cmake)
  set_tests_properties(spindle_bench_anchors_smoke PROPERTIES LABELS "smoke" TIMEOUT 120)
endif()
