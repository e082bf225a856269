// Batches in host memory streamed through one or several GPUs
// (emgpu/batched/multi_gpu.hpp). Every chunk runs the single-GPU routine on
// device copies of its matrices, so the results must equal one backend::cuda
// call on the whole batch bit for bit (same kernels, same data): any chunk
// misplaced, copied short or copied twice shows as a difference. Partitions
// on one device (partitions_per_device > 1) and small chunks exercise the
// partitioning, the remainders and the two-stream pipeline on one GPU; the
// "every visible GPU" case takes two partitions on a 2-GPU machine. The CPU
// build checks the chunk planner, which is plain C++.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <stdexcept>

#include "batched_util.hpp"

using namespace emgpu;
using emgpu::index_t;

TEST_CASE("batched multi-GPU: chunk planner", "[batched][multi_gpu]") {
  using batched::multi_gpu_chunk;
  CHECK(multi_gpu_chunk(0, 1024, 2) == 0);
  CHECK(multi_gpu_chunk(1000, 1024, 2, 37) == 37);
  CHECK(multi_gpu_chunk(10, 1024, 2, 37) == 10);
  // Small batch: the 16 MiB floor holds it all, one chunk a partition.
  CHECK(multi_gpu_chunk(1000, 16384, 2) == 500);
  // 100 000 x 16 KB (1.6 GB), 2 partitions: a sixteenth of a share, 51 MB.
  CHECK(multi_gpu_chunk(100000, 16384, 2) == 3125);
  // 10^6 x 256 KB: 256 MiB chunks (1024 matrices), evened out: 488 a
  // partition of ceil(500 000 / 488).
  CHECK(multi_gpu_chunk(1000000, 262144, 2) == 1025);
  // A matrix larger than the cap still makes a chunk of one.
  CHECK(multi_gpu_chunk(5, std::size_t(1) << 30, 1) == 1);
  CHECK(multi_gpu_chunk(5, 0, 1) == 5);
  // At least min_chunk (rounded to 3 even chunks a partition), at most max_chunk.
  CHECK(multi_gpu_chunk(100000, 49152, 2, 0, 16384) == 16667);
  CHECK(multi_gpu_chunk(100000, 16384, 1, 0, 0, 1000) == 1000);
  CHECK(multi_gpu_chunk(100000, 16384, 1, 0, 0, 999) == 991);  // 101 even chunks
  // Even chunks: the last one short by less than the number of chunks (each
  // was rounded up by less than one matrix).
  for (index_t count : {index_t(1), index_t(7), index_t(99999), index_t(123457)})
    for (index_t parts : {index_t(1), index_t(2), index_t(3), index_t(8)}) {
      const index_t c = multi_gpu_chunk(count, 4096, parts, 0, 5000);
      const index_t chunks = (count + c - 1) / c;
      INFO("count " << count << ", partitions " << parts << ", chunk " << c);
      CHECK(c >= 1);
      CHECK(c <= count);
      const index_t last = count - (chunks - 1) * c;
      CHECK(last >= 1);
      CHECK(last > c - chunks);
    }
  REQUIRE_THROWS_AS(multi_gpu_chunk(-1, 8, 1), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(multi_gpu_chunk(1, 8, 0), emgpu::invalid_argument);
}

#if defined(EMGPU_TEST_CUDA)

namespace {

using T = complex<double>;
using R = double;
const backend::cuda gpu{};

std::vector<T> random_batch(std::size_t elems, std::uint64_t seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> h(elems);
  for (auto& x : h) x = T(u(g), u(g));
  return h;
}

template <class U>
std::vector<U> down(const device_vector<U>& d) {
  return d.to_host();
}
template <class U>
device_vector<U> up(const std::vector<U>& h) {
  return device_vector<U>(std::span<const U>(h.data(), h.size()));
}
template <class U>
strided_batch_view<U> with(strided_batch_view<U> v, U* p) {
  v.data = p;
  return v;
}

bool same_bits(const void* a, const void* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }
template <class U>
bool same(const std::vector<U>& a, const std::vector<U>& b) {
  return a.size() == b.size() && same_bits(a.data(), b.data(), a.size() * sizeof(U));
}

/// Host memory from cudaMallocHost (pinned), freed on scope exit.
template <class U>
struct pinned {
  U* p = nullptr;
  std::size_t n = 0;
  explicit pinned(const std::vector<U>& h) : n(h.size()) {
    EMGPU_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), n * sizeof(U)));
    std::copy(h.begin(), h.end(), p);
  }
  ~pinned() { (void)cudaFreeHost(p); }
  pinned(const pinned&) = delete;
  pinned& operator=(const pinned&) = delete;
  std::vector<U> vec() const { return std::vector<U>(p, p + n); }
};

