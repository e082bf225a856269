// Batched LU with partial pivoting: P A = L U residual, solve and inverse
// backward errors, exact-zero-pivot info, agreement between backends, and
// argument errors. Bounds follow the issue: ||P A - L U||_F / (||A||_F n eps)
// <= 10 (backward stability of partial pivoting with the modest growth of
// random matrices); solves: ||A x - b|| / (||A|| ||x|| n eps) <= 10.
#include <cstring>

#include "batched_util.hpp"

using namespace emgpu;
using namespace bt;
using emgpu_test::backends;

namespace {

template <class T>
MatL<T> permuted(MatL<T> a, const index_t* ipiv) {
  for (index_t k = 0; k < a.rows(); ++k)
    if (ipiv[k] != k) a.row(k).swap(a.row(ipiv[k]));
  return a;
}

template <class T, class B>
void check_lu(const B& b, index_t n, index_t count, std::uint64_t seed) {
  INFO("type " << type_name<T>() << ", n = " << n << ", count = " << count);
  std::mt19937_64 rng(seed);
  std::vector<kind> kinds;
  std::vector<index_t> zc;
  const batch<T> a = make_batch<T>(n, n, count, rng, kinds, zc);

  auto d_a = up(b, a.h);
  auto d_piv = make_vector<index_t>(b, n * count);
  auto d_info = make_vector<int>(b, count);
  batched::lu_factor(b, a.view(d_a.data()), d_piv.data(), d_info.data());
  const std::vector<T> f = down(b, d_a);
  const std::vector<index_t> piv = down(b, d_piv);
  const std::vector<int> info = down(b, d_info);

  // Padding between matrices must be untouched.
  for (index_t k = 0; k < count; ++k)
    for (index_t j = 0; j < n; ++j)
      for (index_t i = n; i < a.ld; ++i)
        REQUIRE(f[std::size_t(k * a.stride + i + j * a.ld)] == a.h[std::size_t(k * a.stride + i + j * a.ld)]);

  // Right-hand sides: one and three per matrix.
  const index_t nrhs = 3;
  batch<T> r1(n, 1, count), r3(n, nrhs, count);
  for (index_t k = 0; k < count; ++k) {
    r1.set(k, random_d<T>(n, 1, rng));
    r3.set(k, random_d<T>(n, nrhs, rng));
  }
  auto d_r1 = up(b, r1.h);
  auto d_r3 = up(b, r3.h);
  const batch<T>& lu = a;  // same layout
  batched::lu_solve(b, lu.view(static_cast<const T*>(d_a.data())), d_piv.data(), r1.view(d_r1.data()));
  batched::lu_solve(b, lu.view(d_a.data()), d_piv.data(), r3.view(d_r3.data()));
  batch<T> inv(n, n, count);
  auto d_inv = up(b, inv.h);
  batched::inverse(b, lu.view(d_a.data()), d_piv.data(), inv.view(d_inv.data()));
  const std::vector<T> x1 = down(b, d_r1), x3 = down(b, d_r3), xi = down(b, d_inv);

  for (index_t k = 0; k < count; ++k) {
    INFO("matrix " << k << " (" << kind_name(kinds[std::size_t(k)]) << ")");
    const MatL<T> A = a.get(k), F = a.get(f, k);
    const index_t* p = piv.data() + k * n;
    for (index_t j = 0; j < n; ++j) REQUIRE((p[j] >= j && p[j] < n));
    MatL<T> L = MatL<T>::Identity(n, n), U = MatL<T>::Zero(n, n);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) (i > j ? L(i, j) : U(i, j)) = F(i, j);
    const long double nA = fro(A);
    // An all-zero matrix must factor exactly (0/0 would hide that).
    const long double res = nA == 0 ? fro(L * U) : fro(permuted<T>(A, p) - L * U) / (nA * n * eps<T>());
    INFO("||PA - LU|| / (||A|| n eps) = " << double(res));
    CHECK(res <= 10);
    if (kinds[std::size_t(k)] == kind::singular) {
      CHECK(info[std::size_t(k)] == int(zc[std::size_t(k)] + 1));
      continue;  // no solve with an exactly singular matrix
    }
    REQUIRE(info[std::size_t(k)] == 0);
    const auto backward = [&](const MatL<T>& X, const MatL<T>& Bm) {
      return fro(A * X - Bm) / (nA * fro(X) * n * eps<T>());
    };
    const long double e1 = backward(r1.get(x1, k), r1.get(k));
    const long double e3 = backward(r3.get(x3, k), r3.get(k));
    const long double ei = fro(A * inv.get(xi, k) - MatL<T>::Identity(n, n)) /
                           (nA * fro(inv.get(xi, k)) * n * eps<T>());
    INFO("solve backward errors " << double(e1) << ", " << double(e3) << "; inverse " << double(ei));
    CHECK(e1 <= 10);
    CHECK(e3 <= 10);
    CHECK(ei <= 10);
  }

