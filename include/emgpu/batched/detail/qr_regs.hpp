/// @file
/// @brief CUDA fast path of qr_factor for m <= 8 (complex<double>: 5; the
///        warp kernels take 6..8): register-resident Givens QR, a few lanes
///        per matrix, each lane holding a few whole columns.
///
/// Layout: the kernel is compiled for a padded size N in {2, 4, 8} (the next
/// power of two >= m). L lanes hold one matrix (32 / L matrices per warp);
/// lane g of a group holds the C = N / L columns j = c L + g (c = 0 .. C-1,
/// cyclic), each as N values in a register array indexed by compile-time
/// constants only. The matrix sits at the BOTTOM of the array: register r
/// holds row r - off, off = N - m, so a rotation of rows (i-1, i) acts on
/// registers (r-1, r), r = i + off, and the runtime m, n (uniform over the
/// grid) only decide WHETHER it exists.
///
/// Order: the textbook column-by-column, bottom-up sweep. For column j (c
/// static, g a runtime loop, j = c L + g) and r = N-1 down to j+1+off, every
/// lane makes a rotation from its own column c at (r-1, r) with the warp
/// kernels' givens_make_fast_in_place; lane g's made pair (c, s) is
/// broadcast by __shfl_sync; lane g keeps its make's new r-1 entry and the
/// pair's code in the annihilated slot, lanes > g apply the pair to their
/// column c (columns j+1 ..), and every lane applies it to its columns
/// c' > c. Local columns c' < c are finished on every lane, so they are
/// skipped without a test; the tests on r and j are warp-uniform branches.
/// Before session 30 the owner broadcast the code and every lane decoded it
/// (a square root on the chain of every rotation): the same kernel with the
/// made pair broadcast, with the lane counts below, is 0.95-1.61x as fast
/// over the 46 shapes measured (below 1.00 only at three 10-14 µs batches).
///
/// Same rotations as the generic Sameh-Kuck path (qr_core.hpp), entry by
/// entry and in the same order: on rows (r-1, r) of a column l the generic
/// path applies rotation (j, i) at stage (m-1-i) + 2j, and for the two
/// rotations (j, r+1), (j, r) touching row r that order is j-major and
/// bottom-up, the order of the sweep; column l's own rotations come after
/// every j < l in both. The make differs (the fast make returns the made
/// pair, the generic path's the decoded code), so the factors agree to
/// rounding, as the warp kernels' do. The host model of this kernel
/// (tests/batched/test_batched_qr.cpp, no contraction) reproduces a plain
/// column sweep with the same make bit for bit. Padding: registers r < off
/// are never in a pair (a rotation needs i - 1 >= j >= 0), so they stay
/// zero; columns >= n are zeros that receive rotations, never make one, and
/// are neither loaded nor stored. No data-dependent loop: NaN/Inf or zero
/// pairs go through givens_make's cases as on the generic path.
///
/// Lanes per matrix (qr_regs_lanes; H200, 100 000 matrices, ms, scratch
/// harness .gpu/qn8.cu, session 30; old = session 29's kernel with its lane
/// choice; every shape of m = 2..8, n = m and (m + 1) / 2 in
/// docs/results/qr_regs_s30_h200.txt):
///
///                       L = 1    L = 2    L = 4    L = 8    old
///     double     8 x 8  0.1314   0.0871   0.0765   0.0917   0.0951
///                5 x 3  0.0354   0.0311   0.0342   0.0509   0.0345
///                4 x 4  0.0358   0.0227   0.0177   -        0.0258
///     c<float>   8 x 8  0.1248   0.0843   0.0689   0.0761   0.0776
///                6 x 3  0.0402   0.0361   0.0333   0.0516   0.0337
///     float      8 x 8  0.1188   0.0741   0.0351   0.0506   0.0469
///                6 x 3  0.0293   0.0185   0.0245   0.0394   0.0244
///                3 x 2  0.0081   0.0118   0.0117   -        0.0104
///     c<double>  5 x 5  0.0748   0.0555   0.0563   0.0863   0.0598
///                5 x 3  0.0567   0.0457   0.0566   0.0801   0.0487
///                4 x 4  0.0372   0.0246   0.0254   -        0.0275
///
/// Fewer lanes per matrix issue fewer instructions per matrix (every lane
/// runs every make) but hold more registers and a longer chain per lane;
/// one column per lane is best only at 4 x 4. complex<double> with 6..8
/// rows stays on the warp kernels (8 x 8 0.127 ms against 0.147 here).
///
/// Template parameters: N the padded size, L the lanes per matrix, T the
/// scalar type, Loc the batch layout (strided_loc or array_loc). The
/// launcher throws invalid_argument for a batch beyond one grid and
/// device_error when a launch fails.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>

