/// @file
/// @brief Legacy VTK (ASCII STRUCTURED_POINTS) output of a scalar field on a
///        regular grid; ParaView and VisIt open it directly.
#pragma once

#include <array>
#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

namespace emgpu::tlm {

/// @brief Writes `values` (x fastest, dims[0] x dims[1] x dims[2]) as the
///        scalar array `name` of a legacy VTK file.
/// @throws emgpu::invalid_argument when a dimension is < 1, their product
///         overflows, sizes disagree or the name is empty;
///         emgpu::io_error when the file cannot be written.
inline void write_vtk(const std::string& path, const std::string& name,
                      const std::vector<double>& values, std::array<index_t, 3> dims,
                      std::array<double, 3> origin, double spacing) {
  emgpu::detail::require(dims[0] > 0 && dims[1] > 0 && dims[2] > 0,
                         "emgpu::tlm::write_vtk: every dimension must be >= 1");
  // Checked before multiplying: a wrapped product could match values.size().
  constexpr index_t lim = std::numeric_limits<index_t>::max();
  emgpu::detail::require(dims[0] <= lim / dims[1] && dims[0] * dims[1] <= lim / dims[2],
                         "emgpu::tlm::write_vtk: the number of points dims[0] dims[1] dims[2] overflows");
  emgpu::detail::require(index_t(values.size()) == dims[0] * dims[1] * dims[2],
                         "emgpu::tlm::write_vtk: values do not match dims");
  emgpu::detail::require(!name.empty() && name.find_first_of(" \t\n") == std::string::npos,
                  "emgpu::tlm::write_vtk: the array name must be one non-empty word");
  std::ofstream f(path);
  if (!f) throw io_error("emgpu::tlm::write_vtk: cannot open '" + path + "' for writing");
  f << "# vtk DataFile Version 3.0\n"
    << "emgpu tlm " << name << "\nASCII\nDATASET STRUCTURED_POINTS\n"
    << "DIMENSIONS " << dims[0] << ' ' << dims[1] << ' ' << dims[2] << '\n';
  f.precision(9);
  f << "ORIGIN " << origin[0] << ' ' << origin[1] << ' ' << origin[2] << '\n'
    << "SPACING " << spacing << ' ' << spacing << ' ' << spacing << '\n'
    << "POINT_DATA " << values.size() << '\n'
    << "SCALARS " << name << " float 1\nLOOKUP_TABLE default\n";
  for (std::size_t q = 0; q < values.size(); ++q) {
    // ParaView rejects "nan"/"inf" tokens in ASCII files.
    const double v = std::isfinite(values[q]) ? values[q] : 0.0;
    f << float(v) << ((q + 1) % 8 == 0 ? '\n' : ' ');
  }
  f << '\n';
  if (!f) throw io_error("emgpu::tlm::write_vtk: write to '" + path + "' failed");
}

}  // namespace emgpu::tlm
