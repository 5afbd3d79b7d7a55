# CPU tests of bundles, re-verification, old caches and the Slurm recipe (docs/fleet.md);
# included from tests/CMakeLists.txt.
st_test(test_migrate)
add_test(NAME migrate COMMAND test_migrate)
st_test(test_reverify)
add_test(NAME reverify COMMAND test_reverify)
st_test(test_bundle)
add_test(NAME bundle COMMAND test_bundle)
st_test(fake_tune)
add_test(NAME slurm COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/slurm_test.sh $<TARGET_FILE:softmax-tune> $<TARGET_FILE:fake_tune>)
set_tests_properties(migrate reverify bundle slurm PROPERTIES LABELS cpu)
