/// @file
/// @brief The 2D TM EFIE operator on a backend: matrix fill (far pass, then the
///        near-correction pass), plane-wave right-hand sides, far-field
///        integrals (echo width) and scattered near fields, all computed where
///        the matrix lives (no host round trip on CUDA).
///
/// Conventions (design/physics-conventions.md, shared): exp(+j w t);
/// E_z_inc = E0 exp(-j k (x cos phi_i + y sin phi_i)), phi_i the direction of travel;
/// far-field integral P(phi) = Integral_C J_z exp(j k (x' cos phi + y' sin phi)) dt';
/// echo width sigma = (k eta^2 / 4) |P|^2 / |E0|^2;
/// scattered field E_z^s(r) = -(k eta / 4) Integral_C J_z H0^(2)(k |r - r'|) dt'.
#pragma once

#include <concepts>
#include <span>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "../core/matrix_view.hpp"
#include "../geometry/mesh.hpp"
#include "../math/bessel.hpp"
#include "discretization.hpp"

namespace emgpu::kernel {

/// @brief A 2D EFIE kernel policy: turns a mesh into a discretization.
template <class K>
concept efie2d_kernel = requires(const K& k, const geometry::mesh& m) {
  { k.discretize(m) } -> std::same_as<discretization>;
};

namespace detail {

template <class S>
EMGPU_HD inline S to_scalar(complex<double> v) {
  using R = real_type_t<S>;
  return S(static_cast<R>(v.real()), static_cast<R>(v.imag()));
}

/// Far pass: every entry by the Nystrom / one-point rule. The diagonal (R = 0)
/// gives NaN and is always overwritten by the near or self pass.
template <class S>
struct far_fill_fn {
  using R = real_type_t<S>;
  const double* x;
  const double* y;
  const double* w;
  R k;
  R c;  // k eta / 4
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    const R dx = static_cast<R>(x[i] - x[j]), dy = static_cast<R>(y[i] - y[j]);
    const R r = math::detail::hd_sqrt(dx * dx + dy * dy);
    const complex<R> h = math::hankel2_0(k * r);
    const R s = c * static_cast<R>(w[j]);
    z[i + j * ld] = S(s * h.real(), s * h.imag());
  }
};

/// Seed MoM self term on the diagonal.
template <class S>
struct self_fill_fn {
  const double* w;
  double k, c;
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t m) const {
    const double wm = w[m];
    const double l = math::detail::hd_log(constants::gamma_exp * k * wm / (4.0 * constants::e));
    z[m + m * ld] = to_scalar<S>(complex<double>(c * wm, -c * wm * (2.0 / constants::pi) * l));
  }
};

/// Near pass: one block = q entries of one row from q moments of a fine rule.
template <class S>
struct near_fill_fn {
  const near_block* blocks;
  const rule_point* pts;
  const double* coef;
  const double* x;
  const double* y;
  int q;
  double k, c;
  S* z;
  index_t ld;
  EMGPU_HD void operator()(index_t b) const {
    const near_block blk = blocks[b];
    const double xo = x[blk.obs], yo = y[blk.obs];
    double mr[10], mi[10];
    for (int t = 0; t < q; ++t) mr[t] = mi[t] = 0;
    for (index_t p = blk.begin; p < blk.end; ++p) {
      const rule_point rp = pts[p];
      const double dx = rp.x - xo, dy = rp.y - yo;
      const double r = math::detail::hd_sqrt(dx * dx + dy * dy);
      const complex<double> h = math::hankel2_0(k * r);
      // a H0 + (2j/pi) b J0, with J0 = Re H0^(2)
      const double vr = rp.a * h.real();
      const double vi = rp.a * h.imag() + (2.0 / constants::pi) * rp.b * h.real();
      double pkm1 = 0, pk = 1;  // Legendre P_(t-1), P_t at rp.s
      for (int t = 0; t < q; ++t) {
        mr[t] += pk * vr;
        mi[t] += pk * vi;
        const double next = ((2 * t + 1) * rp.s * pk - t * pkm1) / (t + 1);
        pkm1 = pk;
        pk = next;
      }
    }
    for (int i = 0; i < q; ++i) {
      double zr = 0, zi = 0;
      for (int t = 0; t < q; ++t) {
        zr += coef[i + q * t] * mr[t];
        zi += coef[i + q * t] * mi[t];
      }
      z[blk.obs + (blk.col0 + i) * ld] = to_scalar<S>(complex<double>(c * zr, c * zi));
    }
  }
};

