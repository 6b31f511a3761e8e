/*
 * oklinalg.h -- the linear algebra of the compiled loops (matrix products and
 * small Cholesky solves), with one summation order on every machine.
 *
 * C (m x n, row-major) = alpha * op(A) op(B) + beta * C, as BLAS's gemm, but
 * every C[i][j] is s_k, where s_0 = 0 and s_{p+1} = fma(op(A)[i][p],
 * op(B)[p][j], s_p) -- a fused multiply-add, exactly rounded by IEEE 754, so
 * the same on every machine -- in increasing p; then alpha * s_k + beta *
 * C[i][j] (a multiply and an add; beta = 0: C is not read).  The vector lanes
 * run across j, never across p, so the result does not depend on the
 * instruction set, on the tile sizes, on m or on the other rows of the batch.
 *
 * Why not BLAS: OpenBLAS picks its kernels by CPU and by matrix size, and
 * they sum in different orders, so a saved model predicted different bits on
 * an AVX-512 machine than on the AVX2 machine that wrote it, and a row's
 * prediction depended on the rows predicted with it (measured with
 * OpenBLAS 0.3.30: OPENBLAS_CORETYPE=Haswell vs SkylakeX).  These products
 * feed the features, the predictions and the stochastic steps; the batch
 * solvers' large products (numpy and scipy) still use BLAS.
 *
 * Speed: an 8 x (2 registers) tile of accumulators over a packed panel of
 * op(B) (with AVX-512, a transposed B's panel is transposed in registers),
 * in AVX-512 or AVX2 with FMA when the CPU has them (chosen at run time),
 * else in portable C with fma() from the C library (exactly rounded in
 * hardware or software).  All three give the same bits.
 */
#ifndef ONLINEKERNEL_OKLINALG_H
#define ONLINEKERNEL_OKLINALG_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define OK_LINALG_X86 1
#include <immintrin.h>
#endif

/* rows of a tile; below OK_FEW rows no tile (see OK_SMALL_ROWS); the widest
 * tile's columns (two AVX-512 registers of floats) */
#define OK_IB 8
#define OK_FEW 4
#define OK_JB_MAX 32

/* The instruction sets of the kernels: 0 portable C, 1 AVX2 + FMA, 2 AVX-512. */
__attribute__((unused))
static int ok_linalg_isa(void)
{
#ifdef OK_LINALG_X86
    static int isa = -1;
    if (isa < 0) {
        __builtin_cpu_init();
        isa = __builtin_cpu_supports("avx512f") ? 2
            : (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) ? 1 : 0;
    }
    return isa;
#else
    return 0;
#endif
}

/*
 * A kernel: out[r * JB + l] = the fma chain over p < k of a[r][p * ps] and
 * panel[p * JB + l], for the OK_IB rows a[r] and the JB columns of panel.
 */
#define OK_PORTABLE_KERNEL(NAME, T, FMA)                                                 \
static void NAME(int64_t k, const T *const *a, int64_t ps, const T *panel, T *out)      \
{                                                                                        \
    int64_t p, r, l;                                                                     \
    for (r = 0; r < OK_IB * 8; r++)                                                      \
        out[r] = (T)0;                                                                   \
    for (p = 0; p < k; p++)                                                              \
        for (r = 0; r < OK_IB; r++) {                                                    \
            const T x = a[r][p * ps];                                                    \
            for (l = 0; l < 8; l++)                                                      \
                out[r * 8 + l] = FMA(x, panel[p * 8 + l], out[r * 8 + l]);               \
        }                                                                                \
}

#ifdef OK_LINALG_X86
/*
 * W lanes per register; the tile is OK_IB (8) rows x 2 registers: 16
 * accumulators, for AVX-512's 32 registers.  AVX2 has 16 registers, so its
 * tile is two halves of 4 rows (OK_SIMD_HALVES), each with 8 accumulators
 * (8 rows in one loop spill there: measured 12 % slower).  A group G of 4
 * rows: its accumulators G##r##c (row r, register c), its rows' pointers, its
 * step and its stores.
 */
#define OK_SIMD_GROUP(G, T, V, ZERO, a)                                                  \
    V G##00 = ZERO(), G##01 = ZERO(), G##10 = ZERO(), G##11 = ZERO();                    \
    V G##20 = ZERO(), G##21 = ZERO(), G##30 = ZERO(), G##31 = ZERO();                    \
    const T *G##a0 = (a)[0], *G##a1 = (a)[1], *G##a2 = (a)[2], *G##a3 = (a)[3];
