/// @file
/// @brief emgpu::scattering2d with the CBFM solver policy: 2D TM_z scattering
///        by one or many PEC cylinders through characteristic basis functions.
///
/// Method (iteration-free MoM with CBFs):
///  1. the contours are partitioned into blocks (each body one block, long
///     bodies cut by arc length); each block is extended by an overlap;
///  2. each extended block's self-impedance matrix is excited by N_pw plane
///     waves over 360 degrees; all blocks are solved together by batched LU
///     (blocks of similar size share a batch, padded with identity rows);
///     the responses restricted to the block are compressed by a batched SVD,
///     and the left singular vectors with sigma > tau sigma_max are the
///     block's CBFs (the columns of the block-diagonal basis C);
///  3. Z_R = C^H Z C and V_R = C^H V are assembled panel by panel: tiles of Z
///     for a panel of block pairs are generated on the backend and multiplied
///     by C at once (two strided batched GEMMs), so the N x N matrix never
///     exists; Z_R a = V_R is solved by the dense solver for every incidence
///     and J = C a.
///
/// Matrix entries and fields follow kernel::efie2d_operator and
/// design/physics-conventions.md (shared): exp(+j w t), incident
/// E_z = E0 exp(-j k (x cos phi_i + y sin phi_i)), phi_i the direction of
/// travel, eta = eta0.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../backend.hpp"
#include "../batched.hpp"
#include "../core.hpp"
#include "../dense.hpp"
#include "../geometry.hpp"
#include "../kernel.hpp"
#include "../scattering2d.hpp"
#include "detail/gemm.hpp"
#include "detail/tiles.hpp"
#include "partition.hpp"
#include "solver.hpp"

namespace emgpu {

/// @brief TM_z scattering solver using characteristic basis functions.
///
/// @tparam Backend serial, openmp or cuda (under nvcc): where tiles are
///         generated, batches solved and Z_R factored.
/// @tparam Kernel kernel::mom or kernel::lcn<Q> (the EFIE entries of every tile).
/// @tparam Dense dense solver policy for the reduced system.
/// @tparam Scalar complex<double> or complex<float>.
///
/// Construction discretises the bodies and fixes the partition; factor()
/// (or the first solve) makes the CBFs and factors Z_R; solve() then costs
/// two block products and a dense solve per batch of incidences.
/// @throws invalid_argument for a bad frequency, option or partition;
///         singular_matrix when an extended block's matrix is exactly singular;
///         error when a block's SVD does not converge; device_error on CUDA failures.
template <class Backend, class Kernel, class Dense, class Scalar>
class scattering2d<Backend, Kernel, cbfm::solver<Dense>, Scalar> {
  static_assert(backend_tag<Backend>,
                "emgpu::scattering2d<Backend, Kernel, cbfm::solver<>>: Backend must be an emgpu backend tag");
  static_assert(kernel::efie2d_kernel<Kernel>,
                "emgpu::scattering2d<.., Kernel, cbfm::solver<>>: Kernel must be a 2D EFIE kernel policy "
                "(kernel::mom or kernel::lcn<Q>)");
  static_assert(std::is_same_v<Scalar, complex<double>> || std::is_same_v<Scalar, complex<float>>,
                "emgpu::scattering2d<.., cbfm::solver<>, Scalar>: Scalar must be complex<double> or complex<float>");
  static_assert(dense::dense_solver<Dense, Backend, Scalar>,
                "emgpu::cbfm::solver<Dense>: Dense must be a dense solver policy (e.g. dense::crout_lu) "
                "for this backend and scalar");

 public:
  using backend_type = Backend;
  using kernel_type = Kernel;
  using solver_type = cbfm::solver<Dense>;
  using scalar_type = Scalar;
  using real_type = real_type_t<Scalar>;
  using factorization_type = typename Dense::template factorization<Backend, Scalar>;

  /// @brief One body.
  scattering2d(const geometry::mesh& mesh, double frequency_hz, Kernel kernel = {}, Backend b = {},
               solver_type solver = {})
      : scattering2d(std::span<const geometry::mesh>(&mesh, 1), frequency_hz, kernel, b, solver) {}

  /// @brief Several bodies (a cloud of cylinders); unknowns are numbered body by body.
  scattering2d(std::span<const geometry::mesh> meshes, double frequency_hz, Kernel kernel = {}, Backend b = {},
               solver_type solver = {})
      : b_(b), opt_(check_options(solver)), f_(check_frequency(frequency_hz)),
        k_(2 * constants::pi * f_ / constants::c0), bodies_(cbfm::discretize_bodies(meshes, kernel)),
        op_(b, bodies_.disc) {
    part_ = opt_.blocks_per_body > 0 ? cbfm::split_equal(bodies_, opt_.blocks_per_body)
                                     : cbfm::split_by_length(bodies_, opt_.block_wavelengths * wavelength(),
                                                             opt_.max_block_unknowns > 0
                                                                 ? std::max<index_t>(1, opt_.max_block_unknowns / bodies_.disc.q)
                                                                 : 0);
  }
  scattering2d(const std::vector<geometry::mesh>& meshes, double frequency_hz, Kernel kernel = {}, Backend b = {},
               solver_type solver = {})
      : scattering2d(std::span<const geometry::mesh>(meshes), frequency_hz, kernel, b, solver) {}

