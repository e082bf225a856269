# Helpers for emgpu's own tests, examples and benchmarks (not installed).
#
# A source is written once and built per backend: the CPU build instantiates
# the serial and OpenMP backends; when CUDA is enabled the same source is
# wrapped in a generated .cu file and built again with EMGPU_TEST_CUDA defined,
# which instantiates the CUDA backend (as Thrust's flexible-device-system example).

add_library(emgpu_warnings INTERFACE)
target_compile_options(emgpu_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unknown-pragmas,-Wno-missing-field-initializers>)

add_library(emgpu_sanitize INTERFACE)
if(EMGPU_SANITIZE)
  target_compile_options(emgpu_sanitize INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(emgpu_sanitize INTERFACE -fsanitize=address,undefined)
endif()

# Wraps `src` in a generated .cu file so the same source compiles under nvcc.
function(emgpu_cuda_wrapper out_var src)
  get_filename_component(_abs "${src}" ABSOLUTE)
  get_filename_component(_name "${src}" NAME_WE)
  set(_cu "${CMAKE_CURRENT_BINARY_DIR}/cuda_wrappers/${_name}.cu")
  file(CONFIGURE OUTPUT "${_cu}" CONTENT "// Generated: ${_abs} built by nvcc.\n#include \"${_abs}\"\n")
  set(${out_var} "${_cu}" PARENT_SCOPE)
endfunction()

# emgpu_add_executable(NAME <n> SOURCES <src...> [CPU_ONLY] [SMOKE_TEST] [TEST_CODE] [LIBS <l...>]
#                      [CPU_LIBS <l...>] [CUDA_LIBS <l...>])
# Builds <n> for the host backends and, with CUDA, <n>_cuda from the same sources.
# TEST_CODE (tests): <n>_cuda gets EMGPU_CUDA_TEST_ARCHITECTURES (PTX only when
# configure saw no GPU, see emgpuCudaTestCode.cmake).
# SMOKE_TEST (examples): with the tests on, ctest runs the CPU build with no
# arguments in its build folder (test example_<n>, labels cpu and examples).
function(emgpu_add_executable)
  cmake_parse_arguments(A "CPU_ONLY;SMOKE_TEST;TEST_CODE" "NAME" "SOURCES;LIBS;CPU_LIBS;CUDA_LIBS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  if(A_SMOKE_TEST AND EMGPU_BUILD_TESTS)
    add_test(NAME example_${A_NAME} COMMAND ${A_NAME} WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
    set_tests_properties(example_${A_NAME} PROPERTIES LABELS "cpu;examples" TIMEOUT 300)
  endif()
  target_link_libraries(${A_NAME} PRIVATE emgpu::emgpu emgpu_warnings emgpu_sanitize ${A_LIBS}
                        ${A_CPU_LIBS})
  set(_targets ${A_NAME})
  if(EMGPU_HAVE_CUDA AND NOT A_CPU_ONLY)
    set(_cu_sources)
    foreach(_s IN LISTS A_SOURCES)
      emgpu_cuda_wrapper(_cu "${_s}")
      list(APPEND _cu_sources "${_cu}")
    endforeach()
    add_executable(${A_NAME}_cuda ${_cu_sources})
    target_compile_definitions(${A_NAME}_cuda PRIVATE EMGPU_TEST_CUDA=1)
    target_include_directories(${A_NAME}_cuda PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
    target_link_libraries(${A_NAME}_cuda PRIVATE emgpu::cuda emgpu_warnings ${A_LIBS} ${A_CUDA_LIBS})
    if(A_TEST_CODE)
      set_target_properties(${A_NAME}_cuda PROPERTIES CUDA_ARCHITECTURES "${EMGPU_CUDA_TEST_ARCHITECTURES}")
    endif()
    list(APPEND _targets ${A_NAME}_cuda)
  endif()
  set(EMGPU_LAST_TARGETS ${_targets} PARENT_SCOPE)
endfunction()

# emgpu_add_test(NAME <n> SOURCES <src...> [LABELS <l...>] [CPU_ONLY] [TIMEOUT s])
# CPU test `<n>` (label cpu) and CUDA test `<n>_cuda` (label cuda). A CUDA test
# on a machine without a GPU exits 77, which ctest reports as skipped.
function(emgpu_add_test)
  cmake_parse_arguments(A "CPU_ONLY" "NAME;TIMEOUT" "SOURCES;LABELS;LIBS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 600)
  endif()
  set(_cpu_only)
  if(A_CPU_ONLY)
    set(_cpu_only CPU_ONLY)
  endif()
  if(NOT A_SOURCES)
    message(FATAL_ERROR "emgpu_add_test(${A_NAME}): no SOURCES")
  endif()
  emgpu_add_executable(NAME test_${A_NAME} SOURCES ${A_SOURCES} ${_cpu_only} TEST_CODE LIBS ${A_LIBS}
                       CPU_LIBS emgpu_test_main CUDA_LIBS emgpu_test_main_cuda)
  add_test(NAME ${A_NAME} COMMAND test_${A_NAME})
  set_tests_properties(${A_NAME} PROPERTIES LABELS "cpu;${A_LABELS}" TIMEOUT ${A_TIMEOUT})
  if(TARGET test_${A_NAME}_cuda)
    add_test(NAME ${A_NAME}_cuda COMMAND test_${A_NAME}_cuda)
    set_tests_properties(${A_NAME}_cuda PROPERTIES LABELS "cuda;${A_LABELS}" TIMEOUT ${A_TIMEOUT}
                         SKIP_RETURN_CODE 77)
    # nvcc only warns (#20011/#20014) when an EMGPU_HD function calls a
    # host-only one, and then emits an EMPTY device body: every batched QR
    # kernel once silently did nothing on CUDA that way. Errors in the tests.
    # #20208 ("long double is treated as double in device code"): the tests'
    # host-side references hold Eigen matrices of long double, and Eigen marks
    # its functions __host__ __device__; no library header uses long double
    # on the device (the header checks, which keep the warning, show it).
    target_compile_options(test_${A_NAME}_cuda PRIVATE
                           $<$<COMPILE_LANGUAGE:CUDA>:--diag-error=20011,20014 --diag-suppress=20208>)
  endif()
endfunction()
