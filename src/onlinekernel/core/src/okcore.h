/*
 * okcore.h -- the numeric core shared by onlinekernel's compiled modules.
 *
 * 1. Philox4x32-10 (Salmon et al., SC'11), a counter-based generator: the
 *    output for (key, counter) is a pure function, so block j of a feature
 *    map is generated from key = seed and counter = (i, stream, j) alone, in
 *    any order, with no shared state.
 * 2. The package's own transforms (uniform, normal, Cauchy, hashes, signs)
 *    built on deterministic elementary functions (ok_log, ok_sincos below)
 *    that use only IEEE-754 +, -, *, / -- so generated weights are bit for
 *    bit the same on every machine and after any numpy or libm upgrade.
 *    The build passes -ffp-contract=off so no compiler fuses them into FMAs.
 * 3. A vectorisable cosine for the feature hot path.  gcc on x86-64 Linux
 *    compiles it in several target clones (AVX-512, AVX2, baseline) chosen
 *    at load time, so one portable binary runs wide vectors where the CPU has
 *    them and never crashes where it has not.
 */
#ifndef ONLINEKERNEL_OKCORE_H
#define ONLINEKERNEL_OKCORE_H

#include <stdint.h>
#include <string.h>
#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define OK_TARGET_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define OK_TARGET_CLONES
#endif

/* ------------------------------------------------------------------------ */
/* Philox4x32-10                                                             */
/* ------------------------------------------------------------------------ */