  // All backends agree: the serial backend on the same input is the reference.
  // Host backends run the same code with the same compiler: bitwise equal.
  // CUDA contracts a*b+c into FMAs, so factors agree to rounding only; the
  // pivots and info agree exactly for these (tie-free) random matrices.
  {
    backend::serial s;
    std::vector<T> fs = a.h;
    std::vector<index_t> ps(static_cast<std::size_t>(n * count));
    std::vector<int> is(static_cast<std::size_t>(count));
    batched::lu_factor(s, a.view(fs.data()), ps.data(), is.data());
    CHECK(is == info);
#if defined(EMGPU_TEST_CUDA)
    for (index_t k = 0; k < count; ++k) {
      if (kinds[std::size_t(k)] != kind::random) continue;
      INFO("matrix " << k);
      for (index_t j = 0; j < n; ++j) CHECK(ps[std::size_t(k * n + j)] == piv[std::size_t(k * n + j)]);
      const long double d = fro(a.get(fs, k) - a.get(f, k)) / (fro(a.get(fs, k)) * n * eps<T>());
      CHECK(d <= 10);
    }
#else
    CHECK(ps == piv);
    CHECK(fs == f);
#endif
  }
}

template <class T, class B>
void pointer_array_matches_strided(const B& b) {
  const index_t n = 9, count = 5;
  std::mt19937_64 rng(7);
  batch<T> a(n, n, count);  // nonsingular: the solves below compare bitwise
  for (index_t k = 0; k < count; ++k) a.set(k, random_d<T>(n, n, rng));
  auto d1 = up(b, a.h), d2 = up(b, a.h);
  auto p1 = make_vector<index_t>(b, n * count), p2 = make_vector<index_t>(b, n * count);
  auto i1 = make_vector<int>(b, count), i2 = make_vector<int>(b, count);
  batched::lu_factor(b, a.view(d1.data()), p1.data(), i1.data());
  std::vector<T*> ptrs;
  for (index_t k = 0; k < count; ++k) ptrs.push_back(d2.data() + k * a.stride);
  auto d_ptrs = emgpu_test::upload(b, ptrs);
  batched::lu_factor(b, static_cast<T* const*>(d_ptrs.data()), n, a.ld, count, p2.data(), i2.data());
  CHECK(down(b, d1) == down(b, d2));
  CHECK(down(b, p1) == down(b, p2));
  CHECK(down(b, i1) == down(b, i2));
  // Solve through pointer arrays too.
  batch<T> r(n, 2, count);
  for (index_t k = 0; k < count; ++k) r.set(k, random_d<T>(n, 2, rng));
  auto r1 = up(b, r.h), r2 = up(b, r.h);
  batched::lu_solve(b, a.view(d1.data()), p1.data(), r.view(r1.data()));
  std::vector<const T*> lptrs;
  std::vector<T*> rptrs;
  for (index_t k = 0; k < count; ++k) {
    lptrs.push_back(d2.data() + k * a.stride);
    rptrs.push_back(r2.data() + k * r.stride);
  }
  auto d_l = emgpu_test::upload(b, lptrs);
  auto d_r = emgpu_test::upload(b, rptrs);
  batched::lu_solve(b, static_cast<const T* const*>(d_l.data()), n, a.ld, p2.data(),
                    static_cast<T* const*>(d_r.data()), index_t(2), r.ld, count);
  CHECK(down(b, r1) == down(b, r2));
}

