/* idle_wait.c: preloaded into every test's processes by tests/run.sh, so that
 * an MPI rank waiting for a message gives its core to the other tests' ranks.
 *
 * Open MPI's shared-memory transport polls: a rank blocked in MPI_Recv loops
 * over its progress engine, calling sched_yield() after each idle pass
 * (mpi_yield_when_idle). With more ranks than cores, as under `make test`,
 * each yield is a context switch that hands the core back to the poller soon
 * after, so the waiting ranks took about a quarter of the CPU of the whole
 * run, in the kernel.
 *
 * This sched_yield() yields as before for the first 100 us of a wait, so a
 * message that arrives quickly is seen at once; past that it sleeps 50 us
 * per idle pass instead, so a long wait costs no CPU and a message waits at
 * most one sleep longer (plus the kernel's timer slack) to be noticed.
 * Calls less than 200 us apart belong to one wait.
 *
 * What the programs compute is unchanged: only how long a rank that has
 * nothing to do takes to notice that it has something. (The chapters'
 * programs never call sched_yield; the CUDA emulator's idle loop does, and
 * backs off to sleeping on its own.)
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread long long wait_start_ns, last_call_ns;

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

int sched_yield(void) {
    long long now = now_ns();
    if (now - last_call_ns > 200000) wait_start_ns = now;   /* a new wait */
    last_call_ns = now;
    if (now - wait_start_ns < 100000) return (int)syscall(SYS_sched_yield);
    struct timespec nap = {0, 50000};
    nanosleep(&nap, 0);
    last_call_ns = now_ns();
    return 0;
}
