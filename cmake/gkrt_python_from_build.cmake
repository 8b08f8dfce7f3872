# The Python package over a finished host build's libraries (docs/python.md, "A wheel
# from a build"): with -DGKRT_PYTHON_FROM_BUILD=<build dir> this project compiles only the
# extension module (python/) and links the static libraries that build made, read from
# the targets it exported (cmake/gkrt-build-targets.cmake there; gkrt_build_export.cmake
# writes it). `pip wheel . -C cmake.define.GKRT_PYTHON_FROM_BUILD=$PWD/build` packs the
# same module as `pip wheel .` without compiling the library a second time.
get_filename_component(GKRT_FROM_BUILD "${GKRT_PYTHON_FROM_BUILD}" ABSOLUTE)
set(GKRT_FROM_BUILD_TARGETS ${GKRT_FROM_BUILD}/cmake/gkrt-build-targets.cmake)
if(NOT EXISTS ${GKRT_FROM_BUILD_TARGETS})
  message(FATAL_ERROR "GKRT_PYTHON_FROM_BUILD=${GKRT_PYTHON_FROM_BUILD}: no ${GKRT_FROM_BUILD_TARGETS}; "
    "configure and build a host build there first (cmake --preset host && cmake --build --preset host), "
    "or leave GKRT_PYTHON_FROM_BUILD unset to compile the library here")
endif()
# The packages the build's libraries link, found as that build found them.
include(${GKRT_FROM_BUILD}/cmake/gkrt-build-dependencies.cmake)
include(${GKRT_FROM_BUILD_TARGETS})
if(NOT TARGET gkrt_model_source)
  message(FATAL_ERROR "GKRT_PYTHON_FROM_BUILD=${GKRT_PYTHON_FROM_BUILD}: that build exports no gkrt_model_source "
    "(a cross or minimal build?); point it at a host build")
endif()
# Bring that build's libraries up to date before the module links them (a no-op when they are).
add_custom_target(gkrt_from_build_libraries
  COMMAND ${CMAKE_COMMAND} --build ${GKRT_FROM_BUILD} --target gkrt_model_source
  COMMENT "gkrt: the libraries of ${GKRT_FROM_BUILD}" VERBATIM)
add_subdirectory(python)
if(TARGET _gkrt)
  add_dependencies(_gkrt gkrt_from_build_libraries)
else()
  message(FATAL_ERROR "GKRT_PYTHON_FROM_BUILD: the Python package is not built here (see the message above)")
endif()
message(STATUS "gkrt: the Python package over the libraries of ${GKRT_FROM_BUILD}")
