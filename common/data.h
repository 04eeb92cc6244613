/* data.h: training data for every trainer: a built-in synthetic corpus and a
 * byte-level text loader, sharded per data-parallel rank, deterministic.
 *
 * A sample is seq + 1 consecutive tokens: inputs are tokens[0..seq-1] and
 * targets tokens[1..seq]. Step s uses a global batch of `batch` samples,
 * numbered i = 0..batch-1. Data-parallel rank r of dp owns the contiguous
 * shard i in [r * batch/dp, (r+1) * batch/dp), cut further into `micro`
 * micro-batches. The global batch of a step is the same whatever dp and
 * micro are, so an N-rank run trains on exactly what a 1-rank run does, and
 * two ranks never read the same sample in a step (the classic DDP bug is
 * every rank loading the same data).
 *
 * Nothing is consumed from a stream: the sample at (step, i) is a pure
 * function of (seed, step, i), i.e. a counter-based generator. The whole
 * "data loader state" a checkpoint must keep is therefore the seed and the
 * step (the position); resuming at step s reads exactly what an
 * uninterrupted run would have read.
 *
 * Synthetic corpus (the default): a lexicon of short "words" (2-6 tokens,
 * drawn from a Zipf distribution over the vocabulary), separated by token 0,
 * where each word is followed by one of 4 successor words with probabilities
 * 0.55/0.25/0.12/0.08. A unigram model cannot do better than the corpus's
 * unigram entropy; a model that learns the lexicon and the word transitions
 * gets down towards the word chain's entropy rate, far lower. Both are
 * measured at start-up and printed.
 *
 * Text (--data FILE): the file's bytes are the tokens (vocab >= 256). The
 * file is cut into non-overlapping chunks of seq + 1 bytes; each epoch visits
 * every chunk once in an order shuffled from (seed, epoch); an epoch is a
 * whole number of steps, so the samples of one step are distinct chunks. */
#ifndef DATA_H
#define DATA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int vocab, seq;
    uint64_t seed;
    int synthetic;           /* 1: built-in corpus; 0: text file */
    /* text file */
    const uint8_t *bytes;    /* the file, mapped read-only */
    size_t nbytes, nchunks;
    int *perm;               /* chunk order of epoch perm_epoch */
    long perm_epoch;
    /* synthetic corpus */
    int nwords;
    int *word_start, *word_len, *word_tokens;   /* lexicon */
    int *next_word;          /* (nwords, 4) successors */
    /* measured at start-up, in nats per token */
    double unigram_entropy;  /* of the token frequencies */
    double entropy_rate;     /* synthetic: the word chain's; < 0 when unknown */
    uint64_t checksum;       /* identifies the data (file contents or corpus) */
    char desc[256];          /* one line for the start-up header */
} data_t;

/* path NULL: the synthetic corpus. A missing or too small file, or a vocab
 * the data does not fit, is a usage_error (call on every rank). */
void data_init(data_t *d, const char *path, int vocab, int seq, uint64_t seed);
void data_free(data_t *d);

/* Fill tokens[0..seq] with sample i of step's global batch. A text file
 * holds at least `batch` samples (die otherwise: the trainer checks it at
 * start-up, on every rank). */
void data_sample(data_t *d, long step, int batch, int i, int *tokens);

/* Samples [first, first + count) of step's global batch as a micro-batch:
 * inputs and targets are (count, seq) row-major. */
void data_batch(data_t *d, long step, int batch, int first, int count,
                int *inputs, int *targets);

/* An identifier of the sample behind (step, i): equal ids mean the same
 * sample of the corpus (the global sample number, or the file chunk). */
uint64_t data_sample_id(data_t *d, long step, int batch, int i);

/* First sample of dp shard r's micro-batch m (batch divisible by dp * micro). */
static inline int data_shard_first(int batch, int dp, int r, int micro, int m) {
    int local = batch / dp;
    return r * local + m * (local / micro);
}

/* Federated clients (03_ddp/fedavg), synthetic corpus only. A sample's
 * class is the word it starts in, modulo `classes` (its "topic": the first
 * words of its chain). data_client_split deals the samples 0 .. clients x
 * per_client - 1 (sample id g = (step, i) with step g, batch 1) to clients:
 * alpha <= 0: IID and equal, client k holds [k per_client, (k+1)
 * per_client); alpha > 0: non-IID (Hsu et al. 2019), for each class a
 * Dirichlet(alpha) draw over the clients cuts that class's samples, so
 * shards differ in size and in their mix of classes (small alpha: one or two
 * classes per client). Client k's ids are ids[first[k] .. first[k] +
 * count[k]); ids holds clients x per_client entries. Seeded by the data's
 * seed, the same on every rank. */
int data_sample_class(const data_t *d, long id, int classes);
void data_client_split(const data_t *d, int clients, int per_client, int classes, double alpha,
                       long *ids, int *first, int *count);
/* Samples ids[0 .. count) as a micro-batch, (count, seq) row-major. */
void data_batch_ids(data_t *d, const long *ids, int count, int *inputs, int *targets);

/* 64-bit FNV-1a-style hash of a byte range, 8 bytes at a time (fast, and any
 * single changed word changes the result: every step is a bijection). */
uint64_t hash_bytes(const void *p, size_t n, uint64_t h);
#define HASH_SEED 0xcbf29ce484222325ull

/* splitmix64: the counter-based generator behind the data. */
static inline uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

#ifdef __cplusplus
}
#endif
#endif
