/// @file
/// @brief What a 2D EFIE kernel produces on the host: the unknowns (points and
///        quadrature weights) and the near-interaction plan (local-correction
///        blocks and their fine quadrature rules). Independent of frequency, so
///        one discretisation serves a whole frequency sweep.
///
/// Matrix convention (design/physics-conventions.md, shared): row m is the EFIE
/// E_z_inc(r_m) = (k eta / 4) Integral_C J_z H0^(2)(k R) dt' tested at unknown m;
/// Z(m, n) multiplies the current at unknown n.
#pragma once

#include <vector>

#include "../core/config.hpp"

namespace emgpu::kernel {

/// @brief One point of a fine near-field rule on a source cell.
///
/// Its contribution to the moment k of a block is
///   P_k(s) [a H0^(2)(k R) + (2j/pi) b J0(k R)],
/// with R the distance from the block's observer. Regular points have b = 0;
/// points of a self-cell rule carry the logarithmic product weights in b.
struct rule_point {
  double x, y;  ///< position (m)
  double s;     ///< reference parameter on the source cell, in [-1, 1]
  double a;     ///< weight of H0^(2), Jacobian |dr/ds| included (m)
  double b;     ///< weight of (2j/pi) J0 (m)
};

/// @brief A near interaction: q entries Z(obs, col0 .. col0+q-1) computed from
///        the moments of points [begin, end) of the rule array.
struct near_block {
  index_t obs;         ///< observer unknown (row)
  index_t col0;        ///< first unknown of the source cell (column)
  index_t begin, end;  ///< rule points
};

/// @brief The host-side product of a kernel policy: everything assembly needs
///        except the wavenumber.
struct discretization {
  index_t n = 0;                ///< unknowns
  int q = 1;                    ///< unknowns per cell (1 for pulse-basis MoM)
  std::vector<double> x, y, w;  ///< unknown positions and quadrature weights (m)
  std::vector<index_t> cell;    ///< cell of each unknown
  /// Moments -> entries: Z(obs, col0 + i) = sum_k coef[i + q k] M_k.
  std::vector<double> coef;
  std::vector<near_block> blocks;
  std::vector<rule_point> rules;
  /// Diagonal by the small-argument self term of the seed MoM (pulse basis on
  /// flat cells): Z_mm = (k eta w_m / 4) [1 - j (2/pi) ln(gamma k w_m / (4 e))].
  bool analytic_self = false;
};

}  // namespace emgpu::kernel
