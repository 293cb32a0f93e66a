# Checks spindle's inline ABI namespace: builds roundtrip.cpp without and with
# SPINDLE_MODEL_CHECK (at -O0, so every inline function it uses is emitted as a weak symbol),
# and fails when
#   - the two objects define a common spindle symbol: the linker would keep one of the two
#     definitions and run it for both builds (an ODR violation nothing reports);
#   - either object defines no `spindle::...sender<int>` symbol (the check would prove nothing);
#   - the program linking both, with main.cpp, does not run each build's own code;
#   - a header under include/spindle (but model/) opens `namespace spindle` without the inline
#     namespace, which would put its names back where both builds share them.
# Inputs: CXX, NM, INCLUDE (the include directory), SOURCE_DIR (tests/abi), WORK_DIR.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

include(${CMAKE_CURRENT_LIST_DIR}/../support/run_checked.cmake)

# Every header opens spindle's namespace through the inline one.
file(GLOB_RECURSE headers ${INCLUDE}/spindle/*.hpp)
set(outside "")
foreach(header IN LISTS headers)
  if(header MATCHES "/spindle/model/")
    continue()
  endif()
  file(STRINGS ${header} openings REGEX "^namespace spindle(::[A-Za-z_:]+)? {")
  foreach(line IN LISTS openings)
    if(NOT line MATCHES "^namespace spindle::model")
      list(APPEND outside "${header}: ${line}")
    endif()
  endforeach()
endforeach()
if(outside)
  list(JOIN outside "\n  " text)
  message(FATAL_ERROR "open `namespace spindle::inline SPINDLE_ABI_NAMESPACE` instead:\n  ${text}")
endif()

set(flags -std=c++20 -O0 -I${INCLUDE})
run(${CXX} ${flags} -c ${SOURCE_DIR}/roundtrip.cpp -o ${WORK_DIR}/plain.o)
run(${CXX} ${flags} -DSPINDLE_MODEL_CHECK=1 -c ${SOURCE_DIR}/roundtrip.cpp -o ${WORK_DIR}/model.o)
run(${CXX} -std=c++20 ${SOURCE_DIR}/main.cpp ${WORK_DIR}/plain.o ${WORK_DIR}/model.o -pthread
    -o ${WORK_DIR}/abi_roundtrip)
run(${WORK_DIR}/abi_roundtrip)

# The external symbols an object defines in namespace spindle (mangled "7spindle").
function(spindle_symbols object out)
  execute_process(COMMAND ${NM} --defined-only ${object} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE text ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} ${object} failed: ${err}")
  endif()
  string(REPLACE "\n" ";" lines "${text}")
  set(symbols "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^[0-9a-fA-F]* +[BDRTVWu] +([^ ]*7spindle[^ ]*)$")
      list(APPEND symbols ${CMAKE_MATCH_1})
    endif()
  endforeach()
  set(${out} ${symbols} PARENT_SCOPE)
endfunction()

spindle_symbols(${WORK_DIR}/plain.o plain)
spindle_symbols(${WORK_DIR}/model.o model)
foreach(build plain model)
  list(FILTER ${build} INCLUDE REGEX "6senderIiE")
  if(NOT ${build})
    message(FATAL_ERROR "the ${build} build defines no spindle sender<int> symbol: "
                        "roundtrip.cpp no longer exercises what this test compares")
  endif()
endforeach()
spindle_symbols(${WORK_DIR}/plain.o plain)
spindle_symbols(${WORK_DIR}/model.o model)
set(common "")
foreach(symbol IN LISTS plain)
  if(symbol IN_LIST model)
    list(APPEND common ${symbol})
  endif()
endforeach()
if(common)
  list(LENGTH common n)
  list(JOIN common "\n  " text)
  message(FATAL_ERROR "${n} spindle symbols are defined by both the SPINDLE_MODEL_CHECK build "
                      "and the plain one; the linker keeps one definition for both:\n  ${text}")
endif()
list(LENGTH plain n_plain)
list(LENGTH model n_model)
message(STATUS "no common symbol: ${n_plain} spindle symbols in the plain build, "
               "${n_model} in the model build")
