/* emu_threads.cc: the CUDA emulator's thread model (see include/cuda_emu_core.h).
 *
 * Every CUDA thread of the running block is a fiber: a stack of its own and
 * a saved stack pointer. Switching is a hand-written x86-64 routine that
 * saves the callee-saved registers, swaps stacks and returns into the other
 * fiber (about as cheap as a function call; ucontext would add a system call
 * per switch). AddressSanitizer is told about every switch, so it checks
 * stack accesses against the right stack.
 *
 * A fiber runs until it waits at __syncthreads() or at a warp operation, or
 * finishes, and then hands over straight to the next runnable fiber: first
 * the next lane of its own warp, then the next warp. So a warp runs as far
 * ahead of the others as it can (to the next __syncthreads()), the way one
 * warp can outrun the rest on a GPU, and within a warp one lane runs ahead
 * of the next until a warp operation: both expose a missing barrier or
 * __syncwarp(). The last lane to reach a warp operation completes it for the
 * whole group and goes on; the last thread to reach a barrier releases the
 * block and the schedule starts over from its first warp. EMU_SCHEDULE picks
 * the order: forward (warps and lanes in order, the default), reverse,
 * shuffle (random, EMU_SEED), or interleave (one thread after another across
 * the whole block, warps advancing together); blocks follow the same order.
 * When nothing can run, the scheduler (the launching thread's own stack)
 * completes warp operations whose missing lanes have exited, or reports the
 * deadlock.
 *
 * This file holds no user data, so the build compiles it without the
 * sanitizers (it is the emulator's inner loop); it tells AddressSanitizer
 * about each stack switch when the program uses it (EMU_ASAN_FIBERS). */
#include <cuda_runtime.h>

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__) || defined(EMU_ASAN_FIBERS)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif

uint3 threadIdx, blockIdx;
dim3 blockDim, gridDim;

/* ---- context switch ------------------------------------------------------------
 * cuda_emu_switch(save, to): push the callee-saved registers on the current
 * stack, store the stack pointer in *save, load `to` and pop the other
 * fiber's registers; `ret` then resumes it. (Kernels never change the
 * rounding mode, so the SSE and x87 control words are not switched.) */
