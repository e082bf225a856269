/// @file
/// @brief The QR-method SVD (svd_gk.hpp) as a pipeline of kernels, for
///        CUDA: (1) one team per matrix scales and bidiagonalises, leaving
///        the reflectors in A (and, for the column kernel, the T of their
///        blocks of four); (2) one thread per matrix runs the QR
///        iteration on its bidiagonal B and logs the rotations; (3) one
///        thread per row of U_B or V_B (the real n x n products of the
///        rotations) replays the log on its row of the identity; (4) U
///        and V, with the signs and the descending order: from 32 to 128
///        rows (CUDA) a column of [U_B; 0] or V_B per lane pair or quad,
///        in registers, the reflectors applied to it in compact WY blocks
///        whose T kernel (1) leaves (32 to 64 rows, double types: the same
///        blocks on the FP64 tensor cores, 16 columns a warp); otherwise one or two
///        lanes per row of U or V build its row of Q_L or Q_R from the
///        reflectors and multiply it by U_B or V_B.
///
/// Why: in the one-kernel version one thread of each team generates about
/// 2 n^2 dependent rotations while the rest of the team waits (a warp team
/// runs the generating lane and the applying lanes one after the other), so
/// the chain set the time (H100, 100 000 complex<double> 32 x 32: 68 of the
/// 171 ms with U and V was the singular values alone), and forming Q_L, Q_R
/// column by column took most of the rest. Here the chains of all matrices
/// run side by side, one per thread, and the rows are built and rotated
/// with no team barrier at all (rows are independent under column
/// rotations; a row of H_0 H_1 ... needs only that row). Until session 20
/// one kernel built each complex row of Q_L, Q_R with the reflectors read
/// through L1 and replayed the rotations on it. Most of its time was the
/// build (L1 is small beside the shared memory the rows take), so the
/// build now stages the reflectors in shared memory, several per pass, and
/// the rotations are accumulated apart on real rows and applied as one
/// product (n^2 real-by-complex products a row); H100, 100 000 x 32 x 32,
/// U, S, V: 48.1 -> 39.5 ms, 5 000 x 128: 435 -> 292; each kernel trimmed
/// after a profile since: 31.1 and 220 ms in session 22, 27.5 and 183 ms
/// in session 23 with U and V formed by columns (docs/batched-log.md).
///
/// The iteration is the core's (the same gk_next_sweep_to, gk_rotate_row
/// and selection sort); the reflectors are applied in another order and
/// the rotations accumulated apart, so the factors agree with svd_gk_core
/// to rounding, not bitwise.
///
/// The log of a matrix holds a fixed number of reals per stream (left
/// rotations for U, right ones for V); a chain that fills it pauses at a
/// sweep boundary, the rows of U_B and V_B take what is logged and are kept
/// in the workspace, and the next round goes on from the saved state (6 n^2
/// steps at most, LAPACK's limit, as in the core). The batch is cut into
/// chunks whose workspace fits a budget.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "../../backend/cuda_mma.hpp"  // cp_async_* (CUDA only; empty elsewhere)
#include "../../core/matrix_view.hpp"
#include "common.hpp"
#include "launch.hpp"
#include "stream_lanes.hpp"
#include "svd_gk.hpp"
#include "../workspace.hpp"

namespace emgpu::batched::detail {

/// Whether the log of an n-column matrix holds one real per rotation
/// (gk_code; two go out in one 16-byte store) or its (c, s) pair. Codes up
/// to 32 columns, where 100 000 chains in flight were bound by their
/// scattered stores (one L2 request each); from 64, with few chains per SM,
/// each warp runs its diverged threads' steps one after the other, and the
/// coding's instructions cost more than the stores they save (H200,
/// complex<double>, U and V, chain + basis kernel, pairs against codes:
/// 100 000 x 32 6.1 + 4.9 against 4.7 + 5.7 ms; 20 000 x 64 5.3 + 8.5
/// against 8.3 + 8.3; 5 000 x 128 19.6 + 21.1 against 34.8 + 20.7;
/// docs/batched-log.md, session 25).
EMGPU_HD inline bool gk_log_coded(index_t n) { return n <= 32; }

/// Reals a logged sweep of cnt rotations takes: its header and the codes,
/// padded to even, or the pairs.
EMGPU_HD inline index_t gk_rec_len(index_t cnt, bool coded) { return 4 + (coded ? cnt + (cnt & 1) : 2 * cnt); }

/// Reals per log stream of an n-column matrix: room for about 1.5 times the
/// n^2 rotations a random matrix logs per stream, plus the sweeps' headers.
inline index_t gk_log_reals(index_t n) {
  const index_t c = (gk_log_coded(n) ? 2 : 3) * n * n + 16 * n + 16;
  return c + (c & 1);
}

/// The least log capacity: one sweep (up to n - 1 rotations; with codes
/// also the padding of the previous one) and the pause marker
/// (gk_chain_op's test before each sweep).
EMGPU_HD inline index_t gk_log_room(index_t n) { return gk_log_coded(n) ? n + 10 + (n & 1) : 2 * n + 8; }

/// Header fields (sweep kind, lo, hi, zero index) in the log: in a coded
/// log offset by 3, so that they never fall in [-1, 1], the range of
/// gk_code; the basis kernel decodes a staged chunk without parsing it and
/// tells the two apart by that.
template <class R>
EMGPU_HD inline R gk_hdr_put(index_t v, bool coded) {
  return R(coded ? v + 3 : v);
}
template <class R>
EMGPU_HD inline index_t gk_hdr_get(R x, bool coded) {
  return index_t(x) - (coded ? 3 : 0);
}

/// One log stream (left or right rotations) of one matrix: each sweep's
/// header (at an even position), then per rotation its (c, s) pair or, in
/// the CODED format (gk_log_coded), one code (gk_code) padded to an even
/// count. Two codes go out in one 16-byte store: an odd one is held in a
/// register until its pair, or the next header, comes; no branch on the
/// parity (a predicated store). Coded one rotation late, when its (c, s)
/// had long been computed, the chains were slower still (H200, 100 000 x
/// 32: 5.1 against 4.7 ms): what costs is the instructions, not waiting.
template <class R, bool CODED>
struct gk_log_stream {
  R* g;  // the matrix's log, or null (stream not wanted)
  index_t pos;
  R held = R(0);  // the code at pos - 1 when pos is odd
  EMGPU_HD void put2(R a, R b) {
    if (!g) return;
    gk_put_cs(g + pos, 0, a, b);
    pos += 2;
  }
  EMGPU_HD void put_rot(R c, R s) {
    if constexpr (CODED) {
      if (!g) return;
      const R x = gk_code(c, s);
      const R prev = held;
      held = x;
      if (pos & 1) gk_put_cs(g + pos - 1, 0, prev, x);
      ++pos;
    } else {
      put2(c, s);
    }
  }
  EMGPU_HD void flush() {
    if constexpr (CODED) {
      if (g && (pos & 1)) {
        gk_put_cs(g + pos - 1, 0, held, R(0));
        ++pos;
      }
    }
  }
  EMGPU_HD void header(const index_t* hdr) {
    flush();
    put2(gk_hdr_put<R>(hdr[0], CODED), gk_hdr_put<R>(hdr[1], CODED));
    put2(gk_hdr_put<R>(hdr[2], CODED), gk_hdr_put<R>(hdr[3], CODED));
  }
  EMGPU_HD void close(const index_t* hdr) {
    flush();
    if (g)
      for (int i = 0; i < 4; ++i) g[pos + i] = gk_hdr_put<R>(hdr[i], CODED);
  }
};

/// The chain's two log streams behind gk_next_sweep_to's interface (see
/// gk_bufs). The header goes before the sweep's rotations, so that a
/// thread's stores run in address order: until session 22 it was written
/// after them (at the position kept for it; presumably reopening a sector
/// the first rotations had left half written), and the chain took 7.44 ms
/// against 6.37 now (H200, 100 000 x 32, U and V; the log the same bit for
/// bit). Staged
/// in shared memory and written a line at a time (by the lanes meeting at
/// each rotation, or as one bulk copy a line) the log was slower: 12.9 and
/// 7.2 ms at best; at n = 64 11.7 and more against 7.3, at 128 41.6 and more
/// against 30.2 (docs/batched-log.md).
/// CODED: gk_log_coded's format.
template <class R, bool CODED>
struct gk_chain_log {
  gk_log_stream<R, CODED> r, l;  // right rotations (V), left ones (U)
  EMGPU_HD void begin(const index_t* hdr) {
    if (hdr[0] != gk_sweep_row) r.header(hdr);
    if (hdr[0] != gk_sweep_col) l.header(hdr);
  }
  EMGPU_HD void put_right(index_t, R c, R s) { r.put_rot(c, s); }
  EMGPU_HD void put_left(index_t, R c, R s) { l.put_rot(c, s); }
};

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

  /// One round of matrix k, with d and e reached through Arr (R* or a
  /// strided accessor).
  template <class Arr>
  EMGPU_HD void run(index_t k, Arr d, Arr e) const {
    if (gk_log_coded(n) ? iterate<true>(k, d, e) : iterate<false>(k, d, e)) finish(k, d);
  }

  /// The QR iteration of one round of matrix k, its log in the format
  /// CODED (gk_log_coded(n)). @return true when it ended (converged or
  /// failed), false when it paused.
  template <bool CODED, class Arr>
  EMGPU_HD bool iterate(index_t k, Arr d, Arr e) const {
    gk_ctl<R>& c = ctl[k];
    gk_chain_log<R, CODED> lg{{log_r ? log_r + k * cap : nullptr, 0}, {log_l ? log_l + k * cap : nullptr, 0}};
    gk_state<R> st{c.hi, c.steps, 6L * long(n) * long(n), std::numeric_limits<R>::epsilon(), c.thresh, false};
    index_t hdr[4] = {0, 0, 0, 0};
    const index_t room = gk_log_room(n);
    for (;;) {
      if ((lg.l.g && lg.l.pos + room > cap) || (lg.r.g && lg.r.pos + room > cap)) {
        hdr[0] = gk_pause;
        lg.l.close(hdr);
        lg.r.close(hdr);
        c.hi = st.hi;
        c.steps = st.steps;
        return false;
      }
      gk_next_sweep_to(d, e, st, lg, hdr);
      if (hdr[0] == gk_done) break;
    }
    lg.l.close(hdr);
    lg.r.close(hdr);
    c.hi = st.hi;
    c.steps = st.steps;
    c.state = 1;
    info[k] = (st.failed || c.bad) ? 1 : 0;
    return true;
  }

