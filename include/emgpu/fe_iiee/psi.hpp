/// @file
/// @brief Psi on S, the boundary data of the FEM right-hand side formed from
///        the scat_vec (source paper eq. 14 in design/physics-conventions.md (shared)):
///        Psi = Psi_inc + n x (1/mu_r) curlE + j k0 n x (n x E).
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/error.hpp"
#include "detail/functors.hpp"
#include "detail/normals.hpp"
#include "types.hpp"

namespace emgpu::fe_iiee {

namespace detail {
template <class Real>
struct psi_fn {
  const Real* normals;           // 3 per observer, validated, any length
  const complex<Real>* scat;     // 6 per observer per RHS, `layout`
  const complex<Real>* psi_inc;  // 3 per observer per RHS or null
  complex<Real>* out;            // c + 3 (o + n_obs r)
  index_t n_obs, n_rhs;
  Real k0;
  complex<Real> inv_mu_r;
  scat_layout layout;
  EMGPU_HD void operator()(index_t i) const {
    const index_t o = i % n_obs, r = i / n_obs;
    Real n[3] = {Real(0), Real(0), Real(0)};
    unit_normal(normals + 3 * o, n);  // psi() checked every normal before the launch
    complex<Real> e[3], c[3];
    for (int f = 0; f < 3; ++f) {
      e[f] = scat[scat_index(layout, f, o, r, n_obs, n_rhs)];
      c[f] = scat[scat_index(layout, f + 3, o, r, n_obs, n_rhs)];
    }
    const complex<Real> nc[3] = {n[1] * c[2] - n[2] * c[1], n[2] * c[0] - n[0] * c[2],
                                 n[0] * c[1] - n[1] * c[0]};
    const complex<Real> ne[3] = {n[1] * e[2] - n[2] * e[1], n[2] * e[0] - n[0] * e[2],
                                 n[0] * e[1] - n[1] * e[0]};
    const complex<Real> nne[3] = {n[1] * ne[2] - n[2] * ne[1], n[2] * ne[0] - n[0] * ne[2],
                                  n[0] * ne[1] - n[1] * ne[0]};
    const complex<Real> jk0(Real(0), k0);
    for (int f = 0; f < 3; ++f) {
      complex<Real> v = inv_mu_r * nc[f] + jk0 * nne[f];
      if (psi_inc) v += psi_inc[i * 3 + f];
      out[i * 3 + f] = v;
    }
  }
};
}  // namespace detail

/// @brief Psi = Psi_inc + n x (1/mu_r) curlE + j k0 n x (n x E) at every
///        observer for every RHS, on backend b (all pointers in its memory).
/// @tparam Backend an emgpu backend tag.
/// @tparam Real    float or double.
/// @param normals  3 n_obs normals of S (outward from the FEM region's
///                 interior), normalised here (any finite nonzero length).
/// @param scat     the scat_vec (6 n_obs n_rhs values in `layout`).
/// @param psi_inc  3 n_obs n_rhs values (c + 3 (o + n_obs r)) or nullptr for none.
/// @param out      3 n_obs n_rhs values, c + 3 (o + n_obs r).
/// @throws emgpu::invalid_argument on n_obs < 1, n_rhs < 1, null normals, scat
///         or out, k0 <= 0 or not finite, mu_r zero or not finite (or so small
///         that 1/mu_r overflows), or a zero or non-finite normal.
template <class Backend, class Real>
inline void psi(const Backend& b, const Real* normals, const complex<Real>* scat, index_t n_obs,
                index_t n_rhs, Real k0, complex<Real> mu_r, const complex<Real>* psi_inc,
                complex<Real>* out, scat_layout layout = scat_layout::by_rhs) {
  using emgpu::detail::require;
  require(n_obs >= 1 && n_rhs >= 1, "fe_iiee::psi: need n_obs >= 1 and n_rhs >= 1");
  require(normals != nullptr && scat != nullptr && out != nullptr,
          "fe_iiee::psi: normals, scat and out must not be null");
  require(std::isfinite(double(k0)) && k0 > 0, "fe_iiee::psi: k0 must be finite and > 0");
  require(std::isfinite(double(mu_r.real())) && std::isfinite(double(mu_r.imag())),
          "fe_iiee::psi: mu_r must be finite");
  require(mu_r.real() != 0 || mu_r.imag() != 0, "fe_iiee::psi: mu_r must not be 0");
  const complex<Real> inv_mu_r = complex<Real>(1) / mu_r;
  require(std::isfinite(double(inv_mu_r.real())) && std::isfinite(double(inv_mu_r.imag())),
          "fe_iiee::psi: 1/mu_r overflows (|mu_r| too small)");
  // One pass over the normals (on the device: one reduction) before the work.
  const index_t bad = reduce(b, n_obs, n_obs, detail::first_bad_normal_fn<Real>{normals, n_obs},
                             detail::min_real_fn{});
  require(bad == n_obs, "fe_iiee::psi: zero or non-finite normal at observer " + std::to_string(bad));
  for_each_index(b, n_obs * n_rhs,
                 detail::psi_fn<Real>{normals, scat, psi_inc, out, n_obs, n_rhs, k0, inv_mu_r, layout});
}

/// @brief Host convenience: Psi from host arrays; n_rhs = scat.size() / (6 n_obs).
/// @throws emgpu::invalid_argument on mismatched sizes (normals 3 n_obs, scat
///         6 n_obs n_rhs, psi_inc empty or 3 n_obs n_rhs), and as the backend
///         version (k0, mu_r, zero or non-finite normals).
template <class Real>
inline std::vector<complex<Real>> psi(std::span<const Real> normals,
                                      std::span<const complex<Real>> scat, Real k0,
                                      complex<Real> mu_r = complex<Real>(1),
                                      std::span<const complex<Real>> psi_inc = {},
                                      scat_layout layout = scat_layout::by_rhs) {
  emgpu::detail::require(!normals.empty() && normals.size() % 3 == 0,
                         "fe_iiee::psi: normals must be 3 n_obs > 0 values");
  const std::size_t n_obs = normals.size() / 3;
  emgpu::detail::require(!scat.empty() && scat.size() % (6 * n_obs) == 0,
                         "fe_iiee::psi: scat_vec size must be 6 n_obs n_rhs");
  const std::size_t n_rhs = scat.size() / (6 * n_obs);
  emgpu::detail::require(psi_inc.empty() || psi_inc.size() == 3 * n_obs * n_rhs,
                         "fe_iiee::psi: psi_inc must be empty or 3 n_obs n_rhs values");
  std::vector<complex<Real>> out(3 * n_obs * n_rhs);
  psi(backend::serial{}, normals.data(), scat.data(), index_t(n_obs), index_t(n_rhs), k0, mu_r,
      psi_inc.empty() ? nullptr : psi_inc.data(), out.data(), layout);
  return out;
}

}  // namespace emgpu::fe_iiee
