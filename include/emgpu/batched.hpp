/// @file
/// @brief Module header: batched dense solvers for many small matrices (LU
///        with partial pivoting, QR by Givens rotations, one-sided Jacobi SVD)
///        on the serial, OpenMP and CUDA backends, and the workspace they can
///        keep between calls; with nvcc, multi_gpu streams batches held in
///        host memory through one or several GPUs. See docs/batched.md.
#pragma once

#include "batched/lu.hpp"
#include "batched/multi_gpu.hpp"
#include "batched/qr.hpp"
#include "batched/svd.hpp"
#include "batched/workspace.hpp"
