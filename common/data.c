/* data.c: the synthetic corpus and the byte-level text loader (see data.h). */
#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

uint64_t hash_bytes(const void *p, size_t n, uint64_t h) {
    const unsigned char *b = p;
    const uint64_t prime = 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * prime;
        h ^= h >> 29;   /* fold high bits down so later words mix with all of h */
    }
    for (; i < n; i++) h = (h ^ b[i]) * prime;
    return h;
}

/* A sequential stream of splitmix64 outputs. */
typedef struct { uint64_t s; } rng_t;
static uint64_t rng_next(rng_t *r) { return splitmix64(r->s++); }
static double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1.0p-53; }
static int rng_below(rng_t *r, int n) { return (int)(rng_unit(r) * n); }

/* Successor probabilities of the word chain. */
enum { SUCC = 4 };
static const double succ_p[SUCC] = {0.55, 0.25, 0.12, 0.08};

static int next_choice(rng_t *r) {
    double u = rng_unit(r), c = 0;
    for (int k = 0; k < SUCC - 1; k++) {
        c += succ_p[k];
        if (u < c) return k;
    }
    return SUCC - 1;
}

/* ---- synthetic corpus ---------------------------------------------------- */

static void build_lexicon(data_t *d) {
    int V = d->vocab;
    rng_t r = {splitmix64(d->seed ^ 0x1e41c0de5eedull)};
    /* Word tokens follow a Zipf law (p(k) ~ 1/(k+1)) over a shuffled order of
     * 1..V-1, so some tokens are common and most are rare, as in text. */
    int n = V - 1;
    int *order = xmalloc(sizeof(int) * n);
    double *cdf = xmalloc(sizeof(double) * n);
    for (int k = 0; k < n; k++) order[k] = k + 1;
    for (int k = n - 1; k > 0; k--) {
        int j = rng_below(&r, k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    double z = 0;
    for (int k = 0; k < n; k++) cdf[k] = (z += 1.0 / (k + 1));
    for (int k = 0; k < n; k++) cdf[k] /= z;

    int W = V / 2;
    if (W < 8) W = 8;
    if (W > 512) W = 512;
    d->nwords = W;
    d->word_start = xmalloc(sizeof(int) * W);
    d->word_len = xmalloc(sizeof(int) * W);
    d->word_tokens = xmalloc(sizeof(int) * W * 6);
    d->next_word = xmalloc(sizeof(int) * W * SUCC);
    int pos = 0;
    for (int w = 0; w < W; w++) {
        int len = 2 + rng_below(&r, 5);   /* 2..6 tokens */
        d->word_start[w] = pos;
        d->word_len[w] = len;
        for (int t = 0; t < len; t++) {
            double u = rng_unit(&r);
            int lo = 0, hi = n - 1;
            while (lo < hi) {   /* first k with cdf[k] > u */
                int mid = (lo + hi) / 2;
                if (cdf[mid] > u) hi = mid; else lo = mid + 1;
            }
            d->word_tokens[pos++] = order[lo];
        }
        for (int k = 0; k < SUCC; k++) d->next_word[w * SUCC + k] = rng_below(&r, W);
    }
    free(order);
    free(cdf);
    uint64_t h = hash_bytes(d->word_len, sizeof(int) * W, HASH_SEED);
    h = hash_bytes(d->word_tokens, sizeof(int) * pos, h);
    d->checksum = hash_bytes(d->next_word, sizeof(int) * W * SUCC, h);
}

/* Walk the word chain from word w, skipping `skip` tokens, writing n tokens.
 * Adds -ln p of every word choice to *nll when nll is not NULL. */
static void walk(const data_t *d, rng_t *r, int w, int skip, int *out, long n, double *nll) {
    long i = 0;
    int t = 0;   /* position inside word w; len means the separator */
    while (i < n) {
        int len = d->word_len[w];
        int tok = t < len ? d->word_tokens[d->word_start[w] + t] : 0;
        if (skip > 0) skip--;
        else out[i++] = tok;
        if (++t > len) {
            int k = next_choice(r);
            if (nll) *nll -= log(succ_p[k]);
            w = d->next_word[w * SUCC + k];
            t = 0;
        }
    }
}

static void measure_entropy(data_t *d, const int *tok, long n, double nll) {
    long *count = xcalloc(d->vocab, sizeof(long));
    for (long i = 0; i < n; i++) count[tok[i]]++;
    double h = 0;
    for (int v = 0; v < d->vocab; v++)
        if (count[v]) {
            double p = (double)count[v] / n;
            h -= p * log(p);
        }
    free(count);
    d->unigram_entropy = h;
    d->entropy_rate = nll >= 0 ? nll / n : -1;
}

/* ---- text file ----------------------------------------------------------- */

static void open_text(data_t *d, const char *path) {
    if (d->vocab < 256)
        usage_error("--data reads bytes, so --vocab must be at least 256 (got %d)", d->vocab);
    int fd = open(path, O_RDONLY);
    if (fd < 0) usage_error("cannot open data file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        usage_error("data file %s is not a regular file", path);
    d->nbytes = (size_t)st.st_size;
    d->nchunks = d->nbytes / (size_t)(d->seq + 1);
    if (d->nchunks < 1)
        usage_error("data file %s has %zu bytes, fewer than one sample of --seq %d + 1",
                    path, d->nbytes, d->seq);
    void *m = mmap(NULL, d->nbytes, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) usage_error("cannot map data file %s: %s", path, strerror(errno));
    close(fd);
    d->bytes = m;
    d->checksum = hash_bytes(d->bytes, d->nbytes, HASH_SEED);
    d->perm = xmalloc(sizeof(int) * d->nchunks);
    d->perm_epoch = -1;
}

/* Chunk order of an epoch: a Fisher-Yates shuffle from (seed, epoch). */
static void epoch_order(data_t *d, long epoch) {
    if (d->perm_epoch == epoch) return;
    rng_t r = {splitmix64(d->seed ^ 0xda7a5eedull) + (uint64_t)epoch * 0x9e3779b97f4a7c15ull};
    long n = (long)d->nchunks;
    for (long k = 0; k < n; k++) d->perm[k] = (int)k;
    for (long k = n - 1; k > 0; k--) {
        long j = (long)(rng_unit(&r) * (k + 1));
        int t = d->perm[k];
        d->perm[k] = d->perm[j];
        d->perm[j] = t;
    }
    d->perm_epoch = epoch;
}

/* ---- public -------------------------------------------------------------- */

void data_init(data_t *d, const char *path, int vocab, int seq, uint64_t seed) {
    memset(d, 0, sizeof *d);
    d->vocab = vocab;
    d->seq = seq;
    d->seed = seed;
    if (vocab < 8) usage_error("--vocab must be at least 8 (got %d)", vocab);
    if (!path) {
        d->synthetic = 1;
        build_lexicon(d);
        /* Measure on a long walk of the chain (2^18 tokens, a few ms). */
        long n = 1L << 18;
        int *tok = xmalloc(sizeof(int) * n);
        rng_t r = {splitmix64(seed ^ 0xe7e7e7ull)};
        double nll = 0;
        walk(d, &r, 0, 0, tok, n, &nll);
        measure_entropy(d, tok, n, nll);
        free(tok);
        snprintf(d->desc, sizeof d->desc,
                 "synthetic word chain (%d words, vocab %d): unigram entropy %.3f nats/token, "
                 "chain entropy rate %.3f, uniform ln V %.3f",
                 d->nwords, vocab, d->unigram_entropy, d->entropy_rate, log((double)vocab));
    } else {
        d->synthetic = 0;
        open_text(d, path);
        int *tok = xmalloc(sizeof(int) * (d->nbytes < (1u << 24) ? d->nbytes : (1u << 24)));
        long n = d->nbytes < (1u << 24) ? (long)d->nbytes : (1L << 24);
        for (long i = 0; i < n; i++) tok[i] = d->bytes[i];
        measure_entropy(d, tok, n, -1);
        free(tok);
        snprintf(d->desc, sizeof d->desc,
                 "%s (%zu bytes, %zu samples of %d+1): unigram entropy %.3f nats/byte, uniform ln V %.3f",
                 path, d->nbytes, d->nchunks, seq, d->unigram_entropy, log((double)vocab));
    }
}

void data_free(data_t *d) {
    if (d->bytes) munmap((void *)d->bytes, d->nbytes);
    free(d->perm);
    free(d->word_start);
    free(d->word_len);
    free(d->word_tokens);
    free(d->next_word);
    memset(d, 0, sizeof *d);
}

/* Text: which chunk (step, i) reads. Every epoch is a whole number of steps,
 * so the batch of one step never holds the same chunk twice. */
static long text_chunk(data_t *d, long step, int batch, int i) {
    long steps_per_epoch = (long)d->nchunks / batch;
    if (steps_per_epoch < 1)   /* the trainer refuses such a file at start-up */
        die("data: a batch of %d samples from a file of %zu", batch, d->nchunks);
    long epoch = step / steps_per_epoch, slot = step % steps_per_epoch;
    epoch_order(d, epoch);
    return d->perm[slot * batch + i];
}

uint64_t data_sample_id(data_t *d, long step, int batch, int i) {
    if (d->synthetic) return (uint64_t)step * (uint64_t)batch + (uint64_t)i;
    return (uint64_t)text_chunk(d, step, batch, i);
}

/* Synthetic sample g's own generator, from (seed, global sample number), so
 * any sample can be produced in any order; its first draw is the word the
 * sample starts in. */
static rng_t sample_rng(const data_t *d, uint64_t g) {
    return (rng_t){splitmix64(splitmix64(d->seed) ^ (g * 0xd1342543de82ef95ull))};
}

void data_sample(data_t *d, long step, int batch, int i, int *tokens) {
    if (d->synthetic) {
        rng_t r = sample_rng(d, data_sample_id(d, step, batch, i));
        int w = rng_below(&r, d->nwords);
        int skip = rng_below(&r, d->word_len[w] + 1);
        walk(d, &r, w, skip, tokens, d->seq + 1, NULL);
    } else {
        const uint8_t *b = d->bytes + (size_t)text_chunk(d, step, batch, i) * (size_t)(d->seq + 1);
        for (int t = 0; t <= d->seq; t++) tokens[t] = b[t];
    }
}

void data_batch(data_t *d, long step, int batch, int first, int count, int *inputs, int *targets) {
    int T = d->seq;
    int *tok = xmalloc(sizeof(int) * (T + 1));
    for (int b = 0; b < count; b++) {
        data_sample(d, step, batch, first + b, tok);
        memcpy(inputs + (size_t)b * T, tok, sizeof(int) * T);
        memcpy(targets + (size_t)b * T, tok + 1, sizeof(int) * T);
    }
    free(tok);
}

/* ---- federated clients' shards -------------------------------------------- */

static double rng_normal(rng_t *r) {   /* Box-Muller */
    double u = 1.0 - rng_unit(r), v = rng_unit(r);
    return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

/* Gamma(a, 1) by Marsaglia and Tsang (2000); a < 1 through
 * Gamma(a) = Gamma(a + 1) U^(1/a). */
static double rng_gamma(rng_t *r, double a) {
    if (a < 1.0) return rng_gamma(r, a + 1.0) * pow(1.0 - rng_unit(r), 1.0 / a);
    double dd = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * dd);
    for (;;) {
        double x = rng_normal(r), v = 1.0 + c * x;
        if (v <= 0) continue;
        v = v * v * v;
        double u = 1.0 - rng_unit(r);
        if (log(u) < 0.5 * x * x + dd - dd * v + dd * log(v)) return dd * v;
    }
}

int data_sample_class(const data_t *d, long id, int classes) {
    rng_t r = sample_rng(d, (uint64_t)id);
    return rng_below(&r, d->nwords) % classes;
}

void data_client_split(const data_t *d, int clients, int per_client, int classes, double alpha,
                       long *ids, int *first, int *count) {
    long n = (long)clients * per_client;
    if (alpha <= 0) {   /* IID, equal: client k holds samples [k per_client, (k+1) per_client) */
        for (long g = 0; g < n; g++) ids[g] = g;
        for (int k = 0; k < clients; k++) first[k] = k * per_client, count[k] = per_client;
        return;
    }
    /* Linear in the samples and the clients: the samples bucketed by class
     * (a counting sort, ascending ids within a class), then by owner. */
    int *owner = xmalloc(sizeof(int) * (size_t)n);
    long *by_class = xmalloc(sizeof(long) * (size_t)n), *at = xcalloc((size_t)classes + 1, sizeof(long));
    double *p = xmalloc(sizeof(double) * (size_t)clients);
    for (long g = 0; g < n; g++) at[(owner[g] = data_sample_class(d, g, classes)) + 1]++;
    for (int c = 0; c < classes; c++) at[c + 1] += at[c];   /* class c: by_class[at[c] .. at[c + 1]) */
    long *next = xmalloc(sizeof(long) * (size_t)classes);
    for (int c = 0; c < classes; c++) next[c] = at[c];
    for (long g = 0; g < n; g++) by_class[next[owner[g]]++] = g;
    free(next);
    rng_t r = {splitmix64(d->seed ^ 0xd112c41e7ull)};
    for (int c = 0; c < classes; c++) {
        /* p ~ Dirichlet(alpha, ..., alpha): normalised Gamma(alpha) draws */
        double sum = 0;
        for (int k = 0; k < clients; k++) sum += p[k] = rng_gamma(&r, alpha);
        /* the class's j-th sample goes to the client whose share of the
         * cumulative proportions holds (j + 1/2) / n_c */
        long nc = at[c + 1] - at[c];
        int k = 0;
        double cum = p[0] / sum;
        for (long j = 0; j < nc; j++) {
            double where = (j + 0.5) / (double)nc;
            while (where > cum && k < clients - 1) cum += p[++k] / sum;
            owner[by_class[at[c] + j]] = k;
        }
    }
    /* client k's ids, ascending: a counting sort by owner */
    for (int k = 0; k < clients; k++) count[k] = 0;
    for (long g = 0; g < n; g++) count[owner[g]]++;
    for (int k = 0, f = 0; k < clients; f += count[k++]) first[k] = f;
    for (int k = 0; k < clients; k++) count[k] = 0;
    for (long g = 0; g < n; g++) ids[first[owner[g]] + count[owner[g]]++] = g;
    free(owner);
    free(by_class);
    free(at);
    free(p);
}

void data_batch_ids(data_t *d, const long *ids, int count, int *inputs, int *targets) {
    for (int b = 0; b < count; b++) data_batch(d, ids[b], 1, 0, 1, inputs + (size_t)b * d->seq,
                                               targets + (size_t)b * d->seq);
}