  /// Singular values of matrix k once its iteration has ended (iterate
  /// returned true): sigma = |d| scaled back, descending, by the selection
  /// sort of sort_singular (first maximum, NaN never chosen), and the
  /// permutation.
  template <class Arr>
  EMGPU_HD void finish(index_t k, Arr d) const {
    const gk_ctl<R>& c = ctl[k];
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
template <class R, bool CODED>
__global__ void __launch_bounds__(64) gk_chain_kernel(gk_chain_op<R> op, index_t count) {
  extern __shared__ __align__(16) unsigned char emgpu_gk_chain_smem[];
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const bool act = k < count && op.starts(k);
  const index_t n = op.n;
  const int s = int(blockDim.x);
  R* d = reinterpret_cast<R*>(emgpu_gk_chain_smem) + threadIdx.x;
  R* e = d + n * s;
  bool ended = false;
  if (act) {
    const R* g = op.de + 2 * k * n;
    for (index_t i = 0; i < 2 * n; ++i) d[i * s] = g[i];
    ended = op.template iterate<CODED>(k, gk_strided<R>{d, s}, gk_strided<R>{e, s});
  }
  // The iterations end at different times, and a warp ran the sort once
  // per group of threads that had ended together (ncu, H100, 100 000 x 32:
  // about four times per warp); here it runs once. The kernel's time did
  // not change measurably (it is the iterations'). Every thread of the
  // block is still here: no early return above.
  __syncwarp();
  if (ended) op.finish(k, gk_strided<R>{d, s});
  if (act) {
    R* go = op.de + 2 * k * n;
    for (index_t i = 0; i < 2 * n; ++i) go[i] = d[i * s];
  }
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
  auto kern = gk_log_coded(op.n) ? gk_chain_kernel<R, true> : gk_chain_kernel<R, false>;
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

/// Rotations of a logged sweep (kind, lo, hi, zero index zi) in the left
/// (U) or right (V) stream.
EMGPU_HD inline index_t gk_sweep_count(int kind, index_t lo, index_t hi, index_t zi, bool left) {
  return kind == gk_sweep_qr ? hi - lo : left ? hi - zi : hi - lo;
}

/// Replays one matrix's log (left stream for a row of U, right for V) on
/// one row. @return true when the log ends the iteration (else it paused).
template <class T, class R>
EMGPU_HD inline bool gk_replay_row(const gk_row<T>& x, const R* __restrict__ log, bool left, bool coded) {
  for (index_t pos = 0;;) {
    const int kind = int(gk_hdr_get(log[pos], coded));
    if (kind == gk_done) return true;
    if (kind == gk_pause) return false;
    const index_t lo = gk_hdr_get(log[pos + 1], coded), hi = gk_hdr_get(log[pos + 2], coded),
                  zi = gk_hdr_get(log[pos + 3], coded);
    const index_t cnt = gk_sweep_count(kind, lo, hi, zi, left);
    const auto replay = [&](auto cs) {
      if (kind == gk_sweep_qr) gk_rotate_row(x, 0, lo, cnt, cs, false, 0, 1);
      else if (left) gk_rotate_row(x, 0, zi + 1, cnt, cs, true, zi, 1);  // row chase: U's columns (j, zi)
      else gk_rotate_row(x, 0, hi - 1, cnt, cs, true, hi, -1);  // last column: V's (j, hi), j = hi-1 .. lo
    };
    if (coded) replay(gk_coded<R>{log + pos + 4});
    else replay(log + pos + 4);
    pos += gk_rec_len(cnt, coded);
  }
}

/// Arguments of the row kernels (kernels 3 and 4): the rows of U (m, left
/// stream) and of V (n, right stream) of every matrix, and U_B, V_B.
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
  bool first;   // first round: rows of U_B, V_B from the identity, else from ub, vb
  R* ub;        // U_B (left rotations), n x n column-major per matrix (null: U not wanted)
  R* vb;        // V_B (right rotations)
  T* tb = nullptr;  // CUDA column kernel: T of each block of reflectors (gk_tb_count per matrix, from kernel 1)
};

/// Row r of Q_L (U rows, y of m entries) or of Q_R (V rows, n entries) at
/// stride ys: e_r^T H_0 H_1 ..., each y^T H = y^T - tau (y^T w) w^H with the
/// reflectors as svd_gk_core leaves them (left: w = [1 at k; A(k+1.., k)];
/// right: w = [1 at k+1; A(k, k+2..)]). Row-wise, as the CUDA form kernel
/// (gk_reflect_row_staged) does it; the one-kernel core forms the same
/// products column-wise (same values to rounding, not bitwise). Host model.
template <class T>
inline void gk_reflect_row(const gk_rows_args<T>& a, index_t k, bool is_u, index_t r, T* y, int ys) {
  const index_t m = a.m, n = a.n;
  const T* ak = a.a + k * a.sa;
  const T* tk = a.tau + 2 * k * n;
  const index_t len = is_u ? m : n;
  for (index_t i = 0; i < len; ++i) y[i * ys] = T(i == r ? 1 : 0);
  if (is_u) {
    for (index_t q = 0; q < n; ++q) {
      const T* w = ak + q * a.lda;
      T dot = y[q * ys];
      for (index_t i = q + 1; i < m; ++i) dot += y[i * ys] * w[i];
      const T t = tk[q] * dot;
      y[q * ys] -= t;
      for (index_t i = q + 1; i < m; ++i) y[i * ys] -= t * conj_any(w[i]);
    }
  } else {
    for (index_t q = 0; q + 1 < n; ++q) {
      const T* w = ak + q;  // row q: entry i at w[i * lda]
      T dot = y[(q + 1) * ys];
      for (index_t i = q + 2; i < n; ++i) dot += y[i * ys] * w[i * a.lda];
      const T t = tk[n + q] * dot;
      y[(q + 1) * ys] -= t;
      for (index_t i = q + 2; i < n; ++i) y[i * ys] -= t * conj_any(w[i * a.lda]);
    }
  }
}

/// Row r of U (V) once the iteration has ended: y (row r of Q_L or Q_R,
/// its first n entries at stride ys) times U_B (V_B), each output column j
/// taken from column perm[j] with the sign of d there, stored to g (stride
/// ld). Host model of the CUDA form kernel.
template <class T>
inline void gk_form_row(const gk_rows_args<T>& a, index_t k, bool is_u, const T* y, int ys, T* g, index_t ld) {
  using R = real_type_t<T>;
  const index_t n = a.n;
  const R* d = a.de + 2 * k * n;
  const index_t* pm = a.perm + k * n;
  const R* bm = (is_u ? a.ub : a.vb) + k * n * n;
  const bool signs = is_u != a.sign_v;
  for (index_t j = 0; j < n; ++j) {
    const index_t src = pm[j];
    T acc = T(0);
    for (index_t i = 0; i < n; ++i) acc += mul_real(y[i * ys], bm[src * n + i]);
    g[j * ld] = (signs && d[src] < R(0)) ? -acc : acc;
  }
}

/// Row r of U_B (left stream) or V_B (right) on the host: from the identity
/// (first round) or as kept, the round's log replayed on it, kept again.
template <class T>
inline void gk_basis_one(const gk_rows_args<T>& a, index_t k, bool is_u, index_t r) {
  using R = real_type_t<T>;
  if (a.ctl[k].state == 2) return;
  const index_t n = a.n;
  R* x = (is_u ? a.ub : a.vb) + k * n * n + r;  // entry j at x[j * n]
  if (a.first)
    for (index_t j = 0; j < n; ++j) x[j * n] = R(j == r ? 1 : 0);
  gk_replay_row(gk_row<R>{x, int(n)}, (is_u ? a.log_l : a.log_r) + k * a.cap, is_u, gk_log_coded(n));
}

/// Row r of U or V on the host (y: room for m entries at stride ys).
template <class T>
inline void gk_form_one(const gk_rows_args<T>& a, index_t k, bool is_u, index_t r, T* y, int ys) {
  gk_reflect_row(a, k, is_u, r, y, ys);
  T* g = is_u ? a.u + k * a.su + r : a.v + k * a.sv + r;
  gk_form_row(a, k, is_u, y, ys, g, is_u ? a.ldu : a.ldv);
}

template <class T>
inline void gk_basis(const backend::serial&, const gk_rows_args<T>& a, index_t count) {
  for (index_t k = 0; k < count; ++k)
    for (index_t r = 0; r < a.n; ++r) {
      if (a.ub) gk_basis_one(a, k, true, r);
      if (a.vb) gk_basis_one(a, k, false, r);
    }
}

template <class T>
inline void gk_basis(const backend::openmp& b, const gk_rows_args<T>& a, index_t count) {
#if defined(_OPENMP)
#pragma omp parallel for num_threads(b.threads()) schedule(dynamic, 4)
  for (index_t k = 0; k < count; ++k)
    for (index_t r = 0; r < a.n; ++r) {
      if (a.ub) gk_basis_one(a, k, true, r);
      if (a.vb) gk_basis_one(a, k, false, r);
    }
#else
  gk_basis(static_cast<const backend::serial&>(b), a, count);
#endif
}

template <class T>
inline void gk_form(const backend::serial&, const gk_rows_args<T>& a, index_t count) {
  std::vector<T> y(std::size_t(std::max<index_t>(a.m, 1)));
  for (index_t k = 0; k < count; ++k) {
    if (a.u)
      for (index_t r = 0; r < a.m; ++r) gk_form_one(a, k, true, r, y.data(), 1);
    if (a.v)
      for (index_t r = 0; r < a.n; ++r) gk_form_one(a, k, false, r, y.data(), 1);
  }
}

template <class T>
inline void gk_form(const backend::openmp& b, const gk_rows_args<T>& a, index_t count) {
#if defined(_OPENMP)
#pragma omp parallel num_threads(b.threads())
  {
    std::vector<T> y(std::size_t(std::max<index_t>(a.m, 1)));
#pragma omp for schedule(dynamic, 4)
    for (index_t k = 0; k < count; ++k) {
      if (a.u)
        for (index_t r = 0; r < a.m; ++r) gk_form_one(a, k, true, r, y.data(), 1);
      if (a.v)
        for (index_t r = 0; r < a.n; ++r) gk_form_one(a, k, false, r, y.data(), 1);
    }
  }
#else
  gk_form(static_cast<const backend::serial&>(b), a, count);
#endif
}

/// Least number of reals of the log the basis kernel stages at a time: two
/// whole sweeps (up to n - 1 rotations each, gk_rec_len) and the end
/// marker.
inline index_t gk_log_chunk_min(index_t n) {
  const index_t c = 2 * gk_rec_len(n, gk_log_coded(n)) + 4;
  return c + (c & 1);
}

/// Reals of shared memory a staged real of the log takes: codes are staged
/// decoded, as (c, s) pairs (gk_basis_kernel).
inline std::size_t gk_log_stage(index_t n) { return gk_log_coded(n) ? 2 : 1; }

/// Rows per block of the row kernels: 32 where the device's shared memory
/// per block holds them (the form kernel's m entries of T a row and its
/// staging; the basis kernel's n reals a row and two sweeps), fewer on
/// smaller GPUs, 0 when not even one row fits (the caller then runs the
/// one-kernel path). Host backends: 1.
template <class T>
inline int gk_rows_width(const backend::serial&, index_t, index_t) {
  return 1;
}
template <class T>
inline int gk_rows_width(const backend::openmp&, index_t, index_t) {
  return 1;
}

/// Reflectors the form kernels apply per pass over a row or column (compact
/// WY): each pass reads and writes the row once for gk_blk reflectors,
/// where one at a time the row kernel was bound by shared memory (ncu,
/// H100, n = 32: the pipe 97 % busy, each reflector reading the row twice
/// and writing it once).
constexpr int gk_blk = 4;

/// T of a block of BLK reflectors from G = W^H W (above the diagonal) and
/// their tau: LAPACK larft's recurrence (forward, columnwise; H_0 ... H_BLK-1
/// = I - W T W^H): T(b, b) = tau_b, T(c, b) = -tau_b sum_{c <= e < b} T(c, e)
/// G(e, b).
template <int BLK, class T>
EMGPU_HD inline void gk_larft(const T (&g)[BLK][BLK], const T (&tau)[BLK], T (&t)[BLK][BLK]) {
EMGPU_UNROLL
  for (int b = 0; b < BLK; ++b) {
EMGPU_UNROLL
    for (int c = 0; c < BLK; ++c) t[c][b] = T(0);
    t[b][b] = tau[b];
EMGPU_UNROLL
    for (int c = 0; c < b; ++c) {
      T v = T(0);
EMGPU_UNROLL
      for (int e = c; e < b; ++e) v += t[c][e] * g[e][b];
      t[c][b] = -tau[b] * v;
    }
  }
}

/// Whether the CUDA form kernel takes U and V by columns (gk_form_cols_kernel,
/// with the blocks' T), from the rows of U.
inline bool gk_form_by_cols(index_t m) { return m >= 32 && m <= 128; }

/// Entries of T (the blocks' gk_blk x gk_blk triangular factors, U's then
/// V's) per matrix, the workspace of the CUDA column kernel.
EMGPU_HD inline index_t gk_tb_count(index_t n) {
  return n <= 0 ? 0 : ((n + gk_blk - 1) / gk_blk + (n + gk_blk - 2) / gk_blk) * gk_blk * gk_blk;
}

#if defined(__CUDACC__)

/// Shared memory of the form kernel for ys rows per block: the rows, then
/// two blocks of gk_blk reflectors (with their tau) while the rows are
/// built, and in the same place two blocks of eight columns of U_B while
/// they are multiplied (H100, 32 x 32 complex<double>: 20.6 KB a block
/// instead of 24.7, ten blocks per SM instead of nine).
template <class T>
inline std::size_t gk_form_bytes(index_t m, index_t n, int ys) {
  return align16(std::size_t(ys) * std::size_t(m) * sizeof(T)) +
         std::max(2 * gk_blk * std::size_t(m + 1) * sizeof(T), 2 * 8 * std::size_t(n) * sizeof(real_type_t<T>));
}

template <class T>
inline int gk_rows_width(const backend::cuda& b, index_t m, index_t n) {
  const int optin = smem_optin(b.device) - 1024;
  const std::size_t log = gk_log_stage(n) * std::size_t(gk_log_chunk_min(n)) * sizeof(real_type_t<T>);
  int w = 32;
  // The form kernel's largest block: one lane per row, w rows.
  while (w > 0 && std::max(gk_form_bytes<T>(m, n, w),
                           align16(std::size_t(w) * std::size_t(n) * sizeof(real_type_t<T>)) + log) >
                      std::size_t(optin))
    w /= 2;
  return w;
}

/// Reals of the log the basis kernel stages at a time (gk_log_stage reals
/// of shared memory each), beside rows_bytes of rows: as many as fit
/// without costing a resident block per SM, at least gk_log_chunk_min(n),
/// at most the log itself. The shared memory per block sets how many row
/// blocks an SM holds, and their latency-bound replay runs faster with
/// more of them (H200, 100 000 x 32 x 32 complex<double>,
/// U and V, complex rows, fixed chunks: 384 reals, 20 KB a block, 11 blocks
/// per SM: 48.1 ms; 256 or 192, 12 blocks: 46.2 / 46.3; 768: 53.8); a chunk
/// shorter than the room left changes nothing but the number of refills.
template <class R>
inline index_t gk_log_chunk(const backend::cuda& b, std::size_t rows_bytes, index_t n, index_t cap) {
  int per_sm = 0, reserved = 0, max_blocks = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, b.device));
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, b.device));
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&max_blocks, cudaDevAttrMaxBlocksPerMultiprocessor, b.device));
  const index_t cmin = gk_log_chunk_min(n);
  const std::size_t per = gk_log_stage(n) * sizeof(R);
  const std::size_t need = rows_bytes + per * std::size_t(cmin) + std::size_t(reserved);
  const std::size_t blocks = std::clamp<std::size_t>(std::size_t(per_sm) / need, 1, std::size_t(max_blocks));
  const std::size_t room = std::min(std::size_t(per_sm) / blocks - std::size_t(reserved),
                                    std::size_t(smem_optin(b.device)) - 1024);
  index_t c = room > rows_bytes ? index_t((room - rows_bytes) / per) : 0;
  c = std::min(c, cap);
  c -= c & 1;
  return c < cmin ? cmin : c;
}

