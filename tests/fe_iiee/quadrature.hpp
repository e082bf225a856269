// Test-only quadrature rules on closed surfaces and observer sets, for the
// Love-equivalence validation of the FE-IIEE radiation operator.
#pragma once

#include <array>
#include <cmath>
#include <complex>
#include <vector>

#include <emgpu/fe_iiee.hpp>

namespace fe_iiee_test {

/// Gauss-Legendre nodes and weights on [-1, 1] (Newton on the three-term
/// recurrence, converged to rounding).
inline void gauss_legendre(int n, std::vector<double>& x, std::vector<double>& w) {
  x.assign(std::size_t(n), 0.0);
  w.assign(std::size_t(n), 0.0);
  const double pi = std::acos(-1.0);
  for (int i = 0; i < n; ++i) {
    double z = std::cos(pi * (i + 0.75) / (n + 0.5)), dp = 0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1, p1 = z;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      if (n == 1) p0 = 1, p1 = z;
      dp = n * (z * p1 - p0) / (z * z - 1);
      const double dz = p1 / dp;
      z -= dz;
      if (std::abs(dz) < 1e-16) break;
    }
    x[std::size_t(i)] = z;
    w[std::size_t(i)] = 2 / ((1 - z * z) * dp * dp);
  }
}

/// A closed surface as a quadrature rule (double; cast for float tests).
struct surface {
  std::vector<double> points, weights, normals;
  std::size_t size() const { return weights.size(); }
  void add(double x, double y, double z, double w, double nx, double ny, double nz) {
    points.insert(points.end(), {x, y, z});
    weights.push_back(w);
    normals.insert(normals.end(), {nx, ny, nz});
  }
};

/// Sphere of radius a about c: Gauss-Legendre in cos(theta) x trapezoid in phi.
inline surface sphere(double a, std::array<double, 3> c, int n_theta, int n_phi) {
  std::vector<double> x, w;
  gauss_legendre(n_theta, x, w);
  const double pi = std::acos(-1.0);
  surface s;
  for (int i = 0; i < n_theta; ++i) {
    const double ct = x[std::size_t(i)], st = std::sqrt(1 - ct * ct);
    for (int j = 0; j < n_phi; ++j) {
      const double ph = 2 * pi * (j + 0.5) / n_phi;
      const double nx = st * std::cos(ph), ny = st * std::sin(ph), nz = ct;
      s.add(c[0] + a * nx, c[1] + a * ny, c[2] + a * nz, a * a * w[std::size_t(i)] * 2 * pi / n_phi,
            nx, ny, nz);
    }
  }
  return s;
}

/// Cube of side 2h about c: a Gauss-Legendre n x n product rule on each face.
inline surface cube(double h, std::array<double, 3> c, int n) {
  std::vector<double> x, w;
  gauss_legendre(n, x, w);
  surface s;
  for (int axis = 0; axis < 3; ++axis)
    for (int sign = -1; sign <= 1; sign += 2)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          double p[3], nn[3] = {0, 0, 0};
          const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
          p[axis] = c[axis] + sign * h;
          p[a1] = c[a1] + h * x[std::size_t(i)];
          p[a2] = c[a2] + h * x[std::size_t(j)];
          nn[axis] = sign;
          s.add(p[0], p[1], p[2], h * h * w[std::size_t(i)] * w[std::size_t(j)], nn[0], nn[1], nn[2]);
        }
  return s;
}

/// m x m cell-centred points on each face of the cube of half-side h about c.
inline std::vector<double> box_points(double h, std::array<double, 3> c, int m) {
  std::vector<double> out;
  for (int axis = 0; axis < 3; ++axis)
    for (int sign = -1; sign <= 1; sign += 2)
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < m; ++j) {
          double p[3];
          const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
          p[axis] = c[axis] + sign * h;
          p[a1] = c[a1] + h * (2.0 * (i + 0.5) / m - 1);
          p[a2] = c[a2] + h * (2.0 * (j + 0.5) / m - 1);
          out.insert(out.end(), {p[0], p[1], p[2]});
        }
  return out;
}

/// Outward unit normals of box_points (the face normal).
inline std::vector<double> box_normals(int m) {
  std::vector<double> out;
  for (int axis = 0; axis < 3; ++axis)
    for (int sign = -1; sign <= 1; sign += 2)
      for (int i = 0; i < m * m; ++i) {
        double nn[3] = {0, 0, 0};
        nn[axis] = sign;
        out.insert(out.end(), {nn[0], nn[1], nn[2]});
      }
  return out;
}

template <class Real>
std::vector<Real> cast(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

/// Equivalent currents J = n x H, M = -n x E of the dipole on the surface
/// (c + 3 s), and the fields E, H themselves.
template <class Real>
struct currents {
  std::vector<emgpu::complex<Real>> J, M, E, H;
};
template <class Real>
currents<Real> dipole_currents(const emgpu::fe_iiee::hertzian_dipole<double>& d, const surface& s) {
  currents<Real> c;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto f = d.fields({s.points[3 * i], s.points[3 * i + 1], s.points[3 * i + 2]});
    const double* n = &s.normals[3 * i];
    const auto& E = f[0];
    const auto& H = f[1];
    const std::complex<double> J[3] = {n[1] * H[2] - n[2] * H[1], n[2] * H[0] - n[0] * H[2],
                                       n[0] * H[1] - n[1] * H[0]};
    const std::complex<double> M[3] = {-(n[1] * E[2] - n[2] * E[1]), -(n[2] * E[0] - n[0] * E[2]),
                                       -(n[0] * E[1] - n[1] * E[0])};
    for (int k = 0; k < 3; ++k) {
      c.J.emplace_back(Real(J[k].real()), Real(J[k].imag()));
      c.M.emplace_back(Real(M[k].real()), Real(M[k].imag()));
      c.E.emplace_back(Real(E[k].real()), Real(E[k].imag()));
      c.H.emplace_back(Real(H[k].real()), Real(H[k].imag()));
    }
  }
  return c;
}

/// Relative errors of E and curl E (by_rhs scat_vec, RHS column r) against the
/// dipole's exact fields at the observers; with `extinction`, the norms are
/// those of the computed fields over the dipole's fields (the exact value is 0).
template <class Real>
std::array<double, 2> field_errors(const std::vector<emgpu::complex<Real>>& scat,
                                   const std::vector<double>& obs,
                                   const emgpu::fe_iiee::hertzian_dipole<double>& d, bool extinction,
                                   std::size_t r = 0) {
  const std::size_t n = obs.size() / 3;
  double num[2] = {0, 0}, den[2] = {0, 0};
  for (std::size_t o = 0; o < n; ++o) {
    const auto f = d.fields({obs[3 * o], obs[3 * o + 1], obs[3 * o + 2]});
    for (int c = 0; c < 3; ++c)
      for (int g = 0; g < 2; ++g) {
        const std::complex<double> ex = g == 0 ? f[0][c] : f[2][c];
        const auto v = scat[6 * (o + n * r) + 3 * g + c];
        const std::complex<double> got(double(v.real()), double(v.imag()));
        num[g] += std::norm(extinction ? got : got - ex);
        den[g] += std::norm(ex);
      }
  }
  return {std::sqrt(num[0] / den[0]), std::sqrt(num[1] / den[1])};
}

}  // namespace fe_iiee_test
