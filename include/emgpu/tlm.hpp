/// @file
/// @brief Module header of emgpu::tlm: the 3D transmission-line matrix (TLM)
///        time-domain solver with Johns' symmetrical condensed node, on the
///        serial, OpenMP and CUDA backends. See docs/tlm.md.
#pragma once

#include "tlm/node.hpp"
#include "tlm/mesh.hpp"
#include "tlm/source.hpp"
#include "tlm/spectrum.hpp"
#include "tlm/vtk.hpp"
#include "tlm/solver.hpp"
