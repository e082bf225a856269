/// @file
/// @brief CUDA batched LU for 17 <= n <= 128 in double and complex<double>:
///        ceil(n/32) warps per matrix, thread per row, the matrix (from
///        n = 65 or 89 a window of its columns) in shared memory, panels of 8 columns factored row-per-thread in registers
///        and the trailing update done by FP64 tensor-core tiles
///        (mma.m16n8k8.f64 on sm_90, m8n8k4 on sm_80-89).
///
/// n <= 32 (lu_mma_kernel, session 10), n = 33..64 (complex<double>) or
/// 33..88 (double) (lu_mma_wkernel, session 11) and above (lu_mma_gkernel,
/// session 18: a window of 32 columns in shared memory, the rest in global
/// memory; described at the kernels) share the column step, the U12 solve and the tensor-core
/// update; the notes below are the n <= 32 design.
///
/// Why: the register kernel (lu_regs.hpp) applies every rank-1 update to the
/// whole row at once, ~280 instructions per column step and warp, and is
/// latency-bound at the 12 warps per SM its 128 data registers a lane
/// allow. Here a column step touches only the 8 columns of its panel; after
/// the panel, the unit-lower solve U12 = L11^-1 A12 (one lane per trailing
/// column) and one product A22 -= L21 U12 per panel (4 real products per
/// complex tile) finish the trailing columns. Same shared-memory footprint
/// per matrix as the register kernel's register footprint, so the same 12
/// warps per SM, with ~30 % fewer instructions (6 440 against ~9 000 per
/// matrix, ncu) and 8-entry instead of 32-entry column steps: 1.46 against
/// 2.18 ms for 100 000 complex<double> 32 x 32 on an H100 (docs/batched.md).
///
/// Rows never move (as in lu_regs.hpp): lane i owns original row i and its
/// current position; the pivot search, pivot choice, zero-pivot rule and
/// info are those of lu_factor_core. The blocked update gives every entry
/// the same updates -l_ik u_kj as the unblocked elimination, summed in a
/// different order (the tensor core adds 8 products at a time), so the
/// factors agree with the team path to rounding; a zero pivot's column is
/// masked out of L21 (the unblocked path skips that step's update).
///
/// Layout per warp (lu_mma_layout): for double, column-major with column
/// stride lu_mma_lds = 34 doubles, so that the accumulator tiles (row l/4,
/// columns 2(l%4) + e of an 8 x 8 tile) and a lane's row of a panel are read
/// without bank conflicts (8.9 KB); for complex<double> since session 44,
/// interleaved entries with column stride 33 (lu_mma_inter: 16.9 KB, 13
/// one-warp blocks per SM on Hopper; n <= 24 holds 24 columns, 12.7 KB, 17
/// blocks). The W-warp kernels (n > 32) keep real and imaginary planes.
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "../../backend/cuda_mma.hpp"
#include "common.hpp"
#include "lu_blocked.hpp"
#include "lu_regs.hpp"
#include "smem_limit.hpp"

namespace emgpu::batched::detail {

constexpr index_t lu_mma_min_n = 17;
constexpr index_t lu_mma_max_n = 128;
constexpr int lu_mma_lds = 34;

/// Whether lu_factor routes n to lu_mma_kernel for scalar type T.
template <class T>
inline constexpr bool lu_mma_type = std::is_same_v<T, double> || std::is_same_v<T, complex<double>>;

/// Entry (i, j) of a matrix kept as real / imaginary planes with column
/// stride LDS (im is not read for real T).
template <class T, int LDS>
__device__ __forceinline__ T lu_mma_get(const double* re, const double* im, int i, int j) {
  if constexpr (is_complex_v<T>) return T(re[j * LDS + i], im[j * LDS + i]);
  else return re[j * LDS + i];
}
template <class T, int LDS>
__device__ __forceinline__ void lu_mma_put(double* re, double* im, int i, int j, T v) {
  if constexpr (is_complex_v<T>) {
    re[j * LDS + i] = v.real();
    im[j * LDS + i] = v.imag();
  } else {
    re[j * LDS + i] = v;
  }
}

template <class T>
__device__ __forceinline__ T lu_mma_shfl(T v, int from) {
  if constexpr (is_complex_v<T>)
    return T(__shfl_sync(0xffffffffu, v.real(), from), __shfl_sync(0xffffffffu, v.imag(), from));
  else
    return __shfl_sync(0xffffffffu, v, from);
}

/// a * (1 / z) as lu_recip forms it, with a * conj(z) computed beside the
/// real reciprocal 1 / |z|^2 instead of after it (one multiplication less on
/// the column's critical path); equal to rounding.
template <class T>
__device__ __forceinline__ T lu_mma_div(T a, T z) {
  if constexpr (is_complex_v<T>) {
    const double x = z.real(), y = z.imag();
    const double d = x * x + y * y;
    if (d >= 0x1p-1000 && d <= 0x1p+1000) {  // false for NaN and Inf
      const double i = 1.0 / d;
      const double tr = ::fma(a.real(), x, a.imag() * y);
      const double ti = ::fma(a.imag(), x, -(a.real() * y));
      return T(tr * i, ti * i);
    }
    return a * lu_recip_slow(z);
  } else {
    return a * (1.0 / z);
  }
}

/// Starts the copies of one row's entries in columns 0..cols-1 (column j at
/// src + j lda) to dst(c, j) for each plane c, zeros from column `have` on:
/// one unpredicated cp.async per entry, the source stepped by lda, so a
/// column costs a few instructions instead of a 64-bit product and a
/// predicated copy (nvcc pads those with no-ops): 1 128 of lu_mma_kernel's
/// 6 209 instructions per 32 x 32 complex<double> matrix were its load.
template <class T, class Dst>
__device__ __forceinline__ void lu_mma_load_row(const T* src, index_t lda, int cols, int have, Dst&& dst) {
  constexpr int planes = is_complex_v<T> ? 2 : 1;
  const double* const safe = reinterpret_cast<const double*>(src);  // read by no copy of 0 bytes
#pragma unroll 8
  for (int j = 0; j < cols; ++j) {
    const bool in = j < have;
    const double* const p = in ? reinterpret_cast<const double*>(src) : safe;
#pragma unroll
    for (int c = 0; c < planes; ++c) emgpu::detail::cp_async8z(dst(c, j), p + c, in ? 8 : 0);
    src += lda;
  }
}

/// The pivot row's panel entries of lu_mma_kernel, at a register-held
/// shared address (emgpu::detail::shared_addr); the store only where `on`.
template <class T>
__device__ __forceinline__ void lu_mma_stu_if(unsigned on, unsigned a, T v) {
  if constexpr (is_complex_v<T>) emgpu::detail::st_shared_f64_if<2>(on, a, {v.real(), v.imag()});
  else emgpu::detail::st_shared_f64_if<1>(on, a, {v});
}
template <class T>
__device__ __forceinline__ T lu_mma_ldu(unsigned a) {
  if constexpr (is_complex_v<T>) {
    double v[2];
    emgpu::detail::ld_shared_f64<2>(a, v);
    return T(v[0], v[1]);
  } else {
    double v[1];
    emgpu::detail::ld_shared_f64<1>(a, v);
    return v[0];
  }
}

/// The nonzero-pivot part of a column step: positions k and pk exchange,
/// and where upd() (whether the row is still to be eliminated, asked after
/// the exchange) the multiplier l = mult(p[s]) is stored and the panel
/// entries after s are updated with the pivot row's u(j).
template <class T, class U, class P, class M>
__device__ __forceinline__ void lu_mma_eliminate(T (&p)[8], int s, U&& u, int k, int pk, int& pos, P&& upd,
                                                 M&& mult) {
  T uj[8];
#pragma unroll
  for (int j = s + 1; j < 8; ++j) uj[j] = u(j);
  if (pos == pk) pos = k;
  else if (pos == k) pos = pk;
  if (upd()) {
    const T l = mult(p[s]);
    const T nl = -l;
    p[s] = l;
#pragma unroll
    for (int j = s + 1; j < 8; ++j) p[j] = lu_fnma(p[j], nl, uj[j]);
  }
}

/// Column step k (panel column s) once the pivot is known: its position
/// pk, its value piv and the pivot row's panel entries u(j), j = s+1..7. A zero
/// pivot sets info and masks the step (no swap, no update, as
/// lu_factor_core); otherwise the positions swap and a row still to be
/// eliminated forms its multiplier and updates its panel entries. The row
/// now at position k (original row `me` of the caller) is recorded in
/// rowof[k] (R: int*, or lu_mma_inter's padding view).
template <class T, class U, class R>
__device__ __forceinline__ void lu_mma_step(T (&p)[8], int s, U&& u, T piv, int k, int pk, bool row, int me,
                                            int& pos, int& inf, unsigned& zmask, R rowof) {
  if (is_zero(piv)) {
    if (inf == 0) inf = k + 1;
    zmask |= 1u << s;
  } else {
    lu_mma_eliminate(
        p, s, u, k, pk, pos, [&] { return row && pos > k; }, [&](T a) { return lu_mma_div(a, piv); });
  }
  if (row && pos == k) rowof[k] = me;
}

/// 1 / d for 2^-1000 <= |d| <= 2^1000: the instructions nvcc emits for the
/// correctly rounded 1.0 / d on that range (reciprocal estimate, its low
/// word seeded as nvcc seeds it, two Newton steps), so bit for bit its
/// result, without nvcc's test for the out-of-range inputs and the branch to
/// its slow path, which the caller's range test already excludes.
__device__ __forceinline__ double lu_rcp_mid(double d) {
  double y0;
  asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y0) : "d"(d));
  y0 = __hiloint2double(__double2hiint(y0), __double2hiint(d) + 0x300402);
  double e = ::fma(-d, y0, 1.0);
  e = ::fma(e, e, e);
  const double y = ::fma(y0, e, y0);
  const double r = ::fma(-d, y, 1.0);
  return ::fma(y, r, y);
}

