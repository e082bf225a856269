/// @file
/// @brief CUDA fast path of qr_factor for m <= 8 (16 in single precision):
///        register-resident Givens QR, a few lanes per matrix, each lane
///        holding a few whole columns.
///
/// Layout: the kernel is compiled for a padded size N in {2, 4, 8, 16} (the
/// next power of two >= m; the lane logic is written for any power of two up
/// to 32, and the host test models it up to 32). L = qr_regs_lanes<N, T> lanes hold one
/// matrix (32 / L matrices per warp); lane g of a group holds the C = N / L
/// columns j = c L + g (c = 0 .. C-1, cyclic), each as N values in a
/// register array indexed by compile-time constants only. The matrix sits at
/// the BOTTOM of the array: register r holds row r - off, off = N - m, so a
/// rotation of rows (i-1, i) acts on registers (r-1, r), r = i + off, and the
/// runtime m, n (uniform over the grid) only decide WHETHER it exists.
///
/// Order: the textbook column-by-column, bottom-up sweep. For column j (c
/// static, g a runtime loop, j = c L + g) and r = N-1 down to j+1+off, every
/// lane makes and encodes a rotation from its own column c at (r-1, r); the
/// one of lane g (column j) is broadcast by __shfl_sync and decoded on every
/// lane; lane g applies it to its pivot pair and keeps z in the annihilated
/// slot (as qr_factor_core does), lanes > g apply it to their column c
/// (columns j+1 ..), and every lane applies it to its columns c' > c. Local
/// columns c' < c are finished on every lane, so they are skipped without a
/// test; the tests on r and j are warp-uniform branches.
///
/// Same operations as the generic Sameh-Kuck path (qr_core.hpp), entry by
/// entry and in the same order: on rows (r-1, r) of a column l the generic
/// path applies rotation (j, i) at stage (m-1-i) + 2j, and for the two
/// rotations (j, r+1), (j, r) touching row r that order is j-major and
/// bottom-up, the order of the sweep; column l's own rotations come after
/// every j < l in both. So each rotation is made from the same values, and
/// the arithmetic is the same inline functions (givens_make / encode /
/// decode / apply); only FMA contraction, which nvcc decides per compiled
/// context, may differ, so on the GPU the two paths agree to rounding, while
/// the host model of this kernel (tests/batched/test_batched_qr.cpp, no
/// contraction) reproduces the serial path bit for bit. Padding: registers
/// r < off are never in a pair (a rotation needs i - 1 >= j >= 0), so they
/// stay zero; columns >= n are zeros that receive rotations, never make one,
/// and are neither loaded nor stored. No data-dependent loop: NaN/Inf or zero
/// pairs go through givens_make's cases as on the generic path.
///
/// Choice of L (measured, H200, 100 000 square matrices, ms; team = the
/// generic shared-memory path of qr_core.hpp):
///
///     complex<double>  n = 8:  L = 2 0.176, L = 4 0.162, L = 8 0.199; team 0.238
///                      n = 16: L = 8 1.61,  L = 16 2.02;             team 1.26
///                      n = 32: L = 32 20.7;                          team 8.18
///     double           n = 8:  L = 1 0.148, L = 2 0.107, L = 4 0.091; team 0.210
///     complex<float>   n = 16: L = 4 0.800, L = 8 0.772;             team 0.860
///     float            n = 16: L = 2 0.491, L = 4 0.398;             team 0.780
///                      n = 32: L = 8 4.42,  L = 16 4.45;             team 3.70
///
/// ncu (complex<double>, N = 8 / 16 / 32 at L = 2 / 8 / 32): 188-234 registers, 8
/// warps per SM, 70-80 % of cycles with no eligible warp, the top stall the
/// fixed-latency wait on the FP64 chain make -> encode -> shuffle -> decode ->
/// apply that every rotation of a column repeats. More lanes per matrix buy
/// occupancy (fewer registers) at the price of more issued instructions per
/// matrix (every lane runs the whole chain); the optimum is two columns per
/// lane up to N = 8. At N = 32 the chain of 496 rotations per matrix loses to
/// the team path, which makes up to 16 rotations of a stage at once, so the
/// register path is taken only where it measured faster: m <= 8 for every
/// type, m <= 16 for float and complex<float> (qr_regs_limit).
#pragma once

