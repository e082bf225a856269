/// @file
/// @brief Closed and open 2D contours (the cross-section of a cylinder): exact
///        parametric pieces, polygons, and curves interpolated through nodes.
///
/// A contour is a chain of pieces, each a map t in [0, 1] -> (r(t), r'(t)).
/// Pieces meet end to end; corners sit where pieces meet, so a discretisation
/// never puts a cell across a corner. Everything here is host code: kernels
/// receive sampled points, never the callables.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"

namespace emgpu::geometry {

/// @brief A point (or vector) of the plane, metres.
struct point2 {
  double x = 0, y = 0;
  EMGPU_HD friend point2 operator+(point2 a, point2 b) { return {a.x + b.x, a.y + b.y}; }
  EMGPU_HD friend point2 operator-(point2 a, point2 b) { return {a.x - b.x, a.y - b.y}; }
  EMGPU_HD friend point2 operator*(double s, point2 a) { return {s * a.x, s * a.y}; }
  EMGPU_HD friend bool operator==(point2 a, point2 b) { return a.x == b.x && a.y == b.y; }
};

/// Euclidean norm of a vector (plain sqrt: coordinates are metres, far from
/// overflow, and std::hypot dominated the discretisation profile).
inline double norm(point2 a) { return std::sqrt(a.x * a.x + a.y * a.y); }

/// @brief Position and derivative of a curve at one parameter value.
struct curve_point {
  point2 r;   ///< position
  point2 dr;  ///< derivative with respect to the parameter
};

/// @brief One smooth piece of a contour: t in [0, 1] -> (r, dr/dt).
struct piece {
  std::function<curve_point(double)> eval;
  bool straight = false;  ///< a line segment (exactly represented by a flat cell)
};

namespace detail {

inline double gl16_length(const piece& p) {
  // 16-point Gauss-Legendre of |r'(t)| on 8 panels: ~1e-15 relative for the
  // smooth pieces here (a whole ellipse included).
  static constexpr double x[8] = {0.0950125098376374, 0.2816035507792589, 0.4580167776572274,
                                  0.6178762444026438, 0.7554044083550030, 0.8656312023878318,
                                  0.9445750230732326, 0.9894009349916499};
  static constexpr double w[8] = {0.1894506104550685, 0.1826034150449236, 0.1691565193950025,
                                  0.1495959888165767, 0.1246289712555339, 0.0951585116824928,
                                  0.0622535239386479, 0.0271524594117541};
  constexpr int panels = 8;
  double s = 0;
  for (int k = 0; k < panels; ++k)
    for (int i = 0; i < 8; ++i)
      for (int sg = -1; sg <= 1; sg += 2)
        s += w[i] * norm(p.eval((k + 0.5 + 0.5 * sg * x[i]) / panels).dr);
  return 0.5 * s / panels;
}

inline bool finite(point2 p) { return std::isfinite(p.x) && std::isfinite(p.y); }

inline double cross(point2 a, point2 b) { return a.x * b.y - a.y * b.x; }

// Closed-segment intersection test (touching counts as intersecting).
inline bool segments_intersect(point2 a, point2 b, point2 c, point2 d) {
  const double d1 = cross(b - a, c - a), d2 = cross(b - a, d - a);
  const double d3 = cross(d - c, a - c), d4 = cross(d - c, b - c);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)))
    return true;
  auto on = [](point2 p, point2 q, point2 r) {  // r on segment pq, given collinear
    return std::min(p.x, q.x) <= r.x && r.x <= std::max(p.x, q.x) && std::min(p.y, q.y) <= r.y &&
           r.y <= std::max(p.y, q.y);
  };
  return (d1 == 0 && on(a, b, c)) || (d2 == 0 && on(a, b, d)) || (d3 == 0 && on(c, d, a)) ||
         (d4 == 0 && on(c, d, b));
}

