/* optim.c: AdamW over a flat fp32 range, the learning-rate schedule and the
 * clipping factor. The arithmetic is op_adamw (ops.h); this file only walks
 * the range in segments with and without weight decay. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"
#include "optim.h"

void optim_init(optim_t *o, const float *master_init, size_t n, const device_t *d) {
    memset(o, 0, sizeof *o);
    o->d = d;
    o->n = n;
    o->master = dev_alloc(d, n * sizeof(float));
    o->m = dev_alloc(d, n * sizeof(float));
    o->v = dev_alloc(d, n * sizeof(float));
    dev_from_host(d, o->master, master_init, n * sizeof(float));
    o->beta1 = OPTIM_BETA1;
    o->beta2 = OPTIM_BETA2;
    o->eps = OPTIM_EPS;
    o->weight_decay = OPTIM_WEIGHT_DECAY;
}

void optim_free(optim_t *o) {
    dev_free(o->d, o->master);
    dev_free(o->d, o->m);
    dev_free(o->d, o->v);
    free(o->no_decay);
    memset(o, 0, sizeof *o);
}

void optim_no_decay_norms(optim_t *o, const model_layout_t *lay, const model_config_t *c,
                          size_t offset) {
    int nt = model_tensors(lay, c, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * nt);
    model_tensors(lay, c, ts, nt);
    free(o->no_decay);
    o->no_decay = xmalloc(sizeof *o->no_decay * nt);
    o->n_no_decay = 0;
    for (int k = 0; k < nt; k++) {   /* tensors come in flat order: ranges stay sorted */
        if (!ts[k].is_norm) continue;
        size_t b = ts[k].offset, e = b + ts[k].rows * ts[k].cols;
        /* intersect with the optimizer's [offset, offset + n) */
        if (e <= offset || b >= offset + o->n) continue;
        b = b < offset ? 0 : b - offset;
        e = e - offset > o->n ? o->n : e - offset;
        o->no_decay[o->n_no_decay][0] = b;
        o->no_decay[o->n_no_decay][1] = e;
        o->n_no_decay++;
    }
    free(ts);
}

void optim_step(optim_t *o, const float *grads, void *working, dtype_t wt, float lr,
                float grad_scale, int step) {
    if (step < 1) die("optim_step: step must be >= 1 (got %d)", step);
    size_t es = dtype_size(wt), pos = 0;
    /* Alternate: [pos, next no-decay begin) with decay, then the no-decay range. */
    for (int r = 0; r <= o->n_no_decay; r++) {
        size_t b = r < o->n_no_decay ? o->no_decay[r][0] : o->n;
        size_t e = r < o->n_no_decay ? o->no_decay[r][1] : o->n;
        for (int pass = 0; pass < 2; pass++) {
            size_t lo = pass == 0 ? pos : b, hi = pass == 0 ? b : e;
            if (hi <= lo) continue;
            float wd = pass == 0 ? o->weight_decay : 0.0f;
            op_adamw(o->d, o->master + lo, o->m + lo, o->v + lo, grads + lo,
                     working ? (char *)working + lo * es : NULL, wt, hi - lo, lr, o->beta1,
                     o->beta2, o->eps, wd, grad_scale, step);
        }
        pos = e;
    }
}

float lr_at(int step, int warmup, int total, float max_lr, float min_lr) {
    if (warmup > 0 && step <= warmup) return max_lr * (float)step / (float)warmup;
    if (step >= total || total <= warmup) return step >= total ? min_lr : max_lr;
    double p = (double)(step - warmup) / (double)(total - warmup);
    return (float)(min_lr + 0.5 * (max_lr - min_lr) * (1.0 + cos(M_PI * p)));
}

float clip_factor(double sumsq, float max_norm, double *norm_out) {
    double norm = sqrt(sumsq);
    if (norm_out) *norm_out = norm;
    if (max_norm <= 0.0f) return 1.0f;
    double f = max_norm / (norm + 1e-6);
    return f < 1.0 ? (float)f : 1.0f;
}
