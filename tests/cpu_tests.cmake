# CPU tests of the cache and of the sweep (against a scripted fake backend); included from
# CMakeLists.txt.
st_test(test_cache)
add_test(NAME cache COMMAND test_cache)
st_test(test_sweep)
add_test(NAME sweep COMMAND test_sweep)
st_test(test_fast)
add_test(NAME fast COMMAND test_fast)
set_tests_properties(cache sweep fast PROPERTIES LABELS cpu)
st_test(test_verify)
add_test(NAME verify COMMAND test_verify)
set_tests_properties(verify PROPERTIES LABELS cpu)
add_test(NAME gpu_verify_rule COMMAND test_verify gpu)
set_tests_properties(gpu_verify_rule PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
st_test(test_verify_bw)   # the backward ops' rule
target_include_directories(test_verify_bw PRIVATE ${CMAKE_SOURCE_DIR}/templates)
add_test(NAME verify_bw COMMAND test_verify_bw)
set_tests_properties(verify_bw PROPERTIES LABELS cpu)
add_test(NAME gpu_verify_rule_bw COMMAND test_verify_bw gpu)
set_tests_properties(gpu_verify_rule_bw PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
st_test(test_verify_ce)   # the cross-entropy ops' rule
target_include_directories(test_verify_ce PRIVATE ${CMAKE_SOURCE_DIR}/templates)
add_test(NAME verify_ce COMMAND test_verify_ce)
set_tests_properties(verify_ce PROPERTIES LABELS cpu)
add_test(NAME gpu_verify_rule_ce COMMAND test_verify_ce gpu)
set_tests_properties(gpu_verify_rule_ce PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
add_test(NAME check_py COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/test_check_py.py)
set_tests_properties(check_py PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
# record-then-tune without a GPU: write_untuned's file read back by the command's parser
add_test(NAME untuned_py COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/test_untuned_py.py $<TARGET_FILE:test_batch>)
set_tests_properties(untuned_py PROPERTIES LABELS cpu)
add_test(NAME import_py COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/test_import_py.py)
set_tests_properties(import_py PROPERTIES LABELS cpu)
# the Python package without torch: compiles, finds and loads the library, pip-installs
add_test(NAME python_pkg COMMAND bash ${CMAKE_SOURCE_DIR}/tests/python_pkg.sh ${CMAKE_SOURCE_DIR} $<TARGET_FILE:softmax_tune>
         ${CMAKE_BINARY_DIR})
set_tests_properties(python_pkg PROPERTIES LABELS cpu)
# `softmax-tune report`: the HTML page of a cache filled with the fake backend, checked by a
# parser (report.sh, check_report.py), and drawn by headless Chromium (report_screenshot.sh)
st_test(report_cache)
add_test(NAME report COMMAND bash ${CMAKE_SOURCE_DIR}/tests/report.sh $<TARGET_FILE:softmax-tune> $<TARGET_FILE:report_cache>)
add_test(NAME report_screenshot COMMAND bash ${CMAKE_SOURCE_DIR}/tests/report_screenshot.sh $<TARGET_FILE:softmax-tune>
         $<TARGET_FILE:report_cache>)
set_tests_properties(report report_screenshot PROPERTIES LABELS cpu SKIP_RETURN_CODE 77)
set_tests_properties(report_screenshot PROPERTIES TIMEOUT 900)
# lists and several GPUs (fake ones), with the command's list parsing and summary
st_test(test_batch ${CMAKE_SOURCE_DIR}/cli/list.c ${CMAKE_SOURCE_DIR}/cli/batch.c ${CMAKE_SOURCE_DIR}/cli/tune.c
        ${CMAKE_SOURCE_DIR}/cli/reverify.c ${CMAKE_SOURCE_DIR}/runtime/untuned.c ${CMAKE_SOURCE_DIR}/runtime/kset.c)
target_include_directories(test_batch PRIVATE ${CMAKE_SOURCE_DIR}/cli ${CMAKE_SOURCE_DIR}/runtime ${CMAKE_SOURCE_DIR}/include)
add_test(NAME batch COMMAND test_batch)
set_tests_properties(batch PROPERTIES LABELS cpu TIMEOUT 120)
st_test(test_cubins)   # kept cubins (cache/cubins.c): NVRTC without a GPU
add_test(NAME cubins COMMAND test_cubins)
set_tests_properties(cubins PROPERTIES LABELS cpu)
st_test(test_verify_attn)   # attention_softmax's rule
add_test(NAME verify_attn COMMAND test_verify_attn)
set_tests_properties(verify_attn PROPERTIES LABELS cpu)
st_test(test_verify_attn_bw)   # attention_softmax_backward's rule
add_test(NAME verify_attn_bw COMMAND test_verify_attn_bw)
set_tests_properties(verify_attn_bw PROPERTIES LABELS cpu)
