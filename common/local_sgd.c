/* local_sgd.c: local SGD's weight average and DiLoCo's outer step, run by
 * the training loop after each optimizer step (local_sgd.h). */
#include "local_sgd.h"

#include "check.h"
#include "ops.h"

/* After step s: average when s is a multiple of H, and after the last step. */
static void after_update(train_t *tr, void *ctx) {
    local_sgd_t *l = ctx;
    long s = ++l->step;
    if (s % l->H != 0 && s != tr->o.steps) return;
    const device_t *d = &tr->dev;
    optim_t *o = &tr->opt;
    size_t n = o->n;
    float *w = o->master;
    comm_allreduce(&tr->grad, w, w, n, DT_F32, RED_SUM);
    op_scale(d, DT_F32, w, 1.0f / (float)tr->grad.size, n);   /* w = mean of the ranks' weights */
    if (l->outer_lr > 0) {
        op_scale(d, DT_F32, w, -1.0f, n);
        op_add(d, DT_F32, l->anchor, w, w, n);                  /* w = delta = w0 - mean */
        op_scale(d, DT_F32, l->u, l->outer_momentum, n);
        op_add(d, DT_F32, l->u, w, l->u, n);                    /* u = mu u + delta */
        op_scale(d, DT_F32, w, -l->outer_lr, n);
        op_add(d, DT_F32, l->anchor, w, l->anchor, n);          /* w0 -= eta delta */
        op_cast(d, l->u, DT_F32, w, DT_F32, n);
        op_scale(d, DT_F32, w, -l->outer_lr * l->outer_momentum, n);
        op_add(d, DT_F32, l->anchor, w, l->anchor, n);          /* w0 -= eta mu u */
        op_cast(d, l->anchor, DT_F32, w, DT_F32, n);
    }
    optim_load(o, tr->dtype, w);   /* the working weights follow the master */
    l->averages++;
}

void local_sgd_init(local_sgd_t *l, train_t *tr, int H, float outer_lr, float outer_momentum) {
    *l = (local_sgd_t){.H = H, .outer_lr = outer_lr, .outer_momentum = outer_momentum, .step = tr->start};
    /* each rank's gradient is the mean over its own tokens (exact: the
     * local token count is global_tokens / dp) */
    tr->loss_scale = (float)(1.0 / (double)(tr->global_tokens / tr->dp));
    tr->own_norm = 1;
    train_hooks_add(&tr->after_update, after_update, l);
    if (outer_lr > 0) {
        size_t bytes = tr->opt.n * sizeof(float);
        l->anchor = dev_alloc_as(&tr->dev, bytes, MEM_OPTIM);
        l->u = dev_alloc_as(&tr->dev, bytes, MEM_OPTIM);
        dev_copy(&tr->dev, l->anchor, tr->opt.master, bytes);
    }
}

int local_sgd_averages(const local_sgd_t *l, const train_t *tr) {
    long S = tr->o.steps, s0 = tr->start;   /* steps s0 + 1 .. S: average_after's rule */
    return (int)(S / l->H - s0 / l->H + (S % l->H != 0 && S > s0));
}

double local_sgd_bytes_per_step(const local_sgd_t *l, const train_t *tr) {
    int N = tr->grad.size;
    long steps = tr->o.steps - tr->start;
    return steps > 0 ? 2.0 * (N - 1) / N * 4.0 * (double)tr->opt.n * local_sgd_averages(l, tr) / steps : 0;
}

void local_sgd_free(local_sgd_t *l, const train_t *tr) {
    dev_free(&tr->dev, l->anchor);
    dev_free(&tr->dev, l->u);
    l->anchor = l->u = NULL;
}
