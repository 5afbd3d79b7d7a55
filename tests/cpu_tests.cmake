# CPU tests of the cache and of the sweep (against a scripted fake backend); included from
# CMakeLists.txt.
st_test(test_cache)
add_test(NAME cache COMMAND test_cache)
st_test(test_sweep)
add_test(NAME sweep COMMAND test_sweep)
set_tests_properties(cache sweep PROPERTIES LABELS cpu)
# lists and several GPUs (fake ones), with the command's list parsing and summary
st_test(test_batch ${CMAKE_SOURCE_DIR}/cli/list.c ${CMAKE_SOURCE_DIR}/cli/batch.c ${CMAKE_SOURCE_DIR}/cli/tune.c)
target_include_directories(test_batch PRIVATE ${CMAKE_SOURCE_DIR}/cli)
add_test(NAME batch COMMAND test_batch)
set_tests_properties(batch PROPERTIES LABELS cpu TIMEOUT 120)
