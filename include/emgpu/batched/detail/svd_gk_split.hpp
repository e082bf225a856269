/// @file
/// @brief The QR-method SVD (svd_gk.hpp) as a pipeline of three kernels, for
///        CUDA: (1) one team per matrix scales and bidiagonalises, leaving
///        the reflectors in A; (2) one thread per matrix runs the QR
///        iteration on its bidiagonal B and logs the rotations; (3) one
///        thread per row of U or V builds its row of Q_L or Q_R from the
///        reflectors, replays the log on it, then applies the signs and the
///        descending order.
///
/// Why: in the one-kernel version one thread of each team generates about
/// 2 n^2 dependent rotations while the rest of the team waits (a warp team
/// runs the generating lane and the applying lanes one after the other), so
/// the chain set the time (H100, 100 000 complex<double> 32 x 32: 68 of the
/// 171 ms with U and V was the singular values alone), and forming Q_L, Q_R
/// column by column took most of the rest. Here the chains of all matrices
/// run side by side, one per thread, and the rows of U and V are built and
/// rotated with no team barrier at all (rows are independent under column
/// rotations; a row of H_0 H_1 ... needs only that row). 52.8 ms there.
///
/// The iteration is the core's (the same gk_next_sweep, gk_rotate_row and
/// selection sort); Q_L and Q_R are formed row-wise instead of column-wise,
/// so the factors agree with svd_gk_core to rounding, not bitwise.
///
/// The log of a matrix holds a fixed number of reals per stream (left
/// rotations for U, right ones for V); a chain that fills it pauses at a
/// sweep boundary, the rows take what is logged, and the next round goes
/// on from the saved state (6 n^2 steps at most, LAPACK's limit, as in the
/// core). The batch is cut into chunks whose workspace fits a budget.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <type_traits>
#include <vector>

#include "../../core/matrix_view.hpp"
#include "common.hpp"
#include "launch.hpp"
#include "svd_gk.hpp"
#include "../workspace.hpp"

namespace emgpu::batched::detail {

/// Reals per log stream of an n-column matrix: room for about 1.5 times the
/// 2 n^2 reals (n^2 rotations) a random matrix logs per stream, plus headers.
inline index_t gk_log_reals(index_t n) { return 3 * n * n + 16 * n + 16 + (n & 1); }

/// Thread-per-matrix QR iteration on B with logging (kernel 2).
template <class R>
struct gk_chain_op {
  R* de;           // d, e of matrix k at de + 2 k n
  gk_ctl<R>* ctl;  // per matrix
  R* log_l;        // left rotations (U), cap reals per matrix, or null
  R* log_r;        // right rotations (V), or null
  index_t cap, n;
  R* sigma;        // n per matrix (written when the matrix finishes)
  index_t* perm;   // n per matrix: output column j is input column perm[j]
  int* info;

  EMGPU_HD static void put_hdr(R* p, const index_t* hdr) {
    for (int i = 0; i < 4; ++i) p[i] = R(hdr[i]);
  }

