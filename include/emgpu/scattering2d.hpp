/// @file
/// @brief 2D TM_z scattering by perfectly conducting cylinders: the composed
///        solver over (backend, kernel, dense solver, scalar).
///
/// @code
/// namespace geo = emgpu::geometry;
/// geo::mesh m(geo::circle(0.5), 64);                       // 64 exact arcs
/// emgpu::scattering2d<> s(m, 600e6);                       // serial, lcn<6>, crout_lu
/// auto r = s.solve(std::vector{0.0}, emgpu::angles_deg(0, 360, 361));
/// auto sigma = r.echo_width_db(0);
/// @endcode
///
/// Conventions (design/physics-conventions.md, shared): exp(+j w t); incident
/// E_z = E0 exp(-j k (x cos phi_i + y sin phi_i)) with phi_i the direction of
/// travel; EFIE E_z_inc = (k eta / 4) Integral_C J_z H0^(2)(k R) dt'; eta = eta0.
#pragma once

#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "analytic.hpp"
#include "backend.hpp"
#include "core.hpp"
#include "dense.hpp"
#include "geometry.hpp"
#include "kernel.hpp"
#include "scattering2d/result.hpp"


namespace emgpu {

/// @brief Frequency (Hz) at which a body of size a (m) has electrical size ka.
/// @throws invalid_argument unless ka and a are finite and > 0.
inline double frequency_for_ka(double ka, double a) {
  detail::require(std::isfinite(ka) && ka > 0 && std::isfinite(a) && a > 0,
                  "emgpu::frequency_for_ka: ka and a must be finite and > 0");
  return ka * constants::c0 / (2 * constants::pi * a);
}

/// @brief n angles in radians from first_deg in steps of (last_deg - first_deg) / (n - 1).
/// @throws invalid_argument for n < 1 or a non-finite first_deg / last_deg.
inline std::vector<double> angles_deg(double first_deg, double last_deg, index_t n) {
  detail::require(n >= 1, "emgpu::angles_deg: need n >= 1");
  detail::require(std::isfinite(first_deg) && std::isfinite(last_deg), "emgpu::angles_deg: angles must be finite");
  std::vector<double> a(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    a[std::size_t(i)] = (first_deg + (n > 1 ? (last_deg - first_deg) * double(i) / double(n - 1) : 0.0)) *
                        constants::pi / 180;
  return a;
}

/// @brief Solver for TM_z scattering by a PEC cylinder of cross-section `mesh`.
///
/// @tparam Backend where the matrix is filled, factored and solved
///         (backend::serial, backend::openmp, backend::cuda under nvcc).
/// @tparam Kernel discretisation policy: kernel::mom (pulse basis, point
///         matching) or kernel::lcn<Q> (locally corrected Nystrom, order Q).
/// @tparam Solver dense solver policy (dense::crout_lu or any type satisfying
///         dense::dense_solver<Solver, Backend, Scalar>).
/// @tparam Scalar complex<double> or complex<float> (matrix and solve
///         precision; geometry and near corrections are always computed in double).
///
/// The matrix is filled and factored on first use and kept, so later solve()
/// calls (more incidence angles) cost only the triangular solves.
/// @throws invalid_argument (constructor) for frequency <= 0 or a bad kernel option;
///         singular_matrix / device_error from the solver.
template <class Backend = backend::serial, class Kernel = kernel::lcn<6>, class Solver = dense::crout_lu,
          class Scalar = complex<double>>
class scattering2d {
  static_assert(backend_tag<Backend>,
                "emgpu::scattering2d<Backend, ...>: Backend must be an emgpu backend tag "
                "(backend::serial, backend::openmp, or backend::cuda in nvcc-compiled code)");
  static_assert(kernel::efie2d_kernel<Kernel>,
                "emgpu::scattering2d<.., Kernel, ..>: Kernel must be a 2D EFIE kernel policy "
                "(kernel::mom or kernel::lcn<Q>): it needs discretize(const geometry::mesh&)");
  static_assert(std::is_same_v<Scalar, complex<double>> || std::is_same_v<Scalar, complex<float>>,
                "emgpu::scattering2d<..., Scalar>: Scalar must be emgpu::complex<double> or complex<float> "
                "(the EFIE matrix is complex)");
  static_assert(dense::dense_solver<Solver, Backend, Scalar>,
                "emgpu::scattering2d<.., .., Solver>: Solver must be a dense solver policy for this "
                "backend and scalar, such as dense::crout_lu (see dense::dense_solver)");

 public:
  using backend_type = Backend;
  using kernel_type = Kernel;
  using solver_type = Solver;
  using scalar_type = Scalar;
  using factorization_type = typename Solver::template factorization<Backend, Scalar>;

  /// @param mesh the discretised contour.
  /// @param frequency_hz frequency in Hz (> 0); k = 2 pi f / c0.
  scattering2d(const geometry::mesh& mesh, double frequency_hz, Kernel kernel = {}, Backend b = {},
               Solver solver = {})
      : scattering2d(check_frequency(frequency_hz), mesh, kernel, b, solver) {}

  double frequency() const noexcept { return f_; }
  double wavenumber() const noexcept { return k_; }
  double wavelength() const noexcept { return constants::c0 / f_; }
  index_t unknowns() const noexcept { return disc_.n; }
  const kernel::discretization& discretization() const noexcept { return disc_; }
  const kernel::efie2d_operator<Backend>& op() const noexcept { return op_; }
  const Backend& backend() const noexcept { return b_; }

  /// @brief Fills the EFIE matrix into z (n x n, backend memory).
  void assemble(matrix_view<Scalar> z) const { op_.assemble(z, k_, constants::eta0); }

  /// @brief Fills and factors the matrix (done by solve() on first use).
  void factor() {
    if (fact_) return;
    const index_t n = disc_.n;
    z_ = make_vector<Scalar>(b_, n * n);
    const matrix_view<Scalar> z{z_.data(), n, n, n};
    assemble(z);
    fact_ = std::make_unique<factorization_type>(b_, z, solver_);
  }

  /// @brief Currents for plane waves at `incidence` (radians, direction of
  ///        travel), their far-field integrals at `observation` (radians) and
  ///        backscatter.
  /// @throws invalid_argument for non-finite angles.
  scattering2d_result solve(std::span<const double> incidence, std::span<const double> observation = {}) {
    for (double a : incidence) detail::require(std::isfinite(a), "emgpu::scattering2d::solve: non-finite incidence angle");
    for (double a : observation) detail::require(std::isfinite(a), "emgpu::scattering2d::solve: non-finite observation angle");
    factor();
    const index_t n = disc_.n, nr = index_t(incidence.size()), na = index_t(observation.size());
    scattering2d_result r;
    r.wavenumber = k_;
    r.incidence.assign(incidence.begin(), incidence.end());
    r.observation.assign(observation.begin(), observation.end());
    r.x = disc_.x;
    r.y = disc_.y;
    r.w = disc_.w;
    if (nr == 0) return r;
    auto inc = to_backend(b_, incidence);
    auto j = make_vector<Scalar>(b_, n * nr);
    const matrix_view<Scalar> jv{j.data(), n, nr, n};
    op_.plane_waves(jv, inc.data(), k_);
    fact_->solve(jv);
    r.current.resize(static_cast<std::size_t>(n * nr));
    if constexpr (std::is_same_v<Scalar, complex<double>>) {
      // Straight into the result: at N = 16384 and 360 angles the currents are
      // 94 MB, and a staging copy plus conversion cost tens of ms on the host.
      copy_to_host(b_, j.data(), n * nr, r.current.data());
    } else {
      std::vector<Scalar> jh(static_cast<std::size_t>(n * nr));
      copy_to_host(b_, j.data(), n * nr, jh.data());
      for (std::size_t i = 0; i < jh.size(); ++i) r.current[i] = complex<double>(jh[i].real(), jh[i].imag());
    }
    if (na > 0) {
      auto obs = to_backend(b_, observation);
      auto p = make_vector<complex<double>>(b_, na * nr);
      op_.far_field(matrix_view<const Scalar>(jv), obs.data(), na, k_, p.data());
      r.far_field.resize(std::size_t(na * nr));
      copy_to_host(b_, p.data(), na * nr, r.far_field.data());
    }
    std::vector<double> back(incidence.begin(), incidence.end());
    for (auto& a : back) a += constants::pi;
    auto bk = to_backend(b_, std::span<const double>(back));
    auto pb = make_vector<complex<double>>(b_, nr);
    op_.far_field_diagonal(matrix_view<const Scalar>(jv), bk.data(), k_, pb.data());
    r.backscatter.resize(std::size_t(nr));
    copy_to_host(b_, pb.data(), nr, r.backscatter.data());
    return r;
  }

  /// Same, for an initializer list or vector of angles.
  scattering2d_result solve(const std::vector<double>& incidence, const std::vector<double>& observation = {}) {
    return solve(std::span<const double>(incidence), std::span<const double>(observation));
  }

  /// @brief Scattered E_z (V/m) at host points for every column of a result
  ///        of this solver: points x columns, column-major. Nystrom rule, so
  ///        keep points a few cells away from the contour.
  /// @param r a result of this solver (its currents, one column per incidence).
  /// @param points observation points (m), finite.
  /// @throws invalid_argument when r does not match this solver's unknowns,
  ///         its current is not unknowns x columns or not finite, a point is
  ///         not finite, or the field is not finite (a point exactly on an
  ///         unknown).
  std::vector<complex<double>> scattered_field(const scattering2d_result& r,
                                               std::span<const geometry::point2> points) const {
    detail::require(r.unknowns() == disc_.n, "emgpu::scattering2d::scattered_field: result of another solver");
    r.check_current("emgpu::scattering2d::scattered_field");
    for (std::size_t i = 0; i < points.size(); ++i)
      if (!std::isfinite(points[i].x) || !std::isfinite(points[i].y))
        throw invalid_argument("emgpu::scattering2d::scattered_field: non-finite point " + std::to_string(i));
    const index_t np = index_t(points.size()), nr = r.columns();
    std::vector<complex<double>> out(static_cast<std::size_t>(np * nr));
    if (np == 0 || nr == 0) return out;
    std::vector<double> px(points.size()), py(points.size());
    for (std::size_t i = 0; i < points.size(); ++i) px[i] = points[i].x, py[i] = points[i].y;
    std::vector<Scalar> jh(r.current.size());
    for (std::size_t i = 0; i < jh.size(); ++i) {
      detail::require(std::isfinite(r.current[i].real()) && std::isfinite(r.current[i].imag()),
                      "emgpu::scattering2d::scattered_field: non-finite current");
      jh[i] = Scalar(real_type_t<Scalar>(r.current[i].real()), real_type_t<Scalar>(r.current[i].imag()));
    }
    auto j = to_backend(b_, std::span<const Scalar>(jh));
    auto pxd = to_backend(b_, std::span<const double>(px));
    auto pyd = to_backend(b_, std::span<const double>(py));
    auto o = make_vector<complex<double>>(b_, np * nr);
    op_.scattered_field(matrix_view<const Scalar>{j.data(), disc_.n, nr, disc_.n}, pxd.data(), pyd.data(), np,
                        k_, o.data());
    copy_to_host(b_, o.data(), np * nr, out.data());
    return out;
  }

 private:
  struct checked_frequency {
    double f;
  };
  static checked_frequency check_frequency(double f) {
    detail::require(std::isfinite(f) && f > 0, "emgpu::scattering2d: frequency must be finite and > 0");
    return {f};
  }
  scattering2d(checked_frequency f, const geometry::mesh& mesh, const Kernel& kernel, const Backend& b,
               const Solver& solver)
      : b_(b), solver_(solver), f_(f.f), k_(2 * constants::pi * f.f / constants::c0), disc_(kernel.discretize(mesh)),
        op_(b, disc_) {}

  Backend b_;
  Solver solver_;
  double f_, k_;
  kernel::discretization disc_;
  kernel::efie2d_operator<Backend> op_;
  vector_t<Backend, Scalar> z_;
  std::unique_ptr<factorization_type> fact_;
};

}  // namespace emgpu
