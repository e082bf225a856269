/// @file
/// @brief Execution "teams" for the batched cores: one matrix is factored by a
///        team of cooperating threads. The same EMGPU_HD core runs with a team
///        of one host thread (serial and OpenMP backends), one CUDA warp tile
///        (n <= 32) or one CUDA thread block (larger n).
///
/// A team offers rank(), size(), sync(), argmax() (all-reduce of a (value,
/// index) pair, ties to the smaller index so every backend picks the same
/// pivot) and any() (all-reduce of a predicate).
#pragma once

#include "../../core/config.hpp"

#if defined(__CUDACC__)
#include <cooperative_groups.h>
#endif

namespace emgpu::batched::detail {

/// @brief A team of one host (or device) thread: every loop runs in full.
struct serial_team {
  EMGPU_HD int rank() const { return 0; }
  EMGPU_HD int size() const { return 1; }
  EMGPU_HD void sync() const {}
  template <class R>
  EMGPU_HD void argmax(R&, index_t&) const {}
  EMGPU_HD bool any(bool p) const { return p; }
  template <class R>
  EMGPU_HD R group_sum(R v, int) const { return v; }
  template <class R>
  EMGPU_HD R strided_sum(R v, int) const { return v; }
  template <class R>
  EMGPU_HD R sum(R v) const { return v; }
};

#if defined(__CUDACC__)

/// Butterfly all-reduce of (v, i) over a warp tile: largest v, smaller i on
/// ties. A strict total order on distinct i, so every lane ends with the same
/// winner; NaN fails every compare and never replaces a number.
template <class Tile, class R, class I>
__device__ __forceinline__ void tile_argmax(const Tile& tile, R& v, I& i) {
#pragma unroll
  for (int off = int(Tile::num_threads()) / 2; off > 0; off /= 2) {
    const R ov = tile.shfl_xor(v, off);
    const I oi = tile.shfl_xor(i, off);
    if (ov > v || (ov == v && oi < i)) {
      v = ov;
      i = oi;
    }
  }
}

/// @brief W consecutive lanes of a warp (W = 2, 4, ..., 32) own one matrix.
template <int W>
struct tile_team {
  cooperative_groups::thread_block_tile<W> tile;

  __device__ int rank() const { return int(tile.thread_rank()); }
  __device__ int size() const { return W; }
  __device__ void sync() const { tile.sync(); }
  /// Butterfly all-reduce; the trailing sync orders the shared-memory reads
  /// made before the call against writes made after it by other lanes.
  template <class R>
  __device__ void argmax(R& v, index_t& i) const {
    tile_argmax(tile, v, i);
    tile.sync();
  }
  __device__ bool any(bool p) const { return tile.any(p); }
  /// Sum over aligned groups of g lanes (g a power of two <= W).
  template <class R>
  __device__ R group_sum(R v, int g) const {
    for (int off = g / 2; off > 0; off /= 2) v += tile.shfl_xor(v, off);
    return v;
  }
  /// Sum over the g lanes of the tile that share their rank modulo W / g
  /// (g a power of two <= W): lanes r, r + W / g, ...; the same bits on each.
  template <class R>
  __device__ R strided_sum(R v, int g) const {
    for (int off = W / 2; off >= W / g; off /= 2) v += tile.shfl_xor(v, off);
    return v;
  }
  /// Sum over the team, the same bits on every lane (each butterfly step
  /// adds the same two values, in either order).
  template <class R>
  __device__ R sum(R v) const {
    return group_sum(v, W);
  }
};

/// @brief All threads of a block own one matrix; reductions go through a
///        per-warp partial in shared memory.
struct block_team {
  double* red_val;  // >= 32 entries of __shared__ memory
  index_t* red_idx;