/// lu_mma_step for lu_mma_kernel (same results bit for bit), with one
/// branch for the common pivot: |piv|^2 (|piv| for real T) within
/// 2^-1000..2^1000, so nonzero and finite, takes lu_rcp_mid and skips the
/// zero test; zero, tiny, huge and non-finite pivots take lu_mma_step's
/// path. upd (a candidate row other than the winner's) is whether the row
/// is eliminated, known before the exchange of positions, which then stays
/// off the path to the update. The winner already recorded itself as the
/// row at position k; a zero pivot (no exchange) records the row at
/// position k instead (lu_mma_step).
template <class T, class U, class R>
__device__ __forceinline__ void lu_mma_step_mid(T (&p)[8], int s, U&& u, T piv, int k, int pk, bool row, bool upd,
                                                int me, int& pos, int& inf, unsigned& zmask, R rowof) {
  double d;
  if constexpr (is_complex_v<T>) d = piv.real() * piv.real() + piv.imag() * piv.imag();  // as lu_mma_div
  else d = ::fabs(piv);
  if (d >= 0x1p-1000 && d <= 0x1p+1000) {  // false for NaN and Inf
    lu_mma_eliminate(p, s, u, k, pk, pos, [upd] { return upd; }, [&](T a) {
      if constexpr (is_complex_v<T>) {  // a * (1 / piv) as lu_mma_div forms it
        const double i = lu_rcp_mid(d);
        const double x = piv.real(), y = piv.imag();
        const double tr = ::fma(a.real(), x, a.imag() * y);
        const double ti = ::fma(a.imag(), x, -(a.real() * y));
        return T(tr * i, ti * i);
      } else {
        return a * lu_rcp_mid(piv);
      }
    });
  } else {
    lu_mma_step(p, s, u, piv, k, pk, row, me, pos, inf, zmask, rowof);
  }
}

/// U12 = L11^-1 A12 for trailing column j on the panel's pivot rows (one
/// thread per column); the steps of zmask (zero pivot) contribute nothing,
/// as their update is skipped in the unblocked elimination. The panel is
/// whole (steps k0..k0+7 all exist): every caller solves only when columns
/// follow the panel. Without a per-step test of that the solve is one basic
/// block, so every step's loads issue at once instead of one latency per
/// step (1 % of lu_mma_kernel at n = 32, docs/batched-log.md, session 39).
/// get(i, c) / put(i, c, v) access entry (i, c) of the matrix, rowof[k] is
/// the row at position k and lof(s, rs, t) is L(rs, k0 + t) for the pivot
/// row rs of step k0 + s, t < s (shared memory, or global memory in
/// lu_mma_gkernel).
template <class T, class Get, class Put, class R, class LOf>
__device__ __forceinline__ void lu_mma_u12_acc(Get&& get, Put&& put, R rowof, int j, int k0, unsigned zmask,
                                               LOf&& lof) {
  T x[8];
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    const int rs = rowof[k0 + s];  // a zero pivot's row is still that step's U row
    T v = get(rs, j);
#pragma unroll
    for (int t = 0; t < s; ++t)
      if (!((zmask >> t) & 1u)) v = lu_fnma(v, -lof(s, rs, t), x[t]);
    x[s] = v;
    put(rs, j, v);
  }
}
/// lu_mma_u12_acc on real / imaginary planes with column stride LDS.
template <class T, int LDS, class LOf>
__device__ __forceinline__ void lu_mma_u12_with(double* re, double* im, const int* rowof, int j, int k0,
                                                unsigned zmask, LOf&& lof) {
  lu_mma_u12_acc<T>([&](int i, int c) { return lu_mma_get<T, LDS>(re, im, i, c); },
                    [&](int i, int c, T v) { lu_mma_put<T, LDS>(re, im, i, c, v); }, rowof, j, k0, zmask, lof);
}
template <class T, int LDS>
__device__ __forceinline__ void lu_mma_u12(double* re, double* im, const int* rowof, int j, int k0, unsigned zmask) {
  lu_mma_u12_with<T, LDS>(re, im, rowof, j, k0, zmask,
                          [&](int, int rs, int t) { return lu_mma_get<T, LDS>(re, im, rs, k0 + t); });
}

