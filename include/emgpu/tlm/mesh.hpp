/// @file
/// @brief The TLM model: a box of nx x ny x nz cubic cells of side dl, a
///        reflection coefficient per outer face and electric walls on chosen
///        internal cell faces (plates, irises, hollow boxes, solid blocks).
///
/// Node (i, j, k) sits at the centre of its cell, ((i+1/2) dl, (j+1/2) dl,
/// (k+1/2) dl). Cell faces normal to an axis are numbered by planes 0..n: plane
/// p lies between nodes p-1 and p, planes 0 and n are the outer faces. A pulse
/// reflected towards an outer face comes back as the next incident pulse times
/// that face's coefficient Gamma (design/physics-conventions.md, shared):
/// electric_wall = -1 (PEC), magnetic_wall = +1 (PMC), matched = 0 (absorber
/// for normal incidence). An internal wall reflects with -1 on both sides.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <istream>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#if __has_include(<unistd.h>)
#include <unistd.h>
#endif

#include "../core/config.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "node.hpp"

namespace emgpu::tlm {

/// @brief Reflection coefficient of a perfect electric conductor.
inline constexpr double electric_wall = -1.0;
/// @brief Reflection coefficient of a perfect magnetic conductor.
inline constexpr double magnetic_wall = 1.0;
/// @brief Reflection coefficient of a matched (normal-incidence) absorber.
inline constexpr double matched = 0.0;

/// @brief Outer-face coefficient that absorbs a TE_mn waveguide mode at one
///        frequency: Gamma = (1 - cos t) / (1 + cos t), cos t = sqrt(1 - (fc/f)^2).
///
/// A face with Gamma = 0 is matched to the link lines (impedance eta0), i.e.
/// to a plane wave at normal incidence. A guided mode meets it with the wave
/// impedance Z = eta0 / cos t and reflects (Z - eta0) / (Z + eta0), which is
/// this value (|B/A| = 0.154 for TE10 in WR-28 at 31 GHz). Loading the face with
/// Z instead cancels the reflection at f (and keeps it small nearby).
/// @throws emgpu::invalid_argument unless 0 < fc < f and both are finite.
inline double waveguide_matched_gamma(double f, double fc) {
  emgpu::detail::require(std::isfinite(f) && std::isfinite(fc) && fc > 0 && f > fc,
                         "emgpu::tlm::waveguide_matched_gamma: need 0 < fc < f");
  const double c = std::sqrt(1.0 - (fc / f) * (fc / f));
  return (1.0 - c) / (1.0 + c);
}

/// @brief Coordinate axis.
enum class axis : int { x = 0, y = 1, z = 2 };

/// @brief An outer face of the mesh. Also the bit order of the wall mask.
enum class face : int { xmin = 0, xmax = 1, ymin = 2, ymax = 3, zmin = 4, zmax = 5 };

namespace detail {

/// @brief Throws invalid_argument naming `who` unless a is x, y or z.
inline void check_axis(axis a, const char* who) {
  if (static_cast<unsigned>(a) >= 3u) bad_enum(who, "bad axis (must be x, y or z)");
}

/// @brief Throws invalid_argument naming `who` unless f is one of the six faces.
inline void check_face(face f, const char* who) {
  if (static_cast<unsigned>(f) >= 6u) bad_enum(who, "bad face (must be xmin, xmax, ymin, ymax, zmin or zmax)");
}

/// @brief x in %g format, for messages (std::to_string prints 1e-320 as 0.000000).
inline std::string format_g(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// @brief "float" or "double", for messages.
template <class Real>
inline const char* real_name() {
  return std::is_same_v<Real, float> ? "float" : "double";
}

/// @brief True when x is finite and its conversion to Real is finite too
///        (converting a double beyond float's range is undefined behaviour).
template <class Real>
inline bool representable(double x) {
  return std::isfinite(x) && std::abs(x) <= double(std::numeric_limits<Real>::max());
}

/// @brief True when a mesh of cell side dl can run with Real voltages: dt and
///        every factor that turns voltages into fields or back (computed as
///        node_fields and readout_scale compute them) are finite, normal and
///        positive. Outside this range dt or a factor rounds to 0 or infinity
///        and every field reads NaN without any other sign of trouble.
template <class Real>
inline bool cell_size_fits(double dl) {
  auto normal_positive = [](auto x) {
    return std::isfinite(x) && x >= std::numeric_limits<decltype(x)>::min();
  };
  if (!(std::isfinite(dl) && dl > 0)) return false;
  if (!normal_positive(dl / (2.0 * constants::c0))) return false;
  const double se = 1.0 / (2.0 * dl), sh = 1.0 / (2.0 * constants::eta0 * dl);
  if (!representable<Real>(dl) || !representable<Real>(se) || !representable<Real>(sh)) return false;
  const Real r = Real(dl);
  return normal_positive(r) && normal_positive(Real(se)) && normal_positive(Real(sh)) &&
         normal_positive(Real(0.5) / r) && normal_positive(Real(0.5) / (Real(constants::eta0) * r));
}

/// @brief Refuses (invalid_argument "WHAT needs X GiB, more than the host's
///        Y GiB of memory") an allocation larger than the host's physical
///        memory, so it fails with a clear message instead of std::bad_alloc
///        or the out-of-memory killer.
inline void check_host_memory(std::size_t bytes, const std::string& what) {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGE_SIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page > 0) {
    const double phys = double(pages) * double(page);
    if (double(bytes) > phys)
      throw invalid_argument(what + " needs " + std::to_string(double(bytes) / 1073741824.0) +
                             " GiB, more than the host's " + std::to_string(phys / 1073741824.0) +
                             " GiB of memory");
  }
#else
  (void)bytes;
  (void)what;
#endif
}

}  // namespace detail

/// @brief Half-open node ranges [i0, i1) x [j0, j1) x [k0, k1).
struct box {
  index_t i0 = 0, i1 = 0, j0 = 0, j1 = 0, k0 = 0, k1 = 0;
  /// Number of nodes in the box (0 when any range is empty).
  index_t count() const {
    return (i1 > i0 && j1 > j0 && k1 > k0) ? (i1 - i0) * (j1 - j0) * (k1 - k0) : 0;
  }
};

/// @brief Distance (in elements) between consecutive port arrays of a mesh of
///        `nodes` nodes: rounded up to 4 KiB, plus 128 B.
///
/// With a stride that is a multiple of 4 KiB, the 24 streams of a step (12
/// read, 12 written) fall into the same L1 cache sets on the host and evict
/// each other. The extra 128 B puts each port in different sets and keeps
/// every port array 128 B aligned for coalesced GPU access.
template <class Real>
inline index_t port_stride(index_t nodes) {
  constexpr index_t page = index_t(4096 / sizeof(Real)), line = index_t(128 / sizeof(Real));
  return (nodes + page - 1) / page * page + line;
}

/// @brief Bytes a solver with Real voltages needs for `nodes` nodes: two
///        buffers of 12 port arrays (port_stride elements each), plus one
///        wall-mask byte per node when the model has internal walls.
/// @throws emgpu::invalid_argument when the size overflows.
template <class Real>
inline std::size_t memory_estimate(index_t nodes, bool walls) {
  constexpr std::size_t per = 2 * 12 * sizeof(Real);
  emgpu::detail::require(nodes >= 0 && static_cast<std::size_t>(nodes) <=
                                           (std::numeric_limits<std::size_t>::max() / 4) / (per + 1),
                         "emgpu::tlm: mesh too large (memory size overflows)");
  const auto n = static_cast<std::size_t>(nodes);
  return static_cast<std::size_t>(port_stride<Real>(nodes)) * per + (walls ? n : 0);
}

/// @brief Geometry and boundary description of a TLM model (host object).
///
/// Setters return *this so a model reads as one expression:
/// @code
///   tlm::mesh m(10, 6, 8, 0.01);                       // 10 x 6 x 8 cm, PEC outside
///   m.set_boundary(tlm::face::zmax, tlm::matched)
///    .add_iris(tlm::axis::z, 4, 3, 7, 0, 6);           // iris in plane z = 4, window x in [3,7)
/// @endcode
class mesh {
 public:
  /// @brief nx x ny x nz cells of side dl (metres); every outer face gets `gamma`.
  /// @throws emgpu::invalid_argument for sizes < 1, dl not finite and > 0, dl
  ///         so small or large that dt or a field scale factor is not a
  ///         normal double (outside about [1.3e-299, 6e304] m), gamma
  ///         outside [-1, 1] or a node count that overflows.
  mesh(index_t nx, index_t ny, index_t nz, double dl, double gamma = electric_wall)
      : nx_(nx), ny_(ny), nz_(nz), dl_(dl) {
    emgpu::detail::require(nx >= 1 && ny >= 1 && nz >= 1, "emgpu::tlm::mesh: nx, ny, nz must be >= 1");
    emgpu::detail::require(std::isfinite(dl) && dl > 0, "emgpu::tlm::mesh: dl must be finite and > 0");
    if (!detail::cell_size_fits<double>(dl))
      throw invalid_argument("emgpu::tlm::mesh: dl = " + detail::format_g(dl) +
                             " m is out of range: dt = dl / (2 c0) or the field scale factors "
                             "1 / (2 dl), 1 / (2 eta0 dl) underflow or overflow a double");
    constexpr index_t lim = std::numeric_limits<index_t>::max() / 64;
    emgpu::detail::require(nx <= lim / ny && nx * ny <= lim / nz,
                    "emgpu::tlm::mesh: node count overflows the index type");
    set_boundaries(gamma);
  }

