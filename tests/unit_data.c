/* unit_data.c: the synthetic corpus and the text loader (common/data.c). */
#define UNIT_MAIN
#include "unit.h"

#include <stdint.h>
#include <unistd.h>

#include "data.h"

/* A text file of n bytes in /tmp, deterministic content; returns its path. */
static const char *temp_text(char *path, size_t len, size_t n) {
    snprintf(path, len, "/tmp/unit_data_%d_%d.txt", (int)getpid(), unit_dist.rank);
    FILE *f = fopen(path, "wb");
    uint64_t x = 42;   /* random lower-case text: no two chunks alike */
    for (size_t i = 0; i < n; i++) fputc('a' + (int)(splitmix64(x++) % 26), f);
    fclose(f);
    return path;
}

TEST(data_synthetic_is_deterministic_and_seeded) {
    data_t a, b, c;
    data_init(&a, NULL, 256, 32, 7);
    data_init(&b, NULL, 256, 32, 7);
    data_init(&c, NULL, 256, 32, 8);
    int ta[33], tb[33], tc[33], same_c = 1;
    for (int s = 0; s < 5; s++)
        for (int i = 0; i < 8; i++) {
            data_sample(&a, s, 8, i, ta);
            data_sample(&b, s, 8, i, tb);
            data_sample(&c, s, 8, i, tc);
            if (memcmp(ta, tb, sizeof ta) != 0) UNIT_FAIL("step %d sample %d differs for the same seed", s, i);
            same_c &= memcmp(ta, tc, sizeof ta) == 0;
        }
    EXPECT(!same_c);
    EXPECT(a.checksum == b.checksum);
    EXPECT(a.checksum != c.checksum);
    data_free(&a);
    data_free(&b);
    data_free(&c);
}

TEST(data_tokens_are_in_the_vocabulary) {
    int vocabs[] = {8, 64, 256, 512, 50000};
    for (int k = 0; k < 5; k++) {
        data_t d;
        data_init(&d, NULL, vocabs[k], 40, 1);
        int tok[41], bad = 0;
        for (int s = 0; s < 20; s++)
            for (int i = 0; i < 4; i++) {
                data_sample(&d, s, 4, i, tok);
                for (int t = 0; t <= 40; t++) bad += tok[t] < 0 || tok[t] >= vocabs[k];
            }
        if (bad) UNIT_FAIL("vocab %d: %d tokens out of range", vocabs[k], bad);
        data_free(&d);
    }
}

/* The corpus must have structure beyond token frequencies: the conditional
 * entropy H(next | previous) measured on the samples the trainer reads is
 * well below the unigram entropy, which is below ln V. */
TEST(data_synthetic_has_learnable_structure) {
    int V = 256, T = 64;
    data_t d;
    data_init(&d, NULL, V, T, 1234);
    long *uni = xcalloc(V, sizeof(long)), *bi = xcalloc((size_t)V * V, sizeof(long));
    int tok[65];
    long n = 0;
    for (int s = 0; s < 400; s++)
        for (int i = 0; i < 16; i++) {
            data_sample(&d, s, 16, i, tok);
            for (int t = 0; t < T; t++) {
                uni[tok[t]]++;
                bi[(size_t)tok[t] * V + tok[t + 1]]++;
                n++;
            }
        }
    double h1 = 0, h2 = 0;
    for (int a = 0; a < V; a++) {
        if (uni[a]) h1 -= (double)uni[a] / n * log((double)uni[a] / n);
        for (int b = 0; b < V; b++) {
            long c = bi[(size_t)a * V + b];
            if (c) h2 -= (double)c / n * log((double)c / uni[a]);
        }
    }
    printf("unigram entropy %.3f (corpus measure %.3f), H(next|prev) %.3f, chain rate %.3f, ln V %.3f\n",
           h1, d.unigram_entropy, h2, d.entropy_rate, log(V));
    EXPECT_NEAR(h1, d.unigram_entropy, 0.05);
    EXPECT(d.unigram_entropy < log(V) - 0.3);
    EXPECT(h2 < h1 - 1.0);
    EXPECT(d.entropy_rate > 0 && d.entropy_rate < 0.5 * d.unigram_entropy);
    free(uni);
    free(bi);
    data_free(&d);
}

