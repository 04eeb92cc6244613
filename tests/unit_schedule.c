/* unit_schedule.c: the pipeline schedules of chapter 07 as data
 * (07_pipeline/schedule.c): every schedule passes the checker, the replay
 * with equal stage times gives each schedule's bubble formula exactly, the
 * activations in flight are what each schedule promises, the lecture's
 * example, and the checker catching each kind of broken list (a backward
 * before its forward, a missing receive, sends out of order, a deadlock,
 * too many activations, ungrouped messages on one stream). No MPI traffic:
 * the lists are plain data. */
#define UNIT_MAIN
#include "unit.h"

#include "07_pipeline/schedule.h"

static const int KINDS[] = {PIPE_NAIVE, PIPE_GPIPE, PIPE_1F1B, PIPE_INTERLEAVED};

/* Every buildable (kind, P, M, V) with P <= 8, M <= 16 and V <= 4; f gets each. */
static int each_schedule(void (*f)(pipe_schedule_t *s, void *ctx), void *ctx) {
    int n = 0;
    for (int k = 0; k < 4; k++)
        for (int P = 1; P <= 8; P++)
            for (int M = 1; M <= 16; M++)
                for (int V = 1; V <= 4; V++) {
                    if (pipe_schedule_valid(KINDS[k], P, M, V, NULL, 0)) continue;
                    pipe_schedule_t s;
                    pipe_schedule_build(&s, KINDS[k], P, M, V);
                    f(&s, ctx);
                    pipe_schedule_free(&s);
                    n++;
                }
    return n;
}

static void check_one(pipe_schedule_t *s, void *ctx) {
    (void)ctx;
    char err[400];
    if (pipe_schedule_check(s, err, sizeof err))
        UNIT_FAIL("%s P %d M %d V %d: %s", pipe_kind_name[s->kind], s->P, s->M, s->V, err);
}

TEST(schedule_every_kind_passes_the_checker_up_to_8_stages_16_micro_batches_4_chunks) {
    int n = each_schedule(check_one, NULL);
    printf("%d schedules checked\n", n);
    EXPECT(n > 400);
}

/* 1F1B's computes on each stage, whatever its warm-up: every micro-batch's
 * forward once and its backward once, forwards and backwards each in
 * micro-batch order, a backward after its forward, and after the first
 * backward no two forwards in a row (one forward, one backward). The
 * checker asks more (the warm-up's length, through the activations in
 * flight; the messages); this part holds for a list that gets those wrong. */
TEST(schedule_1f1b_computes_every_micro_batch_in_order_one_forward_one_backward) {
    for (int P = 1; P <= 8; P++)
        for (int M = 1; M <= 16; M++) {
            pipe_schedule_t s;
            pipe_schedule_build(&s, PIPE_1F1B, P, M, 1);
            for (int st = 0; st < P; st++) {
                int nf = 0, nb = 0, run = 0;
                for (int i = 0; i < s.n[st]; i++) {
                    const pipe_action_t *a = &s.a[st][i];
                    if (a->op == PA_FWD) {
                        if (a->mb != nf) UNIT_FAIL("P %d M %d stage %d: forward of micro-batch %d where %d is next", P, M, st, a->mb, nf);
                        nf++;
                        if (nb > 0 && nb < M && ++run > 1) UNIT_FAIL("P %d M %d stage %d: two forwards in a row after the first backward", P, M, st);
                    } else if (a->op == PA_BWD) {
                        if (a->mb != nb) UNIT_FAIL("P %d M %d stage %d: backward of micro-batch %d where %d is next", P, M, st, a->mb, nb);
                        if (a->mb >= nf) UNIT_FAIL("P %d M %d stage %d: backward of micro-batch %d before its forward", P, M, st, a->mb);
                        nb++;
                        run = 0;
                    }
                }
                if (nf != M || nb != M) UNIT_FAIL("P %d M %d stage %d: %d forwards and %d backwards, want %d each", P, M, st, nf, nb, M);
            }
            pipe_schedule_free(&s);
        }
}

