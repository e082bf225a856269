/// @file
/// @brief Pulse-basis, point-matching method of moments for the 2D TM EFIE on
///        flat cells (the seed scheme), optionally with accurate near entries.
///
/// Entries (design/physics-conventions.md, shared):
///   Z_mn = (k eta / 4) w_n H0^(2)(k R_mn)        m != n, R between cell centres
///   Z_mm = (k eta w_m / 4) [1 - j (2/pi) ln(gamma k w_m / (4 e))]
/// The one-point rule on near off-diagonal entries makes this FIRST order
/// (relative L2 error of J_z about 3.8/N on a circle at ka = 2 pi). With
/// `accurate_near`, entries whose source cell lies within `near_fraction` of the
/// contour length from the observer are integrated over the source cell by
/// Gauss-Legendre (graded toward the observer for adjacent cells), which
/// makes the scheme second order: the one-point rule's error on an entry at
/// distance d is ~ w^3 / d^2, so only a FIXED physical neighbourhood (not a
/// fixed number of cells) removes the O(w) sum. The near set therefore grows
/// like N^2 (near_fraction * N^2 blocks of 32 bytes plus rules): meant for
/// N up to a few thousand; use lcn<Q> beyond.
#pragma once

#include <cmath>
#include <vector>

#include "../core/error.hpp"
#include "../geometry/mesh.hpp"
#include "detail/near_rules.hpp"
#include "discretization.hpp"

namespace emgpu::kernel {

/// @brief Pulse-basis point-matching MoM kernel policy (cells are the flat
///        chords between the mesh nodes, whatever the mesh's cell shape).
struct mom {
  /// Integrate near off-diagonal entries over the source cell (second order).
  bool accurate_near = false;
  /// Source cells within this fraction of the contour length (centre to
  /// centre) count as near when accurate_near is set; at least the two
  /// neighbours always do.
  double near_fraction = 1.0 / 8;
  /// Gauss-Legendre points for near entries that are not adjacent, in
  /// 1..detail::max_rule_points (256). For an observer d off the middle of a
  /// cell of length w, n points converge like rho^(-2n), rho = delta +
  /// sqrt(delta^2 + 1), delta = 2 d / w: 8 give ~1e-15 from d ~ 2 w (the
  /// nearest non-adjacent observers on a smooth contour), 256 from d ~ w / 30;
  /// faces closer than that (thin bodies) want a finer mesh, not more points.
  int near_points = 8;

  /// @brief Unknowns at the chord midpoints, weights = chord lengths, and the
  ///        near plan.
  /// @param m the mesh (its cells are used as flat chords).
  /// @throws invalid_argument for near_fraction < 0 or not finite, or
  ///         near_points outside 1..256.
  discretization discretize(const geometry::mesh& m) const {
    emgpu::detail::require(near_fraction >= 0 && std::isfinite(near_fraction),
                           "emgpu::kernel::mom: near_fraction must be finite and >= 0");
    emgpu::detail::require(near_points >= 1 && near_points <= detail::max_rule_points,
                           "emgpu::kernel::mom: near_points must be in 1..256");
    discretization d;
    const index_t n = m.size();
    d.n = n;
    d.q = 1;
    d.coef = {1.0};
    d.analytic_self = true;
    d.x.resize(std::size_t(n));
    d.y.resize(std::size_t(n));
    d.w.resize(std::size_t(n));
    d.cell.resize(std::size_t(n));
    double total = 0;
    for (index_t i = 0; i < n; ++i) {
      const auto a = m.start(i), b = m.end(i);
      d.x[std::size_t(i)] = 0.5 * (a.x + b.x);
      d.y[std::size_t(i)] = 0.5 * (a.y + b.y);
      d.w[std::size_t(i)] = geometry::norm(b - a);
      d.cell[std::size_t(i)] = i;
      total += d.w[std::size_t(i)];
    }
    if (!accurate_near) return d;
    const auto flat = geometry::cell_shape::flat;
    detail::near_rule_builder rb(m, flat, {});
    const auto gl = detail::gauss_legendre(near_points);  // once: O(near_points^2) to build
    const double radius = near_fraction * total;
    for (index_t c = 0; c < n; ++c) {  // source cell
      std::pair<index_t, index_t> uni{-1, -1};
      const geometry::point2 cc{d.x[std::size_t(c)], d.y[std::size_t(c)]};
      for (index_t o = 0; o < n; ++o) {  // observer
        if (o == c) continue;
        const geometry::point2 oc{d.x[std::size_t(o)], d.y[std::size_t(o)]};
        const bool adjacent = o == m.prev(c) || o == m.next(c);
        if (!adjacent && geometry::norm(oc - cc) > radius) continue;
        std::pair<index_t, index_t> r;
        if (adjacent) {
          const bool before = o == m.prev(c), after = o == m.next(c);
          r = before != after ? rb.adjacent(c, before ? -1 : 1, o, {oc}, d.rules) : rb.graded(c, {oc}, d.rules);
        }
        else {
          if (uni.first < 0) uni = detail::uniform_rule(m, flat, c, gl, d.rules);
          r = uni;
        }
        d.blocks.push_back({o, c, r.first, r.second});
      }
    }
    return d;
  }
};

}  // namespace emgpu::kernel