  index_t nx() const noexcept { return nx_; }
  index_t ny() const noexcept { return ny_; }
  index_t nz() const noexcept { return nz_; }
  /// @brief Number of nodes along axis a.
  /// @throws emgpu::invalid_argument when a is not x, y or z.
  index_t size(axis a) const {
    detail::check_axis(a, "emgpu::tlm::mesh::size");
    return a == axis::x ? nx_ : a == axis::y ? ny_ : nz_;
  }
  /// Cell side in metres.
  double dl() const noexcept { return dl_; }
  /// Time step dl / (2 c0) in seconds.
  double dt() const noexcept { return dl_ / (2.0 * constants::c0); }
  index_t node_count() const noexcept { return nx_ * ny_ * nz_; }
  /// Linear index of node (i, j, k): x fastest.
  index_t index(index_t i, index_t j, index_t k) const noexcept { return i + nx_ * (j + ny_ * k); }
  /// True when (i, j, k) is a node of the mesh.
  bool contains(index_t i, index_t j, index_t k) const noexcept {
    return i >= 0 && i < nx_ && j >= 0 && j < ny_ && k >= 0 && k < nz_;
  }

  /// @brief Sets the reflection coefficient of one outer face.
  /// @throws emgpu::invalid_argument for a bad face or a gamma not finite or
  ///         outside [-1, 1].
  mesh& set_boundary(face f, double gamma) {
    detail::check_face(f, "emgpu::tlm::mesh::set_boundary");
    check_gamma(gamma);
    gamma_[static_cast<int>(f)] = gamma;
    return *this;
  }
  /// @brief Sets the same reflection coefficient on all six outer faces.
  /// @throws emgpu::invalid_argument as set_boundary.
  mesh& set_boundaries(double gamma) {
    check_gamma(gamma);
    gamma_.fill(gamma);
    return *this;
  }
  /// @brief Reflection coefficient of outer face f.
  /// @throws emgpu::invalid_argument for a bad face.
  double boundary(face f) const {
    detail::check_face(f, "emgpu::tlm::mesh::boundary");
    return gamma_[static_cast<int>(f)];
  }
  const std::array<double, 6>& boundaries() const noexcept { return gamma_; }

