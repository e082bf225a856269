/// @file
/// @brief Module header: special functions (J0, J1, Y0, Y1, H0^(2), H1^(2)) of real
///        argument for host and device, Gauss-Legendre rules and the product-
///        integration rule for logarithmic kernels (namespace emgpu::math).
#pragma once

#include "math/bessel.hpp"
#include "math/quadrature.hpp"
