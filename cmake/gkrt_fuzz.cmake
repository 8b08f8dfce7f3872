# libFuzzer instrumentation (tests/fuzz/): every object of the build is compiled with
# -fsanitize=fuzzer-no-link so the fuzz targets see coverage of the whole runtime; only
# the fuzz executables link libFuzzer itself (-fsanitize=fuzzer). Debian's clang only.
option(GKRT_FUZZ "Build the libFuzzer targets in tests/fuzz (clang; combine with GKRT_SANITIZE)" OFF)
if(GKRT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "GKRT_FUZZ=ON needs clang's libFuzzer, and the C++ compiler is ${CMAKE_CXX_COMPILER_ID}: "
                        "use `cmake --preset sanitize` (or -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
