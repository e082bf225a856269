/// @file
/// @brief The 2D TM EFIE operator on a backend: matrix fill (far pass, then the
///        near-correction pass), plane-wave right-hand sides, far-field
///        integrals (echo width) and scattered near fields, all computed where
///        the matrix lives (no host round trip on CUDA).
///
/// Conventions (design/physics-conventions.md, shared): exp(+j w t);
/// E_z_inc = E0 exp(-j k (x cos phi_i + y sin phi_i)), phi_i the direction of travel;
/// far-field integral P(phi) = Integral_C J_z exp(j k (x' cos phi + y' sin phi)) dt';
/// echo width sigma = (k eta^2 / 4) |P|^2 / |E0|^2;
/// scattered field E_z^s(r) = -(k eta / 4) Integral_C J_z H0^(2)(k |r - r'|) dt'.
#pragma once

#include <cmath>
#include <concepts>
#include <span>
#include <string>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "../core/matrix_view.hpp"
#include "../geometry/mesh.hpp"
#include "../math/bessel.hpp"
#include "discretization.hpp"

namespace emgpu::kernel {

/// @brief A 2D EFIE kernel policy: turns a mesh into a discretization.
template <class K>
concept efie2d_kernel = requires(const K& k, const geometry::mesh& m) {
  { k.discretize(m) } -> std::same_as<discretization>;
};

/// @brief Far-pass implementations, selectable so that one benchmark run can
///        time them side by side (efie2d_operator::set_fill). All give the
///        same matrix to rounding (tests/scattering2d, "far-fill variants").
/// - pair: a (t x t) grid of 32 x 32 tile blocks, the lower half exiting at
///   once, general Hankel (the first symmetric kernel).
/// - tri: a 1D grid over the t (t + 1) / 2 tile pairs only, general Hankel.
/// - fast: tri, plus math::hankel2_0_fast, the coordinates of the block's rows
///   in registers, c w_j from shared memory and an unrolled 4-entry loop.
/// - fast_cs: fast with streaming (evict-first) stores: the matrix is far
///   larger than L2 and is not read back by this kernel.
/// - fast_sc: fast with math::detail::sincos_fill (own Cody-Waite reduction
///   and polynomials, no conversions, quadrant by selects) instead of CUDA's sincos.
/// - fast_sc_occ: fast_sc compiled for 8 blocks per SM (__launch_bounds__(256, 8):
///   32 registers with a few spilled bytes, 64 warps per SM instead of 48).
/// On the host, pair and tri are the same loop; fast and fast_cs use
/// hankel2_0_fast, fast_sc and fast_sc_occ its sincos_fill form.
enum class far_fill_variant { pair, tri, fast, fast_cs, fast_sc, fast_sc_occ };

/// The library default per backend, as measured: on the GPU (H200,
/// bench_scattering2d --fill-variant all) fast gave 196 / 190 G entries/s for
/// MoM at N = 16384 / 32768 against 189 / 177 for fast_sc and 144 / 142 for
/// pair (CUDA's sincos beats ours there); on the host, where libm's sin and
/// cos dominate, fast_sc was 2x faster than fast per Hankel value.
template <class Backend>
inline constexpr far_fill_variant default_far_fill =
    is_device_backend_v<Backend> ? far_fill_variant::fast : far_fill_variant::fast_sc;

/// @brief Near-pass implementations: thread = one thread per near block (the
///        for_each_index form, also the host loop); warp (CUDA) = one warp per
///        block, lanes striding over its rule points, moments summed by
///        shuffles. Same entries to rounding (the summation order differs).
enum class near_fill_variant { thread, warp };
inline constexpr near_fill_variant default_near_fill = near_fill_variant::warp;

namespace detail {

template <class S>
EMGPU_HD inline S to_scalar(complex<double> v) {
  using R = real_type_t<S>;
  return S(static_cast<R>(v.real()), static_cast<R>(v.imag()));
}

/// Far pass: every entry by the Nystrom / one-point rule,
///   Z(i, j) = (k eta / 4) w_j H0^(2)(k R_ij).
/// H0^(2)(k R) is symmetric in (i, j), so the pass works on pairs of 32 x 32
/// tiles (I, J), I <= J: each Hankel value is computed once and written to
/// Z(i, j) and Z(j, i) (half the transcendental work; the fill is compute-bound).
/// The diagonal (R = 0) gives NaN and is always overwritten by the near or
/// self pass.
inline constexpr index_t far_tile = 32;

/// Hankel evaluation of the far pass: H = 0 math::hankel2_0; 1
/// math::hankel2_0_fast (short large-argument polynomials, no division); 2 the
/// same with math::detail::sincos_fill instead of the CUDA / libm sincos.
template <int H, class R>
EMGPU_HD inline complex<R> fill_hankel(R x) {
  if constexpr (H == 0) {
    return math::hankel2_0(x);
  } else if constexpr (H == 1 || !std::is_same_v<R, double>) {
    return math::hankel2_0_fast(x);
  } else {
    if (x > math::detail::coef::hankel_far_x) return math::detail::h0_far<true>(x);  // false for NaN
    return math::hankel2_0(x);
  }
}

template <class S, int H = 0>
struct far_fill_fn {
  using R = real_type_t<S>;
  const double* x;
  const double* y;
  const double* w;
  R k;
  R c;  // k eta / 4
  S* z;
  index_t ld, n;
  EMGPU_HD complex<R> h(index_t i, index_t j) const {
    return hr(static_cast<R>(x[i] - x[j]), static_cast<R>(y[i] - y[j]));
  }
  /// From the coordinate differences (kept in registers by the CUDA kernels).
  EMGPU_HD complex<R> hr(R dx, R dy) const {
    return fill_hankel<H>(k * math::detail::hd_sqrt(dx * dx + dy * dy));
  }
  EMGPU_HD void put(index_t i, index_t j, complex<R> hv) const {
    const R s = c * static_cast<R>(w[j]);
    z[i + j * ld] = S(s * hv.real(), s * hv.imag());
  }
  /// One tile pair (ti <= tj): Z(I, J) and its mirror Z(J, I).
  EMGPU_HD void tile_pair(index_t ti, index_t tj) const {
    const index_t i0 = ti * far_tile, j0 = tj * far_tile;
    const index_t i1 = i0 + far_tile < n ? i0 + far_tile : n, j1 = j0 + far_tile < n ? j0 + far_tile : n;
    for (index_t j = j0; j < j1; ++j)
      for (index_t i = i0; i < (ti == tj ? j + 1 : i1); ++i) {
        const complex<R> hv = h(i, j);
        put(i, j, hv);
        if (i != j) put(j, i, hv);
      }
  }
  /// Pair number p of the upper triangle, p = tj (tj + 1) / 2 + ti -> (ti, tj).
  EMGPU_HD static void pair_of(index_t p, index_t& ti, index_t& tj) {
    tj = static_cast<index_t>((math::detail::hd_sqrt(8.0 * double(p) + 1.0) - 1.0) / 2.0);
    while (tj * (tj + 1) / 2 > p) --tj;  // guard the rounding of the square root
    while ((tj + 1) * (tj + 2) / 2 <= p) ++tj;
    ti = p - tj * (tj + 1) / 2;
  }
  /// Host form: a static schedule over p gives every thread the same work.
  EMGPU_HD void operator()(index_t p) const {
    index_t ti, tj;
    pair_of(p, ti, tj);
    tile_pair(ti, tj);
  }
};

template <class B, class S, int H>
void far_fill(const B& b, const far_fill_fn<S, H>& f, far_fill_variant) {
  const index_t t = (f.n + far_tile - 1) / far_tile;
  for_each_index(b, t * (t + 1) / 2, f);
}

#if defined(__CUDACC__)
/// CUDA form: block (32, 8) per tile pair; the tile's Hankel values go through
/// shared memory so that both Z(I, J) and the mirrored Z(J, I) are written
/// with coalesced (column-contiguous) stores.
template <class S>
__global__ void __launch_bounds__(256) far_fill_kernel(far_fill_fn<S> f) {
  using R = real_type_t<S>;
  const index_t ti = blockIdx.x, tj = blockIdx.y;
  if (ti > tj) return;  // uniform per block: no divergence, no barrier issue
  // Plain arrays: a __shared__ object of class type (complex) may not have a
  // constructor; +1 column avoids bank conflicts on the transposed read.
  __shared__ R tre[far_tile][far_tile + 1];
  __shared__ R tim[far_tile][far_tile + 1];
  const index_t i0 = ti * far_tile, j0 = tj * far_tile;
  const index_t i = i0 + threadIdx.x;
  for (index_t jj = threadIdx.y; jj < far_tile; jj += blockDim.y) {
    const index_t j = j0 + jj;
    if (i < f.n && j < f.n) {
      const complex<R> hv = f.h(i, j);
      f.put(i, j, hv);
      tre[threadIdx.x][jj] = hv.real();
      tim[threadIdx.x][jj] = hv.imag();
    }
  }
  if (ti == tj) return;  // diagonal tile pairs are complete (both halves computed)
  __syncthreads();
  // Z(j0 + x, i0 + ii) = c w_(i0+ii) H(i0+ii, j0+x): rows vary with threadIdx.x.
  const index_t row = j0 + threadIdx.x;
  for (index_t ii = threadIdx.y; ii < far_tile; ii += blockDim.y) {
    const index_t col = i0 + ii;
    if (row < f.n && col < f.n) f.put(row, col, complex<R>(tre[ii][threadIdx.x], tim[ii][threadIdx.x]));
  }
}

/// A 16-byte (complex<double>) or 8-byte (complex<float>) store; Streaming
/// marks it evict-first (st.global.cs).
template <bool Streaming, class S>
__device__ __forceinline__ void far_store(S* p, real_type_t<S> re, real_type_t<S> im) {
  if constexpr (Streaming) {
    if constexpr (std::is_same_v<real_type_t<S>, double>) __stcs(reinterpret_cast<double2*>(p), make_double2(re, im));
    else __stcs(reinterpret_cast<float2*>(p), make_float2(re, im));
  } else {
    *p = S(re, im);
  }
}

inline constexpr int far_rows_per_pass = 8;  // blockDim.y of the tile-pair kernels

/// Triangular grid: block p handles tile pair (ti, tj), ti <= tj, of pair_of(p);
/// no block is launched for the lower half. Work per block as in
/// far_fill_kernel (32 x 32 values, two coalesced 32 x 32 tile writes through
/// shared memory), with the loops fixed at compile time (4 values per thread,
/// unrolled for independent work in flight), x_i, y_i of the thread's row in
/// registers and c w of both tiles' columns in shared memory; 32-bit local
/// indices, 64-bit only for the matrix offset.
template <class S, int H, bool Streaming, int MinBlocks = 1>
__global__ void __launch_bounds__(256, MinBlocks) far_fill_tri_kernel(far_fill_fn<S, H> f) {
  using R = real_type_t<S>;
  constexpr int T = int(far_tile), Y = far_rows_per_pass;
  index_t ti, tj;
  far_fill_fn<S, H>::pair_of(index_t(blockIdx.x), ti, tj);  // uniform per block
  __shared__ R tre[T][T + 1];
  __shared__ R tim[T][T + 1];
  __shared__ R cwj[T], cwi[T];  // c w of the columns of Z(I, J) and of Z(J, I)
  const int tx = int(threadIdx.x), ty = int(threadIdx.y);
  const index_t i0 = ti * far_tile, j0 = tj * far_tile;
  const int ni = int(f.n - i0 < far_tile ? f.n - i0 : far_tile);  // rows of tile I (>= 1)
  const int nj = int(f.n - j0 < far_tile ? f.n - j0 : far_tile);
  if (ty == 0 && tx < nj) cwj[tx] = f.c * static_cast<R>(f.w[j0 + tx]);
  if (ty == 1 && tx < ni) cwi[tx] = f.c * static_cast<R>(f.w[i0 + tx]);
  double xi = 0, yi = 0;  // double, so that dx, dy round as in the serial h(i, j)
  if (tx < ni) {
    xi = f.x[i0 + tx];
    yi = f.y[i0 + tx];
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < T / Y; ++s) {
    const int jj = ty + s * Y;
    if (tx < ni && jj < nj) {
      const index_t j = j0 + jj;
      const complex<R> hv = f.hr(static_cast<R>(xi - f.x[j]), static_cast<R>(yi - f.y[j]));
      const R cw = cwj[jj];
      far_store<Streaming>(f.z + (i0 + tx) + j * f.ld, cw * hv.real(), cw * hv.imag());
      tre[tx][jj] = hv.real();
      tim[tx][jj] = hv.imag();
    }
  }
  if (ti == tj) return;  // uniform: diagonal tile pairs are complete (both halves computed)
  __syncthreads();
  // Z(j0 + tx, i0 + ii) = c w_(i0+ii) H(i0+ii, j0+tx): rows vary with tx.
#pragma unroll
  for (int s = 0; s < T / Y; ++s) {
    const int ii = ty + s * Y;
    if (tx < nj && ii < ni) {
      const R cw = cwi[ii];
      far_store<Streaming>(f.z + (j0 + tx) + (i0 + ii) * f.ld, cw * tre[ii][tx], cw * tim[ii][tx]);
    }
  }
}

template <class S, int H>
void far_fill(const backend::cuda& b, const far_fill_fn<S, H>& f, far_fill_variant v) {
  if (f.n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  const index_t t = (f.n + far_tile - 1) / far_tile;
  if (v == far_fill_variant::pair) {
    emgpu::detail::require(t <= 65535, "emgpu::kernel: matrix too large for the far-fill grid (n > 2097120)");
    const far_fill_fn<S> fp{f.x, f.y, f.w, f.k, f.c, f.z, f.ld, f.n};
    far_fill_kernel<S><<<dim3(unsigned(t), unsigned(t)), dim3(unsigned(far_tile), 8u), 0, b.stream>>>(fp);
    EMGPU_CUDA_CHECK_LAUNCH("emgpu::kernel far_fill_kernel");
    return;
  }
  const index_t pairs = t * (t + 1) / 2;
  emgpu::detail::require(pairs <= 2147483647, "emgpu::kernel: matrix too large for the far-fill grid (n > 2097120)");
  const dim3 grid{unsigned(pairs)}, block{unsigned(far_tile), unsigned(far_rows_per_pass)};
  const far_fill_fn<S, 0> fg{f.x, f.y, f.w, f.k, f.c, f.z, f.ld, f.n};
  const far_fill_fn<S, 1> ff{f.x, f.y, f.w, f.k, f.c, f.z, f.ld, f.n};
  const far_fill_fn<S, 2> fs{f.x, f.y, f.w, f.k, f.c, f.z, f.ld, f.n};
  switch (v) {
    case far_fill_variant::tri: far_fill_tri_kernel<S, 0, false><<<grid, block, 0, b.stream>>>(fg); break;
    case far_fill_variant::fast_cs: far_fill_tri_kernel<S, 1, true><<<grid, block, 0, b.stream>>>(ff); break;
    case far_fill_variant::fast_sc: far_fill_tri_kernel<S, 2, false><<<grid, block, 0, b.stream>>>(fs); break;
    case far_fill_variant::fast_sc_occ: far_fill_tri_kernel<S, 2, false, 8><<<grid, block, 0, b.stream>>>(fs); break;
    default: far_fill_tri_kernel<S, 1, false><<<grid, block, 0, b.stream>>>(ff); break;
  }
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::kernel far_fill_tri_kernel");
}
#endif

/// Seed MoM self term on the diagonal.
template <class S>
struct self_fill_fn {
  const double* w;
  double k, c;
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t m) const {
    const double wm = w[m];
    const double l = math::detail::hd_log(constants::gamma_exp * k * wm / (4.0 * constants::e));
    z[m + m * ld] = to_scalar<S>(complex<double>(c * wm, -c * wm * (2.0 / constants::pi) * l));
  }
};

/// The q entries Z(obs, col0 .. col0 + q - 1) of one near block (observer at
/// (xo, yo)): moments M_t = sum_p P_t(s_p) [a_p H0^(2)(k R_p) + (2j/pi) b_p
/// J0(k R_p)] of the fine rule pts[begin, end), then entries = c * coef * M.
/// Shared by the near pass below and by CBFM's on-the-fly tiles.
EMGPU_HD inline void near_entries(const rule_point* pts, index_t begin, index_t end, const double* coef,
                                  int q, double xo, double yo, double k, double c, complex<double>* out) {
  double mr[10], mi[10];
  for (int t = 0; t < q; ++t) mr[t] = mi[t] = 0;
  for (index_t p = begin; p < end; ++p) {
    const rule_point rp = pts[p];
    const double dx = rp.x - xo, dy = rp.y - yo;
    const complex<double> h = math::hankel2_0(k * math::detail::hd_sqrt(dx * dx + dy * dy));
    // a H0 + (2j/pi) b J0, with J0 = Re H0^(2)
    const double vr = rp.a * h.real();
    const double vi = rp.a * h.imag() + (2.0 / constants::pi) * rp.b * h.real();
    double pkm1 = 0, pk = 1;  // Legendre P_(t-1), P_t at rp.s
    for (int t = 0; t < q; ++t) {
      mr[t] += pk * vr;
      mi[t] += pk * vi;
      const double next = ((2 * t + 1) * rp.s * pk - t * pkm1) / (t + 1);
      pkm1 = pk;
      pk = next;
    }
  }
  for (int i = 0; i < q; ++i) {
    double zr = 0, zi = 0;
    for (int t = 0; t < q; ++t) {
      zr += coef[i + q * t] * mr[t];
      zi += coef[i + q * t] * mi[t];
    }
    out[i] = complex<double>(c * zr, c * zi);
  }
}

/// Near pass: one block = q entries of one row from q moments of a fine rule.
template <class S>
struct near_fill_fn {
  const near_block* blocks;
  const rule_point* pts;
  const double* coef;
  const double* x;
  const double* y;
  int q;
  double k, c;
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t b) const {
    const near_block blk = blocks[b];
    complex<double> v[10];
    near_entries(pts, blk.begin, blk.end, coef, q, x[blk.obs], y[blk.obs], k, c, v);
    for (int i = 0; i < q; ++i) z[blk.obs + (blk.col0 + i) * ld] = to_scalar<S>(v[i]);
  }
};

template <class B, class S>
void near_fill(const B& b, index_t nblocks, const near_fill_fn<S>& f, near_fill_variant) {
  for_each_index(b, nblocks, f);
}

#if defined(__CUDACC__)
/// One warp per near block. A block has tens of rule points (self cells 2 x 16,
/// graded panels 14 each), so one thread per block leaves most of the GPU idle
/// (about 1e5 threads for n = 32766) and serialises each block's points. The
/// moment arrays are indexed with compile-time indices (loops to 10 guarded by
/// t < q) so that they stay in registers.
template <class S>
__global__ void __launch_bounds__(256) near_fill_warp_kernel(near_fill_fn<S> f, index_t nblocks) {
  const index_t wb = (index_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = int(threadIdx.x & 31u);
  if (wb >= nblocks) return;  // whole warps (blockDim.x is a multiple of 32)
  const near_block blk = f.blocks[wb];
  const double xo = f.x[blk.obs], yo = f.y[blk.obs];
  const int q = f.q;
  double mr[10], mi[10];
#pragma unroll
  for (int t = 0; t < 10; ++t) mr[t] = mi[t] = 0;
  for (index_t p = blk.begin + lane; p < blk.end; p += 32) {
    const rule_point rp = f.pts[p];
    const double dx = rp.x - xo, dy = rp.y - yo;
    const complex<double> h = math::hankel2_0(f.k * math::detail::hd_sqrt(dx * dx + dy * dy));
    const double vr = rp.a * h.real();
    const double vi = rp.a * h.imag() + (2.0 / constants::pi) * rp.b * h.real();
    double pkm1 = 0, pk = 1;
#pragma unroll
    for (int t = 0; t < 10; ++t) {
      if (t < q) {
        mr[t] += pk * vr;
        mi[t] += pk * vi;
        const double next = ((2 * t + 1) * rp.s * pk - t * pkm1) / (t + 1);
        pkm1 = pk;
        pk = next;
      }
    }
  }
#pragma unroll
  for (int t = 0; t < 10; ++t) {
    if (t < q) {  // q is uniform: every lane takes part in the shuffles
#pragma unroll
      for (int off = 16; off > 0; off /= 2) {
        mr[t] += __shfl_xor_sync(0xffffffffu, mr[t], off);
        mi[t] += __shfl_xor_sync(0xffffffffu, mi[t], off);
      }
    }
  }
  if (lane < q) {
    double zr = 0, zi = 0;
#pragma unroll
    for (int t = 0; t < 10; ++t) {
      if (t < q) {
        zr += f.coef[lane + q * t] * mr[t];
        zi += f.coef[lane + q * t] * mi[t];
      }
    }
    f.z[blk.obs + (blk.col0 + lane) * f.ld] = to_scalar<S>(complex<double>(f.c * zr, f.c * zi));
  }
}

template <class S>
void near_fill(const backend::cuda& b, index_t nblocks, const near_fill_fn<S>& f, near_fill_variant v) {
  if (nblocks <= 0) return;
  if (v == near_fill_variant::thread) {
    for_each_index(b, nblocks, f);
    return;
  }
  emgpu::detail::device_guard g(b.device);
  constexpr index_t warps_per_block = 8;
  const index_t grid = (nblocks + warps_per_block - 1) / warps_per_block;
  emgpu::detail::require(grid <= 2147483647, "emgpu::kernel: too many near blocks for one launch");
  near_fill_warp_kernel<S><<<unsigned(grid), unsigned(32 * warps_per_block), 0, b.stream>>>(f, nblocks);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::kernel near_fill_warp_kernel");
}
#endif

template <class S>
struct plane_wave_fn {
  const double* x;
  const double* y;
  const double* angles;
  double k;
  complex<double> e0;
  S* rhs;
  index_t ld;
  EMGPU_HD void operator()(index_t m, index_t r) const {
    double sa, ca, sp, cp;
    math::detail::hd_sincos(angles[r], sa, ca);
    math::detail::hd_sincos(-k * (x[m] * ca + y[m] * sa), sp, cp);
    rhs[m + r * ld] = to_scalar<S>(e0 * complex<double>(cp, sp));
  }
};

/// Far-field phase table E(a, i) = w_i exp(j k (x_i cos phi_a + y_i sin phi_a)),
/// stored at e[a * sa + i * si] (layout chosen per backend for coalescing).
struct far_phase_fn {
  const double* x;
  const double* y;
  const double* w;
  const double* angles;
  double k;
  complex<double>* e;
  index_t sa, si;
  EMGPU_HD void operator()(index_t a, index_t i) const {
    double sa_, ca_, sp, cp;
    math::detail::hd_sincos(angles[a], sa_, ca_);
    math::detail::hd_sincos(k * (x[i] * ca_ + y[i] * sa_), sp, cp);
    e[a * sa + i * si] = complex<double>(w[i] * cp, w[i] * sp);
  }
};

/// out(a, r) = sum_i E(a, i) J(i, r): the far-field integral P(phi_a).
template <class S>
struct far_sum_fn {
  const complex<double>* e;
  index_t sa, si;
  const S* j;
  index_t ldj, n;
  complex<double>* out;
  index_t ldo;
  EMGPU_HD void operator()(index_t a, index_t r) const {
    double accr = 0, acci = 0;
    const S* jc = j + r * ldj;
    const complex<double>* ea = e + a * sa;
    for (index_t i = 0; i < n; ++i) {
      const complex<double> ei = ea[i * si];
      const double jr = static_cast<double>(jc[i].real()), ji = static_cast<double>(jc[i].imag());
      accr += ei.real() * jr - ei.imag() * ji;
      acci += ei.real() * ji + ei.imag() * jr;
    }
    out[a + r * ldo] = complex<double>(accr, acci);
  }
};

/// Monostatic: out[r] = P(angles[r]) of column r alone (phases on the fly).
template <class S>
struct far_field_fn {
  const double* x;
  const double* y;
  const double* w;
  const double* angles;
  double k;
  const S* j;
  index_t ldj, n;
  complex<double>* out;
  EMGPU_HD void operator()(index_t r) const {
    double sa, ca;
    math::detail::hd_sincos(angles[r], sa, ca);
    double accr = 0, acci = 0;
    const S* jc = j + r * ldj;
    for (index_t i = 0; i < n; ++i) {
      double sp, cp;
      math::detail::hd_sincos(k * (x[i] * ca + y[i] * sa), sp, cp);
      const double jr = static_cast<double>(jc[i].real()) * w[i], ji = static_cast<double>(jc[i].imag()) * w[i];
      accr += jr * cp - ji * sp;
      acci += jr * sp + ji * cp;
    }
    out[r] = complex<double>(accr, acci);
  }
};


template <class S>
struct near_field_fn {
  const double* x;
  const double* y;
  const double* w;
  const double* px;
  const double* py;
  double k, c;
  const S* j;
  index_t ldj, n;
  complex<double>* out;
  index_t ldo;
  EMGPU_HD void operator()(index_t p, index_t r) const {
    double accr = 0, acci = 0;
    const S* jc = j + r * ldj;
    for (index_t i = 0; i < n; ++i) {
      const double dx = px[p] - x[i], dy = py[p] - y[i];
      const complex<double> h = math::hankel2_0(k * math::detail::hd_sqrt(dx * dx + dy * dy));
      const double jr = static_cast<double>(jc[i].real()) * w[i], ji = static_cast<double>(jc[i].imag()) * w[i];
      accr += jr * h.real() - ji * h.imag();
      acci += jr * h.imag() + ji * h.real();
    }
    out[p + r * ldo] = complex<double>(-c * accr, -c * acci);
  }
};

template <class B, class T>
vector_t<B, T> upload(const B& b, const std::vector<T>& h) {
  if (h.empty()) return make_vector<T>(b, 0);
  return to_backend(b, std::span<const T>(h.data(), h.size()));
}

}  // namespace detail

/// @brief A discretization resident on a backend, ready to fill matrices and
///        evaluate fields at any wavenumber.
/// @tparam Backend an emgpu backend tag.
template <class Backend>
class efie2d_operator {
 public:
  /// Copies the unknowns and the near plan to the backend.
  efie2d_operator(const Backend& b, const discretization& d)
      : b_(b), n_(d.n), q_(d.q), analytic_self_(d.analytic_self), nblocks_(index_t(d.blocks.size())),
        x_(detail::upload(b, d.x)), y_(detail::upload(b, d.y)), w_(detail::upload(b, d.w)),
        coef_(detail::upload(b, d.coef)), blocks_(detail::upload(b, d.blocks)),
        rules_(detail::upload(b, d.rules)) {
    emgpu::detail::require(d.q >= 1 && d.q <= 10, "emgpu::kernel::efie2d_operator: q must be in 1..10");
    emgpu::detail::require(index_t(d.x.size()) == d.n && index_t(d.y.size()) == d.n &&
                               index_t(d.w.size()) == d.n,
                           "emgpu::kernel::efie2d_operator: inconsistent discretization");
  }

