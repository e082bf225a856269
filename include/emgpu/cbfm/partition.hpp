/// @file
/// @brief Bodies and blocks for the characteristic-basis-function method:
///        several contours discretised as one unknown vector, and the
///        partition of their cells into blocks (user-given or automatic).
///
/// A block is a run of consecutive cells of one body (wrapping round a closed
/// contour). While its characteristic basis functions are made it is extended
/// on both sides by an overlap of arc length (about 0.2 wavelength by
/// default), so that the artificial edge currents of the isolated block fall
/// outside the part that is kept.
#pragma once

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../geometry/mesh.hpp"
#include "../kernel/discretization.hpp"

namespace emgpu::cbfm {

/// @brief Consecutive cells [first_cell, first_cell + cells) of body `body`
///        (indices modulo the body's cell count when the contour is closed).
struct block {
  index_t body = 0;        ///< index of the body (mesh) in the list given to the solver
  index_t first_cell = 0;  ///< first cell, in the body's own numbering
  index_t cells = 0;       ///< number of cells (>= 1)
};

/// @brief A set of blocks covering every cell of every body exactly once.
using partition = std::vector<block>;

/// @brief Several bodies discretised by one kernel and numbered as one
///        unknown vector: body b's unknowns follow those of bodies 0..b-1.
struct bodies {
  kernel::discretization disc;          ///< all unknowns, near plans concatenated
  std::vector<index_t> cell_offset;     ///< first global cell of each body (size bodies + 1)
  std::vector<index_t> cells;           ///< cell count of each body
  std::vector<bool> closed;             ///< whether each body's contour is closed
  std::vector<double> cell_length;      ///< length of each global cell (m, sum of its weights)

  index_t count() const noexcept { return index_t(cells.size()); }
  /// First unknown of global cell c (every kernel numbers a cell's q unknowns consecutively).
  index_t first_unknown(index_t global_cell) const noexcept { return global_cell * disc.q; }
};

/// @brief Discretises every mesh with `kernel` and concatenates the results.
/// @tparam Kernel a 2D EFIE kernel policy (kernel::mom, kernel::lcn<Q>).
/// Near corrections stay inside each body: bodies are assumed apart by more
/// than a cell or so (the far rule is used between them).
/// @throws invalid_argument for an empty list; whatever the kernel throws.
template <class Kernel>
bodies discretize_bodies(std::span<const geometry::mesh> meshes, const Kernel& kernel) {
  emgpu::detail::require(!meshes.empty(), "emgpu::cbfm: need at least one body (mesh)");
  bodies out;
  auto& d = out.disc;
  out.cell_offset.push_back(0);
  index_t rule_offset = 0;
  for (std::size_t bi = 0; bi < meshes.size(); ++bi) {
    const kernel::discretization one = kernel.discretize(meshes[bi]);
    const index_t u0 = d.n, c0 = out.cell_offset.back();
    if (bi == 0) {
      d.q = one.q;
      d.coef = one.coef;
      d.analytic_self = one.analytic_self;
    }
    emgpu::detail::require(one.q == d.q && one.analytic_self == d.analytic_self,
                    "emgpu::cbfm: every body must be discretised the same way");
    emgpu::detail::require(one.n == meshes[bi].size() * one.q,
                    "emgpu::cbfm: the kernel must give q unknowns per cell, numbered by cell");
    d.x.insert(d.x.end(), one.x.begin(), one.x.end());
    d.y.insert(d.y.end(), one.y.begin(), one.y.end());
    d.w.insert(d.w.end(), one.w.begin(), one.w.end());
    for (index_t c : one.cell) d.cell.push_back(c + c0);
    for (auto nb : one.blocks) {
      nb.obs += u0;
      nb.col0 += u0;
      nb.begin += rule_offset;
      nb.end += rule_offset;
      d.blocks.push_back(nb);
    }
    d.rules.insert(d.rules.end(), one.rules.begin(), one.rules.end());
    rule_offset += index_t(one.rules.size());
    d.n += one.n;
    out.cells.push_back(meshes[bi].size());
    out.closed.push_back(meshes[bi].closed());
    out.cell_offset.push_back(c0 + meshes[bi].size());
  }
  out.cell_length.assign(std::size_t(out.cell_offset.back()), 0.0);
  for (index_t u = 0; u < d.n; ++u) out.cell_length[std::size_t(d.cell[std::size_t(u)])] += d.w[std::size_t(u)];
  return out;
}

/// @brief Cuts body b into `count` blocks of about equal arc length.
/// @throws invalid_argument for count < 1 or more blocks than cells.
inline void split_body(const bodies& g, index_t b, index_t count, partition& out) {
  const index_t nc = g.cells[std::size_t(b)], c0 = g.cell_offset[std::size_t(b)];
  emgpu::detail::require(count >= 1 && count <= nc, "emgpu::cbfm: a body needs 1 to (cells) blocks");
  double total = 0;
  for (index_t c = 0; c < nc; ++c) total += g.cell_length[std::size_t(c0 + c)];
  index_t first = 0;
  double acc = 0;
  for (index_t k = 0; k < count; ++k) {
    index_t last = first;  // one past
    if (k == count - 1) last = nc;
    else {
      const double target = total * double(k + 1) / double(count);
      // cells whose centre lies before the target; at least one, leaving one per later block
      while (last < nc - (count - 1 - k) &&
             (last == first || acc + 0.5 * g.cell_length[std::size_t(c0 + last)] < target)) {
        acc += g.cell_length[std::size_t(c0 + last)];
        ++last;
      }
    }
    out.push_back({b, first, last - first});
    first = last;
  }
}

/// @brief Every body cut into `blocks_per_body` blocks of about equal arc length.
/// @throws invalid_argument when a body has fewer cells than blocks.
inline partition split_equal(const bodies& g, index_t blocks_per_body) {
  partition p;
  for (index_t b = 0; b < g.count(); ++b) split_body(g, b, blocks_per_body, p);
  return p;
}

/// @brief The automatic partition: each body is one block unless it is longer
///        than 1.5 block lengths, in which case it is cut into blocks of about
///        `block_length` (m) of arc each; and into more blocks where needed
///        to keep every block at or below `max_cells` cells (0: no limit).
/// @throws invalid_argument for block_length <= 0 or max_cells < 0.
inline partition split_by_length(const bodies& g, double block_length, index_t max_cells = 0) {
  emgpu::detail::require(max_cells >= 0, "emgpu::cbfm: max_cells must be >= 0");
  emgpu::detail::require(std::isfinite(block_length) && block_length > 0,
                         "emgpu::cbfm: block length must be finite and > 0 (block_wavelengths x wavelength)");
  partition p;
  for (index_t b = 0; b < g.count(); ++b) {
    double total = 0;
    const index_t c0 = g.cell_offset[std::size_t(b)], nc = g.cells[std::size_t(b)];
    for (index_t c = 0; c < nc; ++c) total += g.cell_length[std::size_t(c0 + c)];
    // Ratios beyond nc blocks are clamped before the conversion (a tiny
    // block_length would overflow lround), and the cell bound is a ceiling
    // that cannot overflow for any max_cells.
    const double ratio = total / block_length;
    index_t count = total <= 1.5 * block_length ? 1 : ratio >= double(nc) ? nc : index_t(std::lround(ratio));
    if (max_cells > 0) count = std::max(count, nc / max_cells + (nc % max_cells != 0 ? 1 : 0));
    count = std::clamp<index_t>(count, 1, nc);
    split_body(g, b, count, p);
  }
  return p;
}

/// @brief Checks that `p` covers every cell of every body exactly once.
/// @throws invalid_argument naming the first offending block or cell.
inline void validate(const bodies& g, const partition& p) {
  emgpu::detail::require(!p.empty(), "emgpu::cbfm: empty partition");
  std::vector<int> hits(static_cast<std::size_t>(g.cell_offset.back()), 0);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const block& bl = p[i];
    const std::string who = "emgpu::cbfm: block " + std::to_string(i);
    emgpu::detail::require(bl.body >= 0 && bl.body < g.count(), who + " names a body that does not exist");
    const index_t nc = g.cells[std::size_t(bl.body)];
    emgpu::detail::require(bl.cells >= 1 && bl.cells <= nc && bl.first_cell >= 0 && bl.first_cell < nc,
                    who + " has a cell range outside its body");
    emgpu::detail::require(g.closed[std::size_t(bl.body)] || bl.first_cell + bl.cells <= nc,
                    who + " wraps round an open contour");
    for (index_t c = 0; c < bl.cells; ++c)
      ++hits[std::size_t(g.cell_offset[std::size_t(bl.body)] + (bl.first_cell + c) % nc)];
  }
  for (std::size_t c = 0; c < hits.size(); ++c)
    emgpu::detail::require(hits[c] == 1, "emgpu::cbfm: partition covers cell " + std::to_string(c) + " " +
                                      std::to_string(hits[c]) + " times (must be exactly once)");
}