/// (cr + i ci) += (nlr + i nli)(ur + i ui) for row tiles rl (lo) and rh (hi)
/// of the A fragments, once cr += nlr ur is done: the other three real
/// products.
__device__ __forceinline__ void lu_mma_ctile_rest(double (&crl)[2], double (&crh)[2], double (&cil)[2],
                                                  double (&cih)[2], const double (&nlr)[4][2],
                                                  const double (&nli)[4][2], int rl, int rh, const double (&ur)[2],
                                                  const double (&ui)[2]) {
  emgpu::detail::dmma_m16n8k8(crl, crh, nli[rl][0], nli[rh][0], nli[rl][1], nli[rh][1], -ui[0], -ui[1]);
  emgpu::detail::dmma_m16n8k8(cil, cih, nlr[rl][0], nlr[rh][0], nlr[rl][1], nlr[rh][1], ui[0], ui[1]);
  emgpu::detail::dmma_m16n8k8(cil, cih, nli[rl][0], nli[rh][0], nli[rl][1], nli[rh][1], ur[0], ur[1]);
}

/// A22 -= L21 U12 on the FP64 tensor cores for the 32 rows r0..r0+31 of the
/// calling warp, columns k1..n-1 (in 8-column tiles), given the warp's
/// A fragments nlr / nli = -L(r0 + 8r + q, k0 + 4c + m) (zero where masked)
/// and the pivot rows urow[c] of steps k0 + 4c + m (-1: masked step, U read
/// as 0, since 0 * Inf would be NaN). B fragments: U(4c + m, 8t + q) from
/// the pivot rows. Only the rows of `active` (bit i: row r0 + i still to be
/// eliminated) are read and stored: the unblocked path never touches the
/// others.
template <class T, int LDS>
__device__ __forceinline__ void lu_mma_apply(double* re, double* im, const double (&nlr)[4][2],
                                             const double (&nli)[4][2], const int (&urow)[2], int r0,
                                             unsigned active, int k1, int n, int lane) {
  constexpr bool cplx = is_complex_v<T>;
  const int q = lane / 4, m = lane % 4;  // fragment coordinates
#pragma unroll 1
  for (int jt = k1; jt < n; jt += 8) {
    double ur[2], ui[2];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int o = (jt + q) * LDS + urow[c];
      ur[c] = urow[c] >= 0 ? re[o] : 0.0;
      if constexpr (cplx) ui[c] = urow[c] >= 0 ? im[o] : 0.0;
      else ui[c] = 0.0;
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {  // row tiles 2h (lo) and 2h + 1 (hi)
      if (((active >> (16 * h)) & 0xffffu) == 0u) continue;  // warp-uniform
      const int o0 = (jt + 2 * m) * LDS + r0 + 16 * h + q, o1 = o0 + LDS;
      const bool mlo = (active >> (16 * h + q)) & 1u, mhi = (active >> (16 * h + 8 + q)) & 1u;
      const int rl = 2 * h, rh = 2 * h + 1;
      // Only active rows are read too: their results are the only ones
      // kept, and lu_mma_wkernel never writes rows past n.
      double crl[2] = {0.0, 0.0}, crh[2] = {0.0, 0.0};
      if (mlo) crl[0] = re[o0], crl[1] = re[o1];
      if (mhi) crh[0] = re[o0 + 8], crh[1] = re[o1 + 8];
      emgpu::detail::dmma_m16n8k8(crl, crh, nlr[rl][0], nlr[rh][0], nlr[rl][1], nlr[rh][1], ur[0], ur[1]);
      if constexpr (cplx) {
        double cil[2] = {0.0, 0.0}, cih[2] = {0.0, 0.0};
        if (mlo) cil[0] = im[o0], cil[1] = im[o1];
        if (mhi) cih[0] = im[o0 + 8], cih[1] = im[o1 + 8];
        lu_mma_ctile_rest(crl, crh, cil, cih, nlr, nli, rl, rh, ur, ui);
        if (mlo) {
          im[o0] = cil[0];
          im[o1] = cil[1];
        }
        if (mhi) {
          im[o0 + 8] = cih[0];
          im[o1 + 8] = cih[1];
        }
      }
      if (mlo) {
        re[o0] = crl[0];
        re[o1] = crl[1];
      }
      if (mhi) {
        re[o0 + 8] = crh[0];
        re[o1 + 8] = crh[1];
      }
    }
  }
}

/// The fragments of a panel's update for lane (q, m) = (lane / 4, lane % 4):
/// nlr / nli[r][c] = -L(8 r + q, step(c, m)) as ld(i, s, nlr, nli) loads
/// them (zero on rows outside `active` and on the steps of zmask), and
/// urow[c] the pivot row of step(c, m) (-1 for a step of zmask: U read as
/// 0, since 0 * Inf would be NaN).
template <class Step, class Ld, class R>
__device__ __forceinline__ void lu_mma_frags(double (&nlr)[4][2], double (&nli)[4][2], int (&urow)[2], unsigned active,
                                             unsigned zmask, int k0, int lane, Step&& step, Ld&& ld, R rowof) {
  const int q = lane / 4, m = lane % 4;
#pragma unroll
  for (int r = 0; r < 4; ++r)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int i = 8 * r + q, s = step(c, m);
      nlr[r][c] = 0.0;
      nli[r][c] = 0.0;
      if (((active >> i) & 1u) && !((zmask >> s) & 1u)) ld(i, s, nlr[r][c], nli[r][c]);
    }
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const int s = step(c, m);
    urow[c] = ((zmask >> s) & 1u) ? -1 : rowof[k0 + s];
  }
}

/// lu_mma_apply with L21 from the panel columns k0..k0+7 in shared memory.
template <class T, int LDS>
__device__ __forceinline__ void lu_mma_update(double* re, double* im, const int* rowof, int r0, unsigned active,
                                              unsigned zmask, int k0, int k1, int n, int lane) {
  double nlr[4][2], nli[4][2];
  int urow[2];
  lu_mma_frags(
      nlr, nli, urow, active, zmask, k0, lane, [](int c, int m) { return 4 * c + m; },
      [&](int i, int s, double& lr, double& li) {
        const int o = (k0 + s) * LDS + r0 + i;
        lr = -re[o];
        if constexpr (is_complex_v<T>) li = -im[o];
      },
      rowof);
  lu_mma_apply<T, LDS>(re, im, nlr, nli, urow, r0, active, k1, n, lane);
}