/* Equal forward times f and backward times b on every stage, messages free:
 * the replay's bubble is the formula, for b = f and b = 2 f. */
static void replay_one(pipe_schedule_t *s, void *ctx) {
    double bf = *(double *)ctx, f[32], b[32];
    for (int i = 0; i < s->P * s->V; i++) {
        f[i] = 1.0 / s->V;
        b[i] = bf / s->V;
    }
    pipe_costs_t c = {f, b, 0, NULL};
    pipe_replay_t r;
    char err[300];
    if (pipe_replay(s, &c, &r, err, sizeof err)) UNIT_FAIL("%s", err);
    double want = pipe_bubble_formula(s->kind, s->P, s->M, s->V);
    if (fabs(r.bubble - want) > 1e-12)
        UNIT_FAIL("%s P %d M %d V %d, backward %g x forward: replayed bubble %.6f, formula %.6f",
                  pipe_kind_name[s->kind], s->P, s->M, s->V, bf, r.bubble, want);
    double ideal = s->M * (1 + bf);   /* one stage's work */
    for (int st = 0; st < s->P; st++)
        if (fabs(r.busy[st] - ideal) > 1e-9 || fabs(r.busy[st] + r.idle[st] - r.step) > 1e-9)
            UNIT_FAIL("stage %d: busy %g (want %g), idle %g, step %g", st, r.busy[st], ideal, r.idle[st], r.step);
    pipe_replay_free(&r);
}

TEST(schedule_replay_with_equal_stage_times_gives_the_bubble_formula) {
    for (double bf = 1; bf <= 2; bf++) each_schedule(replay_one, &bf);
}

TEST(schedule_lecture_example_4_stages_4_micro_batches_is_4_of_7_busy) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_GPIPE, 4, 4, 1);
    double one[4] = {1, 1, 1, 1};
    pipe_costs_t c = {one, one, 0, one};
    pipe_replay_t r;
    EXPECT(pipe_replay(&s, &c, &r, NULL, 0) == 0);
    EXPECT_NEAR(r.step, 14, 0);                    /* (M + P - 1) forwards + as many backwards */
    EXPECT_NEAR(1 - r.bubble, 4.0 / 7.0, 1e-15);   /* utilisation 57% */
    pipe_replay_free(&r);
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    pipe_schedule_print(&s, f);
    fclose(f);
    printf("%s", buf);
    EXPECT(strstr(buf, "utilisation 4/7 = 57.1%") != NULL);
    EXPECT(strstr(buf, "stage 0  F0 F1 F2 F3 .  .  .  .  .  .  B0 B1 B2 B3") != NULL);
    pipe_schedule_free(&s);
}

static void inflight_one(pipe_schedule_t *s, void *ctx) {
    (void)ctx;
    for (int st = 0; st < s->P; st++) {
        int got = pipe_inflight_max(s, st), want = pipe_inflight_bound(s->kind, s->P, s->M, s->V, st);
        if (got != want)
            UNIT_FAIL("%s P %d M %d V %d stage %d: %d chunk micro-batches in flight, promised exactly %d",
                      pipe_kind_name[s->kind], s->P, s->M, s->V, st, got, want);
    }
}

TEST(schedule_activations_in_flight_are_exactly_the_promise) {
    each_schedule(inflight_one, NULL);
    /* the figures the chapter quotes: GPipe holds M, 1F1B at most P */
    EXPECT_EQ_INT(pipe_inflight_bound(PIPE_GPIPE, 4, 8, 1, 0), 8);
    EXPECT_EQ_INT(pipe_inflight_bound(PIPE_1F1B, 4, 8, 1, 0), 4);
    EXPECT_EQ_INT(pipe_inflight_bound(PIPE_1F1B, 4, 8, 1, 3), 1);
}

