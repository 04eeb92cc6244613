/* fedavg.c: 03_ddp/fedavg, federated averaging (McMahan et al. 2017) with
 * stragglers: local SGD where the workers are many simulated clients, each
 * with its own non-IID shard, a sample of them per round, and a deadline.
 *
 *   mpirun -np 2 ./03_ddp/fedavg --clients 16 --fraction 0.25 --local-epochs 2 --deadline 60
 *
 * One round r (--steps rounds), on every rank:
 *   the server samples m = max(1, round(C K)) of the K clients (seeded by
 *   (seed, r), the same on every rank), each with a speed s_k drawn afresh
 *   for the round (seeded by (seed, k, r)):
 *       simulated time t_k = E n_k / s_k (E local epochs over its n_k
 *       samples at one simulated second per sample); t_k > D: dropped (the
 *       straggler's work is lost: it is not run here)
 *   the j-th client of the round that makes the deadline runs on rank
 *   j mod N, so the ranks run the round's clients at once, each rank its
 *   share one after another, each from the round's global weights w:
 *       E epochs of floor(n_k / B) local SGD steps of B samples (the runner,
 *       with the client's shard as data; --full-batch: one step on the
 *       whole shard, McMahan's B = infinity; a client holding fewer than B
 *       samples, n_k < B: one step on its whole shard, the batch's other
 *       rows ignored), giving w_k
 *   the server's weighted average over the clients that made it (S):
 *       w <- sum_{k in S} n_k w_k / sum_{k in S} n_k
 *   one all-reduce of the sums n_k w_k and of the counts n_k; nobody made
 *   it: w stays. Then the loss of w on a held-out IID mix.
 *
 * With every client selected, E = 1, one local step on the whole shard,
 * plain SGD and no deadline, a round is one DDP step on the union of the
 * shards: sum_k n_k (w - lr g_k) / n = w - lr sum_k n_k g_k / n, and n_k g_k
 * is the summed gradient of client k's samples; the weighting by n_k makes
 * it hold for unequal shards too (tests/ddp.tests).
 *
 * Bytes of a round in the client-server protocol: the fp32 weights down to
 * each of the m selected clients and up from each of the f that made the
 * deadline, 4 P (m + f); DDP over m workers sends 2 (m - 1) x 4 P gradient
 * bytes (summed over the workers, ring all-reduce) every step. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"
#include "outfile.h"
#include "perf.h"
#include "runner.h"
#include "train.h"

#define FED_HEADER "round,clients,fraction,local_epochs,deadline,alpha,selected,dropped,train_loss,eval_loss," \
                   "mb_per_round,ddp_mb_per_step"
#define CLIENTS_HEADER "round,client,rank,samples,speed,seconds,dropped"
#define EVAL_FIRST (1L << 40)   /* held-out samples: ids far from every client's */

typedef struct {
    int clients, per_client, classes, epochs, eval_batches, full_batch;
    double fraction, deadline, alpha;
    const char *fed_csv, *clients_csv;
    long *ids;              /* (clients x per_client) sample ids, by client */
    int *first, *count;     /* (clients) each client's shard in ids */
    int *order;             /* (clients) this round's selection: the first m */
    int *finisher;          /* (clients) the selected that make the deadline, in order */
    int client, local_step; /* what the runner reads now */
    int selected;           /* m: the clients selected each round */
    double ddp_mb;          /* what DDP over m workers sends per step, MB */
    float *w, *sum, *gsum;  /* (n) fp32: the server's weights, the sum of n_k w_k; --full-batch's gradient sum */
    FILE *csv, *ccsv;       /* --fed-csv, --clients-csv (rank 0) */
    long selected_all, dropped_all;   /* over the rounds so far */
    runner_t run;
} fedavg_t;

/* The runner's data: micro-batch `micro` of the client's local step; rows
 * past the end of the shard (a client with fewer samples than a batch)
 * are ignored (target -1: no loss, no gradient). */
static void client_batch(train_t *tr, void *ctx, long step, int micro) {
    (void)step;
    fedavg_t *f = ctx;
    long at = (long)f->local_step * tr->o.batch + (long)micro * tr->mb;
    int valid = (int)(f->count[f->client] - at), T = tr->o.seq;
    valid = valid < 0 ? 0 : valid > tr->mb ? tr->mb : valid;
    data_batch_ids(&tr->data, f->ids + f->first[f->client] + at, valid, tr->tokens, tr->targets);
    for (long i = (long)valid * T; i < (long)tr->mb * T; i++) tr->tokens[i] = 0, tr->targets[i] = -1;
}

