/// @file
/// @brief 2D geometry: contours (circle, ellipse, polygon, rectangle, parametric,
///        interpolated node lists), the node-file reader and the cell mesh.
#pragma once

#include "geometry/contour.hpp"
#include "geometry/mesh.hpp"
#include "geometry/node_file.hpp"
