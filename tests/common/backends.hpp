// The backends a test source is instantiated for: serial and OpenMP in the CPU
// build, CUDA in the nvcc build of the same source (EMGPU_TEST_CUDA).
#pragma once

#include <cmath>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <emgpu/core.hpp>
#include <emgpu/backend.hpp>

#include "catch.hpp"

namespace emgpu_test {

#if defined(EMGPU_TEST_CUDA)
using backends = std::tuple<emgpu::backend::cuda>;
#else
using backends = std::tuple<emgpu::backend::serial, emgpu::backend::openmp>;
#endif

/// Uploads a host vector to backend B.
template <class B, class T>
auto upload(const B& b, const std::vector<T>& h) {
  return to_backend(b, std::span<const T>(h.data(), h.size()));
}

/// what() of the emgpu::invalid_argument that f throws, "" when it throws none
/// (for checks on the message, not just the type).
template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const emgpu::invalid_argument& e) {
    return e.what();
  }
  return "";
}

/// Relative 2-norm difference ||a - b|| / ||b|| of two host ranges.
template <class VA, class VB>
double rel_diff(const VA& a, const VB& b) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num += double(emgpu::abs2(a[i] - b[i]));
    den += double(emgpu::abs2(b[i]));
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace emgpu_test
