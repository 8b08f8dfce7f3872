# gkrt as a dependency (docs/using-gkrt.md): the shared library,
# install rules, the CMake package (find_package(gkrt CONFIG) -> gkrt::gkrt,
# gkrt::gkrt_static) and gkrt.pc for pkg-config. Included at the end of the top-level
# CMakeLists.txt, after every target exists.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
include(${CMAKE_CURRENT_LIST_DIR}/gkrt_public_headers.cmake)

# gkrt_version() in the C API.
set_property(SOURCE ${CMAKE_SOURCE_DIR}/runtime/gkrt_c.cc APPEND PROPERTY COMPILE_DEFINITIONS GKRT_VERSION="${PROJECT_VERSION}")

option(GKRT_BUILD_SHARED "Build libgkrt.so (the static libraries are always built)" ON)

# ---- the shared library: the static archives whole, their dependencies private --------
# SONAME libgkrt.so.<major>: the C API's ABI holds within a major version.
if(GKRT_BUILD_SHARED)
  add_library(gkrt_shared SHARED ${CMAKE_SOURCE_DIR}/runtime/gkrt_c.h)
  set_target_properties(gkrt_shared PROPERTIES OUTPUT_NAME gkrt EXPORT_NAME gkrt LINKER_LANGUAGE CXX
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})
  # Every object of both archives (an application may call what gkrt itself does not),
  # then the archives again as ordinary libraries for their dependencies and build order.
  target_link_options(gkrt_shared PRIVATE
    "SHELL:LINKER:--whole-archive $<TARGET_FILE:gkrt> $<TARGET_FILE:gkrt_ir> LINKER:--no-whole-archive")
  target_link_libraries(gkrt_shared PRIVATE gkrt gkrt_ir)
  if(NOT GKRT_SANITIZE)  # every symbol resolved in the library or its DT_NEEDED libraries
    target_link_options(gkrt_shared PRIVATE LINKER:--no-undefined)
  endif()
  target_include_directories(gkrt_shared INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(gkrt_shared INTERFACE cxx_std_17)
endif()
set_target_properties(gkrt PROPERTIES EXPORT_NAME gkrt_static)
target_include_directories(gkrt INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(gkrt INTERFACE cxx_std_17)

# ---- what a static link needs, as found by this build (cmake/gkrtConfig.cmake.in) ------
set(GKRT_STATIC_DEPENDENCIES "")
if(TARGET DNNL::dnnl)
  list(APPEND GKRT_STATIC_DEPENDENCIES dnnl)
endif()
if(OpenMP_CXX_FOUND)
  list(APPEND GKRT_STATIC_DEPENDENCIES OpenMP)
endif()
if(TARGET OpenCL::OpenCL AND GKRT_WITH_OPENCL)
  list(APPEND GKRT_STATIC_DEPENDENCIES OpenCL)
endif()
get_target_property(gkrt_link_interface gkrt INTERFACE_LINK_LIBRARIES)
if(gkrt_link_interface MATCHES "gkrt::sleef")
  list(APPEND GKRT_STATIC_DEPENDENCIES SLEEF)
endif()

# ---- install rules (components: runtime, dev, tools; cmake/gkrt_deb.cmake packs them) --
if(GKRT_BUILD_SHARED)
  install(TARGETS gkrt_shared EXPORT gkrt-targets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
  install(EXPORT gkrt-targets NAMESPACE gkrt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gkrt COMPONENT dev)
endif()
install(TARGETS gkrt gkrt_ir EXPORT gkrt-static-targets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(EXPORT gkrt-static-targets NAMESPACE gkrt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gkrt COMPONENT dev)
install(DIRECTORY ${GKRT_PUBLIC_INCLUDE_DIR}/gkrt DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(FILES ${CMAKE_SOURCE_DIR}/schema/gkm.fbs DESTINATION ${CMAKE_INSTALL_DATADIR}/gkrt/schema COMPONENT dev)
if(TARGET gkrt_examples)  # the seeds' MyNet models (tools/make_examples.cc) for examples/
  install(FILES ${CMAKE_BINARY_DIR}/examples/mynet.gkm ${CMAKE_BINARY_DIR}/examples/mynet_myop.gkm
    DESTINATION ${CMAKE_INSTALL_DATADIR}/gkrt/examples COMPONENT dev)
endif()
if(TARGET gkrt_cli)
  install(TARGETS gkrt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT tools)
endif()

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/gkrtConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cmake/gkrtConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gkrt
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cmake/gkrtConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/cmake/gkrtConfig.cmake ${CMAKE_BINARY_DIR}/cmake/gkrtConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/gkrt COMPONENT dev)

# gkrt.pc: the shared library (`pkg-config --static` adds what libgkrt.a needs). Its
# prefix is the one given at install time (`cmake --install --prefix`, or /usr in the
# .deb), so the file is written then.
set(GKRT_PC_LIBS_PRIVATE "-lgkrt_ir")
if("SLEEF" IN_LIST GKRT_STATIC_DEPENDENCIES)
  string(APPEND GKRT_PC_LIBS_PRIVATE " -lsleef")
endif()
if("dnnl" IN_LIST GKRT_STATIC_DEPENDENCIES)
  string(APPEND GKRT_PC_LIBS_PRIVATE " -ldnnl")
endif()
if("OpenCL" IN_LIST GKRT_STATIC_DEPENDENCIES)
  string(APPEND GKRT_PC_LIBS_PRIVATE " -lOpenCL")
endif()
if(OpenMP_CXX_FOUND)
  string(APPEND GKRT_PC_LIBS_PRIVATE " ${OpenMP_CXX_FLAGS}")
endif()
string(APPEND GKRT_PC_LIBS_PRIVATE " -lstdc++ -lm")
set(GKRT_PC_PREFIX "@GKRT_INSTALL_PREFIX@")  # filled in by the install(CODE) below
configure_file(${CMAKE_SOURCE_DIR}/cmake/gkrt.pc.in ${CMAKE_BINARY_DIR}/cmake/gkrt.pc.in @ONLY)
install(CODE "
  get_filename_component(GKRT_INSTALL_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
  configure_file(\"${CMAKE_BINARY_DIR}/cmake/gkrt.pc.in\" \"${CMAKE_BINARY_DIR}/cmake/gkrt.pc\" @ONLY)"
  COMPONENT dev)
install(FILES ${CMAKE_BINARY_DIR}/cmake/gkrt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

include(${CMAKE_CURRENT_LIST_DIR}/gkrt_deb.cmake)
