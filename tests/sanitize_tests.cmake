# Tests and test settings for checked builds; included last from tests/CMakeLists.txt.
#   valgrind_cli (cpu): the command under valgrind memcheck (tests/valgrind_cli.sh); not in a
#     sanitizer build (-DST_SANITIZE=...), since valgrind and the sanitizers' runtimes do not mix.
#   In a sanitizer build (see cmake/sanitize.cmake), install_consumers builds an uninstrumented
#     example program against the instrumented libsoftmax_tune.so and runs it, and python_pkg
#     loads that library into python3: ASan must then be preloaded to come first. The preload reaches every program of that test (bash, cmake, the
#     compiler, the linker), whose leaks at exit are not ours: leak checking is off there alone.
if(NOT ST_SANITIZE)
  add_test(NAME valgrind_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/valgrind_cli.sh $<TARGET_FILE:softmax-tune>)
  set_tests_properties(valgrind_cli PROPERTIES LABELS cpu SKIP_RETURN_CODE 77 TIMEOUT 900)
elseif(ST_SANITIZE MATCHES "address" AND TEST install_consumers)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")   # its shared runtime: cmake/sanitize.cmake links that one
    set(st_asan_names libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so libclang_rt.asan.so)
  else()
    set(st_asan_names libasan.so)
  endif()
  foreach(name ${st_asan_names})
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${name}
                    OUTPUT_VARIABLE st_libasan OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(IS_ABSOLUTE "${st_libasan}" AND EXISTS "${st_libasan}")
      break()
    endif()
  endforeach()
  if(IS_ABSOLUTE "${st_libasan}" AND EXISTS "${st_libasan}")
    # python_pkg loads the instrumented library into an uninstrumented python3 (ctypes)
    set_property(TEST install_consumers python_pkg APPEND PROPERTY ENVIRONMENT
                 "LD_PRELOAD=${st_libasan}" "ASAN_OPTIONS=${ST_ASAN_OPTIONS}:detect_leaks=0")
  else()
    message(WARNING "sanitize_tests.cmake: no ASan runtime (${st_asan_names}) from ${CMAKE_C_COMPILER}; install_consumers will fail")
  endif()
endif()