/* ClientUpdate: E epochs of local SGD steps on client k's shard, from the
 * weights loaded; returns the summed loss and (in *tokens) the tokens
 * trained on. A local step is B = --batch samples (a shard's last n_k mod B
 * are left out); a shard of fewer than B samples is one step on all of it
 * (its batch padded with ignored rows); with --full-batch (B = infinity)
 * the whole shard, one sample per runner step with the gradients summed in
 * f->gsum. Each step clips by its own norm and takes round r's learning rate
 * (plain SGD: the update's number counts for nothing else). */
static double client_update(train_t *tr, fedavg_t *f, int k, long r, double *tokens) {
    int n = f->count[k], small = n < tr->o.batch;
    int B = f->full_batch || small ? n : tr->o.batch, steps = f->full_batch || small ? 1 : n / B;
    float *g = tr->opt.pieces[0].grad;   /* (n) fp32: the whole model's gradients */
    size_t bytes = tr->opt.n * sizeof(float);
    *tokens = (double)f->epochs * steps * B * tr->o.seq;
    if (n == 0) return 0;
    tr->loss_scale = (float)(1.0 / ((double)B * tr->o.seq));   /* the mean over the local step */
    f->client = k;
    double loss = 0;
    for (int s = 0; s < f->epochs * steps; s++) {
        train_step_t st;
        if (f->full_batch) {
            dev_memset0(&tr->dev, f->gsum, bytes);
            for (int j = 0; j < B; j++) {
                f->local_step = j;
                st = (train_step_t){0};
                runner_step(tr, &f->run, s + 1, &st);
                loss += st.loss;
                op_add(&tr->dev, DT_F32, f->gsum, g, f->gsum, tr->opt.n);
            }
            dev_copy(&tr->dev, g, f->gsum, bytes);
        } else {
            f->local_step = s % steps;
            st = (train_step_t){0};
            runner_step(tr, &f->run, s + 1, &st);
            loss += st.loss;
        }
        train_update(tr, r, optim_grad_sumsq(&tr->opt), NULL);
    }
    return loss;
}

/* Mean loss per token of the weights in the model on the held-out mix:
 * eval_batches micro-batches dealt round-robin over the ranks. */
static double eval_loss(train_t *tr, fedavg_t *f) {
    long *ids = xmalloc(sizeof(long) * (size_t)tr->mb);
    double loss = 0;
    for (int j = tr->dist.rank; j < f->eval_batches; j += tr->dist.world) {
        for (int b = 0; b < tr->mb; b++) ids[b] = EVAL_FIRST + (long)j * tr->mb + b;
        data_batch_ids(&tr->data, ids, tr->mb, tr->tokens, tr->targets);
        model_set_batch(&tr->model, &tr->acts, tr->tokens, tr->targets);
        loss += model_forward(&tr->model, &tr->acts);
    }
    free(ids);
    dist_allreduce(&loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "evaluation loss");
    return loss / ((double)f->eval_batches * tr->mb * tr->o.seq);
}

/* The first m of order: a partial Fisher-Yates shuffle from (seed, round). */
static void select_clients(fedavg_t *f, int m, uint64_t seed, long round) {
    uint64_t s = splitmix64(seed ^ 0xfeda9ull) + (uint64_t)round * 0x9e3779b97f4a7c15ull;
    for (int k = 0; k < f->clients; k++) f->order[k] = k;
    for (int k = 0; k < m; k++) {
        int j = k + (int)((splitmix64(s + (uint64_t)k) >> 11) * 0x1.0p-53 * (f->clients - k));
        int t = f->order[k];
        f->order[k] = f->order[j];
        f->order[j] = t;
    }
}

/* Client k's speed in round r, 2^u with u uniform in [-2, 2): the slowest
 * take 16 times as long as the fastest, and a client slow in one round may
 * be fast in the next (a phone busy, then idle). */
static double client_speed(uint64_t seed, int k, long round) {
    uint64_t h = splitmix64(splitmix64(seed ^ 0x5beedull) ^ (uint64_t)round << 32 ^ (uint64_t)k);
    return exp2(4.0 * (double)(h >> 11) * 0x1.0p-53 - 2.0);
}

/* Refuses what a round cannot do, then builds the 1-rank model, the runner
 * (no gradient sync: each client trains alone) and the SGD optimizer. */