#if defined(EMGPU_TEST_CUDA)
/// ||P A - L U||_F / (||A||_F n eps) of one factored matrix (0 / 0 -> ||L U||).
template <class T>
long double lu_backward(const MatL<T>& A, const MatL<T>& F, const index_t* p) {
  const index_t n = A.rows();
  MatL<T> L = MatL<T>::Identity(n, n), U = MatL<T>::Zero(n, n);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < n; ++i) (i > j ? L(i, j) : U(i, j)) = F(i, j);
  const long double nA = fro(A);
  return nA == 0 ? fro(L * U) : fro(permuted<T>(A, p) - L * U) / (nA * n * eps<T>());
}

/// The fast paths (public lu_factor, n <= 128: register kernels up to 64
/// and the blocked shared-memory kernel above for the single-precision
/// types; the tensor-core kernels of lu_mma.hpp for double and
/// complex<double> from n = 17 where they fit) against the generic team path
/// (detail::launch of lu_factor_op, what n > 128 runs) on one batch.
/// Both run the same elimination; they may still round differently (FMA
/// contraction is up to the compiler), so:
///  - random (tie-free) matrices: same pivots and info, factors within
///    10 n eps (relative, Frobenius: the forward error of two backward-stable
///    runs with the same pivots and modest growth);
///  - ill-conditioned / exactly singular: same info (a zero column stays
///    exactly zero whatever the rounding), backward errors <= 10 for both
///    (near-ties in late pivots may legitimately differ);
///  - near-integer matrices with many exact ties: the fast path's own
///    factors must have backward error <= 10, valid pivots, and an info
///    consistent with its U (first exactly zero diagonal);
///  - NaN / Inf in column 0: must return (no hang), with the generic path's
///    pivots and info (decided by IEEE compares only, no rounding: the
///    non-finite row is never a pivot (NaN) or is the unique one (Inf)).
/// The pointer-array form must reproduce the strided one bitwise (same
/// kernel, same arithmetic). Entries outside the n x n blocks stay untouched.
template <class T>
void fast_vs_generic(index_t n, index_t count, std::uint64_t seed) {
  INFO("type " << type_name<T>() << ", n = " << n << ", count = " << count);
  enum class xk { base, ties, nan, inf, negzero };
  const backend::cuda b{};
  std::mt19937_64 rng(seed);
  std::vector<kind> kinds;
  std::vector<index_t> zc;
  batch<T> a = make_batch<T>(n, n, count, rng, kinds, zc);
  std::vector<xk> extra(static_cast<std::size_t>(count), xk::base);
  std::uniform_int_distribution<int> small(-2, 2);
  for (index_t k = 0; k < count; ++k) {
    if (k % 5 == 4) {  // small integers: exact ties in the pivot search
      MatD<T> m(n, n);
      for (index_t j = 0; j < n; ++j)
        for (index_t i = 0; i < n; ++i) m(i, j) = d_t<T>(double(small(rng)));
      a.set(k, m);
      extra[std::size_t(k)] = xk::ties;
    } else if (k % 7 == 5 || k % 11 == 6) {
      MatD<T> m = random_d<T>(n, n, rng);
      const double bad = k % 7 == 5 ? std::numeric_limits<double>::quiet_NaN()
                                    : std::numeric_limits<double>::infinity();
      m((k / 3) % n, 0) = d_t<T>(bad);
      a.set(k, m);
      extra[std::size_t(k)] = k % 7 == 5 ? xk::nan : xk::inf;
    } else if (k % 13 == 7 && n >= 3) {
      // -0 entries (both parts for complex), e.g. from negating a matrix
      // with zeros: the warp pivot searches compare the bits of |x|_1, in
      // which -0 once beat every nonzero candidate and gave a false info.
      MatD<T> m = random_d<T>(n, n, rng);
      d_t<T> nz;
      if constexpr (cplx<T>) nz = d_t<T>(-0.0, -0.0);
      else nz = -0.0;
      for (index_t j = 0; j < n; ++j)
        for (index_t i = 0; i < n; ++i)
          if ((j == 0 && i % 3 != 2) || (i + 2 * j) % 5 == 0) m(i, j) = nz;
      a.set(k, m);
      kinds[std::size_t(k)] = kind::random;  // nonsingular: info 0, the generic path's pivots
      extra[std::size_t(k)] = xk::negzero;
    }
  }
  auto d_fast = up(b, a.h), d_gen = up(b, a.h), d_arr = up(b, a.h);
  auto p_fast = make_vector<index_t>(b, n * count), p_gen = make_vector<index_t>(b, n * count),
       p_arr = make_vector<index_t>(b, n * count);
  auto i_fast = make_vector<int>(b, count), i_gen = make_vector<int>(b, count), i_arr = make_vector<int>(b, count);
  batched::lu_factor(b, a.view(d_fast.data()), p_fast.data(), i_fast.data());
  const batched::detail::lu_factor_op<T, batched::detail::strided_loc<T>> gen{
      {d_gen.data(), a.stride}, n, a.ld, p_gen.data(), i_gen.data()};
  batched::detail::launch(b, gen, count, "generic lu_factor");
  std::vector<T*> ptrs;
  for (index_t k = 0; k < count; ++k) ptrs.push_back(d_arr.data() + k * a.stride);
  auto d_ptrs = emgpu_test::upload(b, ptrs);
  batched::lu_factor(b, static_cast<T* const*>(d_ptrs.data()), n, a.ld, count, p_arr.data(), i_arr.data());

  const std::vector<T> ff = down(b, d_fast), fg = down(b, d_gen), fa = down(b, d_arr);
  const std::vector<index_t> pf = down(b, p_fast), pg = down(b, p_gen), pa = down(b, p_arr);
  const std::vector<int> inf_f = down(b, i_fast), inf_g = down(b, i_gen), inf_a = down(b, i_arr);
  // Bitwise, NaN included: compare the bytes.
  REQUIRE(std::memcmp(ff.data(), fa.data(), ff.size() * sizeof(T)) == 0);
  REQUIRE(pf == pa);
  REQUIRE(inf_f == inf_a);
  for (index_t k = 0; k < count; ++k)
    for (index_t j = 0; j < n; ++j)
      for (index_t i = n; i < a.ld; ++i)
        REQUIRE(ff[std::size_t(k * a.stride + i + j * a.ld)] == a.h[std::size_t(k * a.stride + i + j * a.ld)]);
  for (index_t k = 0; k < count; ++k) {
    const xk x = extra[std::size_t(k)];
    INFO("matrix " << k << " (" << kind_name(kinds[std::size_t(k)]) << ", extra " << int(x) << ")");
    const index_t* ppf = pf.data() + k * n;
    const index_t* ppg = pg.data() + k * n;
    for (index_t j = 0; j < n; ++j) REQUIRE((ppf[j] >= j && ppf[j] < n));
    const int ifk = inf_f[std::size_t(k)], igk = inf_g[std::size_t(k)];
    const MatL<T> A = a.get(k), F = a.get(ff, k), G = a.get(fg, k);
    if (x == xk::nan || x == xk::inf) {
      CHECK(ifk == igk);
      for (index_t j = 0; j < n; ++j) CHECK(ppf[j] == ppg[j]);
      continue;
    }
    if (x == xk::ties) {
      INFO("info " << ifk);
      CHECK(lu_backward<T>(A, F, ppf) <= 10);
      REQUIRE((ifk >= 0 && ifk <= n));
      for (index_t j = 0; j < (ifk > 0 ? ifk - 1 : n); ++j) CHECK(F(j, j) != ld_t<T>(0));
      if (ifk > 0) CHECK(F(ifk - 1, ifk - 1) == ld_t<T>(0));
      continue;
    }
    CHECK(ifk == igk);
    CHECK(lu_backward<T>(A, F, ppf) <= 10);
    CHECK(lu_backward<T>(A, G, ppg) <= 10);
    if (kinds[std::size_t(k)] == kind::singular) CHECK(ifk == int(zc[std::size_t(k)] + 1));
    if (kinds[std::size_t(k)] == kind::random) {
      for (index_t j = 0; j < n; ++j) CHECK(ppf[j] == ppg[j]);
      const long double d = fro(F - G) / (fro(G) * n * eps<T>());
      INFO("||F_fast - F_generic|| / (||F|| n eps) = " << double(d));
      CHECK(d <= 10);
    }
  }
}
#endif

}  // namespace