/// LU, solve and inverse of a padded batch (ld = n + 3, 5 spare elements
/// between matrices, filled with a sentinel that must survive) through g,
/// against one backend::cuda call; ipiv, info, the factors, the solution
/// and the inverse bit for bit.
void lu_case(const batched::multi_gpu& g, index_t n, index_t count, bool use_pinned) {
  INFO("n = " << n << ", count = " << count << (use_pinned ? ", pinned" : ", pageable"));
  const index_t ld = n + 3, stride = ld * n + 5, nrhs = 3;
  const std::size_t elems = std::size_t(stride * count);
  std::vector<T> h = random_batch(elems, 99 + std::uint64_t(n));
  const T sentinel(12345.0, -6789.0);
  for (index_t k = 0; k < count; ++k) {
    for (index_t j = 0; j < n; ++j)
      for (index_t i = n; i < ld; ++i) h[std::size_t(k * stride + j * ld + i)] = sentinel;
    for (index_t i = ld * n; i < stride; ++i) h[std::size_t(k * stride + i)] = sentinel;
  }
  // Exactly singular matrices (a zero first column: info 1), in different
  // chunks.
  for (index_t k : {index_t(1), count / 2, count - 1})
    for (index_t i = 0; i < n; ++i) h[std::size_t(k * stride + i)] = T(0);
  const std::vector<T> rhs0 = random_batch(std::size_t(n * nrhs * count), 7);
  const strided_batch_view<T> av{nullptr, n, n, ld, stride, count};
  const strided_batch_view<T> bv{nullptr, n, nrhs, n, n * nrhs, count};
  const strided_batch_view<T> iv{nullptr, n, n, ld, stride, count};

  // Reference: one single-GPU call.
  auto da = up(h);
  device_vector<index_t> dp(n * count);
  device_vector<int> di(count);
  batched::lu_factor(gpu, with(av, da.data()), dp.data(), di.data());
  auto db = up(rhs0);
  batched::lu_solve(gpu, with(av, da.data()), dp.data(), with(bv, db.data()));
  auto dinv = up(h);  // the sentinels in the gaps
  batched::inverse(gpu, with(av, da.data()), dp.data(), with(iv, dinv.data()));
  const auto ra = down(da), rb = down(db), rinv = down(dinv);
  const auto rp = down(dp);
  const auto ri = down(di);
  CHECK(ri[1] == 1);
  CHECK(ri[std::size_t(count / 2)] == 1);
  CHECK(ri[std::size_t(count - 1)] == 1);
  CHECK(ri[0] == 0);

  std::vector<T> a = h, x = rhs0, inv = h;
  std::vector<index_t> piv(std::size_t(n * count), -7);
  std::vector<int> info(std::size_t(count), -7);
  if (use_pinned) {
    pinned<T> pa(a), px(x), pinv(inv);
    pinned<index_t> pp(piv);
    pinned<int> pi(info);
    batched::lu_factor(g, with(av, pa.p), pp.p, pi.p);
    batched::lu_solve(g, with(av, pa.p), pp.p, with(bv, px.p));
    batched::inverse(g, with(av, pa.p), pp.p, with(iv, pinv.p));
    a = pa.vec(), x = px.vec(), inv = pinv.vec(), piv = pp.vec(), info = pi.vec();
  } else {
    batched::lu_factor(g, with(av, a.data()), piv.data(), info.data());
    batched::lu_solve(g, with(av, a.data()), piv.data(), with(bv, x.data()));
    batched::inverse(g, with(av, a.data()), piv.data(), with(iv, inv.data()));
  }
  CHECK(same(a, ra));
  CHECK(same(piv, rp));
  CHECK(same(info, ri));
  CHECK(same(x, rb));
  CHECK(same(inv, rinv));
  std::size_t kept = 0;
  for (index_t k = 0; k < count; ++k)
    for (index_t i = ld * n; i < stride; ++i)
      kept += a[std::size_t(k * stride + i)] == sentinel && inv[std::size_t(k * stride + i)] == sentinel;
  CHECK(kept == std::size_t(count * (stride - ld * n)));
  // Not equal garbage: the solution solves the first matrix.
  long double res = 0, nrm = 0;
  for (index_t c = 0; c < nrhs; ++c)
    for (index_t i = 0; i < n; ++i) {
      std::complex<long double> s = 0;
      for (index_t j = 0; j < n; ++j)
        s += bt::to_ld(h[std::size_t(i + j * ld)]) * bt::to_ld(x[std::size_t(j + c * n)]);
      res += std::norm(s - bt::to_ld(rhs0[std::size_t(i + c * n)]));
      nrm += std::norm(bt::to_ld(rhs0[std::size_t(i + c * n)]));
    }
  CHECK(std::sqrt(double(res / nrm)) <= 1e-10);
}

