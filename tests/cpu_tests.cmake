# CPU tests of the cache and of the sweep (against a scripted fake backend); included from
# CMakeLists.txt.
st_test(test_cache)
add_test(NAME cache COMMAND test_cache)
st_test(test_sweep)
add_test(NAME sweep COMMAND test_sweep)
st_test(test_migrate)
add_test(NAME migrate COMMAND test_migrate)
st_test(test_reverify)
add_test(NAME reverify COMMAND test_reverify)
st_test(test_bundle)
add_test(NAME bundle COMMAND test_bundle)
set_tests_properties(cache sweep migrate reverify bundle PROPERTIES LABELS cpu)