TEMPLATE_LIST_TEST_CASE("batched LU: P A = L U, solves, inverse, info", "[batched][lu]", backends) {
  const TestType b{};
  for (index_t n : sizes()) {
    const index_t c = count_for(n);
    check_lu<complex<double>>(b, n, c, 1000 + n);
    check_lu<double>(b, n, c, 2000 + n);
    check_lu<complex<float>>(b, n, c, 3000 + n);
    check_lu<float>(b, n, c, 4000 + n);
  }
}

TEMPLATE_LIST_TEST_CASE("batched LU: small sizes for compute-sanitizer", "[batched][lu][sanitize]",
                        backends) {
  const TestType b{};
  for (index_t n : small_sizes()) {
    check_lu<complex<double>>(b, n, 4, 5000 + n);
    check_lu<float>(b, n, 4, 6000 + n);
  }
  pointer_array_matches_strided<complex<double>>(b);
}

TEMPLATE_LIST_TEST_CASE("batched LU: partly staged matrices (shared memory too small)",
                        "[batched][lu][sanitize_big]", backends) {
  // complex<double> 128 x 128 needs 264 KB: on CUDA the blocked kernel
  // (lu_blocked.hpp) keeps its leading columns in global memory and stages
  // the rest; the team path's partial staging is compared in fast_vs_generic.
  const TestType b{};
  check_lu<complex<double>>(b, 128, 2, 7000);
}

