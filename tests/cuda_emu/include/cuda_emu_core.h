/* cuda_emu_core.h: the emulator's thread model, used by cuda_runtime.h.
 *
 * A launch is checked when it is called and queued on its stream, with a
 * copy of its arguments (emu_streams.cc decides when it runs: at once with
 * EMU_STREAMS=sync, when something forces it with the default, defer).
 * It runs the blocks of the grid one after the other on the calling OS
 * thread. Within a block every CUDA thread is a fiber with its own stack;
 * the scheduler resumes each runnable fiber in turn and a fiber runs until it
 * reaches __syncthreads(), a warp-level operation, or the end of the kernel.
 * So a missing barrier shows: the first thread runs far ahead and reads
 * shared memory the others have not written yet (it holds 0xff bytes, a NaN
 * as a float) or overwrites what they still have to read.
 *
 * - __syncthreads() releases when every thread of the block waits at the
 *   same barrier; threads waiting while others have exited, threads at two
 *   different __syncthreads() lines, or a warp operation waiting for a lane
 *   that sits at a barrier stop the program with a message naming the
 *   kernel, the block and the source lines, instead of hanging.
 * - A warp operation (shuffle, vote, __syncwarp) waits until every live lane
 *   named in its mask has reached a warp operation, checks they all do the
 *   same one with the same mask, and then exchanges the values all lanes had
 *   at the call. Reading a lane outside the mask, or one that does not exist
 *   (a partial last warp) or has exited, gives an undefined value on a GPU:
 *   here 0xff bytes (NaN, or -1).
 * - __shared__ variables are allocated per block, filled with 0xff bytes, and
 *   freed at the block's end; dynamic shared memory is one allocation of
 *   exactly the launch's size. AddressSanitizer sees both, and device buffers
 *   (cudaMalloc is malloc), so an index past the end is reported.
 */
#ifndef CUDA_EMU_CORE_H
#define CUDA_EMU_CORE_H

#include <functional>
#include <vector>

