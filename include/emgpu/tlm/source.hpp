/// @file
/// @brief Excitations of the TLM mesh: time functions (waveform) and where and
///        how they enter (source: nodes with weights, a field component, soft
///        or hard).
///
/// A source with waveform g and node weight w acts on the incident voltages at
/// step n (time t = n dt), before the probes are read and before scattering:
///  - soft: the component F at the node grows by w g(t);
///  - hard: F is set to w g(t).
/// Only the four ports that carry F change, each by the same signed amount, so
/// the other five components of the node are untouched. For E (V/m) each of
/// the four ports moves by -dF dl / 2; for H (A/m) by +-dF eta0 dl / 2 with the
/// read-out signs (design/physics-conventions.md, shared).
#pragma once

#include <cmath>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "mesh.hpp"
#include "node.hpp"

namespace emgpu::tlm {

/// @brief A time function g(step, t), evaluated on the host once per step.
class waveform {
 public:
  using function_type = std::function<double(index_t step, double t)>;

  waveform() = default;
  /// @brief Wraps a callable g(step, t).
  explicit waveform(function_type f) : f_(std::move(f)) {}

  /// Value at step n, time t = n dt.
  double operator()(index_t step, double t) const { return f_ ? f_(step, t) : 0.0; }

  /// @brief Amplitude a at step 0 only (a single-step impulse: flat spectrum).
  static waveform impulse(double a = 1.0) {
    return waveform([a](index_t n, double) { return n == 0 ? a : 0.0; });
  }
  /// @brief a exp(-((t - t0) / tau)^2).
  /// @throws emgpu::invalid_argument unless tau > 0 and everything is finite.
  static waveform gaussian(double t0, double tau, double a = 1.0) {
    check(std::isfinite(t0) && std::isfinite(a) && std::isfinite(tau) && tau > 0,
          "gaussian: tau must be > 0 and all values finite");
    return waveform([=](index_t, double t) {
      const double x = (t - t0) / tau;
      return a * std::exp(-x * x);
    });
  }
  /// @brief a exp(-((t - t0) / tau)^2) sin(2 pi f0 (t - t0)): a band around f0
  ///        of width about 1 / (pi tau) with no DC content.
  /// @throws emgpu::invalid_argument unless tau > 0, f0 >= 0 and all finite.
  static waveform modulated_gaussian(double f0, double t0, double tau, double a = 1.0) {
    check(std::isfinite(f0) && f0 >= 0 && std::isfinite(t0) && std::isfinite(a) &&
              std::isfinite(tau) && tau > 0,
          "modulated_gaussian: tau > 0, f0 >= 0, all values finite");
    return waveform([=](index_t, double t) {
      const double x = (t - t0) / tau;
      return a * std::exp(-x * x) * std::sin(2.0 * constants::pi * f0 * (t - t0));
    });
  }
  /// @brief a sin(2 pi f t), switched on smoothly over `ramp` seconds
  ///        (raised cosine) to limit the start-up transient; ramp = 0: abrupt.
  /// @throws emgpu::invalid_argument unless f > 0, ramp >= 0 and all finite.
  static waveform sinusoid(double f, double a = 1.0, double ramp = 0.0) {
    check(std::isfinite(f) && f > 0 && std::isfinite(a) && std::isfinite(ramp) && ramp >= 0,
          "sinusoid: f > 0, ramp >= 0, all values finite");
    return waveform([=](index_t, double t) {
      const double env = (ramp > 0 && t < ramp) ? 0.5 * (1.0 - std::cos(constants::pi * t / ramp)) : 1.0;
      return a * env * std::sin(2.0 * constants::pi * f * t);
    });
  }
  /// @brief The given samples, one per step (0 after the last one).
  /// @throws emgpu::invalid_argument when a sample is not finite.
  static waveform samples(std::vector<double> s) {
    for (double v : s) check(std::isfinite(v), "samples: non-finite sample");
    auto p = std::make_shared<const std::vector<double>>(std::move(s));
    return waveform([p](index_t n, double) {
      return n >= 0 && n < index_t(p->size()) ? (*p)[std::size_t(n)] : 0.0;
    });
  }
  /// @brief A host callable of time g(t).
  template <class F>
  static waveform function(F g) {
    return waveform([g = std::move(g)](index_t, double t) { return double(g(t)); });
  }

