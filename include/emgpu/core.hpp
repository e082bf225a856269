/// @file
/// @brief Module header: configuration, complex type, SI constants, errors.
#pragma once

#include "core/config.hpp"
#include "core/complex.hpp"
#include "core/constants.hpp"
#include "core/error.hpp"
#include "core/matrix_view.hpp"
