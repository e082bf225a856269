/// @file
/// @brief Generic primitives built once on for_each_index and reduce, so they
///        run unchanged on every backend: fill, scaled copy, norms, finiteness.
/// Pointers must address the backend's memory space (device pointers for cuda).
#pragma once

#include <cmath>

#include "../core/complex.hpp"
#include "traits.hpp"

namespace emgpu {

namespace detail {
template <class T>
struct fill_fn {
  T* p;
  T v;
  EMGPU_HD void operator()(index_t i) const { p[i] = v; }
};
template <class T>
struct abs2_fn {
  const T* p;
  EMGPU_HD real_type_t<T> operator()(index_t i) const { return abs2(p[i]); }
};
template <class T>
struct abs_fn {
  const T* p;
  EMGPU_HD real_type_t<T> operator()(index_t i) const { return abs_any(p[i]); }
};
template <class T>
struct finite_fn {
  const T* p;
  EMGPU_HD int operator()(index_t i) const {
    if constexpr (is_complex_v<T>) {
      return isfinite(p[i].real()) && isfinite(p[i].imag()) ? 1 : 0;
    } else {
      return isfinite(p[i]) ? 1 : 0;
    }
  }
  template <class R>
  EMGPU_HD static bool isfinite(R x) {
    // x - x is NaN for Inf and NaN; this also survives -ffast-math better than std::isfinite.
    return (x - x) == (x - x);
  }
};
struct plus_fn {
  template <class T>
  EMGPU_HD T operator()(T a, T b) const { return a + b; }
};
struct max_fn {
  template <class T>
  EMGPU_HD T operator()(T a, T b) const { return a < b ? b : a; }
};
struct min_fn {
  template <class T>
  EMGPU_HD T operator()(T a, T b) const { return b < a ? b : a; }
};
}  // namespace detail

/// @brief Sets p[0..n) to v on backend b.
/// @tparam Backend an emgpu backend tag.
template <class Backend, class T>
inline void fill(const Backend& b, T* p, index_t n, T v) {
  for_each_index(b, n, detail::fill_fn<T>{p, v});
}

/// @brief Euclidean norm of p[0..n) (sum of |p_i|^2, then sqrt).
template <class Backend, class T>
inline real_type_t<T> norm2(const Backend& b, const T* p, index_t n) {
  using R = real_type_t<T>;
  return std::sqrt(reduce(b, n, R(0), detail::abs2_fn<T>{p}, detail::plus_fn{}));
}

/// @brief max |p_i| over [0, n); 0 for n == 0.
template <class Backend, class T>
inline real_type_t<T> max_abs(const Backend& b, const T* p, index_t n) {
  using R = real_type_t<T>;
  return reduce(b, n, R(0), detail::abs_fn<T>{p}, detail::max_fn{});
}

/// @brief True when every entry of p[0..n) is finite (no NaN, no Inf).
/// Used to validate inputs before a factorisation or a kernel launch.
template <class Backend, class T>
inline bool all_finite(const Backend& b, const T* p, index_t n) {
  return reduce(b, n, 1, detail::finite_fn<T>{p}, detail::min_fn{}) == 1;
}

}  // namespace emgpu