TEMPLATE_LIST_TEST_CASE("batched LU: pointer arrays match strided batches", "[batched][lu]", backends) {
  const TestType b{};
  pointer_array_matches_strided<complex<double>>(b);
  pointer_array_matches_strided<float>(b);
}

TEMPLATE_LIST_TEST_CASE("batched LU: all-zero and exactly singular matrices keep the batch intact",
                        "[batched][lu][sanitize]", backends) {
  const TestType b{};
  using T = complex<double>;
  // n = 32: the CUDA panel + tensor-core kernel, whose masked steps must
  // leave an all-zero matrix and the rest of the batch alone.
  const index_t n = GENERATE(index_t(5), index_t(32)), count = 5;
  INFO("n = " << n);
  std::mt19937_64 rng(11);
  batch<T> a(n, n, count);
  a.set(0, random_d<T>(n, n, rng));
  a.set(1, MatD<T>::Zero(n, n));  // info 1
  MatD<T> z = random_d<T>(n, n, rng);
  z.row(2).setZero();  // a zero row: the last pivot vanishes, info n
  a.set(2, z);
  a.set(3, random_d<T>(n, n, rng));
  // -0 counts as 0: column 0 is -0 but for its last row, the first pivot
  // (a -0 entry once won the CUDA kernels' search on its sign bit).
  MatD<T> nz = random_d<T>(n, n, rng);
  for (index_t i = 0; i + 1 < n; ++i) nz(i, 0) = d_t<T>(-0.0, -0.0);
  a.set(4, nz);
  auto d = up(b, a.h);
  auto piv = make_vector<index_t>(b, n * count);
  auto info = make_vector<int>(b, count);
  batched::lu_factor(b, a.view(d.data()), piv.data(), info.data());
  const std::vector<int> h = down(b, info);
  CHECK(h[0] == 0);
  CHECK(h[1] == 1);
  CHECK(h[2] == int(n));
  CHECK(h[3] == 0);
  CHECK(h[4] == 0);
  CHECK(down(b, piv)[std::size_t(4 * n)] == n - 1);
  const std::vector<T> f = down(b, d);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < n; ++i) CHECK(f[std::size_t(a.stride + i + j * a.ld)] == T(0));
}

