# CPU tests of the cache and of the sweep (against a scripted fake backend); included from
# CMakeLists.txt.
st_test(test_cache)
add_test(NAME cache COMMAND test_cache)
st_test(test_sweep)
add_test(NAME sweep COMMAND test_sweep)
set_tests_properties(cache sweep PROPERTIES LABELS cpu)
st_test(test_verify)
add_test(NAME verify COMMAND test_verify)
set_tests_properties(verify PROPERTIES LABELS cpu)
add_test(NAME gpu_verify_rule COMMAND test_verify gpu)
set_tests_properties(gpu_verify_rule PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
add_test(NAME check_py COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/test_check_py.py)
set_tests_properties(check_py PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
