// The special functions of the special family (ops/special.h), once, for the
// CPU kernels and the CUDA kernels alike: every function is AOTRT_HOST_DEVICE
// inline (core/host_device.h: __host__ __device__ under nvcc) and uses only
// C math functions CUDA also has on the device, so the CPU rows of the unit
// tests test the exact arithmetic the GPU runs.
//
// Note [Special function math]
// Written from the published algorithms, not from ATen's or Cephes' source:
// - digamma: reflection psi(x) = psi(1-x) - pi/tan(pi x) for x < 0, the
//   recurrence psi(x) = psi(x+1) - 1/x up to x >= 10, then the asymptotic
//   series in Bernoulli numbers (A&S 6.3.18). trigamma likewise (A&S 6.4.7,
//   6.4.6, 6.4.12). polygamma(n >= 2, x) = (-1)^(n+1) n! zeta(n+1, x).
// - zeta(x, q) (Hurwitz): the direct sum up to q+N > 9 (N >= 9), then
//   Euler-Maclaurin with the Bernoulli numbers B2..B24.
// - igamma / igammac (regularised P(a, x) and Q(a, x)): the power series
//   for x < a + 1, else Legendre's continued fraction by the modified Lentz
//   method (Numerical Recipes 6.2), the prefactor x^a e^-x / Gamma(a) as
//   exp(a log x - x - lgamma a), whose rounding grows with a: 1e-13 relative
//   at a = 100, 1e-9 at a = 10^6, 3e-8 at a = 10^8, 7e-6 at a = 10^10
//   (ATen's uniform asymptotic expansion for large a stays near 1e-9 there).
// - i0e, i1e: the power series of I0, I1 for |x| <= 20, the asymptotic
//   expansion (A&S 9.7.1) beyond; every term of both is positive for I0.
// - K0, K1 (and e^x K0, e^x K1): the series A&S 9.6.13/9.6.11 for x <= 2,
//   Steed's continued fraction CF2 (Temme 1975; Numerical Recipes 6.7) beyond.
// - airy_ai: the Maclaurin series (A&S 10.4.2) for -2.08 < x < 2.08;
//   Ai(x) = sqrt(x/3)/pi K_{1/3}(zeta), zeta = 2/3 x^{3/2}, by the same CF2
//   for x >= 2.08; Ai(-z) = sqrt(z)/2 [J_{1/3}(zeta) - Y_{1/3}(zeta)/sqrt 3]
//   by Steed's CF1 + complex CF2 (Numerical Recipes 6.7) for zeta in [2, 18),
//   and the oscillatory asymptotic expansion (A&S 10.4.60) from zeta 18 on.
// - ndtri: A&S 26.2.23's rational guess refined by Halley's method on
//   Phi(x) - p (erf near p = 1/2, erfc in the tails; p > 1/2 through 1 - p,
//   which is exact there).
// - spherical_bessel_j0: sin(x)/x, its Taylor series for |x| < 1/2.
// - the orthogonal polynomials: their three-term recurrences; n < 0 gives 0;
//   the endpoint values ATen gives; for the Chebyshev kinds on |x| < 1 and
//   n above ATen's thresholds (6, 8), the trigonometric forms (T_n = cos n t,
//   U_n = sin (n+1)t / sin t, V_n = cos (n+1/2)t / cos t/2,
//   W_n = sin (n+1/2)t / sin t/2, t = acos x), as ATen does, which bounds the
//   work. n is the given value truncated to an integer; NaN (and values
//   outside int64) count as negative, as ATen's CPU conversion makes them.
//   A recurrence that reaches NaN (inf - inf after overflow) stops there:
//   NaN stays NaN, so the result is the one the full loop gives. A NaN x
//   gives NaN (ATen's U, W, shifted T, Legendre and Laguerre kernels return
//   an uninitialised value there for n >= 2).
//
// Every function computes in double, whatever the tensor's dtype (float32,
// and float16/bfloat16, are converted to double and rounded back): these are
// not ATen's algorithms, so matching ATen's float rounding is not possible
// anyway; in double each result is within a few units of the true value's
// float rounding, so the comparison with ATen's float kernels sees ATen's own
// float error only (igamma's prefactor in float would lose 1e-5 relative at
// a = 100). The H200 computes double at half its float rate; these kernels
// are light next to memory traffic.
#pragma once

