/// @file
/// @brief Locally corrected Nystrom (LCN) kernel for the 2D TM EFIE.
///
/// Unknowns are the q Gauss-Legendre nodes of every cell (weights include the
/// Jacobian |dr/ds|). Far entries are the plain Nystrom rule
///   Z(mj, ni) = w_ni (k eta / 4) H0^(2)(k R).
/// For observers near a source cell (the cell itself and its neighbours, or
/// any cell within `near_distance` cell lengths) the q entries of the cell come
/// from the local-correction system
///   sum_i w_ni B_k(t_ni) L(t_mj, t_ni) = Integral_cell B_k(t') (k eta/4) H0^(2)(k R(t_mj, t')) dt'
/// with B_k = Legendre P_(k-1) in the cell parameter, k = 1..q. Writing
/// Z_i = w_ni L_i the matrix P_(k-1)(s_i) is the same for every cell and
/// Gauss-Legendre orthogonality gives its inverse in closed form:
///   Z_i = w_i^GL sum_k (2k+1)/2 P_k(s_i) M_k,
/// so the batch of q x q systems reduces to one tiny q x q product per block,
/// done on the backend. The moments M_k are integrated to ~1e-15 by singularity
/// subtraction with product weights (self cell) or graded Gauss-Legendre
/// (neighbours): see detail/near_rules.hpp.
/// Convergence: O(h^q) for smooth contours with curved (exact or interpolated)
/// cells; flat cells on a curved contour limit it to second order.
#pragma once

#include <cmath>
#include <exception>
#include <vector>

#include "../core/error.hpp"
#include "../geometry/mesh.hpp"
#include "detail/near_rules.hpp"
#include "discretization.hpp"

namespace emgpu::kernel {

/// @brief LCN kernel policy with Q Gauss-Legendre nodes per cell.
/// @tparam Q nodes per cell, 1..10 (order of convergence Q on smooth contours).
template <int Q>
struct lcn {
  static_assert(Q >= 1 && Q <= 10, "emgpu::kernel::lcn<Q>: Q (nodes per cell) must be in 1..10");
  static constexpr int nodes_per_cell = Q;

  /// Neighbours on each side along the contour whose entries are corrected;
  /// a value beyond the number of cells corrects every cell.
  int near_cells = 1;
  /// Also correct cells whose centre lies within this many source-cell lengths
  /// (plus half-lengths) of the observer cell's centre; 0 disables. Raise it
  /// for thin bodies whose opposite faces come close.
  double near_distance = 0;
  /// Sizes of the fine rules for the correction integrals, each in
  /// 4..detail::max_rule_points (256; see there why).
  int log_points = 16, panel_points = 14;

