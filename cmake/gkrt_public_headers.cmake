# The public surface of gkrt: the headers an application includes, and nothing else.
#
#   <gkrt/gkrt_c.h>                the C API: the stable one (opaque handles, status codes)
#   <gkrt/runtime/session.h>       C++: Session, SessionOptions
#   <gkrt/runtime/builder.h>       C++: GraphBuilder
#   <gkrt/runtime/host_tensor.h>   C++: HostTensor
#   <gkrt/runtime/model_io.h>      C++: loadModelFile/saveModelFile
#
# and the headers those four include (GKRT_PUBLIC_HEADERS below lists them all). The C++
# headers carry no ABI promise between versions: rebuild the application with each
# release; the C API keeps its ABI within a major version (SONAME libgkrt.so.<major>).
#
# The build stages the headers into build/include/gkrt/ with their project includes
# rewritten to "gkrt/..." (cmake/stage_public_headers.cmake), so an application needs one
# include directory (<prefix>/include) and none of gkrt's folder names (runtime/,
# fusion/, ...) land on its include path. A public header that includes a header not
# listed here stops the build with both names: add it here (it becomes public) or drop
# the include.
set(GKRT_PUBLIC_HEADERS
  runtime/gkrt_c.h
  runtime/session.h runtime/builder.h runtime/host_tensor.h runtime/model_io.h
  backends/backend.h
  runtime/ir/fusion_column.h fusion/fusion_options.h fusion/pass_manager.h
  runtime/ir/attrs.h runtime/ir/attrs_impl.h runtime/ir/dtype.h runtime/ir/graph.h runtime/ir/shape.h
  runtime/ir/status.h runtime/ir/tensor_view.h
  runtime/resource_limits.h)

set(GKRT_PUBLIC_INCLUDE_DIR ${CMAKE_BINARY_DIR}/include)
set(GKRT_PUBLIC_HEADER_SOURCES ${GKRT_PUBLIC_HEADERS})
list(TRANSFORM GKRT_PUBLIC_HEADER_SOURCES PREPEND ${CMAKE_SOURCE_DIR}/)
set(GKRT_STAGED_PUBLIC_HEADERS "")
foreach(header ${GKRT_PUBLIC_HEADERS})
  if(header STREQUAL "runtime/gkrt_c.h")
    list(APPEND GKRT_STAGED_PUBLIC_HEADERS ${GKRT_PUBLIC_INCLUDE_DIR}/gkrt/gkrt_c.h)
  else()
    list(APPEND GKRT_STAGED_PUBLIC_HEADERS ${GKRT_PUBLIC_INCLUDE_DIR}/gkrt/${header})
  endif()
endforeach()
string(REPLACE ";" "|" GKRT_PUBLIC_HEADERS_ARG "${GKRT_PUBLIC_HEADERS}")
add_custom_command(
  OUTPUT ${GKRT_STAGED_PUBLIC_HEADERS}
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${GKRT_PUBLIC_INCLUDE_DIR}/gkrt
  COMMAND ${CMAKE_COMMAND} "-DHEADERS=${GKRT_PUBLIC_HEADERS_ARG}" -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUT_DIR=${GKRT_PUBLIC_INCLUDE_DIR}/gkrt -P ${CMAKE_SOURCE_DIR}/cmake/stage_public_headers.cmake
  DEPENDS ${GKRT_PUBLIC_HEADER_SOURCES} ${CMAKE_SOURCE_DIR}/cmake/stage_public_headers.cmake
          ${CMAKE_SOURCE_DIR}/cmake/gkrt_public_headers.cmake
  COMMENT "staging gkrt's public headers in ${GKRT_PUBLIC_INCLUDE_DIR}/gkrt"
  VERBATIM)
add_custom_target(gkrt_public_headers ALL DEPENDS ${GKRT_STAGED_PUBLIC_HEADERS})
