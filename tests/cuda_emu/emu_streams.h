/* emu_streams.h: streams and events of the CUDA emulator, shared by its
 * runtime, cuBLAS, NCCL and MPI parts (internal; the suite never includes
 * this file). emu_streams.cc explains the model.
 *
 * Every operation a program puts on a stream (a kernel, a copy, a memset, a
 * cuBLAS call, an NCCL collective, an event record or wait) goes through
 * enqueue() or enqueue_comm(). With EMU_STREAMS=sync it runs at once, in
 * program order. With EMU_STREAMS=defer (the default) it waits in its
 * stream's queue until something forces it, and then runs in an order that
 * keeps only what CUDA guarantees. */
#ifndef CUDA_EMU_STREAMS_H
#define CUDA_EMU_STREAMS_H

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace cuda_emu {

/* Memory an operation reads or writes, for the check in cudaFree: `bytes`
 * from p, or (bytes == 0) anything in the allocation holding p, which is
 * all the emulator knows about a kernel's pointer arguments. */
struct Use {
    const void *p;
    size_t bytes;
};

/* Work that involves other ranks (NCCL over MPI). start() reads the send
 * buffers and posts non-blocking MPI calls; test() says whether they have
 * all completed; finish() writes the receive buffers. Between start() and
 * finish() the stream is busy with it, as with a running NCCL kernel. */
struct CommWork {
    virtual ~CommWork() {}
    virtual void start() = 0;
    virtual bool test() = 0;
    virtual void finish() = 0;
};

/* True when work is deferred (EMU_STREAMS=defer, the default). */
bool deferred();

/* Is s a stream a call may use: 0, cudaStreamLegacy, cudaStreamPerThread or
 * a live created stream. */
bool stream_valid(cudaStream_t s);

/* Queue local work on s (s must be valid). `what` names it in reports. */
void enqueue(cudaStream_t s, std::string what, std::vector<Use> uses, std::function<void()> run);

/* Queue communication on s. Operations with the same `channel` (an NCCL
 * communicator) run in the order they were queued, whatever their streams,
 * as NCCL runs the operations of one communicator one after the other.
 * `also`: more streams that must reach this point too (an NCCL group over
 * several streams). */
void enqueue_comm(cudaStream_t s, const void *channel, std::string what, std::vector<Use> uses,
                  std::unique_ptr<CommWork> work, const std::vector<cudaStream_t> &also = {});

/* Block until everything queued on s so far has finished. */
void sync_stream(cudaStream_t s, const char *call);

/* Block until every operation queued on `channel` so far has finished. */
void sync_channel(const void *channel, const char *call);

/* Block until all queued work of every device has finished (MPI_Finalize). */
void sync_all(const char *call);

/* Start every collective that can start and move the ones in flight on,
 * without waiting; true when something happened. Called while the host
 * waits in MPI, so that this rank keeps taking part in collectives its
 * peers wait for, as a GPU does while its host is busy. */
bool pump();

/* Sleep a little when a wait loop found nothing to do (cores are shared). */
void idle(long *spins);

/* The first queued, unfinished operation that uses memory in
 * [base, base + size), described, or "" (for cudaFree). */
std::string pending_use(const void *base, size_t size);

/* What the deferred work running now is (for error messages), or null. */
const char *running_op();

/* From emu_runtime.cc: the calling thread's current device. */
int get_current_device();
void set_current_device(int dev);

/* From emu_runtime.cc: 0 when [p, p + bytes) lies in one device allocation,
 * else prints why and returns 1; the second form stops the program. */
int device_range_error(const char *call, const char *what, const void *p, size_t bytes);
void require_device_range(const char *call, const char *what, const void *p, size_t bytes);

}  // namespace cuda_emu

#endif
