# CPU tests of the cache and of the sweep (against a scripted fake backend); included from
# CMakeLists.txt.
st_test(test_cache)
add_test(NAME cache COMMAND test_cache)
st_test(test_sweep)
add_test(NAME sweep COMMAND test_sweep)
set_tests_properties(cache sweep PROPERTIES LABELS cpu)