/// lu_mma_kernel's matrix as real / imaginary planes (one for real T),
/// column stride lu_mma_lds = 34 doubles, with the pivot-row buffer and
/// rowof beside it: 8.9 KB for double at C = 32 (the type it serves; see
/// lu_mma_layout).
template <class T, int C>
struct lu_mma_planes {
  static constexpr int planes = is_complex_v<T> ? 2 : 1;
  static constexpr int min_blocks = C == 24 ? 16 : 12;
  struct smem {
    double a[planes][C * lu_mma_lds];  // the matrix, rows by original index
    T u[2][8];                          // pivot row's panel entries, by step parity
    int rowof[32];                      // original row at each position k (the U row of step k)
  };
  double* re;
  double* im;
  int* rowof;
  unsigned ua0, ra0;
  __device__ explicit lu_mma_planes(smem& sm)
      : re(sm.a[0]), im(sm.a[planes - 1]), rowof(sm.rowof), ua0(emgpu::detail::shared_addr(&sm.u[0][0])),
        ra0(emgpu::detail::shared_addr(&sm.rowof[0])) {}
  __device__ T get(int i, int j) const { return lu_mma_get<T, lu_mma_lds>(re, im, i, j); }
  __device__ void put(int i, int j, T v) const { lu_mma_put<T, lu_mma_lds>(re, im, i, j, v); }
  /// Shared addresses of the pivot row's entry 0 at step parity par (entry
  /// j u_stride bytes on), and of rowof[k].
  static constexpr unsigned u_stride = sizeof(T);
  __device__ unsigned u_addr(int par) const { return ua0 + unsigned(par * 8 * int(sizeof(T))); }
  __device__ unsigned rowof_addr(int k) const { return ra0 + unsigned(4 * k); }
  /// Every entry's copy in flight at once (cp.async, no registers), so that
  /// a warp waits out the global latency once per matrix, not per column;
  /// returns once the first panel's columns (a group of their own) landed,
  /// so that its column steps start while the rest lands (wait_rest).
  template <int N>
  static __device__ void load(smem& sm, const T* base, index_t lda, int n, int lane) {
    const bool row = lane < n;
    const auto dst = [&](int c, int j) { return &sm.a[c][j * lu_mma_lds + lane]; };
    lu_mma_load_row(base + lane, lda, 8, row ? n : 0, dst);
    emgpu::detail::cp_async_commit();
    lu_mma_load_row(base + lane + 8 * lda, lda, C - 8, row ? n - 8 : 0, [&](int c, int j) { return dst(c, j + 8); });
    emgpu::detail::cp_async_commit();
    emgpu::detail::cp_async_wait<1>();
    __syncwarp();
  }
  template <int N>
  __device__ void wait_rest() const {
    emgpu::detail::cp_async_wait<0>();
  }
  template <int N>
  __device__ void finish(int) const {}
  __device__ void u12(int j, int k0, unsigned zmask) const { lu_mma_u12<T, lu_mma_lds>(re, im, rowof, j, k0, zmask); }
  __device__ void update(unsigned active, unsigned zmask, int k0, int k1, int n, int lane) const {
    lu_mma_update<T, lu_mma_lds>(re, im, rowof, 0, active, zmask, k0, k1, n, lane);
  }
};

