# FindCAF — locates the C++ Actor Framework (Debian's libcaf-dev ships headers and libraries but
# no CMake package).
#
# Defines the imported targets CAF::core, CAF::io and CAF::openssl (each when found), and
# CAF_FOUND, CAF_VERSION, CAF_INCLUDE_DIR.
include(FindPackageHandleStandardArgs)

find_path(CAF_INCLUDE_DIR NAMES caf/config.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)
find_library(CAF_OPENSSL_LIBRARY NAMES caf_openssl)

if(CAF_INCLUDE_DIR AND EXISTS "${CAF_INCLUDE_DIR}/caf/config.hpp")
  file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" _caf_version_line REGEX "#define CAF_VERSION [0-9]+")
  string(REGEX REPLACE ".*#define CAF_VERSION ([0-9]+).*" "\\1" _caf_version_int "${_caf_version_line}")
  if(_caf_version_int)
    math(EXPR _caf_major "${_caf_version_int} / 10000")
    math(EXPR _caf_minor "(${_caf_version_int} / 100) % 100")
    math(EXPR _caf_patch "${_caf_version_int} % 100")
    set(CAF_VERSION "${_caf_major}.${_caf_minor}.${_caf_patch}")
  endif()
endif()

find_package_handle_standard_args(CAF
  REQUIRED_VARS CAF_INCLUDE_DIR CAF_CORE_LIBRARY
  VERSION_VAR CAF_VERSION)

if(CAF_FOUND)
  foreach(_part core io openssl)
    string(TOUPPER "${_part}" _upper)
    if(CAF_${_upper}_LIBRARY AND NOT TARGET CAF::${_part})
      add_library(CAF::${_part} UNKNOWN IMPORTED)
      set_target_properties(CAF::${_part} PROPERTIES
        IMPORTED_LOCATION "${CAF_${_upper}_LIBRARY}"
        INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}")
    endif()
  endforeach()
  set_property(TARGET CAF::core APPEND PROPERTY INTERFACE_LINK_LIBRARIES Threads::Threads)
  if(TARGET CAF::io)
    set_property(TARGET CAF::io APPEND PROPERTY INTERFACE_LINK_LIBRARIES CAF::core)
  endif()
endif()
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY CAF_OPENSSL_LIBRARY)
