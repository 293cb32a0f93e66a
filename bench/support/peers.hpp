#pragma once
// The peer libraries' headers, for the benchmarks that run spindle side by side with them
// (bench/*_bench.cpp and tools/spindle-bench). Each is included only when
// cmake/spindle_peers.cmake found it and defined its SPINDLE_HAVE_<PEER> on spindle_peers, so
// a file includes this one instead of repeating which header each peer needs.

#if defined(SPINDLE_HAVE_MOODYCAMEL)
#include <concurrentqueue/blockingconcurrentqueue.h>
#endif
#if defined(SPINDLE_HAVE_BOOST_LOCKFREE)
#include <boost/lockfree/queue.hpp>
#endif
#if defined(SPINDLE_HAVE_ATOMIC_QUEUE)
#include <atomic_queue/atomic_queue.h>
#endif
#if defined(SPINDLE_HAVE_TBB)
#include <oneapi/tbb/blocked_range2d.h>
#include <oneapi/tbb/concurrent_queue.h>
#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/parallel_reduce.h>
#include <oneapi/tbb/parallel_scan.h>
#include <oneapi/tbb/parallel_sort.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>
#include <oneapi/tbb/task_group.h>
#endif
#if defined(SPINDLE_HAVE_XENIUM)
#include <xenium/chase_work_stealing_deque.hpp>
#include <xenium/detail/fixed_size_circular_array.hpp>
#include <xenium/vyukov_bounded_queue.hpp>
#endif
#if defined(SPINDLE_HAVE_OPENMP)
#include <omp.h>
#endif
