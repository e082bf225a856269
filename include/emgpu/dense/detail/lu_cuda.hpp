/// @file
/// @brief CUDA LU: blocked right-looking factorisation. Each tall panel
///        (rows [c, n), nb columns) is factored in place by cuSOLVER's getrf
///        on that sub-matrix (its pivots, local to the panel, become ours),
///        row exchanges reach the other columns through gather kernels, the
///        trailing update is cuBLAS GEMM (FP64 tensor cores for ZGEMM on
///        Hopper) and panel k+1 is factored on a second stream while the
///        update of step k runs (look-ahead); triangular solves, inversion and
///        the condition estimate's helpers.
/// The first version factored the panel with a cooperative kernel, one grid
/// barrier per column (the "global barrier" of the original GPU Crout
/// scheme): n barriers in sequence capped it at about a third of cuSOLVER's
/// speed on an H200, hence the library panel.
/// Compiled only by nvcc; every CUDA/cuBLAS/cuSOLVER status becomes
/// emgpu::device_error.
#pragma once

#include "../../core/config.hpp"

#if defined(__CUDACC__)

#include <algorithm>
#include <map>
#include <string>
#include <type_traits>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include "../../backend/algorithms.hpp"
#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "../../backend/cuda_libraries_check.hpp"
#include "../../core/matrix_view.hpp"
#include "lu_common.hpp"

namespace emgpu::dense::detail {

// ---- cuBLAS plumbing ------------------------------------------------------

/// A library handle per host thread, device and slot, made by create() on
/// first use and intentionally never destroyed: a handle destroyed from a
/// thread_local destructor can run after the CUDA runtime has shut down.
template <class Handle, class Create>
inline Handle cached_handle(int device, int slot, Create create) {
  thread_local std::map<std::pair<int, int>, Handle> cache;
  const auto key = std::make_pair(device, slot);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const Handle h = create();
  cache.emplace(key, h);
  return h;
}

/// cuBLAS handles: slot 0 for the caller's stream, slot 1 for the look-ahead
/// stream, so their workspaces never mix.
inline cublasHandle_t cublas_handle(int device, int slot) {
  return cached_handle<cublasHandle_t>(device, slot, [] {
    cublasHandle_t h = nullptr;
    EMGPU_CUBLAS_CHECK(cublasCreate(&h));
    return h;
  });
}

template <class T>
inline auto cb_scalar(T x) {
  if constexpr (std::is_same_v<T, complexd>) return make_cuDoubleComplex(x.real(), x.imag());
  else if constexpr (std::is_same_v<T, complexf>) return make_cuComplex(x.real(), x.imag());
  else return x;
}
template <class T>
inline auto cb_ptr(T* p) {
  using U = std::remove_const_t<T>;
  if constexpr (std::is_same_v<U, complexd>) {
    if constexpr (std::is_const_v<T>) return reinterpret_cast<const cuDoubleComplex*>(p);
    else return reinterpret_cast<cuDoubleComplex*>(p);
  } else if constexpr (std::is_same_v<U, complexf>) {
    if constexpr (std::is_const_v<T>) return reinterpret_cast<const cuComplex*>(p);
    else return reinterpret_cast<cuComplex*>(p);
  } else {
    return p;
  }
}

/// C = alpha A B + beta C (no transposes).
template <class T>
inline void gemm_nn(cublasHandle_t h, index_t m, index_t n, index_t k, T alpha, const T* a,
                    index_t lda, const T* b, index_t ldb, T beta, T* c, index_t ldc) {
  if (m <= 0 || n <= 0) return;
  const auto al = cb_scalar(alpha), be = cb_scalar(beta);
  const auto N = CUBLAS_OP_N;
  const int im = int(m), in = int(n), ik = int(k), ia = int(lda), ib = int(ldb), ic = int(ldc);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUBLAS_CHECK(cublasZgemm(h, N, N, im, in, ik, &al, cb_ptr(a), ia, cb_ptr(b), ib, &be, cb_ptr(c), ic));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUBLAS_CHECK(cublasCgemm(h, N, N, im, in, ik, &al, cb_ptr(a), ia, cb_ptr(b), ib, &be, cb_ptr(c), ic));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUBLAS_CHECK(cublasDgemm(h, N, N, im, in, ik, &al, a, ia, b, ib, &be, c, ic));
  else
    EMGPU_CUBLAS_CHECK(cublasSgemm(h, N, N, im, in, ik, &al, a, ia, b, ib, &be, c, ic));
}

/// Triangular solve with many right-hand sides, in place in B.
template <class T>
inline void trsm(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                 cublasOperation_t op, cublasDiagType_t diag, index_t m, index_t n, T alpha,
                 const T* a, index_t lda, T* b, index_t ldb) {
  if (m <= 0 || n <= 0) return;
  const auto al = cb_scalar(alpha);
  const int im = int(m), in = int(n), ia = int(lda), ib = int(ldb);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUBLAS_CHECK(cublasZtrsm(h, side, uplo, op, diag, im, in, &al, cb_ptr(a), ia, cb_ptr(b), ib));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUBLAS_CHECK(cublasCtrsm(h, side, uplo, op, diag, im, in, &al, cb_ptr(a), ia, cb_ptr(b), ib));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUBLAS_CHECK(cublasDtrsm(h, side, uplo, op, diag, im, in, &al, a, ia, b, ib));
  else
    EMGPU_CUBLAS_CHECK(cublasStrsm(h, side, uplo, op, diag, im, in, &al, a, ia, b, ib));
}

/// Triangular matrix product, in place (cuBLAS allows C == B).
template <class T>
inline void trmm_inplace(cublasHandle_t h, cublasSideMode_t side, cublasFillMode_t uplo,
                         cublasDiagType_t diag, index_t m, index_t n, T alpha, const T* a,
                         index_t lda, T* b, index_t ldb) {
  if (m <= 0 || n <= 0) return;
  const auto al = cb_scalar(alpha);
  const auto N = CUBLAS_OP_N;
  const int im = int(m), in = int(n), ia = int(lda), ib = int(ldb);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUBLAS_CHECK(cublasZtrmm(h, side, uplo, N, diag, im, in, &al, cb_ptr(a), ia, cb_ptr(b), ib, cb_ptr(b), ib));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUBLAS_CHECK(cublasCtrmm(h, side, uplo, N, diag, im, in, &al, cb_ptr(a), ia, cb_ptr(b), ib, cb_ptr(b), ib));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUBLAS_CHECK(cublasDtrmm(h, side, uplo, N, diag, im, in, &al, a, ia, b, ib, b, ib));
  else
    EMGPU_CUBLAS_CHECK(cublasStrmm(h, side, uplo, N, diag, im, in, &al, a, ia, b, ib, b, ib));
}

/// Triangular solve with one right-hand side (x contiguous).
template <class T>
inline void trsv(cublasHandle_t h, cublasFillMode_t uplo, cublasOperation_t op,
                 cublasDiagType_t diag, index_t n, const T* a, index_t lda, T* x) {
  if (n <= 0) return;
  const int in = int(n), ia = int(lda);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUBLAS_CHECK(cublasZtrsv(h, uplo, op, diag, in, cb_ptr(a), ia, cb_ptr(x), 1));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUBLAS_CHECK(cublasCtrsv(h, uplo, op, diag, in, cb_ptr(a), ia, cb_ptr(x), 1));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUBLAS_CHECK(cublasDtrsv(h, uplo, op, diag, in, a, ia, x, 1));
  else
    EMGPU_CUBLAS_CHECK(cublasStrsv(h, uplo, op, diag, in, a, ia, x, 1));
}

// ---- RAII for stream-ordered buffers, streams and events -------------------

/// Device buffer from the stream-ordered allocator (cheap to get and free,
/// no device-wide synchronisation); freed in order on the same stream.
template <class T>
class stream_buffer {
 public:
  stream_buffer(index_t n, cudaStream_t s) : s_(s) {
    if (n > 0)
      EMGPU_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&p_), sizeof(T) * std::size_t(n), s));
  }
  ~stream_buffer() {
    if (p_) (void)cudaFreeAsync(p_, s_);
  }
  stream_buffer(const stream_buffer&) = delete;
  stream_buffer& operator=(const stream_buffer&) = delete;
  T* get() const { return p_; }

 private:
  T* p_ = nullptr;
  cudaStream_t s_;
};

