/* compress.h: compressed gradient all-reduce with error feedback.
 *
 * A compressor C maps a vector x of n fp32 values to fewer bytes, and D maps
 * them back (D(C(x)) ~ x). Four of them:
 *
 *   int8        per block of OPS_CODE_BLOCK values: scale s = max|x| / 127,
 *               q = round(x / s) in int8.  Bytes: n + 4 ceil(n / B).
 *   sign        1 bit per value (its sign) and per block the scale
 *               s = mean|x| (Seide et al. 2014, 1-bit SGD; scaled sign as
 *               Karimireddy et al. 2019). Bytes: ceil(n / 8) + 4 ceil(n / B).
 *   topk:F      the k = ceil(F n) values of largest |x| (ties: lower index
 *               first) as fp32 value + uint32 index.  Bytes: 8 k.
 *   powersgd:R  per weight matrix (m x c, given by the caller's tensor
 *               list) the rank-R approximation P Q^T, one power iteration
 *               warm-started from the last step's Q (Vogels et al. 2019);
 *               vectors (norm gains: one row or one column) are sent as
 *               they are.  A matrix with a side below R gets rank
 *               r = min(R, m, c): its rank-r approximation is the matrix
 *               itself (exact up to rounding), and more columns would be
 *               rounding leftovers made unit vectors.  Bytes: 4 (sum over
 *               matrices r (m + c) + the vectors' values).  Without a
 *               tensor list, x is one matrix m x c (c = ceil(sqrt(n)),
 *               m = ceil(n / c), zero-padded).
 *
 * Why not all-reduce the compressed values? A sum of int8 codes with
 * different scales, or of signs, is not the code of the sum: a ring would
 * have to decode, add and re-encode at every hop, adding a rounding error
 * per hop. So int8, sign and top-k are ALL-GATHERED: every rank receives
 * every rank's piece, decodes each and adds them in rank order (so every
 * rank holds the identical sum). A rank then sends (N - 1) x piece bytes
 * (ring all-gather), growing with N, against 2 (N - 1) / N x 4 n for the
 * uncompressed ring all-reduce. PowerSGD is linear in x for a fixed Q
 * (P = x Q sums over ranks), so its two factors are all-reduced (the
 * vectors ride with the Q's): 2 (N - 1) / N x its piece, the same at any N.
 *
 * Error feedback (Karimireddy et al. 2019): each rank keeps a residual r,
 * what compression dropped so far, and compresses e = g + r instead of g;
 * then r = e - D(C(e)). Nothing is lost for good: the sum over steps of what
 * was sent plus the residual equals the sum of the gradients. PowerSGD's
 * D is the SUM's approximation, so a rank's residual is e - P Q^T / N (for
 * a vector, sent whole, e - sum / N: the residuals add up to zero).
 *
 * Everything runs on the communicator's device, with any comm backend:
 * int8, sign and top-k through the ops block_encode, block_decode_add,
 * topk_encode and topk_decode_add (the same bits on a CPU and a GPU);
 * PowerSGD through op_matmul (P = M Q, Q = M^T P, P Q^T) and
 * op_orthonormalise (Gram-Schmidt on P), equal to the CPU's up to the
 * matmuls' order of summation. Sums are deterministic. */
#ifndef COMPRESS_H
#define COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { COMPRESS_NONE = 0, COMPRESS_INT8, COMPRESS_SIGN, COMPRESS_TOPK, COMPRESS_POWERSGD } compress_kind;

/* One tensor of the gradient, row-major: rows x cols values (a vector has
 * rows = 1 or cols = 1). A list of them covers x in order. */
typedef struct { size_t rows, cols; } compress_shape_t;

typedef struct {
    compress_kind kind;
    double frac;   /* topk: the fraction kept */
    int rank;      /* powersgd: R */
} compress_spec_t;

/* "none", "int8", "sign", "topk:F" (0 < F <= 1) or "powersgd:R" (R >= 1).
 * Returns 0, or -1 for anything else. */