/// One rotation of a real row: returns c x + s y (the entry it finishes)
/// and leaves c y - s x in x. The fused forms are spelled out so that the
/// basis kernel's one-sweep and two-sweep passes (gk_sweep_real,
/// gk_sweep2_real) round alike: the split test checks a run that pauses
/// after every sweep (never two in one pass) bitwise against one that
/// does not.
template <class R, class R2>
__device__ __forceinline__ R gk_rot_one(R& x, R y, R2 q) {
  const R out = fma(x, q.x, y * q.y);
  x = fma(y, q.x, -(x * q.y));
  return out;
}

/// gk_rotate_row's sweep case (rotation k on entries c0 + k, c0 + k + 1) on
/// a real row at stride w in shared memory (SW > 0: w = SW known at compile
/// time, so that the entries' offsets are immediates; else w_rt), with the
/// (c, s) pairs 2R-aligned, four rotations at a time: the four entries and
/// pairs are loaded before the first store (the compiler cannot tell that a
/// store does not alias the next loads, and each rotation would wait out a
/// load). Same operations in the same order as gk_rotate_row. Why the
/// pointer steps and the constant stride: with 64-bit indices times a
/// runtime stride, integer instructions were half of the kernel's (ncu,
/// H100, 100 000 x 32, issue-bound at 2.8 instructions a cycle).
template <int SW, class R>
__device__ __forceinline__ void gk_sweep_real(R* x, int w_rt, int c0, int cnt, const R* cs) {
  using R2 = std::conditional_t<std::is_same_v<R, double>, double2, float2>;
  const int w = SW > 0 ? SW : w_rt;
  const R2* p = reinterpret_cast<const R2*>(cs);
  R* e = x + c0 * w;
  R xv = e[0];
  int k = 0;
  for (; k + 4 <= cnt; k += 4, e += 4 * w, p += 4) {
    R y[4];
    R2 q[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      y[u] = e[(u + 1) * w];
      q[u] = p[u];
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      e[u * w] = gk_rot_one(xv, y[u], q[u]);
    }
  }
  for (; k < cnt; ++k, e += w, ++p) {
    e[0] = gk_rot_one(xv, e[w], p[0]);
  }
  e[0] = xv;
}

/// Two consecutive QR sweeps A and B on the same first column c0 (B no
/// longer than A: 1 <= cb <= ca) in one pass over a real row at stride w
/// (SW as in gk_sweep_real): A runs one rotation ahead of B, and each entry
/// is loaded and stored once for both, its final value under A handed to B
/// in a register. Every entry gets the same operations in the same order as
/// with the sweeps one after the other. Why: one sweep at a time, the basis
/// kernel kept the shared-memory pipe 95 % busy (ncu, H100, 100 000 x 32:
/// a load and a store of the row entry per rotation beside the broadcast
/// (c, s)); consecutive sweeps of a random matrix mostly start on the same
/// column, B ending where A did or one column before (deflation).
template <int SW, class R>
__device__ __forceinline__ void gk_sweep2_real(R* x, int w_rt, int c0, int ca, const R* csa, int cb, const R* csb) {
  using R2 = std::conditional_t<std::is_same_v<R, double>, double2, float2>;
  const int w = SW > 0 ? SW : w_rt;
  const R2* pa = reinterpret_cast<const R2*>(csa);
  const R2* pb = reinterpret_cast<const R2*>(csb);
  R* e = x + c0 * w;
  // xa: the entry A's next rotation takes first (A's rotations so far
  // applied); xb: likewise for B, its A rotations all applied.
  R xa = e[0], xb;
  xb = gk_rot_one(xa, e[w], pa[0]);
  // Step k: A's rotation k + 1 finishes entry c0 + k + 1 under A (f), then
  // B's rotation k finishes entry c0 + k.
  const int full = cb < ca ? cb : ca - 1;
  int k = 0;
  for (; k + 2 <= full; k += 2, e += 2 * w) {
    const R y0 = e[2 * w], y1 = e[3 * w];
    const R2 qa0 = pa[k + 1], qa1 = pa[k + 2], qb0 = pb[k], qb1 = pb[k + 1];
    R f = gk_rot_one(xa, y0, qa0);
    e[0] = gk_rot_one(xb, f, qb0);
    f = gk_rot_one(xa, y1, qa1);
    e[w] = gk_rot_one(xb, f, qb1);
  }
  for (; k < full; ++k, e += w) {
    const R f = gk_rot_one(xa, e[2 * w], pa[k + 1]);
    e[0] = gk_rot_one(xb, f, pb[k]);
  }
  if (cb == ca) {  // B's last rotation takes A's last entry, xa
    e[0] = gk_rot_one(xb, xa, pb[k]);
    e[w] = xb;
    return;
  }
  e[0] = xb;  // B ended on entry c0 + cb; A goes on from its rotation cb + 1
  e += w;
  for (int j = cb + 1; j < ca; ++j, e += w) {
    e[0] = gk_rot_one(xa, e[w], pa[j]);
  }
  e[0] = xa;
}

/// Kernel 3: one thread per row of U_B or V_B (real), w rows per block
/// (gk_rows_width), the rows in shared memory at stride w (a warp's entries
/// of one column are contiguous: no bank conflicts). The block stages the
/// matrix's log through shared memory chunk by chunk, loaded by all its
/// threads at once: read straight from global memory every rotation waited
/// out a load (H100, 100 000 x 32: 20 ms for the rows). CODED (the log's
/// format, gk_log_coded): each staged real becomes a pair, a rotation's
/// code its (c, s) (gk_decode), a header field itself (and 0), so the
/// sweeps read (c, s) pairs either way and each code is decoded once per
/// block rather than by every lane. Every thread
/// follows the same log, so the loop is uniform and threads past the last
/// row only help with the loads. Block b: matrix b / per, then U_B's row
/// blocks, then V_B's.
template <class T, int SW, bool CODED>
__global__ void __launch_bounds__(32) gk_basis_kernel(gk_rows_args<T> a, index_t blocks_u, index_t blocks_v,
                                                      int w, index_t chunk) {
  using R = real_type_t<T>;
  constexpr int S = CODED ? 2 : 1;  // shared-memory reals per staged real
  extern __shared__ __align__(16) unsigned char emgpu_gk_basis_smem[];
  const index_t per = blocks_u + blocks_v;
  const index_t k = index_t(blockIdx.x) / per;
  const index_t j = index_t(blockIdx.x) % per;
  if (a.ctl[k].state == 2) return;  // uniform over the block
  const bool is_u = j < blocks_u;
  const index_t n = a.n;
  const index_t r = (is_u ? j : j - blocks_u) * w + threadIdx.x;
  const bool active = r < n;
  R* x = reinterpret_cast<R*>(emgpu_gk_basis_smem) + threadIdx.x;
  R* buf = reinterpret_cast<R*>(emgpu_gk_basis_smem + align16(std::size_t(w) * std::size_t(n) * sizeof(R)));
  const R* log = (is_u ? a.log_l : a.log_r) + k * a.cap;
  R* g = (is_u ? a.ub : a.vb) + k * n * n + r;  // column-major: the block's stores coalesce
  if (active) {
    if (a.first)
      for (index_t c = 0; c < n; ++c) x[c * w] = R(c == r ? 1 : 0);
    else
      for (index_t c = 0; c < n; ++c) x[c * w] = g[c * n];
  }
  const gk_row<R> row{x, w};
  index_t base = 0;
  // All of a thread's loads of a refill are issued before its first store
  // (one load latency a refill; the plain loop waited out each load: ncu,
  // H100, 100 000 x 32, 34 % of the kernel's stall samples).
  auto refill = [&](index_t from) {
    constexpr int U = 8;
    __syncwarp();
    base = from;
    const index_t lim = chunk < a.cap - from ? chunk : a.cap - from;
    using R2 = std::conditional_t<std::is_same_v<R, double>, double2, float2>;
    R2* b2 = reinterpret_cast<R2*>(buf);
    for (index_t i0 = threadIdx.x; i0 < lim; i0 += U * w) {
      R t[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const index_t i = i0 + u * w;
        t[u] = i < lim ? __ldg(log + from + i) : R(0);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const index_t i = i0 + u * w;
        if (i < lim) {  // uniform over the warp past the chunk's end: no decoding there
          if constexpr (CODED) {
            R c, sn;
            gk_decode(t[u], c, sn);
            const bool hdr = t[u] > R(2);  // gk_hdr_put: fields + 3
            b2[i] = hdr ? R2{t[u], R(0)} : R2{c, sn};
          } else {
            buf[i] = t[u];
          }
        }
      }
    }
    __syncwarp();
  };
  refill(0);
  for (index_t pos = 0;;) {
    if (pos + 4 > base + chunk) refill(pos);
    // Staged position i at buf[S i]: a header's fields at h[0], h[S],
    // h[2 S], h[3 S], the sweep's (c, s) pairs from h + 4 S (2R-aligned: pos
    // is even, buf 16-byte aligned).
    const R* h = buf + S * (pos - base);
    const int kind = int(gk_hdr_get(h[0], CODED));
    if (kind == gk_done || kind == gk_pause) break;
    const index_t lo = gk_hdr_get(h[S], CODED), hi = gk_hdr_get(h[2 * S], CODED), zi = gk_hdr_get(h[3 * S], CODED);
    const index_t cnt = gk_sweep_count(kind, lo, hi, zi, is_u);
    const index_t next = pos + gk_rec_len(cnt, CODED);
    // A chunk holds two sweeps and a header (gk_log_chunk_min): after a
    // refill at pos this record and the next one's header are staged.
    if (next + (kind == gk_sweep_qr ? 4 : 0) > base + chunk) {
      refill(pos);
      h = buf;
    }
    if (kind == gk_sweep_qr) {
      const R* h2 = buf + S * (next - base);
      if (int(gk_hdr_get(h2[0], CODED)) == gk_sweep_qr && gk_hdr_get(h2[S], CODED) == lo &&
          gk_hdr_get(h2[2 * S], CODED) <= hi) {
        const index_t cnt2 = gk_hdr_get(h2[2 * S], CODED) - lo;
        if (next + gk_rec_len(cnt2, CODED) > base + chunk) {
          refill(pos);
          h = buf;
          h2 = buf + S * (next - pos);
        }
        if (active) gk_sweep2_real<SW>(x, w, int(lo), int(cnt), h + 4 * S, int(cnt2), h2 + 4 * S);
        pos = next + gk_rec_len(cnt2, CODED);
        continue;
      }
    }
    if (active) {
      if (kind == gk_sweep_qr) gk_sweep_real<SW>(x, w, int(lo), int(cnt), h + 4 * S);
      else if (is_u) gk_rotate_row(row, 0, zi + 1, cnt, h + 4 * S, true, zi, 1);
      else gk_rotate_row(row, 0, hi - 1, cnt, h + 4 * S, true, hi, -1);
    }
    pos = next;
  }
  if (active)
    for (index_t c = 0; c < n; ++c) g[c * n] = x[c * w];
}