/// The look-ahead stream (highest priority, so panel blocks are scheduled
/// ahead of queued GEMM blocks) and the two events that order it with the
/// caller's stream. The destructor waits for the side stream: buffers it
/// uses are freed afterwards, on the caller's stream.
class lookahead_streams {
 public:
  explicit lookahead_streams(bool enabled) {
    if (!enabled) return;
    int lo = 0, hi = 0;
    EMGPU_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    EMGPU_CUDA_CHECK(cudaStreamCreateWithPriority(&side, cudaStreamNonBlocking, hi));
    EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&panel_done, cudaEventDisableTiming));
    EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&update_done, cudaEventDisableTiming));
  }
  ~lookahead_streams() {
    if (side) {
      (void)cudaStreamSynchronize(side);
      (void)cudaStreamDestroy(side);
    }
    if (panel_done) (void)cudaEventDestroy(panel_done);
    if (update_done) (void)cudaEventDestroy(update_done);
  }
  lookahead_streams(const lookahead_streams&) = delete;
  lookahead_streams& operator=(const lookahead_streams&) = delete;
  cudaStream_t side = nullptr;
  cudaEvent_t panel_done = nullptr;
  cudaEvent_t update_done = nullptr;
};

// ---- device helpers -------------------------------------------------------

/// Widest panel the pivot kernels handle (their shared-memory tables).
inline constexpr index_t cuda_max_block = 512;
inline constexpr int scan_threads = 256;

