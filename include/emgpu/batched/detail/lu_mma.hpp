/// @file
/// @brief CUDA batched LU for 17 <= n <= 32 in double and complex<double>:
///        one warp per matrix, the matrix in shared memory, panels of 8
///        columns factored row-per-lane in registers and the trailing update
///        done by FP64 tensor-core tiles (mma.m16n8k8.f64 on sm_90, m8n8k4
///        on sm_80-89).
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
/// Layout per warp: real and imaginary planes, column-major with column
/// stride lu_mma_lds = 34 doubles, so that the accumulator tiles (row l/4,
/// columns 2(l%4) + e of an 8 x 8 tile) and a lane's row of a panel are read
/// without bank conflicts. 2 x 32 x 34 x 8 B = 17.4 KB for complex<double>:
/// 12 one-warp blocks per SM on Hopper (227 KB).
#pragma once

#if defined(__CUDACC__)

#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "../../backend/cuda_mma.hpp"
#include "common.hpp"
#include "lu_blocked.hpp"
#include "lu_regs.hpp"

namespace emgpu::batched::detail {

constexpr index_t lu_mma_min_n = 17;
constexpr index_t lu_mma_max_n = 32;
constexpr int lu_mma_lds = 34;

/// Whether lu_factor routes n to lu_mma_kernel for scalar type T.
template <class T>
inline constexpr bool lu_mma_type = std::is_same_v<T, double> || std::is_same_v<T, complex<double>>;

template <class T>
struct lu_mma_smem {
  static constexpr int planes = is_complex_v<T> ? 2 : 1;
  double a[planes][32 * lu_mma_lds];  // the matrix, rows by original index
  T u[2][8];                          // pivot row's panel entries, by step parity
  int rowof[32];                      // original row at each position k (the U row of step k)
};

template <class T>
__device__ __forceinline__ T lu_mma_get(const lu_mma_smem<T>& s, int i, int j) {
  if constexpr (is_complex_v<T>) return T(s.a[0][j * lu_mma_lds + i], s.a[1][j * lu_mma_lds + i]);
  else return s.a[0][j * lu_mma_lds + i];
}
template <class T>
__device__ __forceinline__ void lu_mma_put(lu_mma_smem<T>& s, int i, int j, T v) {
  if constexpr (is_complex_v<T>) {
    s.a[0][j * lu_mma_lds + i] = v.real();
    s.a[1][j * lu_mma_lds + i] = v.imag();
  } else {
    s.a[0][j * lu_mma_lds + i] = v;
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

template <class T, class Loc>
__global__ void __launch_bounds__(32, 12)
    lu_mma_kernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info) {
  static_assert(lu_mma_type<T>);
  constexpr bool cplx = is_complex_v<T>;
  __shared__ __align__(16) lu_mma_smem<T> sm;
  const int lane = int(threadIdx.x);
  const unsigned full = 0xffffffffu;
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  const bool row = lane < n;

  // Load: every entry's copy in flight at once (cp.async, no registers), so
  // that a warp waits out the global latency once per matrix, not per column.
#pragma unroll 4
  for (int j = 0; j < 32; ++j) {
    const bool in = row && j < n;
    const double* src = reinterpret_cast<const double*>(base + lane + index_t(j) * lda);  // used when in
#pragma unroll
    for (int c = 0; c < lu_mma_smem<T>::planes; ++c) {
      if (in) emgpu::detail::cp_async8(&sm.a[c][j * lu_mma_lds + lane], src + c);
      else sm.a[c][j * lu_mma_lds + lane] = 0.0;
    }
  }
  emgpu::detail::cp_async_commit();
  emgpu::detail::cp_async_wait<0>();
  __syncwarp();

  int pos = lane;
  int mypiv = lane;
  int inf = 0;
  const int q = lane / 4, m = lane % 4;  // fragment coordinates
#pragma unroll 1
  for (int k0 = 0; k0 < n; k0 += 8) {
    T p[8];
#pragma unroll
    for (int s = 0; s < 8; ++s) p[s] = lu_mma_get(sm, lane, k0 + s);
    unsigned zmask = 0u;  // steps of this panel with no update (zero pivot, or k >= n)
#pragma unroll
    for (int s = 0; s < 8; ++s) {
      const int k = k0 + s;
      if (k >= n) {
        zmask |= 1u << s;
        continue;
      }
      // The search key carries the lane, so that the pivot itself can come
      // by shuffle (the shortest path to the reciprocal); the rest of the
      // pivot row goes through shared memory meanwhile.
      const lu_warp_winner w = lu_warp_argmax(row && pos >= k, abs1(p[s]), pos * 32 + lane);
      int pk, wl;
      if (w.H != 0u) {
        pk = int(w.P >> 5);
        wl = int(w.P & 31u);
      } else {  // no candidate compares (all NaN): position k, as lu_factor_core
        pk = k;
        wl = __ffs(int(__ballot_sync(full, row && pos == k))) - 1;
      }
      if (lane == k) mypiv = pk;
      T* const u = sm.u[k & 1];
      if (lane == wl) {
#pragma unroll
        for (int j = s + 1; j < 8; ++j) u[j] = p[j];
      }
      const T piv = lu_mma_shfl(p[s], wl);
      __syncwarp();
      if (is_zero(piv)) {
        if (inf == 0) inf = k + 1;
        zmask |= 1u << s;
      } else {
        T uj[8];
#pragma unroll
        for (int j = s + 1; j < 8; ++j) uj[j] = u[j];
        if (pos == pk) pos = k;
        else if (pos == k) pos = pk;
        if (row && pos > k) {
          const T l = lu_mma_div(p[s], piv);
          const T nl = -l;
          p[s] = l;
#pragma unroll
          for (int j = s + 1; j < 8; ++j) p[j] = lu_fnma(p[j], nl, uj[j]);
        }
      }
      if (row && pos == k) sm.rowof[k] = lane;
    }
#pragma unroll
    for (int s = 0; s < 8; ++s) lu_mma_put(sm, lane, k0 + s, p[s]);
    const int k1 = k0 + 8;  // first trailing column
    // Rows still to be eliminated: their panel entries are L21.
    const unsigned active = __ballot_sync(full, row && pos >= k1);
    __syncwarp();
    if (k1 >= n) break;

    // U12 = L11^-1 A12 on the pivot rows, one lane per trailing column.
    {
      const int j = k1 + lane;
      if (j < n) {
        T x[8];
#pragma unroll
        for (int s = 0; s < 8; ++s) {
          x[s] = T(0);
          if (k0 + s < n) {  // uniform; a zero pivot's row is still that step's U row
            const int rs = sm.rowof[k0 + s];
            T v = lu_mma_get(sm, rs, j);
#pragma unroll
            for (int t = 0; t < s; ++t)
              if (!((zmask >> t) & 1u)) v = lu_fnma(v, -lu_mma_get(sm, rs, k0 + t), x[t]);
            x[s] = v;
            lu_mma_put(sm, rs, j, v);
          }
        }
      }
    }
    __syncwarp();

    // A22 -= L21 U12 for the active rows (L21 masked to zero elsewhere, and
    // only active rows stored: the unblocked path never touches the others).
    // A fragments: -L(8r + q, k0 + 4c + m); B fragments: U(4c + m, 8t + q)
    // from the pivot rows.
    double nlr[4][2], nli[4][2];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int i = 8 * r + q, s = 4 * c + m;
        const bool on = ((active >> i) & 1u) && !((zmask >> s) & 1u);
        const int o = (k0 + s) * lu_mma_lds + i;
        nlr[r][c] = on ? -sm.a[0][o] : 0.0;
        nli[r][c] = (cplx && on) ? -sm.a[cplx ? 1 : 0][o] : 0.0;
      }
    int urow[2];
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int s = 4 * c + m;
      // Masked steps read U = 0 too: 0 * Inf would be NaN.
      urow[c] = ((zmask >> s) & 1u) ? -1 : sm.rowof[k0 + s];
    }
#pragma unroll 1
    for (int jt = k1; jt < n; jt += 8) {
      double ur[2], ui[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int o = (jt + q) * lu_mma_lds + urow[c];
        ur[c] = urow[c] >= 0 ? sm.a[0][o] : 0.0;
        ui[c] = (cplx && urow[c] >= 0) ? sm.a[cplx ? 1 : 0][o] : 0.0;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // row tiles 2h (lo) and 2h + 1 (hi)
        if (((active >> (16 * h)) & 0xffffu) == 0u) continue;  // warp-uniform
        const int o0 = (jt + 2 * m) * lu_mma_lds + 16 * h + q, o1 = o0 + lu_mma_lds;
        const bool mlo = (active >> (16 * h + q)) & 1u, mhi = (active >> (16 * h + 8 + q)) & 1u;
        const int rl = 2 * h, rh = 2 * h + 1;
        double crl[2] = {sm.a[0][o0], sm.a[0][o1]}, crh[2] = {sm.a[0][o0 + 8], sm.a[0][o1 + 8]};
        emgpu::detail::dmma_m16n8k8(crl, crh, nlr[rl][0], nlr[rh][0], nlr[rl][1], nlr[rh][1], ur[0], ur[1]);
        if constexpr (cplx) {  // (cr + i ci) += (nlr + i nli)(ur + i ui)
          double cil[2] = {sm.a[1][o0], sm.a[1][o1]}, cih[2] = {sm.a[1][o0 + 8], sm.a[1][o1 + 8]};
          emgpu::detail::dmma_m16n8k8(crl, crh, nli[rl][0], nli[rh][0], nli[rl][1], nli[rh][1], -ui[0], -ui[1]);
          emgpu::detail::dmma_m16n8k8(cil, cih, nlr[rl][0], nlr[rh][0], nlr[rl][1], nlr[rh][1], ui[0], ui[1]);
          emgpu::detail::dmma_m16n8k8(cil, cih, nli[rl][0], nli[rh][0], nli[rl][1], nli[rh][1], ur[0], ur[1]);
          if (mlo) {
            sm.a[1][o0] = cil[0];
            sm.a[1][o1] = cil[1];
          }
          if (mhi) {
            sm.a[1][o0 + 8] = cih[0];
            sm.a[1][o1 + 8] = cih[1];
          }
        }
        if (mlo) {
          sm.a[0][o0] = crl[0];
          sm.a[0][o1] = crl[1];
        }
        if (mhi) {
          sm.a[0][o0 + 8] = crh[0];
          sm.a[0][o1 + 8] = crh[1];
        }
      }
    }
    __syncwarp();
  }

  if (row) {
    T* const dst = base + pos;
#pragma unroll 1
    for (int j0 = 0; j0 < 32; j0 += 8) {
#pragma unroll
      for (int c = 0; c < 8; ++c)
        if (j0 + c < n) dst[index_t(j0 + c) * lda] = lu_mma_get(sm, lane, j0 + c);
    }
    ipiv[mat * n + lane] = index_t(mypiv);
  }
  if (lane == 0) info[mat] = inf;
}

/// @brief Factors count n x n matrices (lu_mma_min_n <= n <= lu_mma_max_n,
///        T double or complex<double>); same contract as lu_factor.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, class Loc>
inline void lu_mma_launch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                          index_t count, const char* name) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  // 12 blocks of ~17.8 KB need the largest shared-memory carveout.
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(lu_mma_kernel<T, Loc>, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  lu_mma_kernel<T, Loc><<<unsigned(count), 32u, 0, b.stream>>>(loc, int(n), lda, ipiv, info);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