#include "common.hpp"
#include "qr_core.hpp"

#if defined(__CUDACC__)
#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#define EMGPU_QR_REGS_INLINE __forceinline__
#else
#define EMGPU_QR_REGS_INLINE inline
#endif

namespace emgpu::batched::detail {

/// Largest m the register path takes (any type).
constexpr index_t qr_regs_max = 8;

/// Padded size of the register kernel for m rows.
constexpr int qr_regs_size(index_t m) { return m <= 2 ? 2 : m <= 4 ? 4 : 8; }

/// Lanes per matrix for padded size N and n columns (the table above).
template <class T>
constexpr int qr_regs_lanes(int N, index_t n) {
  if (N <= 2) return 1;
  if (N == 4) {
    if (n == 4) return 4;
    return (std::is_same_v<T, float> && n <= 2) ? 1 : 2;
  }
  if constexpr (std::is_same_v<T, complex<double>>) return 2;
  if constexpr (std::is_same_v<T, complex<float>>) return 4;
  return n >= 4 ? 4 : 2;
}

/// Bit L set when qr_regs_lanes<T>(N, n) == L for some n <= N: the kernels
/// that can run (the others are not instantiated).
template <class T, int N>
constexpr unsigned qr_regs_lane_mask() {
  unsigned mask = 0;
  for (index_t n = 1; n <= N; ++n) mask |= 1u << qr_regs_lanes<T>(N, n);
  return mask;
}

// The per-lane pieces are EMGPU_HD so that the host test can run the
// kernel's exact lane logic (lanes as a loop, a shuffle as reading another
// lane's value) against a plain column sweep, bit for bit. They must be
// inlined into the kernel: a register array passed to a real call would live
// in local memory.

/// Lane g's columns c L + g (those < n; base == nullptr: none) into
/// registers off .. N-1, zeros elsewhere.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_load(T (&a)[C][N], const T* base, index_t lda, int L,
                                                int g, int off, int n) {
  EMGPU_UNROLL
  for (int c = 0; c < C; ++c) {
    const int col = c * L + g;
    const T* p = (base != nullptr && col < n) ? base + index_t(col) * lda : nullptr;
    EMGPU_UNROLL
    for (int r = 0; r < N; ++r) a[c][r] = (p != nullptr && r >= off) ? p[r - off] : T(0);
  }
}
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_store(const T (&a)[C][N], T* base, index_t lda, int L,
                                                 int g, int off, int n) {
  EMGPU_UNROLL
  for (int c = 0; c < C; ++c) {
    const int col = c * L + g;
    if (base == nullptr || col >= n) continue;
    T* p = base + index_t(col) * lda;
    EMGPU_UNROLL
    for (int r = 0; r < N; ++r)
      if (r >= off) p[r - off] = a[c][r];
  }
}

/// This lane's make at registers (r-1, r) of its column c
/// (givens_make_fast_in_place): x receives the new r-1 entry, y the pair's
/// code; only the owner lane's are used.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE givens<T> qr_regs_make(const T (&a)[C][N], int c, int r, T& x, T& y) {
  x = a[c][r - 1];
  y = a[c][r];
  return givens_make_fast_in_place(x, y);
}

