/// @file
/// @brief Plain-text node lists: one "x y" pair per line (metres), `#` starts a
///        comment, and a line holding only `open` or `closed` sets the kind of
///        contour (default closed).
///
/// Example:
/// @code
/// # NACA-like section, metres
/// closed
/// 0.0  0.0
/// 0.5  0.06
/// 1.0  0.0
/// 0.5 -0.06
/// @endcode
#pragma once

#include <filesystem>
#include <fstream>
#include <istream>
#include <sstream>
#include <string>
#include <vector>

#include "../core/error.hpp"
#include "contour.hpp"

namespace emgpu::geometry {

/// @brief Nodes read from a file and whether they close on themselves.
struct node_list {
  std::vector<point2> nodes;
  bool closed = true;
};

/// @brief Parses a node list from a stream; `name` labels error messages.
/// @throws io_error "name:line: ..." for a malformed line, a non-finite
///         number, or an open/closed flag after the first node.
inline node_list read_node_list(std::istream& in, const std::string& name = "<stream>") {
  node_list out;
  std::string line;
  int lineno = 0;
  auto fail = [&](const std::string& msg) {
    throw io_error(name + ":" + std::to_string(lineno) + ": " + msg);
  };
  while (std::getline(in, line)) {
    ++lineno;
    if (const auto h = line.find('#'); h != std::string::npos) line.erase(h);
    std::istringstream ls(line);
    std::string first;
    if (!(ls >> first)) continue;  // blank or comment
    if (first == "open" || first == "closed") {
      if (!out.nodes.empty()) fail("'" + first + "' must come before the first node");
      std::string extra;
      if (ls >> extra) fail("unexpected text after '" + first + "'");
      out.closed = first == "closed";
      continue;
    }
    double x = 0, y = 0;
    std::istringstream ps(line);
    if (!(ps >> x >> y)) fail("expected two numbers \"x y\", got \"" + line + "\"");
    std::string extra;
    if (ps >> extra) fail("unexpected text after \"x y\": \"" + extra + "\"");
    if (!std::isfinite(x) || !std::isfinite(y)) fail("non-finite coordinate");
    out.nodes.push_back({x, y});
  }
  if (in.bad()) throw io_error(name + ": read error");
  return out;
}

/// @brief Reads a node list from a file.
/// @throws io_error when the file cannot be opened or a line is malformed.
inline node_list read_node_list(const std::filesystem::path& path) {
  std::ifstream f(path);
  if (!f) throw io_error(path.string() + ": cannot open node file");
  return read_node_list(f, path.string());
}

/// @brief Contour through the nodes of a file.
/// @throws io_error (reading) or invalid_argument (geometry checks, as polygon()).
inline contour read_contour(const std::filesystem::path& path,
                            interpolation kind = interpolation::linear) {
  const auto nl = read_node_list(path);
  return interpolate(nl.nodes, nl.closed, kind);
}

}  // namespace emgpu::geometry