template <class S>
struct plane_wave_fn {
  const double* x;
  const double* y;
  const double* angles;
  double k;
  complex<double> e0;
  S* rhs;
  index_t ld;
  EMGPU_HD void operator()(index_t m, index_t r) const {
    double sa, ca, sp, cp;
    math::detail::hd_sincos(angles[r], sa, ca);
    math::detail::hd_sincos(-k * (x[m] * ca + y[m] * sa), sp, cp);
    rhs[m + r * ld] = to_scalar<S>(e0 * complex<double>(cp, sp));
  }
};

/// out(a, r) = sum_n w_n J(n, r) exp(j k (x_n cos phi_a + y_n sin phi_a)).
/// With `diagonal`, a = r (one angle per right-hand side: monostatic).
template <class S>
struct far_field_fn {
  const double* x;
  const double* y;
  const double* w;
  const double* angles;
  double k;
  const S* j;
  index_t ldj, n;
  complex<double>* out;
  index_t ldo;
  EMGPU_HD void operator()(index_t a, index_t r) const {
    double sa, ca;
    math::detail::hd_sincos(angles[a], sa, ca);
    double accr = 0, acci = 0;
    const S* jc = j + r * ldj;
    for (index_t i = 0; i < n; ++i) {
      double sp, cp;
      math::detail::hd_sincos(k * (x[i] * ca + y[i] * sa), sp, cp);
      const double jr = static_cast<double>(jc[i].real()) * w[i], ji = static_cast<double>(jc[i].imag()) * w[i];
      accr += jr * cp - ji * sp;
      acci += jr * sp + ji * cp;
    }
    out[a + r * ldo] = complex<double>(accr, acci);
  }
};

template <class S>
struct monostatic_fn {
  far_field_fn<S> f;
  EMGPU_HD void operator()(index_t r) const { f(r, r); }  // f.ldo == 0: writes out[r]
};

template <class S>
struct near_field_fn {
  const double* x;
  const double* y;
  const double* w;
  const double* px;
  const double* py;
  double k, c;
  const S* j;
  index_t ldj, n;
  complex<double>* out;
  index_t ldo;
  EMGPU_HD void operator()(index_t p, index_t r) const {
    double accr = 0, acci = 0;
    const S* jc = j + r * ldj;
    for (index_t i = 0; i < n; ++i) {
      const double dx = px[p] - x[i], dy = py[p] - y[i];
      const complex<double> h = math::hankel2_0(k * math::detail::hd_sqrt(dx * dx + dy * dy));
      const double jr = static_cast<double>(jc[i].real()) * w[i], ji = static_cast<double>(jc[i].imag()) * w[i];
      accr += jr * h.real() - ji * h.imag();
      acci += jr * h.imag() + ji * h.real();
    }
    out[p + r * ldo] = complex<double>(-c * accr, -c * acci);
  }
};

template <class B, class T>
vector_t<B, T> upload(const B& b, const std::vector<T>& h) {
  if (h.empty()) return make_vector<T>(b, 0);
  return to_backend(b, std::span<const T>(h.data(), h.size()));
}

}  // namespace detail

/// @brief A discretization resident on a backend, ready to fill matrices and
///        evaluate fields at any wavenumber.
/// @tparam Backend an emgpu backend tag.
template <class Backend>
class efie2d_operator {
 public:
  /// Copies the unknowns and the near plan to the backend.
  efie2d_operator(const Backend& b, const discretization& d)
      : b_(b), n_(d.n), q_(d.q), analytic_self_(d.analytic_self), nblocks_(index_t(d.blocks.size())),
        x_(detail::upload(b, d.x)), y_(detail::upload(b, d.y)), w_(detail::upload(b, d.w)),
        coef_(detail::upload(b, d.coef)), blocks_(detail::upload(b, d.blocks)),
        rules_(detail::upload(b, d.rules)) {
    emgpu::detail::require(d.q >= 1 && d.q <= 10, "emgpu::kernel::efie2d_operator: q must be in 1..10");
    emgpu::detail::require(index_t(d.x.size()) == d.n && index_t(d.y.size()) == d.n &&
                               index_t(d.w.size()) == d.n,
                           "emgpu::kernel::efie2d_operator: inconsistent discretization");
  }

