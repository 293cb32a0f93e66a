# Headline sync-primitive scenarios, run by `cmake --workflow --preset bench` (label
# "headline"): spindle::mutex uncontended and contended by 2-16 threads and coroutines,
# spindle::semaphore and spindle::notify, against std::mutex, std::counting_semaphore and
# std::binary_semaphore, and against tokio::sync and Go where the anchors are built
# (bench/anchors). Each run checks its critical sections and fails if one was lost.
add_test(NAME headline_sync COMMAND spindle-bench sync --runs 5)
set_tests_properties(headline_sync PROPERTIES LABELS "headline;bench" TIMEOUT 1200)

# A smoke run with small sizes in the test presets (label "smoke"), under the sanitizers too.
add_test(NAME spindle_bench_sync_smoke
         COMMAND spindle-bench sync --runs 1 --ops 100000 --lock-ops 20000 --contenders 2,4
                 --sem-ops 20000 --rounds 5000 --msgs 20000 --receivers 1,4)
set_tests_properties(spindle_bench_sync_smoke PROPERTIES LABELS "smoke")