  /// One round of matrix k, with d and e reached through Arr (R* or a
  /// strided accessor).
  template <class Arr>
  EMGPU_HD void run(index_t k, Arr d, Arr e) const {
    gk_ctl<R>& c = ctl[k];
    R* ll = log_l ? log_l + k * cap : nullptr;
    R* lr = log_r ? log_r + k * cap : nullptr;
    gk_state<R> st{c.hi, c.steps, 6L * long(n) * long(n), std::numeric_limits<R>::epsilon(), c.thresh, false};
    index_t pl = 0, pr = 0;
    index_t hdr[4] = {0, 0, 0, 0};
    const index_t room = 4 + 2 * n + 4;  // one sweep and the end marker
    for (;;) {
      if ((ll && pl + room > cap) || (lr && pr + room > cap)) {
        hdr[0] = gk_pause;
        if (ll) put_hdr(ll + pl, hdr);
        if (lr) put_hdr(lr + pr, hdr);
        c.hi = st.hi;
        c.steps = st.steps;
        return;
      }
      gk_next_sweep(d, e, st, lr ? lr + pr + 4 : nullptr, ll ? ll + pl + 4 : nullptr, hdr);
      if (hdr[0] == gk_done) break;
      const index_t lo = hdr[1], hi = hdr[2], zi = hdr[3];
      if (hdr[0] != gk_sweep_row && lr) {
        put_hdr(lr + pr, hdr);
        pr += 4 + 2 * (hi - lo);
      }
      if (hdr[0] != gk_sweep_col && ll) {
        put_hdr(ll + pl, hdr);
        pl += 4 + 2 * (hdr[0] == gk_sweep_qr ? hi - lo : hi - zi);
      }
    }
    if (ll) put_hdr(ll + pl, hdr);
    if (lr) put_hdr(lr + pr, hdr);
    c.hi = st.hi;
    c.steps = st.steps;
    c.state = 1;
    info[k] = (st.failed || c.bad) ? 1 : 0;
    // sigma = |d| scaled back, descending: the selection sort of
    // sort_singular (first maximum, NaN never chosen), on a permutation.
    R* sg = sigma + k * n;
    index_t* pm = perm + k * n;
    for (index_t j = 0; j < n; ++j) {
      sg[j] = ldexp_r(abs_any(d[j]), c.ex);
      pm[j] = j;
    }
    for (index_t i = 0; i + 1 < n; ++i) {
      R best = R(-1);
      index_t p = i;
      for (index_t j = i; j < n; ++j)
        if (sg[j] > best) {
          best = sg[j];
          p = j;
        }
      if (p == i) continue;
      const R ts = sg[i];
      sg[i] = sg[p];
      sg[p] = ts;
      const index_t tp = pm[i];
      pm[i] = pm[p];
      pm[p] = tp;
    }
  }

  /// Round bookkeeping shared by both drivers. @return true when matrix k
  /// iterates this round.
  EMGPU_HD bool starts(index_t k) const {
    gk_ctl<R>& c = ctl[k];
    if (c.state == 2) return false;
    if (c.state == 1) {
      c.state = 2;  // finished in the previous round; its rows are final
      return false;
    }
    return true;
  }

  EMGPU_HD void operator()(index_t k) const {
    if (starts(k)) run(k, de + 2 * k * n, de + (2 * k + 1) * n);
  }
};

/// d or e of one thread in shared memory, interleaved with the other
/// threads' (entry i at p[i * s]): threads reading the same index hit
/// distinct banks.
template <class R>
struct gk_strided {
  R* p;
  int s;
  EMGPU_HD R& operator[](index_t i) const { return p[i * index_t(s)]; }
};

#if defined(__CUDACC__)
/// Kernel 2 on CUDA: one thread per matrix, its d and e in shared memory
/// (scattered per-thread accesses to global memory cost a 32-byte sector
/// each; H100, 100 000 x 32: 23 ms in global memory).
template <class R>
__global__ void __launch_bounds__(64) gk_chain_kernel(gk_chain_op<R> op, index_t count) {
  extern __shared__ __align__(16) unsigned char emgpu_gk_chain_smem[];
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k >= count || !op.starts(k)) return;  // no barriers in this kernel
  const index_t n = op.n;
  const int s = int(blockDim.x);
  R* d = reinterpret_cast<R*>(emgpu_gk_chain_smem) + threadIdx.x;
  R* e = d + n * s;
  const R* g = op.de + 2 * k * n;
  for (index_t i = 0; i < 2 * n; ++i) d[i * s] = g[i];
  op.run(k, gk_strided<R>{d, s}, gk_strided<R>{e, s});
  R* go = op.de + 2 * k * n;
  for (index_t i = 0; i < 2 * n; ++i) go[i] = d[i * s];
}

