# Run after each build of a GoogleTest binary (strata_add_gtest_suites): lists its suites and writes
# CTEST_FILE, one add_test per suite. -D TEST_EXECUTABLE, CTEST_FILE, TEST_ENVIRONMENT (a list).
execute_process(COMMAND ${TEST_EXECUTABLE} --gtest_list_tests OUTPUT_VARIABLE listing RESULT_VARIABLE rc
                TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${rc}):\n${listing}")
endif()
string(REPLACE "\n" ";" lines "${listing}")
set(script "")
foreach(line IN LISTS lines)
  # A suite's line starts in column 0: "Suite." or "Prefix/Suite.  # TypeParam = ..."; its cases
  # are indented.
  if(line MATCHES "^([A-Za-z0-9_/]+)\\.")
    set(suite ${CMAKE_MATCH_1})
    string(APPEND script
           "add_test([=[${suite}]=] [=[${TEST_EXECUTABLE}]=] [=[--gtest_filter=${suite}.*]=])\n"
           "set_tests_properties([=[${suite}]=] PROPERTIES ENVIRONMENT [=[${TEST_ENVIRONMENT}]=]"
           " SKIP_REGULAR_EXPRESSION [==[\\[  PASSED  \\] 0 tests\\.]==])\n")
  endif()
endforeach()
file(WRITE ${CTEST_FILE} "${script}")