 private:
  static void check(bool ok, const char* msg) {
    emgpu::detail::require(ok, std::string("emgpu::tlm::waveform::") + msg);
  }
  function_type f_;
};

/// @brief How a source acts on its component (see the file comment).
enum class source_kind { soft, hard };

namespace detail {
/// @brief Throws invalid_argument naming `who` for a component or kind outside
///        its enumeration (the factories check, and the solver again, since a
///        source's members are public).
inline void check_kinds(component c, source_kind kind, const char* who) {
  check_component(c, who);
  if (kind != source_kind::soft && kind != source_kind::hard) bad_enum(who, "bad source kind (must be soft or hard)");
}
}  // namespace detail

/// @brief Nodes, weights, component, kind and waveform of one excitation.
/// Build with the factories; the solver validates the nodes against its mesh.
struct source {
  component field = component::ez;
  source_kind kind = source_kind::soft;
  waveform signal;
  std::vector<index_t> i, j, k;  ///< node coordinates
  std::vector<double> weight;    ///< per node

  /// @brief One node.
  /// @throws emgpu::invalid_argument for a bad component or kind.
  static source point(index_t i0, index_t j0, index_t k0, component c, waveform g,
                      source_kind kind = source_kind::soft) {
    detail::check_kinds(c, kind, "emgpu::tlm::source::point");
    source s{c, kind, std::move(g), {i0}, {j0}, {k0}, {1.0}};
    return s;
  }
  /// @brief Uniform weight 1 over the nodes of plane `index` normal to
  ///        `normal`, tangential ranges [u0, u1) x [v0, v1) ((u, v) = the other
  ///        two axes in x, y, z order).
  /// @throws emgpu::invalid_argument as profiled.
  static source plane(axis normal, index_t index, index_t u0, index_t u1, index_t v0, index_t v1,
                      component c, waveform g, source_kind kind = source_kind::soft) {
    return profiled(normal, index, u0, u1, v0, v1, c, std::move(g), kind, [](double, double) { return 1.0; });
  }
  /// @brief A TE10 waveguide port: nodes of plane `index` normal to the guide
  ///        axis `normal`, over [u0, u1) x [v0, v1), weight sin(pi x / a) with x
  ///        measured from the wall at u0 along `broad` (x = (u - u0 + 1/2) dl,
  ///        a = (u1 - u0) dl). The component is the E field along the remaining
  ///        (narrow) axis, unless c is given.
  /// @throws emgpu::invalid_argument for a bad axis, when broad == normal, or
  ///         as profiled.
  static source waveguide_te10(axis normal, index_t index, axis broad, index_t u0, index_t u1,
                               index_t v0, index_t v1, waveform g,
                               source_kind kind = source_kind::soft) {
    detail::check_axis(normal, "emgpu::tlm::source::waveguide_te10");
    detail::check_axis(broad, "emgpu::tlm::source::waveguide_te10");
    emgpu::detail::require(broad != normal, "emgpu::tlm::source::waveguide_te10: broad axis == guide axis");
    const int a = int(normal), b = int(broad);
    const int narrow = 3 - a - b;
    const int ua = a == 0 ? 1 : 0;
    const bool broad_is_u = (b == ua);
    const double width = broad_is_u ? double(u1 - u0) : double(v1 - v0);
    return profiled(normal, index, u0, u1, v0, v1, component(narrow), std::move(g), kind,
                    [=](double u, double v) {
                      const double x = broad_is_u ? u - double(u0) + 0.5 : v - double(v0) + 0.5;
                      return std::sin(constants::pi * x / width);
                    });
  }
  /// @brief Plane source with weight profile(u, v) at node (u, v) of the plane.
  /// @throws emgpu::invalid_argument for a bad axis, component or kind, or an
  ///         empty range.
  template <class Profile>
  static source profiled(axis normal, index_t index, index_t u0, index_t u1, index_t v0, index_t v1,
                         component c, waveform g, source_kind kind, Profile profile) {
    detail::check_axis(normal, "emgpu::tlm::source::profiled");
    detail::check_kinds(c, kind, "emgpu::tlm::source::profiled");
    emgpu::detail::require(u0 < u1 && v0 < v1, "emgpu::tlm::source: empty plane range");
    source s{c, kind, std::move(g), {}, {}, {}, {}};
    const int a = int(normal), ua = a == 0 ? 1 : 0, va = a == 2 ? 1 : 2;
    for (index_t v = v0; v < v1; ++v)
      for (index_t u = u0; u < u1; ++u) {
        index_t q[3];
        q[a] = index;
        q[ua] = u;
        q[va] = v;
        s.i.push_back(q[0]);
        s.j.push_back(q[1]);
        s.k.push_back(q[2]);
        s.weight.push_back(profile(double(u), double(v)));
      }
    return s;
  }
};

}  // namespace emgpu::tlm
