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

# The sync anchors' smoke run (label "smoke"), where this build makes them: one short run of
# every scenario in which each tokio::sync and Go row must have a figure and no run may fail
# (check_anchor_rows.cmake).
set(spindle_bench_sync_anchor_rows "")
if(spindle_bench_anchor_rust)
  list(APPEND spindle_bench_sync_anchor_rows "tokio::sync::Mutex" "tokio::sync::Mutex, 2 tasks"
       "tokio::sync::Semaphore, 8 tasks" "tokio::sync::Notify, tasks"
       "tokio::sync::broadcast, 4 receivers")
endif()
if(spindle_bench_anchor_go)
  list(APPEND spindle_bench_sync_anchor_rows "Go sync.Mutex" "Go sync.Mutex, 2 goroutines"
       "Go chan struct{} of 4, 8 goroutines" "Go chan struct{} of 1, goroutines"
       "Go chan per receiver, 4 receivers")
endif()
if(spindle_bench_sync_anchor_rows)
  add_test(NAME spindle_bench_sync_anchors_smoke
           COMMAND ${CMAKE_COMMAND} -DBENCH=$<TARGET_FILE:spindle-bench>
                   "-DARGS=sync;--runs;1;--ops;20000;--lock-ops;5000;--contenders;2;--sem-ops;5000;--rounds;2000;--msgs;5000;--receivers;4"
                   "-DROWS=${spindle_bench_sync_anchor_rows}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/check_anchor_rows.cmake)
  set_tests_properties(spindle_bench_sync_anchors_smoke PROPERTIES LABELS "smoke" TIMEOUT 120)
endif()
