/// @file
/// @brief Shared pieces of the batched cores: scalar helpers, the staged
///        matrix accessor, batch locators and argument validation.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include "../../core/complex.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../../core/matrix_view.hpp"
#include "team.hpp"

namespace emgpu::batched {

/// @brief The element types the batched solvers accept.
template <class T>
concept batched_scalar = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                         std::is_same_v<T, complex<float>> || std::is_same_v<T, complex<double>>;

}  // namespace emgpu::batched

namespace emgpu::batched::detail {

inline void detail_require(bool c, const std::string& m) { emgpu::detail::require(c, m); }

/// sqrt / hypot that resolve to the CUDA math overloads in device code.
template <class R>
EMGPU_HD inline R sqrt_r(R x) {
#if EMGPU_DEVICE_CODE
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}
/// 1 / sqrt(x): CUDA's rsqrt in device code (one multi-function-unit
/// approximation refined to ~1 ulp, against a square root and a division).
template <class R>
EMGPU_HD inline R rsqrt_r(R x) {
#if EMGPU_DEVICE_CODE
  if constexpr (sizeof(R) == 4) return ::rsqrtf(x);
  else return ::rsqrt(x);
#else
  return R(1) / std::sqrt(x);
#endif
}
/// rsqrt_r for a positive normal x only: in double, CUDA's rsqrt without
/// its branch to the slow path (zero, subnormal, Inf, NaN, negative x), so
/// the same MUFU.RSQ64H approximation and the same refinement, bitwise
/// equal to rsqrt there; callers guarantee the range (the fast Givens
/// formulas, qr_core.hpp). Why: the branch and its call setup sat on the
/// chain of every rotation of the QR kernels.
template <class R>
EMGPU_HD inline R rsqrt_normal_r(R x) {
#if EMGPU_DEVICE_CODE
  if constexpr (sizeof(R) == 4) {
    return ::rsqrtf(x);
  } else {
    R r;
    asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    const R e = ::fma(-x, r * r, R(1));
    return ::fma(::fma(e, R(0.375), R(0.5)), r * e, r);
  }
#else
  return R(1) / std::sqrt(x);
#endif
}
template <class R>
EMGPU_HD inline R hypot_r(R x, R y) {
#if EMGPU_DEVICE_CODE
  return ::hypot(x, y);
#else
  return std::hypot(x, y);
#endif
}

/// x 2^e (exact unless the result over- or underflows) and the binary
/// exponent of x (x = f 2^e, |f| in [1/2, 1)), on host and device.
template <class R>
EMGPU_HD inline R ldexp_r(R x, int e) {
#if EMGPU_DEVICE_CODE
  return ::ldexp(x, e);
#else
  return std::ldexp(x, e);
#endif
}
template <class R>
EMGPU_HD inline int exponent_r(R x) {
  int e = 0;
#if EMGPU_DEVICE_CODE
  (void)::frexp(x, &e);
#else
  (void)std::frexp(x, &e);
#endif
  return e;
}

/// Real part that also accepts real scalars.
template <class T>
EMGPU_HD inline real_type_t<T> real_part(T x) {
  if constexpr (is_complex_v<T>) return x.real();
  else return x;
}

/// Imaginary part that also accepts real scalars (zero).
template <class T>
EMGPU_HD inline real_type_t<T> imag_part(T x) {
  if constexpr (is_complex_v<T>) return x.imag();
  else return real_type_t<T>(0);
}

template <class T>
EMGPU_HD inline T mul_real(T x, real_type_t<T> r) {
  if constexpr (is_complex_v<T>) return T(x.real() * r, x.imag() * r);
  else return x * r;
}

/// acc + op(x) y with op(x) = conj(x) when Conj, else x; Sub: acc - op(x) y.
/// Written as four multiply-adds on real parts so that CUDA contracts them
/// into four FMAs; the complex operators give two products, two FMAs and
/// two additions (a third more FP64 instructions in the batched SVD's dot
/// products and updates, which issue-bound kernels pay for).
template <bool Conj, bool Sub, class T>
EMGPU_HD inline T madd_any(T acc, T x, T y) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    // acc - x y = acc + (-x) y: the negation is exact, so the sums (and
    // the FMAs they contract to) are the same either way.
    const R xr = Sub ? -x.real() : x.real();
    const R xi = (Conj != Sub) ? -x.imag() : x.imag();
    const R yr = y.real(), yi = y.imag();
    R re = acc.real(), im = acc.imag();
    re += xr * yr;
    re -= xi * yi;
    im += xr * yi;
    im += xi * yr;
    return T(re, im);
  } else {
    return Sub ? acc - x * y : acc + x * y;
  }
}
/// acc + x y.
template <class T>
EMGPU_HD inline T madd(T acc, T x, T y) {
  return madd_any<false, false>(acc, x, y);
}
/// acc + conj(x) y.
template <class T>
EMGPU_HD inline T madd_conj(T acc, T x, T y) {
  return madd_any<true, false>(acc, x, y);
}
/// acc - x y.
template <class T>
EMGPU_HD inline T msub(T acc, T x, T y) {
  return madd_any<false, true>(acc, x, y);
}
/// acc - conj(x) y.
template <class T>
EMGPU_HD inline T msub_conj(T acc, T x, T y) {
  return madd_any<true, true>(acc, x, y);
}