static inline void ok_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2],
                                    uint32_t out[4])
{
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = key_in[0], k1 = key_in[1];
    int r;
    for (r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * (uint64_t)c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * (uint64_t)c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* The key and the fixed counter words of stream (seed, block, stream); the
 * caller sets ctr[0], the position within the stream. */
static inline void ok__stream_init(uint64_t seed, uint64_t block, uint32_t stream,
                                   uint32_t key[2], uint32_t ctr[4])
{
    key[0] = (uint32_t)seed;
    key[1] = (uint32_t)(seed >> 32);
    ctr[1] = stream;
    ctr[2] = (uint32_t)block;
    ctr[3] = (uint32_t)(block >> 32);
}

/*
 * Fill `n` 32-bit words of the stream (seed, block, stream).  Word w lives in
 * lane w % 4 of counter (w / 4, stream, block_lo, block_hi); the key is the
 * 64-bit seed.  Any range of any stream of any block is addressable directly.
 */
static inline void ok_stream_words(uint64_t seed, uint64_t block, uint32_t stream,
                                   uint64_t first_word, int64_t n, uint32_t *out)
{
    uint32_t key[2], ctr[4], buf[4];
    uint64_t w = first_word;
    int64_t i = 0;
    ok__stream_init(seed, block, stream, key, ctr);
    while (i < n) {
        uint32_t lane = (uint32_t)(w & 3u);
        ctr[0] = (uint32_t)(w >> 2);
        ok_philox4x32_10(ctr, key, buf);
        for (; lane < 4 && i < n; lane++, i++, w++)
            out[i] = buf[lane];
    }
}

/* ------------------------------------------------------------------------ */
/* Deterministic elementary functions (IEEE +,-,*,/ only)                    */
/* ------------------------------------------------------------------------ */

static const double OK_PIO2_1 = 1.57079632673412561417e+00;  /* first 33 bits of pi/2 */
static const double OK_PIO2_2 = 6.07710050630396597660e-11;  /* next 33 bits */
static const double OK_PIO2_3 = 2.02226624871116645580e-21;  /* next 33 bits */
static const double OK_INVPIO2 = 6.36619772367581382433e-01;
static const double OK_ROUND_MAGIC = 6755399441055744.0;      /* 1.5 * 2^52 */
/* Cody-Waite reduction with three parts of pi/2 is exact to ~1 ulp while the
 * quadrant number n fits in 20 bits. */
#define OK_TRIG_MAX 1.0e6

/* sin and cos on [-pi/4, pi/4]: the fdlibm minimax polynomials. */
static inline double ok__ksin(double r)
{
    double z = r * r;
    double p = 1.58969099521155010221e-10;
    p = p * z + -2.50507602534068634195e-08;
    p = p * z + 2.75573137070700676789e-06;
    p = p * z + -1.98412698298579493134e-04;
    p = p * z + 8.33333333332248946124e-03;
    p = p * z + -1.66666666666666324348e-01;
    return r + r * z * p;
}

static inline double ok__kcos(double r)
{
    double z = r * r;
    double p = -1.13596475577881948265e-11;
    p = p * z + 2.08757232129817482790e-09;
    p = p * z + -2.75573143513906633035e-07;
    p = p * z + 2.48015872894767294178e-05;
    p = p * z + -1.38888888888741095749e-03;
    p = p * z + 4.16666666666666019037e-02;
    return 1.0 - 0.5 * z + z * z * p;
}

/* cos(x + shift * pi/2) for |x| <= OK_TRIG_MAX; shift = 0 gives cos, 3 gives sin. */
static inline double ok__cos_shift(double x, int shift)
{
    double t = x * OK_INVPIO2 + OK_ROUND_MAGIC;
    double n = t - OK_ROUND_MAGIC;
    double r = ((x - n * OK_PIO2_1) - n * OK_PIO2_2) - n * OK_PIO2_3;
    int q = ((int)n + shift) & 3;
    double s = ok__ksin(r), c = ok__kcos(r);
    double v = (q & 1) ? s : c;
    return (((q + 1) & 2) ? -v : v);
}

static inline double ok_cos(double x)
{
    if (!(fabs(x) <= OK_TRIG_MAX)) return cos(x);   /* rare: huge or non-finite */
    return ok__cos_shift(x, 0);
}

static inline double ok_sin(double x)
{
    if (!(fabs(x) <= OK_TRIG_MAX)) return sin(x);
    return ok__cos_shift(x, 3);
}

/* Natural log for finite x > 0, subnormals included (fdlibm's algorithm). */
static inline double ok_log(double x)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double Lg1 = 6.666666666666735130e-01, Lg2 = 3.999999999940941908e-01,
                 Lg3 = 2.857142874366239149e-01, Lg4 = 2.222219843214978396e-01,
                 Lg5 = 1.818357216161805012e-01, Lg6 = 1.531383769920937332e-01,
                 Lg7 = 1.479819860511658591e-01;
    uint64_t bits;
    int k;
    double f, s, z, w, t1, t2, R, hfsq, dk;
    int sub = 0;
    if (x < 2.2250738585072014e-308) {   /* subnormal: scale into the normal range */
        x *= 18014398509481984.0;        /* 2^54 */
        sub = 54;
    }
    memcpy(&bits, &x, sizeof bits);
    k = (int)((bits >> 52) & 0x7ff) - 1023 - sub;
    bits = (bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL;  /* m in [1, 2) */
    memcpy(&f, &bits, sizeof f);
    if (f > 1.4142135623730951) { f *= 0.5; k += 1; }
    f -= 1.0;
    dk = (double)k;
    s = f / (2.0 + f);
    z = s * s;
    w = z * z;
    t1 = w * (Lg2 + w * (Lg4 + w * Lg6));
    t2 = z * (Lg1 + w * (Lg3 + w * (Lg5 + w * Lg7)));
    R = t2 + t1;
    hfsq = 0.5 * f * f;
    return dk * ln2_hi - ((hfsq - (s * (hfsq + R) + dk * ln2_lo)) - f);
}

/* v[i] = e^(v[i]) for n finite values v[i] <= 0 (the kernel values of
 * stored rows: e^(-gamma ||x - c||^2)).  fdlibm's algorithm: x = k ln2 + r,
 * |r| <= ln2 / 2, a rational approximation of e^r, then an exact scaling by
 * 2^k -- in IEEE +, -, *, / only (no FMA: the build passes
 * -ffp-contract=off), so the same bits on every machine, within an ulp of
 * the correctly rounded value.  The scaling by 2^k (k >= -1076) is two
 * multiplications by normal powers of two, 2^(k - k/2) then 2^(k/2): the
 * first is exact, the second rounds once, as ldexp would, into the
 * subnormals.  Branch-free, so the loop runs in vector registers: the
 * AVX-512 and AVX2 clones are vectorised (the baseline one, without 64-bit
 * integer compares, runs element by element); the same bits in each. */
OK_TARGET_CLONES __attribute__((unused))
static void ok_exp_neg(double *v, int64_t n)
{
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10,
                 inv_ln2 = 1.44269504088896338700e+00;
    const double P1 = 1.66666666666666019037e-01, P2 = -2.77777777770155933842e-03,
                 P3 = 6.61375632143793436117e-05, P4 = -1.65339022054652515390e-06,
                 P5 = 4.13813679705723846039e-08;
    int64_t i;
    for (i = 0; i < n; i++) {
        /* below -745.13 every result rounds to zero; the clamp to -746 keeps
           k >= -1077.  Made on the bits with a mask (a larger magnitude has
           larger bits): a floating-point compare may trap, so the compiler
           would not turn it into a vector select */
        uint64_t u, m;
        double x;
        memcpy(&u, v + i, sizeof u);
        m = (uint64_t)0 - (uint64_t)((u & 0x7fffffffffffffffULL) > 0x4087500000000000ULL);
        u = (u & ~m) | (0xc087500000000000ULL & m);
        memcpy(&x, &u, sizeof x);
        /* round x / ln2 to nearest (x <= 0): truncate x / ln2 - 1/2 */
        const int32_t k = (int32_t)(x * inv_ln2 - 0.5);
        const int32_t k1 = k / 2, k2 = k - k1;      /* both >= -539: normal powers */
        const double kd = (double)k;
        const double hi = x - kd * ln2_hi, lo = kd * ln2_lo;
        const double r = hi - lo, t = r * r;
        const double c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
        const double y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
        union { uint64_t u; double d; } s1, s2;
        s1.u = (uint64_t)(int64_t)(k1 + 1023) << 52;
        s2.u = (uint64_t)(int64_t)(k2 + 1023) << 52;
        v[i] = (y * s1.d) * s2.d;
    }
}

/* ------------------------------------------------------------------------ */
/* Transforms of raw words                                                   */
/* ------------------------------------------------------------------------ */

/* 53-bit uniform in [0, 1) from two words. */
static inline double ok_u01(uint32_t a, uint32_t b)
{
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6)) * (1.0 / 9007199254740992.0);
}