int compress_parse(const char *s, compress_spec_t *spec);
/* The spec as compress_parse reads it ("topk:0.01"); buf of 32 bytes. */
const char *compress_name(const compress_spec_t *spec, char *buf);
/* The piece one rank contributes for n values made of the nt tensors t
 * (t = NULL: one flat vector; only PowerSGD looks at the shapes): its bytes
 * by the formulas above, rounded up to whole 4-byte words (the messages are
 * fp32 words). none: 4 n. */
size_t compress_piece_bytes(const compress_spec_t *spec, size_t n, const compress_shape_t *t, int nt);
/* Bytes one rank sends for a compressed all-reduce of n values on N ranks
 * (ring collectives): none 2 (N-1)/N 4n; powersgd 2 (N-1)/N piece;
 * the others (N-1) piece. */
double compress_sent_bytes(const compress_spec_t *spec, size_t n, const compress_shape_t *t, int nt, int N);
/* compress_sent_bytes' formula in words, for the programs to print. */
const char *compress_formula(const compress_spec_t *spec);
/* PowerSGD's matrix view of n flat values: m x c. */
void compress_matrix(size_t n, size_t *m, size_t *c);
/* PowerSGD's rank for an m x c matrix: min(R, m, c). */
size_t compress_matrix_rank(int R, size_t m, size_t c);

/* int8, sign, topk on the host (the kernels of ops.h on the CPU): encode x
 * (n values) into out (compress_piece_bytes); decode in and add alpha x D
 * into acc. */
void compress_encode(const compress_spec_t *spec, const float *x, size_t n, void *out);
void compress_decode_add(const compress_spec_t *spec, const void *in, size_t n, float alpha, float *acc);

/* top-k of k values (compress_topk_k) from x's n: the piece's layout above. */
size_t compress_topk_k(const compress_spec_t *spec, size_t n);

typedef struct {
    compress_spec_t spec;
    int ef;               /* error feedback on */
    const device_t *dev;  /* the buffers' device (cm's) */
    size_t n;
    float *residual;      /* (n) what compression has dropped so far (ef) */
    float *e;             /* (n) g + residual */
    void *piece, *all;    /* this rank's piece; every rank's (all-gather); the flat
                             PowerSGD's m x c product */
    int nt;               /* powersgd: the tensors (one m x c matrix for a flat x) */
    compress_shape_t *t;
    int flat;             /* powersgd: x is flat, t[0] its padded matrix view */
    size_t np, nq;        /* powersgd: the words of p and of q */
    float *p;             /* powersgd: each matrix's P (m, r), in order */
    float *q;             /* powersgd: each matrix's Q (c, r), kept between calls, or
                             a vector's values */
} compressor_t;

/* t, nt: the tensors of x (their values must add up to n), or NULL, 0 for a
 * flat x; cm: the communicator compress_allreduce will use. */
void compressor_init(compressor_t *z, const compress_spec_t *spec, int ef, size_t n, const compress_shape_t *t,
                     int nt, const comm_t *cm);
void compressor_free(compressor_t *z);
/* The state z carries from one step to the next, which a resumed run must
 * restore to continue exactly: the residual (error feedback; this rank's
 * own) and PowerSGD's Q (the next step's warm start; the same on every
 * rank). Fills up to 2 device arrays with their names and lengths (floats)
 * and returns how many; 0 when z keeps nothing (none, or no error feedback
 * for int8, sign and top-k). */
int compressor_state(const compressor_t *z, float *buf[2], size_t len[2], const char *name[2]);
/* compress_sent_bytes for z's gradient and tensors. */
double compressor_sent_bytes(const compressor_t *z, int N);
/* x (z->n values) <- the sum over cm's ranks of the decompressed
 * (x + residual); the residual is updated when ef is on. Identical on every
 * rank. x on cm's device. */
void compress_allreduce(compressor_t *z, comm_t *cm, float *x);

#ifdef __cplusplus
}
#endif
#endif
