/// @file
/// @brief CUDA batched Givens QR for 40 <= m <= 128 rows with only a window
///        of NW columns in shared memory (left-looking), several matrices
///        per SM: qr_win_kernel, and qr_wla_kernel, which makes the next
///        stage's rotations while the current one is applied.
///
/// Why: the team path (qr_core.hpp) stages the whole matrix in shared memory
/// (or, for complex<double> above ~110 rows, what fits of it), one block of
/// 256 threads per SM at m = 128, and each Sameh-Kuck stage waits out its
/// generate and apply phases on that one matrix. Here a block keeps a
/// window of NW columns (complex<double>, m = 128, NW = 32: 67 KB, three
/// blocks per SM; double and complex<float> where the team path fits one
/// matrix per SM) and runs, for each window, the Sameh-Kuck stages of
/// columns 0..ce-1 restricted to it: a rotation of an earlier column is
/// decoded from its stored scalar in global memory (each thread prefetching
/// its rotation of the next stage), a rotation of a window column is made
/// and its code stored (givens_make_fast_in_place: the made pair is applied,
/// no decode on the make's path), and every rotation is applied to the
/// window columns right of its own. Each window column receives the
/// rotations of qr_factor_core in the same order, so the factors (R and the
/// encoded rotations) equal the team path's to rounding (bit for bit up to
/// FMA contraction before session 28's fast make). Rows never move; a
/// window goes back to its own columns.
/// Template parameters: T the scalar type, NW the window's columns, TPB
/// the threads per block, GW (qr_wla_kernel) the warps that make rotations,
/// Loc the batch layout (strided_loc or array_loc).
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "qr_core.hpp"
#include "smem_limit.hpp"

