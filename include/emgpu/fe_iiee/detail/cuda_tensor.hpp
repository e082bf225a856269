// FP64 tensor-core loop of the FE-IIEE operator (nvcc only, double).
//
// Why: with n RHS the per-pair work is the 6 x 6 complex coupling G(o, s) times
// 6 x n currents. On the FP64 CUDA cores the structured form costs ~104 FMA
// per RHS and pair at most 34 TFLOP/s (H100/H200); as real products on the
// FP64 tensor cores it is 144 MAC per RHS (dense 12 x 12 real) at twice that
// rate, and the coupling (one rsqrt, one sincos) is shared by all RHS.
//
// Layout (tensor_fragments.hpp has the algebra): a warp owns 8 observers and
// one chunk of 4 NT RHS; its accumulators are 6 components x NT n-tiles of
// 8 x 8 fragments (12 NT doubles per lane). A block of 4 warps stages a tile of
// source points and their folded currents in shared memory. For each group of
// 4 sources every lane computes the coupling of its observer (lane / 4) with
// one source (lane % 4); for each source of the group, the 4 lanes of an
// observer fetch that coupling by shuffle, form their A values and run
// 3 k-steps x 6 m-tiles x NT n-tiles of 8 x 8 x 4 products, issued as
// mma.sync m8n8k4.f64 (sm_80), m16n8k4.f64 (sm_90: E and C component c
// stacked) or m16n8k8.f64 (sm_90: the same for two sources at once; default
// on sm_90, the fewest instructions per product).
// Grid and partial buffers as radiate_kernel (x observers, y RHS chunks,
// z source slices).
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include "../../backend/cuda_mma.hpp"
#include "../radiation_kernel.hpp"
#include "tensor_fragments.hpp"

namespace emgpu::fe_iiee::detail {

inline constexpr int tc_warps = 4;                       // warps per block
inline constexpr int tc_block = 32 * tc_warps;           // threads per block
inline constexpr int tc_obs_per_block = 8 * tc_warps;    // observers per block
inline constexpr int tc_src_tile = 16;                   // sources per staged tile (multiple of 4)
static_assert(tc_src_tile % 4 == 0, "sources are coupled in groups of 4");

using emgpu::detail::dmma_m8n8k4;  // c += A B, one m8n8k4 FP64 fragment triple

/// Shapes of the tensor kernel's products (template argument; dmma_shape minus automatic).
enum class tc_shape { m8n8k4, m16n8k4, m16n8k8 };

/// Two m-tiles sharing one B fragment: lo += A_lo B, hi += A_hi B. As one
/// m16n8k4 on sm_90 (rows 0-7 = lo, 8-15 = hi: a0/a1 = A[g][q] / A[g+8][q],
/// c0,c1 / c2,c3 = C[g][2q+i] / C[g+8][2q+i], i.e. two stacked m8n8k4), else
/// as two m8n8k4.
template <bool Wide>
__device__ __forceinline__ void dmma_pair(double (&lo)[2], double (&hi)[2], double a_lo, double a_hi,
                                          double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (Wide) {
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, "
        "{%0, %1, %2, %3};\n"
        : "+d"(lo[0]), "+d"(lo[1]), "+d"(hi[0]), "+d"(hi[1])
        : "d"(a_lo), "d"(a_hi), "d"(b));
    return;
  }
#endif
  dmma_m8n8k4(lo, a_lo, b);
  dmma_m8n8k4(hi, a_hi, b);
}

/// dmma_pair for two source points at once (K = 4 roles x 2 sources): as one
/// m16n8k8 on sm_90 (a0..a3 = A[g][q], A[g+8][q], A[g][q+4], A[g+8][q+4];
/// b0, b1 = B[q][g], B[q+4][g]; C as m16n8k4), else as two dmma_pair.
__device__ __forceinline__ void dmma_pair2(double (&lo)[2], double (&hi)[2], double a0_lo, double a0_hi,
                                           double b0, double a1_lo, double a1_hi, double b1) {
  emgpu::detail::dmma_m16n8k8(lo, hi, a0_lo, a0_hi, a1_lo, a1_hi, b0, b1);
}

/// The coupling held by lane `from` (all 32 lanes take part).
__device__ __forceinline__ radiation_kernel<double>::coupling shfl_coupling(
    const radiation_kernel<double>::coupling& c, int from) {
  radiation_kernel<double>::coupling r;
  r.ux = __shfl_sync(0xffffffffu, c.ux, from);
  r.uy = __shfl_sync(0xffffffffu, c.uy, from);
  r.uz = __shfl_sync(0xffffffffu, c.uz, from);
  r.gr = __shfl_sync(0xffffffffu, c.gr, from);
  r.gi = __shfl_sync(0xffffffffu, c.gi, from);
  r.pr = __shfl_sync(0xffffffffu, c.pr, from);
  r.pi = __shfl_sync(0xffffffffu, c.pi, from);
  r.qr = __shfl_sync(0xffffffffu, c.qr, from);
  r.qi = __shfl_sync(0xffffffffu, c.qi, from);
  return r;
}

