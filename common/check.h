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

/* Print "error: <message>" on stderr and stop every rank. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Same, for bad input found identically on every rank (flags, config):
 * rank 0 prints the line, every rank exits with status 2 without MPI_Abort's
 * noise. Only call it from code that every rank runs. */
void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* End a run that was asked only for --help: finalize MPI, exit 0. */
void usage_exit_ok(void) __attribute__((noreturn));
/* printf on rank 0 only (the rank set by dist_init; 0 before it). */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The rank say() and die() report; set by dist_init. */
extern int check_rank;

/* The watchdog: a rank that waits on its peers (a collective, a message, the
 * GPU, a benchmark's loop of calls) says what it waits for between
 * watch_begin and watch_end (waits may nest); watch_tick says the current
 * wait made progress (a call of the loop finished). When one wait goes
 * longer than the timeout without progress, a thread prints "error (rank R):
 * no progress for S s in WHAT on the WHERE communicator ..." naming `flag` as
 * the knob, and ends the job (exit status 1, which makes mpirun stop every
 * rank): a stopped or hung peer never leaves the others spinning forever.
 * timeout_s <= 0 leaves it off. */
void watchdog_start(double timeout_s, const char *flag);
void watch_begin(const char *what, const char *where);   /* where may be NULL */
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
