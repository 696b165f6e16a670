# Checks that stages keep no state they set in a const method: a `mutable`
# member in stages/, kernels/ or the Python bindings (python/src/) is either
# a synchronisation primitive (a mutex, a condition variable, an atomic: what
# const readers lock or read) or a mistake. What a stage decides from its
# input belongs in Stage::prepare(), not in output_spec() const.
# Run: cmake -DSOURCE_DIR=... -P check_stage_state.cmake
cmake_minimum_required(VERSION 3.20)

set(problems "")
file(GLOB_RECURSE files ${SOURCE_DIR}/stages/*.hpp ${SOURCE_DIR}/stages/*.cpp
     ${SOURCE_DIR}/kernels/*.hpp ${SOURCE_DIR}/kernels/*.cpp
     ${SOURCE_DIR}/python/src/*.hpp ${SOURCE_DIR}/python/src/*.cpp)
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
  file(STRINGS ${f} lines REGEX "^[ \t]*mutable[ \t]")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "mutable[ \t]+std::(mutex|shared_mutex|recursive_mutex|condition_variable|atomic|once_flag)")
      string(STRIP "${line}" line)
      string(APPEND problems "  ${rel}: ${line}\n")
    endif()
  endforeach()
endforeach()

if(problems)
  message(FATAL_ERROR "mutable state outside synchronisation primitives (set it in "
                      "Stage::prepare(), keep output_spec() and other const methods pure):\n"
                      "${problems}")
endif()
message(STATUS "no mutable state in stages, kernels or the Python bindings")
