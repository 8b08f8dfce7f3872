# cmake -DHEADERS="a.h|b/c.h" -DSOURCE_DIR=... -DOUT_DIR=... -P stage_public_headers.cmake
#
# Copies gkrt's public headers (cmake/gkrt_public_headers.cmake) into OUT_DIR, rewriting
# every project include "runtime/x.h" to "gkrt/runtime/x.h" (and runtime/gkrt_c.h to
# gkrt/gkrt_c.h), and fails naming both headers when a public header includes one that
# is not public.
cmake_minimum_required(VERSION 3.20)
string(REPLACE "|" ";" HEADERS "${HEADERS}")
function(public_name header out)
  if(header STREQUAL "runtime/gkrt_c.h")
    set(${out} "gkrt/gkrt_c.h" PARENT_SCOPE)
  else()
    set(${out} "gkrt/${header}" PARENT_SCOPE)
  endif()
endfunction()

foreach(header ${HEADERS})
  if(NOT EXISTS "${SOURCE_DIR}/${header}")
    message(FATAL_ERROR "public header ${header} does not exist; update GKRT_PUBLIC_HEADERS in cmake/gkrt_public_headers.cmake")
  endif()
  file(READ "${SOURCE_DIR}/${header}" text)
  string(REGEX MATCHALL "#include \"[^\"]+\"" includes "${text}")
  foreach(line ${includes})
    string(REGEX REPLACE "#include \"([^\"]+)\"" "\\1" included "${line}")
    if(NOT included IN_LIST HEADERS)
      message(FATAL_ERROR "public header ${header} includes \"${included}\", which is not public: add it to "
                          "GKRT_PUBLIC_HEADERS in cmake/gkrt_public_headers.cmake (it becomes part of the API) or "
                          "drop the include")
    endif()
    public_name("${included}" renamed)
    string(REPLACE "${line}" "#include \"${renamed}\"" text "${text}")
  endforeach()
  public_name("${header}" staged)
  string(REGEX REPLACE "^gkrt/" "" staged "${staged}")
  file(WRITE "${OUT_DIR}/${staged}" "${text}")
endforeach()