template <class R>
inline void gk_chain(const backend::cuda& b, const gk_chain_op<R>& op, index_t count) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  const int optin = smem_optin(b.device) - 1024;
  int tpb = 64;
  while (tpb > 1 && std::size_t(tpb) * 2 * std::size_t(op.n) * sizeof(R) > std::size_t(optin)) tpb /= 2;
  const std::size_t smem = std::size_t(tpb) * 2 * std::size_t(op.n) * sizeof(R);
  if (smem > std::size_t(optin)) {  // not even one thread's d, e: global memory
    for_each_index(b, count, op);
    return;
  }
  const index_t grid = (count + tpb - 1) / tpb;
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  auto kern = gk_chain_kernel<R>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kern<<<unsigned(grid), unsigned(tpb), smem, b.stream>>>(op, count);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (QR iteration)", __FILE__, __LINE__);
}
#endif

template <class R>
inline void gk_chain(const backend::serial& b, const gk_chain_op<R>& op, index_t count) {
  for_each_index(b, count, op);
}
template <class R>
inline void gk_chain(const backend::openmp& b, const gk_chain_op<R>& op, index_t count) {
  for_each_index(b, count, op);
}

/// Row accessor for gk_rotate_row: entry j at p[j * s].
template <class T>
struct gk_row {
  T* p;
  int s;
  EMGPU_HD T& operator()(index_t, index_t j) const { return p[j * index_t(s)]; }
};

/// Replays one matrix's log (left stream for a row of U, right for V) on
/// one row. @return true when the log ends the iteration (else it paused).
template <class T, class R>
EMGPU_HD inline bool gk_replay_row(const gk_row<T>& x, const R* __restrict__ log, bool left) {
  for (index_t pos = 0;;) {
    const int kind = int(log[pos]);
    if (kind == gk_done) return true;
    if (kind == gk_pause) return false;
    const index_t lo = index_t(log[pos + 1]), hi = index_t(log[pos + 2]), zi = index_t(log[pos + 3]);
    const R* cs = log + pos + 4;
    if (kind == gk_sweep_qr) {
      gk_rotate_row(x, 0, lo, hi - lo, cs, false, 0, 1);
      pos += 4 + 2 * (hi - lo);
    } else if (left) {  // zero-diagonal chase along a row: U's columns (j, zi)
      gk_rotate_row(x, 0, zi + 1, hi - zi, cs, true, zi, 1);
      pos += 4 + 2 * (hi - zi);
    } else {  // along the last column: V's columns (j, hi), j = hi-1 down to lo
      gk_rotate_row(x, 0, hi - 1, hi - lo, cs, true, hi, -1);
      pos += 4 + 2 * (hi - lo);
    }
  }
}

/// Arguments of the row kernel (kernel 3): the rows of U (m, left stream)
/// and of V (n, right stream) of every matrix.
template <class T>
struct gk_rows_args {
  using R = real_type_t<T>;
  T* u;
  index_t ldu, su;  // leading dimension, stride (u null: not wanted)
  T* v;
  index_t ldv, sv;
  index_t m, n, cap;
  const T* a;  // the reflectors (A after the bidiagonalisation)
  index_t lda, sa;
  const T* tau;  // 2 n per matrix: left factors, then right ones
  const R* de;
  const gk_ctl<R>* ctl;
  const R* log_l;
  const R* log_r;
  const index_t* perm;
  bool sign_v;  // negative d_j negates V's column j (else U's)
  bool first;   // first round: rows from the reflectors, else from U, V
};

/// Loads an entry of the reflectors: through the read-only path on CUDA,
/// so that the compiler may move the loads past the row's shared-memory
/// stores.
template <class T>
EMGPU_HD inline T gk_ld(const T* p) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<T, complex<double>>) {
    const double2 q = __ldg(reinterpret_cast<const double2*>(p));
    return T(q.x, q.y);
  } else if constexpr (std::is_same_v<T, complex<float>>) {
    const float2 q = __ldg(reinterpret_cast<const float2*>(p));
    return T(q.x, q.y);
  } else {
    return __ldg(p);
  }
