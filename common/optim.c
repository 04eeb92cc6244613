/* optim.c: AdamW over this rank's pieces of the parameters, the
 * learning-rate schedule and the clipping factor. The arithmetic is op_adamw
 * (ops.h); this file cuts the pieces into runs with and without weight decay
 * (and counted or not in the gradient norm) and walks them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"
#include "optim.h"

/* Cut every piece at the tensor boundaries where decay or counting changes. */
static void make_runs(optim_t *o, const model_config_t *c, const model_shard_t *s) {
    int nt = model_tensors(c, s, NULL, 0);
    model_tensor_t *ts = xmalloc(sizeof *ts * (size_t)nt);
    model_tensors(c, s, ts, nt);
    o->runs = xmalloc(sizeof *o->runs * (size_t)(o->npieces * nt + 1));
    o->nruns = 0;
    for (int p = 0; p < o->npieces; p++) {
        size_t lo = o->pieces[p].flat, hi = lo + o->pieces[p].count;
        for (int k = 0; k < nt; k++) {   /* tensors are in flat order */
            size_t b = ts[k].offset, e = b + ts[k].rows * ts[k].cols;
            if (e <= lo || b >= hi) continue;
            if (b < lo) b = lo;
            if (e > hi) e = hi;
            int decay = !ts[k].is_norm, counted = ts[k].tp_owner;
            if (o->nruns && o->runs[o->nruns - 1].piece == p && o->runs[o->nruns - 1].decay == decay &&
                o->runs[o->nruns - 1].counted == counted) {
                o->runs[o->nruns - 1].count += e - b;   /* continues the previous run */
                continue;
            }
            o->runs[o->nruns].piece = p;
            o->runs[o->nruns].rel = b - lo;
            o->runs[o->nruns].count = e - b;
            o->runs[o->nruns].decay = decay;
            o->runs[o->nruns].counted = counted;
            o->nruns++;
        }
    }
    free(ts);
}

void optim_init(optim_t *o, const optim_piece_t *pieces, int npieces, size_t n,
                const float *master_init, const model_config_t *c, const model_shard_t *s,
                const device_t *d) {
    memset(o, 0, sizeof *o);
    o->d = d;
    o->n = n;
    for (int p = 0; p < npieces; p++)
        if (pieces[p].off + pieces[p].count > n || (p && pieces[p].off < pieces[p - 1].off + pieces[p - 1].count))
            die("optim_init: piece %d [%zu, +%zu) is outside [0, %zu) or overlaps the one before",
                p, pieces[p].off, pieces[p].count, n);
    o->pieces = xmalloc(sizeof *o->pieces * (size_t)(npieces ? npieces : 1));
    memcpy(o->pieces, pieces, sizeof *o->pieces * (size_t)npieces);
    o->npieces = npieces;
    o->master = dev_alloc_as(d, n * sizeof(float), MEM_OPTIM);
    o->m = dev_alloc_as(d, n * sizeof(float), MEM_OPTIM);
    o->v = dev_alloc_as(d, n * sizeof(float), MEM_OPTIM);
    dev_from_host(d, o->master, master_init, n * sizeof(float));
    o->beta1 = OPTIM_BETA1;
    o->beta2 = OPTIM_BETA2;
    o->eps = OPTIM_EPS;
    o->weight_decay = OPTIM_WEIGHT_DECAY;
    make_runs(o, c, s);
}

void optim_free(optim_t *o) {
    dev_free(o->d, o->master);
    dev_free(o->d, o->m);
    dev_free(o->d, o->v);
    free(o->pieces);
    free(o->runs);
    memset(o, 0, sizeof *o);
}

void optim_load(optim_t *o, dtype_t wt, const float *w) {
    if (w != o->master) dev_copy(o->d, o->master, w, o->n * sizeof(float));
    for (int p = 0; p < o->npieces; p++)
        if (o->pieces[p].work)
            op_cast(o->d, o->master + o->pieces[p].off, DT_F32, o->pieces[p].work, wt, o->pieces[p].count);
}

void optim_step(optim_t *o, dtype_t wt, float lr, float grad_scale, int step) {
    if (step < 1) die("optim_step: step must be >= 1 (got %d)", step);
    size_t es = dtype_size(wt);
    for (int r = 0; r < o->nruns; r++) {
        const optim_piece_t *pc = &o->pieces[o->runs[r].piece];
        size_t rel = o->runs[r].rel, off = pc->off + rel;
        void *work = pc->work ? (char *)pc->work + rel * es : NULL;
        if (o->sgd) {   /* master += (-lr grad_scale) grad: one product rounding, one sum rounding */
            op_scale(o->d, DT_F32, pc->grad + rel, -lr * grad_scale, o->runs[r].count);
            op_add(o->d, DT_F32, o->master + off, pc->grad + rel, o->master + off, o->runs[r].count);
            if (work) op_cast(o->d, o->master + off, DT_F32, work, wt, o->runs[r].count);
            continue;
        }
        op_adamw(o->d, o->master + off, o->m + off, o->v + off, pc->grad + rel,
                 work, wt, o->runs[r].count, lr,
                 o->beta1, o->beta2, o->eps, o->runs[r].decay ? o->weight_decay : 0.0f,
                 grad_scale, step);
    }
}

/* One op_sumsq (a host synchronisation on a GPU) per stretch of counted
 * runs that follow each other in one piece: usually one per piece. */
double optim_grad_sumsq(const optim_t *o) {
    double s = 0.0;
    for (int r = 0; r < o->nruns;) {
        if (!o->runs[r].counted) { r++; continue; }
        int p = o->runs[r].piece, e = r + 1;
        size_t n = o->runs[r].count;
        while (e < o->nruns && o->runs[e].counted && o->runs[e].piece == p &&
               o->runs[e].rel == o->runs[r].rel + n)
            n += o->runs[e++].count;
        s += op_sumsq(o->d, DT_F32, o->pieces[p].grad + o->runs[r].rel, n);
        r = e;
    }
    return s;
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
