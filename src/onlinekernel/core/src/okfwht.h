/*
 * okfwht.h -- the fast Walsh-Hadamard transform and the structured
 * projections built on it (SORF and Fastfood), in float64 and float32.
 *
 * ok_fwht(x, n) replaces the n = 2^k values of x by H x, where H is the
 * unnormalised Sylvester-Hadamard matrix (entries +-1, H H = n I): k stages
 * of butterflies (u, v) -> (u + v, u - v), n log2 n additions in place,
 * against n^2 multiply-adds for the dense product.
 *
 * Speed: the first two stages run fused as one radix-4 pass; the stages
 * whose butterflies stay inside OK_FWHT_TILE values then run tile by tile,
 * so a tile stays in L1 while it goes through them, and only the wider
 * stages sweep the whole vector.  The inner loops run over contiguous j with
 * no dependences, which gcc vectorises in each target clone (AVX-512, AVX2,
 * baseline).
 *
 * Reproducibility: every output is the same sequence of IEEE additions and
 * subtractions whatever the tiling and the vector width (a butterfly's
 * operands never change with the schedule), and the build passes
 * -ffp-contract=off, so the transform gives the same bits on every machine.
 */
#ifndef ONLINEKERNEL_OKFWHT_H
#define ONLINEKERNEL_OKFWHT_H

#include <stdint.h>
#include <string.h>

#include "okcore.h"

/* values per tile of the cache-blocked stages: 16 KiB of doubles */
#define OK_FWHT_TILE 2048

/* The butterflies of the stages h = h0, 2 h0, ... < h1 on x[0 .. n-1]. */
#define OK_FWHT_STAGES(T, x, n, h0, h1)                                        \
    do {                                                                        \
        int64_t h_, i_, j_;                                                     \
        for (h_ = (h0); h_ < (h1); h_ *= 2)                                     \
            for (i_ = 0; i_ < (n); i_ += 2 * h_)                                \
                for (j_ = i_; j_ < i_ + h_; j_++) {                             \
                    T u_ = (x)[j_], v_ = (x)[j_ + h_];                          \
                    (x)[j_] = u_ + v_;                                          \
                    (x)[j_ + h_] = u_ - v_;                                     \
                }                                                               \
    } while (0)

#define OK_DEFINE_FWHT(NAME, T)                                                 \
OK_TARGET_CLONES __attribute__((unused))                                        \
static void NAME(T *x, int64_t n)                                               \
{                                                                               \
    int64_t i, t, tile = n < OK_FWHT_TILE ? n : OK_FWHT_TILE;                   \
    if (n < 4) {                                                                \
        OK_FWHT_STAGES(T, x, n, 1, n);                                          \
        return;                                                                 \
    }                                                                           \
    for (t = 0; t < n; t += tile) {                                             \
        T *y = x + t;                                                           \
        /* stages h = 1 and h = 2 as one radix-4 pass: the same sums */         \
        for (i = 0; i < tile; i += 4) {                                         \
            T s0 = y[i] + y[i + 1], d0 = y[i] - y[i + 1];                       \
            T s1 = y[i + 2] + y[i + 3], d1 = y[i + 2] - y[i + 3];               \
            y[i] = s0 + s1;                                                     \
            y[i + 1] = d0 + d1;                                                 \
            y[i + 2] = s0 - s1;                                                 \
            y[i + 3] = d0 - d1;                                                 \
        }                                                                       \
        OK_FWHT_STAGES(T, y, tile, 4, tile);                                    \
    }                                                                           \
    OK_FWHT_STAGES(T, x, n, tile, n);                                           \
}

OK_DEFINE_FWHT(ok_fwht, double)
OK_DEFINE_FWHT(ok_fwht_f32, float)

/*
 * SORF projections of n rows (Yu et al. 2016): row r of the output holds
 * the first m values of z = [z_0, z_1, ...], z_c = scale H D1_c H D2_c H D3_c
 * x_pad for chunk c, where x_pad is the row (d values, stride ldx between
 * rows) padded with zeros to p = 2^k >= d, and the sign diagonals of chunk c
 * are signs[3 p c .. 3 p c + 3 p - 1] = [D1_c | D2_c | D3_c].  With row
 * scales S (not NULL), output k of chunk c is further multiplied by
 * S[p c + k] (scale and S both apply).  Output row r starts at out + r * ldo;
 * work holds p values.  O(m log p) per row.
 */