#define OK_SIMD_ROW(G, R, SET1, FMADD)                                                   \
        x = SET1(G##a##R[p * ps]); G##R##0 = FMADD(x, b0, G##R##0);                       \
        G##R##1 = FMADD(x, b1, G##R##1);
#define OK_SIMD_STEP(G, SET1, FMADD)                                                     \
        OK_SIMD_ROW(G, 0, SET1, FMADD) OK_SIMD_ROW(G, 1, SET1, FMADD)                    \
        OK_SIMD_ROW(G, 2, SET1, FMADD) OK_SIMD_ROW(G, 3, SET1, FMADD)
#define OK_SIMD_STORE(G, W, STORE, o)                                                    \
    STORE((o), G##00); STORE((o) + W, G##01);                                            \
    STORE((o) + 2 * W, G##10); STORE((o) + 3 * W, G##11);                                \
    STORE((o) + 4 * W, G##20); STORE((o) + 5 * W, G##21);                                \
    STORE((o) + 6 * W, G##30); STORE((o) + 7 * W, G##31);
/* the loop over p, STEPS: the steps of one group (lo) or two (lo, hi: rows 4-7) */
#define OK_SIMD_LOOP(V, W, LOAD, STEPS)                                                  \
    int64_t p;                                                                           \
    for (p = 0; p < k; p++) {                                                            \
        const V b0 = LOAD(panel + p * 2 * W), b1 = LOAD(panel + p * 2 * W + W);          \
        V x;                                                                             \
        STEPS                                                                            \
    }
#define OK_SIMD_KERNEL(NAME, T, V, W, TARGET, ZERO, LOAD, SET1, FMADD, STORE)            \
__attribute__((target(TARGET)))                                                          \
static void NAME(int64_t k, const T *const *a, int64_t ps, const T *panel, T *out)      \
{                                                                                        \
    OK_SIMD_GROUP(lo, T, V, ZERO, a)                                                     \
    OK_SIMD_GROUP(hi, T, V, ZERO, a + 4)                                                 \
    OK_SIMD_LOOP(V, W, LOAD, OK_SIMD_STEP(lo, SET1, FMADD)                               \
                             OK_SIMD_STEP(hi, SET1, FMADD))                              \
    OK_SIMD_STORE(lo, W, STORE, out)                                                     \
    OK_SIMD_STORE(hi, W, STORE, out + 8 * W)                                             \
}
#define OK_SIMD_HALVES(NAME, T, V, W, TARGET, ZERO, LOAD, SET1, FMADD, STORE)            \
__attribute__((target(TARGET)))                                                          \
static void NAME##_half(int64_t k, const T *const *a, int64_t ps, const T *panel, T *out) \
{                                                                                        \
    OK_SIMD_GROUP(lo, T, V, ZERO, a)                                                     \
    OK_SIMD_LOOP(V, W, LOAD, OK_SIMD_STEP(lo, SET1, FMADD))                              \
    OK_SIMD_STORE(lo, W, STORE, out)                                                     \
}                                                                                        \
static void NAME(int64_t k, const T *const *a, int64_t ps, const T *panel, T *out)      \
{                                                                                        \
    NAME##_half(k, a, ps, panel, out);                                                   \
    NAME##_half(k, a + 4, ps, panel, out + 8 * W);                                       \
}

OK_SIMD_KERNEL(ok__kd_avx512, double, __m512d, 8, "avx512f", _mm512_setzero_pd,
               _mm512_loadu_pd, _mm512_set1_pd, _mm512_fmadd_pd, _mm512_storeu_pd)
OK_SIMD_KERNEL(ok__kf_avx512, float, __m512, 16, "avx512f", _mm512_setzero_ps,
               _mm512_loadu_ps, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_storeu_ps)
OK_SIMD_HALVES(ok__kd_avx2, double, __m256d, 4, "avx2,fma", _mm256_setzero_pd,
               _mm256_loadu_pd, _mm256_set1_pd, _mm256_fmadd_pd, _mm256_storeu_pd)
OK_SIMD_HALVES(ok__kf_avx2, float, __m256, 8, "avx2,fma", _mm256_setzero_ps,
               _mm256_loadu_ps, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps)
#define OK_KERNELS(KD512, KD2) KD512, KD2
#else
#define OK_KERNELS(KD512, KD2) NULL, NULL
#endif

OK_PORTABLE_KERNEL(ok__kd_portable, double, fma)
OK_PORTABLE_KERNEL(ok__kf_portable, float, fmaf)

/*
 * A few rows (fewer than a tile: a single prediction or training row): out[l] =
 * the fma chain over p < k of a[p * ps] and op(B)[p][j0 + l] for l < jb, eight
 * chains side by side, read from B where it lies -- no packed panel, no wasted
 * rows of a tile (measured, one row on 16 blocks of 256 x 32: 36 us where the
 * tile kernel took 85 us).  The same chains, in the same order, as the tile kernels, so
 * the same bits: a row's products do not depend on the rows computed with it.
 */
#define OK_SMALL_ROWS(NAME, T, FMA)                                                      \
static void NAME(int64_t k, const T *a, int64_t ps, int trans_b, const T *B, int64_t ldb, \
                 int64_t j0, int64_t jb, T *out)                                         \
{                                                                                        \
    int64_t p, l, q;                                                                     \
    const int64_t sp = trans_b ? 1 : ldb, sj = trans_b ? ldb : 1;                        \
    for (l = 0; l < jb; l += 8) {                                                        \
        const int64_t w = jb - l < 8 ? jb - l : 8;                                       \
        const T *b = B + (j0 + l) * sj;                                                  \
        T s[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                               \
        if (w == 8) {                                                                    \
            for (p = 0; p < k; p++) {                                                    \
                const T x = a[p * ps];                                                   \
                const T *bp = b + p * sp;                                                \
                s[0] = FMA(x, bp[0], s[0]); s[1] = FMA(x, bp[sj], s[1]);                 \
                s[2] = FMA(x, bp[2 * sj], s[2]); s[3] = FMA(x, bp[3 * sj], s[3]);        \
                s[4] = FMA(x, bp[4 * sj], s[4]); s[5] = FMA(x, bp[5 * sj], s[5]);        \
                s[6] = FMA(x, bp[6 * sj], s[6]); s[7] = FMA(x, bp[7 * sj], s[7]);        \
            }                                                                            \
        } else if (w == 1) {  /* one column (one output): the chain in a register */   \
            T s0 = 0;                                                                    \
            for (p = 0; p < k; p++)                                                      \
                s0 = FMA(a[p * ps], b[p * sp], s0);                                      \
            s[0] = s0;                                                                   \
        } else {                                                                         \
            for (p = 0; p < k; p++)                                                      \
                for (q = 0; q < w; q++)                                                  \
                    s[q] = FMA(a[p * ps], b[p * sp + q * sj], s[q]);                     \
        }                                                                                \
        for (q = 0; q < w; q++)                                                          \
            out[l + q] = s[q];                                                           \
    }                                                                                    \
}
#ifdef OK_LINALG_X86
/* fma() becomes one instruction where the CPU has FMA; elsewhere a libm call */
__attribute__((target("avx2,fma"))) OK_SMALL_ROWS(ok__small_d_fma, double, fma)
__attribute__((target("avx2,fma"))) OK_SMALL_ROWS(ok__small_f_fma, float, fmaf)
#define OK_SMALL(FAST, PORTABLE) (isa >= 1 ? FAST : PORTABLE)
#else
#define OK_SMALL(FAST, PORTABLE) PORTABLE
#endif
OK_SMALL_ROWS(ok__small_d_portable, double, fma)
OK_SMALL_ROWS(ok__small_f_portable, float, fmaf)

/*
 * One term per sum (k = 1: a one-row step's rank-one gradient, m features x n
 * outputs): C[i][j] = alpha * fma(op(A)[i][0], op(B)[0][j], 0) + beta * C[i][j],
 * the tile kernels' chain of one term, so the same bits, without a packed
 * panel and a kernel call per four rows (a one-row step on 16 blocks of 256
 * features and one output made 16 panels and 1,024 kernel calls).
 */
#define OK_RANK_ONE(NAME, T, FMA)                                                        \
static void NAME(int trans_a, int trans_b, int64_t m, int64_t n, T alpha, const T *A,    \
                 int64_t lda, const T *B, int64_t ldb, T beta, T *C, int64_t ldc)        \
{                                                                                        \
    int64_t i, j;                                                                        \
    if (n == 1 && trans_a && ldc == 1) {  /* one output, contiguous: vectorised over i */ \
        const T y = B[0];                                                                \
        if (beta == (T)0) {                                                              \
            for (i = 0; i < m; i++)                                                      \
                C[i] = alpha * FMA(A[i], y, (T)0);                                       \
        } else {                                                                         \
            for (i = 0; i < m; i++)                                                      \
                C[i] = alpha * FMA(A[i], y, (T)0) + beta * C[i];                         \
        }                                                                                \
        return;                                                                          \
    }                                                                                    \
    for (i = 0; i < m; i++) {                                                            \
        const T x = trans_a ? A[i] : A[i * lda];                                         \
        T *c = C + i * ldc;                                                              \
        for (j = 0; j < n; j++) {                                                        \
            const T s = FMA(x, trans_b ? B[j * ldb] : B[j], (T)0);                       \
            c[j] = beta == (T)0 ? alpha * s : alpha * s + beta * c[j];                   \
        }                                                                                \
    }                                                                                    \
}
#ifdef OK_LINALG_X86
__attribute__((target("avx2,fma"))) OK_RANK_ONE(ok__rank1_d_fma, double, fma)
__attribute__((target("avx2,fma"))) OK_RANK_ONE(ok__rank1_f_fma, float, fmaf)
#endif
OK_RANK_ONE(ok__rank1_d_portable, double, fma)
OK_RANK_ONE(ok__rank1_f_portable, float, fmaf)

/*
 * The panel of a transposed B (op(B)[:, j0:j0+JB] from B's rows j0 ..
 * j0+JB-1, all of them in B) with AVX-512: panel[p * JB + l] = B[l * ldb + p].
 * Squares of 16 (floats) or 8 (doubles) rows by as many p are loaded a row
 * at a time and transposed in registers; the last p (fewer than a square)
 * are gathered.  The scalar copy, one value at a time from 32 rows, was half
 * of a float32 model's training time on MNIST (a batch of 32 rows packs all
 * 4,096 x 784 frequencies every step).  Return 0 (the caller then copies)
 * without AVX-512 or where the indices of a gather overflow 32 bits.
 */
#ifdef OK_LINALG_X86
__attribute__((target("avx512f")))
static inline void ok__transpose16_f(__m512 *r)
{
    __m512 t[16];
    int i;
    for (i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 4; i++) {
        r[4 * i] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i], t[4 * i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    }
}
__attribute__((target("avx512f")))
static inline void ok__transpose8_d(__m512d *r)
{
    __m512d t[8], u[8];
    int i;
    for (i = 0; i < 4; i++) {
        t[2 * i] = _mm512_unpacklo_pd(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_pd(r[2 * i], r[2 * i + 1]);
    }
    for (i = 0; i < 2; i++) {  /* rows 4i .. 4i+3 */
        u[4 * i] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0x88);
        u[4 * i + 1] = _mm512_shuffle_f64x2(t[4 * i], t[4 * i + 2], 0xdd);
        u[4 * i + 2] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0x88);
        u[4 * i + 3] = _mm512_shuffle_f64x2(t[4 * i + 1], t[4 * i + 3], 0xdd);
    }
    r[0] = _mm512_shuffle_f64x2(u[0], u[4], 0x88); r[4] = _mm512_shuffle_f64x2(u[0], u[4], 0xdd);
    r[2] = _mm512_shuffle_f64x2(u[1], u[5], 0x88); r[6] = _mm512_shuffle_f64x2(u[1], u[5], 0xdd);
    r[1] = _mm512_shuffle_f64x2(u[2], u[6], 0x88); r[5] = _mm512_shuffle_f64x2(u[2], u[6], 0xdd);
    r[3] = _mm512_shuffle_f64x2(u[3], u[7], 0x88); r[7] = _mm512_shuffle_f64x2(u[3], u[7], 0xdd);
}
/* W values a register: squares of W rows x W p, the rest gathered (at: W row offsets) */
#define OK_PANEL_T_512(NAME, T, V, W, AT, TRANSPOSE, LOADU, STOREU, GATHER)          \
__attribute__((target("avx512f")))                                                       \
static void NAME(int64_t k, const T *B, int64_t ldb, T *panel)                           \
{                                                                                        \
    const AT;                                                                            \
    int64_t p = 0, h, l;                                                                 \
    V r[W];                                                                              \
    for (; p + W <= k; p += W)                                                           \
        for (h = 0; h < 2; h++) {                                                        \
            for (l = 0; l < W; l++)                                                      \
                r[l] = LOADU(B + (W * h + l) * ldb + p);                                 \
            TRANSPOSE(r);                                                                \
            for (l = 0; l < W; l++)                                                      \
                STOREU(panel + (p + l) * 2 * W + W * h, r[l]);                           \
        }                                                                                \
    for (; p < k; p++) {                                                                 \
        STOREU(panel + p * 2 * W, GATHER(at, B + p, sizeof(T)));                         \
        STOREU(panel + p * 2 * W + W, GATHER(at, B + W * ldb + p, sizeof(T)));           \
    }                                                                                    \
}
OK_PANEL_T_512(ok__panel_t_f_512, float, __m512, 16,
               __m512i at = _mm512_mullo_epi32(
                   _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                   _mm512_set1_epi32((int)ldb)),
               ok__transpose16_f, _mm512_loadu_ps, _mm512_storeu_ps, _mm512_i32gather_ps)
OK_PANEL_T_512(ok__panel_t_d_512, double, __m512d, 8,
               __m256i at = _mm256_mullo_epi32(_mm256_set_epi32(7, 6, 5, 4, 3, 2, 1, 0),
                                               _mm256_set1_epi32((int)ldb)),
               ok__transpose8_d, _mm512_loadu_pd, _mm512_storeu_pd, _mm512_i32gather_pd)
#define OK_PANEL_T(NAME, T, FILL)                                                        \
static int NAME(int isa, int64_t k, const T *B, int64_t ldb, T *panel)                  \
{                                                                                        \
    if (isa != 2 || ldb > INT32_MAX / 16)                                                \
        return 0;                                                                        \
    FILL(k, B, ldb, panel);                                                              \
    return 1;                                                                            \
}
OK_PANEL_T(ok__panel_t_d, double, ok__panel_t_d_512)
OK_PANEL_T(ok__panel_t_f, float, ok__panel_t_f_512)
#else
#define ok__panel_t_d(isa, k, B, ldb, panel) 0
#define ok__panel_t_f(isa, k, B, ldb, panel) 0
#endif

/*
 * The product with the kernels of instruction set `isa` (see ok_linalg_isa);
 * NAME calls it with the CPU's.  The panel holds op(B)[:, j0:j0+JB] as k rows
 * of JB values (zero beyond n), so a kernel reads it with unit stride
 * whatever B's layout; rows beyond m repeat row i0 and are not written.
 */
#define OK_DEFINE_GEMM(NAME, T, K512, K2, KP, FMA, SMALL, RANK1, PANEL_T)                \
__attribute__((unused))                                                                  \
static void NAME##_at(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,  \
                     T alpha, const T *A, int64_t lda, const T *B, int64_t ldb, T beta,   \
                     T *C, int64_t ldc)                                                  \
{                                                                                        \
    typedef void (*kernel_t)(int64_t, const T *const *, int64_t, const T *, T *);        \
    const kernel_t simd[2] = {OK_KERNELS(K512, K2)};                                     \
    const kernel_t kernel = isa == 2 ? simd[0] : isa == 1 ? simd[1] : KP;                \
    const int64_t JB = isa == 2 ? 128 / (int64_t)sizeof(T)                               \
                     : isa == 1 ? 64 / (int64_t)sizeof(T) : 8;                           \
    const int64_t ps = trans_a ? lda : 1;                                                \
    int64_t i0, j0, p, r, l;                                                             \
    T out[OK_IB * OK_JB_MAX];                                                            \
    T *panel;                                                                            \
    if (m <= 0 || n <= 0)                                                                \
        return;                                                                          \
    if (m < OK_FEW) {  /* a few rows: no panel (see OK_SMALL_ROWS) */                    \
        for (i0 = 0; i0 < m; i0++)                                                       \
            for (j0 = 0; j0 < n; j0 += OK_JB_MAX) {                                      \
                const int64_t jb = n - j0 < OK_JB_MAX ? n - j0 : OK_JB_MAX;              \
                T *c = C + i0 * ldc + j0;                                                \
                SMALL(k, trans_a ? A + i0 : A + i0 * lda, ps, trans_b, B, ldb, j0, jb,   \
                      out);                                                              \
                for (l = 0; l < jb; l++)                                                 \
                    c[l] = beta == (T)0 ? alpha * out[l] : alpha * out[l] + beta * c[l]; \
            }                                                                            \
        return;                                                                          \
    }                                                                                    \
    if (k == 1) {  /* a rank-one update (a one-row step's gradient): no panel either */  \
        RANK1(trans_a, trans_b, m, n, alpha, A, lda, B, ldb, beta, C, ldc);              \
        return;                                                                          \
    }                                                                                    \
    panel = (T *)malloc(sizeof(T) * (size_t)(k > 0 ? k : 1) * (size_t)JB);               \
    if (!panel) {  /* no memory for the panel: the same sums, element by element */      \
        for (i0 = 0; i0 < m; i0++)                                                       \
            for (j0 = 0; j0 < n; j0++) {                                                 \
                T s = (T)0;                                                              \
                for (p = 0; p < k; p++)                                                  \
                    s = FMA(trans_a ? A[p * lda + i0] : A[i0 * lda + p],                 \
                            trans_b ? B[j0 * ldb + p] : B[p * ldb + j0], s);             \
                C[i0 * ldc + j0] = beta == (T)0 ? alpha * s                              \
                                                : alpha * s + beta * C[i0 * ldc + j0];   \
            }                                                                            \
        return;                                                                          \
    }                                                                                    \
    for (j0 = 0; j0 < n; j0 += JB) {                                                     \
        const int64_t jb = n - j0 < JB ? n - j0 : JB;                                    \
        if (!(trans_b && jb == JB && PANEL_T(isa, k, B + j0 * ldb, ldb, panel)))         \
            for (p = 0; p < k; p++)                                                      \
                for (l = 0; l < JB; l++)                                                 \
                    panel[p * JB + l] = l < jb                                           \
                        ? (trans_b ? B[(j0 + l) * ldb + p] : B[p * ldb + j0 + l]) : (T)0; \
        for (i0 = 0; i0 < m; i0 += OK_IB) {                                              \
            const int64_t ib = m - i0 < OK_IB ? m - i0 : OK_IB;                          \
            const T *a[OK_IB];                                                           \
            for (r = 0; r < OK_IB; r++) {                                                \
                const int64_t row = i0 + (r < ib ? r : 0);                               \
                a[r] = trans_a ? A + row : A + row * lda;                                \
            }                                                                            \
            kernel(k, a, ps, panel, out);                                                \
            for (r = 0; r < ib; r++) {                                                   \
                T *c = C + (i0 + r) * ldc + j0;                                          \
                const T *s = out + r * JB;                                               \
                if (beta == (T)0) {                                                      \
                    for (l = 0; l < jb; l++)                                             \
                        c[l] = alpha * s[l];                                             \
                } else {                                                                 \
                    for (l = 0; l < jb; l++)                                             \
                        c[l] = alpha * s[l] + beta * c[l];                               \
                }                                                                        \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
    free(panel);                                                                         \
}                                                                                        \
__attribute__((unused))                                                                  \
static void NAME(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, T alpha,     \
                const T *A, int64_t lda, const T *B, int64_t ldb, T beta, T *C,          \
                int64_t ldc)                                                             \
{                                                                                        \
    NAME##_at(ok_linalg_isa(), trans_a, trans_b, m, n, k, alpha, A, lda, B, ldb,         \
                     beta, C, ldc);                                                      \
}

OK_DEFINE_GEMM(ok_gemm, double, ok__kd_avx512, ok__kd_avx2, ok__kd_portable, fma,
               OK_SMALL(ok__small_d_fma, ok__small_d_portable),
               OK_SMALL(ok__rank1_d_fma, ok__rank1_d_portable), ok__panel_t_d)
OK_DEFINE_GEMM(ok_gemm_f32, float, ok__kf_avx512, ok__kf_avx2, ok__kf_portable, fmaf,
               OK_SMALL(ok__small_f_fma, ok__small_f_portable),
               OK_SMALL(ok__rank1_f_fma, ok__rank1_f_portable), ok__panel_t_f)

/*
 * The Cholesky factor L (lower) of the symmetric n x n matrix A, in place
 * (column-major, leading dimension n; only the lower triangle is read and
 * written), as LAPACK's dpotrf with uplo 'L', with every sum taken in
 * increasing index order.  Returns 0, or j + 1 when the leading (j + 1) x
 * (j + 1) minor is not positive definite.  For the small systems of the
 * preconditioned steps (a mini-batch's rows, or a block's features).
 */
__attribute__((unused))
static int ok_cholesky(int64_t n, double *A)
{
    int64_t i, j, p;
    for (j = 0; j < n; j++) {
        double d = A[j + j * n];
        for (p = 0; p < j; p++)
            d -= A[j + p * n] * A[j + p * n];
        if (!(d > 0.0))
            return (int)(j + 1);
        d = sqrt(d);
        A[j + j * n] = d;
        for (i = j + 1; i < n; i++) {
            double s = A[i + j * n];
            for (p = 0; p < j; p++)
                s -= A[i + p * n] * A[j + p * n];
            A[i + j * n] = s / d;
        }
    }
    return 0;
}

/*
 * B <- A^{-1} B for A = L L^T from ok_cholesky (LAPACK's dpotrs, uplo 'L'):
 * B is n x k, column-major with leading dimension n.
 */
__attribute__((unused))
static void ok_cholesky_solve(int64_t n, int64_t k, const double *L, double *B)
{
    int64_t i, p, c;
    for (c = 0; c < k; c++) {
        double *b = B + c * n;
        for (i = 0; i < n; i++) {          /* L y = b */
            double s = b[i];
            for (p = 0; p < i; p++)
                s -= L[i + p * n] * b[p];
            b[i] = s / L[i + i * n];
        }
        for (i = n - 1; i >= 0; i--) {     /* L^T x = y */
            double s = b[i];
            for (p = i + 1; p < n; p++)
                s -= L[p + i * n] * b[p];
            b[i] = s / L[i + i * n];
        }
    }
}

/*
 * The projection of CSR rows: out[i][j] (row-major, leading dimension ldo) =
 * the fma chain over the row's stored entries, in increasing column order, of
 * data[t] and W[j][indices[t]], for W (F x d, row-major).  With sorted,
 * distinct column indices this is bit for bit ok_gemm(X, W^T) on the dense
 * rows: a zero entry leaves the chain exactly as it was.  A row costs
 * nnz * F multiply-adds instead of d * F, whatever d is.
 *
 * Two loops compute these same chains.  The gather loop (few rows: a
 * training step's batch, a single prediction) reads W[j][indices[t]] where
 * it lies, eight chains (eight rows of W) side by side; the rows of W are
 * the outer loop, so a panel of eight rows (8 d values: 19 KB at d = 300)
 * stays in L1 while every row of X reads it, and W streams through the
 * cache once per call, not once per row of X.  The axpy loop (enough stored
 * entries to pay for transposing W once, nnz >= 3 d) first copies W into WT
 * (d x F, row-major), so that a stored entry (c, x) adds x * WT[c][:] -- a
 * contiguous row -- to the output row: the lanes run across j, each lane's
 * chain still in increasing t, so the bits are the gather loop's.
 */
#define OK_CSR_ROWS(NAME, T, FMA)                                                         \
static void NAME(int64_t n, int64_t F, int64_t d, const int64_t *indptr,                  \
                 const int32_t *indices, const T *data, const T *W, T *out, int64_t ldo)  \
{                                                                                        \
    int64_t i, j, t;                                                                     \
    for (j = 0; j + 8 <= F; j += 8) {                                                    \
        const T *w0 = W + j * d, *w1 = w0 + d, *w2 = w1 + d, *w3 = w2 + d;               \
        const T *w4 = w3 + d, *w5 = w4 + d, *w6 = w5 + d, *w7 = w6 + d;                  \
        for (i = 0; i < n; i++) {                                                        \
            T *o = out + i * ldo + j;                                                    \
            const int64_t t0 = indptr[i], t1 = indptr[i + 1];                            \
            T s0 = 0, s1 = 0, s2 = 0, s3 = 0, s4 = 0, s5 = 0, s6 = 0, s7 = 0;            \
            for (t = t0; t < t1; t++) {                                                  \
                const T x = data[t];                                                     \
                const int32_t c = indices[t];                                            \
                s0 = FMA(x, w0[c], s0); s1 = FMA(x, w1[c], s1);                          \
                s2 = FMA(x, w2[c], s2); s3 = FMA(x, w3[c], s3);                          \
                s4 = FMA(x, w4[c], s4); s5 = FMA(x, w5[c], s5);                          \
                s6 = FMA(x, w6[c], s6); s7 = FMA(x, w7[c], s7);                          \
            }                                                                            \
            o[0] = s0; o[1] = s1; o[2] = s2; o[3] = s3;                                  \
            o[4] = s4; o[5] = s5; o[6] = s6; o[7] = s7;                                  \
        }                                                                                \
    }                                                                                    \
    for (; j < F; j++) {                                                                 \
        const T *w = W + j * d;                                                          \
        for (i = 0; i < n; i++) {                                                        \
            T s = 0;                                                                     \
            for (t = indptr[i]; t < indptr[i + 1]; t++)                                  \
                s = FMA(data[t], w[indices[t]], s);                                      \
            out[i * ldo + j] = s;                                                        \
        }                                                                                \
    }                                                                                    \
}

/*
 * WT (d x F, row-major) = W^T for W (F x d, row-major), in 8 x 8 tiles whose
 * writes run along WT's rows (measured, d = 300, F = 256 doubles: 62 us, where
 * 32 x 32 tiles writing down WT's columns took 200 us: with F a power of two
 * a column's lines fall in one cache set).
 */
#define OK_TRANSPOSE(NAME, T)                                                            \
static void NAME(int64_t F, int64_t d, const T *W, T *WT)                                \
{                                                                                        \
    int64_t j0, c0, j, c;                                                                \
    for (j0 = 0; j0 < F; j0 += 8)                                                        \
        for (c0 = 0; c0 < d; c0 += 8) {                                                 \
            const int64_t j1 = j0 + 8 < F ? j0 + 8 : F, c1 = c0 + 8 < d ? c0 + 8 : d;     \
            for (c = c0; c < c1; c++)                                                    \
                for (j = j0; j < j1; j++)                                                \
                    WT[c * F + j] = W[j * d + c];                                        \
        }                                                                                \
}
OK_TRANSPOSE(ok_transpose, double)
OK_TRANSPOSE(ok_transpose_f32, float)

/*
 * The axpy loop on WT (d x F): 8 registers of W lanes each (one column
 * panel of 8 W columns) accumulate over the row's entries, then a
 * narrower pass and scalar chains take the remaining columns.
 */
#define OK_CSR_AXPY_PORTABLE(NAME, T, FMA)                                               \
static void NAME(int64_t n, int64_t F, const int64_t *indptr, const int32_t *indices,   \
                 const T *data, const T *WT, T *out, int64_t ldo)                        \
{                                                                                        \
    int64_t i, j, t;                                                                     \
    for (i = 0; i < n; i++) {                                                            \
        T *o = out + i * ldo;                                                            \
        const int64_t t0 = indptr[i], t1 = indptr[i + 1];                                \
        for (j = 0; j < F; j++)                                                          \
            o[j] = 0;                                                                    \
        for (t = t0; t < t1; t++) {                                                      \
            const T x = data[t];                                                         \
            const T *w = WT + (int64_t)indices[t] * F;                                   \
            for (j = 0; j < F; j++)                                                      \
                o[j] = FMA(x, w[j], o[j]);                                               \
        }                                                                                \
    }                                                                                    \
}

#ifdef OK_LINALG_X86
#define OK_CSR_AXPY_SIMD(NAME, T, V, W, ZERO, LOAD, SET1, FMADD, STORE, FMA)             \
__attribute__((target("avx2,fma")))                                                      \
static void NAME(int64_t n, int64_t F, const int64_t *indptr, const int32_t *indices,   \
                 const T *data, const T *WT, T *out, int64_t ldo)                        \
{                                                                                        \
    int64_t i, j, t;                                                                     \
    for (i = 0; i < n; i++) {                                                            \
        T *o = out + i * ldo;                                                            \
        const int64_t t0 = indptr[i], t1 = indptr[i + 1];                                \
        for (j = 0; j + 8 * W <= F; j += 8 * W) {                                        \
            V a0 = ZERO(), a1 = ZERO(), a2 = ZERO(), a3 = ZERO();                        \
            V a4 = ZERO(), a5 = ZERO(), a6 = ZERO(), a7 = ZERO();                        \
            for (t = t0; t < t1; t++) {                                                  \
                const V x = SET1(data[t]);                                               \
                const T *w = WT + (int64_t)indices[t] * F + j;                           \
                a0 = FMADD(x, LOAD(w), a0);         a1 = FMADD(x, LOAD(w + W), a1);      \
                a2 = FMADD(x, LOAD(w + 2 * W), a2); a3 = FMADD(x, LOAD(w + 3 * W), a3);  \
                a4 = FMADD(x, LOAD(w + 4 * W), a4); a5 = FMADD(x, LOAD(w + 5 * W), a5);  \
                a6 = FMADD(x, LOAD(w + 6 * W), a6); a7 = FMADD(x, LOAD(w + 7 * W), a7);  \
            }                                                                            \
            STORE(o + j, a0); STORE(o + j + W, a1);                                      \
            STORE(o + j + 2 * W, a2); STORE(o + j + 3 * W, a3);                          \
            STORE(o + j + 4 * W, a4); STORE(o + j + 5 * W, a5);                          \
            STORE(o + j + 6 * W, a6); STORE(o + j + 7 * W, a7);                          \
        }                                                                                \
        for (; j + W <= F; j += W) {                                                     \
            V a0 = ZERO();                                                               \
            for (t = t0; t < t1; t++)                                                    \
                a0 = FMADD(SET1(data[t]), LOAD(WT + (int64_t)indices[t] * F + j), a0);   \
            STORE(o + j, a0);                                                            \
        }                                                                                \
        for (; j < F; j++) {                                                             \
            T s = 0;                                                                     \
            for (t = t0; t < t1; t++)                                                    \
                s = FMA(data[t], WT[(int64_t)indices[t] * F + j], s);                    \
            o[j] = s;                                                                    \
        }                                                                                \
    }                                                                                    \
}
OK_CSR_AXPY_SIMD(ok__csr_axpy_d_avx2, double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd,
                 _mm256_set1_pd, _mm256_fmadd_pd, _mm256_storeu_pd, fma)
OK_CSR_AXPY_SIMD(ok__csr_axpy_f_avx2, float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps,
                 _mm256_set1_ps, _mm256_fmadd_ps, _mm256_storeu_ps, fmaf)
/* fma() becomes one instruction where the CPU has FMA; elsewhere a libm call */
__attribute__((target("avx2,fma"))) OK_CSR_ROWS(ok__csr_d_fma, double, fma)
__attribute__((target("avx2,fma"))) OK_CSR_ROWS(ok__csr_f_fma, float, fmaf)
#endif
OK_CSR_ROWS(ok__csr_d_portable, double, fma)
OK_CSR_ROWS(ok__csr_f_portable, float, fmaf)
OK_CSR_AXPY_PORTABLE(ok__csr_axpy_d_portable, double, fma)
OK_CSR_AXPY_PORTABLE(ok__csr_axpy_f_portable, float, fmaf)

/*
 * The axpy loop on frequencies already transposed (WT, d x F, row-major):
 * what a block source keeps for sparse input next to a cached block (see
 * BlockSource.transposed), so that a training step's few rows take the
 * vectorised loop without paying a transposition every call; and the
 * dispatcher's, after its transposition.  The same bits as the gather loop.
 */
#define OK_DEFINE_CSR_T(NAME, T, AXPY_FAST, AXPY_PORTABLE)                                 \
__attribute__((unused))                                                                  \
static void NAME(int64_t n, int64_t F, const int64_t *indptr, const int32_t *indices,   \
                 const T *data, const T *WT, T *out, int64_t ldo)                        \
{                                                                                        \
    void (*axpy)(int64_t, int64_t, const int64_t *, const int32_t *, const T *,          \
                 const T *, T *, int64_t) = AXPY_PORTABLE;                                \
    if (ok_linalg_isa() >= 1 && AXPY_FAST != NULL)                                       \
        axpy = AXPY_FAST;                                                                \
    axpy(n, F, indptr, indices, data, WT, out, ldo);                                     \
}
#ifdef OK_LINALG_X86
OK_DEFINE_CSR_T(ok_csr_gemm_t, double, ok__csr_axpy_d_avx2, ok__csr_axpy_d_portable)
OK_DEFINE_CSR_T(ok_csr_gemm_t_f32, float, ok__csr_axpy_f_avx2, ok__csr_axpy_f_portable)
#else
OK_DEFINE_CSR_T(ok_csr_gemm_t, double, NULL, ok__csr_axpy_d_portable)
OK_DEFINE_CSR_T(ok_csr_gemm_t_f32, float, NULL, ok__csr_axpy_f_portable)
#endif

/*
 * The dispatcher: the axpy loop when the rows hold at least 3 d stored
 * entries and WT's scratch was allocated, else the gather loop.  Measured
 * (d = 300, F = 256, 12 entries a row, doubles, W out of L2 as in a model of
 * 16 blocks): the gather loop 0.75 us a row (0.8 at 128 rows), the axpy loop
 * with its transposition 1.34 us a row at 32 rows, 0.59 at 128, 0.32 at
 * 2,048: they cross at about 3 d entries (75 rows).  Both give the same bits,
 * so the choice never shows in the result.
 */
#define OK_DEFINE_CSR(NAME, T, FAST, PORTABLE, CSR_T, TRANSPOSE)                          \
__attribute__((unused))                                                                  \
static void NAME(int64_t n, int64_t F, int64_t d, const int64_t *indptr,                  \
                 const int32_t *indices, const T *data, const T *W, T *out, int64_t ldo)  \
{                                                                                        \
    if (n > 0 && F > 0 && indptr[n] - indptr[0] >= 3 * d) {                              \
        T *WT = (T *)malloc((size_t)(d * F) * sizeof(T));                                \
        if (WT != NULL) {                                                                \
            TRANSPOSE(F, d, W, WT);                                                      \
            CSR_T(n, F, indptr, indices, data, WT, out, ldo);                            \
            free(WT);                                                                    \
            return;                                                                      \
        }                                                                                \
    }                                                                                    \
    if (ok_linalg_isa() >= 1)                                                            \
        FAST(n, F, d, indptr, indices, data, W, out, ldo);                               \
    else                                                                                 \
        PORTABLE(n, F, d, indptr, indices, data, W, out, ldo);                           \
}
#ifdef OK_LINALG_X86
OK_DEFINE_CSR(ok_csr_gemm, double, ok__csr_d_fma, ok__csr_d_portable, ok_csr_gemm_t,
              ok_transpose)
OK_DEFINE_CSR(ok_csr_gemm_f32, float, ok__csr_f_fma, ok__csr_f_portable, ok_csr_gemm_t_f32,
              ok_transpose_f32)
#else
OK_DEFINE_CSR(ok_csr_gemm, double, ok__csr_d_portable, ok__csr_d_portable, ok_csr_gemm_t,
              ok_transpose)
OK_DEFINE_CSR(ok_csr_gemm_f32, float, ok__csr_f_portable, ok__csr_f_portable,
              ok_csr_gemm_t_f32, ok_transpose_f32)
#endif

#endif