#include <cstddef>
#include <string>

#include "common.hpp"
#include "qr_core.hpp"

#if defined(__CUDACC__)
#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#define EMGPU_QR_REGS_UNROLL _Pragma("unroll")
#define EMGPU_QR_REGS_INLINE __forceinline__
#else
#define EMGPU_QR_REGS_UNROLL
#define EMGPU_QR_REGS_INLINE inline
#endif

namespace emgpu::batched::detail {

/// Largest m the register path takes for any type (qr_regs_limit<T>() for
/// T's own limit).
constexpr index_t qr_regs_max = 16;
template <class T>
constexpr index_t qr_regs_limit() {
  return sizeof(real_type_t<T>) == 4 ? 16 : 8;
}

/// Lanes per matrix for padded size N (see the table above): two columns per
/// lane up to N = 8; at N = 16 four columns per lane for float (L = 4), two
/// for the others (L = 8: complex<float>, and the double types in the host
/// model); at N = 32 (not dispatched; kept for the host model of the
/// schedule) two (L = 16).
template <int N, class T>
constexpr int qr_regs_lanes() {
  if constexpr (N <= 2) return 1;
  else if constexpr (N == 16 && sizeof(T) == 4) return 4;
  else return N / 2;
}

// The per-lane pieces are EMGPU_HD so that the host test can run the
// kernel's exact lane logic (lanes as a loop, a shuffle as reading another
// lane's value) against the serial path, bit for bit. They must be inlined
// into the kernel: a register array passed to a real call would live in
// local memory.

/// Lane g's columns c L + g (those < n; base == nullptr: none) into
/// registers off .. N-1, zeros elsewhere.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_load(T (&a)[C][N], const T* base, index_t lda, int L,
                                                int g, int off, int n) {
  EMGPU_QR_REGS_UNROLL
  for (int c = 0; c < C; ++c) {
    const int col = c * L + g;
    const T* p = (base != nullptr && col < n) ? base + index_t(col) * lda : nullptr;
    EMGPU_QR_REGS_UNROLL
    for (int r = 0; r < N; ++r) a[c][r] = (p != nullptr && r >= off) ? p[r - off] : T(0);
  }
}
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_store(const T (&a)[C][N], T* base, index_t lda, int L,
                                                 int g, int off, int n) {
  EMGPU_QR_REGS_UNROLL
  for (int c = 0; c < C; ++c) {
    const int col = c * L + g;
    if (base == nullptr || col >= n) continue;
    T* p = base + index_t(col) * lda;
    EMGPU_QR_REGS_UNROLL
    for (int r = 0; r < N; ++r)
      if (r >= off) p[r - off] = a[c][r];
  }
}

/// This lane's candidate for the rotation at registers (r-1, r) of its local
/// column c, encoded; only the owner lane's is used.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE T qr_regs_make(const T (&a)[C][N], int c, int r) {
  return givens_encode(givens_make(a[c][r - 1], a[c][r]));
}

/// Applies the rotation z of column c L + g (made by lane g) at registers
/// (r-1, r) to this lane's (lane lg) columns right of it; lane g itself
/// finishes its pivot pair and keeps z.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_apply(T (&a)[C][N], int c, int r, int lg, int g, T z) {
  const givens<T> rot = givens_decode(z);
  if (lg >= g) {
    T x = a[c][r - 1], y = a[c][r];
    givens_apply(rot, x, y, false);
    a[c][r - 1] = x;
    a[c][r] = lg == g ? z : y;  // y is zero up to rounding: the slot keeps the rotation
  }
  EMGPU_QR_REGS_UNROLL
  for (int c2 = c + 1; c2 < C; ++c2) {
    T x = a[c2][r - 1], y = a[c2][r];
    givens_apply(rot, x, y, false);
    a[c2][r - 1] = x;
    a[c2][r] = y;
  }
}

}  // namespace emgpu::batched::detail

#if defined(__CUDACC__)