#else
  return *p;
#endif
}

/// Row r of Q_L (U rows, y of m entries) or of Q_R (V rows, n entries) at
/// stride ys: e_r^T H_0 H_1 ..., each y^T H = y^T - tau (y^T w) w^H with the
/// reflectors as svd_gk_core leaves them (left: w = [1 at k; A(k+1.., k)];
/// right: w = [1 at k+1; A(k, k+2..)]). Row-wise, so every thread builds its
/// own row with no barrier; the one-kernel core forms the same products
/// column-wise (same values to rounding, not bitwise).
template <class T>
EMGPU_HD inline void gk_reflect_row(const gk_rows_args<T>& a, index_t k, bool is_u, index_t r, T* y, int ys) {
  const index_t m = a.m, n = a.n;
  const T* ak = a.a + k * a.sa;
  const T* tk = a.tau + 2 * k * n;
  const index_t len = is_u ? m : n;
  for (index_t i = 0; i < len; ++i) y[i * ys] = T(i == r ? 1 : 0);
  if (is_u) {
    for (index_t q = 0; q < n; ++q) {
      const T* w = ak + q * a.lda;
      T dot = y[q * ys];
      for (index_t i = q + 1; i < m; ++i) dot += y[i * ys] * gk_ld(w + i);
      const T t = gk_ld(tk + q) * dot;
      y[q * ys] -= t;
      for (index_t i = q + 1; i < m; ++i) y[i * ys] -= t * conj_any(gk_ld(w + i));
    }
  } else {
    for (index_t q = 0; q + 1 < n; ++q) {
      const T* w = ak + q;  // row q: entry i at w[i * lda]
      T dot = y[(q + 1) * ys];
      for (index_t i = q + 2; i < n; ++i) dot += y[i * ys] * gk_ld(w + i * a.lda);
      const T t = gk_ld(tk + n + q) * dot;
      y[(q + 1) * ys] -= t;
      for (index_t i = q + 2; i < n; ++i) y[i * ys] -= t * conj_any(gk_ld(w + i * a.lda));
    }
  }
}

/// Stores a replayed row x (n entries at stride xs) to g (stride ld):
/// final (the iteration ended) with the signs and the descending order,
/// else as it is.
template <class T>
EMGPU_HD inline void gk_row_store(const gk_rows_args<T>& a, index_t k, bool is_u, bool fin, const T* x, int xs, T* g,
                                  index_t ld) {
  using R = real_type_t<T>;
  const index_t n = a.n;
  if (!fin) {
    for (index_t j = 0; j < n; ++j) g[j * ld] = x[j * xs];
    return;
  }
  const R* d = a.de + 2 * k * n;
  const index_t* pm = a.perm + k * n;
  const bool signs = is_u != a.sign_v;
  for (index_t j = 0; j < n; ++j) {
    const index_t src = pm[j];
    const T val = x[src * xs];
    g[j * ld] = (signs && d[src] < R(0)) ? -val : val;
  }
}

/// One row (host): build or load it into x (max(m, n) entries at stride
/// xs), replay, store.
template <class T>
EMGPU_HD inline void gk_rows_one(const gk_rows_args<T>& a, index_t k, bool is_u, index_t r, T* x, int xs) {
  if (a.ctl[k].state == 2) return;
  const index_t n = a.n;
  T* g = is_u ? a.u + k * a.su + r : a.v + k * a.sv + r;
  const index_t ld = is_u ? a.ldu : a.ldv;
  if (a.first) gk_reflect_row(a, k, is_u, r, x, xs);
  else
    for (index_t j = 0; j < n; ++j) x[j * xs] = g[j * ld];
  const bool fin = gk_replay_row(gk_row<T>{x, xs}, (is_u ? a.log_l : a.log_r) + k * a.cap, is_u);
  gk_row_store(a, k, is_u, fin, x, xs, g, ld);
}

