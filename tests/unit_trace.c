/* unit_ddp_trace.c: the span recorder (common/trace.c) writes one Chrome
 * trace with a process per rank and a thread per track. */
#include "unit.h"

#include <unistd.h>

#include "device.h"
#include "trace.h"

static int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

TEST(trace_one_file_one_track_per_rank_and_stream) {
    char path[128];
    int root_pid = (int)getpid();
    MPI_Bcast(&root_pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "/tmp/unit_trace_%d.json", root_pid);
    int compute = trace_track("compute");
    trace_init(MPI_COMM_WORLD, path, 0);
    int comm = trace_track("comm");
    double t = now_s();
    /* rank r records r + 2 compute spans and one comm span; a paused span and
     * spans past trace_write are not recorded. */
    for (int i = 0; i < unit_dist.rank + 2; i++) trace_span(compute, "bwd layer \"x\"", t + i, t + i + 0.5);
    trace_span(comm, "allreduce b0", t, t + 2);
    trace_pause(1);
    trace_span(comm, "paused", t, t + 1);
    trace_pause(0);
    trace_write();
    trace_span(comm, "after", t, t + 1);
    EXPECT(!trace_on());
    if (unit_dist.rank == 0) {
        FILE *f = fopen(path, "r");
        EXPECT(f != NULL);
        if (!f) return;
        static char buf[1 << 20];
        size_t len = fread(buf, 1, sizeof buf - 1, f);
        buf[len] = 0;
        fclose(f);
        int W = unit_dist.world, spans = 0;
        for (int r = 0; r < W; r++) spans += r + 2 + 1;
        EXPECT_EQ_INT(count(buf, "\"ph\": \"X\""), spans);
        EXPECT_EQ_INT(count(buf, "\"process_name\""), W);
        EXPECT_EQ_INT(count(buf, "\"thread_name\""), 2 * W);
        for (int r = 0; r < W; r++) {
            char want[64];
            snprintf(want, sizeof want, "\"name\": \"rank %d\"", r);
            EXPECT_EQ_INT(count(buf, want), 1);
        }
        EXPECT_EQ_INT(count(buf, "paused"), 0);
        EXPECT_EQ_INT(count(buf, "after"), 0);
        EXPECT_EQ_INT(count(buf, "bwd layer \\\"x\\\""), spans - W);   /* quotes escaped */
        EXPECT(strncmp(buf, "{\"displayTimeUnit\"", 18) == 0);
        EXPECT(len > 4 && strcmp(buf + len - 4, "\n]}\n") == 0);
        EXPECT_EQ_INT(count(buf, "{"), count(buf, "}"));
        /* A span lasting 0.5 s is written as 500000 us. */
        EXPECT(count(buf, "\"dur\": 500000.000") == spans - W);
        unlink(path);
    }
}
