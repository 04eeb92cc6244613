/* compress.c: the compressors and the compressed all-reduce (compress.h). */
#include "compress.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"

int compress_parse(const char *s, compress_spec_t *spec) {
    memset(spec, 0, sizeof *spec);
    char *end;
    if (strcmp(s, "none") == 0) spec->kind = COMPRESS_NONE;
    else if (strcmp(s, "int8") == 0) spec->kind = COMPRESS_INT8;
    else if (strcmp(s, "sign") == 0) spec->kind = COMPRESS_SIGN;
    else if (strncmp(s, "topk:", 5) == 0) {
        spec->kind = COMPRESS_TOPK;
        spec->frac = strtod(s + 5, &end);
        if (end == s + 5 || *end || !(spec->frac > 0 && spec->frac <= 1)) return -1;
    } else if (strncmp(s, "powersgd:", 9) == 0) {
        spec->kind = COMPRESS_POWERSGD;
        long r = strtol(s + 9, &end, 10);
        if (end == s + 9 || *end || r < 1 || r > 1024) return -1;
        spec->rank = (int)r;
    } else return -1;
    return 0;
}

const char *compress_name(const compress_spec_t *spec, char *buf) {
    static const char *names[] = {"none", "int8", "sign", "topk", "powersgd"};
    if (spec->kind == COMPRESS_TOPK) snprintf(buf, 32, "topk:%g", spec->frac);
    else if (spec->kind == COMPRESS_POWERSGD) snprintf(buf, 32, "powersgd:%d", spec->rank);
    else snprintf(buf, 32, "%s", names[spec->kind]);
    return buf;
}

size_t compress_topk_k(const compress_spec_t *spec, size_t n) {
    size_t k = (size_t)ceil(spec->frac * (double)n - 1e-9);
    return k < 1 ? 1 : k > n ? n : k;
}

void compress_matrix(size_t n, size_t *m, size_t *c) {
    *c = (size_t)ceil(sqrt((double)n));
    if (*c < 1) *c = 1;
    *m = (n + *c - 1) / *c;
}

static int is_matrix(const compress_shape_t *t) { return t->rows > 1 && t->cols > 1; }

size_t compress_matrix_rank(int R, size_t m, size_t c) {
    size_t r = (size_t)R;
    return r < m ? (r < c ? r : c) : (m < c ? m : c);
}

/* PowerSGD's words: r (m + c) per matrix (r = min(R, m, c)), the values of each vector. */
static size_t powersgd_words(int R, size_t n, const compress_shape_t *t, int nt) {
    size_t m, c, w = 0;
    if (!t) {
        compress_matrix(n, &m, &c);
        return compress_matrix_rank(R, m, c) * (m + c);
    }
    for (int k = 0; k < nt; k++)
        w += is_matrix(&t[k]) ? compress_matrix_rank(R, t[k].rows, t[k].cols) * (t[k].rows + t[k].cols)
                              : t[k].rows * t[k].cols;
    return w;
}

size_t compress_piece_bytes(const compress_spec_t *spec, size_t n, const compress_shape_t *t, int nt) {
    size_t b = 0;
    switch (spec->kind) {
    case COMPRESS_NONE: b = 4 * n; break;
    case COMPRESS_INT8: return ops_block_code_bytes(0, n);
    case COMPRESS_SIGN: return ops_block_code_bytes(1, n);
    case COMPRESS_TOPK: b = 8 * compress_topk_k(spec, n); break;
    case COMPRESS_POWERSGD: b = 4 * powersgd_words(spec->rank, n, t, nt); break;
    }
    return (b + 3) / 4 * 4;
}

double compress_sent_bytes(const compress_spec_t *spec, size_t n, const compress_shape_t *t, int nt, int N) {
    double piece = (double)compress_piece_bytes(spec, n, t, nt);
    if (spec->kind == COMPRESS_NONE || spec->kind == COMPRESS_POWERSGD) return 2.0 * (N - 1) / N * piece;
    return (N - 1) * piece;
}

const char *compress_formula(const compress_spec_t *spec) {
    switch (spec->kind) {
    case COMPRESS_INT8: return "(N-1) 4 ceil((n + 4 ceil(n/256))/4)";
    case COMPRESS_SIGN: return "(N-1) 4 ceil((ceil(n/8) + 4 ceil(n/256))/4)";
    case COMPRESS_TOPK: return "(N-1) 8 ceil(F n)";
    case COMPRESS_POWERSGD: return "2 (N-1)/N 4 (sum over m x c matrices min(R,m,c) (m + c) + vector values)";
    default: return "2 (N-1)/N 4 n";
    }
}

/* ---- int8, sign, top-k: the host's kernels (ops_cpu) --------------------------------- */

void compress_encode(const compress_spec_t *spec, const float *x, size_t n, void *out) {
    if (spec->kind == COMPRESS_INT8 || spec->kind == COMPRESS_SIGN)
        ops_cpu.block_encode(NULL, spec->kind == COMPRESS_SIGN, x, n, out);
    else if (spec->kind == COMPRESS_TOPK)
        ops_cpu.topk_encode(NULL, x, n, compress_topk_k(spec, n), out);
    else
        die("compress_encode: %d has no piece to encode", (int)spec->kind);
}