static void fedavg_setup(train_t *tr, fedavg_t *f) {
    if (strcmp(tr->o.optim, "sgd")) usage_error("fedavg's clients step with plain SGD (--optim sgd)");
    if ((long)f->clients * f->per_client > INT_MAX)
        usage_error("--clients %d x --client-samples %d is more than %d samples", f->clients, f->per_client, INT_MAX);
    args_check_output(MPI_COMM_WORLD, "fed-csv", f->fed_csv, FED_HEADER);
    args_check_output(MPI_COMM_WORLD, "clients-csv", f->clients_csv, NULL);
    if (f->full_batch) {   /* one sample per runner step, summed */
        if (tr->o.micro != 1) usage_error("--full-batch takes no --micro");
        tr->o.batch = 1;
    }
    train_setup(tr, 1, 1, 1);
    train_model(tr, MODEL_PARAMS_AND_GRADS);
    runner_init(&f->run, NULL, tr, (grad_strategy_t){0}, 0, 0);
    train_optimizer(tr, NULL, 0, 0);
    tr->own_norm = 1;   /* each client clips by its own gradient's norm */
}

/* Deals the corpus into the clients' shards and makes them the runner's
 * data; returns the seconds the split took. */
static double split_clients(train_t *tr, fedavg_t *f) {
    int K = f->clients;
    f->ids = xmalloc(sizeof(long) * (size_t)K * f->per_client);
    f->first = xmalloc(sizeof(int) * K);
    f->count = xmalloc(sizeof(int) * K);
    f->order = xmalloc(sizeof(int) * K);
    f->finisher = xmalloc(sizeof(int) * K);
    double t_split = now_s();
    data_client_split(&tr->data, K, f->per_client, f->classes, f->alpha, f->ids, f->first, f->count);
    t_split = now_s() - t_split;
    tr->batch_fn = client_batch;
    tr->batch_ctx = f;
    return t_split;
}

/* The round's size m = max(1, round(C K)), and the lines that say what a
 * round does: the split, the deadline, the bytes against DDP's. */
static void fedavg_intro(train_t *tr, fedavg_t *f, double t_split) {
    int K = f->clients, B = tr->o.batch, N = tr->dist.world, small = 0;
    f->selected = (int)lround(f->fraction * K);
    if (f->selected < 1) f->selected = 1;
    int m = f->selected, minn = f->count[0], maxn = f->count[0];
    for (int k = 0; k < K; k++) {
        minn = f->count[k] < minn ? f->count[k] : minn, maxn = f->count[k] > maxn ? f->count[k] : maxn;
        small += !f->full_batch && f->count[k] < B;
    }
    char bstr[16];
    snprintf(bstr, sizeof bstr, "%d", B);
    double P = (double)tr->opt.n;
    f->ddp_mb = 2.0 * (m - 1) * 4.0 * P / 1e6;
    say("fedavg:  %d clients over %d rank%s, %s split (%d to %d samples each, dealt in %.3f s), %d selected per "
        "round (C %.3g), E %d, local batch %s, deadline %s\n", K, N, N == 1 ? "" : "s",
        f->alpha > 0 ? "Dirichlet" : "IID equal", minn, maxn, t_split, m, f->fraction, f->epochs,
        f->full_batch ? "the whole shard" : bstr, f->deadline > 0 ? "on" : "none");
    if (small)
        say("fedavg:  %d client%s hold%s fewer than %d samples: one local step per epoch on the whole shard\n",
            small, small == 1 ? "" : "s", small == 1 ? "s" : "", B);
    if (f->deadline > 0)
        say("fedavg:  deadline %.6g simulated s; client time E n_k / speed_k, speeds drawn each round\n", f->deadline);
    say("fedavg:  bytes per round 4 x %.0f x (selected + finished) <= %.7g MB; DDP over %d workers: 2 x (%d - 1) x 4 x "
        "%.0f = %.7g MB per step\n", P, 4.0 * P * 2 * m / 1e6, m, m, P, f->ddp_mb);
}

/* The server's weights w, the sum of the n_k w_k, and the CSVs (rank 0). */
static void fedavg_open(train_t *tr, fedavg_t *f) {
    size_t bytes = tr->opt.n * sizeof(float);
    f->w = dev_alloc_as(&tr->dev, bytes, MEM_OPTIM);
    f->sum = dev_alloc_as(&tr->dev, bytes, MEM_OPTIM);
    f->gsum = f->full_batch ? dev_alloc_as(&tr->dev, bytes, MEM_GRADS) : NULL;
    dev_copy(&tr->dev, f->w, tr->opt.master, bytes);
    int rank = tr->dist.rank;
    f->csv = f->fed_csv && rank == 0 ? csv_open(f->fed_csv, FED_HEADER) : NULL;
    if (f->clients_csv && rank == 0) {   /* the clients of this run: replaced, not appended */
        if (!(f->ccsv = fopen(f->clients_csv, "w"))) die("cannot write %s: %s", f->clients_csv, strerror(errno));
        fprintf(f->ccsv, "%s\n", CLIENTS_HEADER);
    }
}

