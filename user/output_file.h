/* How every output creates its files and directories. They describe control-plane traffic, so
 * files are 0600 and directories 0700 (set explicitly: an existing file truncated for rewriting
 * is made 0600 too), and none is opened through a symlink at its last component. Callers say
 * what failed in their own words; these return -errno (or NULL with errno) and print nothing. */
#ifndef BINDTRACE_OUTPUT_FILE_H
#define BINDTRACE_OUTPUT_FILE_H

#include <stdbool.h>
#include <stdio.h>

/* Create path for writing: exclusive refuses an existing file (-EEXIST), otherwise it is
 * truncated. fd, or -errno. */
int output_file__create(const char *path, bool exclusive);
/* The same for name in the directory dir_fd. */
int output_file__create_at(int dir_fd, const char *name, bool exclusive);
/* The same as a stdio stream; NULL with errno. */
FILE *output_file__open(const char *path, bool exclusive);
FILE *output_file__open_at(int dir_fd, const char *name, bool exclusive);
/* Open path for appending (created 0600 when missing), as a log that logrotate moves away: NULL
 * with errno. */
FILE *output_file__open_append(const char *path);
/* fclose, saying whether everything written reached the file: 0 or -EIO. */
int output_file__close(FILE *f);
/* Could path be created or rewritten? Asked without truncating an existing file or leaving a
 * new one behind: 0 or -errno. */
int output_file__check_writable(const char *path);

/* Write path through path.tmp.PID, renamed over it when write(f, ctx) returned 0 and everything
 * reached the file: readers see the old file or the whole new one, never a part. 0, or what
 * write returned, or -errno. */
typedef int (*output_writer_fn)(FILE *f, void *ctx);
int output_file__replace(const char *path, output_writer_fn write, void *ctx);

/* Create directory path (0700) unless it exists, and open it: its fd, or -errno. */
int output_dir__create(const char *path);
/* Create directory name (0700) in dir_fd and open it: its fd, or -errno (-EEXIST when it is
 * there already: the caller picks another name). */
int output_dir__create_at(int dir_fd, const char *name);

#endif
