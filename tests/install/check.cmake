# Installs spindle from SOURCE_DIR into a scratch prefix under WORK_DIR, then configures, builds
# and runs tests/install/consumer three times, once per way a project gets spindle:
#   find_package      find_package(spindle CONFIG REQUIRED) against the prefix;
#   add_subdirectory  add_subdirectory on the source tree;
#   FetchContent      FetchContent_Declare(spindle SOURCE_DIR <source tree>), no network.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_checked.cmake)

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_INSTALL_PREFIX=${prefix}
    -DSPINDLE_BUILD_TESTS=OFF -DSPINDLE_BUILD_BENCH=OFF -DSPINDLE_BUILD_EXAMPLES=OFF)
run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib)

foreach(mode find_package add_subdirectory FetchContent)
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/${mode}
      -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix}
      -DSPINDLE_CONSUME=${mode} -DSPINDLE_SOURCE_DIR=${SOURCE_DIR})
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/${mode})
  run(${WORK_DIR}/${mode}/consumer)
  run(${WORK_DIR}/${mode}/consumer_model)
  message(STATUS "consumer via ${mode}: built and ran")
endforeach()