/// First column of a holding a non-finite value, combined into *info by
/// atomicMin (-1, the largest unsigned value, while no column failed). One
/// block per column, coalesced, whole columns; O(n^2) reads, negligible next
/// to the O(n^3) factorisation. Run on the input (a NaN or Inf of A in column
/// j never reaches the columns before j: LU only reads earlier columns, so j
/// is the first failing column unless an earlier pivot is exactly zero) and
/// on the factors (non-finite values the elimination created by overflow).
template <class T>
__global__ void __launch_bounds__(scan_threads) nonfinite_column_kernel(const T* a, index_t ld,
                                                                        index_t n, index_t* info) {
  __shared__ int any;
  for (index_t j = blockIdx.x; j < n; j += gridDim.x) {
    if (threadIdx.x == 0) any = 0;
    __syncthreads();
    const T* const col = a + j * ld;
    bool b = false;
    for (index_t i = threadIdx.x; i < n; i += scan_threads) b = b || !finite_scalar(col[i]);
    if (b) any = 1;  // benign race: every writer stores the same value
    __syncthreads();
    if (threadIdx.x == 0 && any)
      atomicMin(reinterpret_cast<unsigned long long*>(info), static_cast<unsigned long long>(j));
    __syncthreads();
  }
}

/// After cuSOLVER's getrf of the panel [c, c+w) (rows [c, n)): converts its
/// one-based, panel-local 32-bit pivots into ours (zero-based, global,
/// index_t) and records an exact zero pivot (cuSOLVER's dev_info > 0; it then
/// continues without dividing, so that cannot create non-finite values) in
/// *info unless an earlier panel already failed. Non-finite values are found
/// once at the end (nonfinite_column_kernel).
template <int Unused = 0>  // a template: header-only kernels need vague linkage
__global__ void __launch_bounds__(scan_threads) panel_finish_kernel(const int* ipiv32,
                                                                    const int* dev_info, index_t c,
                                                                    index_t w, index_t* ipiv,
                                                                    index_t* info) {
  for (index_t jj = threadIdx.x; jj < w; jj += scan_threads) ipiv[c + jj] = c + index_t(ipiv32[jj]) - 1;
  if (threadIdx.x == 0) {
    const int z = *dev_info;
    if (z > 0 && z <= int(w) && *info < 0) *info = c + z - 1;
  }
}
/// Turns the sequential exchanges ipiv[c..c+w) into one gather: new row
/// dst[e] = old row src[e], e < *count (rows that do not move are dropped).
/// One warp; rows beyond the block are looked up with a warp-wide search.
template <int Unused = 0>  // a template: header-only kernels need vague linkage
__global__ void __launch_bounds__(32) make_perm_kernel(const index_t* ipiv, index_t c, index_t w,
                                                       index_t* dst, index_t* src, index_t* count,
                                                       const index_t* info) {
  __shared__ index_t inner[cuda_max_block];
  __shared__ index_t outer_pos[cuda_max_block];
  __shared__ index_t outer_val[cuda_max_block];
  const int lane = int(threadIdx.x);
  if (*info >= 0) {  // pivots past a failure are not set: move nothing
    if (lane == 0) *count = 0;
    return;
  }
  __shared__ index_t piv[cuda_max_block];
  for (index_t i = lane; i < w; i += 32) {
    inner[i] = c + i;
    piv[i] = ipiv[c + i];  // staged once: the loop below is latency-bound otherwise
  }
  __syncwarp();
  index_t nout = 0;
  for (index_t s = 0; s < w; ++s) {
    const index_t q = piv[s];
    if (q < c + w) {
      if (lane == 0) {
        const index_t t = inner[s];
        inner[s] = inner[q - c];
        inner[q - c] = t;
      }
    } else {
      index_t found = -1;
      for (index_t k = lane; k < nout; k += 32)
        if (outer_pos[k] == q) found = k;
      const unsigned m = __ballot_sync(0xffffffffu, found >= 0);
      index_t slot;
      if (m) {
        slot = __shfl_sync(0xffffffffu, found, __ffs(int(m)) - 1);
      } else {
        slot = nout++;
        if (lane == 0) {
          outer_pos[slot] = q;
          outer_val[slot] = q;
        }
      }
      __syncwarp();
      if (lane == 0) {
        const index_t t = inner[s];
        inner[s] = outer_val[slot];
        outer_val[slot] = t;
      }
    }
    __syncwarp();
  }
  if (lane == 0) {
    index_t k = 0;
    for (index_t i = 0; i < w; ++i)
      if (inner[i] != c + i) {
        dst[k] = c + i;
        src[k] = inner[i];
        ++k;
      }
    for (index_t o = 0; o < nout; ++o)
      if (outer_val[o] != outer_pos[o]) {
        dst[k] = outer_pos[o];
        src[k] = outer_val[o];
        ++k;
      }
    *count = k;
  }
}

inline constexpr int perm_threads = 256;

/// Applies a gather (dst, src, *count <= 2 * cuda_max_block) to columns
/// [j0, j0 + ncols): every value of a column is read before any is written.
template <class T>
__global__ void __launch_bounds__(perm_threads) apply_perm_kernel(T* a, index_t ld, index_t j0,
                                                                  index_t ncols, const index_t* dst,
                                                                  const index_t* src,
                                                                  const index_t* count) {
  constexpr int per = int(2 * cuda_max_block / perm_threads);
  const index_t cnt = *count;
  if (cnt == 0) return;
  for (index_t col = blockIdx.x; col < ncols; col += gridDim.x) {
    T* const cp = a + (j0 + col) * ld;
    T v[per];
#pragma unroll
    for (int r = 0; r < per; ++r) {
      const index_t e = threadIdx.x + r * perm_threads;
      if (e < cnt) v[r] = cp[src[e]];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < per; ++r) {
      const index_t e = threadIdx.x + r * perm_threads;
      if (e < cnt) cp[dst[e]] = v[r];
    }
    // No second barrier: the next iteration touches another column.
  }
}