static void fedavg_close(train_t *tr, fedavg_t *f) {
    if (f->csv) out_close(f->csv, f->fed_csv);
    if (f->ccsv) out_close(f->ccsv, f->clients_csv);
    dev_free(&tr->dev, f->w);
    dev_free(&tr->dev, f->sum);
    dev_free(&tr->dev, f->gsum);
    free(f->ids);
    free(f->first);
    free(f->count);
    free(f->order);
    free(f->finisher);
    runner_free(&f->run);
}

/* Round r's speeds against the deadline: the selected that make it, in
 * order, into finisher (the j-th runs on rank j mod N); returns how many. */
static int meet_deadline(train_t *tr, fedavg_t *f, long r) {
    int nf = 0, N = tr->dist.world;
    for (int i = 0; i < f->selected; i++) {
        int k = f->order[i];
        double speed = client_speed((uint64_t)tr->o.c.seed, k, r), t = f->epochs * (double)f->count[k] / speed;
        int late = f->deadline > 0 && t > f->deadline;
        if (f->ccsv)
            fprintf(f->ccsv, "%ld,%d,%d,%d,%.17g,%.17g,%d\n", r, k, late ? -1 : nf % N, f->count[k], speed, t, late);
        if (!late) f->finisher[nf++] = k;
    }
    return nf;
}

/* This rank's share of the nf finishers, each from w: sum holds the sum
 * over every rank of n_k w_k, and tot the sums of n_k, training loss and
 * its tokens. */
static void local_updates(train_t *tr, fedavg_t *f, int nf, long r, double tot[3]) {
    dev_memset0(&tr->dev, f->sum, tr->opt.n * sizeof(float));
    tot[0] = tot[1] = tot[2] = 0;
    for (int j = tr->dist.rank; j < nf; j += tr->dist.world) {
        int k = f->finisher[j];
        double tokens;
        optim_load(&tr->opt, tr->dtype, f->w);
        tot[1] += client_update(tr, f, k, r, &tokens);
        tot[2] += tokens;
        op_scale(&tr->dev, DT_F32, tr->opt.master, (float)f->count[k], tr->opt.n);   /* n_k w_k */
        op_add(&tr->dev, DT_F32, f->sum, tr->opt.master, f->sum, tr->opt.n);
        tot[0] += f->count[k];
    }
    comm_allreduce(&tr->grad, f->sum, f->sum, tr->opt.n, DT_F32, RED_SUM);
    dist_allreduce(tot, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, "round totals");
}

/* Round r's log line, its --fed-csv row, and the --clients-csv rows flushed. */
static void log_round(train_t *tr, fedavg_t *f, long r, int nf, const double tot[3], double ev) {
    /* nobody trained (every client dropped, or empty shards): no training loss */
    double train = tot[2] > 0 ? tot[1] / tot[2] : NAN;
    int m = f->selected, dropped = m - nf;
    double mb = 4.0 * (double)tr->opt.n * (2 * m - dropped) / 1e6;
    f->selected_all += m;
    f->dropped_all += dropped;
    char tl[16] = "     -";
    if (tot[2] > 0) snprintf(tl, sizeof tl, "%.4f", train);
    say("round %5ld/%d | selected %d | dropped %d | train loss %s | eval loss %.4f | lr %.2e | %.4f MB\n",
        r, tr->o.steps, m, dropped, tl, ev, train_lr(tr, r), mb);
    if (f->csv) {
        fprintf(f->csv, "%ld,%d,%.6g,%d,%.6g,%.6g,%d,%d,%.6f,%.6f,%.6f,%.6f", r, f->clients, f->fraction, f->epochs,
                f->deadline, f->alpha, m, dropped, train, ev, mb, f->ddp_mb);
        csv_end_row(f->csv, "measured");
        out_flush(f->csv, f->fed_csv);
    }
    if (f->ccsv) out_flush(f->ccsv, f->clients_csv);
    train_record(tr, r, train, 0);
}

/* One round r: select m clients, drop those past the deadline, run the
 * others' local updates, w <- their average weighted by n_k (nobody made
 * it: w stays), evaluate w on the held-out mix, log. */