  index_t size() const noexcept { return n_; }
  const Backend& backend() const noexcept { return b_; }
  /// Unknown positions and weights in backend memory.
  const double* x() const { return x_.data(); }
  const double* y() const { return y_.data(); }
  const double* w() const { return w_.data(); }

  /// @brief Fills the n x n EFIE matrix for wavenumber k: the far pass over all
  ///        entries, then the self (MoM) and near-correction passes.
  /// @param z n x n matrix in backend memory.
  /// @param k wavenumber (rad/m), finite and > 0.
  /// @param eta wave impedance (ohm), finite and > 0.
  /// @throws invalid_argument for a wrong shape, or k or eta not finite and > 0.
  template <class S>
  void assemble(matrix_view<S> z, double k, double eta = constants::eta0) const {
    emgpu::detail::require(z.rows == n_ && z.cols == n_, "emgpu::kernel::efie2d_operator::assemble: matrix must be n x n");
    check_k(k, "assemble");
    check_eta(eta, "assemble");
    using R = real_type_t<S>;
    const double c = k * eta / 4;
    const bool fast = far_ == far_fill_variant::fast || far_ == far_fill_variant::fast_cs;
    const bool own_sincos = far_ == far_fill_variant::fast_sc || far_ == far_fill_variant::fast_sc_occ;
    if (is_device_backend_v<Backend> || (!fast && !own_sincos))  // CUDA: kernel from far_
      detail::far_fill(b_, detail::far_fill_fn<S>{x_.data(), y_.data(), w_.data(), R(k), R(c), z.data, z.ld, n_}, far_);
    else if (fast)
      detail::far_fill(b_, detail::far_fill_fn<S, 1>{x_.data(), y_.data(), w_.data(), R(k), R(c), z.data, z.ld, n_}, far_);
    else
      detail::far_fill(b_, detail::far_fill_fn<S, 2>{x_.data(), y_.data(), w_.data(), R(k), R(c), z.data, z.ld, n_}, far_);
    if (analytic_self_) for_each_index(b_, n_, detail::self_fill_fn<S>{w_.data(), k, c, z.data, z.ld});
    if (nblocks_ > 0)
      detail::near_fill(b_, nblocks_,
                        detail::near_fill_fn<S>{blocks_.data(), rules_.data(), coef_.data(), x_.data(), y_.data(),
                                                q_, k, c, z.data, z.ld},
                        near_);
  }

