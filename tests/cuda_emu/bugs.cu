/* bugs.cu: kernels and stream orderings with the bugs the emulator must
 * catch, one per name.
 *
 *   cuda_emu_bugs NAME
 *
 * Each run is expected to FAIL, loudly and with a message that names the
 * bug (tests/cuda_emu.tests checks the message through expect_fail.sh); a
 * run that exits 0 means the emulator let the bug through. A kernel bug
 * stops the emulator itself; a missing stream dependency gives a wrong
 * result, which the program checks, as a test would. */
#include "cuda_common.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <nccl.h>

/* One element past the end of a device buffer. */
__global__ void write_past_end(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) x[i] = 1.0f;   /* should be i < n */
}

/* An index past the end of a __shared__ array. */
__global__ void shared_past_end(float *out) {
    __shared__ float s[32];
    s[threadIdx.x] = (float)threadIdx.x;   /* launched with 33 threads */
    __syncthreads();
    out[threadIdx.x] = s[0];
}

/* Past the end of the dynamic shared memory the launch asked for. */
__global__ void dynamic_shared_past_end(float *out) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = 1.0f;   /* launched with one float too few */
    __syncthreads();
    out[threadIdx.x] = buf[0];
}

/* A barrier only half the block reaches. */
__global__ void barrier_in_branch(float *x) {
    if (threadIdx.x < 16) {
        x[threadIdx.x] = 1.0f;
        __syncthreads();
    }
}

/* An early return before a barrier. */
__global__ void return_before_barrier(float *x, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    x[i] = 1.0f;
    __syncthreads();
    x[i] += x[(i + 1) % n];
}

/* Two different barriers in the two arms of a branch. */
__global__ void barriers_in_both_arms(float *x) {
    if (threadIdx.x % 2) {
        x[threadIdx.x] = 1.0f;
        __syncthreads();
    } else {
        x[threadIdx.x] = 2.0f;
        __syncthreads();
    }
}

/* Half a warp shuffles with a full mask while the other half waits at a barrier. */
__global__ void shuffle_in_branch(float *x) {
    float v = x[threadIdx.x];
    if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
    __syncthreads();
    x[threadIdx.x] = v;
}

/* A mask that leaves out the calling lane. */
__global__ void mask_without_self(float *x) {
    float v = __shfl_down_sync(0x0000ffffu, x[threadIdx.x], 1);
    x[threadIdx.x] = v;
}

/* A host pointer passed to a kernel. */
__global__ void read_host(const float *x, float *y) { y[threadIdx.x] = x[threadIdx.x]; }