static void fedavg_round(train_t *tr, fedavg_t *f, long r) {
    select_clients(f, f->selected, (uint64_t)tr->o.c.seed, r);
    int nf = meet_deadline(tr, f, r);
    double tot[3];   /* sum of n_k, training loss, its tokens */
    local_updates(tr, f, nf, r, tot);
    if (tot[0] > 0) {
        op_scale(&tr->dev, DT_F32, f->sum, (float)(1.0 / tot[0]), tr->opt.n);
        dev_copy(&tr->dev, f->w, f->sum, tr->opt.n * sizeof(float));
    }
    optim_load(&tr->opt, tr->dtype, f->w);
    log_round(tr, f, r, nf, tot, eval_loss(tr, f));
}

int main(int argc, char **argv) {
    fedavg_t f = {.clients = 8, .per_client = 24, .classes = 8, .epochs = 1, .eval_batches = 8,
                  .fraction = 1, .alpha = 0.5};
    arg_t flags[] = {
        {"clients", ARG_INT, &f.clients, "K simulated clients, dealt over the ranks (client k on rank k mod N)", NULL, 1, 1e6},
        {"client-samples", ARG_INT, &f.per_client, "n: samples per client on average (K n in all)", NULL, 1, 1e6},
        {"alpha", ARG_DOUBLE, &f.alpha, "Dirichlet concentration of the non-IID split over the classes (0: IID, equal shards)", NULL, 0, 1e6},
        {"classes", ARG_INT, &f.classes, "classes of samples (the word a sample starts in, mod this) for the split", NULL, 1, 1e6},
        {"fraction", ARG_DOUBLE, &f.fraction, "C: fraction of the clients selected each round", NULL, 1e-9, 1},
        {"local-epochs", ARG_INT, &f.epochs, "E: epochs over its shard each selected client trains", NULL, 1, 1e6},
        {"full-batch", ARG_FLAG, &f.full_batch, "B = infinity: a local step is the client's whole shard (E 1: FedSGD)", NULL, 0, 0},
        {"deadline", ARG_DOUBLE, &f.deadline, "D: simulated seconds a client has per round (E n_k / speed_k; 0: none)", NULL, 0, 1e12},
        {"eval-batches", ARG_INT, &f.eval_batches, "micro-batches (--batch / --micro samples each) of the held-out mix for each round's evaluation loss", NULL, 1, 1e6},
        {"clients-csv", ARG_STRING, &f.clients_csv, "write each selected client of each round: the rank that ran it (-1: dropped), samples n_k, speed s_k, simulated seconds E n_k / s_k", NULL, 0, 0},
        {"fed-csv", ARG_STRING, &f.fed_csv, "append one row per round (selected, dropped, losses, bytes) to this CSV", NULL, 0, 0},
    };
    static const train_refusal_t refused[] = {
        {"data", "it splits the synthetic corpus by class"},
        {"ckpt-dir", "its rounds save no checkpoints"},
        {"ckpt-every", "its rounds save no checkpoints"},
        {"ckpt-keep", "its rounds save no checkpoints"},
        {"resume", "its rounds save no checkpoints"},
        {"csv", "it writes its rows with --fed-csv"},
        {"dump", "a round averages weights: there is no step-1 gradient of a global batch to dump"},
        {"trace", "a round averages weights: there is no step loop to trace"},
        {"record", "a round averages weights: there is no step loop to record"},
    };
    train_program_t prog = {
        "03_ddp", "03_ddp/fedavg", "federated averaging",
        "Federated averaging of the Llama-style model: simulated clients with\n"
        "non-IID shards of the synthetic corpus, a fraction of them per round\n"
        "(--steps rounds), local SGD epochs under a deadline that drops the\n"
        "stragglers, and the server's average weighted by sample counts.\n"
        "--batch is a client's local batch.", flags, ARRAY_LEN(flags), refused, ARRAY_LEN(refused)};
    train_t tr;
    train_defaults(&tr);
    tr.o.optim = "sgd";
    tr.o.lr = 0.3;
    tr.o.batch = 8;
    tr.o.steps = 20;
    tr.o.warmup = 0;
    tr.batch_per_rank = 1;
    train_init(&tr, &argc, &argv, &prog);
    fedavg_setup(&tr, &f);
    double t_split = split_clients(&tr, &f);
    fedavg_intro(&tr, &f, t_split);
    fedavg_open(&tr, &f);
    say("\nround     0 | eval loss %.4f\n", eval_loss(&tr, &f));
    for (long r = 1; r <= tr.o.steps; r++) fedavg_round(&tr, &f, r);
    say("fedavg:  %ld of %ld selected clients dropped (%.1f%%)\n", f.dropped_all, f.selected_all,
        100.0 * (double)f.dropped_all / (double)f.selected_all);
    fedavg_close(&tr, &f);
    train_finish(&tr);
    return 0;
}