template <class T>
inline void gk_rows(const backend::serial&, const gk_rows_args<T>& a, index_t count) {
  std::vector<T> x(std::size_t(std::max<index_t>(a.m, 1)));
  for (index_t k = 0; k < count; ++k) {
    if (a.u)
      for (index_t r = 0; r < a.m; ++r) gk_rows_one(a, k, true, r, x.data(), 1);
    if (a.v)
      for (index_t r = 0; r < a.n; ++r) gk_rows_one(a, k, false, r, x.data(), 1);
  }
}

template <class T>
inline void gk_rows(const backend::openmp& b, const gk_rows_args<T>& a, index_t count) {
#if defined(_OPENMP)
#pragma omp parallel num_threads(b.threads())
  {
    std::vector<T> x(std::size_t(std::max<index_t>(a.m, 1)));
#pragma omp for schedule(dynamic, 4)
    for (index_t k = 0; k < count; ++k) {
      if (a.u)
        for (index_t r = 0; r < a.m; ++r) gk_rows_one(a, k, true, r, x.data(), 1);
      if (a.v)
        for (index_t r = 0; r < a.n; ++r) gk_rows_one(a, k, false, r, x.data(), 1);
    }
  }
#else
  gk_rows(static_cast<const backend::serial&>(b), a, count);
#endif
}

/// Least number of reals of the log the row kernel stages at a time: two
/// whole sweeps (a header and n - 1 rotations each) and the end marker.
inline index_t gk_log_chunk_min(index_t n) {
  const index_t c = 2 * (4 + 2 * n) + 4;
  return c + (c & 1);
}

/// Rows per block of the row kernel: 32 where the device's shared memory
/// per block holds them, fewer on smaller GPUs, 0 when not even one row
/// fits (the caller then runs the one-kernel path). Host backends: 1.
template <class T>
inline int gk_rows_width(const backend::serial&, index_t, index_t) {
  return 1;
}
template <class T>
inline int gk_rows_width(const backend::openmp&, index_t, index_t) {
  return 1;
}

#if defined(__CUDACC__)
template <class T>
inline int gk_rows_width(const backend::cuda& b, index_t m, index_t n) {
  const int optin = smem_optin(b.device) - 1024;
  const std::size_t log = std::size_t(gk_log_chunk_min(n)) * sizeof(real_type_t<T>);
  int w = 32;
  while (w > 0 && align16(std::size_t(w) * std::size_t(m) * sizeof(T)) + log > std::size_t(optin)) w /= 2;
  return w;
}

/// Reals of the log the row kernel stages at a time, beside rows_bytes of
/// rows: as many as fit without costing a resident block per SM, at least
/// gk_log_chunk_min(n), at most the log itself. The shared memory per block
/// sets how many row blocks an SM holds, and their latency-bound replay
/// runs faster with more of them (H200, 100 000 x 32 x 32 complex<double>,
/// U and V, fixed chunks: 384 reals, 20 KB a block, 11 blocks per SM: 48.1
/// ms; 256 or 192, 12 blocks: 46.2 / 46.3; 768: 53.8); a chunk shorter than
/// the room left changes nothing but the number of refills.
template <class R>
inline index_t gk_log_chunk(const backend::cuda& b, std::size_t rows_bytes, index_t n, index_t cap) {
  int per_sm = 0, reserved = 0, max_blocks = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, b.device));
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, b.device));
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, b.device));
  const index_t cmin = gk_log_chunk_min(n);
  const std::size_t need = rows_bytes + sizeof(R) * std::size_t(cmin) + std::size_t(reserved);
  const std::size_t blocks = std::clamp<std::size_t>(std::size_t(per_sm) / need, 1, std::size_t(max_blocks));
  const std::size_t room = std::min(std::size_t(per_sm) / blocks - std::size_t(reserved),
                                    std::size_t(smem_optin(b.device)) - 1024);
  index_t c = room > rows_bytes ? index_t((room - rows_bytes) / sizeof(R)) : 0;
  c = std::min(c, cap);
  c -= c & 1;
  return c < cmin ? cmin : c;
}