  /// @brief Electric wall on the cell faces of plane `plane` (0..n along
  ///        `normal`) over tangential node ranges [u0, u1) x [v0, v1), (u, v)
  ///        being the other two axes in x, y, z order. On plane 0 or n it
  ///        overrides the outer face's coefficient with -1 there.
  /// @throws emgpu::invalid_argument for a bad axis, when the plate is empty
  ///         or leaves the mesh, or when the wall mask (1 B per node) would
  ///         not fit in the host's memory.
  mesh& add_plate(axis normal, index_t plane, index_t u0, index_t u1, index_t v0, index_t v1) {
    detail::check_axis(normal, "emgpu::tlm::mesh::add_plate");
    const int a = static_cast<int>(normal);
    const int ua = a == 0 ? 1 : 0, va = a == 2 ? 1 : 2;
    const index_t n = size(normal), nu = size(axis(ua)), nv = size(axis(va));
    emgpu::detail::require(plane >= 0 && plane <= n,
                    "emgpu::tlm::mesh: wall plane outside the mesh (must be in [0, n])");
    emgpu::detail::require(u0 >= 0 && u0 < u1 && u1 <= nu && v0 >= 0 && v0 < v1 && v1 <= nv,
                    "emgpu::tlm::mesh: wall rectangle empty or outside the mesh");
    ensure_mask();
    for (index_t v = v0; v < v1; ++v)
      for (index_t u = u0; u < u1; ++u) {
        index_t c[3];
        c[ua] = u;
        c[va] = v;
        if (plane > 0) {  // the +face of the node before the plane
          c[a] = plane - 1;
          mask_[std::size_t(index(c[0], c[1], c[2]))] |= std::uint8_t(1u << (2 * a + 1));
        }
        if (plane < n) {  // the -face of the node after it
          c[a] = plane;
          mask_[std::size_t(index(c[0], c[1], c[2]))] |= std::uint8_t(1u << (2 * a));
        }
      }
    return *this;
  }