template <class T>
EMGPU_HD inline bool is_zero(T x) {
  if constexpr (is_complex_v<T>) return x.real() == 0 && x.imag() == 0;
  else return x == T(0);
}

/// @brief Plain column-major matrix in any memory (the unstaged case).
template <class T>
struct plain_matrix {
  T* p = nullptr;
  index_t ld = 0;
  EMGPU_HD T* col(index_t j) const { return p + j * ld; }
  EMGPU_HD T& operator()(index_t i, index_t j) const { return p[i + j * ld]; }
};

/// @brief A matrix whose last `ns` columns (j0 = cols - ns onwards) are staged
///        in fast memory (CUDA shared memory) while the leading ones live in
///        place in global memory. The trailing columns are the ones LU and QR
///        update at every step; the leading ones are finished early (LU then
///        only swaps two entries per column per step), so when a matrix does
///        not fit (complex<double>, n >~ 110) this keeps the global traffic to
///        a few entries per step instead of a whole trailing block.
/// Host backends use ns = 0: everything in place.
template <class T>
struct staged_matrix {
  T* s = nullptr;
  index_t lds = 0;
  index_t ns = 0;
  T* g = nullptr;
  index_t ldg = 0;
  index_t j0 = 0;  // first staged column

  EMGPU_HD T* col(index_t j) const {
    // One unsigned compare: j in [j0, j0 + ns).
    return std::size_t(j - j0) < std::size_t(ns) ? s + (j - j0) * lds : g + j * ldg;
  }
  EMGPU_HD T& operator()(index_t i, index_t j) const { return col(j)[i]; }
};

/// @brief A matrix wholly in one fast memory, with a 32-bit leading
///        dimension: the fully staged case on CUDA. staged_matrix chooses
///        between shared and global memory per column, so the compiler must
///        make every access a generic one (and its index arithmetic 64-bit);
///        with this accessor it sees shared-memory loads and stores.
template <class T>
struct local_matrix {
  T* p = nullptr;
  int ld = 0;
  EMGPU_HD T* col(index_t j) const { return p + int(j) * ld; }
  EMGPU_HD T& operator()(index_t i, index_t j) const { return p[int(i) + int(j) * ld]; }
};

/// Leading dimension used in shared memory: odd, so that threads walking a
/// row (one column each) hit different banks.
template <class T>
EMGPU_HD inline index_t padded_ld(index_t rows) {
  return rows | 1;
}