// Whether consecutive segments a -> b -> c turn back onto each other. They
// share b, so they overlap beyond it exactly when they are collinear and
// opposite; the intersection test cannot see that (it always reports the
// shared node), so neighbours need this test instead. "Collinear" allows
// 1e-9 rad: rounding alone moves a true 180-degree turn by about
// eps |r| / |b - a| (under 1e-9 for a body within 1e6 segment lengths of the
// origin), and a wedge that thin has no meaning for the EFIE either.
// A straight continuation (turn of 0) is fine: that is a straight edge
// given by more than two nodes.
inline bool folds_back(point2 a, point2 b, point2 c) {
  const point2 u = b - a, v = c - b;
  const double dot = u.x * v.x + u.y * v.y;
  return dot < 0 && std::abs(cross(u, v)) <= 1e-9 * norm(u) * norm(v);
}

}  // namespace detail

/// @brief A closed or open chain of smooth pieces, validated on construction.
///
/// @throws invalid_argument (from the constructor) when there are no pieces,
///         a piece has non-finite points or zero length, consecutive pieces do
///         not join, the contour intersects itself or turns back onto itself
///         (a 180-degree turn), or a closed contour encloses no area.
class contour {
 public:
  contour(std::vector<piece> pieces, bool closed) : pieces_(std::move(pieces)), closed_(closed) {
    emgpu::detail::require(!pieces_.empty(), "emgpu::geometry::contour: no pieces");
    validate();
  }

  bool closed() const noexcept { return closed_; }
  index_t pieces() const noexcept { return index_t(pieces_.size()); }
  const piece& at(index_t p) const { return pieces_[std::size_t(p)]; }
  /// Arc length of piece p.
  double piece_length(index_t p) const { return lengths_[std::size_t(p)]; }
  /// Total arc length.
  double length() const { return std::accumulate(lengths_.begin(), lengths_.end(), 0.0); }
  /// Position on piece p at t in [0, 1].
  curve_point eval(index_t p, double t) const { return pieces_[std::size_t(p)].eval(t); }

 private:
  void validate() {
    using emgpu::detail::require;
    lengths_.resize(pieces_.size());
    double total = 0;
    for (std::size_t p = 0; p < pieces_.size(); ++p) {
      require(bool(pieces_[p].eval), "emgpu::geometry::contour: empty piece function");
      for (double t : {0.0, 0.25, 0.5, 0.75, 1.0}) {
        const auto c = pieces_[p].eval(t);
        require(detail::finite(c.r) && detail::finite(c.dr),
                "emgpu::geometry::contour: non-finite coordinates on piece " + std::to_string(p));
      }
      lengths_[p] = detail::gl16_length(pieces_[p]);
      total += lengths_[p];
    }
    require(std::isfinite(total) && total > 0, "emgpu::geometry::contour: zero total length");
    for (std::size_t p = 0; p < pieces_.size(); ++p)
      require(lengths_[p] > 1e-12 * total,
              "emgpu::geometry::contour: zero-length piece " + std::to_string(p) +
                  " (repeated node?)");
    const double tol = 1e-9 * total;
    for (std::size_t p = 0; p + 1 < pieces_.size(); ++p)
      require(norm(pieces_[p].eval(1).r - pieces_[p + 1].eval(0).r) <= tol,
              "emgpu::geometry::contour: pieces " + std::to_string(p) + " and " +
                  std::to_string(p + 1) + " do not join");
    if (closed_) {
      require(norm(pieces_.back().eval(1).r - pieces_.front().eval(0).r) <= tol,
              "emgpu::geometry::contour: closed contour does not return to its start");
    }
    check_self_intersection();
  }

