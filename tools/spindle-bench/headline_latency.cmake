# Headline latency scenario, run by `cmake --workflow --preset bench` (label "headline"):
# send-to-receive latency (p50, p90, p99, p99.9, p99.99, max) of spindle and every channel peer
# at the same offered load, half the slowest implementation's saturated rate, measured from
# each message's scheduled send time. About 3 s per implementation (3 runs of 1 s, plus the
# calibration), under a minute in all. Each run fails if a message was lost or duplicated.
# It also writes <build>/bench-results/latency-channel.json, which headline_plots draws as a CDF.
add_test(NAME headline_latency COMMAND spindle-bench latency --runs 3 --duration-ms 1000
                                       --out ${CMAKE_BINARY_DIR}/bench-results)
set_tests_properties(headline_latency PROPERTIES LABELS "headline;bench" TIMEOUT 300)

# Smoke run with tiny counts in the test presets (label "smoke"): every implementation is
# calibrated, paced and checked for exactly-once delivery, under the sanitizers too.
add_test(NAME spindle_bench_latency_smoke
         COMMAND spindle-bench latency --runs 1 --duration-ms 30 --calibrate-messages 2000
                 --calibrate-runs 1)
set_tests_properties(spindle_bench_latency_smoke PROPERTIES LABELS "smoke" TIMEOUT 60)
