// Minimal downstream program: includes the umbrella header and runs a
// primitive on the serial and OpenMP backends.
#include <cstdio>
#include <vector>

#include <emgpu/emgpu.hpp>

int main() {
  std::vector<emgpu::complexd> v(1000, emgpu::complexd(3.0, 4.0));
  const double a = emgpu::norm2(emgpu::backend::serial{}, v.data(), emgpu::index_t(v.size()));
  const double b = emgpu::norm2(emgpu::backend::openmp{}, v.data(), emgpu::index_t(v.size()));
  const double want = 5.0 * std::sqrt(1000.0);
  const bool ok = std::fabs(a - want) < 1e-12 * want && std::fabs(b - want) < 1e-12 * want;
  std::printf("emgpu %d.%d.%d consumer: norm2 = %.15g (%s)\n", EMGPU_VERSION_MAJOR,
              EMGPU_VERSION_MINOR, EMGPU_VERSION_PATCH, a, ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