/* ---- missing stream dependencies ------------------------------------------------------- */
__global__ void set_all(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
__global__ void add_one(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + 1.0f;
}

static int wrong(const char *what, float got, float want) {
    if (got == want) return 0;
    fprintf(stderr, "error: wrong result: %s = %g, expected %g (a missing stream dependency)\n",
            what, got, want);
    return 1;
}

/* Returns 1 when the bug showed, 0 when it did not, -1 for another name. */
static int stream_bug(const char *b) {
    const int n = 32;
    cudaStream_t s1, s2;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float *x = NULL, *y = NULL, h[32];
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
    int bad = -1;
    if (!strcmp(b, "missing_event_wait")) {
        /* s2 reads what s1 writes, with no cudaStreamWaitEvent between */
        LAUNCH(set_all, 1, n, 0, s1, x, 1.0f, n);
        LAUNCH(add_one, 1, n, 0, s2, x, y, n);
        CUDA_CHECK(cudaStreamSynchronize(s2));
        CUDA_CHECK(cudaMemcpy(h, y, sizeof h, cudaMemcpyDeviceToHost));
        bad = wrong("y[0]", h[0], 2.0f);
    } else if (!strcmp(b, "legacy_memset_race")) {
        /* zeroed on the legacy stream, written on a non-blocking one */
        CUDA_CHECK(cudaMemset(x, 0, n * sizeof(float)));
        LAUNCH(set_all, 1, n, 0, s1, x, 3.0f, n);
        CUDA_CHECK(cudaStreamSynchronize(s1));
        CUDA_CHECK(cudaDeviceSynchronize());
        CUDA_CHECK(cudaMemcpy(h, x, sizeof h, cudaMemcpyDeviceToHost));
        bad = wrong("x[0]", h[0], 3.0f);
    } else if (!strcmp(b, "free_while_queued")) {
        /* freed while a kernel queued on s1 still uses it */
        LAUNCH(set_all, 1, n, 0, s1, x, 1.0f, n);
        CUDA_CHECK(cudaFree(x));
        x = NULL;
        CUDA_CHECK(cudaDeviceSynchronize());
        bad = 0;
    } else if (!strcmp(b, "write_during_collective")) {
        /* s2 overwrites the input of an all-reduce queued on s1 without
         * waiting for it (a communicator of this one rank is enough) */
        ncclUniqueId id;
        ncclComm_t c;
        NCCL_CHECK(ncclGetUniqueId(&id));
        NCCL_CHECK(ncclCommInitRank(&c, 1, id, 0));
        LAUNCH(set_all, 1, n, 0, s1, x, 1.0f, n);
        NCCL_CHECK(ncclAllReduce(x, x, n, ncclFloat32, ncclSum, c, s1));
        LAUNCH(set_all, 1, n, 0, s2, x, 5.0f, n);
        CUDA_CHECK(cudaStreamSynchronize(s2));
        CUDA_CHECK(cudaStreamSynchronize(s1));
        NCCL_CHECK(ncclCommDestroy(c));
        bad = 0;
    } else if (!strcmp(b, "read_before_sync")) {
        /* the host reads the copy's destination before waiting for it */
        LAUNCH(set_all, 1, n, 0, s1, x, 4.0f, n);
        CUDA_CHECK(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s1));
        bad = wrong("h[0]", h[0], 4.0f);
        CUDA_CHECK(cudaStreamSynchronize(s1));
    }
    if (bad >= 0) {
        CUDA_CHECK(cudaDeviceSynchronize());
        if (x) CUDA_CHECK(cudaFree(x));
        CUDA_CHECK(cudaFree(y));
    }
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc != 2) { fprintf(stderr, "usage: cuda_emu_bugs NAME\n"); return 2; }
    const char *b = argv[1];
    int streams = stream_bug(b);
    if (streams > 0) {
        MPI_Finalize();
        return 1;
    }
    float *d = NULL;
    CUDA_CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    CUDA_CHECK(cudaMemset(d, 0, 64 * sizeof(float)));
    if (!strcmp(b, "global_write_past_end")) {
        float *x = NULL;
        CUDA_CHECK(cudaMalloc(&x, 100 * sizeof(float)));
        LAUNCH(write_past_end, 1, 128, 0, 0, x, 100);
    } else if (!strcmp(b, "shared_write_past_end")) {
        LAUNCH(shared_past_end, 1, 33, 0, 0, d);
    } else if (!strcmp(b, "dynamic_shared_past_end")) {
        LAUNCH(dynamic_shared_past_end, 1, 32, 31 * sizeof(float), 0, d);
    } else if (!strcmp(b, "barrier_in_branch")) {
        LAUNCH(barrier_in_branch, 1, 32, 0, 0, d);
    } else if (!strcmp(b, "return_before_barrier")) {
        LAUNCH(return_before_barrier, 1, 64, 0, 0, d, 40);
    } else if (!strcmp(b, "barriers_in_both_arms")) {
        LAUNCH(barriers_in_both_arms, 1, 64, 0, 0, d);
    } else if (!strcmp(b, "shuffle_in_branch")) {
        LAUNCH(shuffle_in_branch, 1, 32, 0, 0, d);
    } else if (!strcmp(b, "mask_without_self")) {
        LAUNCH(mask_without_self, 1, 32, 0, 0, d);
    } else if (!strcmp(b, "host_pointer_to_kernel")) {
        float *h = (float *)calloc(32, sizeof(float));
        LAUNCH(read_host, 1, 32, 0, 0, h, d);
    } else if (streams < 0) {
        fprintf(stderr, "error: no bug named %s\n", b);
        return 2;
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    printf("the emulator let %s through\n", b);
    MPI_Finalize();
    return 0;
}