/// One thread per row, w rows per block (gk_rows_width), the rows in shared
/// memory at stride w (a warp's entries of one column are contiguous: no
/// bank conflicts). The block stages the matrix's log through shared memory
/// chunk by chunk, loaded by all its threads at once: read straight from
/// global memory every rotation waited out a load (H100, 100 000 x 32: 20 ms
/// for the rows). Every thread follows the same log, so the loop is uniform
/// and threads past the last row only help with the loads.
/// Block b: matrix b / per, then U's row blocks, then V's.
template <class T>
__global__ void __launch_bounds__(32) gk_rows_kernel(gk_rows_args<T> a, index_t blocks_u, index_t blocks_v,
                                                     int w, index_t chunk) {
  using R = real_type_t<T>;
  extern __shared__ __align__(16) unsigned char emgpu_gk_rows_smem[];
  const index_t per = blocks_u + blocks_v;
  const index_t k = index_t(blockIdx.x) / per;
  const index_t j = index_t(blockIdx.x) % per;
  if (a.ctl[k].state == 2) return;  // uniform over the block
  const bool is_u = j < blocks_u;
  const index_t r = (is_u ? j : j - blocks_u) * w + threadIdx.x;
  const bool active = r < (is_u ? a.m : a.n);
  const index_t n = a.n;
  T* x = reinterpret_cast<T*>(emgpu_gk_rows_smem) + threadIdx.x;
  R* buf = reinterpret_cast<R*>(emgpu_gk_rows_smem + align16(std::size_t(w) * std::size_t(a.m) * sizeof(T)));
  const R* log = (is_u ? a.log_l : a.log_r) + k * a.cap;
  T* g = is_u ? a.u + k * a.su + r : a.v + k * a.sv + r;
  const index_t ld = is_u ? a.ldu : a.ldv;
  if (active) {
    if (a.first) gk_reflect_row(a, k, is_u, r, x, w);
    else
      for (index_t c = 0; c < n; ++c) x[c * w] = g[c * ld];
  }
  const gk_row<T> row{x, w};
  index_t base = 0;
  auto refill = [&](index_t from) {
    __syncwarp();
    base = from;
    for (index_t i = threadIdx.x; i < chunk && from + i < a.cap; i += w) buf[i] = log[from + i];
    __syncwarp();
  };
  refill(0);
  bool fin = false;
  for (index_t pos = 0;;) {
    if (pos + 4 > base + chunk) refill(pos);
    const R* h = buf + (pos - base);
    const int kind = int(h[0]);
    if (kind == gk_done || kind == gk_pause) {
      fin = kind == gk_done;
      break;
    }
    const index_t lo = index_t(h[1]), hi = index_t(h[2]), zi = index_t(h[3]);
    const index_t cnt = kind == gk_sweep_qr ? hi - lo : is_u ? hi - zi : hi - lo;
    if (pos + 4 + 2 * cnt > base + chunk) {
      refill(pos);
      h = buf;
    }
    if (active) {
      if (kind == gk_sweep_qr) gk_rotate_row(row, 0, lo, cnt, h + 4, false, 0, 1);
      else if (is_u) gk_rotate_row(row, 0, zi + 1, cnt, h + 4, true, zi, 1);
      else gk_rotate_row(row, 0, hi - 1, cnt, h + 4, true, hi, -1);
    }
    pos += 4 + 2 * cnt;
  }
  if (active) gk_row_store(a, k, is_u, fin, x, w, g, ld);
}