  /// @brief Electric walls over the whole plane except the window
  ///        [u0, u1) x [v0, v1) (an iris or a slot).
  /// @throws emgpu::invalid_argument for a bad axis, when the window is empty
  ///         or leaves the mesh, or as add_plate.
  mesh& add_iris(axis normal, index_t plane, index_t u0, index_t u1, index_t v0, index_t v1) {
    detail::check_axis(normal, "emgpu::tlm::mesh::add_iris");
    const int a = static_cast<int>(normal);
    const index_t nu = size(axis(a == 0 ? 1 : 0)), nv = size(axis(a == 2 ? 1 : 2));
    emgpu::detail::require(u0 >= 0 && u0 < u1 && u1 <= nu && v0 >= 0 && v0 < v1 && v1 <= nv,
                    "emgpu::tlm::mesh: iris window empty or outside the mesh");
    emgpu::detail::require(plane >= 0 && plane <= size(normal),
                    "emgpu::tlm::mesh: wall plane outside the mesh (must be in [0, n])");
    if (u0 > 0) add_plate(normal, plane, 0, u0, 0, nv);
    if (u1 < nu) add_plate(normal, plane, u1, nu, 0, nv);
    if (v0 > 0) add_plate(normal, plane, u0, u1, 0, v0);
    if (v1 < nv) add_plate(normal, plane, u0, u1, v1, nv);
    return *this;
  }

  /// @brief Electric walls on the six sides of the box of nodes b (a closed
  ///        metal shell: the nodes inside form a cavity).
  /// @throws emgpu::invalid_argument when b is empty or leaves the mesh, or as
  ///         add_plate.
  mesh& add_box(const box& b) {
    check_box(b);
    add_plate(axis::x, b.i0, b.j0, b.j1, b.k0, b.k1).add_plate(axis::x, b.i1, b.j0, b.j1, b.k0, b.k1);
    add_plate(axis::y, b.j0, b.i0, b.i1, b.k0, b.k1).add_plate(axis::y, b.j1, b.i0, b.i1, b.k0, b.k1);
    add_plate(axis::z, b.k0, b.i0, b.i1, b.j0, b.j1).add_plate(axis::z, b.k1, b.i0, b.i1, b.j0, b.j1);
    return *this;
  }

  /// @brief Fills the cells of b with metal (voxels): every face of every cell
  ///        in b becomes an electric wall, so no pulse enters or leaves them.
  /// @throws emgpu::invalid_argument when b is empty or leaves the mesh, or as
  ///         add_plate.
  mesh& add_solid(const box& b) {
    check_box(b);
    ensure_mask();
    for (index_t k = b.k0; k < b.k1; ++k)
      for (index_t j = b.j0; j < b.j1; ++j)
        for (index_t i = b.i0; i < b.i1; ++i) {
          mask_[std::size_t(index(i, j, k))] = 0x3f;
          // Neighbours see the metal on the shared face.
          if (i > 0) mask_[std::size_t(index(i - 1, j, k))] |= 1u << 1;
          if (i + 1 < nx_) mask_[std::size_t(index(i + 1, j, k))] |= 1u << 0;
          if (j > 0) mask_[std::size_t(index(i, j - 1, k))] |= 1u << 3;
          if (j + 1 < ny_) mask_[std::size_t(index(i, j + 1, k))] |= 1u << 2;
          if (k > 0) mask_[std::size_t(index(i, j, k - 1))] |= 1u << 5;
          if (k + 1 < nz_) mask_[std::size_t(index(i, j, k + 1))] |= 1u << 4;
        }
    return *this;
  }

