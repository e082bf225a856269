/// @file
/// @brief The CBFM solver policy (options) and the figures a factorisation reports.
#pragma once

#include <cstddef>
#include <vector>

#include "../core/config.hpp"
#include "../dense.hpp"

namespace emgpu::cbfm {

/// @brief Solver policy: the characteristic-basis-function method (CBFM) with
///        a dense solver for the reduced system. Use it as the Solver of
///        emgpu::scattering2d:
/// @code
/// emgpu::scattering2d<emgpu::backend::cuda, emgpu::kernel::mom, emgpu::cbfm::solver<>> s(bodies, f);
/// @endcode
/// @tparam Dense dense solver policy for the reduced system Z_R a = V_R
///         (dense::crout_lu or any dense::dense_solver).
template <class Dense = dense::crout_lu>
struct solver {
  using dense_type = Dense;
  /// Keep left singular vectors with sigma > tau * sigma_max as CBFs.
  double tau = 1e-3;
  /// Arc length (wavelengths) added on each side of a block while its CBFs are made.
  double overlap_wavelengths = 0.2;
  /// Automatic partition: bodies longer than 1.5 of these (wavelengths of
  /// arc) are cut into blocks of about this length.
  double block_wavelengths = 2.0;
  /// Automatic partition: also cut bodies so that no block exceeds this many
  /// unknowns (0: no limit). The default keeps extended blocks within the
  /// sizes the batched solvers handle in on-chip memory on CUDA.
  index_t max_block_unknowns = 80;
  /// If > 0, every body is cut into this many blocks instead (equal arc length).
  index_t blocks_per_body = 0;
  /// Plane waves per block; 0 gives ceil(2 k r_block) + extra_plane_waves,
  /// r_block the radius of the extended block about its centroid. At most
  /// max_plane_waves per block, either way.
  index_t plane_waves = 0;
  index_t extra_plane_waves = 10;
  /// Limit on a block's plane waves (2^20): its response matrix is unknowns x
  /// plane waves, so more would mean blocks far too large electrically (or a
  /// frequency typed in the wrong unit); an error then beats a huge allocation.
  static constexpr index_t max_plane_waves = index_t(1) << 20;
  /// Rows/columns of the Z tiles generated at once while assembling Z_R
  /// (0: 4096 on a device backend, 1024 on the host).
  index_t tile_unknowns = 0;
  /// Memory (bytes) for one batch of CBF generation (0: 512 MiB device, 128 MiB host).
  std::size_t batch_bytes = 0;
  /// Options of the dense solver.
  Dense dense{};
};

/// @brief What a CBFM factorisation did: sizes, times and memory.
struct report {
  index_t unknowns = 0;          ///< N
  index_t blocks = 0;            ///< M
  index_t reduced = 0;           ///< K = sum of CBFs over blocks (order of Z_R)
  index_t max_block = 0;         ///< largest block (unknowns)
  index_t max_extended = 0;      ///< largest extended block (unknowns)
  index_t min_cbfs = 0, max_cbfs = 0;  ///< fewest / most CBFs of a block
  index_t batches = 0;           ///< batched LU/SVD calls of the CBF generation
  index_t plane_waves = 0;       ///< most plane waves used for a block
  double cbf_seconds = 0;        ///< CBF generation (fill, batched LU, SVD)
  double assembly_seconds = 0;   ///< Z_R from tiles of Z
  double factor_seconds = 0;     ///< dense factorisation of Z_R
  std::size_t peak_bytes = 0;    ///< largest working set of the method's own buffers
  std::size_t reduced_bytes = 0; ///< Z_R
  /// Bytes a full dense N x N matrix of the same scalar would need.
  std::size_t full_matrix_bytes = 0;
  std::vector<index_t> cbfs;     ///< CBFs of each block
};

}  // namespace emgpu::cbfm
