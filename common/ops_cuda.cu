/* ops_cuda.cu: the CUDA backend of ops.h, and its two tables.
 *
 * Matrix products go to cuBLAS (GemmEx: bf16 or fp32 operands, fp32
 * accumulation); everything else is a CUDA kernel on d->stream. Kernels read
 * and write bf16 or fp32 storage through load()/store() and load8()/store8()
 * (ops_cuda.cuh) and compute in fp32. As llm.c splits its kernels, each kind
 * of layer has its own file, its kernels beside the entry points that launch
 * them:
 *
 *   ops_cuda_matmul.cu       cuBLAS: op_matmul and the GEMMs of attention
 *   ops_cuda_embedding.cu    token embedding; backward through a sort of the tokens
 *   ops_cuda_rmsnorm.cu      RMSNorm
 *   ops_cuda_rope.cu         rotary position embedding
 *   ops_cuda_attention.cu    causal attention: flash kernels, the cuBLAS path, merge
 *   ops_cuda_elementwise.cu  SwiGLU, add, cast, scale, sumsq
 *   ops_cuda_compress.cu     int8 and sign codes of a gradient
 *   ops_cuda_xent.cu         softmax cross-entropy and the lse of vocabulary shards
 *   ops_cuda_adamw.cu        AdamW
 *
 * Two tables. ops_cuda is the backend the suite runs; ops_cuda_simple keeps
 * the straightforward kernels each fast one replaced (as chapter 01 keeps its
 * ladder of matmul kernels), so that tests compare both with the CPU and
 * tests/bench_ops.c measures what each step gains (both declare it; ops.h
 * names one backend per device). Each file's opening comment says what its
 * fast kernels do.
 *
 * Determinism: no atomics. Every sum runs in an order fixed by the shapes
 * alone (warp shuffles in a fixed pattern, then the warps in order; partial
 * sums over fixed row groups, then the groups in order; WMMA products over
 * tiles in a fixed order), so one input gives one result, run after run. */
#include "ops_cuda.cuh"

/* ---- scratch ------------------------------------------------------------------ */
/* One device buffer for the temporaries of attention, the RMSNorm weight
 * gradient, the embedding sort and sumsq. Every op runs on d->stream, so an
 * op that reuses it is ordered after the last one that did. It grows and
 * never shrinks; growing first waits for queued work that may still read the
 * old buffer, which happens in the first steps of a run only. (A rank drives
 * one GPU.) */
static float *scratch_buf;
static size_t scratch_len;

float *scratch(const device_t *d, size_t n) {
    if (n > scratch_len) {
        if (scratch_buf) {
            CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
            CUDA_CHECK(cudaFree(scratch_buf));
        }
        CUDA_CHECK(cudaMalloc((void **)&scratch_buf, n * sizeof(float)));
        scratch_len = n;
    }
    return scratch_buf;
}

/* ---- the tables ------------------------------------------------------------------ */
/* One table, FAST = 1 for ops_cuda and 0 for ops_cuda_simple; the ops with
 * one kernel only are the same in both. */
template <int FAST> static constexpr ops_t table = {
    .matmul = cuda_matmul,
    .embedding_forward = cuda_embedding_forward<FAST>,
    .embedding_backward = cuda_embedding_backward<FAST>,
    .rmsnorm_forward = cuda_rmsnorm_forward<FAST>,
    .rmsnorm_backward = cuda_rmsnorm_backward<FAST>,
    .rope = cuda_rope<FAST>,
    .attn_forward = cuda_attn_forward<FAST>,
    .attn_merge = cuda_attn_merge,
    .attn_backward = cuda_attn_backward<FAST>,
    .swiglu_forward = cuda_swiglu_forward<FAST>,
    .swiglu_backward = cuda_swiglu_backward<FAST>,
    .xent_forward = cuda_xent_forward<FAST>,
    .xent_backward = cuda_xent_backward<FAST>,
    .lse_combine = cuda_lse_combine,
    .add = cuda_add<FAST>,
    .cast = cuda_cast<FAST>,
    .scale = cuda_scale<FAST>,
    .sumsq = cuda_sumsq,
    .adamw = cuda_adamw<FAST>,
    .block_encode = cuda_block_encode,
    .block_decode_add = cuda_block_decode_add,
    .topk_encode = cuda_topk_encode,
    .topk_decode_add = cuda_topk_decode_add,
    .orthonormalise = cuda_orthonormalise,
};

extern "C" const ops_t ops_cuda = table<1>;
extern "C" const ops_t ops_cuda_simple = table<0>;