TEST(schedule_formulas_are_the_papers) {
    EXPECT_NEAR(pipe_bubble_formula(PIPE_NAIVE, 8, 4, 1), 7.0 / 8, 1e-15);        /* 12.5% busy */
    EXPECT_NEAR(pipe_bubble_formula(PIPE_GPIPE, 4, 4, 1), 3.0 / 7, 1e-15);
    EXPECT_NEAR(pipe_bubble_formula(PIPE_1F1B, 4, 8, 1), 3.0 / 11, 1e-15);
    EXPECT_NEAR(pipe_bubble_formula(PIPE_INTERLEAVED, 4, 8, 2), 3.0 / 19, 1e-15);
}

TEST(schedule_refuses_impossible_parameters) {
    char why[200];
    EXPECT(pipe_schedule_valid(PIPE_INTERLEAVED, 4, 6, 2, why, sizeof why) != 0);   /* M % P */
    EXPECT(strstr(why, "not a multiple of 4") != NULL);
    EXPECT(pipe_schedule_valid(PIPE_INTERLEAVED, 4, 8, 1, why, sizeof why) != 0);
    EXPECT(pipe_schedule_valid(PIPE_INTERLEAVED, 1, 8, 2, why, sizeof why) != 0);
    EXPECT(pipe_schedule_valid(PIPE_1F1B, 4, 8, 2, why, sizeof why) != 0);
    EXPECT(pipe_schedule_valid(PIPE_GPIPE, 0, 8, 1, why, sizeof why) != 0);
    EXPECT(pipe_schedule_valid(PIPE_INTERLEAVED, 4, 8, 2, why, sizeof why) == 0);
}

/* TeraPipe: every (P, M, K) passes the checker, and with equal slice times
 * (a slice's forward 1 / K, its backward bf / K) the replay's bubble is
 * (P - 1) / (M K + P - 1). */
TEST(schedule_terapipe_passes_the_checker_and_replays_to_its_formula) {
    int n = 0;
    for (int P = 1; P <= 6; P++)
        for (int M = 1; M <= 4; M++)
            for (int K = 1; K <= 4; K++) {
                pipe_schedule_t s;
                pipe_schedule_terapipe(&s, P, M, K);
                check_one(&s, NULL);
                for (double bf = 1; bf <= 2; bf++) {
                    double f[8], b[8];
                    for (int i = 0; i < P; i++) {
                        f[i] = 1.0 / K;
                        b[i] = bf / K;
                    }
                    pipe_costs_t c = {f, b, 0, NULL};
                    pipe_replay_t r;
                    char err[300];
                    if (pipe_replay(&s, &c, &r, err, sizeof err)) UNIT_FAIL("%s", err);
                    double want = (P - 1.0) / ((double)M * K + P - 1.0);
                    if (fabs(r.bubble - want) > 1e-12 || fabs(pipe_bubble_formula(PIPE_TERAPIPE, P, M * K, 1) - want) > 1e-15)
                        UNIT_FAIL("terapipe P %d M %d K %d, backward %g x forward: replayed bubble %.6f, "
                                  "formula %.6f, (P-1)/(M K+P-1) %.6f", P, M, K, bf, r.bubble,
                                  pipe_bubble_formula(PIPE_TERAPIPE, P, M * K, 1), want);
                    pipe_replay_free(&r);
                }
                pipe_schedule_free(&s);
                n++;
            }
    printf("%d terapipe schedules checked and replayed\n", n);
}

/* Balanced slices: with b = 0 every slice has T / K tokens; with the
 * attention term each slice's cost is within one token's cost of 1/K of
 * the whole, and later slices are no longer than earlier ones. */
