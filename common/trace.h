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
#ifndef TRACE_H
#define TRACE_H

#include <mpi.h>

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

#ifdef __cplusplus
}
#endif
#endif
