# spindle's version is written once, in include/spindle/version.hpp, where code can test it at
# compile time; project() reads it from there. Included before project(), so it may use nothing
# that project() sets up.

# Sets `out` in the caller's scope to "major.minor.patch", read from the three
# `inline constexpr int version_<part> = N;` lines of `header`; stops the configure with a
# message naming the header when one of them is missing.
function(spindle_read_version header out)
  file(STRINGS ${header} lines REGEX "inline constexpr int version_(major|minor|patch) = [0-9]+;")
  set(parts "")
  foreach(part major minor patch)
    set(value "")
    foreach(line IN LISTS lines)
      if(line MATCHES "version_${part} = ([0-9]+);")
        set(value ${CMAKE_MATCH_1})
      endif()
    endforeach()
    if(value STREQUAL "")
      message(FATAL_ERROR "spindle: ${header} must define "
                          "`inline constexpr int version_${part} = N;` (CMake reads the "
                          "project version from it)")
    endif()
    list(APPEND parts ${value})
  endforeach()
  list(JOIN parts "." version)
  # A new version in the header re-runs the configure, as an edit of CMakeLists.txt would.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${header})
  set(${out} ${version} PARENT_SCOPE)
endfunction()