template <class T>
inline void launch_apply_perm(T* a, index_t ld, index_t j0, index_t j1, const index_t* dst,
                              const index_t* src, const index_t* count, cudaStream_t s) {
  if (j1 <= j0) return;
  const index_t ncols = j1 - j0;
  const unsigned grid = unsigned(ncols < 8192 ? ncols : 8192);
  apply_perm_kernel<T><<<grid, perm_threads, 0, s>>>(a, ld, j0, ncols, dst, src, count);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense apply_perm_kernel");
}

/// perm[i] = the original row that ends up at position i after the exchanges
/// ipiv[0..n) (so (P B)(i, :) = B(perm[i], :)). The exchanges are sequential
/// by nature: one thread applies them in shared memory, with the pivots
/// staged in chunks by the whole block.
template <int Unused = 0>
__global__ void __launch_bounds__(1024) ipiv_to_perm_kernel(const index_t* ipiv, index_t n,
                                                            index_t* perm, int in_shared) {
  extern __shared__ int sh[];
  constexpr int chunk = 1024;
  int* piv = sh;          // [chunk]
  int* pm = sh + chunk;   // [n] when in_shared
  if (in_shared) {
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) pm[i] = int(i);
  } else {
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) perm[i] = i;
  }
  __syncthreads();
  for (index_t s0 = 0; s0 < n; s0 += chunk) {
    const index_t len = n - s0 < chunk ? n - s0 : chunk;
    for (index_t i = threadIdx.x; i < len; i += blockDim.x) piv[i] = int(ipiv[s0 + i]);
    __syncthreads();
    if (threadIdx.x == 0) {
      for (index_t i = 0; i < len; ++i) {
        const index_t s = s0 + i, q = piv[i];
        if (q == s) continue;
        if (in_shared) {
          const int t = pm[s];
          pm[s] = pm[q];
          pm[q] = t;
        } else {
          const index_t t = perm[s];
          perm[s] = perm[q];
          perm[q] = t;
        }
      }
    }
    __syncthreads();
  }
  if (in_shared)
    for (index_t i = threadIdx.x; i < n; i += blockDim.x) perm[i] = pm[i];
}

inline void launch_ipiv_to_perm(const index_t* ipiv, index_t n, index_t* perm, int device,
                                cudaStream_t s) {
  int max_optin = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&max_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const std::size_t need = sizeof(int) * std::size_t(1024 + n);
  const bool in_shared = n < (index_t(1) << 31) && need <= std::size_t(max_optin);
  const std::size_t shmem = in_shared ? need : sizeof(int) * 1024;
  if (shmem > 48 * 1024)
    EMGPU_CUDA_CHECK(cudaFuncSetAttribute(ipiv_to_perm_kernel<0>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, int(shmem)));
  ipiv_to_perm_kernel<0><<<1, 1024, shmem, s>>>(ipiv, n, perm, in_shared ? 1 : 0);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense ipiv_to_perm_kernel");
}

template <class T>
struct gather_rows_fn {  // w(i, r) = b(perm[i], r)
  T* w;
  index_t ldw;
  const T* b;
  index_t ldb;
  const index_t* perm;
  EMGPU_HD void operator()(index_t i, index_t r) const { w[i + r * ldw] = b[perm[i] + r * ldb]; }
};
template <class T>
struct scatter_rows_fn {  // b(perm[i], r) = w(i, r)
  const T* w;
  index_t ldw;
  T* b;
  index_t ldb;
  const index_t* perm;
  EMGPU_HD void operator()(index_t i, index_t r) const { b[perm[i] + r * ldb] = w[i + r * ldw]; }
};

/// Unblocked inverse of an upper triangle (m <= blockDim.x), one block.
template <class T>
__global__ void trti2_upper_kernel(T* d, index_t m, index_t ld) {
  const index_t i = threadIdx.x;
  for (index_t j = 0; j < m; ++j) {
    const T djj = reciprocal(d[j + j * ld]);
    T s(0);
    if (i < j)
      for (index_t k = i; k < j; ++k) s += d[i + k * ld] * d[k + j * ld];
    __syncthreads();
    if (i < j) d[i + j * ld] = -(s * djj);
    if (i == j) d[j + j * ld] = djj;
    __syncthreads();
  }
}

/// Unblocked inverse of a unit lower triangle (m <= blockDim.x), one block.
template <class T>
__global__ void trti2_unit_lower_kernel(T* d, index_t m, index_t ld) {
  const index_t i = threadIdx.x;
  for (index_t j = m - 2; j >= 0; --j) {
    T s(0);
    if (i > j && i < m) {
      s = d[i + j * ld];
      for (index_t k = j + 1; k < i; ++k) s += d[i + k * ld] * d[k + j * ld];
    }
    __syncthreads();
    if (i > j && i < m) d[i + j * ld] = -s;
    __syncthreads();
  }
}

