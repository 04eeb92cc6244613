/* trainer.c: 09_context_parallel/cp's composition (trainer.h): each
 * sequence cut over the cp ranks, attention across them, DDP over the
 * context x data group, and the step that counts the attention's blocking
 * communication as exposed. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "trainer.h"

/* The runner's step (the attention's blocking communication counts as
 * exposed, not as compute); each rank counts its own tokens' loss. */
static void cp_step(train_t *tr, void *ctx, long step, train_step_t *st) {
    cpp_t *p = ctx;
    cp_stats_reset(&p->c);
    runner_step(tr, &p->run, step, st);
    p->last = p->c.st;
    if (step > tr->start + 1) {
        p->sum.compute_s += p->c.st.compute_s;
        p->sum.compute_s_cpu += p->c.st.compute_s_cpu;
        p->sum.comm_s += p->c.st.comm_s;
        p->timed++;
    }
}

static void layout_line(const model_t *m, const char *algo) {
    const int C = m->shard.cp;
    say("cp:      %s attention over %d rank%s; each holds %d token%s of every sequence, %s:", algo, C,
        C == 1 ? "" : "s", m->T, m->T == 1 ? "" : "s",
        m->nck == 2 ? "balanced (chunks i and 2C-1-i of 2C)" : "in order (chunk i of C)");
    for (int r = 0; r < C && r < 8; r++) {
        say(" %d:", r);
        for (int k = 0; k < m->nck; k++) {
            int p0 = model_cp_chunk_pos(m, r, k);
            say("%s[%d,%d)", k ? "+" : "", p0, p0 + m->Tc);
        }
    }
    say("%s\n", C > 8 ? " ..." : "");
}

cp_algo_t cpp_algo(const cpp_t *p) { return strcmp(p->algo, "ulysses") == 0 ? CP_ULYSSES : CP_RING; }


void cpp_check(train_t *tr, void *ctx, int *tp, int *cp, int *pp) {
    cpp_t *p = ctx;
    (void)tp, (void)pp;
    args_check_output(MPI_COMM_WORLD, "bench-csv", p->bench_csv, BENCH_HEADER);
    if (p->cp == 0) p->cp = tr->dist.world;
    *cp = p->cp;
}

/* Each sequence cut over the cp ranks, attention across them, DDP over the
 * context x data group. */
train_step_fn cpp_compose(train_t *tr, void *ctx, void **step_ctx) {
    cpp_t *p = ctx;
    cp_algo_t algo = cpp_algo(p);
    tr->shard.cp_balance = !p->no_balance;
    cp_check(&tr->cfg, &tr->shard, algo);
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    model_t *m = &tr->model;
    cp_init(&p->c, &tr->axis[AXIS_CP], m, algo);
    layout_line(m, cp_algo_name[algo]);
    if (algo == CP_ULYSSES)
        say("cp:      Ulysses: each rank attends %d of %d query heads (%d kv head%s%s) over all %d tokens\n",
            p->c.Hc, m->H, p->c.KVc, p->c.KVc == 1 ? "" : "s",
            m->KV % p->cp ? ", each shared by the ranks whose query heads read it" : "", tr->cfg.seq);
    say("dp:      gradients all-reduced over the %d rank%s of the context x data group (cp %d x dp %d)\n",
        tr->grad.size, tr->grad.size == 1 ? "" : "s", p->cp, tr->dp);
    runner_init(&p->run, NULL, tr, train_ddp(tr, &p->gs, 1), 0, 0);
    runner_add_seam(&p->run, &p->c.st.comm_s);
    train_optimizer(tr, NULL, 0, 0);
    *step_ctx = p;
    return cp_step;
}
