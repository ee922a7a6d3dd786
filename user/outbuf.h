/* An output stream that is one large buffer of our own, written to a file descriptor with
 * write(2) in large pieces. For output that goes out at tens of MB a second (`capture --json`):
 * records are built in place in the buffer (no formatting calls, no copy into stdio's buffer)
 * and reach the file in writes of about flush_at bytes, not stdio's 4 KiB (glibc's setvbuf
 * ignores the size it is given without a buffer), each of which costs a syscall and the
 * syscall tracepoints of every tracer on the machine.
 *
 * Use: p = outbuf__reserve(ob, most); write at most `most` bytes from p; outbuf__commit(ob, end).
 * A commit that brings the buffer to flush_at or more writes it out; outbuf__flush() writes out
 * whatever is there (call it whenever the output must be seen, e.g. after each read of the ring
 * buffer). Nothing is allocated after init except when a reservation exceeds the capacity.
 *
 * Errors: the first failed write (or allocation) is kept as ob->err (-errno) and returned by
 * outbuf__flush(); from then on what is committed is dropped, and reserve still returns room (the
 * caller stops when it sees the error) unless even that cannot be had (NULL). A write(2) that
 * would block (a non-blocking pipe) waits for the descriptor with poll(). */
#ifndef BINDTRACE_OUTBUF_H
#define BINDTRACE_OUTBUF_H

#include <stddef.h>

struct outbuf {
	int fd;
	char *buf;
	size_t len;	 /* bytes committed and not yet written */
	size_t cap;	 /* bytes buf holds */
	size_t flush_at; /* a commit that reaches this many bytes writes them */
	int err;	 /* 0, or the first error (-errno) */
};

/* Writes to fd (not owned: never closed here); room for flush_at + max_record bytes.
 * 0 or -ENOMEM. */
int outbuf__init(struct outbuf *ob, int fd, size_t flush_at, size_t max_record);
/* Room for n bytes at the end of what is committed; NULL only when it cannot be allocated. */
char *outbuf__reserve(struct outbuf *ob, size_t n);
/* The bytes from the last reservation up to end are part of the output. */
void outbuf__commit(struct outbuf *ob, const char *end);
/* n bytes from p, through the buffer. */
void outbuf__append(struct outbuf *ob, const void *p, size_t n);
/* Write out everything committed: 0, or ob->err. */
int outbuf__flush(struct outbuf *ob);
/* Free the buffer (what was not flushed is dropped). */
void outbuf__free(struct outbuf *ob);

#endif