/// First column with a zero or non-finite diagonal entry (atomicMin into *first).
template <class T>
struct diag_check_fn {
  const T* a;
  index_t ld;
  unsigned long long* first;
  EMGPU_DEVICE void check(index_t j) const {
    const T d = a[j + j * ld];
    if (!(abs1(d) > real_type_t<T>(0)) || !finite_scalar(d))
      atomicMin(first, static_cast<unsigned long long>(j));
  }
  EMGPU_HD void operator()(index_t j) const {
#if EMGPU_DEVICE_CODE
    check(j);
#else
    (void)j;
#endif
  }
};

/// Column sums of |a_ij| of a rows x cols block, one block per column (coalesced).
template <class T>
__global__ void __launch_bounds__(256) column_abs_sum_kernel(const T* a, index_t rows, index_t cols,
                                                             index_t ld, real_type_t<T>* out) {
  using R = real_type_t<T>;
  __shared__ R part[256];
  for (index_t j = blockIdx.x; j < cols; j += gridDim.x) {
    R s = 0;
    for (index_t i = threadIdx.x; i < rows; i += 256) s += abs_any(a[i + j * ld]);
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = 128; w > 0; w /= 2) {
      if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
      __syncthreads();
    }
    if (threadIdx.x == 0) out[j] = part[0];
    __syncthreads();
  }
}

// ---- host drivers -----------------------------------------------------------

/// Automatic CUDA block size. The panel is cuSOLVER's getrf, itself blocked,
/// so wide panels cost little more per column than narrow ones; a wide panel
/// makes the trailing update a deep-k ZGEMM (closer to its peak) and halves
/// the number of sequential steps.
inline index_t cuda_block_size(index_t n, index_t requested) {
  index_t nb = requested;
  if (nb <= 0) nb = n <= 2048 ? 128 : (n <= 8192 ? 256 : 512);
  return nb > cuda_max_block ? cuda_max_block : nb;
}

/// cuSOLVER handles (slots as for cublas_handle).
inline cusolverDnHandle_t cusolver_handle(int device, int slot) {
  return cached_handle<cusolverDnHandle_t>(device, slot, [] {
    cusolverDnHandle_t h = nullptr;
    EMGPU_CUSOLVER_CHECK(cusolverDnCreate(&h));
    return h;
  });
}

/// Workspace elements cuSOLVER's getrf needs for an m x w block with ld.
template <class T>
inline index_t getrf_workspace(cusolverDnHandle_t h, index_t m, index_t w, T* a, index_t ld) {
  int lw = 0;
  const int im = int(m), iw = int(w), il = int(ld);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUSOLVER_CHECK(cusolverDnZgetrf_bufferSize(h, im, iw, cb_ptr(a), il, &lw));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUSOLVER_CHECK(cusolverDnCgetrf_bufferSize(h, im, iw, cb_ptr(a), il, &lw));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUSOLVER_CHECK(cusolverDnDgetrf_bufferSize(h, im, iw, a, il, &lw));
  else
    EMGPU_CUSOLVER_CHECK(cusolverDnSgetrf_bufferSize(h, im, iw, a, il, &lw));
  return index_t(lw);
}

/// cuSOLVER getrf of an m x w block in place (pivots one-based, block-local).
template <class T>
inline void getrf(cusolverDnHandle_t h, index_t m, index_t w, T* a, index_t ld, T* work,
                  int* ipiv32, int* dev_info) {
  const int im = int(m), iw = int(w), il = int(ld);
  if constexpr (std::is_same_v<T, complexd>)
    EMGPU_CUSOLVER_CHECK(cusolverDnZgetrf(h, im, iw, cb_ptr(a), il, cb_ptr(work), ipiv32, dev_info));
  else if constexpr (std::is_same_v<T, complexf>)
    EMGPU_CUSOLVER_CHECK(cusolverDnCgetrf(h, im, iw, cb_ptr(a), il, cb_ptr(work), ipiv32, dev_info));
  else if constexpr (std::is_same_v<T, double>)
    EMGPU_CUSOLVER_CHECK(cusolverDnDgetrf(h, im, iw, a, il, work, ipiv32, dev_info));
  else
    EMGPU_CUSOLVER_CHECK(cusolverDnSgetrf(h, im, iw, a, il, work, ipiv32, dev_info));
}

template <class T>
struct cuda_lu_driver {
  T* a;
  index_t n, ld;
  index_t* ipiv;
  index_t nb;
  index_t* info;  // -1, or the first failing column
  T* work;        // cuSOLVER workspace (panels are factored one at a time, in order)
  int* ipiv32;    // [nb]
  int* dev_info;  // [1]
  index_t* pdst;  // per panel k: 2 nb entries at k * 2 nb
  index_t* psrc;
  index_t* pcount;

