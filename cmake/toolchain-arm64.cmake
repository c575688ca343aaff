# Cross-compiling headroom for arm64 on an amd64 Debian machine: Debian's cross compiler
# (g++-aarch64-linux-gnu) against a sysroot of bookworm's own :arm64 packages, extracted by
# mmdebstrap (scripts/arm64-sysroot). A sysroot rather than multiarch: the :arm64 dev packages of
# CAF, civetweb, libpq, simdjson, yaml-cpp and prometheus-cpp are not Multi-Arch: same, so
# installing them beside the amd64 ones removes those. Programs run at build time (protoc,
# grpc_cpp_plugin) are the host's. scripts/build release-arm64 uses this file.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
if(NOT HEADROOM_SYSROOT)
  set(HEADROOM_SYSROOT "$ENV{HEADROOM_SYSROOT}")
endif()
# try_compile projects see it too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HEADROOM_SYSROOT)
if(NOT EXISTS "${HEADROOM_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "HEADROOM_SYSROOT (${HEADROOM_SYSROOT}) is not an arm64 sysroot: make one with scripts/arm64-sysroot")
endif()
set(CMAKE_SYSROOT "${HEADROOM_SYSROOT}")
# The sysroot's place (a cache directory) stays out of the debug info and the build-id.
add_compile_options("-ffile-prefix-map=${HEADROOM_SYSROOT}=/")
set(CMAKE_FIND_ROOT_PATH "${HEADROOM_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${HEADROOM_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR} "${HEADROOM_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${HEADROOM_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
# The build's arm64 programs (gtest discovery, smoke checks) run under qemu-user-static with the
# sysroot's loader and libraries.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L "${HEADROOM_SYSROOT}")