namespace emgpu::batched::detail {

constexpr index_t qr_win_max_m = 128;
/// At most this many rotations in one stage for m <= qr_win_max_m (m / 2).
constexpr int qr_win_max_rot = 64;

/// Dynamic shared memory of the windowed kernels for m rows: the window
/// and `stages` stages of rotations (qr_win_kernel 1, qr_wla_kernel 2).
template <class T, int NW>
constexpr std::size_t qr_win_bytes(index_t m, int stages) {
  return align16(std::size_t(padded_ld<T>(m)) * NW * sizeof(T)) + stages * qr_win_max_rot * sizeof(givens<T>);
}

/// Launches a windowed kernel `kern` on count matrices with `bytes` of
/// dynamic shared memory and tpb threads per block.
/// @return false, launching nothing, when `bytes` exceeds the device's
///         shared memory per block.
/// @throws invalid_argument for a batch beyond one grid or sizes outside
///         n <= m <= qr_win_max_m; device_error when a CUDA call fails.
template <class Kern, class Loc>
inline bool qr_win_run(const backend::cuda& b, Kern kern, std::size_t bytes, int tpb, Loc loc, index_t m,
                       index_t n, index_t lda, index_t count, const char* name) {
  if (count <= 0) return true;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  detail_require(m <= qr_win_max_m && n <= m, std::string(name) + ": the windowed QR needs n <= m <= 128");
  if (bytes > std::size_t(smem_optin(b.device))) return false;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(count), unsigned(tpb), bytes, b.stream>>>(loc, int(m), int(n), lda);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
  return true;
}

/// Copies window columns c0..c0+nw-1 (m rows) from global memory into the
/// window (ToWindow) or back.
template <bool ToWindow, int TPB, class T>
__device__ __forceinline__ void qr_win_copy(T* w, int ldw, T* a, index_t lda, int c0, int nw, int m) {
#pragma unroll 4
  for (int e = int(threadIdx.x); e < nw * m; e += TPB) {
    const int l = e / m, r = e - l * m;
    if constexpr (ToWindow)
      w[l * ldw + r] = a[r + index_t(c0 + l) * lda];
    else
      a[r + index_t(c0 + l) * lda] = w[l * ldw + r];
  }
}

/// Columns [j0, j1] with a rotation at stage st, jm the last column of the
/// pass (empty when j0 > j1).
__device__ __forceinline__ void qr_win_cols(int st, int m, int jm, int& j0, int& j1) {
  j0 = st - (m - 2);
  if (j0 < 0) j0 = 0;
  j1 = st / 2;
  if (j1 > jm) j1 = jm;
}

/// Makes the rotation of window column cj at rows (i - 1, i): applies it,
/// stores r and the encoded scalar, and returns the made pair, which the
/// window's other columns receive (givens_make_fast_in_place: later windows
/// decode the scalar, equal to rounding).
template <class T>
__device__ __forceinline__ givens<T> qr_win_make(T* cj, int i) {
  T x = cj[i - 1], y = cj[i];
  const givens<T> g = givens_make_fast_in_place(x, y);
  cj[i - 1] = x;
  cj[i] = y;
  return g;
}

/// A thread's NI items q, q + dq, ... of a stage's applies on its window
/// column l: item q applies the stage's rotation q (made in column j0 + q,
/// at rows i0 + 2q - 1 and i0 + 2q; col points at row i0 of column l) when
/// q < na, the column is in the window (on), it lies right of column j0 + q
/// (d = c0 + l - j0 - q = d0 - q > 0) and, in the look-ahead kernel, the
/// item is not the one the maker of column l applies itself (d = 1 and
/// made). All NI are loaded before any arithmetic and stored after it; an
/// item that is off computes on the previous x, y with its loads and stores
/// predicated off. Why: one straight run of code per thread instead of a
/// branch per item and, since the compiler could not tell the window from
/// the rotation cache, the rotation read again after each store (session 29).
template <int NI, class T>
__device__ __forceinline__ void qr_win_apply_items(T* col, const givens<T>* cur, int q, int dq, int na, int d0,
                                                   bool on, bool made, T (&x)[NI], T (&y)[NI]) {
  givens<T> g[NI];
  bool p[NI];
  T* c[NI];
#pragma unroll
  for (int k = 0; k < NI; ++k) {
    const int qk = q + k * dq;
    const int qc = qk < na ? qk : na - 1;  // a rotation of this stage
    const int d = d0 - qk;
    g[k] = cur[qc];
    p[k] = (qk < na) & on & (d > 0) & !((d == 1) & made);
    c[k] = col + 2 * qc;
    if (p[k]) {
      x[k] = c[k][-1];
      y[k] = c[k][0];
    }
  }
#pragma unroll
  for (int k = 0; k < NI; ++k) givens_apply(g[k], x[k], y[k], false);
#pragma unroll
  for (int k = 0; k < NI; ++k)
    if (p[k]) {
      c[k][-1] = x[k];
      c[k][0] = y[k];
    }
}

template <class T, int NW, int TPB, class Loc>
__global__ void __launch_bounds__(TPB) qr_win_kernel(Loc loc, int m, int n, index_t lda) {
  static_assert(TPB >= qr_win_max_rot);
  extern __shared__ __align__(16) unsigned char qr_win_raw[];
  const int ldw = int(padded_ld<T>(m));
  T* const w = reinterpret_cast<T*>(qr_win_raw);
  givens<T>* const cache =
      reinterpret_cast<givens<T>*>(qr_win_raw + align16(std::size_t(ldw) * NW * sizeof(T)));
  const int tid = int(threadIdx.x);
  T* const a = loc(index_t(blockIdx.x));
  const int jmax = int(qr_jmax(m, n));

#pragma unroll 1
  for (int c0 = 0; c0 < n; c0 += NW) {
    const int ce = c0 + NW < n ? c0 + NW : n, nw = ce - c0;
    const int jm = ce - 1 < jmax ? ce - 1 : jmax;  // last column with a rotation here
    const int ns = jm < 0 ? 0 : m - 1 + jm;
    // The rotation this thread makes or decodes at stage st (thread q: the
    // stage's q-th column); earlier columns' scalars one stage ahead.
    const auto rot_of = [&](int st, int& j, int& i) {
      int j0, j1;
      qr_win_cols(st, m, jm, j0, j1);
      j = j0 + tid;
      i = m - 1 - (st - 2 * j);
      return j <= j1;
    };
    const auto prefetch = [&](int st) {
      int j, i;
      T z = T(0);
      if (st < ns && rot_of(st, j, i) && j < c0) z = a[i + index_t(j) * lda];
      return z;
    };
    T znext = prefetch(0);
    qr_win_copy<true, TPB>(w, ldw, a, lda, c0, nw, m);
    __syncthreads();
    T x[2] = {T(0), T(0)}, y[2] = {T(0), T(0)};  // defined values for items that are off

#pragma unroll 1
    for (int st = 0; st < ns; ++st) {
      const T z = znext;
      znext = prefetch(st + 1);
      int j0, j1;
      qr_win_cols(st, m, jm, j0, j1);
      if (j0 > j1) continue;  // uniform (never within [0, ns))
      const int na = j1 - j0 + 1;
      int j, i;
      // The code of a made rotation is stored with it here: deferring it past
      // the barrier, as the warp kernels do, made n = 64 1.3 % slower (H200,
      // session 30).
      if (rot_of(st, j, i)) {
        cache[tid] = j < c0 ? givens_decode(z) : qr_win_make(w + (j - c0) * ldw, i);
      }
      __syncthreads();
      // (rotation q, window column l) items, l fastest: each applies to
      // the columns right of its rotation's own.
      {
        // items (rotation q, window column l): a thread keeps its l, TPB / NW rotations apart
        static_assert(TPB % NW == 0);
        constexpr int dq = TPB / NW;
        const int l = tid % NW;
        T* const col = w + l * ldw + (m - 1 - (st - 2 * j0));
#pragma unroll 1
        for (int q = tid / NW; q < na; q += 2 * dq)
          qr_win_apply_items<2>(col, cache, q, dq, na, c0 + l - j0, l < nw, false, x, y);
      }
      __syncthreads();
    }

    qr_win_copy<false, TPB>(w, ldw, a, lda, c0, nw, m);
    __syncthreads();  // stores visible to the next window's decodes; window reused
  }
}

/// @brief Factors count m x n matrices (n <= m <= qr_win_max_m) with
///        qr_win_kernel<T, NW, TPB>; same contract as qr_factor.
/// @return false, launching nothing, when the window does not fit the
///         device's shared memory per block.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, int NW, int TPB, class Loc>
inline bool qr_win_launch(const backend::cuda& b, Loc loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  return qr_win_run(b, qr_win_kernel<T, NW, TPB, Loc>, qr_win_bytes<T, NW>(m, 1), TPB, loc, m, n, lda, count, name);
}

/// qr_win_kernel with look-ahead: the first GW warps make (window columns)
/// or decode (earlier columns) the rotations of stage st + 1 while the
/// other warps apply those of stage st; one barrier per stage instead of
/// two. Why: in qr_win_kernel six of the eight warps sat at the barrier
/// while two made the stage's rotations (ncu, H100, m = n = 128: 30 % of
/// the warp samples), since each rotation is a chain of a reciprocal square
/// root or square root per make, encode and decode. Stage st + 1's rotation
/// of window column j needs column j after stage st, i.e. after stage st's
/// rotation of column j - 1 (rows i - 1, i - 2 of the new pair): its maker
/// applies that one item itself first and the appliers skip it; every
/// other item of stage st touches rows disjoint from the new pair. Each
/// entry receives the same rotations in the same order as in qr_win_kernel
/// (rotations of one stage touch disjoint rows), so the factors agree to
/// rounding (FMA contraction may differ between the two kernels' code).
template <class T, int NW, int TPB, int GW, class Loc>
__global__ void __launch_bounds__(TPB) qr_wla_kernel(Loc loc, int m, int n, index_t lda) {
  constexpr int GT = 32 * GW;                            // makers
  constexpr int NZ = (qr_win_max_rot + GT - 1) / GT;      // rotations per maker
  static_assert(TPB > GT && GT > 0);
  extern __shared__ __align__(16) unsigned char qr_wla_raw[];
  const int ldw = int(padded_ld<T>(m));
  T* const w = reinterpret_cast<T*>(qr_wla_raw);
  givens<T>* const cache =
      reinterpret_cast<givens<T>*>(qr_wla_raw + align16(std::size_t(ldw) * NW * sizeof(T)));
  const int tid = int(threadIdx.x);
  T* const a = loc(index_t(blockIdx.x));
  const int jmax = int(qr_jmax(m, n));

#pragma unroll 1
  for (int c0 = 0; c0 < n; c0 += NW) {
    const int ce = c0 + NW < n ? c0 + NW : n, nw = ce - c0;
    const int jm = ce - 1 < jmax ? ce - 1 : jmax;
    const int ns = jm < 0 ? 0 : m - 1 + jm;
    const auto cols = [&](int st, int& j0, int& j1) { qr_win_cols(st, m, jm, j0, j1); };
    struct zset {
      T z[NZ];
    };
    // Stored scalars of the earlier columns' rotations of stage st (maker
    // tid's slots tid, tid + GT, ...), loaded two stages ahead of use.
    const auto prefetch = [&](int st) {
      zset r;
#pragma unroll
      for (int u = 0; u < NZ; ++u) {
        r.z[u] = T(0);
        if (st < ns && tid < GT) {
          int j0, j1;
          cols(st, j0, j1);
          const int j = j0 + tid + u * GT;
          if (j <= j1 && j < c0) r.z[u] = a[(m - 1 - (st - 2 * j)) + index_t(j) * lda];
        }
      }
      return r;
    };
    const auto make_one = [&](int s, T z, int slot) {
      int j0, j1;
      cols(s, j0, j1);
      const int j = j0 + slot;
      if (j > j1) return;
      givens<T> g;
      if (j < c0) {
        g = givens_decode(z);
      } else {
        T* cj = w + (j - c0) * ldw;
        if (s > 0) {  // stage s - 1's rotation of column j - 1, kept from the appliers
          int p0, p1;
          cols(s - 1, p0, p1);
          if (j - 1 >= p0 && j - 1 <= p1) {
            const int ip = m - 1 - (s - 1 - 2 * (j - 1));
            givens_apply(cache[((s - 1) & 1) * qr_win_max_rot + (j - 1 - p0)], cj[ip - 1], cj[ip], false);
          }
        }
        g = qr_win_make(cj, m - 1 - (s - 2 * j));
      }
      cache[(s & 1) * qr_win_max_rot + slot] = g;
    };
    const auto make = [&](int s, const zset& z) {
      if (s >= ns || tid >= GT) return;
#pragma unroll
      for (int u = 0; u < NZ; ++u) make_one(s, z.z[u], tid + u * GT);
    };

    zset zc = prefetch(0);
    qr_win_copy<true, TPB>(w, ldw, a, lda, c0, nw, m);
    __syncthreads();
    zset zn = prefetch(1);
    make(0, zc);
    zc = zn;
    __syncthreads();
    T x[2] = {T(0), T(0)}, y[2] = {T(0), T(0)};  // defined values for items that are off

#pragma unroll 1
    for (int st = 0; st < ns; ++st) {
      zn = prefetch(st + 2);
      make(st + 1, zc);
      zc = zn;
      int j0, j1, k0, k1;
      cols(st, j0, j1);
      cols(st + 1, k0, k1);
      if (j0 <= j1) {
        const int na = j1 - j0 + 1;
        const givens<T>* cur = cache + (st & 1) * qr_win_max_rot;
        // (rotation q, window column l) items on the appliers: a thread
        // keeps its l, (TPB - GT) / NW rotations apart. Window columns
        // k0 .. k1 make a rotation at stage st + 1, and their makers apply
        // stage st's rotation of the column left of theirs (made).
        static_assert((TPB - GT) % NW == 0);
        constexpr int dq = (TPB - GT) / NW;
        if (tid >= GT) {
          const int l = (tid - GT) % NW, jl = c0 + l;
          const bool made = st + 1 < ns && jl >= k0 && jl <= k1;
          T* const col = w + l * ldw + (m - 1 - (st - 2 * j0));
#pragma unroll 1
          for (int q = (tid - GT) / NW; q < na; q += 2 * dq)
            qr_win_apply_items<2>(col, cur, q, dq, na, jl - j0, l < nw, made, x, y);
        }
      }
      __syncthreads();
    }

    qr_win_copy<false, TPB>(w, ldw, a, lda, c0, nw, m);
    __syncthreads();  // stores visible to the next window's decodes; window reused
  }
}

/// @brief Factors count m x n matrices (n <= m <= qr_win_max_m) with
///        qr_wla_kernel<T, NW, TPB, GW>; same contract as qr_factor.
/// @return false, launching nothing, when the window does not fit the
///         device's shared memory per block.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, int NW, int TPB, int GW, class Loc>
inline bool qr_wla_launch(const backend::cuda& b, Loc loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  return qr_win_run(b, qr_wla_kernel<T, NW, TPB, GW, Loc>, qr_win_bytes<T, NW>(m, 2), TPB, loc, m, n, lda, count,
                    name);
}

/// Where qr_factor takes the windowed kernels: complex<double> (the
/// measured type) with 40..128 rows (qr_win_wanted_z below), double and
/// complex<float> with 64..128 rows and 64 columns or more, or more than
/// 32 where the team path fits one block per SM. H100, square, ms
/// (session 29, scratch harness .gpu/qn3.cu, qn4.cu; 20 000 matrices up to
/// 64 rows, else 5 000): qr_win_kernel with 128 threads below 88 rows (n =
/// 64 / 72 / 80: 6.69 / 3.34 / 3.86 against 7.92 / 3.44 / 3.95 for
/// qr_wla_kernel with 192 threads; a 64-column window, one pass at 64 rows:
/// 7.24 / 4.13 with 128 threads, 7.11 / 4.62 look-ahead), the look-ahead
/// kernel with two maker warps and 192 threads from 88 (n = 88 / 96 / 100
/// / 128: 4.52 / 5.16 / 7.41 / 11.78 against 4.93 / 5.65 / 8.18 / 13.57
/// for qr_win_kernel and, at 128, 12.10 with 256 threads).
/// double and complex<float> take qr_win_kernel (128 threads) where the
/// team path's block leaves room for only one per SM (from 120 x 120 on
/// Hopper): n = 128 6.69 / 6.83 ms (256 threads 7.57 / 7.39; team path
/// 14.45 / 13.87 in session 19), n = 120 5.83 / 6.00; and since session 29
/// from 64 rows and 64 columns (qr_win_factor), where the team path had
/// still been faster at 112 x 112 in session 19 (6.77 against 6.96, 6.62
/// against 7.23, before session 29's apply). The look-ahead kernel did not
/// help them, nor any windowed kernel float.
template <class T>
inline constexpr bool qr_win_type = std::is_same_v<T, complex<double>>;
template <class T>
inline constexpr bool qr_win_type8 = std::is_same_v<T, double> || std::is_same_v<T, complex<float>>;
constexpr index_t qr_win_min_m = 40;   // complex<double>
constexpr index_t qr_win_min_m8 = 64;  // double, complex<float>
constexpr index_t qr_wla_min_m = 88;

/// Whether complex<double> m x n takes the windowed kernels (session 29,
/// H100, .gpu/qn6.cu against the team path): from 64 rows always; from 40
/// rows when the last 32-column window holds 16 columns or more, one pass
/// included (40 x 20 1.18 ms against 1.57 on the team path, 48 x 48 3.85
/// against 4.34, 56 x 56 5.09 against 6.43, 63 x 32 2.69 against 3.67),
/// while a thin last window replays every stage for a few columns (team
/// path faster at 34 x 34 1.93 against 2.21, 40 x 40 2.51 against 2.83,
/// 56 x 33 3.13 against 3.91).
inline bool qr_win_wanted_z(index_t m, index_t n) {
  if (m < qr_win_min_m || m > qr_win_max_m) return false;
  return m >= 64 || (n - 1) % 32 + 1 >= 16;
}

/// @brief qr_factor through the windowed kernels where they apply (the
///        types and sizes above, a window that fits the device's shared
///        memory: 32 columns, else 16).
/// @return false, launching nothing, where they do not.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, class Loc>
inline bool qr_win_factor(const backend::cuda& b, Loc loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  if constexpr (qr_win_type<T>) {
    if (!qr_win_wanted_z(m, n)) return false;
    // up to 16 columns one 16-column window (64 x 16: 1.13 ms against 1.76
    // for a 32-column one and 2.10 on the team path)
    if (n <= 16)
      return qr_win_launch<T, 16, 64>(b, loc, m, n, lda, count, name);
    if (m < qr_wla_min_m)
      return qr_win_launch<T, 32, 128>(b, loc, m, n, lda, count, name) ||
             qr_win_launch<T, 16, 128>(b, loc, m, n, lda, count, name);
    return qr_wla_launch<T, 32, 192, 2>(b, loc, m, n, lda, count, name) ||
           qr_win_launch<T, 16, 128>(b, loc, m, n, lda, count, name);
  } else if constexpr (qr_win_type8<T>) {
    if (m < qr_win_min_m8 || m > qr_win_max_m || n < 33) return false;
    // From 64 columns always: faster than the team path since session 29's
    // apply (H100: 100 x 100 4.18 / 4.45 ms against 5.57 / 5.38, double /
    // complex<float>; 63 x 63 3.84 / 4.06 against 4.83 / 4.76). Below, only
    // where the team path's block (the staged matrix, the rotation cache
    // and the 1 KB the driver reserves per block) leaves room for one per
    // SM; an SM has 1 KB more than the per-block limit (Hopper: 228 against
    // 227 KB).
    if (n < 64) {
      const std::size_t team =
          std::size_t(padded_ld<T>(m)) * std::size_t(n) * sizeof(T) + qr_cache_bytes<T>(n) + 1024;
      emgpu::detail::device_guard guard(b.device);
      if (2 * team <= std::size_t(smem_optin(b.device)) + 1024) return false;  // two team blocks per SM
    }
    return qr_win_launch<T, 32, 128>(b, loc, m, n, lda, count, name) ||
           qr_win_launch<T, 16, 128>(b, loc, m, n, lda, count, name);
  } else {
    return false;
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
