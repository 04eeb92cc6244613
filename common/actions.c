/* actions.c: the one-stage schedule, a stage's links, freeing any schedule (actions.h). */
#include "actions.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

void pipe_schedule_one_stage(pipe_schedule_t *s, int M) {
    memset(s, 0, sizeof *s);
    s->kind = PIPE_ONE_STAGE;
    s->P = 1;
    s->M = M;
    s->V = 1;
    s->slices = 1;
    s->n = xmalloc(sizeof(int));
    s->a = xmalloc(sizeof(pipe_action_t *));
    s->n[0] = 2 * M;
    s->a[0] = xcalloc((size_t)2 * M, sizeof(pipe_action_t));
    for (int i = 0; i < 2 * M; i++) {
        s->a[0][i].op = i % 2 ? PA_BWD : PA_FWD;
        s->a[0][i].mb = i / 2;
    }
}

void pipe_schedule_free(pipe_schedule_t *s) {
    for (int st = 0; st < s->P && s->a; st++) free(s->a[st]);
    free(s->a);
    free(s->n);
    memset(s, 0, sizeof *s);
}

void pipe_links_make(const pipe_schedule_t *s, int stage, pipe_links_t *l) {
    int n = l->n = s->n[stage], MV = s->M * s->V;
    const pipe_action_t *a = s->a[stage];
    l->split = 0;
    for (int i = 0; i < n; i++) l->split |= a[i].op == PA_W;
    const int fin = l->split ? PA_W : PA_BWD;
    l->in_action = xmalloc(sizeof(int) * (size_t)n);
    l->act_send = xmalloc(sizeof(int) * (size_t)n);
    l->sends_grad = xcalloc((size_t)n, sizeof(int));
    l->last_bwd = xcalloc((size_t)n, sizeof(int));
    /* by (micro-batch, chunk): where its RECVs and its activation SEND stand; by chunk, its last backward */
    int *recv_at = xmalloc(sizeof(int) * 3 * (size_t)MV), *send_at = recv_at + 2 * MV;
    int *last = xmalloc(sizeof(int) * (size_t)s->V);
    for (int k = 0; k < 3 * MV; k++) recv_at[k] = -1;
    for (int c = 0; c < s->V; c++) last[c] = -1;
    for (int i = 0; i < n; i++) {
        int k = a[i].mb * s->V + a[i].chunk;
        if (a[i].op == PA_RECV) recv_at[a[i].msg * MV + k] = i;
        if (a[i].op == PA_SEND && a[i].msg == PM_ACT) send_at[k] = i;
        if (a[i].op == fin) last[a[i].chunk] = i;
    }
    int first = n;
    for (int c = 0; c < s->V; c++) if (last[c] >= 0 && last[c] < first) first = last[c];
    for (int i = 0; i < n; i++) {
        int k = a[i].mb * s->V + a[i].chunk;
        l->in_action[i] = a[i].op == PA_FWD ? recv_at[PM_ACT * MV + k] : a[i].op == PA_BWD ? recv_at[PM_GRAD * MV + k] : -1;
        l->act_send[i] = a[i].op == fin ? send_at[k] : -1;
        l->sends_grad[i] = a[i].op == PA_BWD && pipe_vstage(s, stage, a[i].chunk) > 0;
        if (a[i].op == fin && last[a[i].chunk] == i) l->last_bwd[i] = i == first ? 2 : 1;
    }
    free(recv_at); free(last);
}

void pipe_links_free(pipe_links_t *l) {
    free(l->in_action); free(l->act_send); free(l->sends_grad); free(l->last_bwd);
    memset(l, 0, sizeof *l);
}
