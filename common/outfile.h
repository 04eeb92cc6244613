/* outfile.h: the end of every write of a file the user asked for.
 *
 * fprintf and fwrite report a full disk, a quota or an I/O error late: the
 * data sits in the stream's buffer until a flush, and a failed flush only
 * sets the stream's error flag. So a program checks each of its output
 * files once, where the data is meant to be on disk: out_flush after rows
 * that must survive a crash (a trainer's CSV, one row per step), out_close at
 * the end. Either dies on any earlier or present failure with one line
 * naming the file ("error (rank R): writing PATH: No space left on device"),
 * which ends every rank of the job. */
#ifndef OUTFILE_H
#define OUTFILE_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flush f; die naming path if this or any earlier write to f failed. */
void out_flush(FILE *f, const char *path);
/* Flush, fsync (the data on the disk, not only in the page cache) and close
 * f; die naming path if any write to f failed. */
void out_close(FILE *f, const char *path);

#ifdef __cplusplus
}
#endif
#endif
