# Headline coroutine and select scenarios, run by `cmake --workflow --preset bench` (label
# "headline"): C1 ping-pong of two coroutines, C2 fan-in of 10,000 coroutines, the memory of
# 100,000 suspended coroutines, and C3 select over 4 producers' channels from a thread and from
# a coroutine. Each run checks its sums and fails if they are wrong. The Go, tokio and
# crossbeam figures in the tables are anchors measured elsewhere, not run.
add_test(NAME headline_coro COMMAND spindle-bench coro --runs 5)
set_tests_properties(headline_coro PROPERTIES LABELS "headline;bench" TIMEOUT 600)
add_test(NAME headline_select COMMAND spindle-bench select --runs 5)
set_tests_properties(headline_select PROPERTIES LABELS "headline;bench" TIMEOUT 600)

# Smoke runs with small sizes in the test presets (label "smoke"), under the sanitizers too.
add_test(NAME spindle_bench_coro_smoke
         COMMAND spindle-bench coro --runs 1 --rounds 20000 --senders 1000 --per-sender 20
                 --suspended 10000)
set_tests_properties(spindle_bench_coro_smoke PROPERTIES LABELS "smoke")
add_test(NAME spindle_bench_select_smoke COMMAND spindle-bench select --runs 1 --messages 20000)
set_tests_properties(spindle_bench_select_smoke PROPERTIES LABELS "smoke")