/// Asynchronous copy of one element (4, 8 or 16 bytes) into shared memory.
template <class T>
__device__ __forceinline__ void gk_cp_async(T* s, const T* g) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  const unsigned a = unsigned(__cvta_generic_to_shared(s));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(a), "l"(g), "n"(int(sizeof(T))) : "memory");
#else
  *s = *g;
#endif
}

/// Stages reflectors q0 .. q0 + gk_blk - 1 of the left (U) or right (V)
/// side as dense columns of W (column b at wb[b (m + 1) + i], entries from
/// the first unit entry p0 on; its tau at wb[b (m + 1) + m]): the entries
/// below each unit entry by cp.async (the caller commits the group), the
/// unit entries and the zeros above them by plain stores, columns past the
/// last reflector zero (tau 0: no effect).
template <int BLK, class A, class T>
__device__ __forceinline__ void gk_stage_block(const A& a, index_t k, bool is_u, index_t q0, index_t steps, T* wb,
                                               int w) {
  const index_t m = a.m, n = a.n;
  const index_t len = is_u ? m : n;
  const T* ak = a.a + k * a.sa;
  const index_t p0 = is_u ? q0 : q0 + 1;
  const int lane = int(threadIdx.x);
  for (int b = 0; b < BLK; ++b) {
    T* col = wb + b * (m + 1);
    const index_t q = q0 + b, p = p0 + b;
    if (q < steps) {
      if (is_u)
        for (index_t i = p + 1 + lane; i < len; i += w) gk_cp_async(col + i, ak + q * a.lda + i);
      else
        for (index_t i = p + 1 + lane; i < len; i += w) gk_cp_async(col + i, ak + q + i * a.lda);
      if (lane == 0) gk_cp_async(col + m, a.tau + 2 * k * n + (is_u ? q : n + q));
      for (index_t i = p0 + lane; i <= p && i < len; i += w) col[i] = T(i == p ? 1 : 0);
    } else {
      for (index_t i = p0 + lane; i < len; i += w) col[i] = T(0);
      if (lane == 0) col[m] = T(0);
    }
  }
}

/// Sum of v over the lanes l and l ^ mask (a butterfly step).
template <class T>
__device__ __forceinline__ T gk_xor_sum(T v, int mask) {
  constexpr unsigned full = 0xffffffffu;
  if constexpr (is_complex_v<T>)
    return T(v.real() + __shfl_xor_sync(full, v.real(), mask), v.imag() + __shfl_xor_sync(full, v.imag(), mask));
  else
    return v + __shfl_xor_sync(full, v, mask);
}

/// The BLK x BLK upper-triangular T of a staged block of reflectors (LAPACK
/// larft, forward, columnwise: H_q0 ... H_q0+BLK-1 = I - W T W^H), on every
/// lane of the warp: G = W^H W from every lane's share of rows p0 .. len-1
/// (w lanes), summed by butterflies, then gk_larft. Column b of W at W[b ws
/// + i], its tau at W[b ws + ws - 1].
template <int BLK, class T>
__device__ __forceinline__ void gk_block_t(const T* W, index_t ws, index_t p0, index_t len, int w,
                                           T (&t)[BLK][BLK]) {
  const int lane = int(threadIdx.x);
  T g[BLK][BLK];
#pragma unroll
  for (int c = 0; c < BLK; ++c)
#pragma unroll
    for (int b = 0; b < BLK; ++b) g[c][b] = T(0);
  for (index_t i = p0 + lane; i < len; i += w) {
    T wi[BLK];
#pragma unroll
    for (int b = 0; b < BLK; ++b) wi[b] = W[b * ws + i];
#pragma unroll
    for (int b = 1; b < BLK; ++b)
#pragma unroll
      for (int c = 0; c < b; ++c) g[c][b] = madd_conj(g[c][b], wi[c], wi[b]);
  }
#pragma unroll
  for (int b = 1; b < BLK; ++b)
#pragma unroll
    for (int c = 0; c < b; ++c)
      for (int mask = 1; mask < 32; mask <<= 1) g[c][b] = gk_xor_sum(g[c][b], mask);
  T tau[BLK];
#pragma unroll
  for (int b = 0; b < BLK; ++b) tau[b] = W[b * ws + ws - 1];
  gk_larft(g, tau, t);
}

/// gk_reflect_row for a block (one warp) at once, LPR lanes per row (1 or
/// 2): lane group rr builds row r of its block (active: r is a row), lane h
/// of a pair the entries i = h mod 2 (y: entry i at y[i * ys], ys = rows
/// per block). Reflectors go BLK at a time in compact WY form, H_q ...
/// H_q+BLK-1 = I - W T W^H (LAPACK larft, forward, columnwise), so a row
/// takes y - ((y W) T) W^H: one pass for the BLK dot products, one for the
/// update. The next block is copied into shared memory while this one is
/// applied (wb: two blocks). Why: the host version reads the reflectors
/// through L1, which the shared-memory carveout of the row kernels leaves
/// small beside a dozen matrices' reflectors per SM (H100, 100 000 x 32 x
/// 32: 22 ms for the vectors read that way, 11.4 staged one reflector at a
/// time, which ncu then showed bound by the shared-memory traffic of the
/// row: two reads and a write of it per reflector). The sums run in
/// another order than on the host: the factors differ by rounding.
template <int BLK, int LPR, class A, class T>
__device__ __forceinline__ void gk_reflect_row_staged(const A& a, index_t k, bool is_u, index_t r, bool active,
                                                      T* y, int ys, T* wb, int w) {
  static_assert(LPR == 1 || LPR == 2);
  const index_t m = a.m, n = a.n;
  const index_t len = is_u ? m : n;
  const index_t steps = is_u ? n : n - 1;
  const int lane = int(threadIdx.x), h = LPR == 2 ? lane & 1 : 0;
  if (active)
    for (index_t i = h; i < len; i += LPR) y[i * ys] = T(i == r ? 1 : 0);
  if (steps <= 0) return;
  const std::size_t slot = std::size_t(BLK) * std::size_t(m + 1);
  gk_stage_block<BLK>(a, k, is_u, 0, steps, wb, w);
  emgpu::detail::cp_async_commit();
  for (index_t q0 = 0, sl = 0; q0 < steps; q0 += BLK, sl ^= 1) {
    const T* W = wb + sl * slot;
    if (q0 + BLK < steps) gk_stage_block<BLK>(a, k, is_u, q0 + BLK, steps, wb + (sl ^ 1) * slot, w);
    emgpu::detail::cp_async_commit();
    emgpu::detail::cp_async_wait<1>();
    __syncwarp();
    const index_t p0 = is_u ? q0 : q0 + 1;  // first unit entry of the block
    T t[BLK][BLK];
    gk_block_t<BLK>(W, m + 1, p0, len, w, t);
    // s = y W over this lane's entries, summed over the pair; u = s T.
    T sv[BLK];
#pragma unroll
    for (int b = 0; b < BLK; ++b) sv[b] = T(0);
    const index_t i0 = LPR == 2 ? p0 + ((p0 + h) & 1) : p0;  // this lane's first entry
    if (active)
      for (index_t i = i0; i < len; i += LPR) {
        const T yi = y[i * ys];
#pragma unroll
        for (int b = 0; b < BLK; ++b) sv[b] = madd(sv[b], yi, W[b * (m + 1) + i]);
      }
    if constexpr (LPR == 2) {
#pragma unroll
      for (int b = 0; b < BLK; ++b) sv[b] = gk_xor_sum(sv[b], 1);
    }
    if (active) {
      T u[BLK];
#pragma unroll
      for (int b = 0; b < BLK; ++b) {
        u[b] = T(0);
#pragma unroll
        for (int c = 0; c <= b; ++c) u[b] += sv[c] * t[c][b];
      }
      for (index_t i = i0; i < len; i += LPR) {
        T yi = y[i * ys];
#pragma unroll
        for (int b = 0; b < BLK; ++b) yi = msub_conj(yi, W[b * (m + 1) + i], u[b]);
        y[i * ys] = yi;
      }
    }
    __syncwarp();  // slot sl is refilled at the next block
  }
}

/// Kernel 4: LPR lanes per row of U or V (1 or 2), ys = blockDim.x / LPR
/// rows per block (one warp), the row of Q_L or Q_R in shared memory at
/// stride ys, built with the reflectors staged, BLK per pass
/// (gk_reflect_row_staged), then multiplied by U_B or V_B eight output
/// columns at a time (8 / LPR per lane), those columns staged the same way.
/// No block barrier: a warp's __syncwarp orders the staging.
template <class T, int BLK, int LPR>
__global__ void __launch_bounds__(32) gk_form_kernel(gk_rows_args<T> a, index_t blocks_u, index_t blocks_v) {
  using R = real_type_t<T>;
  extern __shared__ __align__(16) unsigned char emgpu_gk_form_smem[];
  const int w = int(blockDim.x), ys = w / LPR, h = LPR == 2 ? int(threadIdx.x) & 1 : 0;
  const index_t m = a.m, n = a.n;
  const index_t per = blocks_u + blocks_v;
  const index_t k = index_t(blockIdx.x) / per;
  const index_t j = index_t(blockIdx.x) % per;
  const bool is_u = j < blocks_u;
  const int rr = int(threadIdx.x) / LPR;
  const index_t r = (is_u ? j : j - blocks_u) * ys + rr;
  const bool active = r < (is_u ? m : n);
  const std::size_t rows = align16(std::size_t(ys) * std::size_t(m) * sizeof(T));
  T* y = reinterpret_cast<T*>(emgpu_gk_form_smem) + rr;
  T* wb = reinterpret_cast<T*>(emgpu_gk_form_smem + rows);
  // U_B's columns take the reflectors' place once the rows are built (the
  // build waits for its last copies and ends on a __syncwarp).
  R* bb = reinterpret_cast<R*>(wb);
  gk_reflect_row_staged<BLK, LPR>(a, k, is_u, r, active, y, ys, wb, w);

  const R* d = a.de + 2 * k * n;
  const index_t* pm = a.perm + k * n;
  const R* bm = (is_u ? a.ub : a.vb) + k * n * n;
  const bool signs = is_u != a.sign_v;
  // Output columns j0 .. j0 + 7 staged as U_B(i, perm[j0 + t]) at
  // slot[8 i + t]: lane h reads its four as two 16-byte words.
  const auto stage = [&](index_t j0, R* dst) {
    for (index_t e = threadIdx.x; e < 8 * n; e += w) {
      const index_t i = e / 8, t = e % 8;
      if (j0 + t < n) gk_cp_async(dst + e, bm + pm[j0 + t] * n + i);
      else dst[e] = R(0);
    }
  };
  T* g = (is_u ? a.u + k * a.su : a.v + k * a.sv) + r;
  const index_t ld = is_u ? a.ldu : a.ldv;
  stage(0, bb);
  emgpu::detail::cp_async_commit();
  for (index_t j0 = 0, sl = 0; j0 < n; j0 += 8, sl ^= 1) {
    const R* cb = bb + sl * 8 * n + (8 / LPR) * h;
    if (j0 + 8 < n) stage(j0 + 8, bb + (sl ^ 1) * 8 * n);
    emgpu::detail::cp_async_commit();
    emgpu::detail::cp_async_wait<1>();
    __syncwarp();
    constexpr int NC = 8 / LPR;  // this lane's output columns
    const index_t jh = j0 + NC * h;
    if (active && jh < n) {
      T acc[NC];
#pragma unroll
      for (int t = 0; t < NC; ++t) acc[t] = T(0);
      for (index_t i = 0; i < n; ++i) {
        const T yi = y[i * ys];
        const R* bi = cb + 8 * i;
#pragma unroll
        for (int t = 0; t < NC; ++t) acc[t] += mul_real(yi, bi[t]);
      }
#pragma unroll
      for (int t = 0; t < NC; ++t)
        if (jh + t < n) {
          const index_t src = pm[jh + t];
          g[(jh + t) * ld] = (signs && d[src] < R(0)) ? -acc[t] : acc[t];
        }
    }
    __syncwarp();
  }
}

