/// @file
/// @brief Dense direct solvers (module header): LU with partial pivoting
///        (emgpu::dense::crout_lu, lu_factor, lu_solve), triangular inversion
///        (tri_inverse, lu_solve_inverse) and the dense_solver concept.
/// See docs/dense.md.
#pragma once

#include "dense/lu.hpp"
#include "dense/mixed_lu.hpp"
#include "dense/solver_concept.hpp"

namespace emgpu::dense {
static_assert(dense_solver<crout_lu, backend::serial, complexd>,
              "crout_lu must satisfy emgpu::dense::dense_solver");
}  // namespace emgpu::dense