  __device__ int rank() const { return int(threadIdx.x); }
  __device__ int size() const { return int(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
  template <class R>
  __device__ void argmax(R& v, index_t& i) const {
    double dv = double(v);
    for (int off = 16; off > 0; off /= 2) {
      const double ov = __shfl_xor_sync(0xffffffffu, dv, off);
      const index_t oi = __shfl_xor_sync(0xffffffffu, i, off);
      if (ov > dv || (ov == dv && oi < i)) {
        dv = ov;
        i = oi;
      }
    }
    const int warp = int(threadIdx.x) / 32, nwarp = (int(blockDim.x) + 31) / 32;
    if ((threadIdx.x & 31) == 0) {
      red_val[warp] = dv;
      red_idx[warp] = i;
    }
    __syncthreads();
    dv = red_val[0];
    i = red_idx[0];
    for (int w = 1; w < nwarp; ++w)
      if (red_val[w] > dv || (red_val[w] == dv && red_idx[w] < i)) {
        dv = red_val[w];
        i = red_idx[w];
      }
    __syncthreads();  // red_* may be reused by the next reduction
    v = R(dv);
  }
  __device__ bool any(bool p) const { return __syncthreads_or(p) != 0; }
  /// Sum over aligned groups of g lanes (g a power of two <= 32); every
  /// lane of the warp must call it (blockDim is a multiple of 32).
  template <class R>
  __device__ R group_sum(R v, int g) const {
    for (int off = g / 2; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
  }
  /// Sum over the g lanes of a warp that share their lane index modulo
  /// 32 / g (g a power of two <= 32); every lane of the warp must call it.
  template <class R>
  __device__ R strided_sum(R v, int g) const {
    for (int off = 16; off >= 32 / g; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
  }
  /// Sum over the block, the same bits on every thread: per warp by a
  /// butterfly, then the warps' partials in order (blockDim a multiple of 32).
  template <class R>
  __device__ R sum(R v) const {
    v = group_sum(v, 32);
    const int warp = int(threadIdx.x) / 32, nwarp = int(blockDim.x) / 32;
    if ((threadIdx.x & 31) == 0) red_val[warp] = double(v);
    __syncthreads();
    double s = red_val[0];
    for (int w = 1; w < nwarp; ++w) s += red_val[w];
    __syncthreads();  // red_val may be reused by the next reduction
    return R(s);
  }
};

#endif  // __CUDACC__

/// @brief Team-parallel loop over the r x c index rectangle, rows fastest
///        (coalesced for column-major storage). One division per call.
template <class Team, class F>
EMGPU_HD inline void team_for_2d(const Team& t, index_t r, index_t c, F&& f) {
  if (r <= 0 || c <= 0) return;
  const index_t sz = t.size();
  index_t i = t.rank() % r, j = t.rank() / r;
  const index_t di = sz % r, dj = sz / r;
  while (j < c) {
    f(i, j);
    i += di;
    j += dj;
    if (i >= r) {
      i -= r;
      ++j;
    }
  }
}

/// @brief Team-parallel loop over `r` owners x `c` items where each owner's
///        setup is hoisted: f(owner, first, step) must process items first,
///        first + step, ... < c of that owner. With at least r threads an
///        owner's items are split among size/r threads (no per-item division);
///        with fewer, each thread takes whole owners.
template <class Team, class F>
EMGPU_HD inline void team_for_owners(const Team& t, index_t r, index_t c, F&& f) {
  if (r <= 0 || c <= 0) return;
  const index_t sz = t.size(), rk = t.rank();
  if (sz >= r) {
    const index_t groups = sz / r;
    if (rk < groups * r) f(rk % r, rk / r, groups);
  } else {
    for (index_t o = rk; o < r; o += sz) f(o, index_t(0), index_t(1));
  }
}

/// @brief Team-parallel loop over [0, n).
template <class Team, class F>
EMGPU_HD inline void team_for(const Team& t, index_t n, F&& f) {
  for (index_t i = t.rank(); i < n; i += t.size()) f(i);
}

}  // namespace emgpu::batched::detail