  /// @brief Chooses the far- and near-pass implementations (see
  ///        far_fill_variant, near_fill_variant); all give the same matrix to
  ///        rounding. The defaults are the ones expected fastest.
  void set_fill(far_fill_variant far, near_fill_variant near = default_near_fill) noexcept {
    far_ = far;
    near_ = near;
  }
  far_fill_variant far_fill() const noexcept { return far_; }
  near_fill_variant near_fill() const noexcept { return near_; }

  /// @brief Plane-wave right-hand sides, one column per incidence angle
  ///        (radians, direction of travel).
  /// @param rhs n x ncols, backend memory.
  /// @param angles ncols angles in backend memory.
  /// @param k wavenumber (rad/m).
  /// @param e0 complex amplitude E0 (V/m).
  /// @throws invalid_argument for rhs without n rows, k not finite and > 0,
  ///         or a non-finite angle or e0.
  template <class S>
  void plane_waves(matrix_view<S> rhs, const double* angles, double k, complex<double> e0 = 1.0) const {
    emgpu::detail::require(rhs.rows == n_, "emgpu::kernel::efie2d_operator::plane_waves: rhs must have n rows");
    check_k(k, "plane_waves");
    emgpu::detail::require(std::isfinite(e0.real()) && std::isfinite(e0.imag()),
                           "emgpu::kernel::efie2d_operator::plane_waves: non-finite amplitude e0");
    check_finite(angles, rhs.cols, "plane_waves: non-finite incidence angle");
    for_each_index(b_, n_, rhs.cols, detail::plane_wave_fn<S>{x_.data(), y_.data(), angles, k, e0, rhs.data, rhs.ld});
  }