  /// Panel k (rows [c, n), columns [c, c+w)) by cuSOLVER; its row exchanges
  /// cover the panel's own columns, the others get them by apply_perm.
  void factor_panel(index_t k, cudaStream_t s, cusolverDnHandle_t h) const {
    const index_t c = k * nb, w = std::min(nb, n - c);
    getrf(h, n - c, w, a + c + c * ld, ld, work, ipiv32, dev_info);
    panel_finish_kernel<0><<<1, scan_threads, 0, s>>>(ipiv32, dev_info, c, w, ipiv, info);
    EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense panel_finish_kernel");
    make_perm_kernel<0><<<1, 32, 0, s>>>(ipiv, c, w, pdst + k * 2 * nb, psrc + k * 2 * nb,
                                      pcount + k, info);
    EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense make_perm_kernel");
  }

  /// Panel k applied to columns [j0, j1): exchanges, U12 = L11^-1 A12, A22 -= L21 U12.
  void update(index_t k, index_t j0, index_t j1, cudaStream_t s, cublasHandle_t h) const {
    if (j1 <= j0) return;
    const index_t c = k * nb, w = std::min(nb, n - c);
    launch_apply_perm(a, ld, j0, j1, pdst + k * 2 * nb, psrc + k * 2 * nb, pcount + k, s);
    trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, w, j1 - j0,
         T(1), a + c + c * ld, ld, a + c + j0 * ld, ld);
    gemm_nn(h, n - c - w, j1 - j0, w, T(-1), a + (c + w) + c * ld, ld, a + c + j0 * ld, ld, T(1),
            a + (c + w) + j0 * ld, ld);
  }
};

template <class T>
inline void cuda_factor(const backend::cuda& b, matrix_view<T> av, index_t* ipiv, index_t block_size,
                        bool lookahead) {
  emgpu::detail::device_guard guard(b.device);
  const index_t n = av.rows;
  if (n == 0) return;
  const index_t nb = cuda_block_size(n, block_size);
  const index_t nk = (n + nb - 1) / nb;
  cudaStream_t main = b.stream;

  const bool use_side = lookahead && nk > 1;
  cusolverDnHandle_t hsol = cusolver_handle(b.device, use_side ? 1 : 0);
  // The handle may still name the side stream of an earlier call, destroyed
  // since: rebind it before anything (even the size query) can touch it.
  EMGPU_CUSOLVER_CHECK(cusolverDnSetStream(hsol, main));

  // The workspace may depend on the panel's height: take the largest over
  // all panels (a host-side query, no device work).
  index_t lwork = 1;
  for (index_t k = 0; k < nk; ++k) {
    const index_t c = k * nb;
    lwork = std::max(lwork, getrf_workspace(hsol, n - c, std::min(nb, n - c),
                                            av.data + c + c * av.ld, av.ld));
  }
  // O(n) buffers only (in place: no n^2 workspace), stream-ordered on the
  // caller's stream.
  stream_buffer<index_t> info(1, main), bad_input(1, main);
  stream_buffer<T> work(lwork, main);
  stream_buffer<int> ipiv32(nb, main), dev_info(1, main);
  stream_buffer<index_t> pdst(nk * 2 * nb, main), psrc(nk * 2 * nb, main), pcount(nk, main);
  EMGPU_CUDA_CHECK(cudaMemsetAsync(info.get(), 0xff, sizeof(index_t), main));  // -1
  EMGPU_CUDA_CHECK(cudaMemsetAsync(bad_input.get(), 0xff, sizeof(index_t), main));
  const unsigned scan_grid = unsigned(std::min<index_t>(n, 8192));
  // Non-finite input, before the factorisation: cuSOLVER's getrf (CUDA 13,
  // H200) returned finite factors without an error for a matrix with one NaN
  // in U's part of a column, so the factors cannot be trusted to show it.
  nonfinite_column_kernel<T><<<scan_grid, scan_threads, 0, main>>>(av.data, av.ld, n, bad_input.get());
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense nonfinite_column_kernel");
  lookahead_streams la(use_side);  // destroyed (side stream drained) before the buffers

  const cudaStream_t side = la.side ? la.side : main;
  cublasHandle_t hm = cublas_handle(b.device, 0);
  cublasHandle_t hs = la.side ? cublas_handle(b.device, 1) : hm;
  EMGPU_CUBLAS_CHECK(cublasSetStream(hm, main));
  if (la.side) EMGPU_CUBLAS_CHECK(cublasSetStream(hs, side));
  EMGPU_CUSOLVER_CHECK(cusolverDnSetStream(hsol, side));

  const cuda_lu_driver<T> d{av.data, n, av.ld, ipiv, nb, info.get(), work.get(), ipiv32.get(),
                            dev_info.get(), pdst.get(), psrc.get(), pcount.get()};
  if (la.side) {
    // The side stream starts after everything already queued on the caller's
    // stream (the matrix upload, the buffers' allocation, the memset).
    EMGPU_CUDA_CHECK(cudaEventRecord(la.update_done, main));
    EMGPU_CUDA_CHECK(cudaStreamWaitEvent(side, la.update_done, 0));
  }

  d.factor_panel(0, side, hsol);
  if (la.side) EMGPU_CUDA_CHECK(cudaEventRecord(la.panel_done, side));
  for (index_t k = 0; k < nk; ++k) {
    const index_t c = k * nb, w = std::min(nb, n - c);
    if (la.side) EMGPU_CUDA_CHECK(cudaStreamWaitEvent(main, la.panel_done, 0));
    index_t rest0 = c + w;
    if (k + 1 < nk) {
      const index_t c1 = c + w, w1 = std::min(nb, n - c1);
      rest0 = c1 + w1;
      // Look-ahead: panel k+1's columns were last written by update k-1 on
      // the main stream; bring them up to date with panel k and factor them
      // while the main stream updates everything to their right.
      if (la.side) EMGPU_CUDA_CHECK(cudaStreamWaitEvent(side, la.update_done, 0));
      d.update(k, c1, c1 + w1, side, hs);
      d.factor_panel(k + 1, side, hsol);
      if (la.side) EMGPU_CUDA_CHECK(cudaEventRecord(la.panel_done, side));
    }
    d.update(k, rest0, n, main, hm);
    if (la.side) EMGPU_CUDA_CHECK(cudaEventRecord(la.update_done, main));
  }
  // Exchanges of later panels on the columns of earlier ones (the L part).
  for (index_t k = 1; k < nk; ++k)
    launch_apply_perm(av.data, av.ld, 0, k * nb, d.pdst + k * 2 * nb, d.psrc + k * 2 * nb,
                      d.pcount + k, main);
  // Non-finite values the elimination itself created (overflow).
  nonfinite_column_kernel<T><<<scan_grid, scan_threads, 0, main>>>(av.data, av.ld, n, info.get());
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense nonfinite_column_kernel");
  index_t h_info[2] = {-1, -1};
  EMGPU_CUDA_CHECK(cudaMemcpyAsync(&h_info[0], info.get(), sizeof(index_t), cudaMemcpyDeviceToHost, main));
  EMGPU_CUDA_CHECK(cudaMemcpyAsync(&h_info[1], bad_input.get(), sizeof(index_t), cudaMemcpyDeviceToHost, main));
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(main));
  // The first failing column: columns before a non-finite input column are
  // computed from finite data only, so their zero pivots come first.
  const index_t failed = h_info[0] < 0 ? h_info[1] : (h_info[1] < 0 ? h_info[0] : std::min(h_info[0], h_info[1]));
  if (failed >= 0) throw_singular("emgpu::dense::lu_factor", failed);
}

