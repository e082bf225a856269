// Element-wise pieces of the FE-IIEE operator shared by every backend (run by
// emgpu::for_each_index / reduce): folding the weights into the currents,
// summing the per-worker partial accumulators into the scat_vec, and the
// observer/source separation check.
#pragma once

#include "../../core/complex.hpp"
#include "../radiation_kernel.hpp"
#include "../types.hpp"

namespace emgpu::fe_iiee::detail {

/// Resolved loop plan: which loop is parallel, and into how many source
/// slices (each with its own partial accumulator) the sources are split.
enum class loop_kind { over_sources, over_observers, over_rhs };

/// Folded currents: for source s and RHS r, 12 Real at ((s * n_rhs + r) * 12):
/// Jt = w eta J then Mt = w M, (re, im) per component. Source-major so that
/// all RHS of one source are contiguous (one staging load per source tile).
template <class Real>
struct fold_currents_fn;

/// Raises *bad when one of the 12 folded values of an item is not finite
/// (non-finite input, or an overflow). The device backend checks its inputs
/// this way, inside the fold it runs anyway, instead of two reductions and
/// their host round trips before it.
template <class Real>
EMGPU_HD inline void flag_non_finite(const Real* f, int* bad) {
  if (bad == nullptr) return;
  Real z = 0;
  for (int c = 0; c < 12; ++c) z += f[c] - f[c];  // NaN exactly when some f[c] is Inf or NaN
  if (!(z == z)) *bad = 1;
}

template <class Real>
struct fold_currents_fn {
  const complex<Real>* J;  // c + 3 (s + n_s r)
  const complex<Real>* M;
  const point4<Real>* src;
  Real* folded;
  index_t n_s, n_rhs;
  Real eta;
  int* bad = nullptr;  // optional non-finite flag (flag_non_finite)
  EMGPU_HD void operator()(index_t i) const {
    const index_t s = i % n_s, r = i / n_s;
    const Real w = src[s].w, we = w * eta;
    Real* f = folded + (s * n_rhs + r) * 12;
    const complex<Real>* j = J + 3 * i;
    const complex<Real>* m = M + 3 * i;
    for (int c = 0; c < 3; ++c) {
      f[2 * c] = we * j[c].real();
      f[2 * c + 1] = we * j[c].imag();
      f[6 + 2 * c] = w * m[c].real();
      f[6 + 2 * c + 1] = w * m[c].imag();
    }
    flag_non_finite(f, bad);
  }
};

/// As fold_currents_fn from the fields: J = n x H, M = -n x E.
template <class Real>
struct fold_fields_fn {
  const complex<Real>* E;  // c + 3 (s + n_s r)
  const complex<Real>* H;
  const Real* normals;  // 3 per source, unit length
  const point4<Real>* src;
  Real* folded;
  index_t n_s, n_rhs;
  Real eta;
  int* bad = nullptr;  // optional non-finite flag (flag_non_finite)
  EMGPU_HD void operator()(index_t i) const {
    const index_t s = i % n_s, r = i / n_s;
    const Real w = src[s].w, we = w * eta;
    const Real nx = normals[3 * s], ny = normals[3 * s + 1], nz = normals[3 * s + 2];
    const complex<Real>* e = E + 3 * i;
    const complex<Real>* h = H + 3 * i;
    const complex<Real> j[3] = {ny * h[2] - nz * h[1], nz * h[0] - nx * h[2], nx * h[1] - ny * h[0]};
    const complex<Real> m[3] = {nz * e[1] - ny * e[2], nx * e[2] - nz * e[0], ny * e[0] - nx * e[1]};
    Real* f = folded + (s * n_rhs + r) * 12;
    for (int c = 0; c < 3; ++c) {
      f[2 * c] = we * j[c].real();
      f[2 * c + 1] = we * j[c].imag();
      f[6 + 2 * c] = w * m[c].real();
      f[6 + 2 * c + 1] = w * m[c].imag();
    }
    flag_non_finite(f, bad);
  }
};

/// Sums n_part partial accumulators ([part][o][r][12]) in a fixed order, applies
/// the j k of curl E and writes the scat_vec in the requested layout.
template <class Real>
struct finish_fn {
  const Real* acc;
  complex<Real>* out;
  index_t n_obs, n_rhs, n_part;
  Real k;
  scat_layout layout;
  EMGPU_HD void operator()(index_t i) const {
    const index_t o = i % n_obs, r = i / n_obs;
    const index_t stride = n_obs * n_rhs * 12;
    Real sum[12];
    const Real* a = acc + (o * n_rhs + r) * 12;
    for (int c = 0; c < 12; ++c) sum[c] = a[c];
    for (index_t p = 1; p < n_part; ++p)
      for (int c = 0; c < 12; ++c) sum[c] += a[p * stride + c];
    complex<Real> f[6];
    radiation_kernel<Real>::finish(sum, k, f);
    for (int c = 0; c < 6; ++c) out[scat_index(layout, c, o, r, n_obs, n_rhs)] = f[c];
  }
};

/// Squared distance from observer i to its nearest source point.
template <class Real>
struct min_dist2_fn {
  const point4<Real>* src;
  const point4<Real>* obs;
  index_t n_s;
  EMGPU_HD Real operator()(index_t i) const {
    const point4<Real> o = obs[i];
    Real best = Real(3.0e38);
    for (index_t s = 0; s < n_s; ++s) {
      const Real dx = o.x - src[s].x, dy = o.y - src[s].y, dz = o.z - src[s].z;
      const Real d2 = dx * dx + dy * dy + dz * dz;
      best = d2 < best ? d2 : best;
    }
    return best;
  }
};

struct min_real_fn {
  template <class T>
  EMGPU_HD T operator()(T a, T b) const { return b < a ? b : a; }
};

}  // namespace emgpu::fe_iiee::detail
