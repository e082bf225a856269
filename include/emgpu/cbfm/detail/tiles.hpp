/// @file
/// @brief Device-ready functors that fill tiles of the 2D EFIE matrix for
///        arbitrary lists of rows and columns (blocks, extended blocks, pairs
///        of block panels), plane-wave right-hand sides on such lists, and the
///        gathers/scatters between padded block layouts and compact vectors.
///
/// Entries follow kernel::efie2d_operator exactly (design/physics-conventions.md,
/// shared): far entries (k eta / 4) w_n H0^(2)(k R_mn); the seed MoM self term
/// on the diagonal for kernels with analytic_self; near entries from the
/// kernel's local-correction plan (q moments of a fine rule per near block).
#pragma once

#include "../../backend.hpp"
#include "../../core/complex.hpp"
#include "../../core/constants.hpp"
#include "../../kernel/discretization.hpp"
#include "../../kernel/efie2d_operator.hpp"
#include "../../math/bessel.hpp"

namespace emgpu::cbfm::detail {

/// f(i, 0) for a batch of one.
template <class F>
struct first_of_batch_fn {
  F f;
  EMGPU_HD void operator()(index_t i) const { f(i, 0); }
};

/// f(i, b) over [0, n) x [0, count). A batch of one takes the 1D launch, whose
/// CUDA blocks are all along i (the 2D launch would leave half idle).
template <class Backend, class F>
void for_each_in_batch(const Backend& b, index_t n, index_t count, F f) {
  if (count == 1) for_each_index(b, n, first_of_batch_fn<F>{f});
  else for_each_index(b, n, count, f);
}

template <class S>
EMGPU_HD inline S to_scalar(complex<double> v) {
  using R = real_type_t<S>;
  return S(static_cast<R>(v.real()), static_cast<R>(v.imag()));
}

/// A batch of tiles Z(rows[b][i], cols[b][j]): entry (i, j) of tile b at
/// z[b * zstride + i + j * ld]. Index -1 marks padding: 0, or 1 on the
/// diagonal when pad_identity (keeps padded LU systems regular).
/// With zt (batch of one, disjoint row and column sets) the mirrored tile
/// Z(cols[j], rows[i]) is written at zt[j + i * ldt] from the same Hankel
/// value, since H0^(2)(k R) is symmetric and only the weight differs: half the
/// transcendental work of the fill, which is compute-bound.
template <class S>
struct tile_fill_fn {
  using R = real_type_t<S>;
  const double* x;
  const double* y;
  const double* w;
  const index_t* rows;
  index_t row_stride;  // per batch
  const index_t* cols;
  index_t col_stride;
  index_t nrows;  // rows per tile
  double k, c;
  bool analytic_self, pad_identity;
  S* z;
  index_t ld, zstride;
  S* zt;  // mirrored tile or nullptr
  index_t ldt;
  EMGPU_HD void operator()(index_t flat, index_t b) const {
    const index_t i = flat % nrows, j = flat / nrows;
    const index_t r = rows[b * row_stride + i], s = cols[b * col_stride + j];
    S& out = z[b * zstride + i + j * ld];
    if (r < 0 || s < 0) {
      out = S(pad_identity && i == j ? R(1) : R(0), R(0));
      if (zt) zt[j + i * ldt] = S(R(0), R(0));
      return;
    }
    if (r == s) {  // the near pass overwrites it unless the self term is analytic
      if (analytic_self) {
        const double wm = w[r];
        const double l = math::detail::hd_log(constants::gamma_exp * k * wm / (4.0 * constants::e));
        out = to_scalar<S>(complex<double>(c * wm, -c * wm * (2.0 / constants::pi) * l));
      } else {
        out = S(R(0), R(0));
      }
      return;
    }
    const R dx = static_cast<R>(x[r] - x[s]), dy = static_cast<R>(y[r] - y[s]);
    const R dist = math::detail::hd_sqrt(dx * dx + dy * dy);
    const complex<R> h = math::hankel2_0(static_cast<R>(k) * dist);
    const R sc = static_cast<R>(c) * static_cast<R>(w[s]);
    out = S(sc * h.real(), sc * h.imag());
    if (zt) {
      const R st = static_cast<R>(c) * static_cast<R>(w[r]);
      zt[j + i * ldt] = S(st * h.real(), st * h.imag());
    }
  }
};

/// A near block placed in a block layout: observer `obs` (global, for its
/// position) lands at local row `row` of block `bi`; the source cell's q
/// unknowns at local columns col .. col + q - 1 of block `bj`.
struct placed_near {
  index_t obs;
  index_t bi, row;
  index_t bj, col;
  index_t begin, end;
};

/// Near pass into a batch of extended self tiles: bi = bj = slot in the batch.
template <class S>
struct batch_near_fn {
  const placed_near* items;
  const kernel::rule_point* pts;
  const double* coef;
  const double* x;
  const double* y;
  int q;
  double k, c;
  S* z;
  index_t ld, zstride;
  EMGPU_HD void operator()(index_t e) const {
    const placed_near it = items[e];
    complex<double> v[10];
    kernel::detail::near_entries(pts, it.begin, it.end, coef, q, x[it.obs], y[it.obs], k, c, v);
    S* base = z + it.bi * zstride + it.row + it.col * ld;
    for (int t = 0; t < q; ++t) base[t * ld] = to_scalar<S>(v[t]);
  }
};

/// Near pass into one panel tile: blocks [i0, i0 + ni) x [j0, j0 + nj), each
/// block padded to `bs` rows/columns. Items outside the panel are skipped.
template <class S>
struct panel_near_fn {
  const placed_near* items;
  const kernel::rule_point* pts;
  const double* coef;
  const double* x;
  const double* y;
  int q;
  double k, c;
  index_t i0, j0, nj, bs;
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t e) const {
    const placed_near it = items[e];
    if (it.bj < j0 || it.bj >= j0 + nj) return;
    complex<double> v[10];
    kernel::detail::near_entries(pts, it.begin, it.end, coef, q, x[it.obs], y[it.obs], k, c, v);
    S* base = z + ((it.bi - i0) * bs + it.row) + ((it.bj - j0) * bs + it.col) * ld;
    for (int t = 0; t < q; ++t) base[t * ld] = to_scalar<S>(v[t]);
  }
};