void compress_decode_add(const compress_spec_t *spec, const void *in, size_t n, float alpha, float *acc) {
    if (spec->kind == COMPRESS_INT8 || spec->kind == COMPRESS_SIGN)
        ops_cpu.block_decode_add(NULL, spec->kind == COMPRESS_SIGN, in, n, alpha, acc);
    else if (spec->kind == COMPRESS_TOPK)
        ops_cpu.topk_decode_add(NULL, in, compress_topk_k(spec, n), alpha, acc);
    else
        die("compress_decode_add: %d has no piece to decode", (int)spec->kind);
}

/* ---- the compressed all-reduce ----------------------------------------------------- */

void compressor_init(compressor_t *z, const compress_spec_t *spec, int ef, size_t n, const compress_shape_t *t,
                     int nt, const comm_t *cm) {
    memset(z, 0, sizeof *z);
    z->spec = *spec;
    z->ef = ef;
    z->n = n;
    z->dev = cm->dev;
    if (spec->kind == COMPRESS_NONE) return;
    if (spec->kind != COMPRESS_POWERSGD) {
        size_t piece = compress_piece_bytes(spec, n, NULL, 0);
        z->residual = dev_alloc(z->dev, sizeof(float) * n);
        z->e = dev_alloc(z->dev, sizeof(float) * n);
        z->piece = dev_alloc(z->dev, piece);
        z->all = dev_alloc(z->dev, piece * (size_t)cm->size);
        return;
    }
    size_t total = 0;
    z->flat = !t;
    z->nt = t ? nt : 1;
    z->t = xmalloc(sizeof *z->t * (size_t)z->nt);
    if (t) memcpy(z->t, t, sizeof *t * (size_t)nt);
    else compress_matrix(n, &z->t[0].rows, &z->t[0].cols);
    for (int k = 0; k < z->nt; k++) {
        if (z->flat || is_matrix(&z->t[k])) {
            size_t R = compress_matrix_rank(spec->rank, z->t[k].rows, z->t[k].cols);
            z->np += z->t[k].rows * R;
            z->nq += z->t[k].cols * R;
        } else {
            z->nq += z->t[k].rows * z->t[k].cols;
        }
        total += z->t[k].rows * z->t[k].cols;
    }
    if (t && total != n) die("compressor_init: the tensors hold %zu values, the gradient %zu", total, n);
    size_t padded = z->flat ? total : n;   /* the flat view's m x c, zero beyond n */
    z->residual = dev_alloc(z->dev, sizeof(float) * n);
    z->e = dev_alloc(z->dev, sizeof(float) * padded);
    if (z->flat) z->all = dev_alloc(z->dev, sizeof(float) * padded);
    z->p = dev_alloc(z->dev, sizeof(float) * z->np);
    z->q = dev_alloc(z->dev, sizeof(float) * z->nq);
    float *q0 = xmalloc(sizeof(float) * z->nq);
    uint64_t s = 0x9e3779b97f4a7c15ull;   /* the same start on every rank */
    for (size_t i = 0; i < z->nq; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        q0[i] = (float)((double)(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    dev_from_host(z->dev, z->q, q0, sizeof(float) * z->nq);
    free(q0);
}

void compressor_free(compressor_t *z) {
    dev_free(z->dev, z->residual);
    dev_free(z->dev, z->e);
    dev_free(z->dev, z->piece);
    dev_free(z->dev, z->all);
    dev_free(z->dev, z->p);
    dev_free(z->dev, z->q);
    free(z->t);
    memset(z, 0, sizeof *z);
}

int compressor_state(const compressor_t *z, float *buf[2], size_t len[2], const char *name[2]) {
    int k = 0;
    if (z->spec.kind == COMPRESS_NONE) return 0;
    if (z->ef) {
        buf[k] = z->residual;
        len[k] = z->n;
        name[k++] = "residual";
    }
    if (z->spec.kind == COMPRESS_POWERSGD) {
        buf[k] = z->q;
        len[k] = z->nq;
        name[k++] = "powersgd_q";
    }
    return k;
}

double compressor_sent_bytes(const compressor_t *z, int N) {
    return compress_sent_bytes(&z->spec, z->n, z->flat ? NULL : z->t, z->nt, N);
}

/* x <- the sum over ranks of e, each matrix as P Q^T (one warm-started
 * power iteration), each vector exact, all on z->dev. A matrix m x c holds
 * len values of e from off (len < m c only in the flat view, whose m x c
 * buffers are zero beyond n: e, and z->all for the product). */
static void powersgd(compressor_t *z, comm_t *cm, float *x) {
    const device_t *d = z->dev;
    size_t off = 0, po = 0, qo = 0;
    for (int k = 0; k < z->nt; k++) {   /* P = M Q */
        size_t m = z->t[k].rows, c = z->t[k].cols;
        int R = (int)compress_matrix_rank(z->spec.rank, m, c);
        if (z->flat || is_matrix(&z->t[k])) {
            op_matmul(d, 0, 0, (int)m, R, (int)c, 1.0f, z->e + off, (int)c, z->q + qo, R, DT_F32, 0.0f, z->p + po,
                      R, DT_F32);
            po += m * (size_t)R;
            qo += c * (size_t)R;
        } else {
            qo += m * c;
        }
        off += m * c;
    }
    comm_allreduce(cm, z->p, z->p, z->np, DT_F32, RED_SUM);   /* linear: sum of M_r Q */
    off = po = qo = 0;
    for (int k = 0; k < z->nt; k++) {   /* Q = M^T P; a vector's values as they are */
        size_t m = z->t[k].rows, c = z->t[k].cols;
        int R = (int)compress_matrix_rank(z->spec.rank, m, c);
        if (z->flat || is_matrix(&z->t[k])) {
            op_orthonormalise(d, z->p + po, m, R);
            op_matmul(d, 1, 0, (int)c, R, (int)m, 1.0f, z->e + off, (int)c, z->p + po, R, DT_F32, 0.0f, z->q + qo,
                      R, DT_F32);
            po += m * (size_t)R;
            qo += c * (size_t)R;
        } else {
            dev_copy(d, z->q + qo, z->e + off, sizeof(float) * m * c);
            qo += m * c;
        }
        off += m * c;
    }
    comm_allreduce(cm, z->q, z->q, z->nq, DT_F32, RED_SUM);
    off = po = qo = 0;
    for (int k = 0; k < z->nt; k++) {   /* x = P Q^T; a vector's sum */
        size_t m = z->t[k].rows, c = z->t[k].cols;
        int R = (int)compress_matrix_rank(z->spec.rank, m, c);
        if (z->flat || is_matrix(&z->t[k])) {
            float *out = z->flat ? z->all : x + off;
            op_matmul(d, 0, 1, (int)m, (int)c, R, 1.0f, z->p + po, R, z->q + qo, R, DT_F32, 0.0f, out, (int)c,
                      DT_F32);
            if (z->flat) dev_copy(d, x, out, sizeof(float) * z->n);
            po += m * (size_t)R;
            qo += c * (size_t)R;
        } else {
            dev_copy(d, x + off, z->q + qo, sizeof(float) * m * c);
            qo += m * c;
        }
        off += m * c;
    }
}

/* int8, sign, top-k: the piece of x on z->dev; D(in) * alpha added to acc. */
static void encode_on_device(const compressor_t *z, const float *x, void *out) {
    if (z->spec.kind == COMPRESS_TOPK) op_topk_encode(z->dev, x, z->n, compress_topk_k(&z->spec, z->n), out);
    else op_block_encode(z->dev, z->spec.kind == COMPRESS_SIGN, x, z->n, out);
}
static void decode_add_on_device(const compressor_t *z, const void *in, float alpha, float *acc) {
    if (z->spec.kind == COMPRESS_TOPK) op_topk_decode_add(z->dev, in, compress_topk_k(&z->spec, z->n), alpha, acc);
    else op_block_decode_add(z->dev, z->spec.kind == COMPRESS_SIGN, in, z->n, alpha, acc);
}

/* int8, sign, top-k on z->dev: encode, all-gather, decode in rank order. */
static void device_allreduce(compressor_t *z, comm_t *cm, float *x) {
    const device_t *d = z->dev;
    size_t n = z->n, piece = compress_piece_bytes(&z->spec, n, NULL, 0);
    if (z->ef) op_add(d, DT_F32, x, z->residual, z->e, n);
    else dev_copy(d, z->e, x, sizeof(float) * n);
    encode_on_device(z, z->e, z->piece);
    if (z->ef) {   /* r = e - D(C(e)) */
        dev_copy(d, z->residual, z->e, sizeof(float) * n);
        decode_add_on_device(z, z->piece, -1.0f, z->residual);
    }
    comm_allgather(cm, z->piece, z->all, piece / 4, DT_F32);
    dev_memset0(d, x, sizeof(float) * n);
    for (int r = 0; r < cm->size; r++)   /* in rank order: the same sum on every rank */
        decode_add_on_device(z, (const uint8_t *)z->all + (size_t)r * piece, 1.0f, x);
}

void compress_allreduce(compressor_t *z, comm_t *cm, float *x) {
    size_t n = z->n;
    if (z->spec.kind == COMPRESS_NONE) {
        comm_allreduce(cm, x, x, n, DT_F32, RED_SUM);
        return;
    }
    if (z->spec.kind != COMPRESS_POWERSGD) {
        device_allreduce(z, cm, x);
        return;
    }
    const device_t *d = z->dev;
    if (z->ef) op_add(d, DT_F32, x, z->residual, z->e, n);
    else dev_copy(d, z->e, x, sizeof(float) * n);
    powersgd(z, cm, x);
    if (z->ef) {   /* r = e - x / N: this rank's share of what the sum's approximation dropped */
        dev_copy(d, z->residual, x, sizeof(float) * n);
        op_scale(d, DT_F32, z->residual, -1.0f / (float)cm->size, n);
        op_add(d, DT_F32, z->residual, z->e, z->residual, n);
    }
}