template <class T>
inline void gk_rows(const backend::cuda& b, const gk_rows_args<T>& a, index_t count) {
  using R = real_type_t<T>;
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  const int w = gk_rows_width<T>(b, a.m, a.n);
  detail_require(w > 0, "emgpu::batched::svd: rows too long for the CUDA row kernel");
  const index_t bu = a.u ? (a.m + w - 1) / w : 0, bv = a.v ? (a.n + w - 1) / w : 0;
  const index_t grid = count * (bu + bv);
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  const std::size_t rows = align16(std::size_t(w) * std::size_t(a.m) * sizeof(T));
  const index_t chunk = gk_log_chunk<R>(b, rows, a.n, a.cap);
  const std::size_t smem = rows + std::size_t(chunk) * sizeof(R);
  auto kern = gk_rows_kernel<T>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(grid), unsigned(w), smem, b.stream>>>(a, bu, bv, w, chunk);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (rows)", __FILE__, __LINE__);
}
#endif

/// Counts matrices still iterating (state 0) for the round loop.
template <class R>
struct gk_pending_map {
  const gk_ctl<R>* ctl;
  EMGPU_HD index_t operator()(index_t k) const { return ctl[k].state == 0 ? 1 : 0; }
};
struct gk_plus {
  EMGPU_HD index_t operator()(index_t x, index_t y) const { return x + y; }
};

/// Default workspace budget of the split pipeline: 1 GiB on the host; on
/// CUDA a quarter of the free device memory, within [256 MiB, 16 GiB]. The
/// chain kernel of each chunk takes as long as its longest chain, so few
/// large chunks beat many small ones (H100, 100 000 x 32 in six 1 GiB
/// chunks took about 5 ms more than its kernels over the whole batch; H200,
/// complex<double> with U, V: 100 000 x 32 in two chunks 53.3 ms, in one
/// 51.0; 20 000 x 64 105.4 against 98.9).
inline std::size_t gk_default_budget(const backend::serial&) { return std::size_t(1) << 30; }
inline std::size_t gk_default_budget(const backend::openmp&) { return std::size_t(1) << 30; }
#if defined(__CUDACC__)
inline std::size_t gk_default_budget(const backend::cuda& b) {
  const std::size_t q = memory_info(b).first / 4;
  return std::clamp(q, std::size_t(256) << 20, std::size_t(16) << 30);
}
#endif

/// Bytes of split workspace per matrix (cap reals per wanted log stream).
template <class R>
inline std::size_t gk_split_bytes(index_t n, index_t cap, bool want_u, bool want_v) {
  return sizeof(R) * std::size_t(2 * n + cap * ((want_u ? 1 : 0) + (want_v ? 1 : 0))) + 4 * sizeof(R) * std::size_t(n) +
         sizeof(index_t) * std::size_t(n) + sizeof(gk_ctl<R>);
}

/// Byte offsets of the split pipeline's arrays for `chunk` matrices in one
/// block, each on a 256-byte boundary: d and e (2n reals), the iteration
/// state, the output order (n), the reflector factors tau (2n of T), the
/// left and right logs (cap reals each, when wanted).
struct gk_split_layout {
  std::size_t de, ctl, perm, tau, logl, logr, total;
};
template <class T>
inline gk_split_layout gk_split_carve(index_t n, index_t cap, index_t chunk, bool want_u, bool want_v) {
  using R = real_type_t<T>;
  const auto up = [](std::size_t x) { return (x + 255) & ~std::size_t(255); };
  const std::size_t c = std::size_t(chunk), nn = std::size_t(n), lg = sizeof(R) * std::size_t(cap) * c;
  gk_split_layout o{};
  o.de = 0;
  o.ctl = up(o.de + sizeof(R) * 2 * nn * c);
  o.perm = up(o.ctl + sizeof(gk_ctl<R>) * c);
  o.tau = up(o.perm + sizeof(index_t) * nn * c);
  o.logl = up(o.tau + sizeof(T) * 2 * nn * c);
  o.logr = up(o.logl + (want_u ? lg : 0));
  o.total = o.logr + (want_v ? lg : 0);
  return o;
}

