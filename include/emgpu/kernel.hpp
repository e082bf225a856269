/// @file
/// @brief 2D TM EFIE kernels (namespace emgpu::kernel): the pulse-basis MoM
///        (`mom`) and the locally corrected Nystrom (`lcn<Q>`) policies, and
///        the backend operator that fills their matrices and evaluates fields.
#pragma once

#include "kernel/discretization.hpp"
#include "kernel/efie2d_operator.hpp"
#include "kernel/lcn.hpp"
#include "kernel/mom.hpp"
