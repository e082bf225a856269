/// @file
/// @brief Builds the fine quadrature rules of the near interactions (host).
///
/// Self cell (observer s0 on the source cell): split at s0; on each side
/// s = s0 +- h y, y in (0, 1), and
///   H0^(2)(kR) = [H0^(2)(kR) + (2j/pi) J0(kR) ln|s - s0|] - (2j/pi) J0(kR) ln|s - s0|,
/// the bracket being smooth (it equals -(2j/pi) J0 ln(R/|s-s0|) + analytic), so
/// Gauss-Legendre handles it, and the last term takes the product weights of
/// ln y (ln|s - s0| = ln h + ln y). Both parts share the nodes, which folds
/// them into one point with weights a = h w |r'| and b = h |r'| (w ln y - v),
/// v being the product weights of ln y (emgpu::math::log_product_weights).
///
/// Neighbour cells (observer off the cell but close to it): panels graded
/// geometrically (ratio 1/2) toward the point of the cell nearest the observers,
/// down to a panel no longer than that distance; each panel is then at least
/// its own length from the near-singularity, where n-point Gauss-Legendre
/// converges like (3 + sqrt 8)^(-2n).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../../core/error.hpp"
#include "../../geometry/mesh.hpp"
#include "../discretization.hpp"
#include "rules.hpp"

namespace emgpu::kernel::detail {

/// @brief Largest size of any fine near rule (lcn log_points / panel_points,
///        mom near_points).
///
/// Why 256: the defaults (16 log points per side, 14 per graded panel) reach
/// ~1e-15 on cells up to a tenth of a wavelength, graded panels converging
/// like (3 + sqrt 8)^(-2n) (1e-21 at n = 14). The points a rule needs grow
/// about linearly with the cell's electrical length k h (the log rule gets
/// Integral_0^1 cos(40 y) ln y dy to rounding with 64 points), so 256 covers
/// cells tens of wavelengths long, far beyond where the q <= 10 node far rule
/// (or MoM's one-point rule) is accurate at all. More points buy nothing and
/// cost O(n^2) to build the rule (long double Newton on P_n) plus n Hankel
/// values per near block in every fill.
inline constexpr int max_rule_points = 256;

/// Fine-rule sizes; the defaults give ~1e-15 relative on smooth cells.
struct near_rule_options {
  int log_points = 16;    ///< Gauss points per side of a self cell
  int panel_points = 14;  ///< Gauss points per graded panel
};

class near_rule_builder {
 public:
  /// @throws invalid_argument for rule sizes outside 1..max_rule_points.
  near_rule_builder(const geometry::mesh& m, geometry::cell_shape shape, near_rule_options o)
      : m_(m), shape_(shape), o_(checked(o)), lr_(log_endpoint_rule(o.log_points)),
        gl_(gauss_legendre(o.panel_points)) {}

  /// Appends the self rule of cell c for the observer at s0; returns [begin, end).
  std::pair<index_t, index_t> self(index_t c, double s0, std::vector<rule_point>& out) const {
    const index_t begin = index_t(out.size());
    for (int side = -1; side <= 1; side += 2) {
      const double h = side < 0 ? s0 + 1 : 1 - s0;
      if (h <= 0) continue;
      for (std::size_t i = 0; i < lr_.y.size(); ++i) {
        const double s = s0 + side * h * lr_.y[i];
        const auto p = m_.eval(c, s, shape_);
        const double j = geometry::norm(p.dr);
        out.push_back({p.r.x, p.r.y, s, h * lr_.w[i] * j, h * j * (lr_.w[i] * std::log(lr_.y[i]) - lr_.v[i])});
      }
    }
    return {begin, index_t(out.size())};
  }

  /// Appends a rule on cell c graded toward its point nearest to `obs`
  /// (observer positions); returns [begin, end).
  std::pair<index_t, index_t> graded(index_t c, const std::vector<geometry::point2>& obs,
                                     std::vector<rule_point>& out) const {
    // Nearest point: sample, then refine by golden-section on the bracket.
    constexpr int ns = 32;
    double best_s = -1, best_d = std::numeric_limits<double>::infinity();
    auto dist = [&](double s) {
      const auto r = m_.eval(c, s, shape_).r;
      double d = std::numeric_limits<double>::infinity();
      for (const auto& o : obs) d = std::min(d, geometry::norm(r - o));
      return d;
    };
    for (int i = 0; i <= ns; ++i) {
      const double s = -1 + 2.0 * i / ns, d = dist(s);
      if (d < best_d) best_d = d, best_s = s;
    }
    double lo = std::max(-1.0, best_s - 2.0 / ns), hi = std::min(1.0, best_s + 2.0 / ns);
    for (int it = 0; it < 40; ++it) {  // bracket 4/ns shrinks to ~1e-10
      const double a = lo + 0.381966 * (hi - lo), b = hi - 0.381966 * (hi - lo);
      if (dist(a) < dist(b)) hi = b;
      else lo = a;
    }
    const double sc = 0.5 * (lo + hi);
    best_d = std::min(best_d, dist(sc));
    if (dist(-1) <= best_d) best_s = -1;
    else if (dist(1) <= best_d) best_s = 1;
    else best_s = sc;
    return graded_toward(c, best_s, best_d, out);
  }