/* 53-bit uniform in the open interval (0, 1). */
static inline double ok_u01_open(uint32_t a, uint32_t b)
{
    return ((double)(a >> 5) * 67108864.0 + (double)(b >> 6) + 0.5) * (1.0 / 9007199254740992.0);
}

/* Standard normals by Box-Muller: four words give two normals. */
static inline void ok_normal_pair(const uint32_t w[4], double *z0, double *z1)
{
    const double two_pi = 6.28318530717958647693;
    double u1 = ok_u01_open(w[0], w[1]);
    double u2 = ok_u01(w[2], w[3]);
    double r = sqrt(-2.0 * ok_log(u1));   /* sqrt is correctly rounded by IEEE */
    double th = two_pi * u2;
    *z0 = r * ok__cos_shift(th, 0);
    *z1 = r * ok__cos_shift(th, 3);
}

/* Fill n standard normals of stream (seed, block, stream). */
static inline void ok_fill_normal(uint64_t seed, uint64_t block, uint32_t stream,
                                  int64_t n, double *out)
{
    uint32_t key[2], ctr[4], w[4];
    int64_t i;
    double z0, z1;
    ok__stream_init(seed, block, stream, key, ctr);
    for (i = 0; i < n; i += 2) {
        ctr[0] = (uint32_t)(i >> 1);
        ok_philox4x32_10(ctr, key, w);
        ok_normal_pair(w, &z0, &z1);
        out[i] = z0;
        if (i + 1 < n) out[i + 1] = z1;
    }
}

/* Fill n uniforms in [lo, hi) of stream (seed, block, stream). */
static inline void ok_fill_uniform(uint64_t seed, uint64_t block, uint32_t stream,
                                   int64_t n, double lo, double hi, double *out)
{
    uint32_t key[2], ctr[4], w[4];
    int64_t i;
    ok__stream_init(seed, block, stream, key, ctr);
    for (i = 0; i < n; i += 2) {
        ctr[0] = (uint32_t)(i >> 1);
        ok_philox4x32_10(ctr, key, w);
        out[i] = lo + (hi - lo) * ok_u01(w[0], w[1]);
        if (i + 1 < n) out[i + 1] = lo + (hi - lo) * ok_u01(w[2], w[3]);
    }
}

