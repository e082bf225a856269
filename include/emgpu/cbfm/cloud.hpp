/// @file
/// @brief A reproducible random cloud of circular PEC cylinders (the 2D
///        analogue of a particle pack), for examples, benchmarks and tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "../geometry/mesh.hpp"

namespace emgpu::cbfm {

/// @brief Where and how large the cylinders of a cloud are.
struct cloud_options {
  index_t count = 300;        ///< number of cylinders
  double radius = 0.1;        ///< cylinder radius (m)
  index_t cells = 16;         ///< cells per cylinder
  double min_gap = 1.0;       ///< smallest surface-to-surface gap, in radii
  double fill = 0.05;         ///< area fraction of the square holding them (sets its side)
  std::uint64_t seed = 1;     ///< random positions are a function of this alone
};

/// @brief Centres of `o.count` non-overlapping cylinders placed uniformly at
///        random in a square of side sqrt(count pi r^2 / fill) with corner at
///        the origin (rejection sampling on a cell grid: O(count)).
/// @throws invalid_argument for non-positive sizes, or when the cylinders do
///         not fit (fill too high for min_gap).
inline std::vector<geometry::point2> cloud_centres(const cloud_options& o) {
  emgpu::detail::require(o.count >= 1 && std::isfinite(o.radius) && o.radius > 0 && o.cells >= 3 && o.min_gap >= 0 &&
                      std::isfinite(o.fill) && o.fill > 0 && o.fill < 0.5,
                  "emgpu::cbfm::cloud_centres: need count >= 1, radius > 0, cells >= 3, min_gap >= 0, 0 < fill < 0.5");
  const double side = std::sqrt(double(o.count) * constants::pi * o.radius * o.radius / o.fill);
  const double dmin = (2 + o.min_gap) * o.radius;  // centre-to-centre
  const index_t g = std::max<index_t>(1, index_t(side / dmin));
  const double h = side / double(g);  // grid cell >= dmin: neighbours within one cell
  std::vector<std::vector<index_t>> grid(std::size_t(g * g));
  std::vector<geometry::point2> c;
  c.reserve(std::size_t(o.count));
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> u(o.radius, side - o.radius);
  const std::size_t max_tries = std::size_t(o.count) * 2000;
  for (std::size_t tries = 0; index_t(c.size()) < o.count; ++tries) {
    emgpu::detail::require(tries < max_tries, "emgpu::cbfm::cloud_centres: cannot place the cylinders (fill too high)");
    const geometry::point2 p{u(rng), u(rng)};
    const index_t gx = std::min(g - 1, index_t(p.x / h)), gy = std::min(g - 1, index_t(p.y / h));
    bool ok = true;
    for (index_t ix = std::max<index_t>(0, gx - 1); ok && ix <= std::min(g - 1, gx + 1); ++ix)
      for (index_t iy = std::max<index_t>(0, gy - 1); ok && iy <= std::min(g - 1, gy + 1); ++iy)
        for (index_t k : grid[std::size_t(ix + iy * g)])
          if (std::hypot(p.x - c[std::size_t(k)].x, p.y - c[std::size_t(k)].y) < dmin) {
            ok = false;
            break;
          }
    if (!ok) continue;
    grid[std::size_t(gx + gy * g)].push_back(index_t(c.size()));
    c.push_back(p);
  }
  return c;
}

/// @brief The meshes of the cloud of cloud_centres(o): circles of o.radius, o.cells cells each.
inline std::vector<geometry::mesh> cloud(const cloud_options& o) {
  std::vector<geometry::mesh> m;
  for (const auto& p : cloud_centres(o)) m.emplace_back(geometry::circle(o.radius, p), o.cells);
  return m;
}

}  // namespace emgpu::cbfm