/// perm for solves (see ipiv_to_perm_kernel), in a device vector.
inline device_vector<index_t> cuda_solve_permutation(const backend::cuda& b, const index_t* ipiv,
                                                     index_t n) {
  emgpu::detail::device_guard guard(b.device);
  device_vector<index_t> perm(n, b.device);
  if (n > 0) launch_ipiv_to_perm(ipiv, n, perm.data(), b.device, b.stream);
  return perm;
}

/// rhs := A^-1 rhs (adjoint: A^-H rhs). perm may be null (then built here).
template <class T>
inline void cuda_solve(const backend::cuda& b, matrix_view<const T> lu, const index_t* ipiv,
                       const index_t* perm, matrix_view<T> rhs, bool adjoint) {
  emgpu::detail::device_guard guard(b.device);
  const index_t n = lu.rows, nrhs = rhs.cols;
  cudaStream_t s = b.stream;
  stream_buffer<index_t> tmp_perm(perm ? 0 : n, s);
  if (!perm) {
    launch_ipiv_to_perm(ipiv, n, tmp_perm.get(), b.device, s);
    perm = tmp_perm.get();
  }
  stream_buffer<T> w(n * nrhs, s);
  cublasHandle_t h = cublas_handle(b.device, 0);
  EMGPU_CUBLAS_CHECK(cublasSetStream(h, s));
  if (!adjoint) {
    for_each_index(b, n, nrhs, gather_rows_fn<T>{w.get(), n, rhs.data, rhs.ld, perm});
    if (nrhs == 1) {
      trsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, n, lu.data, lu.ld, w.get());
      trsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, lu.data, lu.ld, w.get());
    } else {
      trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, n, nrhs, T(1),
           lu.data, lu.ld, w.get(), n);
      trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, nrhs,
           T(1), lu.data, lu.ld, w.get(), n);
    }
    EMGPU_CUDA_CHECK(cudaMemcpy2DAsync(rhs.data, sizeof(T) * std::size_t(rhs.ld), w.get(),
                                       sizeof(T) * std::size_t(n), sizeof(T) * std::size_t(n),
                                       std::size_t(nrhs), cudaMemcpyDeviceToDevice, s));
  } else {
    // A^H = U^H L^H P: solve with U^H, then L^H, then undo the permutation.
    EMGPU_CUDA_CHECK(cudaMemcpy2DAsync(w.get(), sizeof(T) * std::size_t(n), rhs.data,
                                       sizeof(T) * std::size_t(rhs.ld), sizeof(T) * std::size_t(n),
                                       std::size_t(nrhs), cudaMemcpyDeviceToDevice, s));
    const auto op = is_complex_v<T> ? CUBLAS_OP_C : CUBLAS_OP_T;
    trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, op, CUBLAS_DIAG_NON_UNIT, n, nrhs, T(1),
         lu.data, lu.ld, w.get(), n);
    trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, op, CUBLAS_DIAG_UNIT, n, nrhs, T(1), lu.data,
         lu.ld, w.get(), n);
    for_each_index(b, n, nrhs, scatter_rows_fn<T>{w.get(), n, rhs.data, rhs.ld, perm});
  }
  // The buffers are freed in stream order; no host synchronisation needed.
}

