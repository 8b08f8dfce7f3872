# Debian packages through CPack, split as Debian splits a library:
#   libgkrt      the shared library (libgkrt.so.<major>, ldconfig trigger, shlibs)
#   libgkrt-dev  public headers, libgkrt.so, the static libraries, CMake package, gkrt.pc,
#                the schema and the example models
#   gkrt-tools   the gkrt command
# Build on the Debian release you target, configured for /usr (docs/using-gkrt.md,
# Debian packages):  cmake --preset host -DCMAKE_INSTALL_PREFIX=/usr && cmake --build --preset host
#                cd build && cpack -G DEB      -> build/packages/*.deb
set(CPACK_PACKAGE_NAME gkrt)
set(CPACK_PACKAGE_VENDOR "gkrt")
set(CPACK_PACKAGE_CONTACT "gkrt maintainers <gkrt@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "embedded inference runtime with graph kernel fusion")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGE_DIRECTORY ${CMAKE_BINARY_DIR}/packages)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_SET_DESTDIR ON)  # install(CODE) sees the real prefix (gkrt.pc), not the staging folder
set(CPACK_COMPONENTS_ALL runtime dev tools)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)   # dpkg-shlibdeps: Depends from the ELF files
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")

set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libgkrt)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "gkrt inference runtime: shared library
Loads .gkm models, fuses their graphs per backend and runs them on the cpu,
opencl or reference backend. The C API (gkrt/gkrt_c.h) is the stable one.")
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libgkrt-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "gkrt inference runtime: development files
Public headers (C API gkrt/gkrt_c.h, C++ session/builder/host-tensor API), the
static libraries, the CMake package (find_package(gkrt)), gkrt.pc, the model
schema and the seeds' example models.")
# libgkrt.a's own dependencies, for static links (the .so names them itself).
set(gkrt_dev_depends "")
if("dnnl" IN_LIST GKRT_STATIC_DEPENDENCIES)
  list(APPEND gkrt_dev_depends libdnnl-dev)
endif()
if("SLEEF" IN_LIST GKRT_STATIC_DEPENDENCIES)
  list(APPEND gkrt_dev_depends libsleef-dev)
endif()
if("OpenCL" IN_LIST GKRT_STATIC_DEPENDENCIES)
  list(APPEND gkrt_dev_depends ocl-icd-opencl-dev)
endif()
string(REPLACE ";" ", " CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "${gkrt_dev_depends}")
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME gkrt-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_DESCRIPTION "gkrt inference runtime: the gkrt command
gkrt run, info, dump, bench, ops, and (where built with ONNX) convert and compare.")
include(CPack)