EMGPU_HD inline std::size_t align16(std::size_t x) { return (x + 15) & ~std::size_t(15); }

/// @brief Carves staging areas out of a per-matrix scratch buffer.
struct carver {
  unsigned char* base;
  std::size_t bytes;
  std::size_t off = 0;

  /// Reserves exactly `b` bytes (or fails: returns nullptr).
  EMGPU_HD void* take(std::size_t b) {
    if (off + b > bytes) return nullptr;
    void* p = base + off;
    off = align16(off + b);
    return p;
  }
  /// Stages as many trailing columns of a rows x cols matrix as fit.
  template <class T>
  EMGPU_HD staged_matrix<T> stage(T* g, index_t rows, index_t cols, index_t ldg) {
    staged_matrix<T> m;
    m.g = g;
    m.ldg = ldg;
    m.lds = padded_ld<T>(rows);
    const std::size_t colb = std::size_t(m.lds) * sizeof(T);
    const std::size_t room = off < bytes ? bytes - off : 0;
    index_t ns = index_t(room / colb);
    m.ns = ns < cols ? ns : cols;
    m.j0 = cols - m.ns;
    m.s = reinterpret_cast<T*>(base + off);
    off = align16(off + std::size_t(m.ns) * colb);
    return m;
  }
};

/// Calls f with x, or with a local_matrix over x's staging area when all
/// `cols` columns are staged (then f's accesses compile to shared-memory
/// ones on CUDA: measured in docs/batched.md).
template <class T, class F>
EMGPU_HD inline decltype(auto) with_local(const staged_matrix<T>& x, index_t cols, F&& f) {
  if (x.ns == cols) return f(local_matrix<T>{x.s, int(x.lds)});
  return f(x);
}

/// Team-parallel copy of the staged columns global -> shared.
template <class Team, class T>
EMGPU_HD inline void stage_in(const Team& t, const staged_matrix<T>& m, index_t rows) {
  if (m.ns == 0) return;
  team_for_2d(t, rows, m.ns, [&](index_t i, index_t j) { m.s[i + j * m.lds] = m.g[i + (m.j0 + j) * m.ldg]; });
  t.sync();
}
/// stage_in with each thread's loads of four columns issued before its
/// stores, when the team has a thread per row (else stage_in): in
/// team_for_2d's loop every load is waited out, as the compiler cannot tell
/// that the shared-memory store does not alias the next global load (ncu,
/// H100, the SVD's 32 x 32 bidiagonalisation: 6 % of its stall samples on
/// the staging). The same copies.
template <class Team, class T>
EMGPU_HD inline void stage_in_wide(const Team& t, const staged_matrix<T>& m, index_t rows) {
  if (m.ns == 0) return;
  if (index_t(t.size()) < rows) {
    stage_in(t, m, rows);
    return;
  }
  const index_t i = t.rank();
  if (i < rows) {
    const T* g = m.g + i + m.j0 * m.ldg;
    T* s = m.s + i;
    index_t j = 0;
    for (; j + 4 <= m.ns; j += 4) {
      T v[4];
      for (int u = 0; u < 4; ++u) v[u] = g[(j + u) * m.ldg];
      for (int u = 0; u < 4; ++u) s[(j + u) * m.lds] = v[u];
    }
    for (; j < m.ns; ++j) s[j * m.lds] = g[j * m.ldg];
  }
  t.sync();
}

/// Team-parallel copy of the staged columns shared -> global.
template <class Team, class T>
EMGPU_HD inline void stage_out(const Team& t, const staged_matrix<T>& m, index_t rows) {
  if (m.ns == 0) return;
  t.sync();
  team_for_2d(t, rows, m.ns, [&](index_t i, index_t j) { m.g[i + (m.j0 + j) * m.ldg] = m.s[i + j * m.lds]; });
}

