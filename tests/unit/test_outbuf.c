/* outbuf: what is committed reaches the descriptor whole and in order: once flush_at is reached,
 * on flush, through a reservation larger than the buffer and an append larger than flush_at; a
 * failed write is kept, returned by flush, and what follows is dropped without a crash; a
 * non-blocking pipe that fills up is waited for. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "outbuf.h"

/* A file of its own to write to: its fd (unlinked already). */
static int temp_file(void)
{
	char path[] = "/tmp/bindtrace-outbuf.XXXXXX";
	int fd = mkstemp(path);

	if (fd >= 0)
		unlink(path);
	return fd;
}

static size_t file_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? (size_t)st.st_size : (size_t)-1;
}

static void put(struct outbuf *ob, const char *s)
{
	size_t n = strlen(s);
	char *at = outbuf__reserve(ob, n);

	memcpy(at, s, n);
	outbuf__commit(ob, at + n);
}

static void check_order_and_thresholds(void)
{
	struct outbuf ob;
	int fd = temp_file();
	char *big, back[64];
	size_t i;

	CHECK(fd >= 0 && outbuf__init(&ob, fd, 16, 8) == 0, "init");
	put(&ob, "0123456789");
	CHECK_INT(file_size(fd), 0); /* under flush_at: kept */
	put(&ob, "abcdef");
	CHECK_INT(file_size(fd), 16); /* reached it: written */
	put(&ob, "xyz");
	CHECK_INT(outbuf__flush(&ob), 0);
	CHECK_INT(file_size(fd), 19);
	CHECK_INT(outbuf__flush(&ob), 0); /* nothing more to write */
	CHECK_INT(file_size(fd), 19);

	/* a reservation larger than the whole buffer grows it; what came before stays first */
	put(&ob, "<");
	big = outbuf__reserve(&ob, 1000);
	CHECK(big != NULL, "reserve 1000");
	memset(big, 'B', 1000);
	outbuf__commit(&ob, big + 1000);
	CHECK_INT(file_size(fd), 19 + 1 + 1000);

	/* an append larger than flush_at, after a few bytes still in the buffer */
	put(&ob, ">");
	big = malloc(5000);
	for (i = 0; i < 5000; i++)
		big[i] = (char)('a' + i % 26);
	outbuf__append(&ob, big, 5000);
	outbuf__append(&ob, "!", 1);
	CHECK_INT(outbuf__flush(&ob), 0);
	CHECK_INT(file_size(fd), 19 + 1 + 1000 + 1 + 5000 + 1);
	CHECK(pread(fd, back, 21, 0) == 21 && memcmp(back, "0123456789abcdefxyz<B", 21) == 0,
	      "start %.21s", back);
	CHECK(pread(fd, back, 4, 19 + 1 + 1000) == 4 && memcmp(back, ">abc", 4) == 0, "middle %.4s",
	      back);
	CHECK(pread(fd, back, 2, 19 + 1 + 1000 + 1 + 4999) == 2 &&
		  memcmp(back, "h!", 2) == 0, /* 4999 % 26 */
	      "end %.2s", back);
	free(big);
	outbuf__free(&ob);
	close(fd);
}

/* A pipe whose reader is gone: EPIPE is kept and returned, later output is dropped. */
static void check_write_error(void)
{
	struct outbuf ob;
	int p[2];

	signal(SIGPIPE, SIG_IGN);
	CHECK(pipe(p) == 0, "pipe");
	close(p[0]);
	CHECK_INT(outbuf__init(&ob, p[1], 1024, 64), 0);
	put(&ob, "lost");
	CHECK_INT(outbuf__flush(&ob), -EPIPE);
	put(&ob, "dropped too");
	CHECK_INT(ob.len, 0);
	outbuf__append(&ob, "and this", 8);
	CHECK_INT(outbuf__flush(&ob), -EPIPE);
	outbuf__free(&ob);
	close(p[1]);
}

/* A non-blocking pipe that fills up: the writer waits for the reader, nothing is lost. */
static void check_nonblocking(void)
{
	struct outbuf ob;
	size_t total = 1 << 20, got = 0, i;
	char *data = malloc(total), buf[65536];
	int p[2], bad = 0;
	pid_t child;
	int status = 0;

	CHECK(pipe(p) == 0 && fcntl(p[1], F_SETFL, O_NONBLOCK) == 0, "pipe");
	child = fork();
	if (child == 0) {
		close(p[1]);
		usleep(100000); /* let the pipe fill */
		for (;;) {
			ssize_t n = read(p[0], buf, sizeof(buf));

			if (n <= 0)
				break;
			for (i = 0; i < (size_t)n; i++)
				bad += buf[i] != (char)((got + i) * 13);
			got += (size_t)n;
		}
		_exit(got == total && !bad ? 0 : 1);
	}
	close(p[0]);
	for (i = 0; i < total; i++)
		data[i] = (char)(i * 13);
	CHECK_INT(outbuf__init(&ob, p[1], 256 << 10, 1024), 0);
	outbuf__append(&ob, data, total);
	CHECK_INT(outbuf__flush(&ob), 0);
	close(p[1]);
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "the reader got every byte in order (status %d)", status);
	outbuf__free(&ob);
	free(data);
}

int main(void)
{
	check_order_and_thresholds();
	check_write_error();
	check_nonblocking();
	return check_summary("outbuf");
}