/// Applies the made pair rot of column c L + g (lane g's) at registers
/// (r-1, r): lane g (this lane is lg) keeps its make's x and code, lanes > g
/// apply rot to their column c, every lane to its columns right of c.
template <int N, int C, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_apply(T (&a)[C][N], int c, int r, int lg, int g, const givens<T>& rot,
                                                 const T& x, const T& y) {
  if (lg == g) {
    a[c][r - 1] = x;
    a[c][r] = y;
  } else if (lg > g) {
    T u = a[c][r - 1], v = a[c][r];
    givens_apply(rot, u, v, false);
    a[c][r - 1] = u;
    a[c][r] = v;
  }
  EMGPU_UNROLL
  for (int c2 = c + 1; c2 < C; ++c2) {
    T u = a[c2][r - 1], v = a[c2][r];
    givens_apply(rot, u, v, false);
    a[c2][r - 1] = u;
    a[c2][r] = v;
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

/// One matrix per L lanes; every lane runs the whole sweep (lanes of matrices
/// k >= count work on zeros and store nothing) so that the full-mask
/// shuffles always find all 32 lanes. The loops' bounds depend on m and n
/// only, which are the same on every lane.
template <int N, int L, class T, class Loc>
__global__ void __launch_bounds__(qr_regs_threads)
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
        T x, y;
        const givens<T> made = qr_regs_make<N, C>(a, c, r, x, y);
        givens<T> rot = made;
        if constexpr (L > 1) {
          rot.c = qr_shfl(made.c, g, L);
          rot.s = qr_shfl(made.s, g, L);
        }
        qr_regs_apply<N, C>(a, c, r, lg, g, rot, x, y);
      }
    }
  }
  qr_regs_store<N, C>(a, base, lda, L, lg, off, n);
}

template <int N, int L, class T, class Loc>
inline void qr_regs_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  static_assert(L >= 1 && L <= N && N % L == 0 && 32 % L == 0, "lanes per matrix");
  const index_t blocks = (count * L + qr_regs_threads - 1) / qr_regs_threads;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_regs_kernel<N, L, T, Loc><<<unsigned(blocks), unsigned(qr_regs_threads), 0, b.stream>>>(
      loc, int(m), int(n), lda, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// qr_regs_launch<N, L> when L is the lane count wanted and a possible one
/// for T and N (qr_regs_lane_mask), else nothing.
template <int N, int L, class T, class Loc>
inline void qr_regs_launch_if(int want, const backend::cuda& b, const Loc& loc, index_t m, index_t n,
                              index_t lda, index_t count, const char* name) {
  if constexpr (((qr_regs_lane_mask<T, N>() >> L) & 1u) != 0)
    if (want == L) qr_regs_launch<N, L, T>(b, loc, m, n, lda, count, name);
}

template <int N, class T, class Loc>
inline void qr_regs_launch_n(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                             index_t count, const char* name) {
  const int want = qr_regs_lanes<T>(N, n);
  qr_regs_launch_if<N, 1, T>(want, b, loc, m, n, lda, count, name);
  qr_regs_launch_if<N, 2, T>(want, b, loc, m, n, lda, count, name);
  qr_regs_launch_if<N, 4, T>(want, b, loc, m, n, lda, count, name);
  qr_regs_launch_if<N, 8, T>(want, b, loc, m, n, lda, count, name);
}

/// @brief qr_factor for m <= qr_regs_max on CUDA; same results (to
///        rounding) and storage as the generic team path.
/// @throws invalid_argument for m above the limit or a batch beyond one
///         grid; device_error when a launch fails.
template <class T, class Loc>
inline void qr_factor_regs(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  // Nothing is rotated (m <= 1 or n == 0): the factors are A itself.
  if (count <= 0 || qr_stages(m, n) == 0) return;
  detail_require(m <= qr_regs_max, std::string(name) + ": m above the register path's limit");
  emgpu::detail::device_guard guard(b.device);
  switch (qr_regs_size(m)) {
    case 2: return qr_regs_launch_n<2, T>(b, loc, m, n, lda, count, name);
    case 4: return qr_regs_launch_n<4, T>(b, loc, m, n, lda, count, name);
    default: return qr_regs_launch_n<8, T>(b, loc, m, n, lda, count, name);
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
