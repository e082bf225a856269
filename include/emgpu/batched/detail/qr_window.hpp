/// @file
/// @brief CUDA batched Givens QR for 65 <= m <= 128 rows with only a window
///        of NW columns in shared memory (left-looking), several matrices
///        per SM.
///
/// Why: the team path (qr_core.hpp) stages the whole matrix in shared memory
/// (or, for complex<double> above ~110 rows, what fits of it), one block of
/// 256 threads per SM at m = 128, and each Sameh-Kuck stage waits out its
/// generate and apply phases on that one matrix. Here a block keeps a
/// window of NW columns (complex<double>, m = 128, NW = 32: 67 KB, three
/// blocks per SM) and runs, for each window, the Sameh-Kuck stages of
/// columns 0..ce-1 restricted to it: a rotation of an earlier column is
/// decoded from its stored scalar in global memory (each thread prefetching
/// its rotation of the next stage), a rotation of a window column is made,
/// encoded and stored as in qr_factor_core, and every rotation is applied
/// to the window columns right of its own. Each window column receives the
/// same rotations in the same order as in qr_factor_core, so the factors
/// (R and the encoded rotations) are those of the team path up to FMA
/// contraction. Rows never move; a window goes back to its own columns.
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

/// Dynamic shared memory of qr_win_kernel<T, NW> for m rows.
template <class T, int NW>
constexpr std::size_t qr_win_bytes(index_t m) {
  return align16(std::size_t(padded_ld<T>(m)) * NW * sizeof(T)) + qr_win_max_rot * sizeof(givens<T>);
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
      int j0 = st - (m - 2);
      if (j0 < 0) j0 = 0;
      int j1 = st / 2;
      if (j1 > jm) j1 = jm;
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
#pragma unroll 4
    for (int e = tid; e < nw * m; e += TPB) {
      const int l = e / m, r = e - l * m;
      w[l * ldw + r] = a[r + index_t(c0 + l) * lda];
    }
    __syncthreads();

#pragma unroll 1
    for (int st = 0; st < ns; ++st) {
      const T z = znext;
      znext = prefetch(st + 1);
      int j0 = st - (m - 2);
      if (j0 < 0) j0 = 0;
      int j1 = st / 2;
      if (j1 > jm) j1 = jm;
      if (j0 > j1) continue;  // uniform (never within [0, ns))
      const int na = j1 - j0 + 1;
      int j, i;
      if (rot_of(st, j, i)) {
        givens<T> g;
        if (j < c0) {
          g = givens_decode(z);
        } else {
          T* cj = w + (j - c0) * ldw;
          T x = cj[i - 1], y = cj[i];
          const T zz = givens_encode(givens_make(x, y));
          g = givens_decode(zz);
          givens_apply(g, x, y, false);
          cj[i - 1] = x;
          cj[i] = zz;
        }
        cache[tid] = g;
      }
      __syncthreads();
      // (rotation q, window column l) items, l fastest: each applies to
      // the columns right of its rotation's own.
#pragma unroll 2
      for (int e = tid; e < na * NW; e += TPB) {
        const int q = e / NW, l = e % NW;
        const int jq = j0 + q;
        if (l < nw && c0 + l > jq) {
          const int iq = m - 1 - (st - 2 * jq);
          T* cl = w + l * ldw;
          givens_apply(cache[q], cl[iq - 1], cl[iq], false);
        }
      }
      __syncthreads();
    }

#pragma unroll 4
    for (int e = tid; e < nw * m; e += TPB) {
      const int l = e / m, r = e - l * m;
      a[r + index_t(c0 + l) * lda] = w[l * ldw + r];
    }
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
  if (count <= 0) return true;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  detail_require(m <= qr_win_max_m && n <= m, std::string(name) + ": qr_win_launch needs n <= m <= 128");
  const std::size_t bytes = qr_win_bytes<T, NW>(m);
  if (bytes > std::size_t(smem_optin(b.device))) return false;
  auto kern = qr_win_kernel<T, NW, TPB, Loc>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(count), unsigned(TPB), bytes, b.stream>>>(loc, int(m), int(n), lda);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
  return true;
}

/// Where qr_factor takes qr_win_kernel: complex<double> (the measured
/// type), 64..128 rows, more than 32 columns. H200, square, ms against the
/// team path: 8.58 / 9.90 at n = 64 (NW = 32, 128 threads; 20 000
/// matrices), 6.90 / 11.30 at 96 and 16.5 / 27.1 at 128 (NW = 32, 256
/// threads; 5 000).
template <class T>
inline constexpr bool qr_win_type = std::is_same_v<T, complex<double>>;
constexpr index_t qr_win_min_m = 64;
constexpr index_t qr_win_min_n = 33;

/// @brief qr_factor through qr_win_kernel where it applies (qr_win_type<T>,
///        the sizes above, a window that fits the device's shared memory:
///        32 columns, else 16).
/// @return false, launching nothing, where it does not.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, class Loc>
inline bool qr_win_factor(const backend::cuda& b, Loc loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  if constexpr (!qr_win_type<T>) {
    return false;
  } else {
    if (m < qr_win_min_m || m > qr_win_max_m || n < qr_win_min_n) return false;
    if (m <= 64)
      return qr_win_launch<T, 32, 128>(b, loc, m, n, lda, count, name) ||
             qr_win_launch<T, 16, 128>(b, loc, m, n, lda, count, name);
    return qr_win_launch<T, 32, 256>(b, loc, m, n, lda, count, name) ||
           qr_win_launch<T, 16, 128>(b, loc, m, n, lda, count, name);
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