TEMPLATE_LIST_TEST_CASE("batched LU: argument errors throw invalid_argument", "[batched][lu]",
                        backends) {
  const TestType b{};
  using T = double;
  auto d = make_vector<T>(b, 64);
  auto piv = make_vector<index_t>(b, 16);
  auto info = make_vector<int>(b, 4);
  const strided_batch_view<T> good{d.data(), 4, 4, 4, 16, 4};
  REQUIRE_NOTHROW(batched::lu_factor(b, good, piv.data(), info.data()));
  auto bad = good;
  bad.rows = -1;
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  bad = good;
  bad.ld = 3;
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  bad = good;
  bad.cols = 3;
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  bad = good;
  bad.stride = 8;  // overlapping matrices
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  bad = good;
  bad.data = nullptr;
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(b, good, static_cast<index_t*>(nullptr), info.data()),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(b, good, piv.data(), static_cast<int*>(nullptr)),
                    emgpu::invalid_argument);
  bad = good;
  bad.stride = index_t(1) << 60;  // cannot be addressed
  REQUIRE_THROWS_AS(batched::lu_factor(b, bad, piv.data(), info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(b, static_cast<T* const*>(nullptr), 4, 4, 4, piv.data(), info.data()),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::lu_factor(b, static_cast<T* const*>(nullptr), 4, 2, 4, piv.data(), info.data()),
                    emgpu::invalid_argument);
  auto rhs = make_vector<T>(b, 64);
  const strided_batch_view<T> r{rhs.data(), 5, 1, 5, 5, 4};  // 5 rows vs n = 4
  REQUIRE_THROWS_AS(batched::lu_solve(b, good, piv.data(), r), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::inverse(b, good, piv.data(), good), emgpu::invalid_argument);
  // rhs on the factors themselves (regression: accepted, garbage solution)
  REQUIRE_THROWS_AS(batched::lu_solve(b, good, piv.data(), good), emgpu::invalid_argument);
  // Sizes whose products overflow index_t: rejected before any arithmetic
  // on them (regression: signed overflow, UB, in the checks themselves).
  const index_t huge = index_t(1) << 32;
  REQUIRE_THROWS_AS(batched::lu_factor(b, strided_batch_view<T>{d.data(), huge, huge, huge, 0, 1}, piv.data(),
                                       info.data()),
                    emgpu::invalid_argument);
  {
    T* one[1] = {d.data()};
    auto arr = up(b, std::vector<T*>(one, one + 1));
    REQUIRE_THROWS_AS(batched::lu_factor(b, arr.data(), huge, huge, 1, piv.data(), info.data()),
                      emgpu::invalid_argument);
  }
  // An empty batch is fine and touches nothing.
  const strided_batch_view<T> empty{nullptr, 4, 4, 4, 16, 0};
  REQUIRE_NOTHROW(batched::lu_factor(b, empty, static_cast<index_t*>(nullptr), static_cast<int*>(nullptr)));
}