/// lu_mma_kernel's matrix for complex<double>: interleaved entries (16 B,
/// as in global memory), column stride S = 33 entries. Why: with an odd
/// stride, 8 lanes reading 8 consecutive rows or 8 consecutive columns
/// (a panel row, a U12 column solve, an accumulator tile) hit 8 distinct
/// 16-byte bank groups, and so do the L fragments once a panel's steps are
/// spread over the fragment's k slots as 2m + c (update below); the
/// planes layout (stride 34 doubles) had 2-way conflicts in the L fragments
/// and U12 and needed 8-byte copies. The pivot-row buffer, rowof and (at
/// n = 32 on sm_90+) two mbarriers live in row 32, the padding (unit
/// 33 j + 32 of column j: u[par][j] in column 8 par + j, rowof[4 c + e] in
/// column 16 + c, word e, the mbarriers in column 24), so a block needs only
/// 32 x 33 x 16 = 16 896 B: 13 blocks per SM on Hopper (227 KB, 1 KB
/// reserved per block, 128-byte granules) instead of 12; 24 columns
/// 12 672 B, 17 blocks. At n = 32 on sm_90+ the matrix arrives as 32 bulk
/// copies of a column (issued by one lane), which do not pass through the
/// load/store pipe. Together 1.15x at n = 32 on an H200 (docs/batched-log.md,
/// session 44).
template <int C>
struct lu_mma_inter {
  using T = complex<double>;
  static constexpr int S = 33;
  static constexpr int min_blocks = C == 24 ? 17 : 13;
  struct smem {
    double2 a[C * S];
  };
  /// rowof in the padding, indexed as an array.
  struct rowof_view {
    int* w;
    static __device__ constexpr int index(int k) { return ((16 + (k >> 2)) * S + 32) * 4 + (k & 3); }
    __device__ int& operator[](int k) const { return w[index(k)]; }
  };
  double2* a;
  rowof_view rowof;
  unsigned a0;
  __device__ explicit lu_mma_inter(smem& sm)
      : a(sm.a), rowof{reinterpret_cast<int*>(sm.a)}, a0(emgpu::detail::shared_addr(&sm.a[0])) {}
  __device__ T get(int i, int j) const {
    const double2 v = a[j * S + i];
    return T(v.x, v.y);
  }
  __device__ void put(int i, int j, T v) const { a[j * S + i] = make_double2(v.real(), v.imag()); }
  static constexpr unsigned u_stride = S * 16;
  __device__ unsigned u_addr(int par) const { return a0 + unsigned((par * 8 * S + 32) * 16); }
  __device__ unsigned rowof_addr(int k) const { return a0 + unsigned(4 * rowof_view::index(k)); }
  /// Byte offset of mbarrier b (0, 1) from the matrix: the padding of column 24.
  static EMGPU_HD constexpr unsigned bar_off(int b) { return unsigned((24 * S + 32) * 16 + 8 * b); }
  static EMGPU_HD constexpr bool bulk(int N) { return EMGPU_BULK_COPY && C == 32 && N == 32; }
  template <int N>
  static __device__ void load(smem& sm, const T* base, index_t lda, int n, int lane) {
    double2* const a = sm.a;
    const unsigned a0 = emgpu::detail::shared_addr(a);
    const auto bar = [a0](int b) { return a0 + bar_off(b); };
    if constexpr (bulk(N)) {
      // Column j (512 B, 16-byte aligned as every complex<double>) as one
      // bulk copy, all 32 issued by one elected lane (one lane each: 3 %
      // more instructions, 0.6-0.9 % slower on an H200); columns 0..7
      // complete on bar(0), so that the first panel starts while the rest
      // lands on bar(1).
      if (emgpu::detail::elect_one()) {
        emgpu::detail::mbar_init1(bar(0));
        emgpu::detail::mbar_init1(bar(1));
        emgpu::detail::mbar_expect(bar(0), 8u * 512u);
        emgpu::detail::mbar_expect(bar(1), 24u * 512u);
#pragma unroll
        for (int j = 0; j < 32; ++j)
          emgpu::detail::bulk_copy16(a0 + unsigned(j * S * 16), base + index_t(j) * lda, 512u, bar(j < 8 ? 0 : 1));
      }
      __syncwarp();
      emgpu::detail::mbar_wait0(bar(0));
    } else {
      // One 16-byte cp.async per entry, zeros outside the n x n matrix.
      const bool row = lane < n;
      const T* src = base + lane;
#pragma unroll 8
      for (int j = 0; j < C; ++j) {
        const bool in = row && j < n;
        emgpu::detail::cp_async16(&a[j * S + lane], in ? src : base, in ? 16 : 0);
        src += lda;
        if (j == 7) emgpu::detail::cp_async_commit();
      }
      emgpu::detail::cp_async_commit();
      emgpu::detail::cp_async_wait<1>();
      __syncwarp();
    }
  }
  template <int N>
  __device__ void wait_rest() const {
    if constexpr (bulk(N)) emgpu::detail::mbar_wait0(a0 + bar_off(1));
    else emgpu::detail::cp_async_wait<0>();
  }
  template <int N>
  __device__ void finish(int lane) const {
    if constexpr (bulk(N)) {
      if (lane == 0) {
        emgpu::detail::mbar_inval(a0 + bar_off(0));
        emgpu::detail::mbar_inval(a0 + bar_off(1));
      }
    }
  }
  __device__ void u12(int j, int k0, unsigned zmask) const {
    lu_mma_u12_acc<T>([&](int i, int c) { return get(i, c); }, [&](int i, int c, T v) { put(i, c, v); }, rowof, j,
                      k0, zmask, [&](int, int rs, int t) { return get(rs, k0 + t); });
  }
  /// lu_mma_update in this layout: lane (q, m) holds L(8 r + q, step 2 m + c)
  /// as A fragment (r, c) and U(step 2 m + c, column jt + q) as B fragment
  /// c, so that 8 lanes of a 128-bit access read 8 distinct bank groups.
  __device__ void update(unsigned active, unsigned zmask, int k0, int k1, int n, int lane) const {
    const int q = lane / 4, m = lane % 4;
    double nlr[4][2], nli[4][2];
    int urow[2];
    lu_mma_frags(
        nlr, nli, urow, active, zmask, k0, lane, [](int c, int mm) { return 2 * mm + c; },
        [&](int i, int s, double& lr, double& li) {
          const double2 v = a[(k0 + s) * S + i];
          lr = -v.x;
          li = -v.y;
        },
        rowof);
#pragma unroll 1
    for (int jt = k1; jt < n; jt += 8) {
      double ur[2], ui[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        ur[c] = 0.0;
        ui[c] = 0.0;
        if (urow[c] >= 0) {
          const double2 v = a[(jt + q) * S + urow[c]];
          ur[c] = v.x;
          ui[c] = v.y;
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (((active >> (16 * h)) & 0xffffu) == 0u) continue;  // warp-uniform
        const int o0 = (jt + 2 * m) * S + 16 * h + q, o1 = o0 + S;
        const bool mlo = (active >> (16 * h + q)) & 1u, mhi = (active >> (16 * h + 8 + q)) & 1u;
        double crl[2] = {0.0, 0.0}, crh[2] = {0.0, 0.0}, cil[2] = {0.0, 0.0}, cih[2] = {0.0, 0.0};
        if (mlo) {
          const double2 x0 = a[o0], x1 = a[o1];
          crl[0] = x0.x, cil[0] = x0.y, crl[1] = x1.x, cil[1] = x1.y;
        }
        if (mhi) {
          const double2 x0 = a[o0 + 8], x1 = a[o1 + 8];
          crh[0] = x0.x, cih[0] = x0.y, crh[1] = x1.x, cih[1] = x1.y;
        }
        const int rl = 2 * h, rh = 2 * h + 1;
        emgpu::detail::dmma_m16n8k8(crl, crh, nlr[rl][0], nlr[rh][0], nlr[rl][1], nlr[rh][1], ur[0], ur[1]);
        lu_mma_ctile_rest(crl, crh, cil, cih, nlr, nli, rl, rh, ur, ui);
        if (mlo) {
          a[o0] = make_double2(crl[0], cil[0]);
          a[o1] = make_double2(crl[1], cil[1]);
        }
        if (mhi) {
          a[o0 + 8] = make_double2(crh[0], cih[0]);
          a[o1 + 8] = make_double2(crh[1], cih[1]);
        }
      }
    }
  }
};

/// The layout of lu_mma_kernel for T: interleaved for complex<double>,
/// planes for double (whose 8-byte entries the planes layout already reads
/// without the complex case's conflicts).
template <class T, int C>
using lu_mma_layout = std::conditional_t<is_complex_v<T>, lu_mma_inter<C>, lu_mma_planes<T, C>>;

/// n <= C (C = 24 or 32 columns in shared memory), one warp per matrix, the
/// matrix as lu_mma_layout<T, C> keeps it. The kernel is bound by issue
/// latency and the load/store pipe at the blocks per SM its shared memory
/// allows, so n <= 24 takes C = 24 (more blocks): 1.14-1.20x for
/// complex<double>, 1.07-1.13x for double at n = 17..24 on an H200, factors
/// bit for bit equal (session 35, planes layout). Holding only 24 columns at
/// n > 24 (the last panel loaded after parking columns 0..7 in global
/// memory, then left-looking) was bit for bit equal too but 0.80-0.83x: its
/// mid-kernel global round trips cost more than the extra blocks give
/// (docs/batched-log.md, session 35). N > 0 fixes n = N at compile time
/// (the launcher uses N = 32 for n = 32): the row, panel-end and
/// trailing-column tests fold away, 5.6 % fewer instructions and 3-4 % less
/// time on an H200 (session 42), bit for bit the same factors. Session 43:
/// the one-redux search, lu_mma_step_mid and the winner's predicated
/// stores, 9 % fewer instructions, 1.02x at n = 32 and 1.07-1.09x at
/// n = 17..28. Session 44: lu_mma_inter for complex<double>.
template <class T, class Loc, int C, int N = 0>
__global__ void __launch_bounds__(32, lu_mma_layout<T, C>::min_blocks)
    lu_mma_kernel(Loc loc, int n_arg, index_t lda, index_t* ipiv, int* info) {
  static_assert(lu_mma_type<T> && (C == 24 || C == 32) && N >= 0 && N <= C);
  const int n = N > 0 ? N : n_arg;
  using L = lu_mma_layout<T, C>;
  __shared__ __align__(128) typename L::smem sm;
  const int lane = int(threadIdx.x);
  const unsigned full = 0xffffffffu;
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  const bool row = lane < n;

  L::template load<N>(sm, base, lda, n, lane);
  const L lay(sm);

  int pos = lane;
  int mypiv = lane;
  int inf = 0;
  T p[8];  // the panel's entries of this lane's row; the last panel is stored from here
#pragma unroll 1
  for (int k0 = 0; k0 < n; k0 += 8) {
#pragma unroll
    for (int s = 0; s < 8; ++s) p[s] = lay.get(lane, k0 + s);
    unsigned zmask = 0u;  // steps of this panel with no update (zero pivot, or k >= n)
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const int k = k0 + s;
      if (k >= n) {
        zmask |= 1u << s;
        continue;
      }
      // First one redux on the high word of the search key: when a single
      // lane holds the largest, that lane wins (the rest of the key and the
      // position cannot change the order), one redux and a vote instead of
      // three reduxes on the path to the pivot, and the winner's position
      // comes by shuffle off that path. Otherwise (ties in the high word,
      // no candidate) the full search, whose key carries the lane.
      const bool cand = row && pos >= k;
      int pk, wl;
      const lu_warp_hi wh = lu_warp_argmax_hi(cand, abs1(p[s]));
      if (__popc(wh.B) == 1) {
        wl = __ffs(int(wh.B)) - 1;
        pk = __shfl_sync(full, pos, wl);
      } else {
        const lu_warp_winner w = lu_warp_argmax(cand, abs1(p[s]), pos * 32 + lane);
        if (w.H != 0u) {
          pk = int(w.P >> 5);
          wl = int(w.P & 31u);
        } else {  // no candidate compares (all NaN): position k, as lu_factor_core
          pk = k;
          wl = __ffs(int(__ballot_sync(full, row && pos == k))) - 1;
        }
      }
      if (lane == k) mypiv = pk;
      // The winner offers the rest of its panel row and records itself as
      // the row moving to position k (predicated stores, no branch); the
      // pivot itself comes by shuffle, the shortest path to the reciprocal.
      const unsigned ua = lay.u_addr(k & 1);
      const unsigned win = lane == wl;
#pragma unroll
      for (int j = s + 1; j < 8; ++j) lu_mma_stu_if(win, ua + j * L::u_stride, p[j]);
      emgpu::detail::st_shared_u32_if(win, lay.rowof_addr(k), unsigned(lane));
      const T piv = lu_mma_shfl(p[s], wl);
      __syncwarp();
      lu_mma_step_mid(
          p, s, [&](int j) { return lu_mma_ldu<T>(ua + j * L::u_stride); }, piv, k, pk, row, cand && lane != wl,
          lane, pos, inf, zmask, lay.rowof);
    }
    const int k1 = k0 + 8;  // first trailing column
    if (k1 >= n) break;
#pragma unroll
    for (int s = 0; s < 8; ++s) lay.put(lane, k0 + s, p[s]);
    // Rows still to be eliminated: their panel entries are L21.
    const unsigned active = __ballot_sync(full, row && pos >= k1);
    if (k0 == 0) lay.template wait_rest<N>();  // columns 8.. for the solve and update
    __syncwarp();

    if (k1 + lane < n) lay.u12(k1 + lane, k0, zmask);
    __syncwarp();
    lay.update(active, zmask, k0, k1, n, lane);
    __syncwarp();
  }

