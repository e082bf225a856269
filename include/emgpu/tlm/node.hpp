/// @file
/// @brief Johns' symmetrical condensed node (SCN, 1987) for free space without
///        stubs: port numbering, the scatter step and the field read-out.
///
/// Conventions (design/physics-conventions.md, shared): ports 1..12 are
///   1 Ex/y/-y, 2 Ex/z/-z, 3 Ey/x/-x, 4 Ey/z/-z, 5 Ez/y/-y, 6 Ez/x/-x,
///   7 Ez/y/+y, 8 Ey/z/+z, 9 Ex/z/+z, 10 Ez/x/+x, 11 Ey/x/+x, 12 Ex/y/+y
/// (field polarisation / line axis / face). Port p is stored at index p-1.
/// Every function here is EMGPU_HD: the same source runs in the serial loop,
/// the OpenMP loop and one CUDA thread per node.
#pragma once

#include <string>

#include "../core/config.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"

namespace emgpu::tlm {

/// @brief Number of link lines (ports) of the SCN.
inline constexpr int num_ports = 12;

/// @brief A field component; the order (Ex, Ey, Ez, Hx, Hy, Hz) is also the
///        order of the six values a probe records per step.
enum class component : int { ex = 0, ey = 1, ez = 2, hx = 3, hy = 4, hz = 5 };

namespace detail {
/// @brief Throws invalid_argument "WHO: WHAT". Out of line and [[noreturn]] so
///        the enum checks below stay small enough to inline: the compiler then
///        sees that only valid values get past them (otherwise GCC warns of
///        out-of-bounds indexing behind a check it cannot see through).
[[noreturn]] inline void bad_enum(const char* who, const char* what) {
  throw invalid_argument(std::string(who) + ": " + what);
}
/// @brief Throws invalid_argument naming `who` unless c is one of the six
///        components (a cast from an out-of-range integer would index
///        six-entry tables out of bounds).
inline void check_component(component c, const char* who) {
  if (static_cast<unsigned>(c) >= 6u) bad_enum(who, "bad component (must be ex, ey, ez, hx, hy or hz)");
}
}  // namespace detail

/// @brief Short name ("Ex" ... "Hz") for output headers and VTK arrays.
/// @throws emgpu::invalid_argument for a bad component.
inline const char* component_name(component c) {
  detail::check_component(c, "emgpu::tlm::component_name");
  constexpr const char* names[] = {"Ex", "Ey", "Ez", "Hx", "Hy", "Hz"};
  return names[static_cast<int>(c)];
}

/// @brief Scatter: reflected voltages r[0..12) from incident v[0..12) (port p at p-1).
/// @tparam Real float or double.
/// Only additions and halvings: no product can be contracted into an FMA, so
/// host and device compilers give bit-identical results.
template <class Real>
EMGPU_HD EMGPU_FORCEINLINE void scatter(const Real* v, Real* r) {
  const Real h = Real(0.5);
  // V and Z0*I of the node (physics-conventions: Vx, Vy, Vz, Ix, Iy, Iz).
  const Real vx = h * (v[0] + v[1] + v[8] + v[11]);
  const Real vy = h * (v[2] + v[3] + v[7] + v[10]);
  const Real vz = h * (v[4] + v[5] + v[6] + v[9]);
  const Real ix = h * (v[3] - v[4] + v[6] - v[7]);
  const Real iy = h * (-v[1] + v[5] + v[8] - v[9]);
  const Real iz = h * (v[0] - v[2] + v[10] - v[11]);
  r[0] = vx - iz - v[11];   // V1r
  r[11] = vx + iz - v[0];   // V12r
  r[1] = vx + iy - v[8];    // V2r
  r[8] = vx - iy - v[1];    // V9r
  r[2] = vy + iz - v[10];   // V3r
  r[10] = vy - iz - v[2];   // V11r
  r[3] = vy - ix - v[7];    // V4r
  r[7] = vy + ix - v[3];    // V8r
  r[4] = vz + ix - v[6];    // V5r
  r[6] = vz - ix - v[4];    // V7r
  r[5] = vz - iy - v[9];    // V6r
  r[9] = vz + iy - v[5];    // V10r
}

/// @brief The four ports that carry a component and the sign with which each
///        enters its read-out (E: Ex = -(V1+V2+V9+V12)/(2 dl); H: e.g.
///        Hx = (V4-V5+V7-V8)/(2 eta0 dl)). Zero-based port indices.
struct component_ports {
  int port[4];
  int sign[4];
};

/// @brief Ports and signs of component c (see component_ports). Device code
///        cannot throw: c must be valid (the public entry points check it).
EMGPU_HD inline component_ports ports_of(component c) {
  switch (c) {
    case component::ex: return {{0, 1, 8, 11}, {1, 1, 1, 1}};
    case component::ey: return {{2, 3, 7, 10}, {1, 1, 1, 1}};
    case component::ez: return {{4, 5, 6, 9}, {1, 1, 1, 1}};
    case component::hx: return {{3, 4, 6, 7}, {1, -1, 1, -1}};
    case component::hy: return {{1, 5, 8, 9}, {-1, 1, 1, -1}};
    default: return {{0, 2, 10, 11}, {1, -1, 1, -1}};  // hz
  }
}

/// @brief Factor that turns the signed port sum of component c into the field:
///        -1/(2 dl) for E (V/m), 1/(2 eta0 dl) for H (A/m). c must be valid
///        (as for ports_of).
EMGPU_HD inline double readout_scale(component c, double dl) {
  return static_cast<int>(c) < 3 ? -1.0 / (2.0 * dl) : 1.0 / (2.0 * constants::eta0 * dl);
}

/// @brief Node fields from the incident voltages (before scattering):
///        f = {Ex, Ey, Ez, Hx, Hy, Hz} in V/m and A/m.
/// @tparam Real float or double (the arithmetic runs in Real).
template <class Real>
EMGPU_HD inline void node_fields(const Real* v, Real dl, Real* f) {
  const Real se = Real(-0.5) / dl;
  const Real sh = Real(0.5) / (Real(constants::eta0) * dl);
  f[0] = se * (v[0] + v[1] + v[8] + v[11]);
  f[1] = se * (v[2] + v[3] + v[7] + v[10]);
  f[2] = se * (v[4] + v[5] + v[6] + v[9]);
  f[3] = sh * (v[3] - v[4] + v[6] - v[7]);
  f[4] = sh * (-v[1] + v[5] + v[8] - v[9]);
  f[5] = sh * (v[0] - v[2] + v[10] - v[11]);
}

}  // namespace emgpu::tlm
