# Reliability tests; included from CMakeLists.txt. CPU: the cache under SIGKILL and under
# concurrent tuners (fake backend), and the bad-input table of the command. GPU: the same on
# the real command (skipped, exit 77, without a GPU).
st_test(test_kill)
add_test(NAME kill COMMAND test_kill)
st_test(test_concurrent)
add_test(NAME concurrent COMMAND test_concurrent)
add_test(NAME bad_input COMMAND bash ${CMAKE_SOURCE_DIR}/tests/bad_input.sh $<TARGET_FILE:softmax-tune>
         $<TARGET_FILE:test_concurrent>)
set_tests_properties(kill concurrent bad_input PROPERTIES LABELS cpu TIMEOUT 300)

add_test(NAME gpu_reliability COMMAND bash ${CMAKE_SOURCE_DIR}/tests/gpu_reliability.sh $<TARGET_FILE:softmax-tune>)
set_tests_properties(gpu_reliability PROPERTIES LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 1800)
