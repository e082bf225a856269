/// @file
/// @brief Elementary functions that pick the CUDA device intrinsic in device code
///        and std:: on the host, in float or double without mixed precision.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "../../core/config.hpp"

namespace emgpu::math::detail {

template <class T>
EMGPU_HD inline T hd_sqrt(T x) {
#if EMGPU_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>) return ::sqrtf(x);
  else return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}

template <class T>
EMGPU_HD inline T hd_log(T x) {
#if EMGPU_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>) return ::logf(x);
  else return ::log(x);
#else
  return std::log(x);
#endif
}

/// @brief 1/sqrt(x): the CUDA rsqrt on the device (1 ulp, no division), a
///        correctly rounded square root and division on the host (<= 1 ulp).
template <class T>
EMGPU_HD inline T hd_rsqrt(T x) {
#if EMGPU_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>) return ::rsqrtf(x);
  else return ::rsqrt(x);
#else
  return T(1) / std::sqrt(x);
#endif
}

/// @brief sin(x) and cos(x) of the same argument: one argument reduction
///        (CUDA sincos; on the host GCC fuses the pair into one sincos call).
template <class T>
EMGPU_HD inline void hd_sincos(T x, T& s, T& c) {
#if EMGPU_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>) ::sincosf(x, &s, &c);
  else ::sincos(x, &s, &c);
#else
  s = std::sin(x);
  c = std::cos(x);
#endif
}

template <class T>
EMGPU_HD inline T hd_nan() {
#if EMGPU_DEVICE_CODE
  if constexpr (std::is_same_v<T, float>) return ::nanf("");
  else return ::nan("");
#else
  return std::numeric_limits<T>::quiet_NaN();
#endif
}

}  // namespace emgpu::math::detail
