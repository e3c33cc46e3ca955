# strata_tests_sleep_when_idle(): every test of the calling directory runs with OpenMP threads that
# sleep when they wait (OMP_WAIT_POLICY=PASSIVE). The README's `ctest -j2` runs two processes of
# two OpenMP threads each on two cores; with libgomp's default spinning, a process's barrier waits
# while the other's threads spin on the cores it needs.
function(strata_tests_sleep_when_idle)
  get_property(tests DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR} PROPERTY TESTS)
  foreach(t IN LISTS tests)
    set_property(TEST ${t} APPEND PROPERTY ENVIRONMENT "OMP_WAIT_POLICY=PASSIVE")
  endforeach()
endfunction()
