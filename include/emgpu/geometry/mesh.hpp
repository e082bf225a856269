/// @file
/// @brief A contour cut into cells: the discretisation the kernels integrate over.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "../core/error.hpp"
#include "contour.hpp"

namespace emgpu::geometry {

/// @brief Shape of each cell between its two end nodes.
enum class cell_shape {
  flat,   ///< straight chord between the end nodes (the seed MoM's cells)
  curved  ///< the exact piece of the contour (parametric arc or interpolant)
};

/// @brief N cells along a contour, ordered along it.
///
/// Cells are distributed over the contour's pieces in proportion to their
/// lengths (at least one per piece), with equal parameter steps inside a piece.
/// Each cell is parametrised by s in [-1, 1]; eval() gives r(s) and dr/ds.
class mesh {
 public:
  /// @throws invalid_argument when cells < number of pieces of the contour.
  mesh(contour c, index_t cells, cell_shape shape = cell_shape::curved)
      : c_(std::make_shared<const contour>(std::move(c))), shape_(shape) {
    const index_t np = c_->pieces();
    emgpu::detail::require(cells >= np && cells >= 1,
                           "emgpu::geometry::mesh: need at least one cell per contour piece (" +
                               std::to_string(np) + ")");
    emgpu::detail::require(c_->closed() ? cells >= 3 : true,
                           "emgpu::geometry::mesh: a closed contour needs at least 3 cells");
    // Largest-remainder allocation of cells to pieces by length, at least one each.
    const double total = c_->length();
    std::vector<index_t> per(static_cast<std::size_t>(np));
    std::vector<double> frac(static_cast<std::size_t>(np));
    index_t used = 0;
    for (index_t p = 0; p < np; ++p) {
      const double want = double(cells) * c_->piece_length(p) / total;
      per[std::size_t(p)] = std::max<index_t>(1, index_t(want));
      frac[std::size_t(p)] = want - double(per[std::size_t(p)]);
      used += per[std::size_t(p)];
    }
    std::vector<std::size_t> order(per.size());
    for (std::size_t p = 0; p < order.size(); ++p) order[p] = p;
    std::stable_sort(order.begin(), order.end(), [&](auto x, auto y) { return frac[x] > frac[y]; });
    for (std::size_t r = 0; used < cells; r = (r + 1) % order.size(), ++used) ++per[order[r]];
    for (std::size_t r = order.size(); used > cells;) {  // undo the minimum-one excess
      r = (r == 0 ? order.size() : r) - 1;
      if (per[order[r]] > 1) --per[order[r]], --used;
    }
    for (index_t p = 0; p < np; ++p)
      for (index_t i = 0; i < per[std::size_t(p)]; ++i)
        cells_.push_back({p, double(i) / double(per[std::size_t(p)]), double(i + 1) / double(per[std::size_t(p)])});
  }

  index_t size() const noexcept { return index_t(cells_.size()); }
  bool closed() const noexcept { return c_->closed(); }
  cell_shape shape() const noexcept { return shape_; }
  const contour& geometry() const noexcept { return *c_; }

  /// Same cells with another shape.
  mesh with_shape(cell_shape s) const {
    mesh m = *this;
    m.shape_ = s;
    return m;
  }

  /// First end node of cell i (s = -1).
  point2 start(index_t i) const { return c_->eval(cells_[std::size_t(i)].piece, cells_[std::size_t(i)].t0).r; }
  /// Second end node of cell i (s = +1).
  point2 end(index_t i) const { return c_->eval(cells_[std::size_t(i)].piece, cells_[std::size_t(i)].t1).r; }

  /// Position and d/ds derivative on cell i at s in [-1, 1], for the given shape.
  curve_point eval(index_t i, double s, cell_shape shape) const {
    const auto& c = cells_[std::size_t(i)];
    if (shape == cell_shape::flat) {
      const point2 a = start(i), b = end(i);
      return {0.5 * (1 - s) * a + 0.5 * (1 + s) * b, 0.5 * (b - a)};
    }
    const double h = c.t1 - c.t0;
    const auto p = c_->eval(c.piece, c.t0 + 0.5 * (s + 1) * h);
    return {p.r, (0.5 * h) * p.dr};
  }
  curve_point eval(index_t i, double s) const { return eval(i, s, shape_); }

  /// Previous / next cell along the contour, or -1 at the ends of an open one.
  index_t prev(index_t i) const { return i > 0 ? i - 1 : (closed() ? size() - 1 : -1); }
  index_t next(index_t i) const { return i + 1 < size() ? i + 1 : (closed() ? 0 : -1); }

 private:
  struct cell {
    index_t piece;
    double t0, t1;
  };
  std::shared_ptr<const contour> c_;
  std::vector<cell> cells_;
  cell_shape shape_;
};

}  // namespace emgpu::geometry