  if (row) {
    T* out = base + pos;  // stepped by lda: no 64-bit product per column
    const int kl = (n - 1) / 8 * 8;  // the last panel's first column
#pragma unroll 8
    for (int j = 0; j < kl; ++j, out += lda) *out = lay.get(lane, j);
#pragma unroll
    for (int s = 0; s < 8; ++s, out += lda)
      if (kl + s < n) *out = p[s];
    ipiv[mat * n + lane] = index_t(mypiv);
  }
  if (lane == 0) info[mat] = inf;
  lay.template finish<N>(lane);
}

/// n = 33..128: W = ceil(n / 32) warps per matrix, thread t owning row t (so
/// that a column step costs what it does at n <= 32 plus one block
/// barrier), the matrix in dynamic shared memory with column stride LDS =
/// n rounded up to 16, plus 2. LDS = 2 mod 16, as lu_mma_lds: the 16
/// doubles a half-warp reads of an accumulator tile (rows q, columns 2m
/// (+1)) fall in 16 distinct 8-byte bank pairs; the smallest such stride
/// keeps complex<double> n = 80 at two blocks per SM and n = 112 within one.
/// Each warp finds its best candidate and offers that row's panel entries;
/// after the barrier every thread merges the W offers (lu_winner_beats) and
/// reads the winner's row: one barrier per step. Warp w updates its own rows
/// 32w..32w+31 (row tiles 2w, 2w+1), so the next panel reads only rows of
/// its own warp.
template <class T, int W>
struct lu_mma_wtail {
  T u[2][W][8];                 // [step parity][warp] offered row's panel entries
  lu_warp_winner w[32 * W][W];  // [step][warp] the warp's winner
  int rowof[32 * W];            // original row at each position k
  unsigned char zmask[4 * W];   // [panel] its zero-pivot steps (lu_mma_gkernel)
};

/// Dynamic shared memory of lu_mma_wkernel<T, W, LDS> for an n x n matrix.
template <class T, int W, int LDS>
constexpr std::size_t lu_mma_wbytes(index_t n) {
  const std::size_t planes = is_complex_v<T> ? 2 : 1;
  const std::size_t cols = std::size_t((n + 7) / 8 * 8);
  return planes * cols * std::size_t(LDS) * sizeof(double) + sizeof(lu_mma_wtail<T, W>);
}

/// Factors columns kb..ke-1 (kb a multiple of 8) of the W-warp kernels: the
/// column steps, U12 and tensor-core update of each 8-column panel, the
/// update reaching only columns below ke. Column k sits at column k - c0 of
/// re / im; every row's updates from columns before kb must be applied.
/// Ends with a block barrier (the factored columns visible to all).
template <class T, int W, int LDS>
__device__ __forceinline__ void lu_mma_wpanels(double* re, double* im, lu_mma_wtail<T, W>& tl, int c0, int kb,
                                               int ke, int n, int& pos, int& mypiv, int& inf) {
  const int r = int(threadIdx.x), warp = r / 32, lane = r % 32;
  const unsigned full = 0xffffffffu;
  const bool row = r < n;
#pragma unroll 1
  for (int k0 = kb; k0 < ke; k0 += 8) {
    const int j0 = k0 - c0;  // the panel's first column in re / im
    T p[8];
#pragma unroll
    for (int s = 0; s < 8; ++s) p[s] = row ? lu_mma_get<T, LDS>(re, im, r, j0 + s) : T(0);
    unsigned zmask = 0u;
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const int k = k0 + s;
      if (k >= ke) {
        zmask |= 1u << s;
        continue;
      }
      // The offered rows alternate with k: a thread writes parity k & 1
      // again at step k + 2, after every warp passed the barrier of step
      // k + 1 and so finished its reads of step k. The winners (12 bytes a
      // warp) have a slot per step: no slot is ever rewritten.
      const int par = k & 1;
      lu_warp_winner w = lu_warp_argmax(row && pos >= k, abs1(p[s]), pos);
      // No comparable candidate here (all NaN or none): offer position k's
      // row if this warp has it, which lu_factor_core takes when no warp has
      // a candidate (a smaller P wins among equal empty keys).
      if (w.H == 0u) w.P = __ballot_sync(full, row && pos == k) ? unsigned(k) : 0xffffffffu;
      if (row && pos == int(w.P)) {
#pragma unroll
        for (int j = s; j < 8; ++j) tl.u[par][warp][j] = p[j];
      }
      if (lane == 0) tl.w[k][warp] = w;
      __syncthreads();
      int ww = 0;
#pragma unroll
      for (int v = 1; v < W; ++v)
        if (lu_winner_beats(tl.w[k][v], tl.w[k][ww])) ww = v;
      const lu_warp_winner wn = tl.w[k][ww];
      const int pk = wn.H == 0u ? k : int(wn.P);
      if (r == k) mypiv = pk;
      const T* const u = tl.u[par][ww];
      const T piv = u[s];
      lu_mma_step(p, s, [&](int j) { return u[j]; }, piv, k, pk, row, r, pos, inf, zmask, tl.rowof);
    }
    if (row) {
#pragma unroll
      for (int s = 0; s < 8; ++s) lu_mma_put<T, LDS>(re, im, r, j0 + s, p[s]);
    }
    if (r == 0) tl.zmask[k0 / 8] = (unsigned char)zmask;
    const int k1 = k0 + 8;
    const unsigned active = __ballot_sync(full, row && pos >= k1);
    __syncthreads();  // panel, rowof and the previous update visible to all
    if (k1 >= ke) break;

    if (k1 + r < ke) lu_mma_u12<T, LDS>(re, im, tl.rowof + c0, k1 - c0 + r, j0, zmask);
    __syncthreads();  // U12 visible to every warp's update
    lu_mma_update<T, LDS>(re, im, tl.rowof + c0, 32 * warp, active, zmask, j0, k1 - c0, ke - c0, lane);
    __syncwarp();  // the next panel reads this warp's rows only
  }
}

