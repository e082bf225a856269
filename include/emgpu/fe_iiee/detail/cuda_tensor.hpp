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
// 3 k-steps x 6 m-tiles x NT n-tiles of 8 x 8 x 4 products: on sm_90 by
// default as m16n8k4 (E and C component c stacked; the shape CUTLASS uses for
// Hopper DGEMM), else (or with Wide = false) as mma.sync.m8n8k4.f64.
// Grid and partial buffers as radiate_kernel (x observers, y RHS chunks,
// z source slices).
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include "../radiation_kernel.hpp"
#include "tensor_fragments.hpp"

namespace emgpu::fe_iiee::detail {

inline constexpr int tc_warps = 4;                       // warps per block
inline constexpr int tc_block = 32 * tc_warps;           // threads per block
inline constexpr int tc_obs_per_block = 8 * tc_warps;    // observers per block
inline constexpr int tc_src_tile = 16;                   // sources per staged tile (multiple of 4)
static_assert(tc_src_tile % 4 == 0, "sources are coupled in groups of 4");

/// c += A B for one m8n8k4 FP64 fragment triple (layout: tensor_fragments.hpp).
__device__ __forceinline__ void dmma_m8n8k4(double (&c)[2], double a, double b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
      : "+d"(c[0]), "+d"(c[1])
      : "d"(a), "d"(b));
#else
  // No DMMA before sm_80: the same product from the same fragments by shuffles.
  const int lane = int(threadIdx.x & 31), g = lane >> 2, q = lane & 3;
#pragma unroll
  for (int kq = 0; kq < 4; ++kq) {
    const double av = __shfl_sync(0xffffffffu, a, 4 * g + kq);
    const double b0 = __shfl_sync(0xffffffffu, b, 4 * (2 * q) + kq);
    const double b1 = __shfl_sync(0xffffffffu, b, 4 * (2 * q + 1) + kq);
    c[0] = fma(av, b0, c[0]);
    c[1] = fma(av, b1, c[1]);
  }
#endif
}

/// Two m-tiles sharing one B fragment: lo += A_lo B, hi += A_hi B. With Wide on
/// sm_90 one m16n8k4 (rows 0-7 = lo, 8-15 = hi: a0/a1 = A[g][q] / A[g+8][q],
/// c0,c1 / c2,c3 = C[g][2q+i] / C[g+8][2q+i], i.e. two stacked m8n8k4), else
/// two m8n8k4.
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

template <int NT, bool Wide>
__global__ void __launch_bounds__(tc_block)
    radiate_tc_kernel(const point4<double>* __restrict__ src, index_t n_s,
                      const double* __restrict__ folded, index_t n_rhs,
                      const point4<double>* __restrict__ obs, index_t n_obs, double k, double inv_k,
                      double* __restrict__ acc_out) {
  using K = radiation_kernel<double>;
  constexpr int RC = 4 * NT;  // RHS per chunk
  __shared__ point4<double> s_pt[tc_src_tile];
  __shared__ double s_cur[tc_src_tile * RC * 12];

  const int lane = int(threadIdx.x & 31), warp = int(threadIdx.x >> 5);
  const tc::lane_role L(lane);
  const index_t o = index_t(blockIdx.x) * tc_obs_per_block + warp * 8 + L.g;
  const bool active = o < n_obs;
  // Lanes past the end compute with the last observer and write nothing.
  const point4<double> op = obs[active ? o : n_obs - 1];
  const index_t n_chunks = (n_rhs + RC - 1) / RC;
  const index_t s_begin = n_s * index_t(blockIdx.z) / gridDim.z;
  const index_t s_end = n_s * (index_t(blockIdx.z) + 1) / gridDim.z;
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

    for (index_t t0 = s_begin; t0 < s_end; t0 += tc_src_tile) {
      const int ns = int(s_end - t0 < tc_src_tile ? s_end - t0 : tc_src_tile);
      __syncthreads();  // every warp has consumed the previous tile
      // Padding sources (ns..tile) sit on the last real one with zero currents:
      // a finite coupling times 0 adds exactly 0.
      for (int i = int(threadIdx.x); i < tc_src_tile; i += tc_block)
        s_pt[i] = src[t0 + (i < ns ? i : ns - 1)];
      for (int i = int(threadIdx.x); i < tc_src_tile * RC * 12; i += tc_block) {
        const int ls = i / (RC * 12), rem = i - ls * (RC * 12);
        const int rb = rem / 12, c = rem - rb * 12;
        s_cur[i] = (ls < ns && rb < nr) ? folded[((t0 + ls) * n_rhs + r0 + rb) * 12 + c] : 0.0;
      }
      __syncthreads();
      const int n_groups = (ns + 3) / 4;
#pragma unroll 1
      for (int jb = 0; jb < n_groups; ++jb) {
        const point4<double> sp = s_pt[4 * jb + L.q];
        const K::coupling mine = K::couple(op.x - sp.x, op.y - sp.y, op.z - sp.z, k, inv_k);
#pragma unroll 1
        for (int j = 0; j < 4; ++j) {
          const int from = group_base + j;  // the lane that coupled this observer with source 4 jb + j
          K::coupling cp;
          cp.ux = __shfl_sync(0xffffffffu, mine.ux, from);
          cp.uy = __shfl_sync(0xffffffffu, mine.uy, from);
          cp.uz = __shfl_sync(0xffffffffu, mine.uz, from);
          cp.gr = __shfl_sync(0xffffffffu, mine.gr, from);
          cp.gi = __shfl_sync(0xffffffffu, mine.gi, from);
          cp.pr = __shfl_sync(0xffffffffu, mine.pr, from);
          cp.pi = __shfl_sync(0xffffffffu, mine.pi, from);
          cp.qr = __shfl_sync(0xffffffffu, mine.qr, from);
          cp.qi = __shfl_sync(0xffffffffu, mine.qi, from);
          double a[6][3];
          tc::a_values<double>(cp, L.kind, L.t, a);
          const double* cur = s_cur + (4 * jb + j) * RC * 12;
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
                dmma_pair<Wide>(acc[c][nt], acc[c + 3][nt], a[c][kk], a[c + 3][kk], b[nt]);
          }
        }
      }
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

template <bool Wide>
inline void tc_launch(int nt, dim3 grid, cudaStream_t stream, const point4<double>* src, index_t n_s,
                      const double* folded, index_t n_rhs, const point4<double>* obs, index_t n_obs,
                      double k, double inv_k, double* acc) {
  switch (nt) {
    case 2:
      radiate_tc_kernel<2, Wide><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
    case 3:
      radiate_tc_kernel<3, Wide><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
    default:
      radiate_tc_kernel<4, Wide><<<grid, tc_block, 0, stream>>>(src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      break;
  }
}

}  // namespace emgpu::fe_iiee::detail

#endif  // __CUDACC__
