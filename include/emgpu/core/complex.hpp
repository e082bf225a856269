/// @file
/// @brief The complex type used on host and device (thrust::complex) and its
///        conversions to std::complex and Eigen.
#pragma once

#include <cmath>
#include <complex>
#include <type_traits>

// A host compiler has no CUDA headers: unless the user chose otherwise, point
// Thrust's device system at its C++ backend there. thrust::complex does not
// depend on the device system, so nvcc-compiled and host-compiled translation
// units still agree on it.
#if !defined(__CUDACC__) && !defined(THRUST_DEVICE_SYSTEM)
#define THRUST_DEVICE_SYSTEM THRUST_DEVICE_SYSTEM_CPP
#endif
#include <thrust/complex.h>

#include "config.hpp"

namespace emgpu {

/// @brief Complex number usable in host code and in CUDA kernels.
/// @tparam T float or double.
/// It is layout-compatible with std::complex<T> (two T, real first), which is
/// what makes the span/pointer reinterpretations below legal in practice and
/// lets Eigen matrices of std::complex share storage with emgpu buffers.
template <class T>
using complex = thrust::complex<T>;

using complexf = complex<float>;
using complexd = complex<double>;

static_assert(sizeof(complexd) == sizeof(std::complex<double>));
static_assert(alignof(complexd) >= alignof(std::complex<double>));

/// @brief True for emgpu::complex<T> and std::complex<T>.
template <class T> struct is_complex : std::false_type {};
template <class T> struct is_complex<thrust::complex<T>> : std::true_type {};
template <class T> struct is_complex<std::complex<T>> : std::true_type {};
template <class T> inline constexpr bool is_complex_v = is_complex<T>::value;

/// @brief The real type underlying a scalar (T for real T, T for complex<T>).
template <class T> struct real_type { using type = T; };
template <class T> struct real_type<thrust::complex<T>> { using type = T; };
template <class T> struct real_type<std::complex<T>> { using type = T; };
template <class T> using real_type_t = typename real_type<T>::type;

/// @brief Converts to std::complex (host code, Eigen interop).
template <class T>
inline std::complex<T> to_std(complex<T> z) { return {z.real(), z.imag()}; }

/// @brief Converts from std::complex.
template <class T>
inline complex<T> from_std(std::complex<T> z) { return {z.real(), z.imag()}; }

/// @brief Reinterprets a buffer of emgpu::complex as std::complex (same layout),
///        e.g. to wrap it in an Eigen::Map without copying.
template <class T>
inline std::complex<T>* as_std(complex<T>* p) { return reinterpret_cast<std::complex<T>*>(p); }
template <class T>
inline const std::complex<T>* as_std(const complex<T>* p) {
  return reinterpret_cast<const std::complex<T>*>(p);
}
/// @brief Reinterprets a buffer of std::complex as emgpu::complex.
template <class T>
inline complex<T>* as_emgpu(std::complex<T>* p) { return reinterpret_cast<complex<T>*>(p); }
template <class T>
inline const complex<T>* as_emgpu(const std::complex<T>* p) {
  return reinterpret_cast<const complex<T>*>(p);
}

/// @brief Complex conjugate that also accepts real scalars (identity), so that
///        dense algorithms can be written once for real and complex types.
template <class T>
EMGPU_HD inline T conj_any(T x) {
  if constexpr (is_complex_v<T>) return T(x.real(), -x.imag());
  else return x;
}

/// @brief |x|^2 for real and complex scalars, without a square root.
template <class T>
EMGPU_HD inline real_type_t<T> abs2(T x) {
  if constexpr (is_complex_v<T>) return x.real() * x.real() + x.imag() * x.imag();
  else return x * x;
}

/// @brief |x| for real and complex scalars; complex uses hypot for no
///        overflow, real fabs (+0 for -0).
/// Why fabs and not x < 0 ? -x : x: that kept -0, whose bit pattern (sign
/// bit set) sorts above every positive value when compared as an unsigned
/// key (the CUDA LU pivot searches do), and it cost a compare and two
/// selects where fabs is a free operand modifier.
template <class T>
EMGPU_HD inline real_type_t<T> abs_any(T x) {
  if constexpr (is_complex_v<T>) return thrust::abs(x);
  else if constexpr (std::is_same_v<T, float>) return ::fabsf(x);
  else if constexpr (std::is_same_v<T, double>) return ::fabs(x);
  else return std::fabs(x);  // host-only types
}

/// @brief |Re x| + |Im x| (LAPACK's cabs1), |x| for real x: the LU pivot
///        measure of the dense and batched solvers. Needs no square root,
///        cannot overflow where |x|^2 would, and chooses the pivots ?getrf
///        chooses. Never -0 (abs_any): the CUDA pivot searches compare its
///        bits as an unsigned key, in which -0 would beat every nonzero value.
template <class T>
EMGPU_HD inline real_type_t<T> abs1(T x) {
  if constexpr (is_complex_v<T>) return abs_any(x.real()) + abs_any(x.imag());
  else return abs_any(x);
}

}  // namespace emgpu
