// CUDA loops of the FE-IIEE operator (nvcc only). One kernel serves the three
// strategies: a thread owns one observer and a chunk of RB right-hand sides
// whose 12 RB accumulators live in registers; blocks stage a tile of source
// points (geometry and the chunk's folded currents) in shared memory, which
// every thread of the block then reads by broadcast. The grid is
//   x: observer blocks, y: RHS chunks (over_rhs / automatic), z: source slices
//   (over_sources / automatic, when observers alone do not fill the GPU).
// Each (slice, observer, RHS) writes its accumulators once into a partial
// buffer; finish_fn sums the slices in a fixed order (deterministic).
#pragma once

#if defined(__CUDACC__)

#include <algorithm>

#include <cuda_runtime.h>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "../radiation_kernel.hpp"
#include "cuda_tensor.hpp"
#include "functors.hpp"

namespace emgpu::fe_iiee::detail {

inline constexpr int cuda_block = 128;      // observers per block (one per thread)
inline constexpr int cuda_src_tile = 64;    // source points staged per shared-memory tile

template <class Real, int RB>
__global__ void __launch_bounds__(cuda_block)
    radiate_kernel(const point4<Real>* __restrict__ src, index_t n_s,
                   const Real* __restrict__ folded, index_t n_rhs,
                   const point4<Real>* __restrict__ obs, index_t n_obs, Real k, Real inv_k,
                   Real* __restrict__ acc_out) {
  using K = radiation_kernel<Real>;
  __shared__ point4<Real> s_pt[cuda_src_tile];
  __shared__ Real s_cur[cuda_src_tile * RB * 12];

  const index_t o = index_t(blockIdx.x) * cuda_block + threadIdx.x;
  const bool active = o < n_obs;
  const point4<Real> op = obs[active ? o : n_obs - 1];
  const index_t n_chunks = (n_rhs + RB - 1) / RB;
  const index_t s_begin = n_s * index_t(blockIdx.z) / gridDim.z;
  const index_t s_end = n_s * (index_t(blockIdx.z) + 1) / gridDim.z;
  Real* part = acc_out + index_t(blockIdx.z) * n_obs * n_rhs * 12;

  for (index_t chunk = blockIdx.y; chunk < n_chunks; chunk += gridDim.y) {
    const index_t r0 = chunk * RB;
    const int nr = int(n_rhs - r0 < RB ? n_rhs - r0 : RB);
    Real acc[RB * 12];
#pragma unroll
    for (int i = 0; i < RB * 12; ++i) acc[i] = Real(0);

    for (index_t t0 = s_begin; t0 < s_end; t0 += cuda_src_tile) {
      const int nt = int(s_end - t0 < cuda_src_tile ? s_end - t0 : cuda_src_tile);
      __syncthreads();  // the previous tile has been consumed by every thread
      for (int i = threadIdx.x; i < nt; i += cuda_block) s_pt[i] = src[t0 + i];
      for (int i = threadIdx.x; i < nt * RB * 12; i += cuda_block) {
        const int ls = i / (RB * 12), rem = i - ls * (RB * 12);
        const int rb = rem / 12, c = rem - rb * 12;
        s_cur[i] = rb < nr ? folded[((t0 + ls) * n_rhs + r0 + rb) * 12 + c] : Real(0);
      }
      __syncthreads();
      // Not unrolled: unrolling hoists two pairs' loads and costs ~30 registers
      // (measured with ptxas -v: 94 vs 128 for double, one RHS).
#pragma unroll 1
      for (int j = 0; j < nt; ++j) {
        const point4<Real> sp = s_pt[j];
        const auto c = K::couple(op.x - sp.x, op.y - sp.y, op.z - sp.z, k, inv_k);
#pragma unroll
        for (int rb = 0; rb < RB; ++rb) K::accumulate(c, &s_cur[(j * RB + rb) * 12], &acc[rb * 12]);
      }
    }
    if (active) {
      Real* dst = part + (o * n_rhs + r0) * 12;
#pragma unroll
      for (int rb = 0; rb < RB; ++rb)
        if (rb < nr)
#pragma unroll
          for (int c = 0; c < 12; ++c) dst[rb * 12 + c] = acc[rb * 12 + c];
    }
  }
}

/// Launch geometry chosen for one apply.
struct cuda_plan {
  int rhs_per_thread = 1;  // RB (CUDA cores) or RHS per warp chunk (tensor cores)
  int tensor_tiles = 0;    // 0: CUDA-core kernel; else n-tiles of 4 RHS of the tensor kernel
  tc_shape shape = tc_shape::m8n8k4;  // tensor kernel: mma shape (sm_90 ones need sm_90)
  unsigned grid_y = 1;     // RHS chunks across the grid
  unsigned slices = 1;     // source slices (partial accumulators)
};

/// RHS count from which device_kernel::automatic takes the tensor cores (double).
inline constexpr index_t tensor_min_rhs = 8;

/// Picks the kernel, RB, the RHS-chunk spread and the source slicing for a
/// strategy. `max_partial_bytes` bounds the partial buffer of the source slicing.
inline cuda_plan make_cuda_plan(loop_kind kind, bool automatic, index_t n_s, index_t n_obs,
                                index_t n_rhs, int sm_count, std::size_t real_size,
                                std::size_t max_partial_bytes,
                                device_kernel kern = device_kernel::automatic,
                                dmma_shape shape = dmma_shape::automatic, int cc_major = 9) {
  cuda_plan p;
  const bool tensor = real_size == 8 && (kern == device_kernel::tensor_cores ||
                                         (kern == device_kernel::automatic && n_rhs >= tensor_min_rhs));
  if (tensor) {
    switch (shape) {
      case dmma_shape::m8n8k4: p.shape = tc_shape::m8n8k4; break;
      case dmma_shape::m16n8k4: p.shape = tc_shape::m16n8k4; break;
      case dmma_shape::m16n8k8: p.shape = tc_shape::m16n8k8; break;
      // m16n8k4 measured fastest on an H200 (1.15-1.25x m16n8k8, 1.3-1.4x m8n8k4):
      // fewer registers than m16n8k8 (160 vs 212 at NT = 3), so 3 blocks per SM.
      default: p.shape = cc_major >= 9 ? tc_shape::m16n8k4 : tc_shape::m8n8k4; break;
    }
    p.tensor_tiles = tc_tiles_for(n_rhs);
    p.rhs_per_thread = 4 * p.tensor_tiles;
  } else {
    // RHS per thread: as many as the registers hold without spilling (ptxas -v:
    // double x4 = 248 registers; float x8 fits as well).
    p.rhs_per_thread = n_rhs == 1 ? 1 : (n_rhs == 2 ? 2 : (real_size == 4 && n_rhs >= 8 ? 8 : 4));
  }
  const index_t obs_per_block = tensor ? tc_obs_per_block : cuda_block;
  const index_t chunks = (n_rhs + p.rhs_per_thread - 1) / p.rhs_per_thread;
  const index_t obs_blocks = (n_obs + obs_per_block - 1) / obs_per_block;
  if (kind == loop_kind::over_rhs || automatic)
    p.grid_y = unsigned(std::min<index_t>(chunks, 65535));
  if (kind == loop_kind::over_sources || automatic) {
    // Enough blocks for ~8 resident per SM; each slice keeps >= 4 source tiles
    // (tensor cores) or >= 2 (CUDA cores: small problems such as 1800 sources
    // x 9432 observers need the extra blocks more than the longer slices).
    const index_t want_blocks = index_t(8) * std::max(sm_count, 1);
    const index_t have = obs_blocks * index_t(p.grid_y);
    index_t s = (want_blocks + have - 1) / have;
    s = std::min<index_t>(s, std::max<index_t>(1, n_s / (tensor ? 4 * tc_src_tile : 2 * cuda_src_tile)));
    if (kind == loop_kind::over_sources && !automatic) s = std::max<index_t>(s, 2);
    // The memory bound wins over the forced split: one slice is always allowed.
    const std::size_t per_slice = std::size_t(n_obs) * std::size_t(n_rhs) * 12 * real_size;
    s = std::min<index_t>(s, index_t(std::max<std::size_t>(1, max_partial_bytes / per_slice)));
    p.slices = unsigned(std::clamp<index_t>(s, 1, std::min<index_t>(n_s, 65535)));
  }
  return p;
}

template <class Real>
inline void cuda_run(const backend::cuda& b, const cuda_plan& p, const point4<Real>* src,
                     index_t n_s, const Real* folded, index_t n_rhs, const point4<Real>* obs,
                     index_t n_obs, Real k, Real* acc) {
  emgpu::detail::device_guard g(b.device);
  const Real inv_k = Real(1) / k;
  if constexpr (sizeof(Real) == 8) {
    if (p.tensor_tiles > 0) {
      const dim3 grid(unsigned((n_obs + tc_obs_per_block - 1) / tc_obs_per_block), p.grid_y, p.slices);
      const auto launch = p.shape == tc_shape::m16n8k8   ? tc_launch<tc_shape::m16n8k8>
                          : p.shape == tc_shape::m16n8k4 ? tc_launch<tc_shape::m16n8k4>
                                                         : tc_launch<tc_shape::m8n8k4>;
      launch(p.tensor_tiles, grid, b.stream, src, n_s, folded, n_rhs, obs, n_obs, k, inv_k, acc);
      EMGPU_CUDA_CHECK_LAUNCH("emgpu::fe_iiee::radiate_tc_kernel");
      return;
    }
  }
  const dim3 grid(unsigned((n_obs + cuda_block - 1) / cuda_block), p.grid_y, p.slices);
  switch (p.rhs_per_thread) {
    case 1:
      radiate_kernel<Real, 1><<<grid, cuda_block, 0, b.stream>>>(src, n_s, folded, n_rhs, obs,
                                                                n_obs, k, inv_k, acc);
      break;
    case 2:
      radiate_kernel<Real, 2><<<grid, cuda_block, 0, b.stream>>>(src, n_s, folded, n_rhs, obs,
                                                                n_obs, k, inv_k, acc);
      break;
    case 8:
      if constexpr (sizeof(Real) == 4) {
        radiate_kernel<Real, 8><<<grid, cuda_block, 0, b.stream>>>(src, n_s, folded, n_rhs, obs,
                                                                  n_obs, k, inv_k, acc);
        break;
      }
      [[fallthrough]];
    default:
      radiate_kernel<Real, 4><<<grid, cuda_block, 0, b.stream>>>(src, n_s, folded, n_rhs, obs,
                                                                n_obs, k, inv_k, acc);
      break;
  }
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::fe_iiee::radiate_kernel");
}

inline int cuda_cc_major(int device) {
  int n = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrComputeCapabilityMajor, device));
  return n;
}

inline const char* tc_shape_name(tc_shape s) {
  switch (s) {
    case tc_shape::m16n8k8: return "m16n8k8";
    case tc_shape::m16n8k4: return "m16n8k4";
    default: return "m8n8k4";
  }
}

inline int cuda_sm_count(int device) {
  int n = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

}  // namespace emgpu::fe_iiee::detail

#endif  // __CUDACC__
