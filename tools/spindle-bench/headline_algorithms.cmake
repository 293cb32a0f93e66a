# Headline algorithm scenarios, run by `cmake --workflow --preset bench` (label "headline"):
# parallel_scan of 10,000,000 int64, parallel_sort of 10,000,000 random uint64 and doubles,
# parallel_for with the static and the adaptive partitioner, a 2-D loop over 2000 x 2000
# doubles and parallel_reduce with a grain, each against oneTBB and the serial standard
# library. Each run checks its result (scan output, sort output, checksums, sums) and fails if
# it is wrong.
add_test(NAME headline_algorithms
         COMMAND spindle-bench algorithms --runs 5)
set_tests_properties(headline_algorithms PROPERTIES LABELS "headline;bench" TIMEOUT 300)

# Smoke run with small sizes in the test presets (label "smoke"): every implementation still
# checks its result, under the sanitizers too.
add_test(NAME spindle_bench_algorithms_smoke
         COMMAND spindle-bench algorithms --runs 1 --elements 100000 --sort 100000 --rows 200
                 --cols 300)
set_tests_properties(spindle_bench_algorithms_smoke PROPERTIES LABELS "smoke")