/* Fill n standard Cauchy draws, tan(pi (u - 1/2)) with u in (0, 1). */
static inline void ok_fill_cauchy(uint64_t seed, uint64_t block, uint32_t stream,
                                  int64_t n, double *out)
{
    const double pi = 3.14159265358979323846;
    uint32_t key[2], ctr[4], w[4];
    int64_t i;
    int j;
    ok__stream_init(seed, block, stream, key, ctr);
    for (i = 0; i < n; i += 2) {
        ctr[0] = (uint32_t)(i >> 1);
        ok_philox4x32_10(ctr, key, w);
        for (j = 0; j < 2 && i + j < n; j++) {
            double th = pi * (ok_u01_open(w[2 * j], w[2 * j + 1]) - 0.5);
            out[i + j] = ok__cos_shift(th, 3) / ok__cos_shift(th, 0);
        }
    }
}

/* Fill n hashes in [0, m) (multiply-shift; exact when m is a power of two). */
static inline void ok_fill_hash(uint64_t seed, uint64_t block, uint32_t stream,
                                int64_t n, uint32_t m, int64_t *out)
{
    int64_t i;
    uint32_t buf[64];
    for (i = 0; i < n; i += 64) {
        int64_t k, cnt = (n - i < 64) ? (n - i) : 64;
        ok_stream_words(seed, block, stream, (uint64_t)i, cnt, buf);
        for (k = 0; k < cnt; k++)
            out[i + k] = (int64_t)(((uint64_t)buf[k] * (uint64_t)m) >> 32);
    }
}

/* Fill n random signs (+1.0 / -1.0) from the top bit of each word. */
static inline void ok_fill_sign(uint64_t seed, uint64_t block, uint32_t stream,
                                int64_t n, double *out)
{
    int64_t i;
    uint32_t buf[64];
    for (i = 0; i < n; i += 64) {
        int64_t k, cnt = (n - i < 64) ? (n - i) : 64;
        ok_stream_words(seed, block, stream, (uint64_t)i, cnt, buf);
        for (k = 0; k < cnt; k++)
            out[i + k] = (buf[k] >> 31) ? -1.0 : 1.0;
    }
}

/*
 * Fill n uniformly random permutations of 0 .. m-1, one after the other
 * (out[p * m .. p * m + m - 1] is permutation p), as doubles (exact indices).
 * Fisher-Yates from the last position down: position i swaps with
 * j = (word * (i + 1)) >> 32, a multiply-shift draw in [0, i] whose bias is
 * below (i + 1) / 2^32 (2.4e-7 at i + 1 = 1024).  Permutation p reads words
 * p * m .. p * m + m - 1 of the stream, so it does not depend on n.
 */
static inline void ok_fill_permutation(uint64_t seed, uint64_t block, uint32_t stream,
                                       int64_t n, int64_t m, double *out)
{
    int64_t p, i, k;
    uint32_t buf[64];
    for (p = 0; p < n; p++) {
        double *q = out + p * m;
        for (i = 0; i < m; i++) q[i] = (double)i;
        /* words in groups of 64, read from the end so that position i uses
         * word p * m + i */
        for (i = m - 1; i > 0; i -= 64) {
            int64_t lo = (i - 63 > 1) ? i - 63 : 1;
            ok_stream_words(seed, block, stream, (uint64_t)(p * m + lo), i - lo + 1, buf);
            for (k = i; k >= lo; k--) {
                int64_t j = (int64_t)(((uint64_t)buf[k - lo] * (uint64_t)(k + 1)) >> 32);
                double t = q[k];
                q[k] = q[j];
                q[j] = t;
            }
        }
    }
}

/* Attempts of the chi sampler per draw (each reads its own 8 words). */
#define OK_CHI_ATTEMPTS 64

/*
 * Fill n draws from the chi distribution with k >= 1 degrees of freedom (the
 * norm of a k-dimensional standard normal vector) in O(1) expected work each,
 * where summing k squared normals would cost O(k).  k = 1: |z|; k >= 2:
 * sqrt(2 G) with G ~ Gamma(k / 2) by Marsaglia and Tsang's squeeze-free
 * rejection sampler (acceptance >= 95% at k = 2, above 99.9% at k = 1024).
 * Attempt t of draw i reads words 8 (64 i + t) .. 8 (64 i + t) + 7: a normal
 * from the first four (Box-Muller), a uniform from the next two.  After 64
 * rejections (probability below 1e-80) the draw is sqrt(k), the mean's
 * first-order value.  Draws are independent of n and use only IEEE +, -, *,
 * / and sqrt with ok_log, so the same bits come out on every machine.
 * Needs i < 2^25 (the counter's 32 bits of words / 512).
 */
