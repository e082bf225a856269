# Resolves emgpu's dependencies into imported targets. Used by the build tree
# and, installed, by emgpuConfig.cmake, so a consumer gets the same detection.
#
# In:  EMGPU_WANT_OPENMP (AUTO/ON/OFF)
# Out: emgpu::deps (Eigen, Thrust/CUB headers, OpenMP when enabled),
#      emgpu::cuda_libs (cudart, cuBLAS, cuSOLVER) when the CUDA toolkit is found,
#      EMGPU_HAVE_OPENMP, EMGPU_THRUST_INCLUDE_DIR.
include_guard(GLOBAL)

find_package(Eigen3 3.4 REQUIRED NO_MODULE)

# The CUDA toolkit is optional: it supplies CCCL (Thrust/CUB/libcu++) headers
# and the CUDA libraries. A CPU-only machine uses Debian's libthrust-dev.
find_package(CUDAToolkit QUIET)
set(_emgpu_thrust_hints)
if(CUDAToolkit_FOUND)
  foreach(_d IN LISTS CUDAToolkit_INCLUDE_DIRS)
    list(APPEND _emgpu_thrust_hints "${_d}/cccl" "${_d}")
  endforeach()
endif()
find_path(EMGPU_THRUST_INCLUDE_DIR thrust/complex.h HINTS ${_emgpu_thrust_hints}
          PATHS /usr/local/cuda/include/cccl /usr/include
          DOC "Directory holding thrust/ (CCCL from the CUDA toolkit or libthrust-dev)")
if(NOT EMGPU_THRUST_INCLUDE_DIR)
  message(FATAL_ERROR "emgpu needs Thrust headers: install the CUDA toolkit or "
                      "Debian's libthrust-dev, or set EMGPU_THRUST_INCLUDE_DIR")
endif()

set(EMGPU_HAVE_OPENMP OFF)
if(NOT EMGPU_WANT_OPENMP STREQUAL "OFF")
  if(EMGPU_WANT_OPENMP STREQUAL "ON")
    find_package(OpenMP REQUIRED COMPONENTS CXX)
  else()
    find_package(OpenMP QUIET COMPONENTS CXX)
  endif()
  if(OpenMP_CXX_FOUND)
    set(EMGPU_HAVE_OPENMP ON)
  endif()
endif()

if(NOT TARGET emgpu::deps)
  add_library(emgpu::deps INTERFACE IMPORTED)
  target_link_libraries(emgpu::deps INTERFACE Eigen3::Eigen)
  # SYSTEM: warnings inside Thrust are not ours to fix.
  target_include_directories(emgpu::deps SYSTEM INTERFACE "${EMGPU_THRUST_INCLUDE_DIR}")
  if(EMGPU_HAVE_OPENMP)
    target_link_libraries(emgpu::deps INTERFACE OpenMP::OpenMP_CXX)
    # nvcc passes host flags through -Xcompiler; OpenMP_CXX's flags only apply to CXX.
    target_compile_options(emgpu::deps INTERFACE
      $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${OpenMP_CXX_FLAGS}>)
  endif()
endif()

if(CUDAToolkit_FOUND AND NOT TARGET emgpu::cuda_libs)
  add_library(emgpu::cuda_libs INTERFACE IMPORTED)
  target_link_libraries(emgpu::cuda_libs INTERFACE CUDA::cudart CUDA::cublas CUDA::cusolver)
  # Extended lambdas let generic code pass [=] __host__ __device__ lambdas to
  # for_each_index; relaxed constexpr lets std constexpr helpers run on device.
  target_compile_options(emgpu::cuda_libs INTERFACE
    $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --expt-relaxed-constexpr>)
endif()
