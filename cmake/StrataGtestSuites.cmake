# strata_add_gtest_suites(TARGET ENVIRONMENT ...): one ctest per GoogleTest suite of TARGET, named
# after the suite and run as TARGET --gtest_filter=<suite>.*, instead of one per test case. Each
# process of the suite binary spends about 0.1 s starting (the CUDA libraries' initializers), which
# across ~1200 cases was half of the README's `ctest -j2`; the cases of a suite share one process,
# as they do when the binary runs whole (the sanitizer job runs it so). The suites are listed after
# each build, as gtest_discover_tests lists cases. A suite whose every case skipped (no CUDA
# device) is reported skipped; a failing case is named in the test's output.
set(STRATA_GTEST_SUITES_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/StrataGtestSuitesDiscover.cmake)

function(strata_add_gtest_suites target)
  cmake_parse_arguments(arg "" "" "ENVIRONMENT" ${ARGN})
  set(ctest_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  add_custom_command(
    TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D TEST_EXECUTABLE=$<TARGET_FILE:${target}> -D CTEST_FILE=${ctest_file}
            "-D TEST_ENVIRONMENT=${arg_ENVIRONMENT}" -P ${STRATA_GTEST_SUITES_SCRIPT}
    BYPRODUCTS ${ctest_file}
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${ctest_file})
endfunction()