/// Pointer arrays through g (each matrix its own host allocation, ld = m + 2
/// with a sentinel in the padding that must survive, one matrix in pinned
/// memory, the rest pageable), against one backend::cuda pointer-array call
/// on device copies: LU (factor, then solve) or QR, bit for bit.
void ptr_case(const batched::multi_gpu& g, index_t m, index_t n, index_t count, bool lu) {
  INFO((lu ? "LU" : "QR") << ", " << m << " x " << n << ", count = " << count);
  const index_t ld = m + 2, nrhs = 2;
  const T sentinel(4321.0, -1234.0);
  std::vector<std::vector<T>> mats, rhs;
  for (index_t k = 0; k < count; ++k) {
    mats.push_back(random_batch(std::size_t(ld * n), 500 + std::uint64_t(k)));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = m; i < ld; ++i) mats.back()[std::size_t(i + j * ld)] = sentinel;
    rhs.push_back(random_batch(std::size_t(n * nrhs), 900 + std::uint64_t(k)));
  }
  if (lu)  // exactly singular (info 1), first and last
    for (index_t k : {index_t(0), count - 1})
      for (index_t i = 0; i < m; ++i) mats[std::size_t(k)][std::size_t(i)] = T(0);
  // Reference: every matrix on the device, the pointer arrays too.
  std::vector<device_vector<T>> dm, dr;
  std::vector<T*> dmp, drp;
  for (index_t k = 0; k < count; ++k) {
    dm.push_back(up(mats[std::size_t(k)]));
    dr.push_back(up(rhs[std::size_t(k)]));
    dmp.push_back(dm.back().data());
    drp.push_back(dr.back().data());
  }
  auto dmpa = up(dmp), drpa = up(drp);
  device_vector<index_t> dp(n * count);
  device_vector<int> di(count);
  if (lu) {
    batched::lu_factor(gpu, dmpa.data(), n, ld, count, dp.data(), di.data());
    batched::lu_solve(gpu, static_cast<const T* const*>(dmpa.data()), n, ld, dp.data(), drpa.data(), nrhs, n, count);
  } else {
    batched::qr_factor(gpu, dmpa.data(), m, n, ld, count);
  }
  // Through g, on host memory.
  pinned<T> one(mats[std::size_t(count / 2)]);
  std::vector<T*> hp, hr;
  for (index_t k = 0; k < count; ++k) {
    hp.push_back(k == count / 2 ? one.p : mats[std::size_t(k)].data());
    hr.push_back(rhs[std::size_t(k)].data());
  }
  std::vector<index_t> piv(std::size_t(n * count), -7);
  std::vector<int> info(std::size_t(count), -7);
  if (lu) {
    batched::lu_factor(g, hp.data(), n, ld, count, piv.data(), info.data());
    batched::lu_solve(g, static_cast<const T* const*>(hp.data()), n, ld, piv.data(), hr.data(), nrhs, n, count);
    CHECK(same(piv, down(dp)));
    CHECK(same(info, down(di)));
    CHECK(info[0] == 1);
    CHECK(info[std::size_t(count - 1)] == 1);
    CHECK(info[1] == 0);
  } else {
    batched::qr_factor(g, hp.data(), m, n, ld, count);
  }
  mats[std::size_t(count / 2)] = one.vec();
  std::size_t equal = 0, kept = 0;
  for (index_t k = 0; k < count; ++k) {
    const auto& a = mats[std::size_t(k)];
    equal += same(a, down(dm[std::size_t(k)])) && (!lu || same(rhs[std::size_t(k)], down(dr[std::size_t(k)])));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = m; i < ld; ++i) kept += a[std::size_t(i + j * ld)] == sentinel;
  }
  CHECK(equal == std::size_t(count));
  CHECK(kept == std::size_t(count * n * (ld - m)));
  // Not equal garbage: R's first entry has the first column's norm.
  if (!lu) {
    long double nrm = 0;
    for (index_t i = 0; i < m; ++i) nrm += std::norm(bt::to_ld(random_batch(std::size_t(ld * n), 501)[std::size_t(i)]));
    CHECK(std::abs(double(std::abs(bt::to_ld(mats[1][0])) - std::sqrt(nrm))) <= 1e-12 * double(std::sqrt(nrm)));
  }
}

