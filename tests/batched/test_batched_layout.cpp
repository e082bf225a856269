// The benchmark's layout on every backend: ld = n, stride = n*n and a buffer
// of exactly count*n*n elements (no padding), complex<double>, n = 8..128,
// LU, QR and SVD with U and V. The other batched tests pad every matrix, so
// an access past a matrix's last column lands in padding there and neither
// the results nor compute-sanitizer notice; here it leaves the allocation
// (memcheck reports it). Results are compared with the serial backend:
// bitwise on the host, within 100 n eps relative on CUDA (same algorithm,
// different rounding of the split reductions).
#include "batched_util.hpp"

using namespace emgpu;
using namespace bt;
using emgpu_test::backends;

namespace {

using T = complex<double>;

std::vector<T> dense_batch(index_t n, index_t count, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> h(static_cast<std::size_t>(n * n * count));
  for (auto& x : h) x = T(u(g), u(g));
  return h;
}

template <class V>
void agree(const V& got, const V& ref, index_t n, const char* what) {
  INFO(what << ", n = " << n);
#if defined(EMGPU_TEST_CUDA)
  CHECK(emgpu_test::rel_diff(got, ref) <= 100.0 * double(n) * 2.220446049250313e-16);
#else
  CHECK(got == ref);
#endif
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("batched: benchmark layout (unpadded, exact-size buffers)",
                        "[batched][sanitize]", backends) {
  const TestType b{};
  const backend::serial s;
  for (index_t n : {index_t(8), index_t(16), index_t(32), index_t(64), index_t(128)}) {
    const index_t count = n <= 32 ? cpu_or_gpu(8, 64) : 2;
    const std::vector<T> h = dense_batch(n, count, 4242 + std::uint64_t(n));
    const strided_batch_view<T> hv{nullptr, n, n, n, n * n, count};
    auto view = [&](T* p) {
      strided_batch_view<T> v = hv;
      v.data = p;
      return v;
    };

    // LU
    {
      auto d = up(b, h);
      auto piv = make_vector<index_t>(b, n * count);
      auto info = make_vector<int>(b, count);
      batched::lu_factor(b, view(d.data()), piv.data(), info.data());
      std::vector<T> r = h;
      std::vector<index_t> rp(static_cast<std::size_t>(n * count));
      std::vector<int> ri(static_cast<std::size_t>(count));
      batched::lu_factor(s, view(r.data()), rp.data(), ri.data());
      CHECK(down(b, info) == ri);
      CHECK(down(b, piv) == rp);
      agree(down(b, d), r, n, "lu_factor");
    }
    // QR
    {
      auto d = up(b, h);
      batched::qr_factor(b, view(d.data()));
      std::vector<T> r = h;
      batched::qr_factor(s, view(r.data()));
      agree(down(b, d), r, n, "qr_factor");
    }
    // SVD with U and V, every output unpadded.
    {
      auto d = up(b, h);
      auto sig = make_vector<double>(b, n * count);
      auto u = make_vector<T>(b, n * n * count);
      auto v = make_vector<T>(b, n * n * count);
      auto info = make_vector<int>(b, count);
      batched::svd(b, view(d.data()), sig.data(), view(u.data()), view(v.data()), info.data());
      std::vector<T> r = h;
      std::vector<double> rs(static_cast<std::size_t>(n * count));
      std::vector<int> ri(static_cast<std::size_t>(count));
      batched::svd(s, view(r.data()), rs.data(), strided_batch_view<T>{}, strided_batch_view<T>{}, ri.data());
      CHECK(down(b, info) == std::vector<int>(static_cast<std::size_t>(count), 0));
      CHECK(ri == std::vector<int>(static_cast<std::size_t>(count), 0));
      agree(down(b, sig), rs, n, "svd sigma");
    }
  }
}