TEST(schedule_balanced_slices_share_the_cost_within_one_token) {
    int pos[9];
    pipe_slices_balanced(64, 8, 1, 0, pos);
    for (int k = 0; k <= 8; k++)
        if (pos[k] != 8 * k) UNIT_FAIL("equal costs: boundary %d at %d, want %d", k, pos[k], 8 * k);
    double a = 144, b = 1;   /* about the tests' tiny model: matmuls 144 keys' worth of attention */
    for (int T = 8; T <= 512; T *= 4)
        for (int K = 1; K <= 8; K++) {
            pipe_slices_balanced(T, K, a, b, pos);
            double total = a * T + b * T * (T + 1.0) / 2, dear = a + b * T;
            for (int k = 0; k < K; k++) {
                double c = a * (pos[k + 1] - pos[k]) + b * ((double)pos[k + 1] * (pos[k + 1] + 1) - (double)pos[k] * (pos[k] + 1)) / 2;
                if (pos[k + 1] <= pos[k] || fabs(c - total / K) > dear + 1e-9)
                    UNIT_FAIL("T %d K %d: slice %d [%d, %d) costs %g, its share is %g (one token: %g)", T, K, k,
                              pos[k], pos[k + 1], c, total / K, dear);
                if (k > 0 && T >= 8 * K && pos[k + 1] - pos[k] > pos[k] - pos[k - 1] + 1)
                    UNIT_FAIL("T %d K %d: slice %d has %d tokens, the one before %d", T, K, k, pos[k + 1] - pos[k],
                              pos[k] - pos[k - 1]);
            }
            if (pos[0] != 0 || pos[K] != T) UNIT_FAIL("T %d K %d: slices cover [%d, %d)", T, K, pos[0], pos[K]);
        }
}

/* ---- the checker catches broken lists ---------------------------------------------------- */
static void expect_refused(const pipe_schedule_t *s, const char *want, const char *what) {
    char err[400] = "";
    int rc = pipe_schedule_check(s, err, sizeof err);
    printf("%s: %s\n", what, rc ? err : "(accepted)");
    if (rc == 0) UNIT_FAIL("%s: the checker accepted it", what);
    else if (!strstr(err, want)) UNIT_FAIL("%s: expected \"%s\" in \"%s\"", what, want, err);
}

static int find(const pipe_schedule_t *s, int st, int op, int mb, int msg) {
    for (int i = 0; i < s->n[st]; i++) {
        const pipe_action_t *a = &s->a[st][i];
        if (a->op == op && a->mb == mb && (!pipe_is_msg(op) || a->msg == msg)) return i;
    }
    return -1;
}

/* ZB-H1 (Qi et al. 2023): every list up to 8 stages and 16 micro-batches
 * passes the checker and holds exactly min(M, P) micro-batches (1F1B's peak,
 * on every stage); with T_F = T_B = T_W and M >= P its replayed bubble is
 * the formula (P - 1) / (3 M + P - 1), i.e. (P - 1)(T_F + T_B - T_W) of idle
 * per stage, against 1F1B's (P - 1)(T_F + T_B + T_W) on the same times (its
 * backward B + W in one); with fewer micro-batches than stages it is never
 * slower than 1F1B. */