using emgpu::detail::cp_async16;
using emgpu::detail::cp_async_commit;
using emgpu::detail::cp_async_wait;

/// Sources per staged tile of the tensor kernel: two tiles (double buffer)
/// stay within the 48 KiB of static shared memory for every NT.
template <int NT>
inline constexpr int tc_tile_for = NT >= 4 ? 12 : 16;

template <int NT, tc_shape Shape>
__global__ void __launch_bounds__(tc_block)
    radiate_tc_kernel(const point4<double>* __restrict__ src, index_t n_s,
                      const double* __restrict__ folded, index_t n_rhs,
                      const point4<double>* __restrict__ obs, index_t n_obs, double k, double inv_k,
                      double* __restrict__ acc_out) {
  using K = radiation_kernel<double>;
  constexpr int RC = 4 * NT;  // RHS per chunk
  constexpr int TILE = tc_tile_for<NT>;
  static_assert(TILE % 4 == 0, "sources are coupled in groups of 4");
  constexpr int CUR = TILE * RC * 12;  // doubles of one staged tile of currents
  // Two tiles: the next one is copied (cp.async) while this one is used, so
  // the global loads' latency and the block barrier no longer stall the warps.
  __shared__ __align__(16) point4<double> s_pt[2][TILE];
  __shared__ __align__(16) double s_cur[2][CUR];

  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const tc::lane_role L(lane);
  const index_t o = index_t(blockIdx.x) * tc_obs_per_block + warp * 8 + L.g;
  const bool active = o < n_obs;
  // Lanes past the end compute with the last observer and write nothing.
  const point4<double> op = obs[active ? o : n_obs - 1];
  const index_t n_chunks = (n_rhs + RC - 1) / RC;
  const index_t s_begin = n_s * index_t(blockIdx.z) / gridDim.z;
  const index_t s_end = n_s * (index_t(blockIdx.z) + 1) / gridDim.z;
  const index_t n_tiles = (s_end - s_begin + TILE - 1) / TILE;
  double* part = acc_out + index_t(blockIdx.z) * n_obs * n_rhs * 12;
  const int group_base = lane & ~3;

  for (index_t chunk = blockIdx.y; chunk < n_chunks; chunk += gridDim.y) {
    const index_t r0 = chunk * RC;
    const int nr = int(n_rhs - r0 < RC ? n_rhs - r0 : RC);
    double acc[6][NT][2];
#pragma unroll
    for (int c = 0; c < 6; ++c)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) acc[c][nt][0] = acc[c][nt][1] = 0.0;

    // Tile `it` into buffer `buf`, 16 bytes per copy. Padding sources
    // (ns..TILE) sit on the last real one with zero currents: a finite
    // coupling times 0 adds exactly 0; padding RHS (nr..RC) are zero too.
    // Offsets are multiples of 12 doubles plus an even index: 16-byte aligned.
    auto stage = [&](index_t it, int buf) {
      const index_t t0 = s_begin + it * TILE;
      const int ns_t = int(s_end - t0 < TILE ? s_end - t0 : TILE);
      for (int i = int(threadIdx.x); i < 2 * TILE; i += tc_block) {
        const int ls = i >> 1;
        const double* g = reinterpret_cast<const double*>(src + t0 + (ls < ns_t ? ls : ns_t - 1)) + 2 * (i & 1);
        cp_async16(reinterpret_cast<double*>(&s_pt[buf][ls]) + 2 * (i & 1), g, 16);
      }
      for (int i = int(threadIdx.x); i < CUR / 2; i += tc_block) {
        const int ls = i / (RC * 6), rem = i - ls * (RC * 6);
        const int rb = rem / 6;
        const bool ok = ls < ns_t && rb < nr;
        const double* g = ok ? folded + ((t0 + ls) * n_rhs + r0) * 12 + 2 * rem : folded;
        cp_async16(&s_cur[buf][2 * i], g, ok ? 16 : 0);
      }
      cp_async_commit();
    };

    if (n_tiles > 0) stage(0, 0);
#pragma unroll 1
    for (index_t it = 0; it < n_tiles; ++it) {
      const int buf = int(it & 1);
      const index_t t0 = s_begin + it * TILE;
      const int ns = int(s_end - t0 < TILE ? s_end - t0 : TILE);
      if (it + 1 < n_tiles) {
        stage(it + 1, buf ^ 1);
        cp_async_wait<1>();  // this tile's copies are done, the next one's may fly
      } else {
        cp_async_wait<0>();
      }
      __syncthreads();  // every thread's copies of this tile are visible
      const point4<double>* s_pts = s_pt[buf];
      const double* s_curb = s_cur[buf];
      const int n_groups = (ns + 3) / 4;
#pragma unroll 1
      for (int jb = 0; jb < n_groups; ++jb) {
        const point4<double> sp = s_pts[4 * jb + L.q];
        const K::coupling mine = K::couple(op.x - sp.x, op.y - sp.y, op.z - sp.z, k, inv_k);
        if constexpr (Shape == tc_shape::m16n8k8) {
          // Two sources per product: K = (source 2 h + s2, lane role).
#pragma unroll 1
          for (int h = 0; h < 2; ++h) {
            const K::coupling cp0 = shfl_coupling(mine, group_base + 2 * h);
            const K::coupling cp1 = shfl_coupling(mine, group_base + 2 * h + 1);
            double a0[6][3], a1[6][3];
            tc::a_values<double>(cp0, L.kind, L.t, a0);
            tc::a_values<double>(cp1, L.kind, L.t, a1);
            const double* cur0 = s_curb + (4 * jb + 2 * h) * RC * 12;
            const double* cur1 = cur0 + RC * 12;
#pragma unroll
            for (int kk = 0; kk < 3; ++kk) {
              double b0[NT], b1[NT];
#pragma unroll
              for (int nt = 0; nt < NT; ++nt) {
                b0[nt] = tc::b_value(L, cur0, kk, nt);
                b1[nt] = tc::b_value(L, cur1, kk, nt);
              }
#pragma unroll
              for (int c = 0; c < 3; ++c)
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
                  dmma_pair2(acc[c][nt], acc[c + 3][nt], a0[c][kk], a0[c + 3][kk], b0[nt], a1[c][kk],
                             a1[c + 3][kk], b1[nt]);
            }
          }
        } else {
#pragma unroll 1
          for (int j = 0; j < 4; ++j) {
            // The lane group_base + j coupled this observer with source 4 jb + j.
            const K::coupling cp = shfl_coupling(mine, group_base + j);
            double a[6][3];
            tc::a_values<double>(cp, L.kind, L.t, a);
            const double* cur = s_curb + (4 * jb + j) * RC * 12;
#pragma unroll
            for (int kk = 0; kk < 3; ++kk) {
              double b[NT];
#pragma unroll
              for (int nt = 0; nt < NT; ++nt) b[nt] = tc::b_value(L, cur, kk, nt);
              // E component c and C component c (m-tiles c, c + 3) share B.
#pragma unroll
              for (int c = 0; c < 3; ++c)
#pragma unroll
                for (int nt = 0; nt < NT; ++nt)
                  dmma_pair<Shape == tc_shape::m16n8k4>(acc[c][nt], acc[c + 3][nt], a[c][kk], a[c + 3][kk],
                                                        b[nt]);
            }
          }
        }
      }
      __syncthreads();  // every warp is done with this buffer before it is refilled
    }
    if (active) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int rb = L.c_rhs(nt);
        if (rb < nr) {
          double* dst = part + (o * n_rhs + r0 + rb) * 12;
#pragma unroll
          for (int c = 0; c < 6; ++c) {
            dst[tc::lane_role::c_slot(c, 0)] = acc[c][nt][0];
            dst[tc::lane_role::c_slot(c, 1)] = acc[c][nt][1];
          }
        }
      }
    }
  }
}

