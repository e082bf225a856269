// The fused scatter + connect step of the SCN mesh: one algorithm source
// (update_node, EMGPU_HD) driven by a serial loop, an OpenMP loop over
// (y, z) rows, or one CUDA thread per node.
//
// Layout: structure of arrays, 12 port arrays (port p at offset (p-1) ps,
// ps = port_stride >= n), node index i + nx (j + ny k), x contiguous. A step reads the
// 12 incident voltages of a node from `in`, scatters them, and writes each
// reflected pulse as the next incident pulse of the neighbour across that face
// into `out` ("push"). Every entry of `out` has exactly one writer (the
// neighbour across the face, or the node itself at a wall), so the pass needs
// no synchronisation and moves 12 reads + 12 writes per node.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../../backend.hpp"
#include "../../core/config.hpp"
#include "../node.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace emgpu::tlm::detail {

/// Everything the update of one node needs; cheap to copy into a kernel.
template <class Real>
struct lattice {
  const Real* in = nullptr;
  Real* out = nullptr;
  index_t n = 0;                           // nodes
  index_t ps = 0;                          // port stride (elements between port arrays)
  index_t nx = 0, ny = 0, nz = 0;
  Real gamma[6] = {};                      // face order xmin, xmax, ymin, ymax, zmin, zmax
  const std::uint8_t* walls = nullptr;     // per node 6 bits in face order, or null
};

// The reflected pulse r leaving through a face: into the neighbour's port
// (dst = its linear offset), or back into this node's port at a wall (-1) or
// an outer face (Gamma).
template <class Real>
EMGPU_HD inline void emit(Real* __restrict__ out, index_t n, index_t c, int self, int other,
                          index_t nb, bool wall, bool edge, Real gamma, Real r) {
  if (wall)
    out[self * n + c] = -r;
  else if (edge)
    out[self * n + c] = gamma * r;
  else
    out[other * n + nb] = r;
}

/// Scatter node (i, j, k) (linear index c) and connect its 12 pulses.
template <bool Walls, class Real>
EMGPU_HD inline void update_node(const lattice<Real>& L, index_t c, index_t i, index_t j,
                                 index_t k) {
  const Real* __restrict__ in = L.in;
  Real* __restrict__ out = L.out;
  const index_t n = L.ps, sy = L.nx, sz = L.nx * L.ny;
  Real v[12], r[12];
  for (int p = 0; p < 12; ++p) v[p] = in[p * n + c];
  scatter(v, r);
  unsigned w = 0;
  if constexpr (Walls) w = L.walls[c];
  // Pairs (physics-conventions): 3-11 and 6-10 along x, 1-12 and 5-7 along y,
  // 2-9 and 4-8 along z; zero-based indices below.
  const bool x0 = i == 0, x1 = i == L.nx - 1, y0 = j == 0, y1 = j == L.ny - 1, z0 = k == 0,
             z1 = k == L.nz - 1;
  emit(out, n, c, 2, 10, c - 1, (w & 1u) != 0, x0, L.gamma[0], r[2]);    // 3 -> 11 of i-1
  emit(out, n, c, 5, 9, c - 1, (w & 1u) != 0, x0, L.gamma[0], r[5]);     // 6 -> 10 of i-1
  emit(out, n, c, 10, 2, c + 1, (w & 2u) != 0, x1, L.gamma[1], r[10]);   // 11 -> 3 of i+1
  emit(out, n, c, 9, 5, c + 1, (w & 2u) != 0, x1, L.gamma[1], r[9]);     // 10 -> 6 of i+1
  emit(out, n, c, 0, 11, c - sy, (w & 4u) != 0, y0, L.gamma[2], r[0]);   // 1 -> 12 of j-1
  emit(out, n, c, 4, 6, c - sy, (w & 4u) != 0, y0, L.gamma[2], r[4]);    // 5 -> 7 of j-1
  emit(out, n, c, 11, 0, c + sy, (w & 8u) != 0, y1, L.gamma[3], r[11]);  // 12 -> 1 of j+1
  emit(out, n, c, 6, 4, c + sy, (w & 8u) != 0, y1, L.gamma[3], r[6]);    // 7 -> 5 of j+1
  emit(out, n, c, 1, 8, c - sz, (w & 16u) != 0, z0, L.gamma[4], r[1]);   // 2 -> 9 of k-1
  emit(out, n, c, 3, 7, c - sz, (w & 16u) != 0, z0, L.gamma[4], r[3]);   // 4 -> 8 of k-1
  emit(out, n, c, 8, 1, c + sz, (w & 32u) != 0, z1, L.gamma[5], r[8]);   // 9 -> 2 of k+1
  emit(out, n, c, 7, 3, c + sz, (w & 32u) != 0, z1, L.gamma[5], r[7]);   // 8 -> 4 of k+1
}