/// Host matrices, each its own allocation (ld rows, cols columns), their
/// device copies, and pointer arrays to both (the device one in device
/// memory).
struct ptr_batch {
  std::vector<std::vector<T>> h;
  std::vector<device_vector<T>> d;
  std::vector<T*> hp;
  device_vector<T*> dp;
  ptr_batch(index_t ld, index_t cols, index_t count, std::uint64_t seed) {
    std::vector<T*> dps;
    for (index_t k = 0; k < count; ++k) {
      h.push_back(random_batch(std::size_t(ld * cols), seed + std::uint64_t(k)));
      d.push_back(up(h.back()));
      hp.push_back(h.back().data());
      dps.push_back(d.back().data());
    }
    dp = up(dps);
  }
  const T* const* chp() const { return hp.data(); }
  const T* const* cdp() const { return dp.data(); }
  bool same_as_device() const {
    bool ok = true;
    for (std::size_t k = 0; k < h.size(); ++k) ok = ok && same(h[k], down(d[k]));
    return ok;
  }
};

/// inverse, apply_qh, apply_q, form_q, least_squares and svd on pointer
/// arrays through g against the backend::cuda pointer-array forms on device
/// copies, bit for bit (padded: ld = m + 1).
void ptr_case2(const batched::multi_gpu& g, index_t m, index_t n, index_t count) {
  INFO(m << " x " << n << ", count = " << count);
  const index_t ld = m + 1, nrhs = 2;
  {  // QR factors (through g), then Q^H C, Q C, thin Q
    ptr_batch f(ld, n, count, 10);
    batched::qr_factor(gpu, f.dp.data(), m, n, ld, count);
    batched::qr_factor(g, f.hp.data(), m, n, ld, count);
    CHECK(f.same_as_device());
    for (int op = 0; op < 3; ++op) {
      INFO("op " << op);
      const index_t cc = op == 2 ? n : nrhs;
      ptr_batch c(ld, cc, count, 20 + std::uint64_t(op) * 1000);
      if (op == 0) {
        batched::apply_qh(gpu, f.cdp(), m, n, ld, c.dp.data(), cc, ld, count);
        batched::apply_qh(g, f.chp(), m, n, ld, c.hp.data(), cc, ld, count);
      } else if (op == 1) {
        batched::apply_q(gpu, f.cdp(), m, n, ld, c.dp.data(), cc, ld, count);
        batched::apply_q(g, f.chp(), m, n, ld, c.hp.data(), cc, ld, count);
      } else {
        batched::form_q(gpu, f.cdp(), m, n, ld, c.dp.data(), cc, ld, count);
        batched::form_q(g, f.chp(), m, n, ld, c.hp.data(), cc, ld, count);
      }
      CHECK(c.same_as_device());
    }
  }
  {  // least squares
    ptr_batch a(ld, n, count, 30), r(ld, nrhs, count, 40);
    device_vector<int> di(count);
    std::vector<int> info(static_cast<std::size_t>(count), -7);
    batched::least_squares(gpu, a.dp.data(), m, n, ld, r.dp.data(), nrhs, ld, count, di.data());
    batched::least_squares(g, a.hp.data(), m, n, ld, r.hp.data(), nrhs, ld, count, info.data());
    CHECK(a.same_as_device());
    CHECK(r.same_as_device());
    CHECK(same(info, down(di)));
  }
  if (m == n) {  // inverse of LU factors
    ptr_batch a(ld, n, count, 50), inv(ld, n, count, 60);
    device_vector<index_t> dpv(n * count);
    device_vector<int> di(count);
    batched::lu_factor(gpu, a.dp.data(), n, ld, count, dpv.data(), di.data());
    for (std::size_t k = 0; k < a.h.size(); ++k) {  // in place: hp points into these
      const std::vector<T> f = down(a.d[k]);
      std::copy(f.begin(), f.end(), a.h[k].begin());
    }
    const std::vector<index_t> piv = down(dpv);
    batched::inverse(gpu, a.cdp(), n, ld, dpv.data(), inv.dp.data(), ld, count);
    batched::inverse(g, a.chp(), n, ld, piv.data(), inv.hp.data(), ld, count);
    CHECK(inv.same_as_device());
  }
  {  // SVD with U and V; a_array's matrices stay as they were
    ptr_batch a(ld, n, count, 70), u(ld, n, count, 80), v(n + 2, n, count, 90);
    const auto a0 = a.h;
    device_vector<double> ds(n * count);
    device_vector<int> di(count);
    std::vector<double> sig(std::size_t(n * count), -1);
    std::vector<int> info(static_cast<std::size_t>(count), -7);
    batched::svd(gpu, a.dp.data(), m, n, ld, count, ds.data(), u.dp.data(), ld, v.dp.data(), n + 2, di.data());
    batched::svd(g, a.hp.data(), m, n, ld, count, sig.data(), u.hp.data(), ld, v.hp.data(), n + 2, info.data());
    CHECK(same(sig, down(ds)));
    CHECK(same(info, down(di)));
    CHECK(u.same_as_device());
    CHECK(v.same_as_device());
    bool kept = true;
    for (std::size_t k = 0; k < a0.size(); ++k) kept = kept && same(a.h[k], a0[k]);
    CHECK(kept);
  }
}

}  // namespace

