// Text model format of emgpu::tlm::mesh (definitions of mesh::parse / read).
#pragma once

#include <fstream>
#include <optional>
#include <sstream>

#include "../mesh.hpp"

namespace emgpu::tlm {

namespace detail {

struct mesh_parser {
  std::istream& in;
  const std::string& name;
  long line_no = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw io_error(name + ":" + std::to_string(line_no) + ": " + why);
  }
  // Next statement with comments stripped; blank lines skipped.
  bool next_line(std::string& s) {
    while (std::getline(in, s)) {
      ++line_no;
      if (auto h = s.find('#'); h != std::string::npos) s.erase(h);
      if (s.find_first_not_of(" \t\r") == std::string::npos) continue;
      return true;
    }
    return false;
  }
  // Next raw line (layer rows, where '#' is a metal cell).
  bool raw_line(std::string& s) {
    ++line_no;  // on failure: the line where a row was expected
    return bool(std::getline(in, s));
  }
  template <class T>
  T get(std::istringstream& ss, const char* what) const {
    T v{};
    if (!(ss >> v)) fail(std::string("expected ") + what);
    return v;
  }
  static std::optional<axis> to_axis(const std::string& s) {
    if (s == "x") return axis::x;
    if (s == "y") return axis::y;
    if (s == "z") return axis::z;
    return std::nullopt;
  }
  double to_gamma(const std::string& s) const {
    if (s == "electric") return electric_wall;
    if (s == "magnetic") return magnetic_wall;
    if (s == "matched") return matched;
    std::size_t pos = 0;
    double g = 0;
    try {
      g = std::stod(s, &pos);
    } catch (const std::exception&) {
      fail("bad boundary value '" + s + "' (electric, magnetic, matched or a number)");
    }
    if (pos != s.size()) fail("bad boundary value '" + s + "'");
    return g;
  }
  void expect_end(std::istringstream& ss) const {
    std::string extra;
    if (ss >> extra) fail("unexpected '" + extra + "'");
  }

  mesh run() {
    std::string s;
    std::optional<mesh> m;
    while (next_line(s)) {
      std::istringstream ss(s);
      std::string kw;
      ss >> kw;
      try {
        if (kw == "mesh") {
          if (m) fail("second 'mesh' statement");
          const auto nx = get<long long>(ss, "NX"), ny = get<long long>(ss, "NY"),
                     nz = get<long long>(ss, "NZ");
          const auto dl = get<double>(ss, "DL");
          expect_end(ss);
          m.emplace(index_t(nx), index_t(ny), index_t(nz), dl);
          continue;
        }
        if (!m) fail("the first statement must be 'mesh NX NY NZ DL'");
        if (kw == "boundary") {
          const auto f = get<std::string>(ss, "FACE");
          const double g = to_gamma(get<std::string>(ss, "VALUE"));
          expect_end(ss);
          static const char* faces[] = {"xmin", "xmax", "ymin", "ymax", "zmin", "zmax"};
          if (f == "all") {
            m->set_boundaries(g);
          } else {
            int idx = -1;
            for (int q = 0; q < 6; ++q)
              if (f == faces[q]) idx = q;
            if (idx < 0) fail("unknown face '" + f + "'");
            m->set_boundary(face(idx), g);
          }
        } else if (kw == "plate" || kw == "iris") {
          const auto a = to_axis(get<std::string>(ss, "AXIS (x, y or z)"));
          if (!a) fail("AXIS must be x, y or z");
          index_t v[5];
          for (auto& x : v) x = index_t(get<long long>(ss, "integer"));
          expect_end(ss);
          if (kw == "plate")
            m->add_plate(*a, v[0], v[1], v[2], v[3], v[4]);
          else
            m->add_iris(*a, v[0], v[1], v[2], v[3], v[4]);
        } else if (kw == "box" || kw == "solid") {
          index_t v[6];
          for (auto& x : v) x = index_t(get<long long>(ss, "integer"));
          expect_end(ss);
          const box b{v[0], v[1], v[2], v[3], v[4], v[5]};
          if (kw == "box")
            m->add_box(b);
          else
            m->add_solid(b);
        } else if (kw == "layer") {
          const auto k = index_t(get<long long>(ss, "K"));
          expect_end(ss);
          if (k < 0 || k >= m->nz()) fail("layer index outside the mesh");
          for (index_t j = 0; j < m->ny(); ++j) {
            std::string row;
            if (!raw_line(row)) fail("layer ends early: expected " + std::to_string(m->ny()) + " rows");
            while (!row.empty() && (row.back() == '\r' || row.back() == ' ' || row.back() == '\t'))
              row.pop_back();
            const auto first = row.find_first_not_of(" \t");
            row.erase(0, first);
            if (index_t(row.size()) != m->nx())
              fail("layer row has " + std::to_string(row.size()) + " cells, expected " +
                   std::to_string(m->nx()));
            for (index_t i = 0; i < m->nx(); ++i) {
              const char c = row[std::size_t(i)];
              if (c == '#')
                m->add_solid(box{i, i + 1, j, j + 1, k, k + 1});
              else if (c != '.')
                fail(std::string("layer cell '") + c + "' (use '#' for metal, '.' for free)");
            }
          }
        } else {
          fail("unknown statement '" + kw + "'");
        }
      } catch (const emgpu::invalid_argument& e) {
        fail(e.what());
      }
    }
    if (!m) fail("no 'mesh NX NY NZ DL' statement");
    return std::move(*m);
  }
};

}  // namespace detail

inline mesh mesh::parse(std::istream& in, const std::string& name) {
  return detail::mesh_parser{in, name}.run();
}

inline mesh mesh::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw io_error("emgpu::tlm::mesh::read: cannot open '" + path + "'");
  return parse(f, path);
}

}  // namespace emgpu::tlm
