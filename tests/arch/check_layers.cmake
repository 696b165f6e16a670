# Checks that includes point one way through the architecture:
#   contract <- storage, telemetry <- policy <- kernels <- stages <- tools
# and that third-party headers (OpenCV, GStreamer, EGL, DRM) appear only in
# the files of their own backend or bridge. Run: cmake -DSOURCE_DIR=... -P check_layers.cmake
cmake_minimum_required(VERSION 3.20)

set(allowed_contract  contract)
set(allowed_storage   contract storage)
set(allowed_telemetry contract telemetry)
set(allowed_policy    contract storage telemetry policy)
set(allowed_kernels   contract storage telemetry policy kernels)
set(allowed_stages    contract storage telemetry policy kernels stages)

# Files allowed to include OpenCV: its bridge, and the conversion kernels'
# implementations (kernels/*.cpp, which run OpenCV on zero-copy views). Never a
# kernel header.
set(problems "")

foreach(layer contract storage telemetry policy kernels stages)
  # Every file of the layer, subfolders included (storage/internal/, ...).
  file(GLOB_RECURSE files ${SOURCE_DIR}/${layer}/*.hpp ${SOURCE_DIR}/${layer}/*.cpp)
  foreach(f IN LISTS files)
    file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
    file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS lines)
      if(line MATCHES "[\"<]neat/([a-z_]+)/")
        set(dep ${CMAKE_MATCH_1})
        if(NOT dep IN_LIST allowed_${layer})
          string(APPEND problems "  ${rel}: ${layer}/ must not include ${dep}/ (${line})\n")
        endif()
      elseif(line MATCHES "[\"<]neat/neat.hpp")
        string(APPEND problems "  ${rel}: library code must not include the umbrella header\n")
      endif()
      if(line MATCHES "<opencv2/")
        if(NOT rel MATCHES "^storage/cv_mat\\.(hpp|cpp)$" AND NOT rel MATCHES "^kernels/[a-z_]+\\.cpp$")
          string(APPEND problems "  ${rel}: OpenCV belongs in storage/cv_mat.* and in kernel .cpp files only\n")
        endif()
      endif()
      # Platform headers: only in the .cpp files of their own backend (public
      # headers name the platform's types without including it).
      if(line MATCHES "<gst/")
        # Headers: storage/internal/gst_ref.hpp and stages/internal/gst_caps.hpp,
        # internal, never installed.
        if(NOT rel MATCHES "^(storage|stages)/gst[a-z_]*\\.cpp$" AND NOT rel MATCHES "^(storage|stages)/internal/gst[a-z_]*\\.hpp$")
          string(APPEND problems "  ${rel}: GStreamer headers belong in storage/gst*.cpp, stages/gst*.cpp and (storage|stages)/internal/gst*.hpp only\n")
        endif()
      endif()
      if(line MATCHES "<EGL/|<GLES")
        if(NOT rel MATCHES "^storage/gl[a-z_]*\\.cpp$")
          string(APPEND problems "  ${rel}: EGL/GLES headers belong in storage/gl*.cpp only\n")
        endif()
      endif()
      if(line MATCHES "<xf86drm|<drm_fourcc|<libdrm/|<linux/dma-")
        if(NOT rel MATCHES "^storage/dmabuf[a-z_]*\\.cpp$")
          string(APPEND problems "  ${rel}: DRM / DMA-BUF headers belong in storage/dmabuf*.cpp only\n")
        endif()
      endif()
      if(line MATCHES "<httplib\\.h>")
        if(NOT rel MATCHES "^telemetry/metrics_server\\.cpp$")
          string(APPEND problems "  ${rel}: cpp-httplib belongs in telemetry/metrics_server.cpp only\n")
        endif()
      endif()
      if(line MATCHES "<simdjson\\.h>")
        if(NOT rel MATCHES "^telemetry/trace_reader\\.cpp$")
          string(APPEND problems "  ${rel}: simdjson belongs in telemetry/trace_reader.cpp only\n")
        endif()
      endif()
      if(line MATCHES "<hwy/")
        if(NOT rel MATCHES "^kernels/[a-z_]+_simd\\.cpp$")
          string(APPEND problems "  ${rel}: Highway belongs in the SIMD kernels kernels/*_simd.cpp only\n")
        endif()
      endif()
      if(line MATCHES "<libyuv")
        string(APPEND problems "  ${rel}: libyuv is a benchmark baseline (bench/), not a dependency of the library\n")
      endif()
      if(line MATCHES "<dlpack/")
        if(NOT rel MATCHES "^storage/dlpack\\.cpp$")
          string(APPEND problems "  ${rel}: DLPack's header belongs in storage/dlpack.cpp only\n")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

# Tools and the Python bindings use the public API only, as an outside user would.
file(GLOB tool_files ${SOURCE_DIR}/tools/*.cpp ${SOURCE_DIR}/tools/*.hpp
     ${SOURCE_DIR}/python/src/*.cpp ${SOURCE_DIR}/python/src/*.hpp)
foreach(f IN LISTS tool_files)
  file(RELATIVE_PATH rel ${SOURCE_DIR} ${f})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"neat/")
  if(lines)
    string(APPEND problems "  ${rel}: tools and bindings include the installed API as <neat/...>, not \"neat/...\"\n")
  endif()
endforeach()

if(problems)
  message(FATAL_ERROR "Layering violations:\n${problems}")
endif()
message(STATUS "layers ok")
