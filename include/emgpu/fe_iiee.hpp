/// @file
/// @brief FE-IIEE mesh truncation: the radiation operator that turns the
///        equivalent currents on S' into E and curl E on the FEM boundary S
///        (serial, OpenMP, CUDA and several GPUs), the Psi helper and the
///        Hertzian-dipole reference. See docs/fe_iiee.md.
#pragma once

#include "fe_iiee/types.hpp"
#include "fe_iiee/radiation_kernel.hpp"
#include "fe_iiee/radiation_operator.hpp"
#include "fe_iiee/multi_gpu.hpp"
#include "fe_iiee/psi.hpp"
#include "fe_iiee/hertzian_dipole.hpp"
#include "fe_iiee/detail/tensor_fragments.hpp"  // host-checkable algebra of the CUDA kernel