/// rhs(i, j) of tile b = E0 exp(-j k (x cos phi_j + y sin phi_j)) at unknown
/// rows[b][i]; 0 for padding.
template <class S>
struct plane_wave_rows_fn {
  const double* x;
  const double* y;
  const index_t* rows;
  index_t row_stride, nrows;
  const double* angles;
  double k;
  S* out;
  index_t ld, stride;
  EMGPU_HD void operator()(index_t flat, index_t b) const {
    const index_t i = flat % nrows, j = flat / nrows;
    const index_t r = rows[b * row_stride + i];
    S v(0, 0);
    if (r >= 0) {
      double sa, ca, sp, cp;
      math::detail::hd_sincos(angles[j], sa, ca);
      math::detail::hd_sincos(-k * (x[r] * ca + y[r] * sa), sp, cp);
      v = to_scalar<S>(complex<double>(cp, sp));
    }
    out[b * stride + i + j * ld] = v;
  }
};

/// Restricts solved extended responses (ne x npw per block) to the block's own
/// rows [lo, lo + own) into an SVD input padded to m rows: a(i, j) =
/// x(lo + i, j), or its conjugate transpose (a is npw x m) when `adjoint`.
template <class S>
struct restrict_fn {
  const S* x;
  index_t ldx, xstride;
  const index_t* lo;
  const index_t* own;
  index_t m, npw;
  bool adjoint;
  S* a;
  index_t lda, astride;
  EMGPU_HD void operator()(index_t flat, index_t b) const {
    const index_t i = flat % m, j = flat / m;  // i: block row, j: plane wave
    S v(0, 0);
    if (i < own[b]) v = x[b * xstride + lo[b] + i + j * ldx];
    if (adjoint) a[b * astride + j + i * lda] = S(v.real(), -v.imag());
    else a[b * astride + i + j * lda] = v;
  }
};

/// Copies the kept singular vectors of one group into the basis C: block
/// slot[b]'s n_max x k_max panel gets basis(i, j) for i < own, j < rank, 0 elsewhere.
template <class S>
struct store_basis_fn {
  const S* basis;
  index_t ldb, bstride;
  const index_t* rank;
  const index_t* own;
  const index_t* slot;
  index_t n_max, k_max;
  S* c;
  EMGPU_HD void operator()(index_t flat, index_t b) const {
    const index_t i = flat % n_max, j = flat / n_max;
    S v(0, 0);
    if (i < own[b] && j < rank[b]) v = basis[b * bstride + i + j * ldb];
    c[slot[b] * n_max * k_max + i + j * n_max] = v;
  }
};

/// dst(map[i], j) = src(i, j) for map[i] >= 0 (a scatter from a padded layout).
template <class S>
struct scatter_rows_fn {
  const S* src;
  index_t lds;
  const index_t* map;
  index_t n;
  S* dst;
  index_t ldd;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    const index_t r = map[i];
    if (r >= 0) dst[r + j * ldd] = src[i + j * lds];
  }
};

/// dst(i, j) = map[i] >= 0 ? src(map[i], j) : 0 (a gather into a padded layout).
template <class S>
struct gather_rows_fn {
  const S* src;
  index_t lds;
  const index_t* map;
  S* dst;
  index_t ldd;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    const index_t r = map[i];
    dst[i + j * ldd] = r >= 0 ? src[r + j * lds] : S(0, 0);
  }
};

/// Reduced-matrix panel scatter: tile(p, q) (rows = blocks [i0..) x k_max
/// slots, columns likewise) goes to zr(off[bi] + a, off[bj] + b) when a < rank.
template <class S>
struct scatter_reduced_fn {
  const S* tile;
  index_t ldt;
  const index_t* offset;  // compact offset of each block
  const index_t* rank;
  index_t i0, j0, k_max;
  S* zr;
  index_t ldz;
  EMGPU_HD void operator()(index_t p, index_t q) const {
    const index_t bi = i0 + p / k_max, a = p % k_max, bj = j0 + q / k_max, bb = q % k_max;
    if (a < rank[bi] && bb < rank[bj]) zr[offset[bi] + a + (offset[bj] + bb) * ldz] = tile[p + q * ldt];
  }
};

}  // namespace emgpu::cbfm::detail
