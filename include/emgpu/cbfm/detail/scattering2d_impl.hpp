/// @file
/// @brief Definitions of the CBFM scattering solver's member functions.
#pragma once

#include "../scattering2d.hpp"

namespace emgpu {

template <class Backend, class Kernel, class Dense, class Scalar>
void scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::factor() {
  if (fact_) return;
  const auto t0 = std::chrono::steady_clock::now();
  const auto& d = bodies_.disc;
  const index_t n = d.n, m = index_t(part_.size());
  rep_ = {};
  rep_.unknowns = n;
  rep_.blocks = m;
  rep_.full_matrix_bytes = std::size_t(n) * std::size_t(n) * sizeof(Scalar);
  live_bytes_ = 0;

  std::vector<cbfm::extended_block> ext(static_cast<std::size_t>(m));
  n_max_ = 0;
  for (index_t i = 0; i < m; ++i) {
    ext[std::size_t(i)] = cbfm::extend(bodies_, part_[std::size_t(i)], opt_.overlap_wavelengths * wavelength());
    n_max_ = std::max(n_max_, ext[std::size_t(i)].own);
    rep_.max_extended = std::max(rep_.max_extended, index_t(ext[std::size_t(i)].unknowns.size()));
  }
  rep_.max_block = n_max_;
  own_map_h_.assign(std::size_t(m * n_max_), -1);
  for (index_t i = 0; i < m; ++i) {
    const auto& e = ext[std::size_t(i)];
    for (index_t t = 0; t < e.own; ++t)
      own_map_h_[std::size_t(i * n_max_ + t)] = e.unknowns[std::size_t(e.own_begin + t)];
  }
  own_map_ = upload(own_map_h_);

  std::vector<index_t> rank(static_cast<std::size_t>(m), 0);
  make_cbfs(ext, rank);
  rep_.cbf_seconds = seconds_since(t0);

  // Compact numbering of the CBFs: block i's occupy [offset[i], offset[i] + rank[i]).
  std::vector<index_t> offset(static_cast<std::size_t>(m) + 1, 0);
  for (index_t i = 0; i < m; ++i) offset[std::size_t(i) + 1] = offset[std::size_t(i)] + rank[std::size_t(i)];
  reduced_ = offset.back();
  std::vector<index_t> to_padded(static_cast<std::size_t>(reduced_)), to_compact(static_cast<std::size_t>(m * k_max_), -1);
  for (index_t i = 0; i < m; ++i)
    for (index_t a = 0; a < rank[std::size_t(i)]; ++a) {
      to_padded[std::size_t(offset[std::size_t(i)] + a)] = i * k_max_ + a;
      to_compact[std::size_t(i * k_max_ + a)] = offset[std::size_t(i)] + a;
    }
  rank_ = upload(rank);
  offset_ = upload(offset);
  to_padded_ = upload(to_padded);
  to_compact_ = upload(to_compact);
  rep_.reduced = reduced_;
  rep_.cbfs = rank;
  rep_.min_cbfs = *std::min_element(rank.begin(), rank.end());
  rep_.max_cbfs = k_max_;

  const auto t1 = std::chrono::steady_clock::now();
  assemble_reduced();
  synchronize(b_);
  rep_.assembly_seconds = seconds_since(t1);

  const auto t2 = std::chrono::steady_clock::now();
  fact_ = std::make_unique<factorization_type>(
      b_, matrix_view<Scalar>{zr_.data(), reduced_, reduced_, std::max<index_t>(reduced_, 1)}, opt_.dense);
  synchronize(b_);
  rep_.factor_seconds = seconds_since(t2);
}

template <class Backend, class Kernel, class Dense, class Scalar>
void scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::make_cbfs(
    const std::vector<cbfm::extended_block>& ext, std::vector<index_t>& rank) {
  const auto& d = bodies_.disc;
  const index_t n = d.n, m = index_t(ext.size());
  const double c = k_ * constants::eta0 / 4;
  const std::size_t budget = opt_.batch_bytes > 0 ? opt_.batch_bytes
                             : is_device_backend_v<Backend> ? (std::size_t(512) << 20)
                                                            : (std::size_t(128) << 20);
  // Near blocks by observer, to place them in the extended blocks.
  std::vector<index_t> near_start(static_cast<std::size_t>(n) + 1, 0), near_order(d.blocks.size());
  for (const auto& nb : d.blocks) ++near_start[std::size_t(nb.obs) + 1];
  std::partial_sum(near_start.begin(), near_start.end(), near_start.begin());
  {
    std::vector<index_t> fillp(near_start.begin(), near_start.end() - 1);
    for (std::size_t e = 0; e < d.blocks.size(); ++e) near_order[std::size_t(fillp[std::size_t(d.blocks[e].obs)]++)] = index_t(e);
  }
  auto coef = upload(d.coef);
  auto rules = upload(d.rules);

  // Plane waves per block from its electrical radius.
  std::vector<index_t> npw(static_cast<std::size_t>(m));
  for (index_t i = 0; i < m; ++i) {
    const auto& u = ext[std::size_t(i)].unknowns;
    double cx = 0, cy = 0;
    for (index_t v : u) cx += d.x[std::size_t(v)], cy += d.y[std::size_t(v)];
    cx /= double(u.size());
    cy /= double(u.size());
    double r = 0;
    for (index_t v : u) r = std::max(r, std::hypot(d.x[std::size_t(v)] - cx, d.y[std::size_t(v)] - cy));
    // In double first: 2 k r can exceed any index at absurd frequencies.
    const double want = opt_.plane_waves > 0 ? double(opt_.plane_waves)
                                             : std::ceil(2 * k_ * r) + double(opt_.extra_plane_waves);
    emgpu::detail::require(want <= double(solver_type::max_plane_waves),
                           "emgpu::cbfm: block " + std::to_string(i) + " needs " + std::to_string(want) +
                               " plane waves (2 k r + extra_plane_waves), more than solver::max_plane_waves = 2^20: "
                               "use smaller blocks (block_wavelengths, max_block_unknowns) or check the frequency");
    npw[std::size_t(i)] = index_t(want);
  }
  // Groups of similar extended size, largest first; a group is one batch.
  std::vector<index_t> order(static_cast<std::size_t>(m));
  std::iota(order.begin(), order.end(), index_t(0));
  std::stable_sort(order.begin(), order.end(), [&](index_t a, index_t b) {
    return ext[std::size_t(a)].unknowns.size() > ext[std::size_t(b)].unknowns.size();
  });
  struct group_basis {
    std::vector<index_t> blocks;
    index_t n_pad, cols;
    vector_t<Backend, Scalar> basis;  // n_pad x cols per block
  };
  std::vector<group_basis> stores;
  std::vector<index_t> mark(static_cast<std::size_t>(n), -1);
  std::size_t store_bytes = 0, peak = 0;
  for (std::size_t g0 = 0; g0 < order.size();) {
    const index_t ne_pad = index_t(ext[std::size_t(order[g0])].unknowns.size());
    // Members: extended size within 3/4 of the first, within the memory budget.
    std::size_t g1 = g0;
    index_t n_pad = 0, np = 0;
    for (; g1 < order.size(); ++g1) {
      const auto& e = ext[std::size_t(order[g1])];
      if (4 * index_t(e.unknowns.size()) < 3 * ne_pad) break;
      const index_t n2 = std::max(n_pad, e.own), p2 = std::max(np, npw[std::size_t(order[g1])]);
      const std::size_t per = sizeof(Scalar) * std::size_t(ne_pad * ne_pad + ne_pad * p2 + 2 * n2 * std::max(n2, p2));
      if (g1 > g0 && per * (g1 - g0 + 1) > budget) break;
      n_pad = n2;
      np = p2;
    }
    const index_t cnt = index_t(g1 - g0);
    rep_.plane_waves = std::max(rep_.plane_waves, np);
    std::vector<index_t> rows(static_cast<std::size_t>(cnt * ne_pad), -1), lo(static_cast<std::size_t>(cnt)), own(static_cast<std::size_t>(cnt));
    std::vector<cbfm::detail::placed_near> near;
    for (index_t s = 0; s < cnt; ++s) {
      const auto& e = ext[std::size_t(order[g0 + std::size_t(s)])];
      const index_t ne = index_t(e.unknowns.size());
      for (index_t t = 0; t < ne; ++t) {
        rows[std::size_t(s * ne_pad + t)] = e.unknowns[std::size_t(t)];
        mark[std::size_t(e.unknowns[std::size_t(t)])] = t;
      }
      for (index_t t = 0; t < ne; ++t) {
        const index_t u = e.unknowns[std::size_t(t)];
        for (index_t p = near_start[std::size_t(u)]; p < near_start[std::size_t(u) + 1]; ++p) {
          const auto& nb = d.blocks[std::size_t(near_order[std::size_t(p)])];
          const index_t col = mark[std::size_t(nb.col0)];
          if (col >= 0) near.push_back({u, s, t, s, col, nb.begin, nb.end});
        }
      }
      for (index_t u : e.unknowns) mark[std::size_t(u)] = -1;
      lo[std::size_t(s)] = e.own_begin;
      own[std::size_t(s)] = e.own;
    }
    auto rows_d = upload(rows);
    auto near_d = upload(near);
    auto lo_d = upload(lo);
    auto own_d = upload(own);
    const index_t zs = ne_pad * ne_pad;
    auto z = make_vector<Scalar>(b_, cnt * zs);
    cbfm::detail::for_each_in_batch(b_, zs, cnt,
                   cbfm::detail::tile_fill_fn<Scalar>{op_.x(), op_.y(), op_.w(), rows_d.data(), ne_pad, rows_d.data(),
                                                      ne_pad, ne_pad, k_, c, d.analytic_self, true, z.data(), ne_pad,
                                                      zs, nullptr, 0});
    if (!near.empty())
      for_each_index(b_, index_t(near.size()),
                     cbfm::detail::batch_near_fn<Scalar>{near_d.data(), rules.data(), coef.data(), op_.x(), op_.y(),
                                                         d.q, k_, c, z.data(), ne_pad, zs});
    std::vector<double> ang(static_cast<std::size_t>(np));
    for (index_t j = 0; j < np; ++j) ang[std::size_t(j)] = 2 * constants::pi * double(j) / double(np);
    auto ang_d = upload(ang);
    auto x = make_vector<Scalar>(b_, cnt * ne_pad * np);
    cbfm::detail::for_each_in_batch(b_, ne_pad * np, cnt,
                   cbfm::detail::plane_wave_rows_fn<Scalar>{op_.x(), op_.y(), rows_d.data(), ne_pad, ne_pad,
                                                            ang_d.data(), k_, x.data(), ne_pad, ne_pad * np});
    auto ipiv = make_vector<index_t>(b_, cnt * ne_pad);
    auto info = make_vector<int>(b_, cnt);
    const strided_batch_view<Scalar> zv{z.data(), ne_pad, ne_pad, ne_pad, zs, cnt};
    batched::lu_factor(b_, zv, ipiv.data(), info.data());
    {
      const auto ih = download(info, cnt);
      for (index_t s = 0; s < cnt; ++s)
        if (ih[std::size_t(s)] != 0)
          throw singular_matrix("emgpu::cbfm: the extended self matrix of block " +
                                    std::to_string(order[g0 + std::size_t(s)]) + " is singular",
                                index_t(ih[std::size_t(s)]) - 1);
    }
    batched::lu_solve(b_, zv, ipiv.data(), strided_batch_view<Scalar>{x.data(), ne_pad, np, ne_pad, ne_pad * np, cnt});
    // Left singular vectors of the restricted responses R (n_pad x np): from R
    // itself when tall, else as right singular vectors of R^H.
    const bool adjoint = np > n_pad;
    const index_t am = adjoint ? np : n_pad, an = adjoint ? n_pad : np;
    auto a = make_vector<Scalar>(b_, cnt * am * an);
    cbfm::detail::for_each_in_batch(b_, n_pad * np, cnt,
                   cbfm::detail::restrict_fn<Scalar>{x.data(), ne_pad, ne_pad * np, lo_d.data(), own_d.data(), n_pad,
                                                     np, adjoint, a.data(), am, am * an});
    const std::size_t work = sizeof(Scalar) * std::size_t(cnt) * std::size_t(zs + ne_pad * np + 2 * am * an);
    z = make_vector<Scalar>(b_, 0);
    x = make_vector<Scalar>(b_, 0);
    group_basis gb{{}, n_pad, an, make_vector<Scalar>(b_, cnt * n_pad * an)};
    auto sigma = make_vector<real_type>(b_, cnt * an);
    const strided_batch_view<Scalar> none{nullptr, 0, 0, 1, 0, 0};
    const strided_batch_view<Scalar> basis{gb.basis.data(), n_pad, an, n_pad, n_pad * an, cnt};
    batched::svd(b_, strided_batch_view<Scalar>{a.data(), am, an, am, am * an, cnt}, sigma.data(),
                 adjoint ? strided_batch_view<Scalar>{nullptr, am, an, am, am * an, cnt} : basis,
                 adjoint ? basis : strided_batch_view<Scalar>{nullptr, an, an, an, an * an, cnt}, info.data());
    (void)none;
    {
      const auto ih = download(info, cnt);
      for (index_t s = 0; s < cnt; ++s)
        if (ih[std::size_t(s)] != 0)
          throw error("emgpu::cbfm: the SVD of block " + std::to_string(order[g0 + std::size_t(s)]) +
                      "'s responses did not converge");
    }
    auto rk = make_vector<index_t>(b_, cnt);
    batched::rank_above(b_, sigma.data(), an, cnt, real_type(opt_.tau), rk.data());
    const auto rh = download(rk, cnt);
    for (index_t s = 0; s < cnt; ++s) {
      const index_t blk = order[g0 + std::size_t(s)];
      emgpu::detail::require(rh[std::size_t(s)] >= 1,
                      "emgpu::cbfm: block " + std::to_string(blk) + " has no response above tau (zero matrix?)");
      rank[std::size_t(blk)] = rh[std::size_t(s)];
      gb.blocks.push_back(blk);
    }
    store_bytes += sizeof(Scalar) * std::size_t(cnt * n_pad * an);
    peak = std::max(peak, store_bytes + work);
    stores.push_back(std::move(gb));
    ++rep_.batches;
    g0 = g1;
  }
  k_max_ = *std::max_element(rank.begin(), rank.end());
  c_ = make_vector<Scalar>(b_, m * n_max_ * k_max_);
  const std::size_t c_bytes = sizeof(Scalar) * std::size_t(m * n_max_ * k_max_);
  peak = std::max(peak, store_bytes + c_bytes);
  for (auto& gb : stores) {
    const index_t cnt = index_t(gb.blocks.size());
    std::vector<index_t> rk(static_cast<std::size_t>(cnt)), own(static_cast<std::size_t>(cnt));
    for (index_t s = 0; s < cnt; ++s) {
      rk[std::size_t(s)] = rank[std::size_t(gb.blocks[std::size_t(s)])];
      own[std::size_t(s)] = ext[std::size_t(gb.blocks[std::size_t(s)])].own;
    }
    auto rk_d = upload(rk);
    auto own_d = upload(own);
    auto slot_d = upload(gb.blocks);
    cbfm::detail::for_each_in_batch(b_, n_max_ * k_max_, cnt,
                   cbfm::detail::store_basis_fn<Scalar>{gb.basis.data(), gb.n_pad, gb.n_pad * gb.cols, rk_d.data(),
                                                        own_d.data(), slot_d.data(), n_max_, k_max_, c_.data()});
    synchronize(b_);
    gb.basis = make_vector<Scalar>(b_, 0);
  }
  rep_.peak_bytes = std::max(rep_.peak_bytes, peak);
  live_bytes_ = c_bytes;
}

template <class Backend, class Kernel, class Dense, class Scalar>
void scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::assemble_reduced() {
  const auto& d = bodies_.disc;
  const index_t m = index_t(part_.size()), kr = reduced_, bs = n_max_, km = k_max_;
  const double c = k_ * constants::eta0 / 4;
  // Near blocks placed by (row block, column block), sorted so that a panel
  // of row blocks owns one contiguous range.
  std::vector<index_t> block_of(static_cast<std::size_t>(d.n)), local_of(static_cast<std::size_t>(d.n));
  for (index_t i = 0; i < m; ++i)
    for (index_t t = 0; t < bs; ++t) {
      const index_t u = own_map_h_[std::size_t(i * bs + t)];
      if (u >= 0) block_of[std::size_t(u)] = i, local_of[std::size_t(u)] = t;
    }
  std::vector<cbfm::detail::placed_near> near;
  near.reserve(d.blocks.size());
  for (const auto& nb : d.blocks)
    near.push_back({nb.obs, block_of[std::size_t(nb.obs)], local_of[std::size_t(nb.obs)],
                    block_of[std::size_t(nb.col0)], local_of[std::size_t(nb.col0)], nb.begin, nb.end});
  for (const auto& nb : near)  // a source cell must not straddle two blocks
    emgpu::detail::require(nb.col + d.q <= bs, "emgpu::cbfm: internal error: a cell straddles blocks");
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.bi < b.bi; });
  std::vector<index_t> near_start(static_cast<std::size_t>(m) + 1, 0);
  for (const auto& nb : near) ++near_start[std::size_t(nb.bi) + 1];
  std::partial_sum(near_start.begin(), near_start.end(), near_start.begin());
  auto near_d = upload(near);
  auto coef = upload(d.coef);
  auto rules = upload(d.rules);

  zr_ = make_vector<Scalar>(b_, kr * kr);
  rep_.reduced_bytes = sizeof(Scalar) * std::size_t(kr) * std::size_t(kr);
  const index_t tile = opt_.tile_unknowns > 0 ? opt_.tile_unknowns : (is_device_backend_v<Backend> ? 4096 : 1024);
  const index_t p = std::clamp<index_t>(tile / std::max<index_t>(bs, 1), 1, m);
  auto t = make_vector<Scalar>(b_, p * bs * p * bs);
  auto tt = make_vector<Scalar>(b_, p * bs * p * bs);
  auto w = make_vector<Scalar>(b_, p * bs * p * km);
  auto r = make_vector<Scalar>(b_, p * km * p * km);
  const std::size_t work = sizeof(Scalar) * std::size_t(2 * p * bs * p * bs + p * bs * p * km + p * km * p * km);
  rep_.peak_bytes = std::max(rep_.peak_bytes, live_bytes_ + rep_.reduced_bytes + work);
  // Near corrections of the tile (panel i0 x panel j0) held in z, then
  // W = T blockdiag(C_j0..), R = blockdiag(C_i0..)^H W, scattered into Z_R.
  auto reduce_tile = [&](index_t i0, index_t ni, index_t j0, index_t nj, Scalar* z) {
    const index_t rows = ni * bs;
    const index_t e0 = near_start[std::size_t(i0)], e1 = near_start[std::size_t(i0 + ni)];
    if (e1 > e0)
      for_each_index(b_, e1 - e0,
                     cbfm::detail::panel_near_fn<Scalar>{near_d.data() + e0, rules.data(), coef.data(), op_.x(),
                                                         op_.y(), d.q, k_, c, i0, j0, nj, bs, z, rows});
    blas_.gemm(b_, cbfm::detail::gemm_batch<Scalar>{cbfm::detail::op::none, rows, km, bs, z, rows, bs * rows,
                                                    c_.data() + j0 * bs * km, bs, bs * km, w.data(), rows, km * rows,
                                                    nj});
    blas_.gemm(b_, cbfm::detail::gemm_batch<Scalar>{cbfm::detail::op::adjoint, km, nj * km, bs,
                                                    c_.data() + i0 * bs * km, bs, bs * km, w.data(), rows, bs,
                                                    r.data(), ni * km, km, ni});
    for_each_index(b_, ni * km, nj * km,
                   cbfm::detail::scatter_reduced_fn<Scalar>{r.data(), ni * km, offset_.data(), rank_.data(), i0, j0,
                                                            km, zr_.data(), std::max<index_t>(kr, 1)});
  };
  // Panel pairs (i0, j0) with j0 >= i0: an off-diagonal pair's mirror
  // (j0, i0) comes from the same Hankel values.
  for (index_t i0 = 0; i0 < m; i0 += p) {
    const index_t ni = std::min(p, m - i0), rows = ni * bs;
    for (index_t j0 = i0; j0 < m; j0 += p) {
      const index_t nj = std::min(p, m - j0), cols = nj * bs;
      const bool mirror = j0 != i0;
      cbfm::detail::for_each_in_batch(
          b_, rows * cols, 1,
          cbfm::detail::tile_fill_fn<Scalar>{op_.x(), op_.y(), op_.w(), own_map_.data() + i0 * bs, 0,
                                             own_map_.data() + j0 * bs, 0, rows, k_, c, d.analytic_self, false,
                                             t.data(), rows, 0, mirror ? tt.data() : nullptr, cols});
      reduce_tile(i0, ni, j0, nj, t.data());
      if (mirror) reduce_tile(j0, nj, i0, ni, tt.data());
    }
  }
  live_bytes_ += rep_.reduced_bytes;
}

