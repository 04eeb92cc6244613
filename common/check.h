/* check.h: error handling shared by every program.
 *
 * One macro per library keeps call sites to one line. Every failure ends in
 * die(): one line on stderr naming the file, line and what failed, then
 * MPI_Abort (so no rank is left waiting in a collective) or exit(1). */
#ifndef CHECK_H
#define CHECK_H

#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Print "error (rank R): <message>" on stderr and stop every rank: MPI_Abort
 * with status 1 (exit(1) on one rank). Safe on any rank, at any point. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The stub of a graded assignment's removed code (ASSIGNMENTS.md): dies
 * with "not implemented: WHAT; see WHERE", so a student copy builds and every
 * run that reaches the missing piece ends at once, on every rank. */
void not_implemented(const char *what, const char *where) __attribute__((noreturn));
/* Bad input (a flag, the configuration, a file): status 2. Every rank that
 * refuses joins a barrier on a communicator kept for refusals; when every
 * rank joins it within REFUSE_GRACE_S (the same check on every rank, as for
 * flags), rank 0 prints "error: <message>" and every rank finalizes MPI and
 * exits 2. When some rank does not join (a check only some ranks make, a
 * file one node lacks), the refusing rank prints "error (rank R): <message>"
 * and ends the job with MPI_Abort (status 2): a refusal never leaves a rank
 * waiting in a collective. */
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
enum { REFUSE_GRACE_S = 3 };
/* A check whose answer may differ between ranks (memory per pipeline stage,
 * a file on one node): collective over MPI_COMM_WORLD, called by every rank
 * before it needs its peers. why is this rank's reason to refuse ("" or
 * NULL: none); when any rank has one, every rank refuses together with the
 * lowest such rank's reason (usage_error, status 2). */
void usage_error_any(const char *why);
/* End a run that was asked only for --help: finalize MPI, exit 0. */
void usage_exit_ok(void) __attribute__((noreturn));
/* printf on rank 0 only (the rank set by dist_init; 0 before it). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The rank say() and die() report; set by check_init. */
extern int check_rank;
/* Called by dist_init on every rank once MPI is up: the rank for messages,
 * the communicator of refusals, and the table in shared memory where the
 * ranks of a node publish what they wait for (the watchdog's, below). */
void check_init(void);
/* MPI_Finalize (when MPI runs), once the watchdog has let go of the table. */
void check_finalize(void);

/* The watchdog: a rank that waits on its peers (a collective, a message, the
 * GPU, a benchmark's loop of calls) says what it waits for between
 * watch_begin and watch_end (waits may nest); watch_tick says the current
 * wait made progress (a call of the loop finished). `peers` are the world
 * ranks the wait depends on (a message's sender and receiver, every rank of
 * a collective's communicator; copied); npeers WATCH_WORLD: every rank of
 * the world (peers NULL); 0: none known. When one wait goes longer than the
 * timeout without progress, a thread prints one line, "error (rank R): no
 * progress for S s in WHAT on the WHERE communicator; ...", with what each
 * peer is doing, read from the node's shared table: "no sign of life" (its
 * watchdog thread has stopped beating: the process is stopped or hung),
 * waiting where another rank shows no sign of life, "in the same wait" (for
 * a collective: it has joined; for a message: both wait on each other), in
 * another wait and for how long, or "waiting on no rank" (computing); ranks
 * on other nodes are of unknown state. It names `flag` as the knob and ends
 * the job (exit status 1, which makes mpirun stop every rank): a stopped or
 * hung peer never leaves the others spinning forever. timeout_s <= 0 leaves
 * it off. */
void watchdog_start(double timeout_s, const char *flag);
enum { WATCH_WORLD = -1 };
void watch_begin(const char *what, const char *where, const int *peers, int npeers);   /* where may be NULL */
void watch_end(void);
void watch_tick(void);

void *xmalloc(size_t bytes);   /* malloc that dies on failure, 64-byte aligned */
void *xcalloc(size_t n, size_t size);

#define MPI_CHECK(call)                                                        \
    do {                                                                       \
        int mpi_err_ = (call);                                                 \
        if (mpi_err_ != MPI_SUCCESS) {                                         \
            char mpi_msg_[MPI_MAX_ERROR_STRING]; int mpi_len_ = 0;             \
            MPI_Error_string(mpi_err_, mpi_msg_, &mpi_len_);                   \
            die("%s:%d: %s failed: %s", __FILE__, __LINE__, #call, mpi_msg_);  \
        }                                                                      \
    } while (0)

/* For libc calls that return -1 / NULL and set errno. */
#define SYS_CHECK(cond, what)                                                  \
    do { if (!(cond)) die("%s:%d: %s: %s", __FILE__, __LINE__, what,           \
                          strerror(errno)); } while (0)

#ifdef __cplusplus
}
#endif
#endif
