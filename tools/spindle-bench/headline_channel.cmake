# Headline channel scenarios, run by `cmake --workflow --preset bench` (label "headline").
# The label "bench" keeps them out of the test presets, which exclude it: they measure, and
# are meant for a quiet machine. Each prints its Markdown table and fails if a message was
# lost or duplicated.
add_test(NAME headline_channel_seed
         COMMAND spindle-bench channel --scenario seed --runs 7)
add_test(NAME headline_channel_2p2c
         COMMAND spindle-bench channel --scenario 2p2c --runs 7)
add_test(NAME headline_channel_spsc
         COMMAND spindle-bench channel --scenario spsc --runs 5)
add_test(NAME headline_channel_pingpong
         COMMAND spindle-bench channel --scenario pingpong --runs 7)
add_test(NAME headline_channel_idle
         COMMAND spindle-bench channel-idle --runs 3)
# The seed scenario is the headline; the others are labelled "bench" only and run with
# `ctest --test-dir build/bench -L bench -V`.
set_tests_properties(headline_channel_seed PROPERTIES LABELS "headline;bench")
set_tests_properties(headline_channel_2p2c headline_channel_spsc headline_channel_pingpong
                     headline_channel_idle PROPERTIES LABELS "bench")

# Smoke runs with small counts in the test presets (label "smoke", not "bench"): they check
# that every implementation delivers every message exactly once, under ASan+UBSan too.
add_test(NAME spindle_bench_channel_smoke
         COMMAND spindle-bench channel --scenario seed --messages 20000 --runs 1)
add_test(NAME spindle_bench_channel_smoke_spsc
         COMMAND spindle-bench channel --scenario spsc --messages 50000 --capacity 16 --runs 1)
add_test(NAME spindle_bench_channel_smoke_rendezvous
         COMMAND spindle-bench channel --scenario 2p2c --messages 5000 --capacity 0 --runs 1)
add_test(NAME spindle_bench_channel_smoke_pingpong
         COMMAND spindle-bench channel --scenario pingpong --messages 1000 --runs 1)
add_test(NAME spindle_bench_channel_smoke_idle
         COMMAND spindle-bench channel-idle --idle-ms 20 --runs 1)
set_tests_properties(spindle_bench_channel_smoke spindle_bench_channel_smoke_spsc
                     spindle_bench_channel_smoke_rendezvous
                     spindle_bench_channel_smoke_pingpong spindle_bench_channel_smoke_idle
                     PROPERTIES LABELS "smoke")