#include <math.h>

#include <cstdint>

#include "core/host_device.h"

namespace aotrt::ops {

enum class SpecialOp {
  // unary (polygamma takes its order n beside x)
  kDigamma,
  kPolygamma,
  kAiryAi,
  kI0e,
  kI1e,
  kNdtri,
  kBesselK0,
  kBesselK1,
  kScaledBesselK0,
  kScaledBesselK1,
  kSphericalBesselJ0,
  // binary
  kIgamma,
  kIgammac,
  kZeta,
  kChebyshevT,
  kChebyshevU,
  kChebyshevV,
  kChebyshevW,
  kShiftedChebyshevT,
  kShiftedChebyshevU,
  kShiftedChebyshevV,
  kShiftedChebyshevW,
  kHermiteH,
  kHermiteHe,
  kLaguerreL,
  kLegendreP,
};

namespace special_math {

constexpr double kPi = 3.14159265358979323846;
constexpr double kEps = 1.1102230246251565e-16;  // 2^-53
constexpr double kEulerGamma = 0.57721566490153286061;
constexpr double kTiny = 1e-300;  // Lentz's guard against a zero denominator

// math.h's macros: std::numeric_limits is host-only for nvcc (without
// --expt-relaxed-constexpr).
AOTRT_HOST_DEVICE inline double inf() { return static_cast<double>(INFINITY); }
AOTRT_HOST_DEVICE inline double nan() { return static_cast<double>(NAN); }
AOTRT_HOST_DEVICE inline bool is_nan(double x) { return x != x; }
AOTRT_HOST_DEVICE inline bool is_inf(double x) { return ::fabs(x) == inf(); }

AOTRT_HOST_DEVICE inline double log_gamma(double x) {
#if defined(__CUDA_ARCH__)
  return ::lgamma(x);
#else
  int sign = 0;
  return ::lgamma_r(x, &sign);  // lgamma writes the global signgam: not thread-safe
#endif
}

// --- digamma, trigamma, zeta, polygamma --------------------------------------------------

AOTRT_HOST_DEVICE inline double digamma(double x) {
  if (is_nan(x)) return x;
  if (x == 0) return ::copysign(inf(), -x);  // ATen: -inf at +0, inf at -0
  double shift = 0;
  if (x < 0) {
    if (x == ::floor(x)) return nan();  // the poles at the negative integers
    // psi(x) = psi(1 - x) - pi / tan(pi x); tan(pi r), r = x - round(x), keeps
    // the digits that pi * x would lose.
    shift = -kPi / ::tan(kPi * (x - ::round(x)));
    x = 1 - x;
  }
  while (x < 10) {
    shift -= 1 / x;
    x += 1;
  }
  if (is_inf(x)) return x + shift;
  // psi(x) ~ log x - 1/(2x) - sum B_2k / (2k x^2k)
  const double y = 1 / (x * x);
  const double series =
      y * (1.0 / 12 -
           y * (1.0 / 120 -
                y * (1.0 / 252 -
                     y * (1.0 / 240 - y * (1.0 / 132 - y * (691.0 / 32760 - y * (1.0 / 12)))))));
  return shift + ::log(x) - 0.5 / x - series;
}

AOTRT_HOST_DEVICE inline double trigamma(double x) {
  if (is_nan(x)) return x;
  double value = 0, sign = 1;
  if (x < 0.5) {
    // psi1(x) = pi^2 / sin^2(pi x) - psi1(1 - x); +inf at the poles (x <= 0
    // integers), NaN at -inf (as ATen).
    if (is_inf(x)) return nan();
    if (x == ::floor(x)) return inf();
    const double s = ::sin(kPi * (x - ::round(x)));
    value = kPi * kPi / (s * s);
    sign = -1;
    x = 1 - x;
  }
  double tail = 0;
  while (x < 10) {
    tail += 1 / (x * x);
    x += 1;
  }
  // psi1(x) ~ 1/x + 1/(2x^2) + sum B_2k / x^(2k+1)
  const double y = 1 / (x * x);
  const double series =
      y * (1.0 / 6 -
           y * (1.0 / 30 -
                y * (1.0 / 42 -
                     y * (1.0 / 30 - y * (5.0 / 66 - y * (691.0 / 2730 - y * (7.0 / 6)))))));
  tail += (1 + 0.5 / x + series) / x;
  return value + sign * tail;
}

// Hurwitz zeta(x, q) = sum_k (q + k)^-x.
AOTRT_HOST_DEVICE inline double zeta(double x, double q) {
  // ATen's order of checks (so zeta(1, NaN) is inf); NaN otherwise
  // propagates through the sums.
  if (x == 1) return inf();
  if (x < 1) return nan();
  if (q <= 0) {
    if (q == ::floor(q)) return inf();  // a term 0^-x
    if (x != ::floor(x)) return nan();  // (q + k)^-x is not real
  }
  if (q == inf()) return nan();  // as ATen's Euler-Maclaurin tail gives it (0 * inf)
  // (2k)! / B_2k, k = 1..12
  constexpr double kFactorialOverBernoulli[12] = {
      12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1892437580.3183792, 74724249600.0,
      -2950130727918.164, 116467828143500.67, -4597978722407473.0, 1.8152105401943546e+17,
      -7.166165256175667e+18};
  double sum = ::pow(q, -x);
  double a = q, term = 0;
  int k = 0;
  while (k < 9 || a <= 9) {
    ++k;
    a += 1;
    term = ::pow(a, -x);
    sum += term;
    if (::fabs(term) < kEps * ::fabs(sum)) return sum;  // strict: a zero sum goes on
  }
  // Euler-Maclaurin for sum_{j >= 0} (a + j)^-x, of which the sum holds a^-x:
  // a^(1-x)/(x-1) - a^-x/2 + sum_j B_2j/(2j)! x(x+1)..(x+2j-2) a^(-x-2j+1).
  sum += term * a / (x - 1) - 0.5 * term;
  double rising = 1, power = term;  // x(x+1)..(x+2j-2) and a^(-x-2j+1)
  double m = 0;
  for (int j = 0; j < 12; ++j) {
    rising *= x + m;
    power /= a;
    const double t = rising * power / kFactorialOverBernoulli[j];
    sum += t;
    if (::fabs(t) < kEps * ::fabs(sum)) break;
    m += 1;
    rising *= x + m;
    power /= a;
    m += 1;
  }
  return sum;
}

AOTRT_HOST_DEVICE inline double polygamma(int64_t n, double x) {
  if (n == 0) return digamma(x);
  if (n == 1) return trigamma(x);
  const double sign = (n % 2) ? 1.0 : -1.0;
  return sign * ::exp(log_gamma(static_cast<double>(n) + 1)) * zeta(static_cast<double>(n) + 1, x);
}

// --- incomplete gamma ---------------------------------------------------------------------

// Near x = a both the series and the fraction need ~9 sqrt(a) terms: 10^7
// serves a up to ~10^12. Other elements stop when they converge.
constexpr int kMaxIterations = 10000000;

// x^a e^-x / Gamma(a)
AOTRT_HOST_DEVICE inline double gamma_prefactor(double a, double x) {
  return ::exp(a * ::log(x) - x - log_gamma(a));
}

// P(a, x) by its series, for x < a + 1.
AOTRT_HOST_DEVICE inline double igamma_series(double a, double x) {
  double term = 1 / a, sum = term, ap = a;
  for (int i = 0; i < kMaxIterations; ++i) {
    ap += 1;
    term *= x / ap;
    sum += term;
    if (::fabs(term) <= kEps * ::fabs(sum)) break;
  }
  return sum * gamma_prefactor(a, x);
}

// Q(a, x) by Legendre's continued fraction (modified Lentz), for x >= a + 1.
AOTRT_HOST_DEVICE inline double igammac_fraction(double a, double x) {
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxIterations; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (::fabs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = d * c;
    h *= step;
    if (::fabs(step - 1) <= kEps) break;
  }
  return h * gamma_prefactor(a, x);
}

// ATen's domain, checked in its order: NaN for a or x negative; P(0, x > 0)
// = 1, P(0, 0) NaN; P(a, 0) = 0; P(inf, inf) NaN, P(inf, x) = 0; P(a, inf) =
// 1; then NaN for a NaN a or x.
AOTRT_HOST_DEVICE inline double igamma(double a, double x) {
  if (a < 0 || x < 0) return nan();
  if (a == 0) return x > 0 ? 1.0 : nan();
  if (x == 0) return 0;
  if (is_inf(a)) return is_inf(x) ? nan() : 0.0;  // igamma(inf, NaN) is 0, as ATen
  if (is_inf(x)) return 1;
  if (is_nan(a) || is_nan(x)) return nan();
  return x < a + 1 ? igamma_series(a, x) : 1 - igammac_fraction(a, x);
}

AOTRT_HOST_DEVICE inline double igammac(double a, double x) {
  if (a < 0 || x < 0) return nan();
  if (a == 0) return x > 0 ? 0.0 : nan();
  if (x == 0) return 1;
  if (is_inf(a)) return is_inf(x) ? nan() : 1.0;
  if (is_inf(x)) return 0;
  if (is_nan(a) || is_nan(x)) return nan();
  return x < a + 1 ? 1 - igamma_series(a, x) : igammac_fraction(a, x);
}

// --- modified Bessel functions ---------------------------------------------------------------

// e^-|x| I_nu(|x|) for nu = 0, 1 (the sign of x is the caller's).
AOTRT_HOST_DEVICE inline double scaled_bessel_i(int nu, double x) {
  x = ::fabs(x);
  if (is_inf(x)) return 0;
  if (x <= 20) {
    // I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!)
    const double q = 0.25 * x * x;
    double term = nu == 0 ? 1.0 : 0.5 * x, sum = term;
    for (int k = 1; k < 500; ++k) {
      term *= q / (k * static_cast<double>(k + nu));
      sum += term;
      if (term <= kEps * sum) break;
    }
    return sum * ::exp(-x);
  }
  // e^-x I_nu(x) ~ (2 pi x)^-1/2 sum_k (-1)^k a_k(nu) / x^k
  const double mu = 4.0 * nu * nu;
  double term = 1, sum = 1;
  for (int k = 1; k < 60; ++k) {
    const double odd = 2.0 * k - 1;
    term *= (odd * odd - mu) / (8.0 * k * x);
    sum += term;
    if (::fabs(term) <= kEps * ::fabs(sum)) break;
  }
  return sum / ::sqrt(2 * kPi * x);
}

AOTRT_HOST_DEVICE inline double i0e(double x) {
  if (is_nan(x)) return x;
  return scaled_bessel_i(0, x);
}

AOTRT_HOST_DEVICE inline double i1e(double x) {
  if (is_nan(x)) return x;
  const double v = scaled_bessel_i(1, x);
  return x < 0 ? -v : v;
}

// e^x K_mu(x) and e^x K_{mu+1}(x) for x >= ~1, |mu| <= 1/2, by Steed's CF2.
struct BesselKPair {
  double k_mu, k_mu1;
};
AOTRT_HOST_DEVICE inline BesselKPair scaled_bessel_k_cf2(double mu, double x) {
  const double a1 = 0.25 - mu * mu;
  double b = 2 * (1 + x), d = 1 / b, delh = d, h = d;
  double q1 = 0, q2 = 1, q = a1, c = a1, a = -a1;
  double s = 1 + q * delh;
  for (int i = 1; i < kMaxIterations; ++i) {
    a -= 2 * i;
    c = -a * c / (i + 1.0);
    const double qnew = (q1 - b * q2) / a;
    q1 = q2;
    q2 = qnew;
    q += c * qnew;
    b += 2;
    d = 1 / (b + a * d);
    delh = (b * d - 1) * delh;
    h += delh;
    const double dels = q * delh;
    s += dels;
    if (::fabs(dels) <= kEps * ::fabs(s)) break;
  }
  const double k_mu = ::sqrt(kPi / (2 * x)) / s;
  return {k_mu, k_mu * (mu + x + 0.5 - a1 * h) / x};
}

// K_nu(x), nu = 0 or 1, by A&S 9.6.13 / 9.6.11 for 0 < x <= 2.
AOTRT_HOST_DEVICE inline double bessel_k_series(int nu, double x) {
  const double q = 0.25 * x * x, log_half = ::log(0.5 * x);
  // sum_k c_k (x^2/4)^k / (k! (k+nu)!), c_k = psi(k+1) [+ psi(k+2) for nu 1],
  // and I_nu(x) from the same terms.
  double term = 1, psi_k = -kEulerGamma, psi_k1 = 1 - kEulerGamma;
  double sum = nu == 0 ? psi_k : psi_k + psi_k1, bessel_i = 1;
  for (int k = 1; k < 500; ++k) {
    term *= q / (k * static_cast<double>(k + nu));
    psi_k += 1.0 / k;
    psi_k1 += 1.0 / (k + 1);
    const double t = term * (nu == 0 ? psi_k : psi_k + psi_k1);
    sum += t;
    bessel_i += term;
    if (::fabs(t) <= kEps * ::fabs(sum) && term <= kEps * bessel_i) break;
  }
  if (nu == 0) return -log_half * bessel_i + sum;
  // K1 = 1/x + ln(x/2) I1(x) - (x/4) sum
  return 1 / x + log_half * (0.5 * x * bessel_i) - 0.25 * x * sum;
}

// K_nu(x) (scaled: e^x K_nu(x)), nu = 0 or 1: NaN for x < 0, inf at 0.
AOTRT_HOST_DEVICE inline double bessel_k(int nu, double x, bool scaled) {
  if (is_nan(x)) return x;
  if (x < 0) return nan();
  if (x == 0) return inf();
  if (is_inf(x)) return 0;
  if (x <= 2) {
    const double k = bessel_k_series(nu, x);
    return scaled ? k * ::exp(x) : k;
  }
  const BesselKPair p = scaled_bessel_k_cf2(0, x);
  const double k = nu == 0 ? p.k_mu : p.k_mu1;
  return scaled ? k : k * ::exp(-x);
}

// --- Airy Ai --------------------------------------------------------------------------------

// J_{1/3}(z) and Y_{1/3}(z) for z >= 2 by Steed's method: CF1 for J'/J,
// the complex CF2 for p + iq = (J' + iY')/(J + iY), and the Wronskian.
struct BesselJY {
  double j, y;
};
AOTRT_HOST_DEVICE inline BesselJY bessel_jy_third(double x) {
  const double nu = 1.0 / 3, xi = 1 / x, xi2 = 2 * xi;
  // CF1: f = J'_nu / J_nu, and the sign of J_nu.
  int sign = 1;
  double h = nu * xi, b = xi2 * nu, d = 0, c = h;
  if (h < kTiny) h = kTiny;
  for (int i = 1; i < kMaxIterations; ++i) {
    b += xi2;
    d = b - d;
    if (::fabs(d) < kTiny) d = kTiny;
    c = b - 1 / c;
    if (::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double step = c * d;
    h *= step;
    if (d < 0) sign = -sign;
    if (::fabs(step - 1) <= kEps) break;
  }
  const double f = h;
  // CF2 (complex, modified Lentz).
  double a = 0.25 - nu * nu, p = -0.5 * xi, q = 1;
  const double br = 2 * x;
  double bi = 2;
  double fact = a * xi / (p * p + q * q);
  double cr = br + q * fact, ci = bi + p * fact;
  double den = br * br + bi * bi;
  double dr = br / den, di = -bi / den;
  double dlr = cr * dr - ci * di, dli = cr * di + ci * dr;
  double t = p * dlr - q * dli;
  q = p * dli + q * dlr;
  p = t;
  for (int i = 2; i < kMaxIterations; ++i) {
    a += 2 * (i - 1);
    bi += 2;
    dr = a * dr + br;
    di = a * di + bi;
    if (::fabs(dr) + ::fabs(di) < kTiny) dr = kTiny;
    fact = a / (cr * cr + ci * ci);
    cr = br + cr * fact;
    ci = bi - ci * fact;
    if (::fabs(cr) + ::fabs(ci) < kTiny) cr = kTiny;
    den = dr * dr + di * di;
    dr /= den;
    di /= -den;
    dlr = cr * dr - ci * di;
    dli = cr * di + ci * dr;
    t = p * dlr - q * dli;
    q = p * dli + q * dlr;
    p = t;
    if (::fabs(dlr - 1) + ::fabs(dli) <= kEps) break;
  }
  const double gam = (p - f) / q;
  const double w = xi2 / kPi;  // the Wronskian J Y' - J' Y = 2 / (pi x)
  double j = ::sqrt(w / ((p - f) * gam + q));
  if (sign < 0) j = -j;
  return {j, j * gam};
}

AOTRT_HOST_DEVICE inline double airy_ai(double x) {
  if (is_nan(x) || is_inf(x)) return nan();  // ATen: NaN at both infinities
  if (x > 103.892) return 0;                   // ATen's cut-off (Ai(103.892) ~ 1e-307)
  constexpr double kAi0 = 0.355028053887817239260;   // Ai(0)
  constexpr double kDAi0 = 0.258819403792806798405;  // -Ai'(0)
  const double ax = ::fabs(x);
  const double z = (2.0 / 3) * ax * ::sqrt(ax);
  if (z < 2) {
    // Ai(x) = Ai(0) f(x) + Ai'(0) g(x): f = sum 3^k (1/3)_k x^3k/(3k)!,
    // g = sum 3^k (2/3)_k x^(3k+1)/(3k+1)!
    const double x3 = x * x * x;
    double f = 1, g = x, tf = 1, tg = x;
    for (int k = 1; k < 200; ++k) {
      tf *= x3 / ((3.0 * k - 1) * (3.0 * k));
      tg *= x3 / ((3.0 * k) * (3.0 * k + 1));
      f += tf;
      g += tg;
      if (::fabs(tf) <= kEps * ::fabs(f) && ::fabs(tg) <= kEps * ::fabs(g)) break;
    }
    return kAi0 * f - kDAi0 * g;
  }
  if (x > 0) {
    return ::sqrt(x / 3) / kPi * scaled_bessel_k_cf2(1.0 / 3, z).k_mu * ::exp(-z);
  }
  if (z < 18) {
    const BesselJY jy = bessel_jy_third(z);
    return 0.5 * ::sqrt(ax) * (jy.j - jy.y / ::sqrt(3.0));
  }
  // Ai(-a) ~ pi^-1/2 a^-1/4 [sin(z + pi/4) P - cos(z + pi/4) Q],
  // P = sum (-1)^k u_2k z^-2k, Q = sum (-1)^k u_(2k+1) z^-(2k+1),
  // u_k = u_(k-1) (6k-5)(6k-3)(6k-1) / ((2k-1) 216 k).
  double u = 1, power = 1, p = 0, q = 0;
  for (int k = 0; k < 80; ++k) {
    if (k > 0) {
      u *= (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
      power /= z;
    }
    const double t = u * power;
    const int r = k % 4;
    if (r == 0) p += t;
    if (r == 1) q += t;
    if (r == 2) p -= t;
    if (r == 3) q -= t;
    if (k > 1 && t <= kEps * (::fabs(p) + ::fabs(q))) break;
  }
  const double phase = z + kPi / 4;
  return (::sin(phase) * p - ::cos(phase) * q) / (::sqrt(kPi) * ::sqrt(::sqrt(ax)));
}

// --- ndtri, spherical_bessel_j0 ---------------------------------------------------------------

// x with Phi(x) = p for 0 < p <= 1/2.
AOTRT_HOST_DEVICE inline double ndtri_lower(double p) {
  // A&S 26.2.23 (|error| < 4.5e-4)
  const double t = ::sqrt(-2 * ::log(p));
  double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) /
                       (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
  const bool central = p > 0.25;
  const double centred = p - 0.5;  // exact for p in [1/4, 1/2]
  for (int i = 0; i < 8; ++i) {
    // r = Phi(x) - p, computed where it keeps its digits
    const double r = central ? 0.5 * ::erf(x / 1.4142135623730951) - centred
                             : 0.5 * ::erfc(-x / 1.4142135623730951) - p;
    // u = r / phi(x), e^(x^2/2) as two halves so that it overflows no sooner
    // than r / phi(x) does
    const double half = ::exp(0.25 * x * x);
    const double u = r * 2.5066282746310002 * half * half;
    const double step = u / (1 + 0.5 * x * u);  // Halley
    x -= step;
    if (::fabs(step) <= 4 * kEps * ::fabs(x)) break;
  }
  return x;
}

// ATen's domain: -inf at 0, inf at 1, NaN outside [0, 1].
AOTRT_HOST_DEVICE inline double ndtri(double p) {
  if (is_nan(p) || p < 0 || p > 1) return nan();
  if (p == 0) return -inf();
  if (p == 1) return inf();
  if (p == 0.5) return 0;
  return p < 0.5 ? ndtri_lower(p) : -ndtri_lower(1 - p);
}

AOTRT_HOST_DEVICE inline double spherical_bessel_j0(double x) {
  if (is_inf(x)) return 0;
  if (::fabs(x) < 0.5) {
    const double y = x * x;  // 1 - y/3! + y^2/5! - ... - y^7/15!
    return 1 - y / 6 *
                   (1 - y / 20 *
                            (1 - y / 42 *
                                     (1 - y / 72 *
                                              (1 - y / 110 * (1 - y / 156 * (1 - y / 210))))));
  }
  return ::sin(x) / x;
}

// --- orthogonal polynomials ----------------------------------------------------------------

// n as ATen's CPU kernels read it: truncated; NaN and values outside int64
// become INT64_MIN (x86-64's conversion), which counts as negative.
AOTRT_HOST_DEVICE inline int64_t polynomial_degree(double n) {
  if (!(n >= -9223372036854775808.0 && n < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(n);
}

// p_{k+1} = (alpha_k x + beta_k) p_k - gamma_k p_{k-1} from p0, p1, up to p_n.
template <typename Step>
AOTRT_HOST_DEVICE inline double recurrence(int64_t n, double p0, double p1, Step step) {
  if (n == 0) return p0;
  if (n == 1) return p1;
  double prev = p0, cur = p1;
  for (int64_t k = 1; k < n; ++k) {
    const double next = step(k, cur, prev);
    prev = cur;
    cur = next;
    if (is_nan(cur)) break;  // NaN stays NaN
  }
  return cur;
}

// The Chebyshev kinds in x (shifted: the caller passes 2x - 1) with ATen's
// special values at the endpoint(s).
AOTRT_HOST_DEVICE inline double chebyshev(SpecialOp kind, double x, int64_t n) {
  if (n < 0) return 0;
  const bool even = n % 2 == 0;
  const double dn = static_cast<double>(n);
  const bool t = kind == SpecialOp::kChebyshevT, u = kind == SpecialOp::kChebyshevU,
             v = kind == SpecialOp::kChebyshevV;
  if (::fabs(x) == 1) {
    if (t) return x > 0 || even ? 1.0 : -1.0;
    if (u) return x > 0 || even ? dn + 1 : -(dn + 1);
    if (v) return x > 0 ? 1.0 : (even ? 2 * dn + 1 : -(2 * dn + 1));
    return x > 0 ? 2 * dn + 1 : (even ? 1.0 : -1.0);  // W
  }
  if (::fabs(x) < 1 && n > (t ? 6 : 8)) {
    const double theta = ::acos(x);
    if (t) return ::cos(dn * theta);
    if (u) {
      const double s = ::sin(theta);
      return s != 0 ? ::sin((dn + 1) * theta) / s : (dn + 1) * ::cos((dn + 1) * theta) / x;
    }
    if (v) return ::cos((dn + 0.5) * theta) / ::cos(0.5 * theta);
    return ::sin((dn + 0.5) * theta) / ::sin(0.5 * theta);
  }
  const double p1 = t ? x : (u ? 2 * x : (v ? 2 * x - 1 : 2 * x + 1));
  return recurrence(n, 1.0, p1,
                    [x](int64_t, double cur, double prev) { return 2 * x * cur - prev; });
}

// The shifted kinds: T*_n(x) = T_n(2x - 1) etc.; ATen's values at x = 0 and
// x = 1 are those of the unshifted kinds at -1 and 1.
AOTRT_HOST_DEVICE inline double shifted_chebyshev(SpecialOp kind, double x, int64_t n) {
  return chebyshev(kind, x + x - 1, n);  // exact at the ends: 2 * 0 - 1 = -1, 2 * 1 - 1 = 1
}

AOTRT_HOST_DEVICE inline double polynomial(SpecialOp op, double x, double n_value) {
  const int64_t n = polynomial_degree(n_value);
  if (n < 0) return 0;
  switch (op) {
    case SpecialOp::kChebyshevT:
    case SpecialOp::kChebyshevU:
    case SpecialOp::kChebyshevV:
    case SpecialOp::kChebyshevW:
      return chebyshev(op, x, n);
    case SpecialOp::kShiftedChebyshevT:
      return shifted_chebyshev(SpecialOp::kChebyshevT, x, n);
    case SpecialOp::kShiftedChebyshevU:
      return shifted_chebyshev(SpecialOp::kChebyshevU, x, n);
    case SpecialOp::kShiftedChebyshevV:
      return shifted_chebyshev(SpecialOp::kChebyshevV, x, n);
    case SpecialOp::kShiftedChebyshevW:
      return shifted_chebyshev(SpecialOp::kChebyshevW, x, n);
    case SpecialOp::kHermiteH:  // H_{k+1} = 2x H_k - 2k H_{k-1}
      return recurrence(n, 1.0, 2 * x, [x](int64_t k, double cur, double prev) {
        return 2 * x * cur - 2 * static_cast<double>(k) * prev;
      });
    case SpecialOp::kHermiteHe:  // He_{k+1} = x He_k - k He_{k-1}
      return recurrence(n, 1.0, x, [x](int64_t k, double cur, double prev) {
        return x * cur - static_cast<double>(k) * prev;
      });
    case SpecialOp::kLaguerreL:  // (k+1) L_{k+1} = (2k+1-x) L_k - k L_{k-1}
      if (x == 0) return 1;
      return recurrence(n, 1.0, 1 - x, [x](int64_t k, double cur, double prev) {
        const double dk = static_cast<double>(k);
        return ((2 * dk + 1 - x) * cur - dk * prev) / (dk + 1);
      });
    case SpecialOp::kLegendreP:  // (k+1) P_{k+1} = (2k+1) x P_k - k P_{k-1}
      if (::fabs(x) == 1) return x > 0 || n % 2 == 0 ? 1.0 : -1.0;
      return recurrence(n, 1.0, x, [x](int64_t k, double cur, double prev) {
        const double dk = static_cast<double>(k);
        return ((2 * dk + 1) * x * cur - dk * prev) / (dk + 1);
      });
    default:
      return nan();
  }
}

// --- dispatch -----------------------------------------------------------------------------

// op(x) for the unary ops; n is polygamma's order (unused by the others).
AOTRT_HOST_DEVICE inline double unary(SpecialOp op, int64_t n, double x) {
  switch (op) {
    case SpecialOp::kDigamma: return digamma(x);
    case SpecialOp::kPolygamma: return polygamma(n, x);
    case SpecialOp::kAiryAi: return airy_ai(x);
    case SpecialOp::kI0e: return i0e(x);
    case SpecialOp::kI1e: return i1e(x);
    case SpecialOp::kNdtri: return ndtri(x);
    case SpecialOp::kBesselK0: return bessel_k(0, x, false);
    case SpecialOp::kBesselK1: return bessel_k(1, x, false);
    case SpecialOp::kScaledBesselK0: return bessel_k(0, x, true);
    case SpecialOp::kScaledBesselK1: return bessel_k(1, x, true);
    case SpecialOp::kSphericalBesselJ0: return spherical_bessel_j0(x);
    default: return nan();
  }
}

// op(a, b) for the binary ops: igamma(a, x), zeta(x, q), polynomial(x, n).
AOTRT_HOST_DEVICE inline double binary(SpecialOp op, double a, double b) {
  switch (op) {
    case SpecialOp::kIgamma: return igamma(a, b);
    case SpecialOp::kIgammac: return igammac(a, b);
    case SpecialOp::kZeta: return zeta(a, b);
    default: return polynomial(op, a, b);
  }
}

}  // namespace special_math
}  // namespace aotrt::ops