  // Samples every piece as a polyline (1 segment for straight pieces, 32 for
  // curved ones). Neighbouring segments always touch at their shared node, so
  // they are tested for turning back onto each other instead; all other pairs
  // get the closed-segment intersection test through an x-sweep. A closed
  // polyline that passes both is a simple polygon and so has positive area;
  // the area test is the guard for what rounding lets through.
  void check_self_intersection() const {
    using emgpu::detail::require;
    std::vector<point2> pts;
    for (const auto& p : pieces_) {
      const int m = p.straight ? 1 : 32;
      for (int i = 0; i < m; ++i) pts.push_back(p.eval(double(i) / m).r);
    }
    if (!closed_) pts.push_back(pieces_.back().eval(1).r);
    const std::size_t np = pts.size();
    const std::size_t nseg = closed_ ? np : np - 1;
    // Node i joins segments i - 1 and i; node 0 of a closed contour joins the
    // last segment and the first.
    for (std::size_t i = closed_ ? 0 : 1; i < (closed_ ? np : np - 1); ++i) {
      if (detail::folds_back(pts[(i + np - 1) % np], pts[i], pts[(i + 1) % np]))
        throw invalid_argument("emgpu::geometry::contour: the contour turns back onto itself (180-degree turn at (" +
                               std::to_string(pts[i].x) + ", " + std::to_string(pts[i].y) + "))");
    }
    auto seg = [&](std::size_t i) {
      return std::pair<point2, point2>{pts[i], pts[(i + 1) % np]};
    };
    std::vector<std::size_t> order(nseg);
    std::iota(order.begin(), order.end(), 0);
    auto xmin = [&](std::size_t i) { auto s = seg(i); return std::min(s.first.x, s.second.x); };
    auto xmax = [&](std::size_t i) { auto s = seg(i); return std::max(s.first.x, s.second.x); };
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return xmin(a) < xmin(b); });
    for (std::size_t ii = 0; ii < nseg; ++ii) {
      const std::size_t i = order[ii];
      const double xi = xmax(i);
      const auto si = seg(i);
      for (std::size_t jj = ii + 1; jj < nseg && xmin(order[jj]) <= xi; ++jj) {
        const std::size_t j = order[jj];
        const std::size_t d = i > j ? i - j : j - i;
        if (d == 1 || (closed_ && d == nseg - 1)) continue;  // neighbours: tested above
        const auto sj = seg(j);
        require(!detail::segments_intersect(si.first, si.second, sj.first, sj.second),
                "emgpu::geometry::contour: the contour intersects itself");
      }
    }
    if (closed_) {
      // Shoelace area about the first node, so that a body far from the
      // origin loses no digits. The threshold (1e-10 L^2, L the length: a
      // strip about 4e-10 times thinner than long) is far below any body
      // the EFIE can resolve in double precision (a strip 1e-6 thin has
      // 2.5e-7 L^2), and far above the sum's rounding for any sampling
      // (~ nseg eps L^2 at worst).
      double twice_area = 0;
      for (std::size_t i = 1; i + 1 < np; ++i) twice_area += detail::cross(pts[i] - pts[0], pts[i + 1] - pts[0]);
      const double len = length();
      require(std::abs(twice_area) > 2e-10 * len * len,
              "emgpu::geometry::contour: the closed contour encloses no area");
    }
  }

  std::vector<piece> pieces_;
  std::vector<double> lengths_;
  bool closed_;
};

/// @brief Circle of radius a about `centre`, traversed counter-clockwise from angle 0.
/// @throws invalid_argument unless radius is finite and > 0.
inline contour circle(double radius, point2 centre = {}) {
  emgpu::detail::require(std::isfinite(radius) && radius > 0,
                         "emgpu::geometry::circle: radius must be finite and > 0");
  const double tp = 2 * constants::pi;
  return contour({piece{[=](double t) {
                    const double u = tp * t;
                    return curve_point{{centre.x + radius * std::cos(u), centre.y + radius * std::sin(u)},
                                       {-tp * radius * std::sin(u), tp * radius * std::cos(u)}};
                  },
                  false}},
                 true);
}