/// Stages reflectors q0 .. q0 + BLK - 1 (one warp) as columns of M entries,
/// zero outside each reflector (1 at its unit entry), so that the column
/// kernel runs its unrolled loops without bounds, and after them the
/// block's T (BLK x BLK from tsrc): entries below the unit entry and T by
/// cp.async (the caller commits), the rest by plain stores.
template <int BLK, int M, class A, class T>
__device__ __forceinline__ void gk_stage_block_padded(const A& a, index_t k, bool is_u, int q0, int steps, T* wb,
                                                      const T* tsrc) {
  const int len = int(is_u ? a.m : a.n);
  const T* ak = a.a + k * a.sa;
  const index_t step = is_u ? 1 : a.lda;
  const int p0 = is_u ? q0 : q0 + 1, lane = int(threadIdx.x);
  if (lane < BLK * BLK) gk_cp_async(wb + BLK * M + lane, tsrc + lane);
#pragma unroll
  for (int b = 0; b < BLK; ++b) {
    T* col = wb + b * M;
    const int q = q0 + b, p = p0 + b;
    const bool live = q < steps;
    const T* src = is_u ? ak + index_t(q) * a.lda : ak + q;
#pragma unroll
    for (int r = 0; r < M / 32; ++r) {
      const int i = lane + 32 * r;
      if (live && i > p && i < len) gk_cp_async(col + i, src + index_t(i) * step);
      else col[i] = T(live && i == p ? 1 : 0);
    }
  }
}

/// Calls f(std::integral_constant<int, t>{}) for t = t0 .. N - 1 (N <= 32)
/// through one jump into straight-line code (a switch falling through),
/// where `if (t >= t0)` per t cost a compare and a branch each.
template <int N, class F>
__device__ __forceinline__ void gk_unroll_from(int t0, F&& f) {
  static_assert(N <= 32);
#define EMGPU_GK_CASE(t)                                     \
  case t:                                                    \
    if constexpr (t < N) f(std::integral_constant<int, t>{}); \
    [[fallthrough]];
  switch (t0) {
    EMGPU_GK_CASE(0) EMGPU_GK_CASE(1) EMGPU_GK_CASE(2) EMGPU_GK_CASE(3) EMGPU_GK_CASE(4) EMGPU_GK_CASE(5)
    EMGPU_GK_CASE(6) EMGPU_GK_CASE(7) EMGPU_GK_CASE(8) EMGPU_GK_CASE(9) EMGPU_GK_CASE(10) EMGPU_GK_CASE(11)
    EMGPU_GK_CASE(12) EMGPU_GK_CASE(13) EMGPU_GK_CASE(14) EMGPU_GK_CASE(15) EMGPU_GK_CASE(16)
    EMGPU_GK_CASE(17) EMGPU_GK_CASE(18) EMGPU_GK_CASE(19) EMGPU_GK_CASE(20) EMGPU_GK_CASE(21)
    EMGPU_GK_CASE(22) EMGPU_GK_CASE(23) EMGPU_GK_CASE(24) EMGPU_GK_CASE(25) EMGPU_GK_CASE(26)
    EMGPU_GK_CASE(27) EMGPU_GK_CASE(28) EMGPU_GK_CASE(29) EMGPU_GK_CASE(30) EMGPU_GK_CASE(31)
    default:
      break;
  }
#undef EMGPU_GK_CASE
}

/// Kernel 4 for m <= M (M = 32, 64, 128), by columns: column j of U is Q_L
/// [U_B(:, perm_j) s_j; 0] (s_j the sign of d there, when U takes it), the
/// reflectors applied last block first, gk_blk at a time in compact WY
/// form: x := x - W (T (W^H x)), T from kernel 1 (gk_block_ts), staged with W.
/// LPC lanes hold a column, M / LPC of its entries each in registers (rows
/// h, h + LPC, ...); 32 / LPC columns per block (one warp); V likewise with
/// Q_R and V_B. Why columns: the row kernel (gk_form_kernel) builds rows of
/// Q_L and then multiplies them by U_B, a quarter more arithmetic, with the
/// rows in shared memory (ncu, H100, n = 32: its shared-memory pipe 68 %
/// busy, FP64 27 %); here shared memory carries only the staged reflectors,
/// read by broadcast. The sums run in another order than on the host: the
/// factors differ by rounding.
template <class T, int M, int LPC>
__global__ void __launch_bounds__(32) gk_form_cols_kernel(gk_rows_args<T> a, index_t blocks_u, index_t blocks_v) {
  using R = real_type_t<T>;
  constexpr int BLK = gk_blk, RPL = M / LPC, CPB = 32 / LPC;
  static_assert(M % 32 == 0 && 32 % LPC == 0 && RPL <= 32);
  extern __shared__ __align__(16) unsigned char emgpu_gk_formc_smem[];
  T* wb = reinterpret_cast<T*>(emgpu_gk_formc_smem);
  const int lane = int(threadIdx.x), h = lane % LPC;
  const index_t m = a.m, n = a.n;
  const index_t per = blocks_u + blocks_v;
  const index_t k = index_t(blockIdx.x) / per;
  const index_t j = index_t(blockIdx.x) % per;
  const bool is_u = j < blocks_u;
  const index_t col = (is_u ? j : j - blocks_u) * CPB + lane / LPC;
  const bool active = col < n;
  const int len = int(is_u ? m : n), steps = int(is_u ? n : n - 1);
  T x[RPL];
  {
    const R* d = a.de + 2 * k * n;
    const index_t src = active ? a.perm[k * n + col] : 0;
    const bool neg = active && is_u != a.sign_v && d[src] < R(0);
    const R* bc = (is_u ? a.ub : a.vb) + k * n * n + src * n;
#pragma unroll
    for (int t = 0; t < RPL; ++t) {
      const index_t i = h + LPC * t;
      const R v = active && i < n ? bc[i] : R(0);
      x[t] = T(neg ? -v : v);
    }
  }
  const int nbu = int((n + BLK - 1) / BLK), nbv = int((n + BLK - 2) / BLK);
  const int nblk = (steps + BLK - 1) / BLK;
  const T* tbk = a.tb + (k * (nbu + nbv) + (is_u ? 0 : nbu)) * (BLK * BLK);
  constexpr int slot = BLK * M + BLK * BLK;  // W, then T
  if (nblk > 0)
    gk_stage_block_padded<BLK, M>(a, k, is_u, (nblk - 1) * BLK, steps, wb, tbk + (nblk - 1) * (BLK * BLK));
  emgpu::detail::cp_async_commit();
  for (int qb = nblk - 1, sl = 0; qb >= 0; --qb, sl ^= 1) {
    const T* W = wb + sl * slot;
    if (qb > 0)
      gk_stage_block_padded<BLK, M>(a, k, is_u, (qb - 1) * BLK, steps, wb + (sl ^ 1) * slot,
                                    tbk + (qb - 1) * (BLK * BLK));
    emgpu::detail::cp_async_commit();
    emgpu::detail::cp_async_wait<1>();
    __syncwarp();
    const int p0 = is_u ? qb * BLK : qb * BLK + 1;
    const int t0 = p0 / LPC;  // W is zero above p0 (and below len, as x)
    T sv[BLK];
#pragma unroll
    for (int b = 0; b < BLK; ++b) sv[b] = T(0);
    gk_unroll_from<RPL>(t0, [&](auto tc) {
      constexpr int t = decltype(tc)::value;
      const int i = h + LPC * t;
#pragma unroll
      for (int b = 0; b < BLK; ++b) sv[b] = madd_conj(sv[b], W[b * M + i], x[t]);
    });
#pragma unroll
    for (int mask = 1; mask < LPC; mask <<= 1)
#pragma unroll
      for (int b = 0; b < BLK; ++b) sv[b] = gk_xor_sum(sv[b], mask);
    const T* tq = W + BLK * M;
    T u[BLK];
#pragma unroll
    for (int c = 0; c < BLK; ++c) {
      u[c] = T(0);
#pragma unroll
      for (int b = c; b < BLK; ++b) u[c] += tq[c * BLK + b] * sv[b];
    }
    gk_unroll_from<RPL>(t0, [&](auto tc) {
      constexpr int t = decltype(tc)::value;
      const int i = h + LPC * t;
#pragma unroll
      for (int b = 0; b < BLK; ++b) x[t] = msub(x[t], W[b * M + i], u[b]);
    });
    __syncwarp();  // slot sl is refilled at the next block
  }
  if (active) {
    T* g = (is_u ? a.u + k * a.su + col * a.ldu : a.v + k * a.sv + col * a.ldv);
#pragma unroll
    for (int t = 0; t < RPL; ++t) {
      const int i = h + LPC * t;
      if (i < len) g[i] = x[t];
    }
  }
}

/// Launches the column kernel for m <= M (one warp per 32 / LPC columns);
/// kernel 1 (gk_bidiag_op) has left the blocks' T in a.tb.
template <class T, int M, int LPC>
inline void gk_form_cols_launch(const backend::cuda& b, const gk_rows_args<T>& a, index_t count) {
  constexpr int cpb = 32 / LPC;
  const index_t bu = a.u ? (a.n + cpb - 1) / cpb : 0, bv = a.v ? (a.n + cpb - 1) / cpb : 0;
  const index_t grid = count * (bu + bv);
  if (grid == 0) return;
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  const std::size_t smem = 2 * std::size_t(gk_blk) * std::size_t(M + gk_blk) * sizeof(T);
  auto kern = gk_form_cols_kernel<T, M, LPC>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kern<<<unsigned(grid), 32u, smem, b.stream>>>(a, bu, bv);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (vectors)", __FILE__, __LINE__);
}

/// Slot of row r in the tensor-core form kernel's staged W (row-major, gk_blk
/// reflectors a row): rows 4..7 of every eight swapped in pairs, so that
/// both of the kernel's fragment reads (the product W^H X: rows 2q + i,
/// reflector g / 2; the update: row g, reflector q) hit distinct banks within
/// each half-warp.
__device__ __forceinline__ int gk_mma_row(int r) { return r ^ ((r >> 2) & 1); }

/// Whether the CUDA form kernel for T at m rows is the tensor-core one
/// (gk_form_mma_kernel): FP64 types, 32 to 64 rows.
template <class T>
inline bool gk_form_by_mma(index_t m) {
  return (std::is_same_v<T, double> || std::is_same_v<T, complex<double>>) && m >= 32 && m <= 64;
}