  /// @brief out(a, r) = far-field integral P(phi_a) of current column r
  ///        (angles and out in backend memory, out column-major with ld nang).
  /// @throws invalid_argument for currents without n rows, k not finite and
  ///         > 0, or a non-finite angle.
  template <class S>
  void far_field(matrix_view<const S> j, const double* angles, index_t nang, double k,
                 complex<double>* out) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::far_field: currents must have n rows");
    check_k(k, "far_field");
    if (nang <= 0 || j.cols <= 0) return;
    check_finite(angles, nang, "far_field: non-finite observation angle");
    // Phase table once (nang x n sincos), then a plain sum per (angle, column):
    // on a GPU angles vary fastest (coalesced), on the host unknowns do.
    auto e = make_vector<complex<double>>(b_, nang * n_);
    const index_t sa = is_device_backend_v<Backend> ? 1 : n_, si = is_device_backend_v<Backend> ? nang : 1;
    for_each_index(b_, nang, n_, detail::far_phase_fn{x_.data(), y_.data(), w_.data(), angles, k, e.data(), sa, si});
    for_each_index(b_, nang, j.cols, detail::far_sum_fn<S>{e.data(), sa, si, j.data, j.ld, n_, out, nang});
    synchronize(b_);  // e is freed on return
  }

  /// @brief out(r) = P(angles[r]) of current column r (monostatic: one angle
  ///        per column; angles and out in backend memory).
  /// @throws invalid_argument for currents without n rows, k not finite and
  ///         > 0, or a non-finite angle.
  template <class S>
  void far_field_diagonal(matrix_view<const S> j, const double* angles, double k, complex<double>* out) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::far_field_diagonal: currents must have n rows");
    check_k(k, "far_field_diagonal");
    check_finite(angles, j.cols, "far_field_diagonal: non-finite angle");
    for_each_index(b_, j.cols, detail::far_field_fn<S>{x_.data(), y_.data(), w_.data(), angles, k, j.data, j.ld, n_, out});
  }

  /// @brief Scattered E_z at npts points (px, py in backend memory) for each
  ///        current column; out is npts x ncols. Uses the Nystrom / one-point
  ///        rule, so points should be a few cells away from the contour.
  /// @throws invalid_argument for currents without n rows, k or eta not
  ///         finite and > 0, a non-finite point, or a non-finite result (a
  ///         point exactly on an unknown, where the Hankel function is
  ///         singular, or non-finite currents).
  template <class S>
  void scattered_field(matrix_view<const S> j, const double* px, const double* py, index_t npts, double k,
                       complex<double>* out, double eta = constants::eta0) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::scattered_field: currents must have n rows");
    check_k(k, "scattered_field");
    check_eta(eta, "scattered_field");
    if (npts <= 0 || j.cols <= 0) return;
    check_finite(px, npts, "scattered_field: non-finite point");
    check_finite(py, npts, "scattered_field: non-finite point");
    for_each_index(b_, npts, j.cols,
                   detail::near_field_fn<S>{x_.data(), y_.data(), w_.data(), px, py, k, k * eta / 4, j.data,
                                            j.ld, n_, out, npts});
    check_finite(out, npts * j.cols,
                 "scattered_field: non-finite field (a point on an unknown, where H0 is singular, "
                 "or non-finite currents)");
  }

 private:
  static void check_k(double k, const char* who) {
    if (!(std::isfinite(k) && k > 0))
      throw invalid_argument(std::string("emgpu::kernel::efie2d_operator::") + who +
                             ": wavenumber must be finite and > 0");
  }
  static void check_eta(double eta, const char* who) {
    if (!(std::isfinite(eta) && eta > 0))
      throw invalid_argument(std::string("emgpu::kernel::efie2d_operator::") + who + ": eta must be finite and > 0");
  }
  // Angles and points live in backend memory: one reduction there (no copy).
  template <class T>
  void check_finite(const T* p, index_t n, const char* what) const {
    if (n > 0 && !emgpu::all_finite(b_, p, n))
      throw invalid_argument(std::string("emgpu::kernel::efie2d_operator::") + what);
  }

  Backend b_;
  index_t n_;
  int q_;
  bool analytic_self_;
  index_t nblocks_;
  vector_t<Backend, double> x_, y_, w_, coef_;
  vector_t<Backend, near_block> blocks_;
  vector_t<Backend, rule_point> rules_;
  far_fill_variant far_ = default_far_fill<Backend>;
  near_fill_variant near_ = default_near_fill;
};

}  // namespace emgpu::kernel