  /// @brief True when the model has any internal (or explicit outer) wall.
  bool has_walls() const noexcept { return !mask_.empty(); }
  /// @brief Per node a 6-bit mask, bit f set when face f (face order) of the
  ///        node is an electric wall; empty when there are no walls.
  const std::vector<std::uint8_t>& wall_mask() const noexcept { return mask_; }
  /// @brief True when face f of node (i, j, k) carries an explicit wall.
  /// @throws emgpu::invalid_argument for a bad face or a node outside the mesh.
  bool wall(index_t i, index_t j, index_t k, face f) const {
    detail::check_face(f, "emgpu::tlm::mesh::wall");
    emgpu::detail::require(contains(i, j, k), "emgpu::tlm::mesh::wall: node outside the mesh");
    return !mask_.empty() && ((mask_[std::size_t(index(i, j, k))] >> static_cast<int>(f)) & 1u);
  }

  /// @brief Bytes a solver in Real needs for this model (see memory_estimate).
  template <class Real>
  std::size_t memory_bytes() const {
    return memory_estimate<Real>(node_count(), has_walls());
  }

  /// @brief Reads a model from the text format described in docs/tlm.md:
  /// @code
  ///   # comment (also after any line)
  ///   mesh NX NY NZ DL                 first statement; DL in metres
  ///   boundary FACE VALUE              FACE: xmin xmax ymin ymax zmin zmax all;
  ///                                    VALUE: electric | magnetic | matched | number in [-1,1]
  ///   plate AXIS PLANE U0 U1 V0 V1     electric wall (see add_plate)
  ///   iris AXIS PLANE U0 U1 V0 V1      wall over the plane except the window
  ///   box I0 I1 J0 J1 K0 K1            metal shell (add_box)
  ///   solid I0 I1 J0 J1 K0 K1          metal cells (add_solid)
  ///   layer K                          followed by NY rows (j = 0, 1, ...) of NX
  ///                                    characters: '#' metal cell, '.' free
  /// @endcode
  /// @param name used in messages (a file name).
  /// @throws emgpu::io_error "name:line: reason" for any malformed or invalid line.
  static mesh parse(std::istream& in, const std::string& name = "<stream>");
  /// @brief parse() on the file at path.
  /// @throws emgpu::io_error when the file cannot be opened or is malformed.
  static mesh read(const std::string& path);

 private:
  static void check_gamma(double g) {
    emgpu::detail::require(std::isfinite(g) && g >= -1.0 && g <= 1.0,
                    "emgpu::tlm::mesh: reflection coefficient must be finite and in [-1, 1]");
  }
  void check_box(const box& b) const {
    emgpu::detail::require(b.i0 >= 0 && b.i0 < b.i1 && b.i1 <= nx_ && b.j0 >= 0 && b.j0 < b.j1 &&
                        b.j1 <= ny_ && b.k0 >= 0 && b.k0 < b.k1 && b.k1 <= nz_,
                    "emgpu::tlm::mesh: box empty or outside the mesh");
  }
  // The mask is the only large allocation a mesh makes: a model far beyond
  // memory must fail here as cleanly as in the solver, which checks the same.
  void ensure_mask() {
    if (!mask_.empty()) return;
    const auto bytes = std::size_t(node_count());
    detail::check_host_memory(bytes, "emgpu::tlm::mesh: the wall mask of " + std::to_string(node_count()) + " nodes");
    try {
      mask_.assign(bytes, 0);
    } catch (const std::bad_alloc&) {  // below physical memory but over a process limit
      throw invalid_argument("emgpu::tlm::mesh: cannot allocate the wall mask (" +
                             std::to_string(double(bytes) / 1073741824.0) + " GiB)");
    }
  }

  index_t nx_, ny_, nz_;
  double dl_;
  std::array<double, 6> gamma_{};
  std::vector<std::uint8_t> mask_;
};

}  // namespace emgpu::tlm

#include "detail/mesh_io.hpp"
