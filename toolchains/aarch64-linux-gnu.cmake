# Cross build for 64-bit ARM Linux boards with Debian's g++-aarch64-linux-gnu; tests
# run under qemu-aarch64 (qemu-user) with the cross sysroot's libraries.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)   # flatc, python: the build machine's
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)    # libraries: the target's only
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)    # header-only packages serve both
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