/// @brief Matrix k of a strided batch.
template <class T>
struct strided_loc {
  T* data;
  index_t stride;
  EMGPU_HD T* operator()(index_t k) const { return data + k * stride; }
};
/// @brief Matrix k of a pointer array (the array itself in backend memory).
template <class T>
struct array_loc {
  T* const* arr;
  EMGPU_HD T* operator()(index_t k) const { return arr[k]; }
};

/// @brief Checks the shape of a strided batch; `what` prefixes the message.
template <class T>
inline void check_batch(const strided_batch_view<T>& v, const char* what, const char* name) {
  const std::string pre = std::string("emgpu::batched::") + what + ": " + name;
  detail_require(v.rows >= 0 && v.cols >= 0 && v.count >= 0, pre + " has a negative size");
  detail_require(v.ld >= (v.rows > 1 ? v.rows : 1), pre + " leading dimension < rows");
  const bool empty = v.rows == 0 || v.cols == 0 || v.count == 0;
  if (empty) return;
  detail_require(v.data != nullptr, pre + " is null");
  // The last matrix's last element must be addressable without overflow;
  // ld * cols is bounded first, so that the extent below cannot overflow.
  constexpr index_t big = std::numeric_limits<index_t>::max() / index_t(2 * sizeof(T));
  detail_require(v.ld <= big / v.cols, pre + " batch too large to address");
  const index_t extent = v.ld * (v.cols - 1) + v.rows;  // elements one matrix spans (<= ld * cols)
  detail_require(v.count == 1 || v.stride >= extent,
                 pre + " stride smaller than one matrix (matrices would overlap)");
  detail_require(v.count <= 1 || v.stride <= (big - extent) / (v.count - 1), pre + " batch too large to address");
}

template <class T>
inline void check_square(const strided_batch_view<T>& a, const char* what) {
  check_batch(a, what, "a");
  detail_require(a.rows == a.cols, std::string("emgpu::batched::") + what + ": matrices not square");
}
inline void check_ptr(const void* p, bool needed, const char* what, const char* name) {
  detail_require(p != nullptr || !needed,
                 std::string("emgpu::batched::") + what + ": " + name + " is null");
}
/// A pointer array's shape as a strided view, so that the pointer-array
/// routines share the strided routines' argument checks: data is the
/// pointer array itself (null iff it is null; two operands alias iff their
/// pointer arrays are the same), stride one matrix's span. Never
/// dereferenced as matrices.
template <class T>
inline strided_batch_view<T> array_shape(T* const* arr, index_t rows, index_t cols, index_t ld, index_t count) {
  // The span only where it is representable: otherwise (ld and cols too
  // large, or negative sizes) check_batch rejects the shape by ld alone.
  const bool fits = rows > 0 && cols > 0 && ld >= rows &&
                    ld <= (std::numeric_limits<index_t>::max() - rows) / (cols > 1 ? cols - 1 : 1);
  const index_t span = fits ? ld * (cols - 1) + rows : 0;
  return {const_cast<T*>(reinterpret_cast<const T*>(arr)), rows, cols, ld, span, count};
}
/// dst matrix k := src matrix k, element r (row r % rows, column r / rows)
/// of each, for for_each_index(b, rows * cols, count, op): the gathers and
/// scatters of routines that run a pointer array as a strided batch.
template <class T, class LocS, class LocD>
struct copy_matrix_op {
  LocS src;
  index_t lds;
  LocD dst;
  index_t ldd, rows;
  EMGPU_HD void operator()(index_t r, index_t k) const {
    const index_t i = r % rows, j = r / rows;
    dst(k)[i + j * ldd] = src(k)[i + j * lds];
  }
};
template <class T>
inline void check_tall(const strided_batch_view<T>& a, const char* what) {
  check_batch(a, what, "a");
  detail_require(a.rows >= a.cols, std::string("emgpu::batched::") + what + ": needs m >= n");
}
}  // namespace emgpu::batched::detail