  index_t size() const noexcept { return n_; }
  const Backend& backend() const noexcept { return b_; }
  /// Unknown positions and weights in backend memory.
  const double* x() const { return x_.data(); }
  const double* y() const { return y_.data(); }
  const double* w() const { return w_.data(); }

  /// @brief Fills the n x n EFIE matrix for wavenumber k: the far pass over all
  ///        entries, then the self (MoM) and near-correction passes.
  /// @throws invalid_argument for a wrong shape or k <= 0.
  template <class S>
  void assemble(matrix_view<S> z, double k, double eta = constants::eta0) const {
    emgpu::detail::require(z.rows == n_ && z.cols == n_, "emgpu::kernel::efie2d_operator::assemble: matrix must be n x n");
    emgpu::detail::require(std::isfinite(k) && k > 0, "emgpu::kernel::efie2d_operator: wavenumber must be > 0");
    using R = real_type_t<S>;
    const double c = k * eta / 4;
    for_each_index(b_, n_, n_,
                   detail::far_fill_fn<S>{x_.data(), y_.data(), w_.data(), R(k), R(c), z.data, z.ld});
    if (analytic_self_) for_each_index(b_, n_, detail::self_fill_fn<S>{w_.data(), k, c, z.data, z.ld});
    if (nblocks_ > 0)
      for_each_index(b_, nblocks_,
                     detail::near_fill_fn<S>{blocks_.data(), rules_.data(), coef_.data(), x_.data(),
                                             y_.data(), q_, k, c, z.data, z.ld});
  }

  /// @brief Plane-wave right-hand sides, one column per incidence angle
  ///        (radians, direction of travel); `angles` lives in backend memory.
  template <class S>
  void plane_waves(matrix_view<S> rhs, const double* angles, double k, complex<double> e0 = 1.0) const {
    emgpu::detail::require(rhs.rows == n_, "emgpu::kernel::efie2d_operator::plane_waves: rhs must have n rows");
    for_each_index(b_, n_, rhs.cols, detail::plane_wave_fn<S>{x_.data(), y_.data(), angles, k, e0, rhs.data, rhs.ld});
  }

  /// @brief out(a, r) = far-field integral P(phi_a) of current column r
  ///        (angles and out in backend memory, out column-major with ld nang).
  template <class S>
  void far_field(matrix_view<const S> j, const double* angles, index_t nang, double k,
                 complex<double>* out) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::far_field: currents must have n rows");
    for_each_index(b_, nang, j.cols,
                   detail::far_field_fn<S>{x_.data(), y_.data(), w_.data(), angles, k, j.data, j.ld, n_, out, nang});
  }

  /// @brief out(r) = P(angles[r]) of current column r (monostatic: one angle per column).
  template <class S>
  void far_field_diagonal(matrix_view<const S> j, const double* angles, double k, complex<double>* out) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::far_field_diagonal: currents must have n rows");
    for_each_index(b_, j.cols,
                   detail::monostatic_fn<S>{{x_.data(), y_.data(), w_.data(), angles, k, j.data, j.ld, n_, out, 0}});
  }

  /// @brief Scattered E_z at npts points (px, py in backend memory) for each
  ///        current column; out is npts x ncols. Uses the Nystrom / one-point
  ///        rule, so points should be a few cells away from the contour.
  template <class S>
  void scattered_field(matrix_view<const S> j, const double* px, const double* py, index_t npts, double k,
                       complex<double>* out, double eta = constants::eta0) const {
    emgpu::detail::require(j.rows == n_, "emgpu::kernel::efie2d_operator::scattered_field: currents must have n rows");
    for_each_index(b_, npts, j.cols,
                   detail::near_field_fn<S>{x_.data(), y_.data(), w_.data(), px, py, k, k * eta / 4, j.data,
                                            j.ld, n_, out, npts});
  }

 private:
  Backend b_;
  index_t n_;
  int q_;
  bool analytic_self_;
  index_t nblocks_;
  vector_t<Backend, double> x_, y_, w_, coef_;
  vector_t<Backend, near_block> blocks_;
  vector_t<Backend, rule_point> rules_;
};

}  // namespace emgpu::kernel
