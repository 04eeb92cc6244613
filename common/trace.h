/* trace.h: a span recorder that writes one Chrome trace for all ranks.
 *
 * Each rank records spans (name, track, start, end) in memory while tracing
 * is on; trace_write() gathers them to rank 0, which writes one JSON file in
 * the Chrome trace-event format. Open it at https://ui.perfetto.dev (or
 * chrome://tracing): every rank is a process ("rank 0", "rank 1", ...) and
 * every track a thread inside it ("compute", "comm", ...), so communication
 * spans sit right under the compute they overlap.
 *
 *   int comm = trace_track("comm");
 *   trace_init(MPI_COMM_WORLD, "ddp.json", 0);   // collective, before the steps
 *   double t0 = now_s();  ...work...  trace_span(comm, "allreduce b3", t0, now_s());
 *   trace_write();                               // collective
 *
 * Times are now_s() seconds (device.h: monotonic wall clock); each rank's
 * times are shifted by its clock at trace_init, which is called after a
 * barrier, so the ranks line up to within the barrier's skew. Spans of GPU
 * work are added with the times their events measured. */
/* The action record (`--record FILE`) is the trace's counterpart for the
 * replay engine (replay.h): not spans on a wall clock but, per rank, what it
 * computed in thread CPU time and which communication it called, in order.
 * Compute is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID) between
 * two recorded points, less the CPU time spent inside the comm layer (its
 * polling included), so ranks sharing a core do not inflate it; it is
 * exact for one thread per rank, and the programs refuse --record with
 * more. record_write() gathers the lists to rank 0, which writes one text
 * file:
 *   record 1 WORLD
 *   link ALPHA_US GBPS                  optional: the link the program measured
 *                                       (chapter 02's ping-pong fit), the
 *                                       replay's default inside a node
 *   group RANK ID SIZE W0 W1 ...        a communicator RANK belongs to: its
 *                                       members' world ranks in its rank order
 *                                       (ID: RANK's own number for it)
 *   RANK compute SECONDS FLOPS NAME     FLOPS 0: unknown
 *   RANK KIND NB GROUP PEER SRC BYTES   a call: KIND all-reduce, reduce-scatter,
 *                                       all-gather, broadcast, reduce, all-to-all,
 *                                       send, receive, send-receive, barrier; NB 1:
 *                                       non-blocking; PEER, SRC: ranks in GROUP;
 *                                       BYTES: the collective's whole vector X, or
 *                                       the message sent
 *   RANK wait REF                       waits for the non-blocking call at index
 *                                       REF of RANK's events (group lines aside)
 *   RANK mark NAME                      every rank passes this point (a step)
 * Names have no spaces. A communicator is the same on every rank that lists
 * the same members for the k-th time. */
#ifndef TRACE_H
#define TRACE_H

#include <mpi.h>

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { TRACE_NAME = 40, TRACE_MAX_TRACKS = 8 };

/* Start recording on this rank (collective over comm: a barrier aligns the
 * ranks' time zero). path NULL leaves tracing off: every call is then a
 * no-op. At most max_spans spans per rank are kept (0: 100000). */
void trace_init(MPI_Comm comm, const char *path, int max_spans);
/* True while recording (between trace_init with a path and trace_write). */
int trace_on(void);
/* Pause and resume recording (e.g. trace only a few steps). */
void trace_pause(int paused);
/* The id of a named track of this rank, created on first use. */
int trace_track(const char *name);
/* Record one span [t0, t1] in seconds of now_s(); name is copied. */
void trace_span(int track, const char *name, double t0, double t1);
/* Gather every rank's spans; rank 0 writes the file and says where.
 * Collective over the comm given to trace_init. Ends recording. */
void trace_write(void);

/* Set up recording on this rank, paused: record_pause(0) starts it
 * (collective over comm); path NULL leaves it off. */
void record_init(MPI_Comm comm, const char *path);
/* Pause (1) and resume (0) recording, e.g. outside the timed steps. */
void record_pause(int paused);
/* A communicator of the world ranks `world` (size of them, in its rank
 * order): its id for record_call. Called by every communicator's set-up,
 * recording or not. */
int record_group(int size, const int *world);
/* Around every comm-layer call: its CPU time is not compute. Nests. */
void record_enter(void);
void record_leave(void);
/* A call on group (non-blocking: nb 1); returns its index for record_wait,
 * or -1 when not recording. */
int record_call(int group, coll_kind kind, int nb, int peer, int src, double bytes);
void record_wait(int ref);
/* Compute since the last recorded point is an action of name and flops:
 * record_action_begin closes what came before it; record_action_end names the
 * compute since then (split by the calls in between, the FLOPs shared in
 * proportion to their seconds). */
void record_action_begin(void);
void record_action_end(const char *name, double flops);
void record_mark(const char *name);
/* The link this run measured (alpha in microseconds, GB/s): written to the
 * file's head. */
void record_link(double alpha_us, double gbps);
/* Gather the lists; rank 0 writes the file. Collective. Ends recording. */
void record_write(void);

#ifdef __cplusplus
}
#endif
#endif