template <class T, int W, int LDS, class Loc>
__global__ void __launch_bounds__(32 * W)
    lu_mma_wkernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info) {
  static_assert(lu_mma_type<T> && LDS % 16 == 2 && LDS >= 32 * W - 14);
  constexpr int planes = is_complex_v<T> ? 2 : 1;
  extern __shared__ __align__(16) unsigned char lu_mma_wraw[];
  const int ncols = (n + 7) / 8 * 8;
  double* const re = reinterpret_cast<double*>(lu_mma_wraw);
  double* const im = re + (planes - 1) * ncols * LDS;
  lu_mma_wtail<T, W>& tl = *reinterpret_cast<lu_mma_wtail<T, W>*>(re + planes * ncols * LDS);
  const int r = int(threadIdx.x);
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  const bool row = r < n;

  // Rows r >= n are neither stored nor read (with LDS < 32 W some of them
  // alias the next column).
  if (row) lu_mma_load_row(base + r, lda, ncols, n, [&](int c, int j) { return (c == 0 ? re : im) + j * LDS + r; });
  emgpu::detail::cp_async_commit();
  emgpu::detail::cp_async_wait<0>();
  __syncthreads();

  int pos = r;
  int mypiv = r;
  int inf = 0;
  lu_mma_wpanels<T, W, LDS>(re, im, tl, 0, 0, n, n, pos, mypiv, inf);

  if (row) {
    T* dst = base + pos;
#pragma unroll 8
    for (int j = 0; j < n; ++j, dst += lda) *dst = lu_mma_get<T, LDS>(re, im, r, j);
    ipiv[mat * n + r] = index_t(mypiv);
  }
  if (r == 0) info[mat] = inf;
}

/// lu_mma_gkernel (NW columns in shared memory) from lu_mma_gmin_n<T> on:
/// 4 warps, row stride for n <= 128 (LDS = 2 mod 16 as lu_mma_wkernel's).
constexpr int lu_mma_gwarps = 4;
/// Where lu_mma_gkernel takes over (H200, session 18): complex<double> from
/// n = 65 (4.26 against 4.32 ms at 65, 5.25 against 5.42 at 79, 20 000
/// matrices); double, whose whole matrix still fits three or four blocks per
/// SM below ~89, from n = 89 (at 80 0.75 against 0.60 ms, at 100 1.16
/// against 1.43, 5 000 matrices).
template <class T>
inline constexpr index_t lu_mma_gmin_n = is_complex_v<T> ? 65 : 89;
static_assert(lu_mma_gmin_n<double> <= 97 && lu_mma_gmin_n<complex<double>> <= 97,
              "lu_mma_launch instantiates lu_mma_wkernel for n <= 96 only");
constexpr int lu_mma_glds = 130;

/// Dynamic shared memory of lu_mma_gkernel<T, NW>.
template <class T, int NW>
constexpr std::size_t lu_mma_gbytes() {
  const std::size_t planes = is_complex_v<T> ? 2 : 1;
  return planes * std::size_t(NW) * lu_mma_glds * sizeof(double) + sizeof(lu_mma_wtail<T, lu_mma_gwarps>) +
         2 * 64 * sizeof(T);  // L11 blocks, double-buffered
}

/// Blocks per SM that lu_mma_gkernel<T, NW> asks registers for: what
/// Hopper's 228 KB of shared memory per SM (1 KB reserved a block) holds,
/// at most 4 (128 registers a thread; fewer spill).
template <class T, int NW>
constexpr int lu_mma_gminb() {
  const std::size_t fit = std::size_t(228 << 10) / (lu_mma_gbytes<T, NW>() + 1024);
  return fit < 1 ? 1 : fit > 4 ? 4 : int(fit);
}