namespace emgpu::batched::detail {

constexpr int qr_regs_threads = 128;

template <class T>
__device__ __forceinline__ T qr_shfl(T v, int src, int width) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    const R re = __shfl_sync(0xffffffffu, v.real(), src, width);
    const R im = __shfl_sync(0xffffffffu, v.imag(), src, width);
    return T(re, im);
  } else {
    return __shfl_sync(0xffffffffu, v, src, width);
  }
}

// Register budget: a lane's share of the matrix is up to 128 registers, so
// the kernel needs more than the 128 that __launch_bounds__(128) alone would
// let ptxas stop at; __maxnreg__(255) (CUDA >= 12.4) lets it take what it
// needs (a 128-thread block at <= 255 registers always fits an SM's 64K).
#if defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define EMGPU_QR_REGS_BOUNDS __maxnreg__(255)
#else
#define EMGPU_QR_REGS_BOUNDS __launch_bounds__(qr_regs_threads)
#endif

/// One matrix per L lanes; every lane runs the whole sweep (lanes of matrices
/// k >= count work on zeros and store nothing) so that the full-mask
/// shuffles always find all 32 lanes. The loops' bounds depend on m and n
/// only, which are the same on every lane.
template <int N, int L, class T, class Loc>
__global__ void EMGPU_QR_REGS_BOUNDS
    qr_regs_kernel(Loc loc, int m, int n, index_t lda, index_t count) {
  constexpr int C = N / L;
  const index_t k = (index_t(blockIdx.x) * qr_regs_threads + index_t(threadIdx.x)) / L;
  const int lg = int(threadIdx.x) & (L - 1);
  const int off = N - m;  // register r holds row r - off
  T* base = k < count ? loc(k) : nullptr;
  const int jm = int(qr_jmax(m, n));  // last column with a rotation

  T a[C][N];
  qr_regs_load<N, C>(a, base, lda, L, lg, off, n);
#pragma unroll
  for (int c = 0; c < C; ++c) {
#pragma unroll 1
    for (int g = 0; g < L; ++g) {
      const int j = c * L + g;
      if (j > jm) break;
#pragma unroll
      for (int r = N - 1; r >= 1; --r) {
        if (r - off <= j) break;  // rows i = r - off > j only
        const T zo = qr_regs_make<N, C>(a, c, r);
        T z = zo;
        if constexpr (L > 1) z = qr_shfl(zo, g, L);
        qr_regs_apply<N, C>(a, c, r, lg, g, z);
      }
    }
  }
  qr_regs_store<N, C>(a, base, lda, L, lg, off, n);
}

template <int N, class T, int L = qr_regs_lanes<N, T>(), class Loc>
inline void qr_regs_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  static_assert(L >= 1 && L <= N && N % L == 0 && 32 % L == 0, "lanes per matrix");
  const index_t blocks = (count * L + qr_regs_threads - 1) / qr_regs_threads;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_regs_kernel<N, L, T, Loc><<<unsigned(blocks), unsigned(qr_regs_threads), 0, b.stream>>>(
      loc, int(m), int(n), lda, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor for m <= qr_regs_limit<T>() on CUDA; same results (to
///        rounding) and storage as the generic team path.
template <class T, class Loc>
inline void qr_factor_regs(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  static_assert(qr_regs_max == 16, "qr_factor_regs dispatches N = 2 .. 16");
  // Nothing is rotated (m <= 1 or n == 0): the factors are A itself.
  if (count <= 0 || qr_stages(m, n) == 0) return;
  detail_require(m <= qr_regs_limit<T>(), std::string(name) + ": m above the register path's limit");
  emgpu::detail::device_guard guard(b.device);
  if (m <= 2) qr_regs_launch<2, T>(b, loc, m, n, lda, count, name);
  else if (m <= 4) qr_regs_launch<4, T>(b, loc, m, n, lda, count, name);
  else if (m <= 8) qr_regs_launch<8, T>(b, loc, m, n, lda, count, name);
  else if constexpr (qr_regs_limit<T>() >= 16)  // not instantiated where never taken
    qr_regs_launch<16, T>(b, loc, m, n, lda, count, name);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
