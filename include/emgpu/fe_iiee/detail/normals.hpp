// Unit normals from user input (S' normals of the operator, S normals of Psi),
// on host and device: "normalised on entry" must hold at every finite scale.
#pragma once

#include "../../core/complex.hpp"
#include "../../core/config.hpp"
#include "../../math/detail/hd_math.hpp"

namespace emgpu::fe_iiee::detail {

/// u = n / |n|. The components are first divided by the largest |n_c|, so the
/// sum of squares lies in [1, 3]: sqrt(n . n) itself would overflow for
/// n = (1e200, 1e200, 0) (giving u = 0) and underflow for (1e-200, 0, 0)
/// (giving a "zero" normal). Returns false, u unspecified, when n is zero or
/// not finite.
template <class Real>
EMGPU_HD inline bool unit_normal(const Real* n, Real* u) {
  const Real ax = abs_any(n[0]), ay = abs_any(n[1]), az = abs_any(n[2]);
  // x - x is NaN for Inf and NaN (a comparison chain below would drop a NaN).
  const Real z = (n[0] - n[0]) + (n[1] - n[1]) + (n[2] - n[2]);
  Real m = ax > ay ? ax : ay;
  m = m > az ? m : az;
  if (!(z == Real(0)) || !(m > Real(0))) return false;
  const Real x = n[0] / m, y = n[1] / m, w = n[2] / m;
  const Real len = math::detail::hd_sqrt(x * x + y * y + w * w);
  u[0] = x / len;
  u[1] = y / len;
  u[2] = w / len;
  return true;
}

/// Index of the first zero or non-finite normal (3 values each), or n when
/// all are valid: reduce with min_real_fn.
template <class Real>
struct first_bad_normal_fn {
  const Real* normals;
  index_t n;
  EMGPU_HD index_t operator()(index_t i) const {
    Real u[3];
    return unit_normal(normals + 3 * i, u) ? n : i;
  }
};

}  // namespace emgpu::fe_iiee::detail