template <class Backend, class Kernel, class Dense, class Scalar>
scattering2d_result scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::solve(
    std::span<const double> incidence, std::span<const double> observation) {
  for (double a : incidence) emgpu::detail::require(std::isfinite(a), "emgpu::scattering2d (cbfm)::solve: non-finite incidence angle");
  for (double a : observation)
    emgpu::detail::require(std::isfinite(a), "emgpu::scattering2d (cbfm)::solve: non-finite observation angle");
  factor();
  const index_t n = bodies_.disc.n, m = index_t(part_.size()), nr = index_t(incidence.size());
  const index_t bs = n_max_, km = k_max_, kr = reduced_, np = m * bs, kp = m * km;
  auto j = make_vector<Scalar>(b_, n * nr);
  const matrix_view<Scalar> jv{j.data(), n, nr, std::max<index_t>(n, 1)};
  if (nr > 0) {
    std::vector<double> inc(incidence.begin(), incidence.end());
    auto inc_d = upload(inc);
    auto v = make_vector<Scalar>(b_, np * nr);
    cbfm::detail::for_each_in_batch(b_, np * nr, 1,
                   cbfm::detail::plane_wave_rows_fn<Scalar>{op_.x(), op_.y(), own_map_.data(), 0, np, inc_d.data(), k_,
                                                            v.data(), np, 0});
    auto vr = make_vector<Scalar>(b_, kp * nr);
    blas_.gemm(b_, cbfm::detail::gemm_batch<Scalar>{cbfm::detail::op::adjoint, km, nr, bs, c_.data(), bs, bs * km,
                                                    v.data(), np, bs, vr.data(), kp, km, m});
    auto a = make_vector<Scalar>(b_, kr * nr);
    for_each_index(b_, kr, nr, cbfm::detail::gather_rows_fn<Scalar>{vr.data(), kp, to_padded_.data(), a.data(), kr});
    fact_->solve(matrix_view<Scalar>{a.data(), kr, nr, std::max<index_t>(kr, 1)});
    for_each_index(b_, kp, nr, cbfm::detail::gather_rows_fn<Scalar>{a.data(), kr, to_compact_.data(), vr.data(), kp});
    blas_.gemm(b_, cbfm::detail::gemm_batch<Scalar>{cbfm::detail::op::none, bs, nr, km, c_.data(), bs, bs * km,
                                                    vr.data(), kp, km, v.data(), np, bs, m});
    for_each_index(b_, np, nr, cbfm::detail::scatter_rows_fn<Scalar>{v.data(), np, own_map_.data(), np, j.data(), n});
  }
  return make_result(jv, incidence, observation);
}

