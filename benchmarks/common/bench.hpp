// emgpu benchmark harness: timing (steady_clock on the host, CUDA events on the
// GPU), warm-up, median of repeats with spread, machine/GPU identification and
// JSON output, so every figure is a ratio measured in one run.
//
//   emgpu_bench::report r("lu", argc, argv);           // --out FILE.json, --quick
//   auto t = emgpu_bench::time_host([&] { work(); });   // warm-up 1, repeats 5
//   auto u = emgpu_bench::time_host([&] { factor(a); }, 1, 5, [&] { a = a0; });  // untimed reset
//   r.add({.name = "emgpu", .backend = "serial", .params = {{"n", 1024}}, .t = t,
//          .metrics = {{"TFLOP/s", flops / t.median_s / 1e12}}});
//   r.write();
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif
#if defined(__CUDACC__)
#include <cuda_runtime.h>
#include <emgpu/backend/cuda_check.hpp>
#endif

namespace emgpu_bench {

/// Timing summary of one measured region (seconds).
struct stats {
  double median_s = 0, min_s = 0, max_s = 0;
  double spread = 0;  // (max - min) / median: how much to trust differences
  int repeats = 0;
};

inline stats summarize(std::vector<double> t) {
  stats s;
  if (t.empty()) return s;
  std::sort(t.begin(), t.end());
  const std::size_t n = t.size();
  s.median_s = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  s.min_s = t.front();
  s.max_s = t.back();
  s.spread = s.median_s > 0 ? (s.max_s - s.min_s) / s.median_s : 0;
  s.repeats = int(n);
  return s;
}

/// The default reset of time_host / time_cuda: nothing to restore.
struct no_reset {
  void operator()() const {}
};

/// Times f() on the host: `warmup` untimed calls, then `repeats` timed ones.
/// reset() runs, untimed, before every call (warm-up included): for work that
/// consumes its input in place (a factorisation overwriting its matrix).
template <class F, class Reset = no_reset>
stats time_host(F&& f, int warmup = 1, int repeats = 5, Reset reset = Reset{}) {
  for (int i = 0; i < warmup; ++i) {
    reset();
    f();
  }
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    reset();
    const auto a = std::chrono::steady_clock::now();
    f();
    const auto b = std::chrono::steady_clock::now();
    t.push_back(std::chrono::duration<double>(b - a).count());
  }
  return summarize(std::move(t));
}

#if defined(__CUDACC__)
/// Times f() (which enqueues work on `stream`) with CUDA events after warm-up.
/// reset() (enqueued on `stream` too, or synchronous) runs before every call,
/// ahead of the start event, so it is not timed. The warm-up is synchronised
/// on its own: a fault in f() surfaces there, before any timing.
template <class F, class Reset = no_reset>
stats time_cuda(cudaStream_t stream, F&& f, int warmup = 2, int repeats = 10, Reset reset = Reset{}) {
  for (int i = 0; i < warmup; ++i) {
    reset();
    f();
  }
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(stream));
  cudaEvent_t a, b;
  EMGPU_CUDA_CHECK(cudaEventCreate(&a));
  EMGPU_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    reset();
    EMGPU_CUDA_CHECK(cudaEventRecord(a, stream));
    f();
    EMGPU_CUDA_CHECK(cudaEventRecord(b, stream));
    EMGPU_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    EMGPU_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(double(ms) * 1e-3);
  }
  (void)cudaEventDestroy(a);
  (void)cudaEventDestroy(b);
  return summarize(std::move(t));
}

/// Device-to-device copy bandwidth (bytes read + written per second), the
/// memory ceiling that bandwidth-bound kernels are compared with.
inline double copy_bandwidth(std::size_t bytes = std::size_t(1) << 30, int device = 0) {
  EMGPU_CUDA_CHECK(cudaSetDevice(device));
  void *src = nullptr, *dst = nullptr;
  EMGPU_CUDA_CHECK(cudaMalloc(&src, bytes));
  EMGPU_CUDA_CHECK(cudaMalloc(&dst, bytes));
  EMGPU_CUDA_CHECK(cudaMemset(src, 1, bytes));
  const stats s = time_cuda(nullptr, [&] {
    EMGPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, nullptr));
  }, 3, 20);
  (void)cudaFree(src);
  (void)cudaFree(dst);
  return 2.0 * double(bytes) / s.median_s;
}
#endif

/// One row of results.
struct record {
  std::string name;     // what was run ("emgpu", "cusolver", "eigen", ...)
  std::string backend;  // serial / openmp / cuda / vendor
  std::vector<std::pair<std::string, double>> params;
  stats t;
  std::vector<std::pair<std::string, double>> metrics;  // e.g. {"TFLOP/s", 12.3}, {"ratio", 1.1}
  std::string note;
};

