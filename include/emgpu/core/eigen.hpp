/// @file
/// @brief Eigen/Core as emgpu's headers include it: in a translation unit
///        compiled by nvcc, without Eigen 3.4's own nvcc warnings.
/// Why: Eigen 3.4 marks the explicitly defaulted members of DenseStorage
/// __host__ __device__, which nvcc 12+ reports once per instantiation and
/// annotation (#20012, 16 warnings in a .cu file that includes
/// emgpu/emgpu.hpp without -fopenmp); they are Eigen's, not the user's, and
/// nvcc attributes them to the declarations, so suppressing them while Eigen
/// is parsed removes them and nothing else. Where the user includes Eigen
/// first, their own include decides.
#pragma once

#if defined(__NVCC__)  // nvcc's pragmas (clang's CUDA mode would call them unknown)
#pragma nv_diagnostic push
#pragma nv_diag_suppress 20012
#endif
#include <Eigen/Core>
#if defined(__NVCC__)
#pragma nv_diagnostic pop
#endif