/// The QR-method SVD by the split pipeline, same contract as svd_run with
/// svd_method::qr. @return false (nothing done) when a row of U or V does
/// not fit the device's shared memory. cap: reals per log stream (0:
/// gk_log_reals(n)); budget: bytes of workspace (0: gk_default_budget);
/// both are knobs for the tests. work: where the workspace comes from
/// (svd_options::work), or null to allocate and free it here.
template <class Backend, class T>
bool svd_gk_split_run(const Backend& b, strided_batch_view<T> a, real_type_t<T>* sigma, strided_batch_view<T> u,
                      strided_batch_view<T> v, int* info, bool flip_u, index_t cap = 0, std::size_t budget = 0,
                      workspace* work = nullptr) {
  using R = real_type_t<T>;
  using L = strided_loc<T>;
  const index_t m = a.rows, n = a.cols, count = a.count;
  const bool want_u = u.data != nullptr, want_v = v.data != nullptr;
  if (count <= 0) return true;
  if ((want_u || want_v) && gk_rows_width<T>(b, m, n) == 0) return false;
  if (cap <= 0) cap = gk_log_reals(n);
  cap += cap & 1;  // even: rotations are stored as aligned (c, s) pairs
  detail_require(cap >= 4 + 2 * n + 4, "emgpu::batched::svd: log capacity below one sweep");
  if (budget == 0) budget = gk_default_budget(b);
  const std::size_t per = gk_split_bytes<R>(n, cap, want_u, want_v);
  index_t chunk = index_t(budget / per);
  chunk = chunk < 1 ? 1 : chunk > count ? count : chunk;
  // One block for all six arrays: from the caller's workspace, or allocated
  // here (one cudaMalloc instead of six).
  const gk_split_layout lay = gk_split_carve<T>(n, cap, chunk, want_u, want_v);
  vector_t<Backend, std::byte> own;
  std::byte* blk = nullptr;
  if (work != nullptr) {
    blk = work->reserve(b, lay.total);
  } else {
    own = make_vector<std::byte>(b, index_t(lay.total));
    blk = own.data();
  }
  R* const de = reinterpret_cast<R*>(blk + lay.de);
  gk_ctl<R>* const ctl = reinterpret_cast<gk_ctl<R>*>(blk + lay.ctl);
  index_t* const perm = reinterpret_cast<index_t*>(blk + lay.perm);
  T* const tau = reinterpret_cast<T*>(blk + lay.tau);
  R* const logl = want_u ? reinterpret_cast<R*>(blk + lay.logl) : nullptr;
  R* const logr = want_v ? reinterpret_cast<R*>(blk + lay.logr) : nullptr;
  for (index_t k0 = 0; k0 < count; k0 += chunk) {
    const index_t cc = count - k0 < chunk ? count - k0 : chunk;
    T* ak = a.data + k0 * a.stride;
    T* uk = want_u ? u.data + k0 * u.stride : nullptr;
    T* vk = want_v ? v.data + k0 * v.stride : nullptr;
    R* sk = sigma + k0 * n;
    int* ik = info + k0;
    svd_gk_op<T, L, L, L> op{{ak, a.stride}, m, n, a.ld, sk, {nullptr, 0}, 0, false,
                             {nullptr, 0}, 0, false, flip_u, ik, svd_gk_team(m, n)};
    op.split_d = de;
    op.split_ctl = ctl;
    op.split_tau = tau;
    launch(b, op, cc, "emgpu::batched::svd (bidiagonalisation)");
    const gk_chain_op<R> chain{de, ctl, logl, logr, cap, n, sk, perm, ik};
    gk_rows_args<T> rows{uk, u.ld, u.stride, vk, v.ld, v.stride, m, n, cap, ak, a.ld, a.stride, tau, de, ctl,
                         logl, logr, perm, want_v && !(flip_u && want_u), true};
    for (;;) {
      gk_chain(b, chain, cc);
      if (!want_u && !want_v) break;  // no log: every chain ran to its end
      gk_rows(b, rows, cc);
      rows.first = false;
      if (reduce(b, cc, index_t(0), gk_pending_map<R>{ctl}, gk_plus{}) == 0) break;
    }
  }
  return true;
}

}  // namespace emgpu::batched::detail
