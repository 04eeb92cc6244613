/* outfile.c: checked flush and close of output files (outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"

void out_flush(FILE *f, const char *path) {
    /* fflush may fail now (errno says why) or a write may have failed before
     * (the error flag is set, errno long gone: a full disk is the usual
     * cause, and the file system can still tell) */
    errno = 0;
    if (fflush(f) == 0 && !ferror(f)) return;
    struct statvfs v;
    if (errno == 0 && fstatvfs(fileno(f), &v) == 0 && v.f_bavail == 0) errno = ENOSPC;
    die("writing %s: %s", path, errno ? strerror(errno) : "an earlier write failed");
}

void out_close(FILE *f, const char *path) {
    out_flush(f, path);
    /* A file system that cannot sync this file (a pipe, /dev/stdout) says
     * EINVAL or EROFS: nothing is lost there. */
    if (fsync(fileno(f)) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
        die("writing %s: %s", path, strerror(errno));
    if (fclose(f) != 0) die("writing %s: %s", path, strerror(errno));
}
