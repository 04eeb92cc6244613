/* mlp.c: the two-layer ReLU MLP on the CPU (OpenBLAS, fp32), its
 * double-precision reference, and the gradient comparison (see mlp.h). */
#include "mlp.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "dtype.h"
#include "matmul.h"
#include "ops.h"

void mlp_data_init(mlp_data_t *m, int B, int D, int H, unsigned long long seed) {
    m->B = B; m->D = D; m->H = H;
    m->x = xmalloc(sizeof(float) * (long)B * D);
    m->t = xmalloc(sizeof(float) * (long)B * D);
    m->W1 = xmalloc(sizeof(float) * (long)D * H);
    m->W2 = xmalloc(sizeof(float) * (long)H * D);
    fill_uniform(m->x, (long)B * D, seed);
    fill_uniform(m->t, (long)B * D, seed + 1);
    fill_uniform(m->W1, (long)D * H, seed + 2);
    fill_uniform(m->W2, (long)H * D, seed + 3);
    /* keep activations O(1) through both layers */
    for (long i = 0; i < (long)D * H; i++) m->W1[i] /= sqrtf((float)D);
    for (long i = 0; i < (long)H * D; i++) m->W2[i] /= sqrtf((float)H);
}

void mlp_data_free(mlp_data_t *m) {
    free(m->x); free(m->t); free(m->W1); free(m->W2);
    memset(m, 0, sizeof *m);
}

void mlp_grads_alloc(mlp_grads_t *g, int B, int D, int H) {
    g->dW1 = xmalloc(sizeof(float) * (long)D * H);
    g->dW2 = xmalloc(sizeof(float) * (long)H * D);
    g->dx = xmalloc(sizeof(float) * (long)B * D);
}

void mlp_grads_free(mlp_grads_t *g) {
    free(g->dW1); free(g->dW2); free(g->dx);
    memset(g, 0, sizeof *g);
}

/* ---- reference --------------------------------------------------------- */

static double rnd(double v, int bf16) { return bf16 ? bf16_to_f32(f32_to_bf16((float)v)) : v; }

double mlp_reference(const mlp_data_t *m, int bf16, mlp_grads_t *out) {
    const int B = m->B, D = m->D, H = m->H;
    double *x = xmalloc(sizeof(double) * B * D), *t = xmalloc(sizeof(double) * B * D);
    double *W1 = xmalloc(sizeof(double) * D * H), *W2 = xmalloc(sizeof(double) * H * D);
    double *h = xmalloc(sizeof(double) * B * H), *dh = xmalloc(sizeof(double) * B * H);
    double *dy = xmalloc(sizeof(double) * B * D);
    for (int i = 0; i < B * D; i++) { x[i] = rnd(m->x[i], bf16); t[i] = rnd(m->t[i], bf16); }
    for (int i = 0; i < D * H; i++) { W1[i] = rnd(m->W1[i], bf16); W2[i] = rnd(m->W2[i], bf16); }
    double loss = 0.0;
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < H; j++) {            /* h = relu(x W1) */
            double s = 0.0;
            for (int d = 0; d < D; d++) s += x[b * D + d] * W1[d * H + j];
            s = rnd(s, bf16);
            h[b * H + j] = s > 0.0 ? s : 0.0;
        }
        for (int d = 0; d < D; d++) {            /* y = h W2, dy = (y - t) / B */
            double y = 0.0;
            for (int j = 0; j < H; j++) y += h[b * H + j] * W2[j * D + d];
            y = rnd(y, bf16);
            double e = y - t[b * D + d];
            loss += 0.5 * e * e / B;
            dy[b * D + d] = rnd(e / B, bf16);
        }
        for (int j = 0; j < H; j++) {            /* dh = (dy W2^T) * [h > 0] */
            double s = 0.0;
            for (int d = 0; d < D; d++) s += dy[b * D + d] * W2[j * D + d];
            dh[b * H + j] = h[b * H + j] > 0.0 ? rnd(s, bf16) : 0.0;
        }
        for (int d = 0; d < D; d++) {            /* dx = dh W1^T */
            double s = 0.0;
            for (int j = 0; j < H; j++) s += dh[b * H + j] * W1[d * H + j];
            out->dx[b * D + d] = (float)rnd(s, bf16);
        }
    }
    for (int j = 0; j < H; j++)                  /* dW2 = h^T dy (fp32 out) */
        for (int d = 0; d < D; d++) {
            double s = 0.0;
            for (int b = 0; b < B; b++) s += h[b * H + j] * dy[b * D + d];
            out->dW2[j * D + d] = (float)s;
        }
    for (int d = 0; d < D; d++)                  /* dW1 = x^T dh (fp32 out) */
        for (int j = 0; j < H; j++) {
            double s = 0.0;
            for (int b = 0; b < B; b++) s += x[b * D + d] * dh[b * H + j];
            out->dW1[d * H + j] = (float)s;
        }
    free(x); free(t); free(W1); free(W2); free(h); free(dh); free(dy);
    return loss;
}