/// RHS-chunk width (n-tiles of 4 RHS) for the tensor kernel: fewest padded
/// RHS weighted by the per-chunk coupling cost (~half an n-tile); 4 n-tiles
/// (196 registers: 2 blocks per SM) pay 5% for their lower occupancy against
/// 3 (160 registers: 3 blocks per SM) and 2 (125: 4 blocks).
inline int tc_tiles_for(index_t n_rhs) {
  int best = 3;
  double best_cost = 1e300;
  for (int nt : {3, 2, 4}) {
    const double chunks = double((n_rhs + 4 * nt - 1) / (4 * nt));
    const double cost = chunks * (double(nt) + 0.5) * (nt == 4 ? 1.05 : 1.0);
    if (cost < best_cost) {
      best_cost = cost;
      best = nt;
    }
  }
  return best;
}

template <tc_shape Shape>
inline void tc_launch(int nt, dim3 grid, cudaStream_t stream, const point4<double>* src, index_t n_s,
                      const double* folded, index_t n_rhs, const point4<double>* obs, index_t n_obs,
                      double k, double inv_k, double* acc) {
  switch (nt) {
    case 2:
      radiate_tc_kernel<2, Shape><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
    case 3:
      radiate_tc_kernel<3, Shape><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
    default:
      radiate_tc_kernel<4, Shape><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
  }
}

}  // namespace emgpu::fe_iiee::detail

#endif  // __CUDACC__