TEST(schedule_zbh1_passes_the_checker_and_its_bubble_is_the_formula) {
    double one[8] = {1, 1, 1, 1, 1, 1, 1, 1}, two[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    int n = 0;
    for (int P = 1; P <= 8; P++)
        for (int M = 1; M <= 16; M++) {
            pipe_schedule_t s, f;
            pipe_schedule_build(&s, PIPE_ZBH1, P, M, 1);
            pipe_schedule_build(&f, PIPE_1F1B, P, M, 1);
            check_one(&s, NULL);
            for (int st = 0; st < P; st++)
                if (pipe_inflight_max(&s, st) != (M < P ? M : P))
                    UNIT_FAIL("zbh1 P %d M %d stage %d holds %d micro-batches, want min(M, P) = %d", P, M, st,
                              pipe_inflight_max(&s, st), M < P ? M : P);
            pipe_costs_t c = {one, one, 0, one}, cf = {one, two, 0, NULL};
            pipe_replay_t r, rf;
            EXPECT(pipe_replay(&s, &c, &r, NULL, 0) == 0);
            EXPECT(pipe_replay(&f, &cf, &rf, NULL, 0) == 0);
            double want = pipe_bubble_formula(PIPE_ZBH1, P, M, 1);
            if (M >= P && (fabs(r.bubble - want) > 1e-12 || fabs(r.step - (3 * M + P - 1)) > 1e-12))
                UNIT_FAIL("zbh1 P %d M %d: replayed bubble %.6f step %g, formula %.6f step %d", P, M, r.bubble,
                          r.step, want, 3 * M + P - 1);
            if (M >= P && fabs(rf.step - r.step - 2 * (P - 1)) > 1e-12)
                UNIT_FAIL("P %d M %d: 1F1B's step %g is not zbh1's %g + 2 (P - 1) T_W", P, M, rf.step, r.step);
            if (r.step > rf.step + 1e-12) UNIT_FAIL("P %d M %d: zbh1's step %g beyond 1F1B's %g", P, M, r.step, rf.step);
            pipe_replay_free(&r);
            pipe_replay_free(&rf);
            pipe_schedule_free(&s);
            pipe_schedule_free(&f);
            n++;
        }
    printf("%d zbh1 lists checked and replayed\n", n);
}

/* ZB-H1 with unequal times, by hand: with M >= P every stage idles
 * (P - 1) max(T_B, T_F + max(0, T_B - T_W)) and the step is
 * M (T_F + T_B + T_W) plus that. The fill costs a forward per stage ahead,
 * and a W of the cool-down covers the wait for the next B only where it
 * lasts as long; but the last backward still crosses the P - 1 stages
 * after stage 0 one B at a time, so a B longer than F sets the idle.
 * E.g. 4 stages x 8 micro-batches at T_F = 1, T_B = 0.5, T_W = 1.5: idle 3
 * on every stage, step 8 x 3 + 3 = 27; at T_B = 1.5, T_W = 0.5: idle 6;
 * at T_F = 0.5, T_B = 1, T_W = 2: idle 3 (the backward chain's). */
TEST(schedule_zbh1_replay_idle_per_stage_with_unequal_f_b_w_times) {
    const double times[][3] = {{1, 0.5, 1.5}, {1, 1.5, 0.5}, {2, 1, 1}, {0.5, 1, 2}, {1, 2, 0.5}, {0.5, 2, 1}};
    for (int P = 2; P <= 6; P++)
        for (int M = P; M <= 2 * P + 1; M += P / 2 + 1)
            for (int t = 0; t < (int)(sizeof times / sizeof times[0]); t++) {
                double f[8], b[8], w[8], tf = times[t][0], tb = times[t][1], tw = times[t][2];
                for (int i = 0; i < P; i++) { f[i] = tf; b[i] = tb; w[i] = tw; }
                pipe_schedule_t s;
                pipe_schedule_build(&s, PIPE_ZBH1, P, M, 1);
                pipe_costs_t c = {f, b, 0, w};
                pipe_replay_t r;
                EXPECT(pipe_replay(&s, &c, &r, NULL, 0) == 0);
                double idle = (P - 1) * fmax(tb, tf + fmax(0, tb - tw)), step = M * (tf + tb + tw) + idle;
                if (fabs(r.step - step) > 1e-12)
                    UNIT_FAIL("zbh1 P %d M %d, T_F %g T_B %g T_W %g: step %g, by hand %g", P, M, tf, tb, tw, r.step, step);
                for (int st = 0; st < P; st++)
                    if (fabs(r.idle[st] - idle) > 1e-12)
                        UNIT_FAIL("zbh1 P %d M %d, T_F %g T_B %g T_W %g: stage %d idles %g, (P-1) max(T_B, T_F + "
                                  "max(0, T_B - T_W)) = %g", P, M, tf, tb, tw, st, r.idle[st], idle);
                pipe_replay_free(&r);
                pipe_schedule_free(&s);
            }
}

TEST(schedule_checker_catches_a_w_before_its_backward_missing_or_twice) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_ZBH1, 2, 2, 1);
    int b = find(&s, 1, PA_BWD, 0, 0), w = find(&s, 1, PA_W, 0, 0);
    pipe_action_t keep = s.a[1][w];
    s.a[1][w] = s.a[1][b];
    s.a[1][b] = keep;
    expect_refused(&s, "before its backward", "W 0 swapped with B 0 on stage 1");
    s.a[1][b] = s.a[1][w];
    s.a[1][w] = keep;
    s.a[1][w].mb = 1;   /* W 1 twice, W 0 never */
    expect_refused(&s, "twice", "W 0 renamed W 1 on stage 1");
    s.a[1][w] = keep;
    s.n[1]--;   /* drop the last action, a W */
    expect_refused(&s, "never runs the W", "the last W dropped on stage 1");
    s.n[1]++;
    pipe_schedule_free(&s);
}