template <class Backend, class Kernel, class Dense, class Scalar>
scattering2d_result scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::solve_direct(
    std::span<const double> incidence, std::span<const double> observation) {
  for (double a : incidence) emgpu::detail::require(std::isfinite(a), "emgpu::scattering2d (cbfm)::solve_direct: non-finite incidence angle");
  for (double a : observation)
    emgpu::detail::require(std::isfinite(a), "emgpu::scattering2d (cbfm)::solve_direct: non-finite observation angle");
  const index_t n = bodies_.disc.n, nr = index_t(incidence.size());
  auto z = make_vector<Scalar>(b_, n * n);
  const matrix_view<Scalar> zv{z.data(), n, n, n};
  op_.assemble(zv, k_, constants::eta0);
  factorization_type f(b_, zv, opt_.dense);
  auto j = make_vector<Scalar>(b_, n * nr);
  const matrix_view<Scalar> jv{j.data(), n, nr, n};
  if (nr > 0) {
    std::vector<double> inc(incidence.begin(), incidence.end());
    auto inc_d = upload(inc);
    op_.plane_waves(jv, inc_d.data(), k_);
    f.solve(jv);
  }
  return make_result(jv, incidence, observation);
}

template <class Backend, class Kernel, class Dense, class Scalar>
scattering2d_result scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar>::make_result(
    matrix_view<Scalar> jv, std::span<const double> incidence, std::span<const double> observation) const {
  const auto& d = bodies_.disc;
  const index_t n = d.n, nr = jv.cols, na = index_t(observation.size());
  scattering2d_result r;
  r.wavenumber = k_;
  r.incidence.assign(incidence.begin(), incidence.end());
  r.observation.assign(observation.begin(), observation.end());
  r.x = d.x;
  r.y = d.y;
  r.w = d.w;
  if (nr == 0) return r;
  std::vector<Scalar> jh(static_cast<std::size_t>(n * nr));
  copy_to_host(b_, jv.data, n * nr, jh.data());
  r.current.resize(jh.size());
  for (std::size_t i = 0; i < jh.size(); ++i) r.current[i] = complex<double>(jh[i].real(), jh[i].imag());
  if (na > 0) {
    std::vector<double> obs(observation.begin(), observation.end());
    auto obs_d = upload(obs);
    auto p = make_vector<complex<double>>(b_, na * nr);
    op_.far_field(matrix_view<const Scalar>(jv), obs_d.data(), na, k_, p.data());
    r.far_field.resize(std::size_t(na * nr));
    copy_to_host(b_, p.data(), na * nr, r.far_field.data());
  }
  std::vector<double> back(incidence.begin(), incidence.end());
  for (auto& a : back) a += constants::pi;
  auto bk = upload(back);
  auto pb = make_vector<complex<double>>(b_, nr);
  op_.far_field_diagonal(matrix_view<const Scalar>(jv), bk.data(), k_, pb.data());
  r.backscatter.resize(std::size_t(nr));
  copy_to_host(b_, pb.data(), nr, r.backscatter.data());
  return r;
}

}  // namespace emgpu
