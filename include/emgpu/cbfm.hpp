/// @file
/// @brief Module header: the characteristic-basis-function method (CBFM) for
///        2D TM scattering by large contours and clouds of many cylinders,
///        an iteration-free MoM built on the batched LU/SVD and the dense
///        solver. See docs/cbfm.md.
///
/// @code
/// std::vector<emgpu::geometry::mesh> cloud = ...;               // many small cylinders
/// emgpu::scattering2d<emgpu::backend::openmp, emgpu::kernel::mom, emgpu::cbfm::solver<>> s(cloud, f);
/// auto r = s.solve({0.0}, emgpu::angles_deg(0, 360, 361));      // same result type as the direct solver
/// std::printf("N = %td, reduced K = %td\n", s.unknowns(), s.report().reduced);
/// @endcode
#pragma once

#include "cbfm/cloud.hpp"
#include "cbfm/partition.hpp"
#include "cbfm/scattering2d.hpp"
#include "cbfm/solver.hpp"