namespace detail {
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') { o += "\\n"; continue; }
    o += c;
  }
  return o;
}
inline std::string num(double x) {
  if (!std::isfinite(x)) return "null";
  std::ostringstream os;
  os.precision(9);
  os << x;
  return os.str();
}
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      return p == std::string::npos ? line : line.substr(p + 2);
    }
  return "unknown";
}
}  // namespace detail

/// Collects records, prints a table and writes JSON (with machine identification).
class report {
 public:
  report(std::string benchmark, int argc, char** argv) : bench_(std::move(benchmark)) {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--out" && i + 1 < argc) out_ = argv[++i];
      else if (a == "--quick") quick_ = true;
      else args_.push_back(a);
    }
    if (out_.empty()) out_ = "bench_" + bench_ + ".json";
  }
  bool quick() const { return quick_; }
  /// Arguments other than --out/--quick, for benchmark-specific options.
  const std::vector<std::string>& args() const { return args_; }
  /// Value of option `--key V` among args(), or `def`.
  double option(const std::string& key, double def) const {
    for (std::size_t i = 0; i + 1 < args_.size(); ++i)
      if (args_[i] == key) return std::atof(args_[i + 1].c_str());
    return def;
  }
  std::string option(const std::string& key, const std::string& def) const {
    for (std::size_t i = 0; i + 1 < args_.size(); ++i)
      if (args_[i] == key) return args_[i + 1];
    return def;
  }

  void add(record r) {
    print_row(r);
    rows_.push_back(std::move(r));
  }

  void write() const {
    std::ofstream f(out_);
    f << "{\n  \"benchmark\": \"" << detail::json_escape(bench_) << "\",\n";
    f << "  \"machine\": " << machine_json() << ",\n  \"results\": [\n";
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      const record& r = rows_[i];
      f << "    {\"name\": \"" << detail::json_escape(r.name) << "\", \"backend\": \""
        << detail::json_escape(r.backend) << "\", \"params\": {";
      for (std::size_t k = 0; k < r.params.size(); ++k)
        f << (k ? ", " : "") << "\"" << detail::json_escape(r.params[k].first)
          << "\": " << detail::num(r.params[k].second);
      f << "}, \"median_s\": " << detail::num(r.t.median_s) << ", \"min_s\": "
        << detail::num(r.t.min_s) << ", \"max_s\": " << detail::num(r.t.max_s)
        << ", \"spread\": " << detail::num(r.t.spread) << ", \"repeats\": " << r.t.repeats
        << ", \"metrics\": {";
      for (std::size_t k = 0; k < r.metrics.size(); ++k)
        f << (k ? ", " : "") << "\"" << detail::json_escape(r.metrics[k].first)
          << "\": " << detail::num(r.metrics[k].second);
      f << "}, \"note\": \"" << detail::json_escape(r.note) << "\"}"
        << (i + 1 < rows_.size() ? "," : "") << "\n";
    }
    f << "  ]\n}\n";
    std::printf("wrote %s (%zu results)\n", out_.c_str(), rows_.size());
  }

  static std::string machine_json() {
    std::ostringstream o;
    o << "{\"cpu\": \"" << detail::json_escape(detail::cpu_model()) << "\", \"hardware_threads\": "
      << std::thread::hardware_concurrency();
#if defined(_OPENMP)
    o << ", \"omp_max_threads\": " << omp_get_max_threads();
#endif
#if defined(__CUDACC__)
    int dev = 0;
    cudaDeviceProp p{};
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess) {
      int ndev = 0;
      (void)cudaGetDeviceCount(&ndev);
      o << ", \"gpu\": \"" << detail::json_escape(p.name) << "\", \"gpu_count\": " << ndev
        << ", \"sm\": \"" << p.major << p.minor << "\", \"multiprocessors\": "
        << p.multiProcessorCount << ", \"gpu_memory_gib\": "
        << detail::num(double(p.totalGlobalMem) / (1 << 30));
    } else {
      (void)cudaGetLastError();
      o << ", \"gpu\": null";
    }
#endif
    o << "}";
    return o.str();
  }

 private:
  static void print_row(const record& r) {
    std::printf("%-18s %-8s", r.name.c_str(), r.backend.c_str());
    for (auto& [k, v] : r.params) std::printf(" %s=%g", k.c_str(), v);
    std::printf("  median %.4g s (spread %.0f%%, %d reps)", r.t.median_s, 100 * r.t.spread,
                r.t.repeats);
    for (auto& [k, v] : r.metrics) std::printf("  %s=%.4g", k.c_str(), v);
    if (!r.note.empty()) std::printf("  [%s]", r.note.c_str());
    std::printf("\n");
    std::fflush(stdout);
  }
  std::string bench_, out_;
  bool quick_ = false;
  std::vector<std::string> args_;
  std::vector<record> rows_;
};

}  // namespace emgpu_bench