/// @brief Ellipse with semi-axes a (along x before rotation) and b, rotated by
///        `rotation` radians about its centre; parameter = eccentric angle.
/// @throws invalid_argument unless a and b are finite and > 0.
inline contour ellipse(double a, double b, point2 centre = {}, double rotation = 0) {
  emgpu::detail::require(std::isfinite(a) && a > 0 && std::isfinite(b) && b > 0,
                         "emgpu::geometry::ellipse: semi-axes must be finite and > 0");
  const double tp = 2 * constants::pi, c = std::cos(rotation), s = std::sin(rotation);
  return contour({piece{[=](double t) {
                    const double u = tp * t;
                    const double x = a * std::cos(u), y = b * std::sin(u);
                    const double dx = -tp * a * std::sin(u), dy = tp * b * std::cos(u);
                    return curve_point{{centre.x + c * x - s * y, centre.y + s * x + c * y},
                                       {c * dx - s * dy, s * dx + c * dy}};
                  },
                  false}},
                 true);
}

namespace detail {
inline void check_nodes(std::span<const point2> nodes, bool closed, const char* who) {
  using emgpu::detail::require;
  require(nodes.size() >= (closed ? 3u : 2u),
          std::string(who) + (closed ? ": a closed contour needs at least 3 nodes"
                                     : ": an open contour needs at least 2 nodes"));
  for (std::size_t i = 0; i < nodes.size(); ++i)
    require(finite(nodes[i]), std::string(who) + ": non-finite coordinates at node " + std::to_string(i));
  std::vector<point2> sorted(nodes.begin(), nodes.end());
  std::sort(sorted.begin(), sorted.end(),
            [](point2 a, point2 b) { return a.x < b.x || (a.x == b.x && a.y < b.y); });
  for (std::size_t i = 0; i + 1 < sorted.size(); ++i)
    require(!(sorted[i] == sorted[i + 1]),
            std::string(who) + ": repeated node (" + std::to_string(sorted[i].x) + ", " +
                std::to_string(sorted[i].y) + ") gives a zero-length cell");
}
}  // namespace detail

/// @brief Polygon (closed) or polyline (open) through `nodes`: straight pieces.
///        Consecutive collinear nodes that continue in the same direction are
///        fine (a straight edge given by several nodes).
/// @throws invalid_argument for fewer than 3 nodes (closed) or 2 (open),
///         non-finite or repeated nodes, self-intersection, a 180-degree turn
///         (the chain doubling back along itself), or a closed polygon of zero
///         area (e.g. all nodes on one line).
inline contour polygon(std::span<const point2> nodes, bool closed = true) {
  detail::check_nodes(nodes, closed, "emgpu::geometry::polygon");
  std::vector<piece> ps;
  const std::size_t n = nodes.size(), m = closed ? n : n - 1;
  for (std::size_t i = 0; i < m; ++i) {
    const point2 a = nodes[i], b = nodes[(i + 1) % n];
    ps.push_back(piece{[=](double t) { return curve_point{a + t * (b - a), b - a}; }, true});
  }
  return contour(std::move(ps), closed);
}

/// @brief Axis-aligned rectangle width x height centred at `centre`
///        (counter-clockwise from the lower-left corner).
/// @throws invalid_argument unless both sides are finite and > 0.
inline contour rectangle(double width, double height, point2 centre = {}) {
  emgpu::detail::require(std::isfinite(width) && width > 0 && std::isfinite(height) && height > 0,
                         "emgpu::geometry::rectangle: sides must be finite and > 0");
  const double hx = width / 2, hy = height / 2;
  const point2 n[4] = {{centre.x - hx, centre.y - hy}, {centre.x + hx, centre.y - hy},
                       {centre.x + hx, centre.y + hy}, {centre.x - hx, centre.y + hy}};
  return polygon(std::span<const point2>(n, 4), true);
}

