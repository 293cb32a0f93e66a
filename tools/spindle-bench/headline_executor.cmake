# Headline executor scenarios, run by `cmake --workflow --preset bench` (label "headline"):
# fib(30) with join / task_group / cutoff vs oneTBB and OpenMP and serial, 1,000,000 empty
# tasks from one outside thread, parallel_for over 10,000,000 elements, and idle CPU. Each run
# checks its result (fib value, task counts, element checksum) and fails if it is wrong.
add_test(NAME headline_executor
         COMMAND spindle-bench executor --runs 5)
set_tests_properties(headline_executor PROPERTIES LABELS "headline;bench" TIMEOUT 300)

# Smoke run with small sizes in the test presets (label "smoke"): every implementation still
# checks its result, under the sanitizers too.
add_test(NAME spindle_bench_executor_smoke
         COMMAND spindle-bench executor --runs 1 --quick --fib 18 --tasks 20000
                 --elements 100000)
set_tests_properties(spindle_bench_executor_smoke PROPERTIES LABELS "smoke")