static inline void ok_fill_chi(uint64_t seed, uint64_t block, uint32_t stream, int64_t n,
                               double k, double *out)
{
    const double a = 0.5 * k;
    const double dd = a - 1.0 / 3.0;
    const double c = 1.0 / sqrt(9.0 * dd);
    uint32_t w[8];
    int64_t i;
    int t;
    double z, z1;
    for (i = 0; i < n; i++) {
        double g = -1.0;
        for (t = 0; t < OK_CHI_ATTEMPTS; t++) {
            ok_stream_words(seed, block, stream, (uint64_t)(64 * i + t) * 8u, 8, w);
            ok_normal_pair(w, &z, &z1);
            if (k < 1.5) {
                g = 0.5 * z * z;  /* chi(1) = |z| = sqrt(2 * z^2 / 2) */
                break;
            } else {
                double v = 1.0 + c * z;
                double u = ok_u01_open(w[4], w[5]);
                if (v <= 0.0) continue;
                v = v * v * v;
                if (ok_log(u) < 0.5 * z * z + dd - dd * v + dd * ok_log(v)) {
                    g = dd * v;
                    break;
                }
            }
        }
        out[i] = (g < 0.0) ? sqrt(k) : sqrt(2.0 * g);
    }
}

/* ------------------------------------------------------------------------ */
/* Feature hot path                                                          */
/* ------------------------------------------------------------------------ */

/*
 * The tile kernels below reduce x by pi/2 (double) or pi (float) with
 * Cody-Waite, evaluate polynomials in plain +, -, * (no FMA: -ffp-contract=off
 * keeps every clone bit for bit the same) and take the quadrant and sign from
 * the integer bits of the magic-rounded quotient, so the loops have no
 * branches, no int conversions, and gcc vectorises them in every clone.  Each
 * row is checked first; a row with an argument outside the kernel's range
 * (huge, inf or nan) takes a scalar loop that gives every element exactly
 * what the vector loop would and sends the out-of-range ones to libm, so an
 * element's value depends on that element alone.
 */

/* pi/2 - OK_PIO2_1 to double precision: with the 33-bit head this is pi/2 to
 * 86 bits, enough for an absolute error below 1e-20 while |n| < 2^20. */
static const double OK_COS_PIO2_2 = 6.07710050650619224932e-11;

/* b where m has ones, a where it has zeros: a branch-free select that gcc
 * vectorises with plain vector logic (a ?: would be if-converted only with
 * AVX-512 masks). */
static inline double ok__select(uint64_t m, double a, double b)
{
    uint64_t ua, ub;
    double r;
    memcpy(&ua, &a, sizeof ua);
    memcpy(&ub, &b, sizeof ub);
    ua ^= (ua ^ ub) & m;
    memcpy(&r, &ua, sizeof r);
    return r;
}

/*
 * scale * cos(x + shift * pi/2) for |x| <= OK_TRIG_MAX, magic = OK_ROUND_MAGIC
 * + shift + 1.  x = n pi/2 + r with |r| <= pi/4; the low bits of t are
 * n + shift + 1, so bit 0 says cos(r) (set) or sin(r) (clear) and bit 1 the
 * sign.  One polynomial of degree 6 in z = r^2 with the coefficients of the
 * chosen function (fdlibm's minimax sets), evaluated by Estrin's scheme:
 *     sin(r) = r + (r z) P_s(z),   cos(r) = w + (((1 - w) - z/2) + z^2 P_c(z))
 * with w = 1 - z/2 (the bracket is w's rounding error, so cos keeps the
 * accuracy of sin).  Error below 1.2e-16 before the final product by scale.
 */