#define OK_DEFINE_SORF(NAME, T, FWHT)                                           \
__attribute__((unused))                                                         \
static void NAME(const T *signs, const T *S, T scale, int64_t p, int64_t m,     \
                 const T *X, int64_t n, int64_t ldx, int64_t d, T *out,         \
                 int64_t ldo, T *work)                                          \
{                                                                               \
    int64_t r, c, k;                                                            \
    for (r = 0; r < n; r++) {                                                   \
        const T *x = X + r * ldx;                                               \
        for (c = 0; c * p < m; c++) {                                           \
            const T *D1 = signs + 3 * p * c, *D2 = D1 + p, *D3 = D2 + p;        \
            int64_t keep = (m - c * p < p) ? m - c * p : p;                     \
            /* a whole chunk is computed in its place in the output row */     \
            T *y = (keep == p) ? out + r * ldo + c * p : work;                  \
            for (k = 0; k < d; k++) y[k] = D3[k] * x[k];                        \
            for (k = d; k < p; k++) y[k] = 0;                                   \
            FWHT(y, p);                                                         \
            for (k = 0; k < p; k++) y[k] *= D2[k];                              \
            FWHT(y, p);                                                         \
            /* the scale rides on the last diagonal: one pass less */          \
            for (k = 0; k < p; k++) y[k] *= D1[k] * scale;                      \
            FWHT(y, p);                                                         \
            if (S)                                                              \
                for (k = 0; k < p; k++) y[k] *= S[p * c + k];                   \
            if (y == work) memcpy(out + r * ldo + c * p, work, keep * sizeof(T)); \
        }                                                                       \
    }                                                                           \
}

OK_DEFINE_SORF(ok_sorf_rows, double, ok_fwht)
OK_DEFINE_SORF(ok_sorf_rows_f32, float, ok_fwht_f32)

/*
 * Fastfood projections of n rows (Le, Sarlos and Smola 2013): chunk c of
 * output row r holds S_c H G_c Pi_c H B_c x_pad, keeping the first m values
 * over all chunks.  The parameters of chunk c are p values each at
 * B + p c (signs), P + p c (the permutation, exact indices: (Pi v)_k =
 * v[P_k]), G + p c (Gaussian diagonal) and S + p c (the row scales, any
 * constant factors included).  work holds 2 p values.
 */
#define OK_DEFINE_FASTFOOD(NAME, T, FWHT)                                       \
__attribute__((unused))                                                         \
static void NAME(const T *B, const T *P, const T *G, const T *S, int64_t p,     \
                 int64_t m, const T *X, int64_t n, int64_t ldx, int64_t d,      \
                 T *out, int64_t ldo, T *work)                                  \
{                                                                               \
    int64_t r, c, k;                                                            \
    T *t = work;                                                                \
    for (r = 0; r < n; r++) {                                                   \
        const T *x = X + r * ldx;                                               \
        for (c = 0; c * p < m; c++) {                                           \
            const T *Bc = B + p * c, *Pc = P + p * c, *Gc = G + p * c;          \
            const T *Sc = S + p * c;                                            \
            int64_t keep = (m - c * p < p) ? m - c * p : p;                     \
            T *y = (keep == p) ? out + r * ldo + c * p : work + p;              \
            for (k = 0; k < d; k++) t[k] = Bc[k] * x[k];                        \
            for (k = d; k < p; k++) t[k] = 0;                                   \
            FWHT(t, p);                                                         \
            for (k = 0; k < p; k++) y[k] = Gc[k] * t[(int64_t)Pc[k]];           \
            FWHT(y, p);                                                         \
            for (k = 0; k < p; k++) y[k] *= Sc[k];                              \
            if (keep < p) memcpy(out + r * ldo + c * p, y, keep * sizeof(T));   \
        }                                                                       \
    }                                                                           \
}

OK_DEFINE_FASTFOOD(ok_fastfood_rows, double, ok_fwht)
OK_DEFINE_FASTFOOD(ok_fastfood_rows_f32, float, ok_fwht_f32)

#endif
