/// @file
/// @brief Umbrella header: everything emgpu offers.
///
/// Include this, or a module header (emgpu/core.hpp, emgpu/backend.hpp,
/// emgpu/math.hpp, ...) for less. The CUDA backend and the CUDA paths of the
/// solvers appear only in translation units compiled by nvcc.
#pragma once

#include "core.hpp"
#include "backend.hpp"
#include "math.hpp"
#include "dense.hpp"
#include "batched.hpp"
#include "scattering2d.hpp"  // with geometry.hpp, kernel.hpp, analytic.hpp
#include "cbfm.hpp"
#include "fe_iiee.hpp"
#include "tlm.hpp"