static inline double ok__cos_kernel(double x, double magic, double scale)
{
    double t = x * OK_INVPIO2 + magic;
    double n = t - magic;
    double r = (x - n * OK_PIO2_1) - n * OK_COS_PIO2_2;
    double z = r * r, zz = z * z, p, hz, w, lo, a, v, sscale;
    uint64_t q, m, u;
    memcpy(&q, &t, sizeof q);
    m = (uint64_t)((int64_t)(q << 63) >> 63);          /* all ones where cos(r) */
    memcpy(&u, &scale, sizeof u);
    u ^= (q >> 1) << 63;
    memcpy(&sscale, &u, sizeof u);
    p = (ok__select(m, -1.66666666666666324348e-01, 4.16666666666666019037e-02)
         + z * ok__select(m, 8.33333333332248946124e-03, -1.38888888888741095749e-03))
        + zz * ((ok__select(m, -1.98412698298579493134e-04, 2.48015872894767294178e-05)
                 + z * ok__select(m, 2.75573137070700676789e-06, -2.75573143513906633035e-07))
                + zz * (ok__select(m, -2.50507602534068634195e-08, 2.08757232129817482790e-09)
                        + z * ok__select(m, 1.58969099521155010221e-10,
                                         -1.13596475577881948265e-11)));
    hz = 0.5 * z;
    w = 1.0 - hz;
    lo = (1.0 - w) - hz;
    memcpy(&u, &lo, sizeof u);
    u &= m;                                             /* 0 for sin(r) */
    memcpy(&lo, &u, sizeof u);
    a = ok__select(m, r, z);                            /* r z or z^2 */
    v = ok__select(m, r, w) + (lo + (a * z) * p);
    return sscale * v;
}

/* libm's scale * cos(x + shift * pi/2), for the arguments the kernels leave out. */
static inline double ok__cos_libm(double x, double scale, int shift)
{
    double v = (shift & 1) ? sin(x) : cos(x);
    return ((shift + 1) & 2) ? -(scale * v) : scale * v;
}

/* The double tile's value for one element, whatever its argument. */
static inline double ok__cos_one(double x, double magic, double scale, int shift)
{
    if (!(fabs(x) <= OK_TRIG_MAX)) return ok__cos_libm(x, scale, shift);
    return ok__cos_kernel(x, magic, scale);
}

/*
 * z[i, k] <- scale * cos(z[i, k] + bias[k] + shift * pi/2) over an n x m
 * row-major tile (leading dimension ld).  bias may be NULL; shift is 0 (cos)
 * or 3 (sin).  One body makes both precisions: T is the element type, U the
 * unsigned integer of its width (SIGN its top bit's index, ABS the mask that
 * clears it), TMAX the kernel's range; SETUP declares the kernel's
 * constants, and KERNEL(x) / ONE(x) give an element's value in range / for
 * any argument.  One pass adds the bias and flags the row: lim minus |x|'s
 * bits is negative for |x| > TMAX, inf and nan (an integer test, so it
 * vectorises in every clone).
 */
#define OK_DEFINE_COS_TILE(NAME, T, U, SIGN, ABS, TMAX, SETUP, KERNEL, ONE)                \
OK_TARGET_CLONES __attribute__((unused))                                                 \
static void NAME(T *z, int64_t n, int64_t m, int64_t ld, const T *bias, T scale,         \
                 int shift)                                                              \
{                                                                                        \
    SETUP                                                                                \
    const T tmax = TMAX;                                                                 \
    U lim;                                                                               \
    int64_t i, k;                                                                        \
    memcpy(&lim, &tmax, sizeof lim);                                                     \
    for (i = 0; i < n; i++) {                                                            \
        T *row = z + i * ld;                                                             \
        U out = 0;                                                                       \
        if (bias) {                                                                      \
            for (k = 0; k < m; k++) {                                                    \
                U u;                                                                     \
                row[k] += bias[k];                                                       \
                memcpy(&u, &row[k], sizeof u);                                           \
                out |= lim - (u & ABS);                                                  \
            }                                                                            \
        } else {                                                                         \
            for (k = 0; k < m; k++) {                                                    \
                U u;                                                                     \
                memcpy(&u, &row[k], sizeof u);                                           \
                out |= lim - (u & ABS);                                                  \
            }                                                                            \
        }                                                                                \
        if (out >> SIGN) {                                                               \
            for (k = 0; k < m; k++) row[k] = ONE(row[k]);                                \
        } else {                                                                         \
            for (k = 0; k < m; k++) row[k] = KERNEL(row[k]);                             \
        }                                                                                \
    }                                                                                    \
}

/* The float kernel's range: with |n + 1/2| < 2^14 the 9-bit heads of pi keep
 * the Cody-Waite products exact; larger arguments take the double path. */
#define OK_TRIG_MAX_F32 32768.0f