/// @brief The unknowns of a block and of its extension, in contour order.
struct extended_block {
  std::vector<index_t> unknowns;  ///< global unknowns: left overlap, the block, right overlap
  index_t own_begin = 0;          ///< the block's own unknowns are unknowns[own_begin, own_begin + own)
  index_t own = 0;
};

/// @brief Extends block `bl` by at least `overlap` metres of arc on each side
///        (fewer at the ends of an open contour; never round a whole closed one).
inline extended_block extend(const bodies& g, const block& bl, double overlap) {
  const index_t nc = g.cells[std::size_t(bl.body)], c0 = g.cell_offset[std::size_t(bl.body)];
  const bool closed = g.closed[std::size_t(bl.body)];
  auto len = [&](index_t c) { return g.cell_length[std::size_t(c0 + ((c % nc) + nc) % nc)]; };
  index_t left = 0, right = 0, spare = nc - bl.cells;
  double acc = 0;
  while (spare > 0 && acc < overlap && (closed || bl.first_cell - left - 1 >= 0)) {
    ++left, --spare;
    acc += len(bl.first_cell - left);
  }
  acc = 0;
  while (spare > 0 && acc < overlap && (closed || bl.first_cell + bl.cells + right < nc)) {
    acc += len(bl.first_cell + bl.cells + right);
    ++right, --spare;
  }
  extended_block e;
  const index_t q = g.disc.q;
  for (index_t c = bl.first_cell - left; c < bl.first_cell + bl.cells + right; ++c) {
    const index_t u0 = g.first_unknown(c0 + ((c % nc) + nc) % nc);
    for (index_t i = 0; i < q; ++i) e.unknowns.push_back(u0 + i);
  }
  e.own_begin = left * q;
  e.own = bl.cells * q;
  return e;
}

}  // namespace emgpu::cbfm
