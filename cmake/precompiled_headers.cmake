# Precompiled headers for headroom's own targets.
#
# Parsing CAF's headers costs about 4 s in every file that includes them, simdjson's about 3.5 s
# and GoogleTest's about 1.5 s, against 1.5 s for the standard library alone; with some 150 files
# per build, most of the compile time of a build was spent reading the same headers again. One
# donor target per set compiles them once per build directory, and every other target reuses that
# header (REUSE_FROM), so the headers are compiled twice per build, not once per file.
#
# GCC uses a precompiled header only when the file's options match the donor's in what matters to
# the header (the -D flags targets add, such as HEADROOM_BINARY, appear in none of these headers);
# otherwise it would read the header as text, and CMake's -Winvalid-pch with -Werror makes that a
# build error, so a mismatch cannot slow the build unnoticed. The fuzz build (clang)
# keeps HEADROOM_PCH off: there every file still names what it includes, which a precompiled header
# would otherwise hide.

set(HEADROOM_PCH_HEADERS
  <caf/all.hpp> <simdjson.h>
  <algorithm> <atomic> <chrono> <cstdint> <functional> <map> <memory> <mutex> <optional> <string>
  <string_view> <thread> <variant> <vector>)

# The options the donor and every user share. -pthread (which defines _REENTRANT) for all: the
# targets that link gRPC get it from there, and a header compiled with and used without it (or the
# other way round) is refused. GCC 12 only: with the header precompiled, GCC no longer treats the
# inlined std::string internals as system-header code and reports its known -Warray-bounds and
# -Wstringop-overflow/-overread false positives on string concatenation (`std::string{a} + "…"`, six files); read as text the same code
# is clean. The fuzz build (clang, no precompiled header) keeps clang's array-bounds checks.
function(headroom_pch_options target)
  target_compile_options(${target} PRIVATE -pthread)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-array-bounds -Wno-stringop-overflow -Wno-stringop-overread)
  endif()
endfunction()

# headroom_precompile_headers(DONOR LIBRARIES… [DIRECTORIES dir…]): makes DONOR, a library that
# compiles the headers once against LIBRARIES, and points each C++ target defined in the given
# directories at it.
function(headroom_precompile_headers donor)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "LIBRARIES;HEADERS;DIRECTORIES;EXCLUDE")
  set(source ${PROJECT_BINARY_DIR}/${donor}.cpp)
  file(CONFIGURE OUTPUT ${source} CONTENT "// The donor of ${donor}'s precompiled header.\n")
  add_library(${donor} STATIC ${source})
  target_link_libraries(${donor} PRIVATE ${arg_LIBRARIES})
  target_precompile_headers(${donor} PRIVATE ${arg_HEADERS})
  headroom_pch_options(${donor})
  foreach(dir IN LISTS arg_DIRECTORIES)
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_target_property(type ${target} TYPE)
      if(target IN_LIST arg_EXCLUDE OR target STREQUAL donor
         OR NOT type MATCHES "^(STATIC_LIBRARY|EXECUTABLE)$")
        continue()
      endif()
      target_precompile_headers(${target} REUSE_FROM ${donor})
      headroom_pch_options(${target})
      # The header is in all the target's files now, so the target uses what the donor used: its
      # macros (simdjson's SIMDJSON_THREADS_ENABLED: a header compiled with a macro the user lacks
      # is refused) and its libraries (unoptimised builds emit simdjson's inline functions, which
      # call into the library, in every file).
      target_link_libraries(${target} PRIVATE ${arg_LIBRARIES})
    endforeach()
  endforeach()
endfunction()
