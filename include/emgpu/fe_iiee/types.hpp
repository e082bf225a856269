/// @file
/// @brief Vocabulary of the FE-IIEE radiation operator: loop-strategy tags, the
///        scat_vec layouts, the geometry and medium descriptions and the options.
#pragma once

#include <concepts>
#include <span>
#include <type_traits>

#include "../core/config.hpp"

namespace emgpu::fe_iiee {

/// @brief Loop strategies: which of the three loops (source points of S',
///        observer points of S, right-hand sides) is spread over threads.
/// All give the same scat_vec to rounding; they differ in speed and memory.
namespace strategy {
/// Picks the fastest strategy for the sizes at hand at each apply() (default).
struct automatic {};
/// Parallel over source points: each worker keeps its own partial scat_vec
/// (heap buffers, one per worker, kept by the operator across calls) and a
/// parallel reduction sums them. Memory: workers x scat_vec. On CUDA the
/// sources are split into slices reduced the same way, observers still across
/// threads.
struct over_sources {};
/// Parallel over observer points: each worker owns a tile of observers and
/// accumulates in registers / a small local buffer; no reduction needed.
struct over_observers {};
/// Parallel over right-hand sides: each worker owns (tiles of) right-hand
/// sides. On one RHS it has a single worker on CPU; on CUDA it is the
/// observer kernel with the RHS chunks spread across the grid.
struct over_rhs {};
}  // namespace strategy

/// @brief One of the strategy tags above.
template <class S>
concept loop_strategy =
    std::same_as<S, strategy::automatic> || std::same_as<S, strategy::over_sources> ||
    std::same_as<S, strategy::over_observers> || std::same_as<S, strategy::over_rhs>;

/// @brief Layout of the scat_vec: 6 complex values per observer per RHS,
///        (Ex, Ey, Ez, curlE_x, curlE_y, curlE_z).
enum class scat_layout {
  /// Column per RHS: element (f, o, r) at f + 6 * (o + n_obs * r). Default: what a
  /// FEM code wants (one right-hand side per column) and as fast as the other,
  /// since every kernel writes each output entry exactly once at the end.
  by_rhs,
  /// All RHS of one observer together: element (f, o, r) at f + 6 * (r + n_rhs * o).
  by_observer
};

/// @brief Index of field component f (0..5) of observer o for right-hand side r.
EMGPU_HD inline index_t scat_index(scat_layout layout, index_t f, index_t o, index_t r,
                                   index_t n_obs, index_t n_rhs) {
  return layout == scat_layout::by_rhs ? f + 6 * (o + n_obs * r) : f + 6 * (r + n_rhs * o);
}

/// @brief The inner surface S' as a quadrature rule: points, weights, normals.
/// @tparam Real float or double.
/// `points` holds x, y, z of each point (3 n values, point after point);
/// `weights` the n quadrature weights (area element times rule weight);
/// `normals` is optional (empty, or 3 n values): needed only to form J and M
/// from E and H (J = n x H, M = -n x E, n pointing away from the enclosed
/// sources). Normals are normalised on entry, at any finite nonzero length
/// (in double 1e-200 and 1e200 alike); zero or non-finite normals are rejected.
template <class Real>
struct source_surface {
  std::span<const Real> points;
  std::span<const Real> weights;
  std::span<const Real> normals = {};
};

/// @brief The exterior medium: wavenumber k (1/m, > 0) and impedance eta (ohm, > 0).
template <class Real>
struct medium {
  Real k;
  Real eta;
};

/// @brief Which arithmetic units the CUDA backend uses for the per-pair
///        products (host backends ignore it). Both give the same scat_vec to
///        rounding.
enum class device_kernel {
  /// tensor_cores for double with 8 or more RHS, else cuda_cores (default).
  automatic,
  /// FP64/FP32 CUDA cores: a thread per observer, up to 4 (double) or 8 (float)
  /// RHS accumulated in registers with the structured 188-flop form per RHS.
  cuda_cores,
  /// FP64 tensor cores (DMMA, sm_80 and newer): per source point, the 6 x 6
  /// complex coupling of 8 observers times the currents of 4 RHS as real
  /// 8 x 4 by 4 x 8 products (2 x 2 real blocks per complex product), issued
  /// in the mma shape of radiation_options::dmma. Double only: float keeps
  /// cuda_cores (tensor cores have no FP32 product of full precision). RHS are
  /// padded to a multiple of 4 per chunk.
  tensor_cores
};

/// @brief PTX mma shape of the tensor-core kernel. All compute the same
///        products (the wider ones stack two or four of the 8 x 8 x 4 ones);
///        they differ only in speed. Shapes that need sm_90 fall back to
///        m8n8k4 on sm_80-89.
enum class dmma_shape {
  /// m16n8k4 on sm_90 and newer (fastest measured on an H200), m8n8k4 before (default).
  automatic,
  /// mma.m8n8k4.f64 (sm_80): one component of 8 observers, one source.
  m8n8k4,
  /// mma.m16n8k4.f64 (sm_90): the E and C components c of 8 observers, one source.
  m16n8k4,
  /// mma.m16n8k8.f64 (sm_90): as m16n8k4 for two source points at once.
  m16n8k8
};

/// @brief Options of the operator.
template <class Real>
struct radiation_options {
  /// Observers closer than this to any source point are rejected (the kernel is
  /// singular there). 0 selects sqrt(epsilon) times the diameter of the
  /// bounding box of all points (1.5e-8 D in double, 3.5e-4 D in float);
  /// negative, infinite or NaN values are rejected (invalid_argument).
  Real min_separation = 0;
  /// Check every observer against every source at construction (O(n_s n_o),
  /// about 5% of one apply with one RHS). Disable only for trusted geometry.
  bool check_separation = true;
  /// CUDA only: arithmetic units of the radiation kernel (see device_kernel).
  device_kernel kernel = device_kernel::automatic;
  /// CUDA only: mma shape of the tensor-core kernel (see dmma_shape).
  dmma_shape dmma = dmma_shape::automatic;
};

}  // namespace emgpu::fe_iiee