namespace cuda_emu {

/* Kinds of warp-level operations. */
enum {
    W_SHFL_IDX, W_SHFL_UP, W_SHFL_DOWN, W_SHFL_XOR, W_BALLOT, W_ANY, W_ALL, W_SYNCWARP,
    W_REDUCE_ADD, W_REDUCE_MIN, W_REDUCE_MAX, W_REDUCE_AND, W_REDUCE_OR, W_REDUCE_XOR,
    W_MATCH_ANY, W_KINDS
};

/* One lane's part in a warp operation: filled by the lane, completed by the
 * scheduler when the whole group has arrived. */
struct WarpOp {
    int kind;
    unsigned mask;
    int arg;                 /* srcLane, delta or laneMask */
    int width;
    int is_signed;           /* for __reduce_min/max_sync */
    alignas(8) unsigned char val[16];   /* this lane's value */
    size_t size;
    unsigned long long pred; /* vote predicate / reduce operand */
    alignas(8) unsigned char out[16];   /* shuffle result */
    unsigned long long result;
    const char *file;
    int line;
};

void warp_op(WarpOp *op);
void syncthreads(const char *file, int line);
int syncthreads_reduce(int kind, int pred, const char *file, int line); /* 0 count, 1 and, 2 or */
unsigned activemask();
void *dynamic_shared();
void *shared_var(const void *key, size_t size, size_t align, const char *name);

/* Fatal error with the current kernel's context. */
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The checks a GPU makes at the launch (configuration, stream): the error,
 * or 0. */
int launch_check(const char *name, const char *file, int line, const void *func, dim3 grid,
                 dim3 block, size_t dyn_smem, cudaStream_t stream);
/* Run a grid now: body(ctx) for every thread. */
void run_grid(const char *name, const char *file, int line, dim3 grid, dim3 block,
              size_t dyn_smem, void (*body)(void *), void *ctx);
/* Queue a checked launch on its stream (emu_streams.cc); `pointers` are its
 * pointer arguments, which cudaFree checks against. */
void queue_kernel(const char *name, const char *file, int line, cudaStream_t stream,
                  std::vector<const void *> pointers, std::function<void()> run);
/* 0 when p is null or inside memory a kernel may touch (device, managed,
 * pinned host); otherwise prints why and returns 1. */
int check_kernel_pointer(const char *kernel, const char *file, int line, int index,
                         const void *p);
int set_error(int e);

template <class T> static inline T shfl(const char *file, int line, int kind, unsigned mask,
                                        T var, int arg, int width = 32) {
    static_assert(sizeof(T) <= 16 && std::is_trivially_copyable<T>::value,
                  "__shfl_*_sync: value must be trivially copyable and at most 16 bytes");
    WarpOp op;
    op.kind = kind; op.mask = mask; op.arg = arg; op.width = width; op.is_signed = 0;
    memcpy(op.val, &var, sizeof(T));
    op.size = sizeof(T); op.pred = 0; op.file = file; op.line = line;
    warp_op(&op);
    T r;
    memcpy(&r, op.out, sizeof(T));
    return r;
}

static inline unsigned long long vote(const char *file, int line, int kind, unsigned mask,
                                      unsigned long long pred, int is_signed = 0) {
    WarpOp op;
    op.kind = kind; op.mask = mask; op.arg = 0; op.width = 32; op.is_signed = is_signed;
    op.size = 0; op.pred = pred; op.file = file; op.line = line;
    warp_op(&op);
    return op.result;
}

template <class T> static inline unsigned match_any(const char *file, int line, unsigned mask, T v) {
    static_assert(sizeof(T) <= 8, "__match_any_sync: 32- or 64-bit values");
    unsigned long long u = 0;
    memcpy(&u, &v, sizeof(T));
    return (unsigned)vote(file, line, W_MATCH_ANY, mask, u);
}

template <class P> static inline int check_param(const char *k, const char *f, int l, int i,
                                                 const P &p) {
    if constexpr (std::is_pointer<P>::value &&
                  !std::is_function<typename std::remove_pointer<P>::type>::value)
        return check_kernel_pointer(k, f, l, i, (const void *)p);
    else
        return 0;
}

template <class Tuple, size_t... I>
static inline int check_params(const char *k, const char *f, int l, const Tuple &t,
                               std::index_sequence<I...>) {
    return (0 + ... + check_param(k, f, l, (int)I + 1, std::get<I>(t)));
}

template <class P> static inline void add_pointer(std::vector<const void *> &v, const P &p) {
    if constexpr (std::is_pointer<P>::value &&
                  !std::is_function<typename std::remove_pointer<P>::type>::value)
        if (p) v.push_back((const void *)p);
}

template <class Tuple, size_t... I>
static inline std::vector<const void *> pointer_params(const Tuple &t, std::index_sequence<I...>) {
    std::vector<const void *> v;
    (add_pointer(v, std::get<I>(t)), ...);
    return v;
}

/* The launch: LAUNCH(kernel, grid, block, smem, stream, args...) in
 * cuda_common.cuh expands to cuda_emu_launch(...), which lands here. The
 * arguments convert to the kernel's parameter types as in a call and are
 * kept with the queued launch; each thread gets its own copies (kernels may
 * modify their parameters). The pointers are checked at the launch and
 * again when the kernel runs (the memory may have been freed since). */
template <class... P, class... A>
static inline void launch(const char *name, const char *file, int line, void (*kernel)(P...),
                          dim3 grid, dim3 block, size_t smem, cudaStream_t stream, A &&...args) {
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
    typedef std::tuple<typename std::decay<P>::type...> Params;
    Params params(std::forward<A>(args)...);
    if (check_params(name, file, line, params, std::index_sequence_for<P...>{})) {
        set_error(cudaErrorIllegalAddress);
        fatal("kernel %s launched at %s:%d with a pointer the GPU cannot read (see above)",
              name, file, line);
    }
    int err = launch_check(name, file, line, (const void *)kernel, grid, block, smem, stream);
    if (err) {
        set_error(err);
        return;
    }
    auto run = [=]() mutable {
        if (check_params(name, file, line, params, std::index_sequence_for<P...>{})) {
            set_error(cudaErrorIllegalAddress);
            fatal("kernel %s launched at %s:%d ran after memory it was given had been freed "
                  "(see above)", name, file, line);
        }
        struct Ctx { void (*k)(P...); Params *p; } ctx = {kernel, &params};
        auto body = [](void *c) {
            Ctx *x = (Ctx *)c;
            std::apply(x->k, *x->p);   /* copies each argument into the call */
        };
        run_grid(name, file, line, grid, block, smem, body, &ctx);
    };
    queue_kernel(name, file, line, stream, pointer_params(params, std::index_sequence_for<P...>{}),
                 run);
}

}  // namespace cuda_emu

/* cuda_common.cuh's LAUNCH calls cuda_emu_launch(kernel, dim3(grid), ...). */
#define cuda_emu_launch(kernel, ...) \
    ::cuda_emu::launch(#kernel, __FILE__, __LINE__, kernel, __VA_ARGS__)

#endif