TEMPLATE_LIST_TEST_CASE("batched LU: a million 2 x 2 matrices against the closed form",
                        "[batched][lu]", backends) {
  // The grid / batch indexing at the largest batch size (10^6 on the
  // GPU; 10^5 on the CPU to keep the suite quick). For 2 x 2 the factors have
  // a closed form: pivot row = larger |re|+|im| in column 0 (row 0 on ties),
  // l = a10 / a00, u11 = a11 - l a01 (after the swap); rounding differs only
  // by FMA contraction, hence the 4 eps (|a11| + |l a01|) bound.
  const TestType b{};
  using T = complex<double>;
  const index_t count = cpu_or_gpu(100000, 1000000);
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> h(static_cast<std::size_t>(4 * count));
  for (auto& x : h) x = T(u(rng), u(rng));
  auto d = up(b, h);
  auto piv = make_vector<index_t>(b, 2 * count);
  auto info = make_vector<int>(b, count);
  batched::lu_factor(b, strided_batch_view<T>{d.data(), 2, 2, 2, 4, count}, piv.data(), info.data());
  const std::vector<T> f = down(b, d);
  const std::vector<index_t> p = down(b, piv);
  const std::vector<int> inf = down(b, info);
  const auto abs1 = [](T z) { return std::abs(z.real()) + std::abs(z.imag()); };
  index_t bad = 0;
  for (index_t k = 0; k < count; ++k) {
    const T* a = h.data() + 4 * k;
    const bool sw = abs1(a[1]) > abs1(a[0]);
    const T a00 = sw ? a[1] : a[0], a10 = sw ? a[0] : a[1], a01 = sw ? a[3] : a[2], a11 = sw ? a[2] : a[3];
    const T l = a10 * (T(1) / a00);
    const T u11 = a11 - l * a01;
    const T* r = f.data() + 4 * k;
    const double tol = 4 * std::numeric_limits<double>::epsilon() * (abs(a11) + abs(l * a01));
    const bool ok = p[std::size_t(2 * k)] == (sw ? 1 : 0) && p[std::size_t(2 * k + 1)] == 1 &&
                    inf[std::size_t(k)] == 0 && r[0] == a00 && r[2] == a01 &&
                    abs(r[1] - l) <= 4 * std::numeric_limits<double>::epsilon() * abs(l) && abs(r[3] - u11) <= tol;
    bad += ok ? 0 : 1;
  }
  CHECK(bad == 0);
}

#if defined(EMGPU_TEST_CUDA)
TEST_CASE("batched LU: CUDA register fast path matches the generic team path",
          "[batched][lu][sanitize]") {
  // 37 matrices: a partial last block for every N and partial warps for N < 32.
  for (index_t n = 1; n <= 32; ++n) {
    fast_vs_generic<complex<double>>(n, 37, 8000 + n);
    fast_vs_generic<float>(n, 37, 9000 + n);
  }
  fast_vs_generic<double>(32, 37, 9100);
  // n = 17..32 in double runs the tensor-core kernel (lu_mma.hpp) as
  // complex<double> does: a size per panel count and partial panel.
  for (index_t n : {17, 20, 24, 25, 31}) fast_vs_generic<double>(n, 37, 9300 + n);
  fast_vs_generic<complex<float>>(32, 37, 9200);
  // The 12- and 24-column register kernels (n = 9..12 all types, 17..24
  // the float types; complex<double> and float run every n above), and
  // complex<float>'s 20 and 28 columns.
  for (index_t n : {17, 20, 21, 24, 25, 28}) fast_vs_generic<complex<float>>(n, 37, 9210 + n);
  for (index_t n : {9, 10, 12}) {
    fast_vs_generic<complex<float>>(n, 37, 9240 + n);
    fast_vs_generic<double>(n, 37, 9260 + n);
  }
  // n = 33..64: the two-warp tensor-core kernel for complex<double> and
  // double (every size's padding and last-panel width), the
  // one-block-per-matrix register kernel for the single-precision types.
  for (index_t n = 33; n <= 64; ++n) {
    fast_vs_generic<complex<double>>(n, 37, 8100 + n);
    if (n % 4 == 1 || n == 64) fast_vs_generic<float>(n, 37, 9100 + n);
  }
  for (index_t n : {33, 40, 47, 56, 64}) fast_vs_generic<double>(n, 37, 9130 + n);
  fast_vs_generic<complex<float>>(47, 37, 9247);
  fast_vs_generic<double>(13, 37, 9113);
  fast_vs_generic<complex<float>>(5, 37, 9205);
}

