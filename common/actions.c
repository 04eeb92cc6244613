/* actions.c: the one-stage schedule and freeing any schedule (actions.h). */
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
