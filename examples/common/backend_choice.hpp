// Shared by the examples: run a generic callable on the backend named on the
// command line (serial | openmp | cuda), with one message for an unknown name,
// for "cuda" in a host-only build, and for emgpu errors.
#pragma once

#include <cstdio>
#include <string>

#include <emgpu/backend.hpp>
#include <emgpu/core.hpp>

namespace emgpu_example {

/// The backend an example uses when none is named: the GPU in its _cuda
/// build, else OpenMP (which runs serially in a build without OpenMP).
inline std::string default_backend() {
#if defined(EMGPU_TEST_CUDA)
  return "cuda";
#else
  return "openmp";
#endif
}

/// Returns f(backend) for the named backend; 2 for a bad name, 1 when an
/// emgpu::error escapes (printed).
template <class F>
int with_backend(const std::string& name, const char* program, F&& f) {
  try {
    if (name == "serial") return f(emgpu::backend::serial{});
    if (name == "openmp") return f(emgpu::backend::openmp{});
#if defined(EMGPU_TEST_CUDA)
    if (name == "cuda") return f(emgpu::backend::cuda{});
#else
    if (name == "cuda") {
      std::fprintf(stderr, "%s: the cuda backend is in the %s_cuda build only\n", program, program);
      return 2;
    }
#endif
    std::fprintf(stderr, "%s: unknown backend '%s' (serial, openmp or cuda)\n", program, name.c_str());
    return 2;
  } catch (const emgpu::error& e) {
    std::fprintf(stderr, "%s: emgpu error: %s\n", program, e.what());
    return 1;
  }
}

}  // namespace emgpu_example