TEST(schedule_checker_catches_a_backward_before_its_forward) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_GPIPE, 2, 2, 1);
    int f = find(&s, 1, PA_FWD, 0, 0), b = find(&s, 1, PA_BWD, 0, 0);   /* the last stage */
    pipe_action_t t = s.a[1][f];
    s.a[1][f] = s.a[1][b];
    s.a[1][b] = t;
    expect_refused(&s, "before its forward", "backward 0 swapped with forward 0 on stage 1");
    pipe_schedule_free(&s);
}

/* Slices 0 and 1 of micro-batch 0 trade places in every forward (and its
 * activation messages), or in every backward (and its gradient messages),
 * on every stage: the lists still match and cannot deadlock, but slice 1
 * would attend to keys not computed yet, or slice 0's key gradients would
 * miss what slice 1 adds. */
static void swap_slices(pipe_schedule_t *s, int op, int msg) {
    for (int st = 0; st < s->P; st++)
        for (int i = 0; i < s->n[st]; i++) {
            pipe_action_t *a = &s->a[st][i];
            if ((a->op == op || (a->op >= PA_SEND && a->msg == msg)) && a->mb < 2) a->mb ^= 1;
        }
}

TEST(schedule_checker_catches_token_slices_out_of_order) {
    pipe_schedule_t s;
    pipe_schedule_terapipe(&s, 3, 2, 2);
    swap_slices(&s, PA_BWD, PM_GRAD);
    expect_refused(&s, "before the backward of slice 1", "terapipe with slice 0's backward before slice 1's");
    pipe_schedule_free(&s);
    pipe_schedule_terapipe(&s, 3, 2, 2);
    swap_slices(&s, PA_FWD, PM_ACT);
    expect_refused(&s, "before the forward of slice 0", "terapipe with slice 1's forward before slice 0's");
    pipe_schedule_free(&s);
}

TEST(schedule_checker_catches_a_missing_receive) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_1F1B, 3, 3, 1);
    int r = find(&s, 1, PA_RECV, 1, PM_ACT);
    if (r > 0) s.a[1][r - 1].with_next = 0;   /* it was grouped with the send before it */
    memmove(&s.a[1][r], &s.a[1][r + 1], sizeof(pipe_action_t) * (size_t)(s.n[1] - r - 1));
    s.n[1]--;
    expect_refused(&s, "without receiving its input", "stage 1's receive of activation 1 dropped");
    pipe_schedule_free(&s);
}

TEST(schedule_checker_catches_sends_out_of_order) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_GPIPE, 2, 3, 1);
    /* stage 0 sends activations 1 and 2 in the other order (after both forwards) */
    int s1 = find(&s, 0, PA_SEND, 1, PM_ACT), s2 = find(&s, 0, PA_SEND, 2, PM_ACT);
    pipe_action_t a1 = s.a[0][s1], a2 = s.a[0][s2];
    int f2 = find(&s, 0, PA_FWD, 2, 0);
    /* list: ... F1 S1 F2 S2 ...  ->  ... F1 F2 S2 S1 ... */
    s.a[0][s1] = s.a[0][f2];
    s.a[0][f2] = a2;
    s.a[0][s2] = a1;
    for (int i = 0; i < s.n[0]; i++) s.a[0][i].with_next = 0;
    expect_refused(&s, "received as", "stage 0 sends activation 2 before activation 1");
    pipe_schedule_free(&s);
}