  double frequency() const noexcept { return f_; }
  double wavenumber() const noexcept { return k_; }
  double wavelength() const noexcept { return constants::c0 / f_; }
  index_t unknowns() const noexcept { return bodies_.disc.n; }
  const kernel::discretization& discretization() const noexcept { return bodies_.disc; }
  const cbfm::bodies& bodies() const noexcept { return bodies_; }
  const kernel::efie2d_operator<Backend>& op() const noexcept { return op_; }
  const Backend& backend() const noexcept { return b_; }
  const solver_type& options() const noexcept { return opt_; }
  const cbfm::partition& blocks() const noexcept { return part_; }

  /// @brief Replaces the partition (body indices as given to the constructor,
  ///        cells in each mesh's numbering); drops any factorisation.
  /// @throws invalid_argument unless it covers every cell exactly once.
  void set_partition(cbfm::partition p) {
    cbfm::validate(bodies_, p);
    part_ = std::move(p);
    fact_.reset();
  }

  /// Sizes, times and memory of the factorisation (after factor()).
  const cbfm::report& report() const noexcept { return rep_; }

  /// @brief Makes the CBFs, assembles Z_R and factors it (done by solve() on first use).
  void factor();

  /// @brief Currents (reconstructed from the CBFs) for plane waves at
  ///        `incidence` (radians, direction of travel), far-field integrals at
  ///        `observation` and backscatter: the same result as the direct solver.
  /// @throws invalid_argument for non-finite angles.
  scattering2d_result solve(std::span<const double> incidence, std::span<const double> observation = {});
  scattering2d_result solve(const std::vector<double>& incidence, const std::vector<double>& observation = {}) {
    return solve(std::span<const double>(incidence), std::span<const double>(observation));
  }

  /// @brief The full direct solution of the same discretisation (N x N
  ///        matrix filled by kernel::efie2d_operator, factored by Dense): the
  ///        reference CBFM is measured against. Needs N^2 scalars of memory.
  scattering2d_result solve_direct(std::span<const double> incidence, std::span<const double> observation = {});
  scattering2d_result solve_direct(const std::vector<double>& incidence, const std::vector<double>& observation = {}) {
    return solve_direct(std::span<const double>(incidence), std::span<const double>(observation));
  }

 private:
  static const solver_type& check_options(const solver_type& s) {
    emgpu::detail::require(std::isfinite(s.tau) && s.tau >= 0 && s.tau < 1, "emgpu::cbfm: tau must be in [0, 1)");
    emgpu::detail::require(std::isfinite(s.overlap_wavelengths) && s.overlap_wavelengths >= 0,
                    "emgpu::cbfm: overlap_wavelengths must be finite and >= 0");
    emgpu::detail::require(std::isfinite(s.block_wavelengths) && s.block_wavelengths > 0,
                    "emgpu::cbfm: block_wavelengths must be finite and > 0");
    emgpu::detail::require(s.blocks_per_body >= 0 && s.max_block_unknowns >= 0 && s.plane_waves >= 0 && s.extra_plane_waves >= 0 &&
                        s.tile_unknowns >= 0,
                    "emgpu::cbfm: counts (blocks_per_body, plane_waves, extra_plane_waves, tile_unknowns) must be >= 0");
    emgpu::detail::require(s.plane_waves > 0 || s.extra_plane_waves > 0, "emgpu::cbfm: need at least one plane wave");
    emgpu::detail::require(s.plane_waves <= solver_type::max_plane_waves &&
                               s.extra_plane_waves <= solver_type::max_plane_waves,
                           "emgpu::cbfm: plane_waves and extra_plane_waves must be <= 2^20 (solver::max_plane_waves)");
    return s;
  }
  static double check_frequency(double f) {
    emgpu::detail::require(std::isfinite(f) && f > 0, "emgpu::scattering2d (cbfm): frequency must be finite and > 0");
    return f;
  }
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  template <class T>
  vector_t<Backend, T> upload(const std::vector<T>& h) const {
    if (h.empty()) return make_vector<T>(b_, 0);
    return to_backend(b_, std::span<const T>(h.data(), h.size()));
  }
  template <class T>
  std::vector<T> download(const vector_t<Backend, T>& v, index_t n) const {
    std::vector<T> h(static_cast<std::size_t>(n));
    if (n > 0) copy_to_host(b_, v.data(), n, h.data());
    return h;
  }
  scattering2d_result make_result(matrix_view<Scalar> jv, std::span<const double> incidence,
                                  std::span<const double> observation) const;
  void make_cbfs(const std::vector<cbfm::extended_block>& ext, std::vector<index_t>& rank);
  void assemble_reduced();

  Backend b_;
  solver_type opt_;
  double f_, k_;
  cbfm::bodies bodies_;
  kernel::efie2d_operator<Backend> op_;
  cbfm::partition part_;
  cbfm::detail::blas<Backend> blas_;
  cbfm::report rep_;
  // after factor()
  index_t n_max_ = 0, k_max_ = 0, reduced_ = 0;
  std::vector<index_t> own_map_h_;        // M * n_max: global unknown of (block, local) or -1
  vector_t<Backend, index_t> own_map_;    // same, backend
  vector_t<Backend, index_t> rank_, offset_, to_padded_, to_compact_;
  vector_t<Backend, Scalar> c_;           // M panels n_max x k_max (block-diagonal basis)
  vector_t<Backend, Scalar> zr_;          // K x K, factored in place
  std::unique_ptr<factorization_type> fact_;
  std::size_t live_bytes_ = 0;
};

}  // namespace emgpu

#include "detail/scattering2d_impl.hpp"