/// Kernel 4 on the FP64 tensor cores, for m <= M = 32 or 64 rows (M / 8 row
/// tiles, rows past m zero): the column kernel's
/// arithmetic (x := x - W (T (W^H x)) per block of gk_blk reflectors, last
/// block first, with kernel 1's T) on 8 NCT columns of U or V per warp at
/// once, held transposed as accumulator fragments: X^T (8 columns x 8 rows
/// a tile; lane 4g + q holds column g, rows 2q and 2q + 1). That layout is
/// also an A operand whose k runs over rows 2q and 2q + 1, so S^T = X^T
/// conj(W) takes the tiles as they are, with no shuffle (mma.m16n8k8: two
/// column tiles, one row tile); likewise the even columns of S^T and U'^T
/// (reflector q at column 2q, the odd ones zero) are the A operands of U'^T
/// = -S^T T^T and of the update X^T += U'^T W^T (mma.m16n8k4). Complex
/// products as four real ones on split real and imaginary parts. Row tiles
/// above the block's first unit entry are skipped; W is zero in the rest
/// above it, so those rows are left as they are. Why: the column kernel
/// loads W from shared memory for every complex FMA; here one load feeds
/// 8 NCT columns' products. H100, 10 000 x 32 x 32 complex<double>, U and
/// V (ncu): 345 us against the column kernel's 492; with m8n8k4 products
/// (half the FP64 tensor rate on the H100; tensor pipe 77 % busy) 439
/// (docs/batched-log.md, session 34). The sums run in another order than
/// the column kernel's: the factors differ by rounding.
/// @tparam NCT column tiles (8 columns each) per warp, even: 2 (128
///         registers); 4 took 399 us (226 registers, fewer warps per SM).
template <class T, int M, int NCT>
__global__ void __launch_bounds__(32) gk_form_mma_kernel(gk_rows_args<T> a, index_t blocks_u, index_t blocks_v) {
  constexpr bool CX = is_complex_v<T>;
  constexpr int BLK = gk_blk, PL = CX ? 2 : 1, RT = M / 8;
  static_assert(M == 32 || M == 64);
  static_assert(BLK == 4, "the fragments hold four reflectors a block");
  static_assert(NCT % 2 == 0, "column tiles go in pairs (m16n8 products)");
  constexpr int WN = M * BLK, slot = PL * (WN + BLK * BLK);  // doubles: W's planes, then T's
  __shared__ __align__(16) double wb[2 * slot];
  const int lane = int(threadIdx.x), g = lane >> 2, q = lane & 3;
  const index_t n = a.n, per = blocks_u + blocks_v;
  const index_t k = index_t(blockIdx.x) / per;
  const index_t j = index_t(blockIdx.x) % per;
  const bool is_u = j < blocks_u;
  const index_t c0 = (is_u ? j : j - blocks_u) * (8 * NCT);
  const int len = int(is_u ? a.m : n), steps = int(is_u ? n : n - 1);
  double xr[NCT][RT][2], xi[NCT][RT][2];
  {
    const double* d = a.de + 2 * k * n;
    const double* basis = (is_u ? a.ub : a.vb) + k * n * n;
#pragma unroll
    for (int ct = 0; ct < NCT; ++ct) {
      const index_t col = c0 + 8 * ct + g;
      const bool active = col < n;
      const index_t src = active ? a.perm[k * n + col] : 0;
      const bool neg = active && is_u != a.sign_v && d[src] < 0.0;
#pragma unroll
      for (int rt = 0; rt < RT; ++rt)
#pragma unroll
        for (int i = 0; i < 2; ++i) {
          const index_t row = 8 * rt + 2 * q + i;
          const double v = active && row < n ? basis[src * n + row] : 0.0;
          xr[ct][rt][i] = neg ? -v : v;
          xi[ct][rt][i] = 0.0;
        }
    }
  }
  const int nbu = int((n + BLK - 1) / BLK), nbv = int((n + BLK - 2) / BLK);
  const int nblk = (steps + BLK - 1) / BLK;
  const T* tbk = a.tb + (k * (nbu + nbv) + (is_u ? 0 : nbu)) * (BLK * BLK);
  const T* ak = a.a + k * a.sa;
  // Block qb into slot s: lane l stages rows l, l + 32, ... of the four
  // reflectors (below the unit entry by cp.async, the unit and the zeros by
  // plain stores), lanes 0..15 the entries of T.
  const auto stage = [&](int qb, double* s) {
    const int q0 = qb * BLK, p0 = is_u ? q0 : q0 + 1;
#pragma unroll
    for (int h = 0; h < M / 32; ++h) {
      const int r = lane + 32 * h;
      const int at = gk_mma_row(r) * BLK;
#pragma unroll
      for (int b = 0; b < BLK; ++b) {
        const int p = p0 + b;
        const bool live = q0 + b < steps;
        if (live && r > p && r < len) {
          const T* src = is_u ? ak + index_t(q0 + b) * a.lda + r : ak + (q0 + b) + index_t(r) * a.lda;
          const double* sp = reinterpret_cast<const double*>(src);
          emgpu::detail::cp_async8(s + at + b, sp);
          if constexpr (CX) emgpu::detail::cp_async8(s + WN + at + b, sp + 1);
        } else {
          s[at + b] = live && r == p ? 1.0 : 0.0;
          if constexpr (CX) s[WN + at + b] = 0.0;
        }
      }
    }
    if (lane < BLK * BLK) {
      const double* tp = reinterpret_cast<const double*>(tbk + qb * (BLK * BLK) + lane);
      emgpu::detail::cp_async8(s + PL * WN + lane, tp);
      if constexpr (CX) emgpu::detail::cp_async8(s + PL * WN + BLK * BLK + lane, tp + 1);
    }
  };
  if (nblk > 0) stage(nblk - 1, wb);
  emgpu::detail::cp_async_commit();
  const bool even = (g & 1) == 0;
  const int bs = g >> 1;  // reflector of this lane's column of S^T and U'^T (even g)
  for (int qb = nblk - 1, sl = 0; qb >= 0; --qb, sl ^= 1) {
    const double* W = wb + sl * slot;
    if (qb > 0) stage(qb - 1, wb + (sl ^ 1) * slot);
    emgpu::detail::cp_async_commit();
    emgpu::detail::cp_async_wait<1>();
    __syncwarp();
    const int rt0 = (is_u ? qb * BLK : qb * BLK + 1) >> 3;
    double sr[NCT][2], si[NCT][2], ur[NCT][2], ui[NCT][2];
#pragma unroll
    for (int ct = 0; ct < NCT; ++ct)
#pragma unroll
      for (int i = 0; i < 2; ++i) sr[ct][i] = si[ct][i] = ur[ct][i] = ui[ct][i] = 0.0;
    // S^T = X^T conj(W), two column tiles (lo, hi) a product: k = q over
    // row 8 rt + 2q, k = q + 4 over row 8 rt + 2q + 1; column 2e of S^T holds
    // reflector e.
    gk_unroll_from<RT>(rt0, [&](auto tc) {
      constexpr int rt = decltype(tc)::value;
      const int at0 = gk_mma_row(8 * rt + 2 * q) * BLK + bs, at1 = gk_mma_row(8 * rt + 2 * q + 1) * BLK + bs;
      const double w0 = W[at0], w1 = W[at1];
      const double br0 = even ? w0 : 0.0, br1 = even ? w1 : 0.0;
      if constexpr (CX) {
        const double v0 = W[WN + at0], v1 = W[WN + at1];
        const double bi0 = even ? v0 : 0.0, bi1 = even ? v1 : 0.0, nbi0 = -bi0, nbi1 = -bi1;
#pragma unroll
        for (int c = 0; c < NCT; c += 2) {
          emgpu::detail::dmma_m16n8k8(sr[c], sr[c + 1], xr[c][rt][0], xr[c + 1][rt][0], xr[c][rt][1],
                                      xr[c + 1][rt][1], br0, br1);
          emgpu::detail::dmma_m16n8k8(sr[c], sr[c + 1], xi[c][rt][0], xi[c + 1][rt][0], xi[c][rt][1],
                                      xi[c + 1][rt][1], bi0, bi1);
          emgpu::detail::dmma_m16n8k8(si[c], si[c + 1], xi[c][rt][0], xi[c + 1][rt][0], xi[c][rt][1],
                                      xi[c + 1][rt][1], br0, br1);
          emgpu::detail::dmma_m16n8k8(si[c], si[c + 1], xr[c][rt][0], xr[c + 1][rt][0], xr[c][rt][1],
                                      xr[c + 1][rt][1], nbi0, nbi1);
        }
      } else {
#pragma unroll
        for (int c = 0; c < NCT; c += 2)
          emgpu::detail::dmma_m16n8k8(sr[c], sr[c + 1], xr[c][rt][0], xr[c + 1][rt][0], xr[c][rt][1],
                                      xr[c + 1][rt][1], br0, br1);
      }
    });
    // U'^T = -S^T T^T (U' = -T S): B(f, 2e) = -T(e, f).
    {
      const double* tq = W + PL * WN;
      const double tr = tq[bs * BLK + q];
      const double ntr = even ? -tr : 0.0;
      if constexpr (CX) {
        const double ti = tq[BLK * BLK + bs * BLK + q];
        const double pti = even ? ti : 0.0, nti = -pti;
#pragma unroll
        for (int c = 0; c < NCT; c += 2) {
          emgpu::detail::dmma_m16n8k4(ur[c], ur[c + 1], sr[c][0], sr[c + 1][0], ntr);
          emgpu::detail::dmma_m16n8k4(ur[c], ur[c + 1], si[c][0], si[c + 1][0], pti);
          emgpu::detail::dmma_m16n8k4(ui[c], ui[c + 1], sr[c][0], sr[c + 1][0], nti);
          emgpu::detail::dmma_m16n8k4(ui[c], ui[c + 1], si[c][0], si[c + 1][0], ntr);
        }
      } else {
#pragma unroll
        for (int c = 0; c < NCT; c += 2)
          emgpu::detail::dmma_m16n8k4(ur[c], ur[c + 1], sr[c][0], sr[c + 1][0], ntr);
      }
    }
    // X^T += U'^T W^T: k over the block's reflectors, B(f, g) = W(8 rt + g, f).
    gk_unroll_from<RT>(rt0, [&](auto tc) {
      constexpr int rt = decltype(tc)::value;
      const int at = gk_mma_row(8 * rt + g) * BLK + q;
      const double wr = W[at];
      if constexpr (CX) {
        const double wi = W[WN + at], nwi = -wi;
#pragma unroll
        for (int c = 0; c < NCT; c += 2) {
          emgpu::detail::dmma_m16n8k4(xr[c][rt], xr[c + 1][rt], ur[c][0], ur[c + 1][0], wr);
          emgpu::detail::dmma_m16n8k4(xr[c][rt], xr[c + 1][rt], ui[c][0], ui[c + 1][0], nwi);
          emgpu::detail::dmma_m16n8k4(xi[c][rt], xi[c + 1][rt], ur[c][0], ur[c + 1][0], wi);
          emgpu::detail::dmma_m16n8k4(xi[c][rt], xi[c + 1][rt], ui[c][0], ui[c + 1][0], wr);
        }
      } else {
#pragma unroll
        for (int c = 0; c < NCT; c += 2)
          emgpu::detail::dmma_m16n8k4(xr[c][rt], xr[c + 1][rt], ur[c][0], ur[c + 1][0], wr);
      }
    });
    __syncwarp();  // slot sl is refilled at the next block
  }
#pragma unroll
  for (int ct = 0; ct < NCT; ++ct) {
    const index_t col = c0 + 8 * ct + g;
    if (col >= n) continue;
    T* out = is_u ? a.u + k * a.su + col * a.ldu : a.v + k * a.sv + col * a.ldv;
#pragma unroll
    for (int rt = 0; rt < RT; ++rt)
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const int row = 8 * rt + 2 * q + i;
        if (row < len) {
          if constexpr (CX) out[row] = T(xr[ct][rt][i], xi[ct][rt][i]);
          else out[row] = xr[ct][rt][i];
        }
      }
  }
}

/// Launches the tensor-core form kernel (one warp per 8 NCT columns of U or
/// V); kernel 1 (gk_bidiag_op) has left the blocks' T in a.tb.
template <class T, int M, int NCT>
inline void gk_form_mma_launch(const backend::cuda& b, const gk_rows_args<T>& a, index_t count) {
  constexpr int cpb = 8 * NCT;
  const index_t bu = a.u ? (a.n + cpb - 1) / cpb : 0, bv = a.v ? (a.n + cpb - 1) / cpb : 0;
  const index_t grid = count * (bu + bv);
  if (grid == 0) return;
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  gk_form_mma_kernel<T, M, NCT><<<unsigned(grid), 32u, 0, b.stream>>>(a, bu, bv);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (vectors)", __FILE__, __LINE__);
}

