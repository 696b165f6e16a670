# Installs the build tree into a scratch prefix, then configures, builds and
# runs tests/consumer against it, and the installed `neat` from there; with PYTHON_DIR (where the Python package
# installs, relative to the prefix), imports the installed package from a
# clean environment and views a tensor in numpy.
# Args: BUILD_DIR, SOURCE_DIR, WORK_DIR, GENERATOR, PYTHON_DIR (optional).
cmake_minimum_required(VERSION 3.20)
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
if(NOT EXISTS ${WORK_DIR}/prefix/include/neat/neat.hpp)
  message(FATAL_ERROR "the umbrella header was not installed")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
# The installed programs find their library in the prefix they were installed
# to (an $ORIGIN-relative RPATH), from a clean environment.
run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/prefix/bin/neat --version)
run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${WORK_DIR}/prefix/bin/neat run --quiet
    --frames 2 "default ! appsink")
if(PYTHON_DIR)
  set(pkg ${WORK_DIR}/prefix/${PYTHON_DIR})
  if(NOT EXISTS ${pkg}/neat/__init__.pyi OR NOT EXISTS ${pkg}/neat/py.typed)
    message(FATAL_ERROR "the Python package's stub was not installed into ${pkg}/neat")
  endif()
  run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH PYTHONPATH=${pkg} /usr/bin/python3
      ${SOURCE_DIR}/tests/consumer/check_python.py ${pkg})
endif()