/// rhs := U^-1 (L^-1 (P rhs)) with the inverses stored by tri_inverse.
template <class T>
inline void cuda_solve_inverse(const backend::cuda& b, matrix_view<const T> inv, const index_t* ipiv,
                               matrix_view<T> rhs) {
  emgpu::detail::device_guard guard(b.device);
  const index_t n = inv.rows, nrhs = rhs.cols;
  cudaStream_t s = b.stream;
  stream_buffer<index_t> perm(n, s);
  launch_ipiv_to_perm(ipiv, n, perm.get(), b.device, s);
  stream_buffer<T> w(n * nrhs, s);
  for_each_index(b, n, nrhs, gather_rows_fn<T>{w.get(), n, rhs.data, rhs.ld, perm.get()});
  cublasHandle_t h = cublas_handle(b.device, 0);
  EMGPU_CUBLAS_CHECK(cublasSetStream(h, s));
  trmm_inplace(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT, n, nrhs, T(1),
               inv.data, inv.ld, w.get(), n);
  trmm_inplace(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, n, nrhs, T(1),
               inv.data, inv.ld, w.get(), n);
  EMGPU_CUDA_CHECK(cudaMemcpy2DAsync(rhs.data, sizeof(T) * std::size_t(rhs.ld), w.get(),
                                     sizeof(T) * std::size_t(n), sizeof(T) * std::size_t(n),
                                     std::size_t(nrhs), cudaMemcpyDeviceToDevice, s));
}

/// In-place L^-1 and U^-1 (LAPACK trtri blocking: TRMM + TRSM per block
/// column on cuBLAS, the 64 x 64 diagonal blocks by one-block kernels).
template <class T>
inline void cuda_tri_inverse(const backend::cuda& b, matrix_view<T> a) {
  emgpu::detail::device_guard guard(b.device);
  const index_t n = a.rows, ld = a.ld;
  cudaStream_t s = b.stream;
  {
    stream_buffer<unsigned long long> first(1, s);
    EMGPU_CUDA_CHECK(cudaMemsetAsync(first.get(), 0xff, sizeof(unsigned long long), s));
    for_each_index(b, n, diag_check_fn<T>{a.data, ld, first.get()});
    unsigned long long h_first = 0;
    EMGPU_CUDA_CHECK(cudaMemcpyAsync(&h_first, first.get(), sizeof(h_first), cudaMemcpyDeviceToHost, s));
    EMGPU_CUDA_CHECK(cudaStreamSynchronize(s));
    if (h_first != ~0ull) throw_singular("emgpu::dense::tri_inverse", index_t(h_first));
  }
  constexpr index_t nb = 64;
  cublasHandle_t h = cublas_handle(b.device, 0);
  EMGPU_CUBLAS_CHECK(cublasSetStream(h, s));
  T* const p = a.data;
  for (index_t j = 0; j < n; j += nb) {
    const index_t jb = std::min(nb, n - j);
    if (j > 0) {
      trmm_inplace(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER, CUBLAS_DIAG_NON_UNIT, j, jb, T(1), p,
                   ld, p + j * ld, ld);
      trsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, j, jb,
           T(-1), p + j + j * ld, ld, p + j * ld, ld);
    }
    trti2_upper_kernel<T><<<1, unsigned(nb), 0, s>>>(p + j + j * ld, jb, ld);
    EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense trti2_upper_kernel");
  }
  for (index_t j = ((n - 1) / nb) * nb; j >= 0; j -= nb) {
    const index_t jb = std::min(nb, n - j);
    if (j + jb < n) {
      const index_t m = n - j - jb;
      trmm_inplace(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_DIAG_UNIT, m, jb, T(1),
                   p + (j + jb) + (j + jb) * ld, ld, p + (j + jb) + j * ld, ld);
      trsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, m, jb, T(-1),
           p + j + j * ld, ld, p + (j + jb) + j * ld, ld);
    }
    trti2_unit_lower_kernel<T><<<1, unsigned(nb), 0, s>>>(p + j + j * ld, jb, ld);
    EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense trti2_unit_lower_kernel");
  }
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(s));
}

template <class T>
inline real_type_t<T> cuda_norm1(const backend::cuda& b, matrix_view<const T> a) {
  emgpu::detail::device_guard guard(b.device);
  using R = real_type_t<T>;
  if (a.rows == 0 || a.cols == 0) return R(0);
  device_vector<R> sums(a.cols, b.device);
  const unsigned grid = unsigned(a.cols < 65535 ? a.cols : 65535);
  column_abs_sum_kernel<T><<<grid, 256, 0, b.stream>>>(a.data, a.rows, a.cols, a.ld, sums.data());
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::dense column_abs_sum_kernel");
  return max_abs(b, static_cast<const R*>(sums.data()), a.cols);
}

}  // namespace emgpu::dense::detail

#endif  // __CUDACC__