template <class T>
inline void gk_basis(const backend::cuda& b, const gk_rows_args<T>& a, index_t count) {
  using R = real_type_t<T>;
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  const int w = gk_rows_width<T>(b, a.m, a.n);
  detail_require(w > 0, "emgpu::batched::svd: rows too long for the CUDA row kernels");
  const index_t bu = a.ub ? (a.n + w - 1) / w : 0, bv = a.vb ? (a.n + w - 1) / w : 0;
  const index_t grid = count * (bu + bv);
  if (grid == 0) return;
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  const std::size_t rows = align16(std::size_t(w) * std::size_t(a.n) * sizeof(R));
  const index_t chunk = gk_log_chunk<R>(b, rows, a.n, a.cap);
  const std::size_t smem = rows + gk_log_stage(a.n) * std::size_t(chunk) * sizeof(R);
  // w = 32 (every Hopper launch up to n = 128) with the stride as a constant.
  const bool coded = gk_log_coded(a.n);
  auto kern = w == 32 ? (coded ? gk_basis_kernel<T, 32, true> : gk_basis_kernel<T, 32, false>)
                      : (coded ? gk_basis_kernel<T, 0, true> : gk_basis_kernel<T, 0, false>);
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(grid), unsigned(w), smem, b.stream>>>(a, bu, bv, w, chunk);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (rotations)", __FILE__, __LINE__);
}

/// Launches the form kernel with BLK reflectors per pass and LPR lanes per
/// row, w threads per block at most (gk_rows_width).
template <class T, int BLK, int LPR>
inline void gk_form_launch(const backend::cuda& b, const gk_rows_args<T>& a, index_t count, int w) {
  const int ys = w >= LPR ? w / LPR : 1;  // rows per block
  const index_t bu = a.u ? (a.m + ys - 1) / ys : 0, bv = a.v ? (a.n + ys - 1) / ys : 0;
  const index_t grid = count * (bu + bv);
  if (grid == 0) return;
  detail_require(grid <= index_t(0x7fffffff), "emgpu::batched::svd: batch too large for one grid");
  const std::size_t smem = gk_form_bytes<T>(a.m, a.n, ys);
  auto kern = gk_form_kernel<T, BLK, LPR>;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<unsigned(grid), unsigned(LPR * ys), smem, b.stream>>>(a, bu, bv);
  emgpu::detail::check_cuda(cudaGetLastError(), "emgpu::batched::svd (vectors)", __FILE__, __LINE__);
}

template <class T>
inline void gk_form(const backend::cuda& b, const gk_rows_args<T>& a, index_t count) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  const int w = gk_rows_width<T>(b, a.m, a.n);
  detail_require(w > 0, "emgpu::batched::svd: rows too long for the CUDA row kernels");
  // Measured (H100, complex<double>, square, U and V, ms; BLK / LPR):
  // n = 8: 1/1 0.87, 1/2 0.68, 4/1 1.10, 4/2 0.87; n = 16: 2.30, 2.04,
  // 2.79, 2.13; n = 32: 10.9, 15.2, 10.1, 12.4; n = 64: 26.5, 29.0, 22.4,
  // 22.8; n = 128: 92.9, 86.6, 76.8, 65.6. Below 32 rows the blocks' T
  // and shuffles cost more than they save; at 32..64 one lane per row keeps
  // the rows' dependent chains long enough to hide the staging.
  // The column kernel (with its T blocks) where measured faster (H200,
  // complex<double>, U and V, 100 000 x 32 / 20 000 x 64 / 5 000 x 128, ms;
  // rows against columns M / LPC): n = 32: 8.38 against 6.40 (32 / 2; 32 /
  // 1 6.49, 32 / 4 9.22); n = 64: 15.7 against 8.87 (64 / 2; 64 / 4 10.7);
  // n = 128: 42.6 against 19.9 (128 / 4; 128 / 8 25.9). Fewer rows than M
  // are carried as zeros, so a size just above 32 or 64 pays for the next.
  // From 32 to 64 rows the double types take the tensor-core kernel (H100,
  // complex<double>, U, S, V: 100 000 x 32 x 32 in three alternated runs
  // 23.67-23.79 ms against 24.18-24.78 with the column kernel, 23.96-24.02
  // with four column tiles a warp; 20 000 x 64 x 64 36.8-37.0 against
  // 38.9-39.1).
  if (a.tb != nullptr && gk_form_by_cols(a.m)) {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, complex<double>>) {
      if (gk_form_by_mma<T>(a.m)) {
        if (a.m <= 32) gk_form_mma_launch<T, 32, 2>(b, a, count);
        else gk_form_mma_launch<T, 64, 2>(b, a, count);
        return;
      }
    }
    if (a.m <= 32) gk_form_cols_launch<T, 32, 2>(b, a, count);
    else if (a.m <= 64) gk_form_cols_launch<T, 64, 2>(b, a, count);
    else gk_form_cols_launch<T, 128, 4>(b, a, count);
  } else if (a.m < 32) {
    gk_form_launch<T, 1, 2>(b, a, count, w);
  } else if (a.m <= 64) {
    gk_form_launch<T, gk_blk, 1>(b, a, count, w);
  } else {
    gk_form_launch<T, gk_blk, 2>(b, a, count, w);
  }
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
inline std::size_t gk_split_bytes(index_t n, index_t cap, bool want_u, bool want_v, bool with_tb = true) {
  const std::size_t streams = std::size_t((want_u ? 1 : 0) + (want_v ? 1 : 0));
  return sizeof(R) * (std::size_t(2 * n) + streams * std::size_t(cap + n * n)) + 4 * sizeof(R) * std::size_t(n) +
         sizeof(index_t) * std::size_t(n) + sizeof(gk_ctl<R>) +
         (streams > 0 && with_tb ? 2 * sizeof(R) * std::size_t(gk_tb_count(n)) : 0);
}

/// Byte offsets of the split pipeline's arrays for `chunk` matrices in one
/// block, each on a 256-byte boundary: d and e (2n reals), the iteration
/// state, the output order (n), the reflector factors tau (2n of T), the
/// left and right logs (cap reals each, when wanted), U_B and V_B (n^2
/// reals each, when wanted), the blocks' T (gk_tb_count of T, when U or V
/// is wanted and with_tb: the CUDA column kernel's).
struct gk_split_layout {
  std::size_t de, ctl, perm, tau, logl, logr, ub, vb, tb, total;
};
template <class T>
inline gk_split_layout gk_split_carve(index_t n, index_t cap, index_t chunk, bool want_u, bool want_v,
                                      bool with_tb = true) {
  using R = real_type_t<T>;
  const auto up = [](std::size_t x) { return (x + 255) & ~std::size_t(255); };
  const std::size_t c = std::size_t(chunk), nn = std::size_t(n), lg = sizeof(R) * std::size_t(cap) * c;
  gk_split_layout o{};
  o.de = 0;
  o.ctl = up(o.de + sizeof(R) * 2 * nn * c);
  o.perm = up(o.ctl + sizeof(gk_ctl<R>) * c);
  o.tau = up(o.perm + sizeof(index_t) * nn * c);
  o.logl = up(o.tau + sizeof(T) * 2 * nn * c);
  const std::size_t bb = sizeof(R) * std::size_t(n) * nn * c;
  o.logr = up(o.logl + (want_u ? lg : 0));
  o.ub = up(o.logr + (want_v ? lg : 0));
  o.vb = up(o.ub + (want_u ? bb : 0));
  o.tb = up(o.vb + (want_v ? bb : 0));
  o.total = o.tb + ((want_u || want_v) && with_tb ? sizeof(T) * std::size_t(gk_tb_count(n)) * c : 0);
  return o;
}

/// T of every block of gk_blk reflectors (U's blocks, then V's) from the
/// reflectors in a (after gk_bidiagonalise) and their tau in w, written to
/// out (gk_tb_count entries, block j's t[c][b] at out[(j gk_blk + c) gk_blk
/// + b]): G = W^H W above the diagonal, then gk_larft. Power-of-two groups
/// of consecutive threads share a block's rows (every lane of the team's
/// warps calls the sums). Why in kernel 1: the reflectors are still in
/// shared memory there; until session 24 a kernel of its own (3b, one
/// thread a block) read them back from global memory with scattered loads
/// (H100, 100 000 x 32 complex<double>: U and V 5.93 -> 4.79 ms with T from
/// kernel 1, which took 0.4 ms more; docs/batched-log.md).
template <class Team, class MatA, class T>
EMGPU_HD inline void gk_block_ts(const Team& t, const MatA& a, index_t m, index_t n, const gk_work<T>& w, T* out) {
  constexpr int BLK = gk_blk;
  const index_t nbu = (n + BLK - 1) / BLK, nbv = (n + BLK - 2) / BLK, nb = nbu + nbv;
  const index_t rk = t.rank(), ts = t.size();
  int lb = 1;
  while (lb < 32 && index_t(2 * lb) * nb <= ts) lb *= 2;
  const index_t G = ts / lb;
  const int sub = int(rk % lb);
  for (index_t j0 = 0; j0 < nb; j0 += G) {
    const index_t j = j0 + rk / lb;
    const bool live = j < nb;
    const bool is_u = j < nbu;
    const index_t q0 = (is_u ? j : j - nbu) * BLK, p0 = is_u ? q0 : q0 + 1;
    const index_t len = live ? (is_u ? m : n) : 0, steps = is_u ? n : n - 1;
    int nlive = 0;
EMGPU_UNROLL
    for (int b = 0; b < BLK; ++b) nlive += q0 + b < steps ? 1 : 0;
    // G = W^H W above the diagonal: entry i of w_b is 0 above p0 + b, 1 there.
    T g[BLK][BLK];
EMGPU_UNROLL
    for (int c = 0; c < BLK; ++c)
EMGPU_UNROLL
      for (int b = 0; b < BLK; ++b) g[c][b] = T(0);
    for (index_t i = p0 + 1 + sub; i < len; i += lb) {
      T wi[BLK];
EMGPU_UNROLL
      for (int b = 0; b < BLK; ++b) {
        const index_t p = p0 + b;
        wi[b] = b < nlive && i >= p ? (i == p ? T(1) : is_u ? a(i, q0 + b) : a(q0 + b, i)) : T(0);
      }
EMGPU_UNROLL
      for (int b = 1; b < BLK; ++b)
EMGPU_UNROLL
        for (int c = 0; c < b; ++c) g[c][b] = madd_conj(g[c][b], wi[c], wi[b]);
    }
    if (lb > 1) {
EMGPU_UNROLL
      for (int b = 1; b < BLK; ++b)
EMGPU_UNROLL
        for (int c = 0; c < b; ++c) {
          if constexpr (is_complex_v<T>)
            g[c][b] = T(t.group_sum(g[c][b].real(), lb), t.group_sum(g[c][b].imag(), lb));
          else
            g[c][b] = t.group_sum(g[c][b], lb);
        }
    }
    if (!live) continue;
    T tt[BLK][BLK], tau[BLK];
    const T* tq = (is_u ? w.taul : w.taur) + q0;
EMGPU_UNROLL
    for (int b = 0; b < BLK; ++b) tau[b] = b < nlive ? tq[b] : T(0);
    gk_larft(g, tau, tt);
    T* o = out + j * (BLK * BLK);
EMGPU_UNROLL
    for (int c = 0; c < BLK; ++c)
      if (c % lb == sub)
EMGPU_UNROLL
        for (int b = 0; b < BLK; ++b) o[c * BLK + b] = tt[c][b];
  }
}

/// Kernel 1: scales A (svd_core.hpp's svd_scale), bidiagonalises it
/// (gk_bidiagonalise<L>) and leaves B, its norm threshold and the scaling
/// in d / ctl, the reflectors in A and their taus in tau (2 n per matrix:
/// left, then right), and, when tb is set, the blocks' T (gk_block_ts). Its
/// own functor, not svd_gk_op's core: without the iteration's code the
/// kernel takes fewer registers (H100, 32 x 32 complex<double>: 128
/// against the core's 166).
/// @tparam L threads per column and per row (gk_bidiagonalise; a team of
///         one thread takes 1).
template <class T, class LocA, int L>
struct gk_bidiag_op {
  using R = real_type_t<T>;
  LocA a;
  index_t m, n, lda;
  R* d;  // 2 n per matrix: d, then e (e[n-1] = 0)
  gk_ctl<R>* ctl;
  T* tau;
  int team;
  T* tb = nullptr;  // T of the reflector blocks (gk_block_ts, gk_tb_count per matrix); null: not wanted

