/// @file
/// @brief Exact reference solutions (host only): Mie series for a PEC circular
///        cylinder and the integer-order Bessel recurrences they rest on.
#pragma once

#include "analytic/bessel_series.hpp"
#include "analytic/cylinder.hpp"
