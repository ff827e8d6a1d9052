# Helpers every folder uses, so a module's CMakeLists.txt stays a few lines.

set(APH_WARNINGS -Wall -Wextra -Wno-unused-parameter)
if(APH_WERROR)
  list(APPEND APH_WARNINGS -Werror)
endif()
set(APH_SANITIZER_FLAGS -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
if(APH_SANITIZE)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:${APH_SANITIZER_FLAGS}>")
  add_link_options(${APH_SANITIZER_FLAGS})
endif()
if(APH_FUZZ)
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX,C>:-fsanitize=fuzzer-no-link,address,undefined>")
  add_link_options(-fsanitize=address,undefined)
endif()

function(aph_apply_warnings target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${APH_WARNINGS}>)
endfunction()

# aph_add_library(name SOURCES ... [CUDA_SOURCES ...] [LIBS ...])
# A static core library. CUDA_SOURCES compile only when CUDA is on.
function(aph_add_library name)
  cmake_parse_arguments(A "" "" "SOURCES;CUDA_SOURCES;LIBS;PUBLIC_INCLUDE" ${ARGN})
  set(srcs ${A_SOURCES})
  if(APH_HAVE_CUDA)
    list(APPEND srcs ${A_CUDA_SOURCES})
  endif()
  add_library(${name} STATIC ${srcs})
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${A_LIBS})
  if(APH_HAVE_CUDA AND A_CUDA_SOURCES)
    target_link_libraries(${name} PUBLIC CUDA::cudart CUDA::cublas CUDA::cublasLt)
    set_target_properties(${name} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
  endif()
  aph_apply_warnings(${name})
endfunction()

# aph_add_plugin(name SOURCES ... [CUDA_SOURCES ...] [LIBS ...])
# A MODULE library with hidden visibility, built into build/plugins/.
function(aph_add_plugin name)
  cmake_parse_arguments(A "" "" "SOURCES;CUDA_SOURCES;LIBS" ${ARGN})
  set(srcs ${A_SOURCES})
  if(APH_HAVE_CUDA)
    list(APPEND srcs ${A_CUDA_SOURCES})
  endif()
  add_library(${name} MODULE ${srcs})
  target_link_libraries(${name} PRIVATE aphrodite_plugin_api ${A_LIBS})
  if(APH_HAVE_CUDA AND A_CUDA_SOURCES)
    target_link_libraries(${name} PRIVATE CUDA::cudart CUDA::cublas CUDA::cublasLt)
  endif()
  set_target_properties(${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${APH_PLUGIN_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  # clang's sanitizer runtime lives in the executable, not in shared objects,
  # so a fuzz build's plugins must leave those symbols undefined.
  if(NOT APH_FUZZ)
    target_link_options(${name} PRIVATE -Wl,--no-undefined)
  endif()
  aph_apply_warnings(${name})
endfunction()

# aph_add_test(name SOURCES ... [LIBS ...] [LABELS ...])
# A GoogleTest program registered with ctest.
function(aph_add_test name)
  cmake_parse_arguments(A "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main ${A_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  aph_apply_warnings(${name})
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set(labels unit ${A_LABELS})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}"
    ENVIRONMENT "APH_SOURCE_DIR=${CMAKE_SOURCE_DIR};APH_BUILD_DIR=${CMAKE_BINARY_DIR};APH_PLUGIN_DIR=${APH_PLUGIN_OUTPUT_DIR}")
endfunction()

# aph_add_gpu_test(name SOURCES ... [LIBS ...])
# Built only with CUDA; labelled "gpu" so CI (no GPU) excludes it with -LE gpu.
function(aph_add_gpu_test name)
  if(NOT APH_HAVE_CUDA)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE GTest::gtest GTest::gtest_main ${A_LIBS} CUDA::cudart)
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  aph_apply_warnings(${name})
  add_test(NAME ${name} COMMAND ${name} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "gpu"
    ENVIRONMENT "APH_SOURCE_DIR=${CMAKE_SOURCE_DIR};APH_BUILD_DIR=${CMAKE_BINARY_DIR};APH_PLUGIN_DIR=${APH_PLUGIN_OUTPUT_DIR}")
endfunction()

# aph_add_gpu_test_variant(test name filter env)
# The GPU test `test` again, as test_name, on the GoogleTest cases `filter`
# selects, with the environment settings `env` (knobs of docs/CONFIG.md).
function(aph_add_gpu_test_variant test name filter env)
  if(NOT APH_HAVE_CUDA)
    return()
  endif()
  add_test(NAME ${test}_${name} COMMAND ${test} --gtest_filter=${filter} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  # A filter that matches nothing would pass (gtest exits 0): such a variant fails.
  set_tests_properties(${test}_${name} PROPERTIES LABELS "gpu" ENVIRONMENT "${env}"
                       FAIL_REGULAR_EXPRESSION "Running 0 tests")
endfunction()

# aph_add_fuzzer(name SOURCES ... [LIBS ...])
# A libFuzzer harness; built only with -DAPH_FUZZ=ON under clang.
function(aph_add_fuzzer name)
  if(NOT APH_FUZZ)
    return()
  endif()
  cmake_parse_arguments(A "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${A_SOURCES})
  target_link_libraries(${name} PRIVATE ${A_LIBS})
  target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
  # The fuzz build compiles only what the harnesses need: `--target aph_fuzzers`.
  if(NOT TARGET aph_fuzzers)
    add_custom_target(aph_fuzzers)
  endif()
  add_dependencies(aph_fuzzers ${name})
endfunction()

# aph_add_pytest(name DIR [LABELS ...]) — runs pytest on a folder from the venv.
function(aph_add_pytest name)
  cmake_parse_arguments(A "" "DIR" "LABELS" ${ARGN})
  add_test(NAME ${name} COMMAND ${APH_PYTHON} -m pytest -q -x ${A_DIR}
    WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
  set_tests_properties(${name} PROPERTIES LABELS "python;${A_LABELS}"
    ENVIRONMENT "APH_SOURCE_DIR=${CMAKE_SOURCE_DIR};APH_BUILD_DIR=${CMAKE_BINARY_DIR};APH_PLUGIN_DIR=${APH_PLUGIN_OUTPUT_DIR};PYTHONDONTWRITEBYTECODE=1")
endfunction()