/* ---- CPU, OpenBLAS ------------------------------------------------------ */

void mlp_cpu_init(mlp_cpu_t *c, const mlp_data_t *m) {
    c->data = m;
    c->h = xmalloc(sizeof(float) * (long)m->B * m->H);
    c->dh = xmalloc(sizeof(float) * (long)m->B * m->H);
    c->y = xmalloc(sizeof(float) * (long)m->B * m->D);
    c->dy = xmalloc(sizeof(float) * (long)m->B * m->D);
    mlp_grads_alloc(&c->g, m->B, m->D, m->H);
    const size_t DH = (size_t)m->D * m->H;
    c->m1 = xcalloc(DH, sizeof(float));
    c->v1 = xcalloc(DH, sizeof(float));
    c->m2 = xcalloc(DH, sizeof(float));
    c->v2 = xcalloc(DH, sizeof(float));
    c->steps = 0;
}

void mlp_cpu_free(mlp_cpu_t *c) {
    free(c->h); free(c->dh); free(c->y); free(c->dy);
    free(c->m1); free(c->v1); free(c->m2); free(c->v2);
    mlp_grads_free(&c->g);
}

void mlp_cpu_update(mlp_cpu_t *c, const device_t *d) {
    const mlp_data_t *m = c->data;
    const size_t DH = (size_t)m->D * m->H;
    c->steps++;
    op_adamw(d, m->W1, c->m1, c->v1, c->g.dW1, NULL, DT_F32, DH, MLP_LR, MLP_BETA1, MLP_BETA2,
             MLP_EPS, 0.0f, 1.0f, c->steps);
    op_adamw(d, m->W2, c->m2, c->v2, c->g.dW2, NULL, DT_F32, DH, MLP_LR, MLP_BETA1, MLP_BETA2,
             MLP_EPS, 0.0f, 1.0f, c->steps);
}

/* Row-major C (M, N) = op(A) op(B), op = transpose when the flag says so. */
static void sgemm(int ta, int tb, int M, int N, int K, const float *A, const float *B, float *C) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, 1.0f, A, ta ? M : K, B, tb ? K : N, 0.0f, C, N);
}

double mlp_cpu_step(mlp_cpu_t *c) {
    const mlp_data_t *m = c->data;
    const int B = m->B, D = m->D, H = m->H;
    const long BH = (long)B * H, BD = (long)B * D;
    sgemm(0, 0, B, H, D, m->x, m->W1, c->h);             /* h (B,H) = x W1 */
    for (long i = 0; i < BH; i++) c->h[i] = c->h[i] > 0.0f ? c->h[i] : 0.0f;
    sgemm(0, 0, B, D, H, c->h, m->W2, c->y);             /* y (B,D) = h W2 */
    double loss = 0.0;
    for (long i = 0; i < BD; i++) {
        float e = c->y[i] - m->t[i];
        loss += 0.5 * (double)e * e / B;
        c->dy[i] = e / (float)B;
    }
    sgemm(1, 0, H, D, B, c->h, c->dy, c->g.dW2);         /* dW2 (H,D) = h^T dy */
    sgemm(0, 1, B, H, D, c->dy, m->W2, c->dh);           /* dh (B,H) = dy W2^T */
    for (long i = 0; i < BH; i++) if (c->h[i] <= 0.0f) c->dh[i] = 0.0f;
    sgemm(1, 0, D, H, B, m->x, c->dh, c->g.dW1);         /* dW1 (D,H) = x^T dh */
    sgemm(0, 1, B, D, H, c->dh, m->W1, c->g.dx);         /* dx (B,D) = dh W1^T */
    return loss;
}

/* ---- comparison --------------------------------------------------------- */

static double part_error(const float *g, const float *ref, long count) {
    double sumsq = 0.0, worst = 0.0;
    for (long i = 0; i < count; i++) sumsq += (double)ref[i] * ref[i];
    double rms = sqrt(sumsq / (double)count);
    if (!(rms > 0.0)) rms = 1.0;
    for (long i = 0; i < count; i++) {
        double e = fabs((double)g[i] - ref[i]);
        if (!isfinite(e)) return INFINITY;
        if (e > worst) worst = e;
    }
    return worst / rms;
}

double mlp_grads_error(const mlp_grads_t *g, const mlp_grads_t *ref, int B, int D, int H) {
    double e1 = part_error(g->dW1, ref->dW1, (long)D * H);
    double e2 = part_error(g->dW2, ref->dW2, (long)H * D);
    double e3 = part_error(g->dx, ref->dx, (long)B * D);
    return fmax(e1, fmax(e2, e3));
}
