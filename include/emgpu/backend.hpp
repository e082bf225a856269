/// @file
/// @brief Module header: the backends (serial, openmp, and cuda under nvcc) and
///        the generic primitives written once over them.
#pragma once

#include "backend/traits.hpp"
#include "backend/serial.hpp"
#include "backend/openmp.hpp"
#include "backend/cuda.hpp"
#include "backend/cuda_libraries_check.hpp"
#include "backend/cuda_mma.hpp"
#include "backend/algorithms.hpp"
