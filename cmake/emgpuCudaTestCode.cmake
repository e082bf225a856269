# Device code of emgpu's own CUDA tests (and the CUDA header checks).
#
# Without a GPU the CUDA tests can only be compiled, and they report as
# skipped: assembling their kernels to SASS (ptxas) would be more than half
# of their compile time (test_batched_svd_cuda: cicc 202 s, ptxas 365 s, host
# 57 s on the 2-core development machine) for binaries that never run there.
# So by default they are built as PTX when configure sees no GPU: every
# front-end check (syntax, templates, host/device rules, nvcc's diagnostics)
# still runs, and if such a build is later run on a GPU the driver compiles
# the PTX at first launch (slow once, then cached). Resource errors that only
# ptxas reports (e.g. too much static shared memory) are caught where a GPU
# is: scripts/gpu-check.sh configures with SASS.
#
#   EMGPU_CUDA_TEST_CODE = AUTO (default: SASS if nvidia-smi lists a GPU, else PTX)
#                        | SASS (CMAKE_CUDA_ARCHITECTURES as given)
#                        | PTX  (each architecture as <arch>-virtual)
# Examples and benchmarks always get CMAKE_CUDA_ARCHITECTURES.
# Sets EMGPU_CUDA_TEST_ARCHITECTURES, EMGPU_CUDA_TEST_CODE_USED, EMGPU_CUDA_TEST_CODE_WHY.

set(EMGPU_CUDA_TEST_CODE "AUTO" CACHE STRING
    "Device code of emgpu's CUDA tests: AUTO (SASS when a GPU is visible at configure time, else PTX), SASS, PTX")
set_property(CACHE EMGPU_CUDA_TEST_CODE PROPERTY STRINGS AUTO SASS PTX)
if(NOT EMGPU_CUDA_TEST_CODE MATCHES "^(AUTO|SASS|PTX)$")
  message(FATAL_ERROR "EMGPU_CUDA_TEST_CODE must be AUTO, SASS or PTX (got '${EMGPU_CUDA_TEST_CODE}')")
endif()

set(EMGPU_CUDA_TEST_CODE_USED ${EMGPU_CUDA_TEST_CODE})
set(EMGPU_CUDA_TEST_CODE_WHY "")
if(EMGPU_CUDA_TEST_CODE STREQUAL "AUTO")
  set(_emgpu_gpu_seen OFF)
  find_program(EMGPU_NVIDIA_SMI nvidia-smi)
  if(EMGPU_NVIDIA_SMI)
    execute_process(COMMAND ${EMGPU_NVIDIA_SMI} -L OUTPUT_VARIABLE _smi RESULT_VARIABLE _rc
                    ERROR_QUIET TIMEOUT 30)
    if(_rc EQUAL 0 AND _smi MATCHES "GPU [0-9]")
      set(_emgpu_gpu_seen ON)
    endif()
  endif()
  if(_emgpu_gpu_seen)
    set(EMGPU_CUDA_TEST_CODE_USED SASS)
  else()
    set(EMGPU_CUDA_TEST_CODE_USED PTX)
    set(EMGPU_CUDA_TEST_CODE_WHY
        "; no GPU seen, so compile-checked only: -DEMGPU_CUDA_TEST_CODE=SASS to assemble them here")
  endif()
endif()

set(EMGPU_CUDA_TEST_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
if(EMGPU_CUDA_TEST_CODE_USED STREQUAL "PTX")
  set(EMGPU_CUDA_TEST_ARCHITECTURES)
  foreach(_a IN LISTS CMAKE_CUDA_ARCHITECTURES)
    if(_a MATCHES "^([0-9]+[af]?)(-real|-virtual)?$")
      list(APPEND EMGPU_CUDA_TEST_ARCHITECTURES "${CMAKE_MATCH_1}-virtual")
    else()
      # native / all / all-major: no single virtual architecture to name.
      set(EMGPU_CUDA_TEST_ARCHITECTURES ${CMAKE_CUDA_ARCHITECTURES})
      set(EMGPU_CUDA_TEST_CODE_USED SASS)
      set(EMGPU_CUDA_TEST_CODE_WHY "; CMAKE_CUDA_ARCHITECTURES=${CMAKE_CUDA_ARCHITECTURES} kept as given")
      break()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES EMGPU_CUDA_TEST_ARCHITECTURES)
endif()