TEST_CASE("batched multi-GPU: inverse, Q, least squares, SVD on pointer arrays equal one GPU",
          "[batched][multi_gpu]") {
  batched::multi_gpu g({.devices = {0, 0}, .chunk = 11});
  ptr_case2(g, 16, 16, 50);
  ptr_case2(g, 40, 24, 31);
  batched::multi_gpu all;  // automatic chunk, every visible GPU
  ptr_case2(all, 32, 32, 45);
}

TEST_CASE("batched multi-GPU: pointer arrays equal one GPU", "[batched][multi_gpu]") {
  batched::multi_gpu g({.devices = {0, 0}, .chunk = 13});
  ptr_case(g, 8, 8, 150, true);
  ptr_case(g, 32, 32, 101, true);
  ptr_case(g, 40, 24, 77, false);
  ptr_case(g, 32, 32, 60, false);
  batched::multi_gpu all;  // automatic chunk, every visible GPU
  ptr_case(all, 64, 64, 33, true);
  ptr_case(all, 100, 64, 20, false);
  // A null entry, a device pointer entry, a pointer array in device memory:
  // refused before anything runs.
  const index_t n = 4, count = 3;
  std::vector<std::vector<T>> mats(3, random_batch(std::size_t(n * n), 1));
  std::vector<T*> hp{mats[0].data(), nullptr, mats[2].data()};
  std::vector<index_t> piv(std::size_t(n * count));
  std::vector<int> info(static_cast<std::size_t>(count));
  REQUIRE_THROWS_AS(batched::lu_factor(g, hp.data(), n, n, count, piv.data(), info.data()), emgpu::invalid_argument);
  auto d = up(mats[1]);
  hp[1] = d.data();
  REQUIRE_THROWS_AS(batched::qr_factor(g, hp.data(), n, n, n, count), emgpu::invalid_argument);
  hp[1] = mats[1].data();
  auto dhp = up(hp);
  REQUIRE_THROWS_AS(batched::lu_factor(g, dhp.data(), n, n, count, piv.data(), info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(g, hp.data(), n, n - 1, count, piv.data(), info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::qr_factor(g, hp.data(), n, n + 1, n, count), emgpu::invalid_argument);
  batched::lu_factor(g, hp.data(), n, n, count, piv.data(), info.data());  // and the valid call runs
  CHECK(info[0] == 0);
}

TEST_CASE("batched multi-GPU: LU, solve, inverse equal one GPU", "[batched][multi_gpu]") {
  for (int per : {1, 3}) {
    batched::multi_gpu g({.devices = {0}, .partitions_per_device = per, .chunk = 37});
    CHECK(g.num_partitions() == per);
    lu_case(g, 16, 500, false);
    index_t chunks = 0;
    for (index_t p = 0; p < g.num_partitions(); ++p) chunks += g.last_chunks(p);
    CHECK(g.last_chunk() == 37);
    CHECK(chunks == (500 + 36) / 37);
    lu_case(g, 32, 203, true);
    lu_case(g, 1, 100, false);
  }
  // Automatic chunk, n = 64 and 128 (other kernels), every visible GPU.
  for (int per : {1, 2}) {
    batched::multi_gpu g({.partitions_per_device = per});
    INFO("devices " << backend::cuda_device_count() << ", partitions " << g.num_partitions());
    lu_case(g, 64, 40, true);
    lu_case(g, 128, 9, false);
  }
}

// The device buffers are sized to a chunk exactly (the last one shorter):
// memcheck sees any kernel access past a chunk's matrices.
TEST_CASE("batched multi-GPU: small chunks for compute-sanitizer", "[batched][multi_gpu][sanitize]") {
  batched::multi_gpu g({.devices = {0, 0}, .chunk = 7});
  lu_case(g, 8, 60, false);
  lu_case(g, 32, 20, true);
}

TEST_CASE("batched multi-GPU: QR, least squares, SVD equal one GPU", "[batched][multi_gpu]") {
  batched::multi_gpu g({.devices = {0, 0}, .chunk = 29});
  for (auto [m, n] : {std::pair<index_t, index_t>{24, 16}, {32, 32}, {8, 8}, {100, 64}}) {
    INFO("m = " << m << ", n = " << n);
    const index_t count = m > 64 ? 31 : 150, nrhs = 2;
    const std::vector<T> h = random_batch(std::size_t(m * n * count), 5 + std::uint64_t(m));
    const std::vector<T> b0 = random_batch(std::size_t(m * nrhs * count), 6);
    const strided_batch_view<T> av{nullptr, m, n, m, m * n, count};
    const strided_batch_view<T> bv{nullptr, m, nrhs, m, m * nrhs, count};
    // QR
    auto da = up(h);
    batched::qr_factor(gpu, with(av, da.data()));
    std::vector<T> a = h;
    batched::qr_factor(g, with(av, a.data()));
    CHECK(same(a, down(da)));
    // Q^H and Q applied to right-hand sides, and the thin Q formed, from
    // those factors (read only: a const view).
    {
      const strided_batch_view<const T> fv{a.data(), m, n, m, m * n, count};
      const strided_batch_view<const T> dfv{da.data(), m, n, m, m * n, count};
      const strided_batch_view<T> qv{nullptr, m, n, m, m * n, count};
      auto dc = up(b0);
      batched::apply_qh(gpu, dfv, with(bv, dc.data()));
      std::vector<T> c = b0;
      batched::apply_qh(g, fv, with(bv, c.data()));
      CHECK(same(c, down(dc)));
      batched::apply_q(gpu, dfv, with(bv, dc.data()));
      batched::apply_q(g, fv, with(bv, c.data()));
      CHECK(same(c, down(dc)));
      CHECK(emgpu_test::rel_diff(c, b0) <= 1e-13);  // Q Q^H b = b
      device_vector<T> dq(m * n * count);
      batched::form_q(gpu, dfv, with(qv, dq.data()));
      std::vector<T> q(std::size_t(m * n * count), T(7.0, 7.0));
      batched::form_q(g, fv, with(qv, q.data()));
      CHECK(same(q, down(dq)));
    }
    // Least squares
    da = up(h);
    auto db = up(b0);
    device_vector<int> di(count);
    batched::least_squares(gpu, with(av, da.data()), with(bv, db.data()), di.data());
    a = h;
    std::vector<T> x = b0;
    std::vector<int> info(std::size_t(count), -1);
    batched::least_squares(g, with(av, a.data()), with(bv, x.data()), info.data());
    CHECK(same(a, down(da)));
    CHECK(same(x, down(db)));
    CHECK(same(info, down(di)));
    // SVD with U and V, and singular values alone
    const strided_batch_view<T> uv{nullptr, m, n, m, m * n, count}, vv{nullptr, n, n, n, n * n, count};
    const strided_batch_view<T> none{nullptr, 0, 0, 1, 0, count};
    da = up(h);
    device_vector<R> ds(n * count);
    device_vector<T> du(m * n * count), dv(n * n * count);
    batched::svd(gpu, with(av, da.data()), ds.data(), with(uv, du.data()), with(vv, dv.data()), di.data());
    a = h;
    std::vector<R> s(std::size_t(n * count));
    std::vector<T> u(std::size_t(m * n * count)), v(std::size_t(n * n * count));
    batched::svd(g, with(av, a.data()), s.data(), with(uv, u.data()), with(vv, v.data()), info.data());
    CHECK(same(s, down(ds)));
    CHECK(same(u, down(du)));
    CHECK(same(v, down(dv)));
    CHECK(same(info, down(di)));
    CHECK(std::all_of(info.begin(), info.end(), [](int i) { return i == 0; }));
    da = up(h);
    batched::svd(gpu, with(av, da.data()), ds.data(), none, none, di.data());
    a = h;
    batched::svd(g, with(av, a.data()), s.data(), none, none, info.data());
    CHECK(same(s, down(ds)));
    CHECK(a == h);  // a is only copied in
  }
}

TEST_CASE("batched multi-GPU: progress and errors", "[batched][multi_gpu]") {
  const index_t n = 8, count = 1000;
  const std::vector<T> h = random_batch(std::size_t(n * n * count), 11);
  const strided_batch_view<T> av{nullptr, n, n, n, n * n, count};
  std::vector<index_t> piv(std::size_t(n * count));
  std::vector<int> info(static_cast<std::size_t>(count));
  std::vector<std::pair<index_t, index_t>> seen;
  batched::multi_gpu g({.devices = {0},
                        .partitions_per_device = 2,
                        .chunk = 64,
                        .progress = [&](index_t d, index_t t) { seen.emplace_back(d, t); }});
  std::vector<T> a = h;
  batched::lu_factor(g, with(av, a.data()), piv.data(), info.data());
  REQUIRE(!seen.empty());
  CHECK(seen.back() == std::pair<index_t, index_t>(count, count));
  for (std::size_t i = 1; i < seen.size(); ++i) CHECK(seen[i].first > seen[i - 1].first);

  // A device pointer is refused before anything runs.
  auto d = up(h);
  REQUIRE_THROWS_AS(batched::lu_factor(g, with(av, d.data()), piv.data(), info.data()), emgpu::invalid_argument);
  // Shapes as in the single-GPU routines.
  REQUIRE_THROWS_AS(batched::lu_factor(g, strided_batch_view<T>{a.data(), n, n - 1, n, n * n, count}, piv.data(),
                                       info.data()),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(g, with(av, a.data()), piv.data(), static_cast<int*>(nullptr)),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::multi_gpu({.devices = {99}}), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::multi_gpu({.partitions_per_device = 0}), emgpu::invalid_argument);
  // Empty batch: nothing to do, no progress call.
  seen.clear();
  batched::lu_factor(g, strided_batch_view<T>{nullptr, n, n, n, n * n, 0}, piv.data(), info.data());
  CHECK(seen.empty());

  // A throwing progress callback reaches the caller; the object stays usable.
  batched::multi_gpu bad({.devices = {0}, .chunk = 16, .progress = [](index_t, index_t) {
                            throw std::runtime_error("stop");
                          }});
  a = h;
  REQUIRE_THROWS_AS(batched::lu_factor(bad, with(av, a.data()), piv.data(), info.data()), std::runtime_error);
  batched::multi_gpu quiet({.devices = {0}, .chunk = 16});
  a = h;
  batched::lu_factor(quiet, with(av, a.data()), piv.data(), info.data());
  auto ref = up(h);
  device_vector<index_t> dp(n * count);
  device_vector<int> di(count);
  batched::lu_factor(gpu, with(av, ref.data()), dp.data(), di.data());
  CHECK(same(a, down(ref)));
  // host_pin: the same results from the registered buffer; registering a
  // range twice is a device_error, after reset() it works again.
  {
    a = h;
    batched::host_pin pin{std::span<T>(a)};
    CHECK(pin.pinned());
    REQUIRE_THROWS_AS(batched::host_pin(std::span<T>(a)), emgpu::device_error);
    batched::lu_factor(quiet, with(av, a.data()), piv.data(), info.data());
    CHECK(same(a, down(ref)));
    batched::host_pin moved = std::move(pin);
    CHECK(!pin.pinned());
    CHECK(moved.pinned());
    moved.reset();
    batched::host_pin again(a.data(), a.size() * sizeof(T));
    CHECK(again.pinned());
    CHECK(!batched::host_pin(nullptr, 0).pinned());
    REQUIRE_THROWS_AS(batched::host_pin(nullptr, 16), emgpu::invalid_argument);
  }
  // The engine itself (multi_gpu::run, for routines of one's own): an
  // exception in one partition's chunk stops the others and reaches the
  // caller; the object stays usable. Every chunk is seen once, on its device.
  {
    batched::multi_gpu two({.devices = {0, 0}, .chunk = 10});
    std::vector<double> x(100, 1.0);
    const batched::multi_gpu::array arr[] = {{x.data(), sizeof(double), sizeof(double), true, true}};
    std::atomic<index_t> seen_chunks{0}, seen_matrices{0};
    two.run(
        100, arr,
        [&](const backend::cuda& b, index_t k0, index_t cc, std::byte* const* d, batched::workspace*) {
          CHECK(b.device == 0);
          seen_chunks += 1;
          seen_matrices += cc;
          // Doubles the chunk on the device, in stream order.
          std::vector<double> h(static_cast<std::size_t>(cc));
          EMGPU_CUDA_CHECK(cudaMemcpyAsync(h.data(), d[0], h.size() * sizeof(double), cudaMemcpyDeviceToHost, b.stream));
          EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
          for (auto& v : h) v *= double(2 + k0);
          EMGPU_CUDA_CHECK(cudaMemcpyAsync(d[0], h.data(), h.size() * sizeof(double), cudaMemcpyHostToDevice, b.stream));
          EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
        },
        "doubling");
    CHECK(seen_chunks == 10);
    CHECK(seen_matrices == 100);
    bool right = true;
    for (index_t k = 0; k < 100; ++k) right = right && x[std::size_t(k)] == double(2 + (k / 10) * 10);
    CHECK(right);
    REQUIRE_THROWS_AS(two.run(
                          100, arr,
                          [&](const backend::cuda&, index_t k0, index_t, std::byte* const*, batched::workspace*) {
                            if (k0 == 50) throw std::runtime_error("chunk 5");
                          },
                          "failing"),
                      std::runtime_error);
    a = h;
    batched::lu_factor(two, with(av, a.data()), piv.data(), info.data());
    CHECK(same(a, down(ref)));
  }
  // release() frees the buffers; the next call allocates them again.
  quiet.release();
  a = h;
  batched::lu_factor(quiet, with(av, a.data()), piv.data(), info.data());
  CHECK(same(a, down(ref)));
}

#endif  // EMGPU_TEST_CUDA