/// @brief Any user curve r(u), u in [u0, u1] (closed: r(u1) = r(u0)).
/// @param dr derivative r'(u); when empty it is taken by an 8th-order central
///        difference (about 1e-12 relative for smooth curves).
/// @throws invalid_argument for u1 <= u0, non-finite points, self-intersection,
///         the curve doubling back along itself, or (closed) zero area.
inline contour parametric(std::function<point2(double)> r, double u0, double u1, bool closed,
                          std::function<point2(double)> dr = {}) {
  emgpu::detail::require(bool(r), "emgpu::geometry::parametric: empty curve function");
  emgpu::detail::require(std::isfinite(u0) && std::isfinite(u1) && u1 > u0,
                         "emgpu::geometry::parametric: need finite u0 < u1");
  const double span = u1 - u0;
  if (!dr) {
    const double h = 1e-3 * span;
    dr = [r, h](double u) {
      // Central 8th-order stencil: coefficients 4/5, -1/5, 4/105, -1/280.
      static constexpr double c[4] = {4.0 / 5, -1.0 / 5, 4.0 / 105, -1.0 / 280};
      point2 d{};
      for (int i = 0; i < 4; ++i) d = d + (c[i] / h) * (r(u + (i + 1) * h) - r(u - (i + 1) * h));
      return d;
    };
  }
  return contour({piece{[=](double t) {
                    const double u = u0 + span * t;
                    return curve_point{r(u), span * dr(u)};
                  },
                  false}},
                 closed);
}

/// @brief How a curve through nodes is reconstructed between them.
enum class interpolation {
  linear,     ///< straight segments (a polygon)
  quadratic,  ///< Lagrange quadratic through 3 consecutive nodes (chord-length parameter)
  cubic       ///< Lagrange cubic through 4 consecutive nodes (chord-length parameter)
};

/// @brief Curve through `nodes` (e.g. samples of a smooth boundary) with
///        polynomial interpolation between them, so curved cells can be
///        placed on data given only as nodes.
/// @throws invalid_argument as polygon().
inline contour interpolate(std::span<const point2> nodes, bool closed, interpolation kind) {
  if (kind == interpolation::linear) return polygon(nodes, closed);
  detail::check_nodes(nodes, closed, "emgpu::geometry::interpolate");
  const index_t n = index_t(nodes.size());
  const index_t m = closed ? n : n - 1;
  const int order = kind == interpolation::quadratic ? 2 : 3;
  emgpu::detail::require(closed || n > order,
                         "emgpu::geometry::interpolate: too few nodes for this interpolation");
  std::vector<piece> ps;
  for (index_t i = 0; i < m; ++i) {
    // Stencil: nodes i-1 .. i+order-1, shifted inside an open chain.
    index_t first = i - 1;
    if (!closed) first = std::clamp<index_t>(first, 0, n - 1 - order);
    std::vector<point2> p(std::size_t(order) + 1);
    std::vector<double> tau(p.size());
    for (int s = 0; s <= order; ++s) p[std::size_t(s)] = nodes[std::size_t(((first + s) % n + n) % n)];
    tau[0] = 0;
    for (int s = 1; s <= order; ++s)
      tau[std::size_t(s)] = tau[std::size_t(s) - 1] + norm(p[std::size_t(s)] - p[std::size_t(s) - 1]);
    const index_t li = i - first;  // local index of node i
    const double ta = tau[std::size_t(li)], tb = tau[std::size_t(li) + 1];
    ps.push_back(piece{[p, tau, ta, tb](double t) {
                         const double x = ta + t * (tb - ta);
                         curve_point c{};
                         const std::size_t k = p.size();
                         for (std::size_t a = 0; a < k; ++a) {
                           double l = 1, dl = 0;
                           for (std::size_t b = 0; b < k; ++b) {
                             if (b == a) continue;
                             const double f = (x - tau[b]) / (tau[a] - tau[b]);
                             dl = dl * f + l / (tau[a] - tau[b]);
                             l *= f;
                           }
                           c.r = c.r + l * p[a];
                           c.dr = c.dr + (dl * (tb - ta)) * p[a];
                         }
                         return c;
                       },
                       false});
  }
  return contour(std::move(ps), closed);
}

}  // namespace emgpu::geometry