TEST_CASE("batched LU: CUDA paths for n = 65..128 match the generic team path", "[batched][lu]") {
  // Every width of the last panel (n mod 8 = 1..7, 0) and of the last
  // 32-column window: double and complex<double> run the tensor-core
  // kernels of lu_mma.hpp, a window of 32 columns in shared memory and the
  // rest in global memory from n = 65 (complex<double>) or 89 (double)
  // (lu_mma_gkernel: 3 windows up to 96, 4 above), the whole matrix in
  // shared memory below (double: 3 warps up to 88). The single-precision
  // types take the blocked kernel.
  for (index_t n : {65, 66, 67, 68, 69, 70, 71, 72, 79, 80, 81, 88, 96, 97, 100, 111, 112, 113, 120, 127, 128})
    fast_vs_generic<complex<double>>(n, 37, 8300 + std::uint64_t(n));
  fast_vs_generic<float>(100, 37, 9400);
  fast_vs_generic<float>(128, 37, 9428);
  fast_vs_generic<double>(77, 37, 9477);
  for (index_t n : {79, 80, 88, 89, 96, 97, 112, 128}) fast_vs_generic<double>(n, 37, 9480 + std::uint64_t(n));
  fast_vs_generic<complex<float>>(128, 37, 9528);
}

// Shared memory per block of smaller GPUs (A100 163 KB, sm_86/89 99 KB, any
// device 48 KB): which kernel runs and how much of a matrix is staged depend
// on it, so these run the paths such a GPU takes. complex<double> n = 64
// stays in shared memory up to 99 KB and takes the register kernel at 48;
// n >= 65 takes 32-column windows at 163 and 99 KB, 16-column windows at 48
// (lu_mma_gkernel); the single-precision
// types at n = 128 keep leading columns in global memory (the blocked
// kernel); the tile launch of n <= 32 fits fewer matrices per block. Checked against the generic path (same cap) and, independently, by
// the backward error of check_lu.
TEST_CASE("batched LU: CUDA paths under the shared memory of smaller GPUs", "[batched][lu]") {
  for (std::size_t cap : {std::size_t(163) << 10, std::size_t(99) << 10, std::size_t(48) << 10}) {
    INFO("shared memory capped at " << (cap >> 10) << " KB");
    const batched::detail::smem_cap_scope scope(cap);
    for (index_t n : {16, 32, 64, 65, 100, 127, 128}) fast_vs_generic<complex<double>>(n, 11, 8600 + n);
    fast_vs_generic<float>(128, 11, 8728);
    check_lu<complex<double>>(backend::cuda{}, 128, 3, 8800);
    check_lu<complex<double>>(backend::cuda{}, 100, 3, 8801);
  }
}

TEST_CASE("batched LU: CUDA paths for n = 65..128 at compute-sanitizer sizes", "[batched][lu][sanitize]") {
  fast_vs_generic<complex<double>>(65, 6, 8465);   // 32-column windows, 1-column last one
  fast_vs_generic<double>(80, 6, 9580);            // whole matrix in shared memory, 3 warps
  fast_vs_generic<complex<double>>(99, 6, 8499);   // 32-column windows, 3-column last one
  fast_vs_generic<complex<double>>(120, 6, 8520);  // 32-column windows
  fast_vs_generic<double>(112, 6, 9512);
  fast_vs_generic<complex<double>>(128, 6, 8528);
  fast_vs_generic<float>(70, 6, 9570);             // blocked kernel
  fast_vs_generic<complex<float>>(128, 6, 9628);
}

TEST_CASE("batched LU: CUDA paths under a 48 KB shared-memory cap (compute-sanitizer sizes)",
          "[batched][lu][sanitize]") {
  const batched::detail::smem_cap_scope scope(std::size_t(48) << 10);
  fast_vs_generic<complex<double>>(128, 3, 8928);  // 16-column windows
  fast_vs_generic<complex<double>>(80, 3, 8980);
  fast_vs_generic<complex<float>>(128, 3, 8929);   // blocked kernel, leading columns in global memory
  fast_vs_generic<complex<double>>(32, 3, 8932);
}
#endif
