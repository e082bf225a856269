/// @file
/// @brief Runs a per-matrix functor over a batch: a loop on the host (serial),
///        a parallel loop (OpenMP), or one team per matrix on CUDA.
///
/// A functor provides scratch_bytes() (team scratch it cannot do without),
/// stage_bytes() (shared memory that would hold all of its matrices),
/// team_size() (threads per matrix; <= 32 uses warp tiles, more a block) and
/// operator()(team, k, scratch, bytes). Host backends give it only the
/// scratch, so it works in place; CUDA gives it as much shared memory as the
/// device allows, and the functor stages as many columns as fit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "../../backend/openmp.hpp"
#include "../../backend/serial.hpp"
#include "common.hpp"
#include "team.hpp"

#if defined(__CUDACC__)
#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "smem_limit.hpp"
#endif

namespace emgpu::batched::detail {

/// 16-byte aligned host scratch for one thread. Bytes, not doubles: the ops
/// store float and complex<float> there too, and storage from new unsigned
/// char[] may hold objects of any type (an array of double objects read
/// and written as float is outside the aliasing rules).
struct host_scratch {
  std::unique_ptr<unsigned char[]> buf;
  unsigned char* p = nullptr;
  std::size_t bytes = 0;
  explicit host_scratch(std::size_t b) : buf(new unsigned char[b + 16]()) {
    auto addr = reinterpret_cast<std::uintptr_t>(buf.get());
    p = reinterpret_cast<unsigned char*>((addr + 15) & ~std::uintptr_t(15));
    bytes = b;
  }
};

template <class Op>
inline void launch(const backend::serial&, const Op& op, index_t count) {
  host_scratch s(op.scratch_bytes());
  for (index_t k = 0; k < count; ++k) op(serial_team{}, k, s.p, s.bytes);
}

template <class Op>
inline void launch(const backend::openmp& b, const Op& op, index_t count) {
#if defined(_OPENMP)
  // Dynamic chunks (Jacobi sweeps vary from matrix to matrix), small enough
  // that a short batch still spreads over all threads.
  const int nt = b.threads();
  index_t chunk = count / (8 * index_t(nt));
  chunk = chunk < 1 ? 1 : chunk > 16 ? 16 : chunk;
#pragma omp parallel num_threads(nt)
  {
    host_scratch s(op.scratch_bytes());
#pragma omp for schedule(dynamic, chunk)
    for (index_t k = 0; k < count; ++k) op(serial_team{}, k, s.p, s.bytes);
  }
#else
  launch(static_cast<const backend::serial&>(b), op, count);
#endif
}

#if defined(__CUDACC__)

constexpr int tile_block_threads = 128;
constexpr int max_block_threads = 256;

template <class Op, int W>
__global__ void __launch_bounds__(tile_block_threads)
    tile_kernel(Op op, index_t count, unsigned per_team) {
  extern __shared__ __align__(16) unsigned char emgpu_batched_smem[];
  auto block = cooperative_groups::this_thread_block();
  const tile_team<W> t{cooperative_groups::tiled_partition<W>(block)};
  const int team = int(threadIdx.x) / W;
  const index_t k = index_t(blockIdx.x) * (blockDim.x / W) + team;
  if (k >= count) return;  // whole tiles leave; tiles never sync the block
  op(t, k, emgpu_batched_smem + std::size_t(team) * per_team, per_team);
}

template <class Op>
__global__ void __launch_bounds__(max_block_threads)
    block_kernel(Op op, index_t count, unsigned bytes) {
  extern __shared__ __align__(16) unsigned char emgpu_batched_smem[];
  __shared__ double red_val[32];
  __shared__ index_t red_idx[32];
  const index_t k = blockIdx.x;
  if (k >= count) return;  // uniform over the block
  op(block_team{red_val, red_idx}, k, emgpu_batched_smem, bytes);
}

/// Teams per block of the tile kernel: the power of two (at most
/// tile_block_threads / W) that fits the block limit and keeps the most
/// teams resident on an SM, the larger on ties. Shared memory is taken per
/// block, so with large teams a block of 4 can strand an SM's remainder:
/// 4 x 37 KB (complex<double> 32 x 32 with V) leaves one block, 4 teams, on
/// Hopper's 228 KB where blocks of 2 or 1 fit 6.
template <int W>
inline int tile_teams(int device, std::size_t per_team, int optin) {
  int per_sm = 0, reserved = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, device));
  int best = 1;
  long best_res = -1;
  for (int teams = tile_block_threads / W; teams >= 1; teams /= 2) {
    const std::size_t smem = std::size_t(teams) * per_team;
    if (teams > 1 && smem > std::size_t(optin)) continue;
    long blocks = long(std::size_t(per_sm) / (smem + std::size_t(reserved)));
    blocks = std::min(blocks, std::min(32L, long(2048 / (teams * W))));
    if (blocks * teams > best_res) {
      best_res = blocks * teams;
      best = teams;
    }
  }
  return best;
}

template <class Op, int W>
inline void launch_tiles(const backend::cuda& b, const Op& op, index_t count, std::size_t per_team,
                         int optin, const char* name) {
  const int teams = tile_teams<W>(b.device, per_team, optin);
  if (per_team > std::size_t(optin)) per_team = std::size_t(optin) & ~std::size_t(15);
  const std::size_t smem = std::size_t(teams) * per_team;
  auto kern = tile_kernel<Op, W>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const index_t grid = (count + teams - 1) / teams;
  kern<<<unsigned(grid), unsigned(teams * W), smem, b.stream>>>(op, count, unsigned(per_team));
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

template <class Op>
inline void launch(const backend::cuda& b, const Op& op, index_t count, const char* name) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  int optin = smem_optin(b.device);
  optin -= 1024;  // room for the kernels' static shared memory
  const std::size_t scratch = align16(op.scratch_bytes());
  const std::size_t want = scratch + op.stage_bytes();
  detail_require(scratch <= std::size_t(optin),
                 std::string(name) + ": matrices too large for the CUDA backend's shared scratch");
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  const int ts = op.team_size();
  switch (ts) {
    case 2: launch_tiles<Op, 2>(b, op, count, want, optin, name); return;
    case 4: launch_tiles<Op, 4>(b, op, count, want, optin, name); return;
    case 8: launch_tiles<Op, 8>(b, op, count, want, optin, name); return;
    case 16: launch_tiles<Op, 16>(b, op, count, want, optin, name); return;
    case 32: launch_tiles<Op, 32>(b, op, count, want, optin, name); return;
    default: break;
  }
  const std::size_t smem = std::min(want, std::size_t(optin) & ~std::size_t(15));
  auto kern = block_kernel<Op>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int threads = std::min(ts, max_block_threads);
  kern<<<unsigned(count), unsigned(threads), smem, b.stream>>>(op, count, unsigned(smem));
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

#endif  // __CUDACC__

/// Host launch entry with the same signature as the CUDA one.
template <class Op>
inline void launch(const backend::serial& b, const Op& op, index_t count, const char*) {
  launch(b, op, count);
}
template <class Op>
inline void launch(const backend::openmp& b, const Op& op, index_t count, const char*) {
  launch(b, op, count);
}

}  // namespace emgpu::batched::detail
