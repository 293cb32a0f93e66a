# Installs spindle from SOURCE_DIR into a scratch prefix under WORK_DIR, then configures, builds
# and runs tests/install/consumer once per way a project gets spindle:
#   find_package      find_package(spindle CONFIG REQUIRED) against the prefix;
#   add_subdirectory  add_subdirectory on the source tree;
#   FetchContent      FetchContent_Declare(spindle SOURCE_DIR <source tree>), no network;
#   pkg-config        the compiler alone on consumer/pkgconfig_main.cpp, with the flags of
#                     `pkg-config --cflags --libs spindle` from the prefix's share/pkgconfig
#                     (skipped, with a message, where pkg-config is not installed).
# The model checker is an install component of its own: the default install must leave out
# spindle/model/ and spindle::model (find_package(spindle) works without them, and
# find_package(spindle COMPONENTS model) fails, saying how to install them); after
# `cmake --install --component model` the consumer builds and runs against spindle::model.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_checked.cmake)

# consume(<mode> <model ON|OFF>): configures, builds and runs the consumer.
function(consume mode model)
  set(dir ${WORK_DIR}/${mode}-model-${model})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${dir}
      -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix}
      -DSPINDLE_CONSUME=${mode} -DSPINDLE_SOURCE_DIR=${SOURCE_DIR}
      -DSPINDLE_CONSUMER_MODEL=${model})
  run(${CMAKE_COMMAND} --build ${dir})
  run(${dir}/consumer)
  if(model)
    run(${dir}/consumer_model)
  endif()
  message(STATUS "consumer via ${mode} (spindle::model: ${model}): built and ran")
endfunction()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/lib -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_INSTALL_PREFIX=${prefix}
    -DSPINDLE_BUILD_TESTS=OFF -DSPINDLE_BUILD_BENCH=OFF -DSPINDLE_BUILD_EXAMPLES=OFF)

# The default install: the library alone.
run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib)
if(NOT EXISTS ${prefix}/include/spindle/spindle.hpp)
  message(FATAL_ERROR "the default install has no include/spindle/spindle.hpp")
endif()
file(GLOB_RECURSE leaked RELATIVE ${prefix} ${prefix}/spindle-model-targets*.cmake)
if(EXISTS ${prefix}/include/spindle/model OR leaked)
  message(FATAL_ERROR "the default install has the model checker: include/spindle/model ${leaked}")
endif()
consume(find_package OFF)

# pkg-config: spindle.pc of the default install, with its version, builds a consumer.
find_program(pkg_config NAMES pkg-config pkgconf)
if(pkg_config)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/share/pkgconfig)
  unset(ENV{PKG_CONFIG_SYSROOT_DIR})
  execute_process(COMMAND ${pkg_config} --modversion spindle RESULT_VARIABLE rc
                  OUTPUT_VARIABLE pc_version ERROR_VARIABLE pc_version
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  file(GLOB_RECURSE config_version ${prefix}/spindleConfigVersion.cmake)
  file(STRINGS "${config_version}" package_version REGEX "^set\\(PACKAGE_VERSION ")
  if(NOT rc EQUAL 0 OR NOT package_version MATCHES "\"${pc_version}\"")
    message(FATAL_ERROR "pkg-config --modversion spindle: '${pc_version}' (${rc}), "
                        "the CMake package says ${package_version}")
  endif()
  execute_process(COMMAND ${pkg_config} --cflags --libs spindle RESULT_VARIABLE rc
                  OUTPUT_VARIABLE pc_flags ERROR_VARIABLE pc_flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs spindle failed (${rc}): ${pc_flags}")
  endif()
  string(FIND "${pc_flags}" "-I${prefix}/include" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "pkg-config --cflags spindle does not name ${prefix}/include: ${pc_flags}")
  endif()
  set(pc_flags_text "${pc_flags}")
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  file(MAKE_DIRECTORY ${WORK_DIR}/pkg-config)
  run(${CXX} -std=c++20 ${SOURCE_DIR}/tests/install/consumer/pkgconfig_main.cpp ${pc_flags}
      -o ${WORK_DIR}/pkg-config/consumer)
  run(${WORK_DIR}/pkg-config/consumer)
  message(STATUS "consumer via pkg-config (${pc_flags_text}): built and ran")
else()
  message(STATUS "consumer via pkg-config: skipped, pkg-config is not installed")
endif()

execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer
          -B ${WORK_DIR}/find_package-model-missing -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX}
          -DCMAKE_PREFIX_PATH=${prefix} -DSPINDLE_CONSUME=find_package -DSPINDLE_CONSUMER_MODEL=ON
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX REPLACE "[ \t\r\n]+" " " out_flat "${out}") # CMake wraps the message
if(rc EQUAL 0 OR NOT out_flat MATCHES "--component model")
  message(FATAL_ERROR "find_package(spindle COMPONENTS model) without the component installed "
                      "did not fail saying how to install it (${rc}):\n${out}")
endif()
message(STATUS "find_package(spindle COMPONENTS model) without the component: fails as it should")

# The component `model`, added to the same prefix.
run(${CMAKE_COMMAND} --install ${WORK_DIR}/lib --component model)
foreach(header scheduler.hpp track_allocations.hpp atomic.hpp)
  if(NOT EXISTS ${prefix}/include/spindle/model/${header})
    message(FATAL_ERROR "the component model has no include/spindle/model/${header}")
  endif()
endforeach()

foreach(mode find_package add_subdirectory FetchContent)
  consume(${mode} ON)
endforeach()