#if !defined(__x86_64__)
#error "the CUDA emulator's fibers are written for x86-64"
#endif
extern "C" void cuda_emu_switch(void **save, void *to);
__asm__(
    ".text\n"
    ".globl cuda_emu_switch\n"
    ".type cuda_emu_switch,@function\n"
    "cuda_emu_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".size cuda_emu_switch, .-cuda_emu_switch\n");

namespace cuda_emu {

const char *running_op();   /* emu_streams.cc: the deferred work running now */

enum { F_READY, F_BARRIER, F_WARP, F_DONE };

struct Fiber {
    void *sp;
    char *stack;           /* lowest usable address */
    int state;
    uint3 tid;
    int linear;
    /* __syncthreads */
    const char *bar_file;
    int bar_line, bar_kind, bar_pred, bar_result;
    WarpOp *op;
};

struct Stack { char *lo; size_t size; };

static struct {
    std::mutex mu;
    /* the launch */
    const char *name, *file;
    int line;
    void (*body)(void *);
    void *ctx;
    dim3 grid, block;
    /* the block */
    std::vector<Fiber> fibers;
    int n, done, cur;
    int pos;                        /* position of cur in order */
    std::vector<int> order;         /* fiber ids in schedule order (interleave) */
    std::vector<int> worder;        /* warps in schedule order */
    int lorder[32], lpos[32];       /* lanes in schedule order, and the inverse */
    int wpos;                       /* position of cur's warp in worder */
    bool restart;                   /* next pick starts from the first warp */
    int at_barrier;
    /* per warp: lanes that exist, lanes not exited, lanes waiting at a warp op */
    std::vector<unsigned> warp_exist;
    std::vector<int> warp_live, warp_wait;
    void *sched_sp;
    bool from_sched;
    /* shared memory of the block */
    struct Var { const void *key; void *p; size_t size; const char *name; };
    std::vector<Var> vars;
    size_t static_bytes;
    void *dyn;
    size_t dyn_bytes;
    /* stacks */
    std::vector<Stack> stacks;
    size_t stack_size;
    int schedule;          /* 0 forward, 1 reverse, 2 shuffle, 3 interleave */
    std::mt19937 rng;
    bool configured;
    const void *main_bottom;
    size_t main_size;
} S;

static bool in_kernel() { return S.name != nullptr && S.n > 0; }

[[noreturn]] static void die_now() {
    fflush(stdout);
    fflush(stderr);
    int up = 0, down = 0, world = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) {
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        if (world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    _exit(1);
}

void fatal(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (in_kernel())
        fprintf(stderr, "error: cuda_emu: kernel %s (launched at %s:%d), block (%u,%u,%u): %s\n",
                S.name, S.file, S.line, blockIdx.x, blockIdx.y, blockIdx.z, msg);
    else if (running_op())
        fprintf(stderr, "error: cuda_emu: %s [in %s]\n", msg, running_op());
    else
        fprintf(stderr, "error: cuda_emu: %s\n", msg);
    die_now();
}

/* The kernel, block and thread running now (for reports); 0 outside kernels. */
int current_kernel(const char **name, const char **file, int *line, uint3 *block, uint3 *thread) {
    if (!in_kernel()) return 0;
    *name = S.name;
    *file = S.file;
    *line = S.line;
    *block = blockIdx;
    *thread = S.fibers[S.cur].tid;
    return 1;
}

static void configure() {
    if (S.configured) return;
    S.configured = true;
    const char *kb = getenv("EMU_STACK_KB");
    S.stack_size = (size_t)(kb && atoi(kb) > 0 ? atoi(kb) : 256) * 1024;
    const char *sch = getenv("EMU_SCHEDULE");
    S.schedule = 0;
    if (sch && strcmp(sch, "reverse") == 0) S.schedule = 1;
    else if (sch && strcmp(sch, "shuffle") == 0) S.schedule = 2;
    else if (sch && strcmp(sch, "interleave") == 0) S.schedule = 3;
    else if (sch && *sch && strcmp(sch, "forward") != 0)
        fatal("EMU_SCHEDULE=%s: expected forward, reverse, shuffle or interleave", sch);
    const char *seed = getenv("EMU_SEED");
    S.rng.seed(seed ? (unsigned)atoi(seed) : 12345u);
}

static Stack get_stack(int i) {
    while ((int)S.stacks.size() <= i) {
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        size_t total = S.stack_size + page;
        char *m = (char *)mmap(nullptr, total, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (m == MAP_FAILED) fatal("cannot map a %zu-byte thread stack", total);
        /* A guard page below the stack turns an overflow into a crash. */
        mprotect(m, page, PROT_NONE);
        S.stacks.push_back(Stack{m + page, S.stack_size});
    }
    return S.stacks[i];
}

/* ---- switching ----------------------------------------------------------------------- */
[[noreturn]] static void fiber_main();

static void *initial_sp(const Stack &st) {
    /* The frame cuda_emu_switch pops: six registers, then the return address
     * (fiber_main) with a zero "caller" above it; the return slot is 16-byte
     * aligned, so fiber_main starts with the alignment the ABI promises. */
    uintptr_t top = ((uintptr_t)(st.lo + st.size)) & ~(uintptr_t)15;
    uint64_t *a = (uint64_t *)(top - 16);
    a[1] = 0;
    a[0] = (uint64_t)(uintptr_t)&fiber_main;
    uint64_t *regs = a - 6;
    for (int i = 0; i < 6; i++) regs[i] = 0;
    return (void *)regs;
}

/* Switch from the running context (saving its stack pointer in *save) to
 * stack pointer `to` on the stack [bottom, bottom + size). A context that
 * will never run again (an exited fiber) says so with `dying`. */
static void transfer(void **save, void *to, const void *bottom, size_t size, bool dying) {
#if EMU_ASAN
    void *fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, bottom, size);
    cuda_emu_switch(save, to);
    /* resumed: by the scheduler or by another fiber */
    const void *from_bottom;
    size_t from_size;
    __sanitizer_finish_switch_fiber(fake, &from_bottom, &from_size);
    if (S.from_sched) { S.main_bottom = from_bottom; S.main_size = from_size; S.from_sched = false; }
#else
    (void)bottom; (void)size; (void)dying;
    cuda_emu_switch(save, to);
#endif
}

/* The next runnable fiber, or -1: the next lane of the current warp (in
 * lane order, wrapping around), else the first runnable lane of the next
 * warps (in warp order). interleave: the next thread of the block. */
static int next_ready() {
    int n = S.n;
    if (S.schedule == 3) {
        for (int k = 1; k <= n; k++) {
            int p = S.restart ? k - 1 : S.pos + k;
            if (p >= n) p -= n;
            if (S.fibers[S.order[p]].state == F_READY) { S.pos = p; S.restart = false; return S.order[p]; }
        }
        return -1;
    }
    int W = (int)S.worder.size(), start = 0;
    if (!S.restart && S.cur >= 0) {
        int w = S.cur / 32, lp = S.lpos[S.cur % 32];
        for (int k = 1; k <= 32; k++) {
            int id = w * 32 + S.lorder[(lp + k) & 31];
            if (id < n && S.fibers[id].state == F_READY) return id;
        }
        start = S.wpos + 1;
    }
    for (int k = 0; k < W; k++) {
        int wi = (start + k) % W, w = S.worder[wi];
        for (int j = 0; j < 32; j++) {
            int id = w * 32 + S.lorder[j];
            if (id < n && S.fibers[id].state == F_READY) {
                S.wpos = wi;
                S.restart = false;
                return id;
            }
        }
    }
    return -1;
}

/* From the running fiber to the next runnable one, or to the scheduler
 * when none is; returns when this fiber is resumed (unless dying). */
static void hand_over(bool dying) {
    Fiber &me = S.fibers[S.cur];
    int j = next_ready();
    if (j == S.cur) return;          /* only this fiber can run: go on */
    if (j < 0) {
        transfer(&me.sp, S.sched_sp, S.main_bottom, S.main_size, dying);
    } else {
        S.cur = j;
        threadIdx = S.fibers[j].tid;
        Stack st = S.stacks[j];
        transfer(&me.sp, S.fibers[j].sp, st.lo, st.size, dying);
    }
    /* resumed: whoever switched here set S.cur and threadIdx */
}

/* scheduler -> fiber i (just picked by next_ready) */
static void resume(int i) {
    S.cur = i;
    threadIdx = S.fibers[i].tid;
    Stack st = S.stacks[i];
    S.from_sched = true;
    transfer(&S.sched_sp, S.fibers[i].sp, st.lo, st.size, false);
}

static void fiber_main() {
#if EMU_ASAN
    const void *from_bottom;
    size_t from_size;
    __sanitizer_finish_switch_fiber(nullptr, &from_bottom, &from_size);
    if (S.from_sched) { S.main_bottom = from_bottom; S.main_size = from_size; S.from_sched = false; }
#endif
    S.body(S.ctx);
    Fiber &f = S.fibers[S.cur];
    f.state = F_DONE;
    S.done++;
    S.warp_live[S.cur / 32]--;
    hand_over(true);
    __builtin_unreachable();
}

/* ---- diagnostics -------------------------------------------------------------------------- */
static const char *op_name(int kind) {
    static const char *names[W_KINDS] = {
        "__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync",
        "__ballot_sync", "__any_sync", "__all_sync", "__syncwarp",
        "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__reduce_and_sync",
        "__reduce_or_sync", "__reduce_xor_sync", "__match_any_sync"};
    return kind >= 0 && kind < W_KINDS ? names[kind] : "?";
}

static std::string where(const Fiber &f) {
    char b[512];
    if (f.state == F_BARRIER)
        snprintf(b, sizeof b, "__syncthreads() at %s:%d", f.bar_file, f.bar_line);
    else if (f.state == F_WARP)
        snprintf(b, sizeof b, "%s(mask 0x%08x) at %s:%d", op_name(f.op->kind), f.op->mask,
                 f.op->file, f.op->line);
    else if (f.state == F_DONE)
        snprintf(b, sizeof b, "exited");
    else
        snprintf(b, sizeof b, "runnable");
    return b;
}

static std::string tid_str(const Fiber &f) {
    char b[64];
    if (S.block.y == 1 && S.block.z == 1) snprintf(b, sizeof b, "thread %u", f.tid.x);
    else snprintf(b, sizeof b, "thread (%u,%u,%u)", f.tid.x, f.tid.y, f.tid.z);
    return b;
}

/* "N threads: <where> (e.g. thread 3)" for each distinct place. */
static std::string census() {
    std::vector<std::pair<std::string, std::pair<int, int>>> groups;
    for (int i = 0; i < S.n; i++) {
        std::string w = where(S.fibers[i]);
        bool found = false;
        for (auto &g : groups)
            if (g.first == w) { g.second.first++; found = true; break; }
        if (!found) groups.push_back({w, {1, i}});
    }
    std::string s;
    for (auto &g : groups) {
        char b[128];
        snprintf(b, sizeof b, "%s%d thread%s ", s.empty() ? "" : "; ", g.second.first,
                 g.second.first == 1 ? "" : "s");
        s += b;
        s += g.first;
        s += " (e.g. " + tid_str(S.fibers[g.second.second]) + ")";
    }
    return s;
}

/* ---- warp operations ------------------------------------------------------------------------ */
/* Try to complete the operation lane `me` waits at. Returns true when done
 * (every participant is runnable again with its result). */
static bool try_complete(int me) {
    Fiber &f = S.fibers[me];
    WarpOp *op = f.op;
    int warp0 = me & ~31, lane = me & 31, w = me / 32;
    unsigned mask = op->mask;
    if (!(mask & (1u << lane)))
        fatal("%s: %s calls %s at %s:%d with mask 0x%08x, which does not name its own lane %d",
              op_name(op->kind), tid_str(f).c_str(), op_name(op->kind), op->file, op->line, mask,
              lane);
    /* Quick answer for a mask naming the whole warp: not everyone is here. */
    if ((mask & S.warp_exist[w]) == S.warp_exist[w] && S.warp_wait[w] < S.warp_live[w]) return false;
    unsigned group = 0;
    for (int l = 0; l < 32; l++) {
        if (!(mask & (1u << l))) continue;
        int i = warp0 + l;
        if (i >= S.n) continue;                  /* no such thread: partial warp */
        const Fiber &g = S.fibers[i];
        if (g.state == F_DONE) continue;         /* exited */
        if (g.state != F_WARP) return false;     /* not there yet */
        group |= 1u << l;
    }
    /* Everyone named is here: they must agree on what they do. */
    for (int l = 0; l < 32; l++) {
        if (!(group & (1u << l))) continue;
        const Fiber &g = S.fibers[warp0 + l];
        if (g.op->kind != op->kind || g.op->mask != op->mask)
            fatal("the lanes of warp %d disagree: %s is at %s but %s is at %s (a warp operation "
                  "in divergent code, or masks that do not match)",
                  me / 32, tid_str(f).c_str(), where(f).c_str(), tid_str(g).c_str(),
                  where(g).c_str());
        if (op->kind <= W_SHFL_XOR && g.op->size != op->size)
            fatal("the lanes of warp %d shuffle values of different sizes at %s:%d", me / 32,
                  op->file, op->line);
    }
    int kind = op->kind;
    unsigned long long acc = 0;
    bool first = true;
    for (int l = 0; l < 32; l++) {
        if (!(group & (1u << l))) continue;
        unsigned long long v = S.fibers[warp0 + l].op->pred;
        switch (kind) {
        case W_BALLOT: if (v) acc |= 1ull << l; break;
        case W_ANY: if (v) acc = 1; break;
        case W_ALL: if (first) acc = 1; if (!v) acc = 0; break;
        case W_REDUCE_ADD: acc = (unsigned)(acc + v); break;
        case W_REDUCE_AND: acc = first ? v : (acc & v); break;
        case W_REDUCE_OR: acc |= v; break;
        case W_REDUCE_XOR: acc ^= v; break;
        case W_REDUCE_MIN:
        case W_REDUCE_MAX: {
            long long a = op->is_signed ? (long long)(int)(unsigned)acc : (long long)(unsigned)acc;
            long long b = op->is_signed ? (long long)(int)(unsigned)v : (long long)(unsigned)v;
            if (first || (kind == W_REDUCE_MIN ? b < a : b > a)) acc = v;
            break;
        }
        default: break;
        }
        first = false;
    }
    for (int l = 0; l < 32; l++) {
        if (!(group & (1u << l))) continue;
        Fiber &g = S.fibers[warp0 + l];
        WarpOp *o = g.op;
        if (kind <= W_SHFL_XOR) {
            /* The source lane, as PTX's shfl.sync defines it for width w:
             * lanes form segments of w; up/down/xor that leave the segment
             * (up below its start, down/xor above its end) keep their own
             * value; idx wraps within the segment. */
            int w = o->width;
            if (w <= 0 || w > 32 || (w & (w - 1)))
                fatal("%s at %s:%d: width %d is not a power of two in [1, 32]", op_name(kind),
                      o->file, o->line, w);
            int start = l & ~(w - 1), end = start + w - 1, src = l;
            switch (kind) {
            case W_SHFL_IDX: src = start + (o->arg & (w - 1)); break;
            case W_SHFL_UP: src = l - o->arg; if (src < start) src = l; break;
            case W_SHFL_DOWN: src = l + o->arg; if (src > end) src = l; break;
            case W_SHFL_XOR: src = l ^ (o->arg & 31); if (src > end) src = l; break;
            }
            /* 16-byte copies inline (no library call in the inner loop) */
            uint64_t *dst = (uint64_t *)o->out;
            if (group & (1u << src)) {
                const uint64_t *v = (const uint64_t *)S.fibers[warp0 + src].op->val;
                dst[0] = v[0];
                dst[1] = v[1];
            } else {
                dst[0] = dst[1] = ~(uint64_t)0;   /* undefined on a GPU: 0xff bytes */
            }
        } else if (kind == W_MATCH_ANY) {
            unsigned m = 0;
            for (int k = 0; k < 32; k++)
                if ((group & (1u << k)) && S.fibers[warp0 + k].op->pred == o->pred) m |= 1u << k;
            o->result = m;
        } else {
            o->result = acc;
        }
        g.state = F_READY;
        S.warp_wait[w]--;
    }
    return true;
}

void warp_op(WarpOp *op) {
    if (!in_kernel()) fatal("%s called outside a kernel (%s:%d)", op_name(op->kind), op->file, op->line);
    int me = S.cur;
    Fiber &f = S.fibers[me];
    f.op = op;
    f.state = F_WARP;
    S.warp_wait[me / 32]++;
    if (!try_complete(me)) hand_over(false);
    f.op = nullptr;   /* kept only while waiting */
}

unsigned activemask() {
    if (!in_kernel()) fatal("__activemask() called outside a kernel");
    int warp0 = S.cur & ~31;
    unsigned m = 0;
    for (int l = 0; l < 32 && warp0 + l < S.n; l++)
        if (S.fibers[warp0 + l].state != F_DONE) m |= 1u << l;
    return m;
}

/* ---- block barrier ------------------------------------------------------------------------------ */
static void release_barrier();

static int barrier_wait(int kind, int pred, const char *file, int line) {
    if (!in_kernel()) fatal("__syncthreads() called outside a kernel (%s:%d)", file, line);
    Fiber &f = S.fibers[S.cur];
    f.state = F_BARRIER;
    f.bar_file = file;
    f.bar_line = line;
    f.bar_kind = kind;
    f.bar_pred = pred;
    S.at_barrier++;
    /* The last one in releases the block (or reports why it cannot). */
    if (S.at_barrier + S.done == S.n) release_barrier();
    hand_over(false);
    return f.bar_result;
}

void syncthreads(const char *file, int line) { barrier_wait(-1, 0, file, line); }
int syncthreads_reduce(int kind, int pred, const char *file, int line) {
    return barrier_wait(kind, pred, file, line);
}

/* Every live thread is at a barrier: release them, unless some exited
 * (they will never arrive) or they wait at different barriers. */
static void release_barrier() {
    if (S.done > 0)
        fatal("__syncthreads() is waited for by %d thread%s, but %d thread%s of the block "
              "already exited, so a GPU would hang or misbehave (a barrier after an early "
              "return, or inside a branch not all threads take): %s",
              S.at_barrier, S.at_barrier == 1 ? "" : "s", S.done, S.done == 1 ? "" : "s",
              census().c_str());
    const Fiber &a = S.fibers[0];
    for (int i = 1; i < S.n; i++) {
        const Fiber &b = S.fibers[i];
        if (b.bar_line != a.bar_line || b.bar_kind != a.bar_kind ||
            (b.bar_file != a.bar_file && strcmp(b.bar_file, a.bar_file) != 0))
            fatal("threads wait at different barriers: %s (a barrier inside a branch that "
                  "the threads of the block do not all take): %s",
                  b.bar_kind != a.bar_kind ? "different __syncthreads variants"
                                           : "two __syncthreads() lines",
                  census().c_str());
    }
    int r = 0;
    if (a.bar_kind >= 0) {
        int count = 0, all = 1, any = 0;
        for (int i = 0; i < S.n; i++) {
            int p = S.fibers[i].bar_pred != 0;
            count += p; all &= p; any |= p;
        }
        r = a.bar_kind == 0 ? count : a.bar_kind == 1 ? all : any;
    }
    for (int i = 0; i < S.n; i++) {
        S.fibers[i].bar_result = r;
        S.fibers[i].state = F_READY;
    }
    S.at_barrier = 0;
    S.restart = true;   /* the schedule starts over: its first thread runs next */
}

/* Nothing can run: complete warp operations whose missing lanes have
 * exited, or explain why the block is stuck. */
static void unstick() {
    bool woke = false;
    for (int i = 0; i < S.n; i++)
        if (S.fibers[i].state == F_WARP && try_complete(i)) woke = true;
    if (woke) return;
    if (S.at_barrier > 0 && S.at_barrier + S.done == S.n) release_barrier();   /* reports */
    if (S.at_barrier > 0 && S.done > 0)
        fatal("__syncthreads() is waited for by %d thread%s while %d thread%s of the block "
              "exited and the others wait at warp operations: %s", S.at_barrier,
              S.at_barrier == 1 ? "" : "s", S.done, S.done == 1 ? "" : "s", census().c_str());
    fatal("deadlock: no thread of the block can go on (a warp operation waits for a lane that "
          "sits at a barrier, or masks name lanes that never arrive): %s",
          census().c_str());
}

/* ---- shared memory ---------------------------------------------------------------------------------- */
static const size_t STATIC_SMEM_LIMIT = 48 * 1024;    /* ptxas refuses more */
static const size_t BLOCK_SMEM_LIMIT = 227 * 1024;    /* opt-in maximum on sm_90 */

void *shared_var(const void *key, size_t size, size_t align, const char *name) {
    if (!in_kernel()) fatal("__shared__ variable %s used outside a kernel", name);
    for (auto &v : S.vars)
        if (v.key == key) return v.p;
    if (align < 256) align = 256;   /* covers any __align__ the rewrite dropped */
    void *p = nullptr;
    if (posix_memalign(&p, align, size ? size : 1) != 0) fatal("out of memory for __shared__ %s", name);
    memset(p, 0xff, size);   /* uninitialised shared memory: NaN as float, -1 as int */
    S.vars.push_back({key, p, size, name});
    S.static_bytes += size;
    if (S.static_bytes > STATIC_SMEM_LIMIT)
        fatal("__shared__ variables take %zu bytes (%s is %zu), over the %zu-byte static limit",
              S.static_bytes, name, size, STATIC_SMEM_LIMIT);
    if (S.static_bytes + S.dyn_bytes > BLOCK_SMEM_LIMIT)
        fatal("shared memory %zu static + %zu dynamic bytes exceeds the %zu bytes of a block",
              S.static_bytes, S.dyn_bytes, BLOCK_SMEM_LIMIT);
    return p;
}

void *dynamic_shared() {
    if (!in_kernel()) fatal("extern __shared__ memory used outside a kernel");
    return S.dyn;
}

static void free_block_shared() {
    for (auto &v : S.vars) free(v.p);
    S.vars.clear();
    S.static_bytes = 0;
}

/* ---- the grid ------------------------------------------------------------------------------------------ */
static void run_block() {
    int n = S.n;
    S.fibers.resize(n);
    for (int i = 0; i < n; i++) {
        Fiber &f = S.fibers[i];
        Stack st = get_stack(i);
        f.sp = initial_sp(st);
        f.stack = st.lo;
        f.state = F_READY;
        f.linear = i;
        f.tid.x = i % S.block.x;
        f.tid.y = (i / S.block.x) % S.block.y;
        f.tid.z = i / (S.block.x * S.block.y);
        f.op = nullptr;
        f.bar_file = "";
        f.bar_line = 0;
        f.bar_kind = -1;
    }
    int warps = (n + 31) / 32;
    S.warp_exist.assign(warps, 0);
    S.warp_live.assign(warps, 0);
    S.warp_wait.assign(warps, 0);
    for (int i = 0; i < n; i++) {
        S.warp_exist[i / 32] |= 1u << (i % 32);
        S.warp_live[i / 32]++;
    }
    S.done = 0;
    S.at_barrier = 0;
    if (S.dyn) memset(S.dyn, 0xff, S.dyn_bytes);
    S.order.resize(n);
    for (int i = 0; i < n; i++) S.order[i] = S.schedule == 1 ? n - 1 - i : i;
    S.worder.resize(warps);
    for (int w = 0; w < warps; w++) S.worder[w] = S.schedule == 1 ? warps - 1 - w : w;
    for (int l = 0; l < 32; l++) S.lorder[l] = S.schedule == 1 ? 31 - l : l;
    if (S.schedule == 2) {
        std::shuffle(S.order.begin(), S.order.end(), S.rng);
        std::shuffle(S.worder.begin(), S.worder.end(), S.rng);
        std::shuffle(S.lorder, S.lorder + 32, S.rng);
    }
    for (int l = 0; l < 32; l++) S.lpos[S.lorder[l]] = l;
    S.restart = true;
    S.cur = -1;
    while (S.done < n) {
        int j = next_ready();
        if (j < 0) {
            unstick();
            continue;
        }
        resume(j);
        /* back here when no fiber could run, or all finished */
    }
    free_block_shared();
}

/* The launch was checked when it was queued (launch_check); this runs it. */
void run_grid(const char *name, const char *file, int line, dim3 grid, dim3 block,
              size_t dyn_smem, void (*body)(void *), void *ctx) {
    std::lock_guard<std::mutex> lock(S.mu);
    if (in_kernel()) fatal("kernel %s launched from inside kernel %s (dynamic parallelism is not emulated)", name, S.name);
    configure();
    S.name = name; S.file = file; S.line = line;
    S.body = body; S.ctx = ctx;
    S.grid = grid; S.block = block;
    S.n = (int)(block.x * block.y * block.z);
    S.dyn_bytes = dyn_smem;
    S.dyn = nullptr;
    if (posix_memalign(&S.dyn, 128, dyn_smem ? dyn_smem : 0) != 0 && dyn_smem)
        fatal("out of memory for %zu bytes of dynamic shared memory", dyn_smem);
    blockDim = block;
    gridDim = grid;
    size_t nblocks = (size_t)grid.x * grid.y * grid.z;
    std::vector<size_t> border;
    if (S.schedule != 0) {
        border.resize(nblocks);
        for (size_t b = 0; b < nblocks; b++) border[b] = S.schedule == 1 ? nblocks - 1 - b : b;
        if (S.schedule == 2) std::shuffle(border.begin(), border.end(), S.rng);
    }
    for (size_t b = 0; b < nblocks; b++) {
        size_t id = S.schedule != 0 ? border[b] : b;
        blockIdx.x = (unsigned)(id % grid.x);
        blockIdx.y = (unsigned)((id / grid.x) % grid.y);
        blockIdx.z = (unsigned)(id / ((size_t)grid.x * grid.y));
        run_block();
    }
    free(S.dyn);
    S.dyn = nullptr;
    S.name = nullptr;
    S.n = 0;
}
}  // namespace cuda_emu