/// n = lu_mma_gmin_n<T>..128 (session 18): left-looking over windows of NW
/// columns, only the window in shared memory. Why: lu_mma_wkernel keeps the
/// whole matrix in shared memory, one block of 3-4 warps per SM from
/// n = 81 (none at all for complex<double> n > 112), so an SM waits out one
/// matrix's column chain at a time; a 32-column window of complex<double>
/// takes 75 KB, three blocks per SM. Rows never move in global memory until
/// the end: a window receives the updates of every earlier column,
/// 8-column panel by panel (its U rows by lu_mma_u12_with, with L11 staged
/// by the idle warps one panel ahead; then the tensor-core product of
/// lu_mma_apply, the warp's L21 fragments read from global memory one panel
/// ahead), is factored by lu_mma_wpanels as in lu_mma_wkernel and is stored
/// back in its original rows; the last window is stored in its final rows
/// and the earlier columns are permuted at the end. Same steps, pivots, info
/// and masking of zero-pivot steps as lu_mma_wkernel; each entry gets the
/// same updates summed in another order (equal to rounding). H200,
/// complex<double>, 5 000 matrices: 3.25 against 6.83 ms (lu_blk_kernel) at
/// n = 128, 1.81 against 2.97 ms (lu_mma_wkernel) at n = 96; 16- and
/// 24-column windows were slower (more passes over L).
template <class T, int NW, class Loc>
__global__ void __launch_bounds__(32 * lu_mma_gwarps, lu_mma_gminb<T, NW>())
    lu_mma_gkernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info) {
  constexpr int W = lu_mma_gwarps, LDS = lu_mma_glds;
  static_assert(lu_mma_type<T> && NW % 8 == 0 && NW <= 32 * W);
  constexpr int planes = is_complex_v<T> ? 2 : 1;
  extern __shared__ __align__(16) unsigned char lu_mma_graw[];
  double* const re = reinterpret_cast<double*>(lu_mma_graw);
  double* const im = re + (planes - 1) * NW * LDS;
  lu_mma_wtail<T, W>& tl = *reinterpret_cast<lu_mma_wtail<T, W>*>(re + planes * NW * LDS);
  T(*const l11)[8][8] = reinterpret_cast<T(*)[8][8]>(&tl + 1);
  const int r = int(threadIdx.x), warp = r / 32, lane = r % 32;
  const int q = lane / 4, m = lane % 4;
  const unsigned full = 0xffffffffu;
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  const bool row = r < n;
  // Warps 1..3 stage the strictly lower part of the next panel's L11
  // (28 entries, entry r - 32 = s (s - 1) / 2 + t) while warp 0 solves
  // with the current one: its global latency off the solve's path.
  int l11s = 0, l11t = r - 32;
  while (l11s < 8 && l11t >= l11s) l11t -= l11s++;
  const bool l11_stager = r >= 32 && l11s < 8;
  const auto stage_l11 = [&](int k0, int buf) {
    if (l11_stager) l11[buf][l11s][l11t] = base[tl.rowof[k0 + l11s] + index_t(k0 + l11t) * lda];
  };
  int pos = r;
  int mypiv = r;
  int inf = 0;
  int c0 = 0;
#pragma unroll 1
  for (;; c0 += NW) {
    const int ce = c0 + NW < n ? c0 + NW : n;
    if (row)
      lu_mma_load_row(base + r + index_t(c0) * lda, lda, NW, n - c0,
                      [&](int c, int j) { return (c == 0 ? re : im) + j * LDS + r; });
    emgpu::detail::cp_async_commit();
    // This warp's L21 fragments of the first panel, in flight with the window.
    T fr[4][2];
    const auto load_frag = [&](int k0) {
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int rr = 32 * warp + 8 * i + q;
          fr[i][c] = rr < n ? base[rr + index_t(k0 + 4 * c + m) * lda] : T(0);
        }
    };
    if (c0 > 0) {
      load_frag(0);
      stage_l11(0, 0);
    }
    emgpu::detail::cp_async_wait<0>();
    __syncthreads();

#pragma unroll 1
    for (int k0 = 0; k0 < c0; k0 += 8) {
      double nlr[4][2], nli[4][2];
      const unsigned zmask = tl.zmask[k0 / 8];
      const unsigned active = __ballot_sync(full, row && pos >= k0 + 8);
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const bool on = ((active >> (8 * i + q)) & 1u) && !((zmask >> (4 * c + m)) & 1u);
          nlr[i][c] = on ? -real_part(fr[i][c]) : 0.0;
          nli[i][c] = on ? -imag_part(fr[i][c]) : 0.0;
        }
      const int buf = (k0 / 8) & 1;
      if (k0 + 8 < c0) {
        load_frag(k0 + 8);
        stage_l11(k0 + 8, buf ^ 1);  // last read by the solve of the panel before
      }
      // U rows of steps k0..k0+7 in the window.
      if (r < ce - c0)
        lu_mma_u12_with<T, LDS>(re, im, tl.rowof + k0, r, 0, zmask,
                                [&](int s, int, int t) { return l11[buf][s][t]; });
      __syncthreads();  // U rows (and the next L11) visible to every warp
      int urow[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int s = 4 * c + m;
        urow[c] = ((zmask >> s) & 1u) ? -1 : tl.rowof[k0 + s];
      }
      lu_mma_apply<T, LDS>(re, im, nlr, nli, urow, 32 * warp, active, 0, ce - c0, lane);
      __syncthreads();  // the next U rows are updated rows of any warp
    }

    lu_mma_wpanels<T, W, LDS>(re, im, tl, c0, c0, ce, n, pos, mypiv, inf);
    if (ce == n) break;
    if (row) {
#pragma unroll 8
      for (int j = 0; j < NW; ++j) base[r + index_t(c0 + j) * lda] = lu_mma_get<T, LDS>(re, im, r, j);
    }
    __syncthreads();  // stores visible to the next window's reads of L
  }

  if (row) {
    T* dst = base + pos + index_t(c0) * lda;
#pragma unroll 8
    for (int j = c0; j < n; ++j, dst += lda) *dst = lu_mma_get<T, LDS>(re, im, r, j - c0);
    ipiv[mat * n + r] = index_t(mypiv);
  }
  // Columns 0..c0-1 still hold original rows: move row r to its position,
  // 16 columns at a time (all reads of a chunk before any of its writes).
#pragma unroll 1
  for (int j0 = 0; j0 < c0; j0 += 16) {
    T v[16];
#pragma unroll
    for (int c = 0; c < 16; ++c)
      if (row && j0 + c < c0) v[c] = base[r + index_t(j0 + c) * lda];
    __syncthreads();
#pragma unroll
    for (int c = 0; c < 16; ++c)
      if (row && j0 + c < c0) base[pos + index_t(j0 + c) * lda] = v[c];
  }
  if (r == 0) info[mat] = inf;
}

template <class T, int NW, class Loc>
inline bool lu_mma_glaunch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                           index_t count) {
  constexpr std::size_t bytes = lu_mma_gbytes<T, NW>();
  if (bytes > std::size_t(smem_optin(b.device))) return false;
  auto kern = lu_mma_gkernel<T, NW, Loc>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(count), unsigned(32 * lu_mma_gwarps), bytes, b.stream>>>(loc, int(n), lda, ipiv, info);
  return true;
}

template <class T, int W, int LDS, class Loc>
inline bool lu_mma_wlaunch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                           index_t count) {
  const std::size_t bytes = lu_mma_wbytes<T, W, LDS>(n);
  if (bytes > std::size_t(smem_optin(b.device))) return false;
  auto kern = lu_mma_wkernel<T, W, LDS, Loc>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(count), unsigned(32 * W), bytes, b.stream>>>(loc, int(n), lda, ipiv, info);
  return true;
}

/// @brief Factors count n x n matrices (lu_mma_min_n <= n <= lu_mma_max_n,
///        T double or complex<double>); same contract as lu_factor.
/// @return false, launching nothing, when n > 32 and the matrix (below
///         lu_mma_gmin_n<T>) or a 16-column window (from it) does not fit
///         the device's shared memory per block (the caller then takes
///         another path).
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, class Loc>
inline bool lu_mma_launch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                          index_t count, const char* name) {
  if (count <= 0) return true;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  if (n <= 32) {
    // 12 blocks of ~17.8 KB (16 of ~13.4 KB) need the largest shared-memory
    // carveout.
    const auto kern = n <= 24   ? lu_mma_kernel<T, Loc, 24>
                      : n == 32 ? lu_mma_kernel<T, Loc, 32, 32>
                                : lu_mma_kernel<T, Loc, 32>;
    EMGPU_CUDA_CHECK(
        cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, int(cudaSharedmemCarveoutMaxShared)));
    kern<<<unsigned(count), 32u, 0, b.stream>>>(loc, int(n), lda, ipiv, info);
  } else {
    // W = ceil(n / 32) warps, LDS = n rounded up to 16, plus 2; from
    // lu_mma_gmin_n<T> the windowed kernel (more matrices per SM).
    const bool launched = n >= lu_mma_gmin_n<T> ? (lu_mma_glaunch<T, 32>(b, loc, n, lda, ipiv, info, count) ||
                                                   lu_mma_glaunch<T, 16>(b, loc, n, lda, ipiv, info, count))
                          : n <= 48             ? lu_mma_wlaunch<T, 2, 50>(b, loc, n, lda, ipiv, info, count)
                          : n <= 64             ? lu_mma_wlaunch<T, 2, 66>(b, loc, n, lda, ipiv, info, count)
                          : n <= 80             ? lu_mma_wlaunch<T, 3, 82>(b, loc, n, lda, ipiv, info, count)
                                                : lu_mma_wlaunch<T, 3, 98>(b, loc, n, lda, ipiv, info, count);
    if (!launched) return false;
  }
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
  return true;
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
