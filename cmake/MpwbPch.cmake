# Precompiled headers. Most of a clean build goes into parsing the same headers again: <QtTest>
# costs about 4 s a unit, <QtWidgets> 7 s and nlohmann/json 2 s, against 1-5 s for a unit's own
# code. A precompiled header is only used under the macros and code-generation flags it was made
# with (GCC skips a mismatched one and says so: -Winvalid-pch), so each group of targets built
# with the same flags shares one: the core modules, the sessions library, each Qt library, and
# the tests by the Qt modules they link.
option(MPWB_PCH "Precompile the headers most units include (a clean build takes about half as long)" ON)

set(MPWB_PCH_STD_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstdio> <cstdlib> <cstring>
  <filesystem> <fstream> <functional> <limits> <map> <memory> <mutex> <optional> <set> <span>
  <sstream> <string> <string_view> <thread> <unordered_map> <utility> <vector>
  <nlohmann/json.hpp>)

# mpwb_precompile(<target> [REUSE_FROM <holder>] [HEADERS <header>...]): <target> compiles with a
# precompiled header of the standard headers, nlohmann/json and HEADERS, or with <holder>'s.
function(mpwb_precompile target)
  if(NOT MPWB_PCH)
    return()
  endif()
  cmake_parse_arguments(P "" "REUSE_FROM" "HEADERS" ${ARGN})
  if(P_REUSE_FROM)
    target_precompile_headers(${target} REUSE_FROM ${P_REUSE_FROM})
  else()
    target_precompile_headers(${target} PRIVATE ${MPWB_PCH_STD_HEADERS} ${P_HEADERS})
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>)
  endif()
endfunction()

# The Qt modules whose macros (QT_GUI_LIB, ...) <libs> bring, directly or through other targets, as a sorted list (Core, Gui, ...).
function(mpwb_linked_qt_modules out)
  set(pending ${ARGN})
  set(seen "")
  set(modules "")
  while(pending)
    list(POP_FRONT pending lib)
    # A static library's private links ($<LINK_ONLY:...>) give the units that link it no macros.
    if(lib MATCHES "^\\$<LINK_ONLY:" OR lib IN_LIST seen OR NOT TARGET ${lib})
      continue()
    endif()
    list(APPEND seen ${lib})
    get_target_property(aliased ${lib} ALIASED_TARGET)
    if(aliased)
      list(APPEND pending ${aliased})
      continue()
    endif()
    if(lib MATCHES "^Qt6::([A-Za-z]+)$")
      list(APPEND modules ${CMAKE_MATCH_1})
    endif()
    get_target_property(interface_links ${lib} INTERFACE_LINK_LIBRARIES)
    if(interface_links)
      list(APPEND pending ${interface_links})
    endif()
  endwhile()
  list(REMOVE_DUPLICATES modules)
  list(SORT modules)
  set(${out} ${modules} PARENT_SCOPE)
endfunction()