  /// @brief Rule for a cell adjacent to the observers' cell, sharing its end
  ///        `end` (-1 or +1) with it. Where the contour turns by less than
  ///        ~85 degrees at the shared node the shared node is the nearest point
  ///        to every observer, so the nearest-point search is skipped.
  std::pair<index_t, index_t> adjacent(index_t c, int end, index_t obs_cell,
                                       const std::vector<geometry::point2>& obs,
                                       std::vector<rule_point>& out) const {
    const auto src = m_.eval(c, double(end), shape_);
    const auto oth = m_.eval(obs_cell, double(-end), shape_);
    const double ts = geometry::norm(src.dr), to = geometry::norm(oth.dr);
    const double cosang = (src.dr.x * oth.dr.x + src.dr.y * oth.dr.y) / (ts * to);
    if (!(cosang > 0.1)) return graded(c, obs, out);
    double d = std::numeric_limits<double>::infinity();
    for (const auto& o : obs) d = std::min(d, geometry::norm(src.r - o));
    return graded_toward(c, double(end), d, out);
  }

  /// Rule graded toward s* on cell c, the observers being best_d metres away.
  std::pair<index_t, index_t> graded_toward(index_t c, double best_s, double best_d,
                                            std::vector<rule_point>& out) const {
    // Distance in s units: |dr/ds| converts metres to parameter.
    const double speed = geometry::norm(m_.eval(c, best_s, shape_).dr);
    const double ds = std::max(best_d / speed, 1e-14);
    const index_t begin = index_t(out.size());
    for (int side = -1; side <= 1; side += 2) {
      const double len = side < 0 ? best_s + 1 : 1 - best_s;
      if (len <= 1e-15) continue;
      const int levels = std::clamp(int(std::ceil(std::log2(len / ds))) + 1, 0, 60);
      double outer = len;
      for (int l = 0; l <= levels; ++l) {
        const double inner = l == levels ? 0.0 : outer / 2;
        panel(c, best_s + side * inner, best_s + side * outer, out);
        outer = inner;
      }
    }
    return {begin, index_t(out.size())};
  }

 private:
  static near_rule_options checked(near_rule_options o) {
    emgpu::detail::require(o.log_points >= 1 && o.log_points <= max_rule_points && o.panel_points >= 1 &&
                               o.panel_points <= max_rule_points,
                           "emgpu::kernel: near rule sizes must be in 1..256");
    return o;
  }

  void panel(index_t c, double s0, double s1, std::vector<rule_point>& out) const {
    const double mid = 0.5 * (s0 + s1), half = 0.5 * std::abs(s1 - s0);
    for (std::size_t i = 0; i < gl_.first.size(); ++i) {
      const double s = mid + half * gl_.first[i];
      const auto p = m_.eval(c, s, shape_);
      out.push_back({p.r.x, p.r.y, s, half * gl_.second[i] * geometry::norm(p.dr), 0.0});
    }
  }

  const geometry::mesh& m_;
  geometry::cell_shape shape_;
  near_rule_options o_;
  log_rule lr_;
  std::pair<std::vector<double>, std::vector<double>> gl_;
};

/// Cells whose interactions with cell c are corrected: c itself, `near_cells`
/// neighbours on each side along the contour, and (if near_distance > 0) every
/// cell with a node within near_distance * (length of c) of c's centre.
/// A count beyond the mesh means every cell (the walk stops once it has
/// covered the contour, so the work is bounded by the mesh, not the count).
inline std::vector<index_t> near_cells(const geometry::mesh& m, index_t c, int near_cells_each_side,
                                       double near_distance, const std::vector<geometry::point2>& centres,
                                       const std::vector<double>& lengths) {
  std::vector<index_t> out{c};
  index_t p = c, n = c;
  // size() steps per side visit every cell of a closed contour, and an open
  // one runs out (prev/next = -1) within them; more would only repeat cells.
  const index_t steps = std::min<index_t>(index_t(std::max(near_cells_each_side, 0)), m.size());
  for (index_t i = 0; i < steps && (p >= 0 || n >= 0); ++i) {
    if (p >= 0) p = m.prev(p);
    if (n >= 0) n = m.next(n);
    if (p >= 0) out.push_back(p);
    if (n >= 0) out.push_back(n);
  }
  if (near_distance > 0) {
    const double r = near_distance * lengths[std::size_t(c)];
    for (index_t o = 0; o < m.size(); ++o)
      if (geometry::norm(centres[std::size_t(o)] - centres[std::size_t(c)]) <=
          r + 0.5 * (lengths[std::size_t(o)] + lengths[std::size_t(c)]))
        out.push_back(o);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace emgpu::kernel::detail

namespace emgpu::kernel::detail {

/// Appends the Gauss-Legendre rule `gl` (nodes, weights on [-1, 1], built
/// once per discretisation: building costs O(n^2)) over the whole of cell c.
inline std::pair<index_t, index_t> uniform_rule(const geometry::mesh& m, geometry::cell_shape shape, index_t c,
                                                const std::pair<std::vector<double>, std::vector<double>>& gl,
                                                std::vector<rule_point>& out) {
  const auto& [x, w] = gl;
  const index_t begin = index_t(out.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto p = m.eval(c, x[i], shape);
    out.push_back({p.r.x, p.r.y, x[i], w[i] * geometry::norm(p.dr), 0.0});
  }
  return {begin, index_t(out.size())};
}

}  // namespace emgpu::kernel::detail