/*
 * scale * cos(x + shift * pi/2) in float arithmetic for |x| <= OK_TRIG_MAX_F32.
 * x + shift pi/2 = (k + h) pi + pi/2 + r with h = 1/2 for an even shift, 0 for
 * an odd one, so the result is +-sin(r), |r| <= pi/2 (one odd polynomial of
 * degree 9, minimax for the relative error, Estrin's scheme); bit 0 of t,
 * offset by magic = 1.5 * 2^23 + (shift + 2) / 2, is the sign.  Pi is split in
 * three parts (9 + 9 + 24 bits).  Error below 1.2 float ulps of 1 before the
 * product by scale.
 */
static inline float ok__cosf_kernel(float x, float h, float magic, float scale)
{
    float t = (x * 3.183098733e-01f - h) + magic;
    float c = (t - magic) + h;                          /* k + h */
    float r = ((x - c * 3.140625f) - c * 9.670257568e-04f) - c * 6.278329465e-07f;
    float z, zz, p;
    uint32_t tb, rb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&rb, &r, sizeof rb);
    rb ^= tb << 31;                                     /* sin(-r) = -sin(r) */
    memcpy(&r, &rb, sizeof r);
    z = r * r;
    zz = z * z;
    p = (-1.666665971e-01f + z * 8.333067410e-03f)
        + zz * (-1.980955421e-04f + z * 2.605466534e-06f);
    return scale * (r + (r * z) * p);
}

/* The float tile's value for one element, whatever its argument: out of
 * the float kernel's range, the double path (then libm). */
static inline float ok__cosf_one(float x, float h, float magic, double dmagic, float scale,
                                 int shift)
{
    return (fabsf(x) <= OK_TRIG_MAX_F32)
        ? ok__cosf_kernel(x, h, magic, scale)
        : (float)ok__cos_one((double)x, dmagic, (double)scale, shift);
}

/*
 * ok_cos_tile: the double tile.  Max abs error 2e-16 * |scale|: 1.2e-16 from
 * the kernel, then the product by scale rounds once (1.85e-16 * |scale|
 * measured at worst); |arguments| > OK_TRIG_MAX, inf and nan get libm's
 * value (nan for inf, nan).
 */
#define OK__COS_SETUP_D const double magic = OK_ROUND_MAGIC + (double)(shift + 1);
#define OK__COS_KERNEL_D(x) ok__cos_kernel(x, magic, scale)
#define OK__COS_ONE_D(x) ok__cos_one(x, magic, scale, shift)
OK_DEFINE_COS_TILE(ok_cos_tile, double, uint64_t, 63, 0x7fffffffffffffffULL, OK_TRIG_MAX,
                   OK__COS_SETUP_D, OK__COS_KERNEL_D, OK__COS_ONE_D)

/*
 * ok_cos_tile_f32: the float tile for float32 models, the argument being the
 * float sum z + bias.  Max abs error 3 float ulps of 1 times |scale|;
 * |arguments| > OK_TRIG_MAX_F32, inf and nan go through the double path
 * (then libm).
 */
#define OK__COS_SETUP_F                                                                  \
    const float h = (shift & 1) ? 0.0f : 0.5f;                                           \
    const float magic = 12582912.0f + (float)((shift + 2) >> 1);                         \
    const double dmagic = OK_ROUND_MAGIC + (double)(shift + 1);
#define OK__COS_KERNEL_F(x) ok__cosf_kernel(x, h, magic, scale)
#define OK__COS_ONE_F(x) ok__cosf_one(x, h, magic, dmagic, scale, shift)
OK_DEFINE_COS_TILE(ok_cos_tile_f32, float, uint32_t, 31, 0x7fffffffU, OK_TRIG_MAX_F32,
                   OK__COS_SETUP_F, OK__COS_KERNEL_F, OK__COS_ONE_F)

/* Publish a freshly generated cache block: store `desired` into *slot if it is
 * still NULL.  Returns the pointer that ends up in the slot (another thread's
 * if it won the race; the caller then frees its own copy). */
static inline void *ok_publish_ptr(void **slot, void *desired)
{
#if defined(__GNUC__) || defined(__clang__)
    void *expected = NULL;
    if (__atomic_compare_exchange_n(slot, &expected, desired, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return desired;
    return expected;
#else
    if (*slot == NULL) *slot = desired;
    return *slot;
#endif
}

static inline void *ok_load_ptr(void **slot)
{
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_load_n(slot, __ATOMIC_ACQUIRE);
#else
    return *slot;
#endif
}

#endif