  /// @brief Unknowns at the Gauss-Legendre nodes of every cell, and the near plan.
  /// @param m the mesh (curved or flat cells).
  /// @throws invalid_argument for near_cells < 1, near_distance < 0 or not
  ///         finite, or log_points / panel_points outside 4..256; anything a
  ///         user curve callable throws, from whichever thread calls it.
  discretization discretize(const geometry::mesh& m) const {
    emgpu::detail::require(near_cells >= 1 && near_distance >= 0 && std::isfinite(near_distance),
                           "emgpu::kernel::lcn: near_cells must be >= 1 and near_distance finite and >= 0");
    emgpu::detail::require(log_points >= 4 && panel_points >= 4 && log_points <= detail::max_rule_points &&
                               panel_points <= detail::max_rule_points,
                           "emgpu::kernel::lcn: log_points and panel_points must be in 4..256");
    const auto shape = m.shape();
    const auto [s, wg] = detail::gauss_legendre(Q);
    discretization d;
    const index_t nc = m.size();
    d.q = Q;
    d.n = nc * Q;
    d.x.resize(std::size_t(d.n));
    d.y.resize(std::size_t(d.n));
    d.w.resize(std::size_t(d.n));
    d.cell.resize(std::size_t(d.n));
    std::vector<geometry::point2> centres(static_cast<std::size_t>(nc));
    std::vector<double> lengths(static_cast<std::size_t>(nc));
    for (index_t c = 0; c < nc; ++c) {
      double len = 0;
      for (int i = 0; i < Q; ++i) {
        const auto p = m.eval(c, s[std::size_t(i)], shape);
        const auto u = std::size_t(c * Q + i);
        d.x[u] = p.r.x;
        d.y[u] = p.r.y;
        d.w[u] = wg[std::size_t(i)] * geometry::norm(p.dr);
        d.cell[u] = c;
        len += d.w[u];
      }
      centres[std::size_t(c)] = m.eval(c, 0.0, shape).r;
      lengths[std::size_t(c)] = len;
    }
    // coef(i, k) = w_i (2k+1)/2 P_k(s_i)
    d.coef.resize(std::size_t(Q * Q));
    double p[Q];
    for (int i = 0; i < Q; ++i) {
      detail::legendre_values(Q, s[std::size_t(i)], p);
      for (int k = 0; k < Q; ++k) d.coef[std::size_t(i + Q * k)] = wg[std::size_t(i)] * (2 * k + 1) / 2.0 * p[k];
    }
    // Source cells are independent: build their rules in parallel into
    // per-cell lists, then concatenate (the curve callables must therefore be
    // safe to call concurrently, as pure functions are).
    const detail::near_rule_builder rb(m, shape, {log_points, panel_points});
    std::vector<std::vector<rule_point>> cell_rules(static_cast<std::size_t>(nc));
    std::vector<std::vector<near_block>> cell_blocks(static_cast<std::size_t>(nc));
    // An exception leaving an OpenMP region calls std::terminate: allocation
    // failures and the user's curve callables are caught per cell and the
    // first one is rethrown after the loop.
    std::exception_ptr err;
#if defined(_OPENMP)
#pragma omp parallel for schedule(dynamic, 16)
#endif
    for (index_t c = 0; c < nc; ++c) {  // source cell
      try {
        auto& rules = cell_rules[std::size_t(c)];
        auto& blocks = cell_blocks[std::size_t(c)];
        std::vector<geometry::point2> obs(Q);
        for (index_t o : detail::near_cells(m, c, near_cells, near_distance, centres, lengths)) {
          if (o == c) {
            for (int j = 0; j < Q; ++j) {
              const auto r = rb.self(c, s[std::size_t(j)], rules);
              blocks.push_back({c * Q + j, c * Q, r.first, r.second});
            }
            continue;
          }
          for (int j = 0; j < Q; ++j) obs[std::size_t(j)] = {d.x[std::size_t(o * Q + j)], d.y[std::size_t(o * Q + j)]};
          // Neighbours along the contour share an end node with c (unless the
          // contour has so few cells that o is on both sides).
          const bool before = o == m.prev(c), after = o == m.next(c);
          const auto r = before != after ? rb.adjacent(c, before ? -1 : 1, o, obs, rules) : rb.graded(c, obs, rules);
          for (int j = 0; j < Q; ++j) blocks.push_back({o * Q + j, c * Q, r.first, r.second});
        }
      } catch (...) {
#if defined(_OPENMP)
#pragma omp critical(emgpu_kernel_lcn_exc)
#endif
        if (!err) err = std::current_exception();
      }
    }
    if (err) std::rethrow_exception(err);
    std::size_t nr = 0, nb = 0;
    for (index_t c = 0; c < nc; ++c) nr += cell_rules[std::size_t(c)].size(), nb += cell_blocks[std::size_t(c)].size();
    d.rules.reserve(nr);
    d.blocks.reserve(nb);
    for (index_t c = 0; c < nc; ++c) {
      const index_t off = index_t(d.rules.size());
      d.rules.insert(d.rules.end(), cell_rules[std::size_t(c)].begin(), cell_rules[std::size_t(c)].end());
      for (auto blk : cell_blocks[std::size_t(c)]) {
        blk.begin += off;
        blk.end += off;
        d.blocks.push_back(blk);
      }
    }
    return d;
  }
};

}  // namespace emgpu::kernel
