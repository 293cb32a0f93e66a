# Optional peer libraries for the side-by-side benchmarks. Each one is compiled in when its
# Debian package is installed and skipped (with a message) when it is not:
#   libconcurrentqueue-dev  moodycamel::ConcurrentQueue / BlockingConcurrentQueue
#   libboost-dev            boost::lockfree::queue
#   libatomic-queue-dev     atomic_queue
#   libtbb-dev              oneTBB
#   libxenium-dev           xenium
#   OpenMP                  -fopenmp
# The target spindle_peers carries one SPINDLE_HAVE_<PEER>=1 definition per peer found, and the
# source root as an include directory: the benchmarks include what they share by its path,
# "bench/support/peers.hpp" (the peers' headers), "bench/support/executor_workloads.hpp", and the
# fork-join workload the tests check, "tests/support/fib.hpp".

add_library(spindle_peers INTERFACE)
target_include_directories(spindle_peers INTERFACE ${PROJECT_SOURCE_DIR})

find_path(SPINDLE_MOODYCAMEL_INCLUDE concurrentqueue/blockingconcurrentqueue.h)
if(SPINDLE_MOODYCAMEL_INCLUDE)
  target_include_directories(spindle_peers SYSTEM INTERFACE ${SPINDLE_MOODYCAMEL_INCLUDE})
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_MOODYCAMEL=1)
endif()

find_path(SPINDLE_BOOST_LOCKFREE_INCLUDE boost/lockfree/queue.hpp)
if(SPINDLE_BOOST_LOCKFREE_INCLUDE)
  target_include_directories(spindle_peers SYSTEM INTERFACE ${SPINDLE_BOOST_LOCKFREE_INCLUDE})
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_BOOST_LOCKFREE=1)
endif()

find_path(SPINDLE_ATOMIC_QUEUE_INCLUDE atomic_queue/atomic_queue.h)
if(SPINDLE_ATOMIC_QUEUE_INCLUDE)
  target_include_directories(spindle_peers SYSTEM INTERFACE ${SPINDLE_ATOMIC_QUEUE_INCLUDE})
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_ATOMIC_QUEUE=1)
endif()

find_path(SPINDLE_XENIUM_INCLUDE xenium/chase_work_stealing_deque.hpp)
if(SPINDLE_XENIUM_INCLUDE)
  target_include_directories(spindle_peers SYSTEM INTERFACE ${SPINDLE_XENIUM_INCLUDE})
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_XENIUM=1)
endif()

find_package(TBB CONFIG QUIET)
if(TBB_FOUND)
  target_link_libraries(spindle_peers INTERFACE TBB::tbb)
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_TBB=1)
endif()

find_package(OpenMP QUIET COMPONENTS CXX)
if(OpenMP_CXX_FOUND)
  target_link_libraries(spindle_peers INTERFACE OpenMP::OpenMP_CXX)
  target_compile_definitions(spindle_peers INTERFACE SPINDLE_HAVE_OPENMP=1)
endif()

foreach(peer MOODYCAMEL BOOST_LOCKFREE ATOMIC_QUEUE XENIUM)
  if(SPINDLE_${peer}_INCLUDE)
    message(STATUS "spindle: benchmark peer ${peer}: found")
  else()
    message(STATUS "spindle: benchmark peer ${peer}: not found, skipped")
  endif()
endforeach()
message(STATUS "spindle: benchmark peer TBB: ${TBB_FOUND}; OpenMP: ${OpenMP_CXX_FOUND}")
