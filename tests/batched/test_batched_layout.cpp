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

// The pointer-array forms of inverse, apply_qh, apply_q, form_q,
// least_squares and svd against the strided forms on the same padded
// matrices: the same kernels (or, for the SVD, the strided kernels on
// packed copies), so bit for bit on every backend. Each pointer points
// into a second padded buffer, whose gaps must come back unchanged.
TEMPLATE_LIST_TEST_CASE("batched: pointer arrays give the strided results (inverse, Q, least squares, SVD)",
                        "[batched]", backends) {
  const TestType b{};
  for (auto [m, n] : {std::pair<index_t, index_t>{8, 8}, {33, 20}, {32, 32}, {70, 64}}) {
    INFO("m = " << m << ", n = " << n);
    const index_t count = cpu_or_gpu(4, 40), ld = m + 3, st = ld * n + 2, nrhs = 3, ldb = m + 1, stb = ldb * nrhs;
    std::mt19937_64 g(31 + std::uint64_t(m));
    std::uniform_real_distribution<double> u(-1, 1);
    const auto rnd = [&](index_t len) {
      std::vector<T> h(static_cast<std::size_t>(len));
      for (auto& x : h) x = T(u(g), u(g));
      return h;
    };
    const std::vector<T> h = rnd(st * count), rhs = rnd(stb * count), fill = rnd(st * count);
    const strided_batch_view<T> av{nullptr, m, n, ld, st, count}, bv{nullptr, m, nrhs, ldb, stb, count};
    const auto with = [](strided_batch_view<T> v, T* p) {
      v.data = p;
      return v;
    };
    const auto cview = [](strided_batch_view<T> v) {
      return strided_batch_view<const T>{v.data, v.rows, v.cols, v.ld, v.stride, v.count};
    };
    // Pointer arrays (in backend memory) into buffer d, matrices st apart.
    const auto ptrs = [&](auto& d, index_t stride) {
      std::vector<T*> p;
      for (index_t k = 0; k < count; ++k) p.push_back(d.data() + k * stride);
      return emgpu_test::upload(b, p);
    };
    const auto cptrs = [&](auto& d, index_t stride) {
      std::vector<const T*> p;
      for (index_t k = 0; k < count; ++k) p.push_back(d.data() + k * stride);
      return emgpu_test::upload(b, p);
    };

    // QR factors, then Q^H B, Q B, the thin Q; least squares.
    auto f = up(b, h);
    batched::qr_factor(b, with(av, f.data()));
    auto fp = cptrs(f, st);
    for (int op = 0; op < 3; ++op) {
      INFO("op " << op);
      const bool form = op == 2;
      const strided_batch_view<T> cv = form ? strided_batch_view<T>{nullptr, m, n, ld, st, count} : bv;
      const std::vector<T>& c0 = form ? fill : rhs;
      auto c1 = up(b, c0), c2 = up(b, c0);
      auto c2p = ptrs(c2, cv.stride);
      if (op == 0) {
        batched::apply_qh(b, cview(with(av, f.data())), with(cv, c1.data()));
        batched::apply_qh(b, fp.data(), m, n, ld, c2p.data(), nrhs, ldb, count);
      } else if (op == 1) {
        batched::apply_q(b, cview(with(av, f.data())), with(cv, c1.data()));
        batched::apply_q(b, fp.data(), m, n, ld, c2p.data(), nrhs, ldb, count);
      } else {
        batched::form_q(b, cview(with(av, f.data())), with(cv, c1.data()));
        batched::form_q(b, fp.data(), m, n, ld, c2p.data(), n, ld, count);
      }
      CHECK(down(b, c1) == down(b, c2));
    }
    {
      auto a1 = up(b, h), a2 = up(b, h), r1 = up(b, rhs), r2 = up(b, rhs);
      auto i1 = make_vector<int>(b, count), i2 = make_vector<int>(b, count);
      auto a2p = ptrs(a2, st), r2p = ptrs(r2, stb);
      batched::least_squares(b, with(av, a1.data()), with(bv, r1.data()), i1.data());
      batched::least_squares(b, a2p.data(), m, n, ld, r2p.data(), nrhs, ldb, count, i2.data());
      CHECK(down(b, a1) == down(b, a2));
      CHECK(down(b, r1) == down(b, r2));
      CHECK(down(b, i1) == down(b, i2));
      CHECK(down(b, i1) == std::vector<int>(static_cast<std::size_t>(count), 0));
    }
    // LU, then the inverse (square only).
    if (m == n) {
      auto lu = up(b, h);
      auto piv = make_vector<index_t>(b, n * count);
      auto info = make_vector<int>(b, count);
      batched::lu_factor(b, with(av, lu.data()), piv.data(), info.data());
      auto v1 = up(b, fill), v2 = up(b, fill);
      batched::inverse(b, cview(with(av, lu.data())), piv.data(), with(av, v1.data()));
      auto lup = cptrs(lu, st);
      auto v2p = ptrs(v2, st);
      batched::inverse(b, lup.data(), n, ld, piv.data(), v2p.data(), ld, count);
      CHECK(down(b, v1) == down(b, v2));
    }
    // SVD with U and V, and singular values alone; a_array's matrices
    // are left as they were (the strided form uses A as workspace).
    batched::workspace work, copies;  // kept between the calls below
    for (bool vectors : {true, false, true}) {
      INFO("vectors " << vectors);
      const strided_batch_view<T> uv{nullptr, m, n, ld, st, count}, vv{nullptr, n, n, ld, st, count};
      auto a1 = up(b, h), a2 = up(b, h), u1 = up(b, fill), u2 = up(b, fill), v1 = up(b, fill), v2 = up(b, fill);
      auto s1 = make_vector<double>(b, n * count), s2 = make_vector<double>(b, n * count);
      auto i1 = make_vector<int>(b, count), i2 = make_vector<int>(b, count);
      auto a2p = ptrs(a2, st), u2p = ptrs(u2, st), v2p = ptrs(v2, st);
      batched::svd(b, with(av, a1.data()), s1.data(), vectors ? with(uv, u1.data()) : strided_batch_view<T>{},
                   vectors ? with(vv, v1.data()) : strided_batch_view<T>{}, i1.data());
      batched::svd_options o;  // the second call with vectors keeps both workspaces
      if (work.capacity() > 0 || copies.capacity() > 0 || !vectors) {
        o.work = &work;
        o.copies = &copies;
      }
      batched::svd(b, a2p.data(), m, n, ld, count, s2.data(), vectors ? u2p.data() : nullptr, ld,
                   vectors ? v2p.data() : nullptr, ld, i2.data(), o);
      CHECK(down(b, s1) == down(b, s2));
      CHECK(down(b, i1) == down(b, i2));
      CHECK(down(b, u1) == down(b, u2));
      CHECK(down(b, v1) == down(b, v2));
      CHECK(down(b, a2) == h);
    }
  }
  // Argument errors as in the strided forms.
  auto d = up(b, std::vector<T>(64));
  std::vector<T*> hp{d.data()};
  auto p = emgpu_test::upload(b, hp);
  std::vector<const T*> chp{d.data()};
  auto cp = emgpu_test::upload(b, chp);
  auto info = make_vector<int>(b, 1);
  auto sig = make_vector<double>(b, 4);
  REQUIRE_THROWS_AS(batched::least_squares(b, p.data(), 2, 3, 2, p.data(), 1, 2, 1, info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::apply_qh(b, cp.data(), 4, 4, 4, p.data(), 1, 3, 1), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::form_q(b, cp.data(), 4, 2, 4, static_cast<T* const*>(nullptr), 2, 4, 1),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::inverse(b, cp.data(), 4, 3, static_cast<const index_t*>(nullptr), p.data(), 4, 1),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::svd(b, p.data(), 4, 4, 4, 1, sig.data(), p.data(), 4, static_cast<T* const*>(nullptr), 4,
                                 info.data()),
                    emgpu::invalid_argument);  // u_array is a_array
  batched::workspace w;
  batched::svd_options same;
  same.work = same.copies = &w;
  REQUIRE_THROWS_AS(batched::svd(b, p.data(), 4, 4, 4, 1, sig.data(), static_cast<T* const*>(nullptr), 4,
                                 static_cast<T* const*>(nullptr), 4, info.data(), same),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::svd(b, p.data(), 4, 4, 4, 1, static_cast<double*>(nullptr),
                                 static_cast<T* const*>(nullptr), 4, static_cast<T* const*>(nullptr), 4, info.data()),
                    emgpu::invalid_argument);
}

TEMPLATE_LIST_TEST_CASE("batched: a million 2 x 2 matrices, QR and SVD against closed forms",
                        "[batched][qr][svd]", backends) {
  // The grid / batch indexing of the QR and SVD launches at the issue's
  // largest batch size (10^6 on the GPU, 10^5 on the CPU), every matrix
  // checked (the LU test does the same for lu_factor). For 2 x 2, QR is one
  // rotation, c = |a00| / r, s = (a00 / |a00|) conj(a10) / r,
  // r = sqrt(|a00|^2 + |a10|^2): R00 = (a00 / |a00|) r, R01 = c a01 + s a11,
  // R11 = c a11 - conj(s) a01. The library applies the rotation decoded from
  // its stored encoding, exact to a few ulps, hence 10 eps per term. sigma
  // from the 2 x 2 closed form in long double, within the SVD tests' bound
  // 10 m eps sigma_max (m = 2).
  const TestType b{};
  using T = complex<double>;
  using LT = std::complex<long double>;
  const long double e = std::numeric_limits<double>::epsilon();
  const index_t count = cpu_or_gpu(100000, 1000000);
  std::mt19937_64 rng(2025);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> h(static_cast<std::size_t>(4 * count));
  for (auto& x : h) x = T(u(rng), u(rng));
  const auto L = [](T z) { return LT(z.real(), z.imag()); };
  const strided_batch_view<T> hv{nullptr, 2, 2, 2, 4, count};
  auto view = [&](T* p) {
    strided_batch_view<T> v = hv;
    v.data = p;
    return v;
  };

  auto dq = up(b, h);
  batched::qr_factor(b, view(dq.data()));
  const std::vector<T> f = down(b, dq);
  index_t bad_qr = 0;
  for (index_t k = 0; k < count; ++k) {
    const T* a = h.data() + 4 * k;
    const T* r = f.data() + 4 * k;
    const LT a00 = L(a[0]), a10 = L(a[1]), a01 = L(a[2]), a11 = L(a[3]);
    const long double rr = std::sqrt(std::norm(a00) + std::norm(a10));
    const long double c = std::abs(a00) / rr;
    const LT ph = a00 / std::abs(a00), s = ph * std::conj(a10) / rr;
    const LT r00 = ph * rr, r01 = c * a01 + s * a11, r11 = c * a11 - std::conj(s) * a01;
    const long double t1 = 10 * e * (std::abs(a01) + std::abs(a11));
    const bool ok = std::abs(L(r[0]) - r00) <= 10 * e * rr && std::abs(L(r[2]) - r01) <= t1 &&
                    std::abs(L(r[3]) - r11) <= t1;
    bad_qr += ok ? 0 : 1;
  }
  CHECK(bad_qr == 0);

  auto ds = up(b, h);
  auto sig = make_vector<double>(b, 2 * count);
  auto info = make_vector<int>(b, count);
  batched::svd(b, view(ds.data()), sig.data(), strided_batch_view<T>{}, strided_batch_view<T>{}, info.data());
  const std::vector<double> sg = down(b, sig);
  const std::vector<int> inf = down(b, info);
  index_t bad_svd = 0;
  for (index_t k = 0; k < count; ++k) {
    const T* a = h.data() + 4 * k;
    const LT a00 = L(a[0]), a10 = L(a[1]), a01 = L(a[2]), a11 = L(a[3]);
    const long double f2 = std::norm(a00) + std::norm(a10) + std::norm(a01) + std::norm(a11);
    const long double det = std::abs(a00 * a11 - a01 * a10);
    const long double s1 = std::sqrt((f2 + std::sqrt(std::max(0.0L, f2 * f2 - 4 * det * det))) / 2);
    const long double s2 = det / s1;
    const long double tol = 20 * e * s1;
    const bool ok = inf[std::size_t(k)] == 0 && std::abs(sg[std::size_t(2 * k)] - s1) <= tol &&
                    std::abs(sg[std::size_t(2 * k + 1)] - s2) <= tol;
    bad_svd += ok ? 0 : 1;
  }
  CHECK(bad_svd == 0);
}

#if !defined(EMGPU_TEST_CUDA)
namespace {

/// Runs a per-matrix functor over the batch on the host with a "shared"
/// buffer of `bytes`, as the CUDA launcher does with shared memory.
template <class Op>
void run_staged(const Op& op, index_t count, std::size_t bytes) {
  emgpu::batched::detail::host_scratch buf(bytes);
  for (index_t k = 0; k < count; ++k) op(emgpu::batched::detail::serial_team{}, k, buf.p, buf.bytes);
}

/// Bytes that make a functor's carver stage exactly `ns` columns of its
/// first matrix (rows r1) and `ns2` of its second (rows r2).
template <class E>
std::size_t staged_bytes(std::size_t scratch, index_t r1, index_t ns, index_t r2 = 0, index_t ns2 = 0) {
  using namespace emgpu::batched::detail;
  return align16(scratch) + align16(std::size_t(padded_ld<E>(r1) * ns) * sizeof(E)) +
         std::size_t(padded_ld<E>(r2) * ns2) * sizeof(E);
}

template <class E>
void check_partial_staging(index_t m, index_t n, std::uint64_t seed) {
  using namespace emgpu::batched::detail;
  INFO("type " << type_name<E>() << ", m = " << m << ", n = " << n);
  std::mt19937_64 rng(seed);
  std::vector<kind> kinds;
  std::vector<index_t> zc;
  const index_t count = 4;  // random, ill-conditioned, singular, random
  const batch<E> a = make_batch<E>(m, n, count, rng, kinds, zc);
  batch<E> rhs(m, 2, count);
  for (index_t k = 0; k < count; ++k) rhs.set(k, random_d<E>(m, 2, rng));
  const backend::serial s;
  using L = strided_loc<E>;
  for (index_t ns : {index_t(0), index_t(1), n / 2, n - 1, n}) {
    if (ns < 0 || ns > n) continue;
    INFO("staged columns " << ns);
    if (m == n) {  // LU
      std::vector<E> x = a.h, r = a.h;
      std::vector<index_t> px(static_cast<std::size_t>(n * count)), pr = px;
      std::vector<int> ix(static_cast<std::size_t>(count)), ir = ix;
      const lu_factor_op<E, L> op{{x.data(), a.stride}, n, a.ld, px.data(), ix.data()};
      run_staged(op, count, staged_bytes<E>(op.scratch_bytes(), n, ns));
      batched::lu_factor(s, a.view(r.data()), pr.data(), ir.data());
      CHECK(x == r);
      CHECK(px == pr);
      CHECK(ix == ir);
    }
    {  // QR, then Q^H applied to two columns with the factors
      std::vector<E> x = a.h, r = a.h;
      const qr_factor_op<E, L> op{{x.data(), a.stride}, m, n, a.ld};
      run_staged(op, count, staged_bytes<E>(op.scratch_bytes(), m, ns));
      batched::qr_factor(s, a.view(r.data()));
      CHECK(x == r);
      std::vector<E> cx = rhs.h, cr = rhs.h;
      const index_t nsc = ns < 2 ? ns : 2;
      const qr_apply_op<E, strided_loc<const E>, L> ap{{r.data(), a.stride}, m, n, a.ld,
                                                       {cx.data(), rhs.stride}, 2, rhs.ld, true, false};
      run_staged(ap, count, staged_bytes<E>(ap.scratch_bytes(), m, nsc));
      batched::apply_qh(s, a.view(static_cast<const E*>(r.data())), rhs.view(cr.data()));
      CHECK(cx == cr);
    }
    {  // SVD with U and V, both methods: A partly staged, or A whole and V partly
      for (int which = 0; which < 4; ++which) {
        const bool qr = which >= 2, v_part = which % 2 == 1;
        INFO((qr ? "QR method" : "Jacobi") << (v_part ? ", V partly staged" : ", A partly staged"));
        std::vector<E> x = a.h, r = a.h;
        batch<E> u(m, n, count), v(n, n, count);
        std::vector<E> ux = u.h, ur = u.h, vx = v.h, vr = v.h;
        std::vector<real_t<E>> sx(static_cast<std::size_t>(n * count)), sr = sx;
        std::vector<int> ix(static_cast<std::size_t>(count)), ir = ix;
        batched::svd_options o;
        o.method = qr ? batched::svd_method::qr : batched::svd_method::jacobi;
        batched::svd(s, a.view(r.data()), sr.data(), u.view(ur.data()), v.view(vr.data()), ir.data(), o);
        if (qr) {
          const svd_gk_op<E, L, L, L> op{{x.data(), a.stride}, m, n, a.ld, sx.data(), {ux.data(), u.stride}, u.ld,
                                         true, {vx.data(), v.stride}, v.ld, true, false, ix.data(),
                                         svd_gk_team(m, n)};
          run_staged(op, count,
                     v_part ? staged_bytes<E>(op.scratch_bytes(), m, n, n, ns)
                            : staged_bytes<E>(op.scratch_bytes(), m, ns));
        } else {
          int group = 1, team = 2;
          svd_shape(m, n, group, team);
          const real_t<E> tol = real_t<E>(std::sqrt(double(m))) * std::numeric_limits<real_t<E>>::epsilon();
          const svd_op<E, L, L, L> op{{x.data(), a.stride}, m, n, a.ld, sx.data(), {ux.data(), u.stride}, u.ld,
                                      true, {vx.data(), v.stride}, v.ld, true, ix.data(), tol, int(30 + n / 4),
                                      group, team};
          run_staged(op, count, v_part ? staged_bytes<E>(0, m, n, n, ns) : staged_bytes<E>(0, m, ns));
        }
        // A is workspace (unspecified on return; staged columns stay staged).
        CHECK(sx == sr);
        CHECK(ux == ur);
        CHECK(vx == vr);
        CHECK(ix == ir);
      }
    }
  }
}

}  // namespace

// The CUDA launcher stages as many trailing columns of each matrix in shared
// memory as fit (all of them for small n; part for complex<double> n >~ 110),
// host backends none. Running the per-matrix functors on the host with
// "shared" buffers for none, some and all columns exercises the staged
// accessor and stage_in/stage_out here: the storage location must not change
// a single bit of the results (same operations, same order).
TEST_CASE("batched: partly staged matrices give the unstaged results (host)", "[batched]") {
  check_partial_staging<complex<double>>(9, 9, 11);
  check_partial_staging<float>(12, 7, 12);
  check_partial_staging<complex<float>>(33, 33, 13);
  check_partial_staging<double>(2, 2, 14);
}
#endif