// Host fast path for a row without internal walls: the y/z destinations of a
// row are fixed, so each becomes a pointer plus a factor (1 towards the
// neighbour, Gamma back into the node at an outer face; multiplying by 1 is
// exact, so the results are those of update_node bit for bit). The interior
// of the row then has no branches and the compiler can vectorise it.
template <class Real>
EMGPU_FORCEINLINE void update_row_open(const lattice<Real>& L, index_t j, index_t k) {
  const index_t n = L.ps, nx = L.nx, sy = L.nx, sz = L.nx * L.ny, c0 = nx * (j + L.ny * k);
  update_node<false>(L, c0, 0, j, k);
  if (nx > 1) update_node<false>(L, c0 + nx - 1, nx - 1, j, k);
  if (nx < 3) return;
  Real* const out = L.out;
  auto row = [&](int self, int other, index_t off, bool edge) {
    return edge ? out + self * n + c0 : out + other * n + c0 + off;
  };
  auto fac = [&](bool edge, int f) { return edge ? L.gamma[f] : Real(1); };
  const bool y0 = j == 0, y1 = j == L.ny - 1, z0 = k == 0, z1 = k == L.nz - 1;
  Real* __restrict__ d0 = row(0, 11, -sy, y0);
  Real* __restrict__ d4 = row(4, 6, -sy, y0);
  Real* __restrict__ d11 = row(11, 0, sy, y1);
  Real* __restrict__ d6 = row(6, 4, sy, y1);
  Real* __restrict__ d1 = row(1, 8, -sz, z0);
  Real* __restrict__ d3 = row(3, 7, -sz, z0);
  Real* __restrict__ d8 = row(8, 1, sz, z1);
  Real* __restrict__ d7 = row(7, 3, sz, z1);
  Real* __restrict__ d2 = out + 10 * n + c0 - 1;  // 3 -> 11 of i-1
  Real* __restrict__ d5 = out + 9 * n + c0 - 1;   // 6 -> 10 of i-1
  Real* __restrict__ d10 = out + 2 * n + c0 + 1;  // 11 -> 3 of i+1
  Real* __restrict__ d9 = out + 5 * n + c0 + 1;   // 10 -> 6 of i+1
  const Real gy0 = fac(y0, 2), gy1 = fac(y1, 3), gz0 = fac(z0, 4), gz1 = fac(z1, 5);
  const Real* __restrict__ in = L.in + c0;
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__clang__)
#pragma GCC ivdep
#endif
  for (index_t i = 1; i < nx - 1; ++i) {
    Real v[12], r[12];
    for (int p = 0; p < 12; ++p) v[p] = in[p * n + i];
    scatter(v, r);
    d2[i] = r[2];
    d5[i] = r[5];
    d10[i] = r[10];
    d9[i] = r[9];
    d0[i] = gy0 * r[0];
    d4[i] = gy0 * r[4];
    d11[i] = gy1 * r[11];
    d6[i] = gy1 * r[6];
    d1[i] = gz0 * r[1];
    d3[i] = gz0 * r[3];
    d8[i] = gz1 * r[8];
    d7[i] = gz1 * r[7];
  }
}

/// One row of nodes (fixed j, k): the unit of work of the host backends.
template <bool Walls, class Real>
EMGPU_FORCEINLINE void update_row(const lattice<Real>& L, index_t j, index_t k) {
  if constexpr (!Walls) {
    update_row_open(L, j, k);
  } else {
    // A node's mask holds all six of its faces, so a row whose mask bytes are
    // all zero behaves exactly like a wall-free row.
    const index_t c0 = L.nx * (j + L.ny * k);
    unsigned any = 0;
    for (index_t i = 0; i < L.nx; ++i) any |= L.walls[c0 + i];
    if (any == 0) return update_row_open(L, j, k);
    for (index_t i = 0; i < L.nx; ++i) update_node<Walls>(L, c0 + i, i, j, k);
  }
}

template <bool Walls, class Real>
inline void update_all(const backend::serial&, const lattice<Real>& L) {
  for (index_t k = 0; k < L.nz; ++k)
    for (index_t j = 0; j < L.ny; ++j) update_row<Walls>(L, j, k);
}

/// Grain size: each OpenMP thread gets at least this many nodes (~0.1 ms of
/// work per step). A step has one fork/join, which costs microseconds on an
/// idle machine but up to a scheduler time slice when the cores are shared
/// (16 threads per process under ctest -j4 made small meshes 100x slower), so
/// small meshes use fewer threads and the smallest run serially.
inline constexpr index_t openmp_nodes_per_thread = 8192;

template <bool Walls, class Real>
inline void update_all(const backend::openmp& b, const lattice<Real>& L) {
  const index_t rows = L.ny * L.nz;
  const index_t by_work = L.n / openmp_nodes_per_thread;
  const int nt = int(std::min<index_t>(std::min<index_t>(b.threads(), by_work), rows));
  if (nt <= 1) return update_all<Walls>(static_cast<const backend::serial&>(b), L);
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(nt)
#endif
  for (index_t q = 0; q < rows; ++q) update_row<Walls>(L, q % L.ny, q / L.ny);
  (void)b;
}

#if defined(__CUDACC__)
// One thread per node on the linear index, so warps stay full whatever nx is;
// the two 32-bit divisions are free in a kernel bound by memory traffic.
template <bool Walls, class Real>
__global__ void __launch_bounds__(256) update_kernel(lattice<Real> L) {
  const index_t c = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= L.n) return;
  index_t i, j, k;
  if (L.n <= index_t(0xffffffffu)) {
    const unsigned cu = unsigned(c), nx = unsigned(L.nx), nxy = unsigned(L.nx * L.ny);
    const unsigned kk = cu / nxy, rem = cu - kk * nxy, jj = rem / nx;
    k = kk;
    j = jj;
    i = rem - jj * nx;
  } else {
    const index_t nxy = L.nx * L.ny;
    k = c / nxy;
    j = (c - k * nxy) / L.nx;
    i = c - k * nxy - j * L.nx;
  }
  update_node<Walls>(L, c, i, j, k);
}

template <bool Walls, class Real>
inline void update_all(const backend::cuda& b, const lattice<Real>& L) {
  if (L.n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  constexpr unsigned block = 256;
  const index_t grid = (L.n + block - 1) / block;
  update_kernel<Walls, Real><<<unsigned(grid), block, 0, b.stream>>>(L);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::tlm update_kernel");
}
#endif

}  // namespace emgpu::tlm::detail