TEST(data_batch_targets_are_inputs_shifted_by_one) {
    data_t d;
    data_init(&d, NULL, 64, 16, 3);
    int in[3 * 16], tg[3 * 16], tok[17];
    data_batch(&d, 5, 6, 2, 3, in, tg);
    for (int b = 0; b < 3; b++) {
        data_sample(&d, 5, 6, 2 + b, tok);
        for (int t = 0; t < 16; t++) {
            EXPECT_EQ_INT(in[b * 16 + t], tok[t]);
            EXPECT_EQ_INT(tg[b * 16 + t], tok[t + 1]);
        }
    }
    data_free(&d);
}

/* The samples of every dp shard and micro-batch, for dp ranks, at one step:
 * ids (data_sample_id) and content hashes, in global-batch order. */
static void shard_samples(data_t *d, long step, int batch, int dp, int r, int micro,
                          uint64_t *ids, uint64_t *hashes) {
    int mb = batch / dp / micro, T = d->seq, k = 0;
    int *in = xmalloc(sizeof(int) * mb * T), *tg = xmalloc(sizeof(int) * mb * T);
    for (int m = 0; m < micro; m++) {
        int first = data_shard_first(batch, dp, r, micro, m);
        data_batch(d, step, batch, first, mb, in, tg);
        for (int b = 0; b < mb; b++, k++) {
            ids[k] = data_sample_id(d, step, batch, first + b);
            hashes[k] = hash_bytes(in + b * T, sizeof(int) * T, HASH_SEED);
            hashes[k] = hash_bytes(tg + b * T + T - 1, sizeof(int), hashes[k]);
        }
    }
    free(in);
    free(tg);
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* No two ranks (nor two slots of one rank) read the same sample in a step,
 * and the union of the shards is the global batch. Under mpirun each rank
 * computes its own shard and the ids travel by MPI_Allgather; on one rank the
 * shards of dp = 2, 3 and 4 ranks are computed side by side. */
static void check_disjoint(data_t *d, const char *what) {
    int batch = 24, world = unit_dist.world;
    int dps[3] = {2, 3, 4}, ndp = world > 1 ? 1 : 3;
    if (world > 1) dps[0] = world;
    for (int k = 0; k < ndp; k++) {
        int dp = dps[k];
        if (batch % dp) continue;
        for (int micro = 1; micro <= 2; micro++) {
            if ((batch / dp) % micro) continue;
            for (long step = 0; step < 30; step++) {
                int local = batch / dp;
                uint64_t *ids = xmalloc(sizeof(uint64_t) * batch), *hs = xmalloc(sizeof(uint64_t) * batch);
                if (world > 1) {
                    uint64_t *mi = xmalloc(sizeof(uint64_t) * local), *mh = xmalloc(sizeof(uint64_t) * local);
                    shard_samples(d, step, batch, dp, unit_dist.rank, micro, mi, mh);
                    MPI_Allgather(mi, local, MPI_UINT64_T, ids, local, MPI_UINT64_T, MPI_COMM_WORLD);
                    MPI_Allgather(mh, local, MPI_UINT64_T, hs, local, MPI_UINT64_T, MPI_COMM_WORLD);
                    free(mi);
                    free(mh);
                } else {
                    for (int r = 0; r < dp; r++)
                        shard_samples(d, step, batch, dp, r, micro, ids + r * local, hs + r * local);
                }
                /* The shards, in rank order, are exactly the global batch. */
                for (int i = 0; i < batch; i++) {
                    uint64_t want = data_sample_id(d, step, batch, i);
                    if (ids[i] != want)
                        UNIT_FAIL("%s dp %d micro %d step %ld: slot %d (rank %d) read sample %llu, the global batch has %llu",
                                  what, dp, micro, step, i, i / local, (unsigned long long)ids[i],
                                  (unsigned long long)want);
                }
                qsort(ids, batch, sizeof(uint64_t), cmp_u64);
                qsort(hs, batch, sizeof(uint64_t), cmp_u64);
                for (int i = 1; i < batch; i++) {
                    if (ids[i] == ids[i - 1])
                        UNIT_FAIL("%s dp %d micro %d step %ld: sample %llu read twice", what, dp, micro,
                                  step, (unsigned long long)ids[i]);
                    if (hs[i] == hs[i - 1])
                        UNIT_FAIL("%s dp %d micro %d step %ld: two slots hold identical token sequences",
                                  what, dp, micro, step);
                }
                free(ids);
                free(hs);
            }
        }
    }
}

TEST(data_shards_disjoint) {
    data_t d;
    data_init(&d, NULL, 256, 32, 99);
    check_disjoint(&d, "synthetic");
    data_free(&d);
    char path[128];
    temp_text(path, sizeof path, 24 * 33 * 3 + 17);   /* 3 steps per epoch, then reshuffled */
    data_init(&d, path, 256, 32, 99);
    check_disjoint(&d, "text");
    data_free(&d);
    unlink(path);
}

TEST(data_text_epoch_reads_every_chunk_once) {
    char path[128];
    int T = 20, batch = 4;
    size_t chunks = 13;   /* 3 steps of 4 per epoch; one chunk left over */
    temp_text(path, sizeof path, chunks * (T + 1) + 5);
    data_t d;
    data_init(&d, path, 256, T, 5);
    EXPECT_EQ_INT(d.nchunks, chunks);
    for (int epoch = 0; epoch < 3; epoch++) {
        int seen[13] = {0};
        for (int s = 0; s < 3; s++)
            for (int i = 0; i < batch; i++) seen[data_sample_id(&d, epoch * 3 + s, batch, i)]++;
        int twice = 0, none = 0;
        for (size_t c = 0; c < chunks; c++) { twice += seen[c] > 1; none += seen[c] == 0; }
        if (twice || none != 1) UNIT_FAIL("epoch %d: %d chunks read twice, %d unread (want 0, 1)", epoch, twice, none);
    }
    /* A sample's bytes are the file's bytes at its chunk. */
    int tok[21];
    data_sample(&d, 4, batch, 2, tok);
    size_t c = data_sample_id(&d, 4, batch, 2);
    for (int t = 0; t <= T; t++) EXPECT_EQ_INT(tok[t], d.bytes[c * (T + 1) + t]);
    data_free(&d);
    unlink(path);
}

/* Each epoch visits the chunks in a new order: a loader that shuffled once
 * (or never) would train on the same sequence of batches every epoch. */
TEST(data_text_epochs_see_the_chunks_in_different_orders) {
    char path[128];
    int T = 8, batch = 4;
    size_t chunks = 64;   /* 16 steps per epoch */
    temp_text(path, sizeof path, chunks * (T + 1));
    data_t d;
    data_init(&d, path, 256, T, 5);
    uint64_t order[4][64];
    for (int e = 0; e < 4; e++)
        for (int s = 0; s < 16; s++)
            for (int i = 0; i < batch; i++) order[e][s * batch + i] = data_sample_id(&d, e * 16 + s, batch, i);
    for (int e = 0; e < 4; e++)
        for (int f = e + 1; f < 4; f++) {
            int same = 0;
            for (int k = 0; k < 64; k++) same += order[e][k] == order[f][k];
            /* two independent shuffles share ~1 position of 64 */
            if (same > 8) UNIT_FAIL("epochs %d and %d read %d of 64 chunks at the same position", e, f, same);
        }
    /* and the order is a function of (seed, epoch): a second loader agrees */
    data_t d2;
    data_init(&d2, path, 256, T, 5);
    EXPECT_EQ_INT(data_sample_id(&d2, 40, batch, 3), order[2][8 * batch + 3]);
    data_free(&d2);
    data_free(&d);
    unlink(path);
}

TEST(hash_changes_with_any_single_byte) {
    unsigned char buf[203];
    for (int i = 0; i < 203; i++) buf[i] = (unsigned char)(i * 37);
    uint64_t h = hash_bytes(buf, sizeof buf, HASH_SEED);
    for (int i = 0; i < 203; i++) {
        buf[i] ^= 0x10;
        if (hash_bytes(buf, sizeof buf, HASH_SEED) == h) UNIT_FAIL("flipping byte %d leaves the hash unchanged", i);
        buf[i] ^= 0x10;
    }
}