TEST(schedule_checker_catches_a_deadlock) {
    /* Stage 0 runs one micro-batch at a time (it needs gradient 0 before
     * forward 1), stage 1 runs GPipe (it needs activation 1 before backward
     * 0): every message matches, in order, and neither can go on. */
    pipe_schedule_t naive, gpipe;
    pipe_schedule_build(&naive, PIPE_NAIVE, 2, 2, 1);
    pipe_schedule_build(&gpipe, PIPE_GPIPE, 2, 2, 1);
    pipe_action_t *t = naive.a[1];
    int n = naive.n[1];
    naive.a[1] = gpipe.a[1];
    naive.n[1] = gpipe.n[1];
    gpipe.a[1] = t;
    gpipe.n[1] = n;
    naive.kind = PIPE_GPIPE;   /* so that the in-flight promise is not what fails */
    expect_refused(&naive, "deadlock", "stage 0 naive, stage 1 GPipe");
    pipe_replay_t r;
    double one[2] = {1, 1};
    pipe_costs_t c = {one, one, 0, one};
    EXPECT(pipe_replay(&naive, &c, &r, NULL, 0) != 0);
    pipe_replay_free(&r);
    pipe_schedule_free(&naive);
    pipe_schedule_free(&gpipe);
}

TEST(schedule_checker_catches_activations_beyond_the_promise) {
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_GPIPE, 2, 4, 1);
    s.kind = PIPE_1F1B;   /* GPipe's lists presented as 1F1B: stage 0 holds 4, 1F1B promises 2 */
    expect_refused(&s, "promises at most 2", "GPipe's lists claiming to be 1F1B");
    pipe_schedule_free(&s);
}

TEST(schedule_one_stream_per_rank_needs_sends_and_receives_grouped) {
    /* 1F1B's steady state: stage s sends activation i and then receives
     * gradient j, while stage s + 1 sends gradient j and then receives
     * activation i. With MPI (posting never waits) that is fine; on one
     * NCCL stream each send waits for its receive and both wait forever,
     * unless each pair is one grouped call. */
    for (int k = 2; k < 4; k++) {
        pipe_schedule_t s;
        pipe_schedule_build(&s, KINDS[k], 4, 8, KINDS[k] == PIPE_INTERLEAVED ? 2 : 1);
        char err[400];
        EXPECT(pipe_schedule_check(&s, err, sizeof err) == 0);
        pipe_schedule_ungroup(&s);
        double one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
        pipe_costs_t c = {one, one, 0, one};
        pipe_replay_t r;
        EXPECT(pipe_replay(&s, &c, &r, NULL, 0) == 0);   /* MPI: no deadlock */
        pipe_replay_free(&r);
        expect_refused(&s, "one stream per rank", KINDS[k] == PIPE_1F1B ? "1F1B ungrouped" : "interleaved ungrouped");
        pipe_schedule_free(&s);
    }
    pipe_schedule_t s;   /* GPipe's messages never need each other: fine either way */
    pipe_schedule_build(&s, PIPE_GPIPE, 4, 8, 1);
    pipe_schedule_ungroup(&s);
    char err[400];
    EXPECT(pipe_schedule_check(&s, err, sizeof err) == 0);
    pipe_schedule_free(&s);
}

TEST(schedule_replay_charges_each_message_its_time) {
    /* GPipe, 2 stages, 1 micro-batch: F on stage 0 (1), message (0.25), F on
     * stage 1 (2), B on stage 1 (3), message (0.25), B on stage 0 (4). */
    pipe_schedule_t s;
    pipe_schedule_build(&s, PIPE_GPIPE, 2, 1, 1);
    double f[2] = {1, 2}, b[2] = {4, 3};
    pipe_costs_t c = {f, b, 0.25, NULL};
    pipe_replay_t r;
    EXPECT(pipe_replay(&s, &c, &r, NULL, 0) == 0);
    EXPECT_NEAR(r.step, 1 + 0.25 + 2 + 3 + 0.25 + 4, 1e-15);
    EXPECT_NEAR(r.busy[0], 5, 1e-15);
    EXPECT_NEAR(r.idle[1], r.step - 5, 1e-15);
    EXPECT_NEAR(r.bubble, (r.step - 5) / r.step, 1e-15);
    pipe_replay_free(&r);
    pipe_schedule_free(&s);
}
