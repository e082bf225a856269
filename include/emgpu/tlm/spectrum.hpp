/// @file
/// @brief Host-side signal tools for resonance work: a radix-2 FFT, the
///        zero-padded, windowed spectrum of a probe series, a DFT at chosen
///        frequencies, and a peak finder that refines each peak by maximising
///        the windowed discrete-time Fourier transform.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "../core/constants.hpp"
#include "../core/error.hpp"

namespace emgpu::tlm {

/// @brief Window applied to a series before transforming it.
/// hann: sidelobes fall as 1/f^3, so well separated resonances barely pull on
/// each other's peaks; rectangular: best resolution, strong leakage.
enum class window { rectangular, hann };

/// @brief In-place radix-2 FFT, X_k = sum_n x_n exp(-2 pi j k n / N) (or +j
///        with inverse = true, unscaled).
/// @throws emgpu::invalid_argument when the size is not a power of two.
inline void fft(std::vector<std::complex<double>>& a, bool inverse = false) {
  const std::size_t n = a.size();
  emgpu::detail::require(n > 0 && (n & (n - 1)) == 0, "emgpu::tlm::fft: size must be a power of two");
  for (std::size_t i = 1, j = 0; i < n; ++i) {  // bit reversal
    std::size_t bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::size_t len = 2; len <= n; len <<= 1) {
    const double ang = (inverse ? 2.0 : -2.0) * constants::pi / double(len);
    const std::size_t half = len / 2;
    // Twiddles from cos/sin directly (not by repeated multiplication) so the
    // rounding error stays O(eps log N).
    std::vector<std::complex<double>> w(half);
    for (std::size_t k = 0; k < half; ++k) w[k] = std::polar(1.0, ang * double(k));
    for (std::size_t i = 0; i < n; i += len)
      for (std::size_t k = 0; k < half; ++k) {
        const auto u = a[i + k], t = a[i + k + half] * w[k];
        a[i + k] = u + t;
        a[i + k + half] = u - t;
      }
  }
}

/// @brief Window weight of sample n of N.
inline double window_weight(window w, std::size_t n, std::size_t count) {
  if (w == window::rectangular || count < 2) return 1.0;
  return 0.5 * (1.0 - std::cos(2.0 * constants::pi * double(n) / double(count - 1)));
}

/// @brief Sum_n w_n x_n exp(-j 2 pi f n dt) dt: the windowed DTFT at one frequency.
inline std::complex<double> dft_at(const std::vector<double>& x, double dt, double f,
                                   window w = window::rectangular) {
  std::complex<double> acc = 0;
  const double ang = -2.0 * constants::pi * f * dt;
  for (std::size_t n = 0; n < x.size(); ++n)
    acc += window_weight(w, n, x.size()) * x[n] * std::polar(1.0, ang * double(n));
  return acc * dt;
}

/// @brief Amplitude spectrum of a real series sampled at dt.
struct spectrum {
  std::vector<double> frequency;  ///< Hz, 0 .. 1/(2 dt)
  std::vector<double> magnitude;  ///< |X(f)| dt (windowed, zero-padded)
};

/// @brief Windowed spectrum, zero-padded to the next power of two >= pad * N
///        so the peaks are finely sampled.
/// @throws emgpu::invalid_argument for an empty series, dt <= 0 or pad < 1.
inline spectrum compute_spectrum(const std::vector<double>& x, double dt, int pad = 4,
                                 window w = window::hann) {
  emgpu::detail::require(!x.empty(), "emgpu::tlm::compute_spectrum: empty series");
  emgpu::detail::require(std::isfinite(dt) && dt > 0 && pad >= 1,
                  "emgpu::tlm::compute_spectrum: dt must be > 0 and pad >= 1");
  std::size_t m = 1;
  while (m < x.size() * std::size_t(pad)) m <<= 1;
  std::vector<std::complex<double>> a(m, 0.0);
  for (std::size_t n = 0; n < x.size(); ++n) a[n] = window_weight(w, n, x.size()) * x[n];
  fft(a);
  spectrum s;
  s.frequency.resize(m / 2 + 1);
  s.magnitude.resize(m / 2 + 1);
  for (std::size_t k = 0; k <= m / 2; ++k) {
    s.frequency[k] = double(k) / (double(m) * dt);
    s.magnitude[k] = std::abs(a[k]) * dt;
  }
  return s;
}

/// @brief A spectral peak.
struct peak {
  double frequency;  ///< Hz (refined)
  double magnitude;  ///< windowed |X| at that frequency
};

/// @brief Frequency in [lo, hi] maximising the windowed |DTFT| of x, by golden
///        section search (the peak must be the only maximum in the bracket).
inline double refine_peak(const std::vector<double>& x, double dt, double lo, double hi,
                          window w = window::hann) {
  const double g = 0.5 * (std::sqrt(5.0) - 1.0);
  double a = lo, b = hi;
  double c = b - g * (b - a), d = a + g * (b - a);
  double fc = std::abs(dft_at(x, dt, c, w)), fd = std::abs(dft_at(x, dt, d, w));
  for (int it = 0; it < 200 && (b - a) > 1e-12 * std::abs(b); ++it) {
    if (fc > fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - g * (b - a);
      fc = std::abs(dft_at(x, dt, c, w));
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + g * (b - a);
      fd = std::abs(dft_at(x, dt, d, w));
    }
  }
  return 0.5 * (a + b);
}

/// @brief Resonances of a probe series: local maxima of the zero-padded Hann
///        spectrum in [fmin, fmax] at least `threshold` times the largest one
///        there, each refined with refine_peak between its neighbouring
///        spectrum samples; sorted by frequency. A maximum within 8 resolution
///        bins (1 / (N dt)) of a peak 30 times stronger is dropped: that is
///        where the Hann window's sidelobes lie (-31 dB and below).
/// @throws emgpu::invalid_argument as compute_spectrum, or if fmin >= fmax.
inline std::vector<peak> find_peaks(const std::vector<double>& x, double dt, double fmin,
                                    double fmax, double threshold = 1e-3, int pad = 8) {
  emgpu::detail::require(fmin < fmax, "emgpu::tlm::find_peaks: fmin must be < fmax");
  const spectrum s = compute_spectrum(x, dt, pad, window::hann);
  double top = 0;
  for (std::size_t k = 0; k < s.frequency.size(); ++k)
    if (s.frequency[k] >= fmin && s.frequency[k] <= fmax) top = std::max(top, s.magnitude[k]);
  std::vector<std::size_t> cand;
  for (std::size_t k = 1; k + 1 < s.frequency.size(); ++k) {
    if (s.frequency[k] < fmin || s.frequency[k] > fmax) continue;
    const double m = s.magnitude[k];
    if (m > s.magnitude[k - 1] && m >= s.magnitude[k + 1] && m >= threshold * top && m > 0)
      cand.push_back(k);
  }
  const double bin = 1.0 / (double(x.size()) * dt);
  std::vector<peak> out;
  for (std::size_t a : cand) {
    bool sidelobe = false;
    for (std::size_t b : cand)
      if (b != a && std::abs(s.frequency[b] - s.frequency[a]) < 8 * bin &&
          s.magnitude[a] * 30 < s.magnitude[b])
        sidelobe = true;
    if (sidelobe) continue;
    const double f = refine_peak(x, dt, s.frequency[a - 1], s.frequency[a + 1], window::hann);
    out.push_back({f, std::abs(dft_at(x, dt, f, window::hann))});
  }
  return out;
}

}  // namespace emgpu::tlm
