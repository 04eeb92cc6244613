/* preset.c: 10_nd_llama/train's defaults and its named models (--preset),
 * applied before the flags are read, so that any flag still overrides them. */
#include <string.h>

#include "check.h"
#include "cost.h"
#include "nd.h"

/* Named models. The Llama 3 405B shape (Llama Team 2024, table 3) for dry
 * runs; the small ones train on a CPU in seconds. */
typedef struct {
    const char *name;
    int dim, layers, heads, kv_heads, ffn, vocab, seq, batch, micro;
} nd_preset_t;
/* The 405B preset takes its shape from the planner's table (cost.h) and
 * one sequence per micro-batch on one replica (pass --batch and --micro for
 * others). PRESET_CHOICES (nd.h) names them for --preset. */
static const nd_preset_t presets[] = {
    {"llama3-405b", 0, 0, 0, 0, 0, 0, 0, 16, 16},
    {"nd-tiny", 32, 4, 4, 2, 128, 32, 16, 16, 4},
    {"nd-small", 128, 8, 8, 4, 384, 256, 64, 32, 4},
};

static void apply_preset(train_t *tr, int argc, char **argv) {
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--preset") == 0 && i + 1 < argc) name = argv[i + 1];
        else if (strncmp(argv[i], "--preset=", 9) == 0) name = argv[i] + 9;
    }
    for (size_t k = 0; name && k < ARRAY_LEN(presets); k++)
        if (strcmp(presets[k].name, name) == 0) {
            nd_preset_t q = presets[k];
            model_config_t c;
            if (cost_model(&c, name) == 0) {
                q.dim = c.dim; q.layers = c.layers; q.heads = c.heads; q.kv_heads = c.kv_heads;
                q.ffn = c.ffn; q.vocab = c.vocab; q.seq = c.seq;
            }
            train_opts_t *o = &tr->o;
            o->dim = q.dim; o->layers = q.layers; o->heads = q.heads; o->kv_heads = q.kv_heads;
            o->ffn = q.ffn; o->vocab = q.vocab; o->seq = q.seq; o->batch = q.batch; o->micro = q.micro;
            o->head_dim = 0;
        }
}

void nd_defaults(train_t *tr, void *ctx, int argc, char **argv) {
    ((nd_t *)ctx)->fo.zero = 0;
    tr->o.micro = 4;
    apply_preset(tr, argc, argv);
}
