# mpwb_add_qtest(<name> SOURCES ... LIBS ...): one Qt Test executable per unit, registered with CTest.
include(MpwbPch)

# Every test compiles under the same macros, so that the tests linking the same Qt modules share one
# precompiled <QtTest>: Qt's per-target QT_TESTCASE_BUILDDIR and QT_TESTCASE_SOURCEDIR (only
# QFINDTESTDATA reads them, and no test here does) would otherwise differ from folder to folder.
function(_mpwb_test_macros target)
  target_compile_definitions(${target} PRIVATE MPWB_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                               MPWB_BINARY_DIR="${PROJECT_BINARY_DIR}")
  set_target_properties(${target} PROPERTIES QT_TESTCASE_BUILDDIR "${PROJECT_BINARY_DIR}/tests")
  target_compile_options(${target} PRIVATE -UQT_TESTCASE_SOURCEDIR)
endfunction()

# The target whose precompiled header the tests linking <qt_modules> share (made on first use).
function(_mpwb_test_pch_holder out)
  list(JOIN ARGN "_" key)
  set(holder mpwb_test_pch_${key})
  if(NOT TARGET ${holder})
    set(source ${PROJECT_BINARY_DIR}/tests/pch_holder.cpp)
    if(NOT EXISTS ${source})
      file(WRITE ${source} "int main() { return 0; }\n")
    endif()
    add_executable(${holder} ${source})
    list(TRANSFORM ARGN PREPEND "Qt6::" OUTPUT_VARIABLE qt_targets)
    target_link_libraries(${holder} PRIVATE Qt6::Test ${qt_targets} nlohmann_json::nlohmann_json)
    _mpwb_test_macros(${holder})
    set(headers <QtTest> <QTemporaryDir>)
    if("Widgets" IN_LIST ARGN)
      list(APPEND headers <QtWidgets>)
    endif()
    mpwb_precompile(${holder} HEADERS ${headers})
  endif()
  set(${out} ${holder} PARENT_SCOPE)
endfunction()

function(mpwb_add_qtest name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  set_target_properties(${name} PROPERTIES AUTOMOC ON)
  target_link_libraries(${name} PRIVATE Qt6::Test ${T_LIBS})
  _mpwb_test_macros(${name})
  if(MPWB_PCH)
    mpwb_linked_qt_modules(qt_modules Qt6::Test ${T_LIBS})
    _mpwb_test_pch_holder(holder ${qt_modules})
    mpwb_precompile(${name} REUSE_FROM ${holder})
    # AUTOMOC's file of a test is empty (each test includes its own .moc): loading the
    # precompiled header would be the whole of its compile time, 3 s a test.
    set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${name}_autogen/mocs_compilation.cpp
                                TARGET_DIRECTORY ${name} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  # XDG_DATA_HOME in the build tree: a test that records runs by default never touches the
  # user's run database.
  set_tests_properties(${name} PROPERTIES TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "QT_QPA_PLATFORM=offscreen;XDG_DATA_HOME=${PROJECT_BINARY_DIR}/test-data-home")
endfunction()