  std::size_t scratch_bytes() const { return gk_work<T>::bytes(n, false); }
  std::size_t stage_bytes() const { return svd_stage_bytes<T>(m, n, false); }
  int team_size() const { return team; }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    const gk_work<T> w = gk_work<T>::carve(cv, n, false);
    const staged_matrix<T> x = cv.stage(a(k), m, n, lda);
    stage_in_wide(t, x, m);
    bool bad = false;
    const int ex = with_local(x, n, [&](const auto& xa) {
      const int e = svd_scale(t, xa, m, n, bad);
      if (t.size() == 1) gk_bidiagonalise<1>(t, xa, m, n, w);
      else gk_bidiagonalise<L>(t, xa, m, n, w);
      if (tb) gk_block_ts(t, xa, m, n, w, tb + k * gk_tb_count(n));
      return e;
    });
    // gk_bidiagonalise's last barrier ordered its writes of A, d, e, tau
    // (gk_block_ts only reads them).
    if (t.rank() == 0) {
      R* dk = d + 2 * k * n;
      for (index_t i = 0; i < n; ++i) {
        dk[i] = w.d[i];
        dk[n + i] = i + 1 < n ? w.e[i] : R(0);
      }
      gk_ctl<R>& c = ctl[k];
      c.thresh = std::numeric_limits<R>::epsilon() * gk_bnorm(w.d, w.e, n);
      c.steps = 0;
      c.hi = bad ? 0 : n - 1;
      c.ex = ex;
      c.bad = bad ? 1 : 0;
      c.state = 0;
      c.failed = 0;
    }
    stage_out(t, x, m);
    T* tk = tau + 2 * k * n;
    team_for(t, 2 * n - 1, [&](index_t j) { tk[j] = j < n ? w.taul[j] : w.taur[j - n]; });
  }
};

/// Team of gk_bidiag_op<., ., L>: L threads per column of the larger
/// dimension rounded up to a power of two, at least a warp, at most 256.
inline int gk_bidiag_team(index_t m, index_t n, int lanes) {
  const index_t big = m > n ? m : n;
  index_t p = 1;
  while (p < big) p *= 2;
  const index_t tm = p * lanes;
  return int(tm < 32 ? 32 : tm > 256 ? 256 : tm);
}

/// Runs kernel 1 on a chunk: on CUDA one lane per column up to 64 rows
/// (a warp up to 32), two from 65 (a block of 256 threads up to 128).
/// Measured on the H100, complex<double>, kernel 1 alone without T, ms
/// (docs/batched-log.md, session 24): 100 000 x 32 8.87 with one lane per
/// column, 17.8 with two (a block of 64: its sums and barriers block-wide);
/// 20 000 x 64 16.6 with one, 18.7 with two (16.7 in a build whose 126
/// registers let three blocks per SM in instead of two); 5 000 x 128 118
/// with one, 70.4 with two (session 23's kernel: 123.5).
template <class Backend, class T>
inline void gk_bidiag_launch(const Backend& b, strided_loc<T> a, index_t m, index_t n, index_t lda,
                             real_type_t<T>* d, gk_ctl<real_type_t<T>>* ctl, T* tau, T* tb, index_t count) {
  using L = strided_loc<T>;
  [[maybe_unused]] bool device = false;
#if defined(__CUDACC__)
  device = std::is_same_v<Backend, backend::cuda>;
#endif
  if (device && (m > 64 || n > 64)) {
    const gk_bidiag_op<T, L, 2> op{a, m, n, lda, d, ctl, tau, gk_bidiag_team(m, n, 2), tb};
    launch(b, op, count, "emgpu::batched::svd (bidiagonalisation)");
  } else {
    const gk_bidiag_op<T, L, 1> op{a, m, n, lda, d, ctl, tau, device ? gk_bidiag_team(m, n, 1) : 1, tb};
    launch(b, op, count, "emgpu::batched::svd (bidiagonalisation)");
  }
}

/// Lanes for svd_gk_split_run on CUDA when m <= 32 and the batch is large:
/// two (chunks of a quarter of the batch alternating over two streams,
/// lane 1 starting once lane 0's first bidiagonalisation is done), else one.
/// Why: the pipeline's kernels are bound by different things (kernel 1 by
/// latency at the 12 matrices per SM its shared memory allows, the chains
/// by their log's L2 stores, kernels 3 and 4 by FP64 and shared memory),
/// so one chunk's kernels fill what another chunk's leave idle. H100,
/// 100 000 x 32 x 32 complex<double>, U, S, V (session 26, scratch
/// harness): 24.49-24.61 ms in one stream, 24.01 with four chunks over two
/// staggered streams (24.50 unstaggered), 24.10 with two chunks; eight or
/// sixteen chunks were slower (25.6, 30.8: each chunk's chains then run a
/// few warps per SM). Library call, bench_batched_cuda, median of 5: H200
/// 24.32 -> 24.10 ms; H100 24.99 -> 24.79 and 25.06 in two runs (the
/// fastest repetition 24.1-24.3, as the harness; in one process the
/// harness's copy of this schedule ran 24.25, its wait for each chunk's
/// pending count costing ~0.1 ms, and the library call 24.5); with the workspace allocated per call 31.2 -> 25.7 (H200) and
/// 30.6 -> 25.9-26.5 ms (H100): two quarters of the batch's workspace
/// instead of all of it. Only where measured: m <= 32, 32 768
/// matrices or more, U or V wanted (singular values alone, bidiagonalisation
/// and chains, took 11.8 -> 12.8 ms: the chains of a quarter fill the SMs
/// less).
inline int gk_auto_lanes(index_t m, index_t count, bool want_uv) {
  return want_uv && m <= 32 && count >= 32768 ? 2 : 1;
}

/// The QR-method SVD by the split pipeline, same contract as svd_run with
/// svd_method::qr. @return false (nothing done) when a row of U or V does
/// not fit the device's shared memory. cap: reals per log stream (0:
/// gk_log_reals(n)); budget: bytes of workspace (0: gk_default_budget);
/// lanes: chunks in flight at once on CUDA (0: gk_auto_lanes; 2 with four
/// chunks at least; host backends take one); cap, budget and lanes are
/// knobs for the tests. work: where the workspace comes from
/// (svd_options::work), or null to allocate and free it here.
template <class Backend, class T>
bool svd_gk_split_run(const Backend& b, strided_batch_view<T> a, real_type_t<T>* sigma, strided_batch_view<T> u,
                      strided_batch_view<T> v, int* info, bool flip_u, index_t cap = 0, std::size_t budget = 0,
                      workspace* work = nullptr, int lanes = 0) {
  using R = real_type_t<T>;
  using L = strided_loc<T>;
  const index_t m = a.rows, n = a.cols, count = a.count;
  const bool want_u = u.data != nullptr, want_v = v.data != nullptr;
  if (count <= 0) return true;
  if ((want_u || want_v) && gk_rows_width<T>(b, m, n) == 0) return false;
  if (cap <= 0) cap = gk_log_reals(n);
  cap += cap & 1;  // even: rotations are stored as aligned (c, s) pairs
  detail_require(cap >= gk_log_room(n), "emgpu::batched::svd: log capacity below one sweep");
  if (budget == 0) budget = gk_default_budget(b);
  // The blocks' T only where the CUDA column kernel forms U and V; the
  // bidiagonalisation computes them (gk_block_ts).
  bool cols = false;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>) cols = (want_u || want_v) && gk_form_by_cols(m);
#endif
#if defined(__CUDACC__)
  constexpr bool device = std::is_same_v<Backend, backend::cuda>;
#else
  constexpr bool device = false;
#endif
  if (lanes <= 0) lanes = gk_auto_lanes(m, count, want_u || want_v);
  lanes = device && lanes > 1 && count >= 2 ? 2 : 1;
  const std::size_t per = gk_split_bytes<R>(n, cap, want_u, want_v, cols);
  index_t chunk = index_t(budget / (per * std::size_t(lanes)));
  if (lanes > 1) {
    const index_t quarter = (count + 3) / 4;
    chunk = chunk > quarter ? quarter : chunk;
  }
  chunk = chunk < 1 ? 1 : chunk > count ? count : chunk;
  // One block for every lane's eight arrays: from the caller's workspace, or
  // allocated here (one cudaMalloc instead of eight per lane).
  const gk_split_layout lay = gk_split_carve<T>(n, cap, chunk, want_u, want_v, cols);
  const std::size_t lane_bytes = (lay.total + 255) & ~std::size_t(255);
  vector_t<Backend, std::byte> own;
  std::byte* blk = nullptr;
  if (work != nullptr) {
    blk = work->reserve(b, lane_bytes * std::size_t(lanes));
  } else {
    own = make_vector<std::byte>(b, index_t(lane_bytes * std::size_t(lanes)));
    blk = own.data();
  }
  stream_lanes<Backend> ln(b, lanes);  // detail/stream_lanes.hpp
  struct job {
    gk_chain_op<R> chain;
    gk_rows_args<T> rows;
  };
  // Kernels 1 to 3 of the chunk at k0 on lane l; the rounds that follow
  // (chains paused on a full log) and kernel 4 are finish's.
  const auto start = [&](int l, index_t k0) {
    const Backend& lb = ln(b, l);
    std::byte* const p = blk + std::size_t(l) * lane_bytes;
    R* const de = reinterpret_cast<R*>(p + lay.de);
    gk_ctl<R>* const ctl = reinterpret_cast<gk_ctl<R>*>(p + lay.ctl);
    index_t* const perm = reinterpret_cast<index_t*>(p + lay.perm);
    T* const tau = reinterpret_cast<T*>(p + lay.tau);
    R* const logl = want_u ? reinterpret_cast<R*>(p + lay.logl) : nullptr;
    R* const logr = want_v ? reinterpret_cast<R*>(p + lay.logr) : nullptr;
    R* const ub = want_u ? reinterpret_cast<R*>(p + lay.ub) : nullptr;
    R* const vb = want_v ? reinterpret_cast<R*>(p + lay.vb) : nullptr;
    T* const tb = cols ? reinterpret_cast<T*>(p + lay.tb) : nullptr;
    const index_t cc = count - k0 < chunk ? count - k0 : chunk;
    T* ak = a.data + k0 * a.stride;
    T* uk = want_u ? u.data + k0 * u.stride : nullptr;
    T* vk = want_v ? v.data + k0 * v.stride : nullptr;
    ln.wait_first(l);
    gk_bidiag_launch(lb, L{ak, a.stride}, m, n, a.ld, de, ctl, tau, tb, cc);
    ln.mark_first(l);
    job j{gk_chain_op<R>{de, ctl, logl, logr, cap, n, sigma + k0 * n, perm, info + k0},
          gk_rows_args<T>{uk, u.ld, u.stride, vk, v.ld, v.stride, m, n, cap, ak, a.ld, a.stride, tau, de, ctl,
                          logl, logr, perm, want_v && !(flip_u && want_u), true, ub, vb, tb}};
    gk_chain(lb, j.chain, cc);
    if (want_u || want_v) {  // else no log: every chain ran to its end
      gk_basis(lb, j.rows, cc);
      j.rows.first = false;
    }
    return j;
  };
  const auto finish = [&](int l, index_t k0, job& j) {
    if (!want_u && !want_v) return;
    const Backend& lb = ln(b, l);
    const index_t cc = count - k0 < chunk ? count - k0 : chunk;
    // Blocks the host until this lane's chunk has run its rounds so far;
    // the other lane's chunk keeps the device busy meanwhile.
    while (reduce(lb, cc, index_t(0), gk_pending_map<R>{j.chain.ctl}, gk_plus{}) != 0) {
      gk_chain(lb, j.chain, cc);
      gk_basis(lb, j.rows, cc);
    }
    gk_form(lb, j.rows, cc);
  };
  const index_t chunks = (count + chunk - 1) / chunk;
  std::optional<job> cur[2];
  for (int l = 0; l < lanes && l < chunks; ++l) cur[l] = start(l, index_t(l) * chunk);
  for (index_t c = 0; c < chunks; ++c) {
    const int l = int(c % lanes);
    finish(l, c * chunk, *cur[l]);
    if (c + lanes < chunks) cur[l] = start(l, (c + lanes) * chunk);
  }
  ln.join(b);
  return true;
}

}  // namespace emgpu::batched::detail
