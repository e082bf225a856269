/// @file
/// @brief The OpenMP backend: host memory, loops parallel across threads.
/// Without OpenMP at compile time the pragmas are ignored and every primitive
/// runs serially, so code written for it always builds.
#pragma once

#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "serial.hpp"

namespace emgpu::backend {

/// @brief Multi-threaded host execution.
/// Derives from serial so that any primitive without an OpenMP overload falls
/// back to the serial one by overload resolution.
struct openmp : serial {
  /// Number of threads for emgpu's parallel regions; 0 uses the OpenMP default.
  int num_threads = 0;

  /// Threads a parallel region of this backend will use.
  int threads() const {
#if defined(_OPENMP)
    return num_threads > 0 ? num_threads : omp_get_max_threads();
#else
    return 1;
#endif
  }
};

template <class F>
inline void for_each_index(const openmp& b, index_t n, F&& f) {
#if defined(_OPENMP)
#pragma omp parallel for schedule(static) num_threads(b.threads())
  for (index_t i = 0; i < n; ++i) f(i);
#else
  (void)b;
  for (index_t i = 0; i < n; ++i) f(i);
#endif
}

template <class F>
inline void for_each_index(const openmp& b, index_t n0, index_t n1, F&& f) {
#if defined(_OPENMP)
#pragma omp parallel for collapse(2) schedule(static) num_threads(b.threads())
  for (index_t j = 0; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) f(i, j);
#else
  (void)b;
  for (index_t j = 0; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) f(i, j);
#endif
}

/// @brief Parallel reduction. Each thread reduces a fixed contiguous chunk and
///        the partials are combined in thread order, so for a given thread
///        count the result is reproducible run to run.
template <class T, class Map, class Op>
inline T reduce(const openmp& b, index_t n, T init, Map&& map, Op&& op) {
#if defined(_OPENMP)
  const int nt = b.threads();
  if (nt <= 1 || n < 2 * nt) return reduce(static_cast<const serial&>(b), n, init, map, op);
  std::vector<T> partial(static_cast<std::size_t>(nt), init);
  std::vector<char> used(static_cast<std::size_t>(nt), 0);
#pragma omp parallel num_threads(nt)
  {
    const int t = omp_get_thread_num();
    const int team = omp_get_num_threads();
    const index_t lo = n * t / team, hi = n * (t + 1) / team;
    if (lo < hi) {
      // The serial kernel on this thread's chunk (its own interleaved lanes).
      struct shifted {
        const Map& m;
        index_t off;
        auto operator()(index_t i) const { return m(i + off); }
      };
      const T first = map(lo);
      partial[static_cast<std::size_t>(t)] =
          reduce(serial{}, hi - lo - 1, first, shifted{map, lo + 1}, op);
      used[static_cast<std::size_t>(t)] = 1;
    }
  }
  T acc = init;
  for (int t = 0; t < nt; ++t)
    if (used[static_cast<std::size_t>(t)]) acc = op(acc, partial[static_cast<std::size_t>(t)]);
  return acc;
#else
  return reduce(static_cast<const serial&>(b), n, init, map, op);
#endif
}

}  // namespace emgpu::backend

namespace emgpu {
template <>
struct backend_traits<backend::openmp> {
  using memory_space = host_space;
  template <class T>
  using vector = std::vector<T>;
  static constexpr const char* name = "openmp";
  static constexpr bool is_device = false;
};
}  // namespace emgpu
