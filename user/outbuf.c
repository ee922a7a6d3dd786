/* One large output buffer written with write(2). See outbuf.h. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outbuf.h"

int outbuf__init(struct outbuf *ob, int fd, size_t flush_at, size_t max_record)
{
	memset(ob, 0, sizeof(*ob));
	ob->fd = fd;
	ob->flush_at = flush_at;
	ob->cap = flush_at + max_record;
	ob->buf = malloc(ob->cap);
	return ob->buf ? 0 : -ENOMEM;
}

/* All of p[0..n) to the descriptor: 0 or -errno. */
static int write_all(int fd, const char *p, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
		} else if (w == 0) {
			return -EIO;
		} else if (errno == EAGAIN) {
			if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
				return -errno;
		} else if (errno != EINTR) {
			return -errno;
		}
	}
	return 0;
}

int outbuf__flush(struct outbuf *ob)
{
	if (ob->len && !ob->err)
		ob->err = write_all(ob->fd, ob->buf, ob->len);
	ob->len = 0;
	return ob->err;
}

char *outbuf__reserve(struct outbuf *ob, size_t n)
{
	char *bigger;

	if (ob->len + n > ob->cap)
		outbuf__flush(ob);
	if (n > ob->cap) {
		bigger = realloc(ob->buf, n);
		if (!bigger) {
			if (!ob->err)
				ob->err = -ENOMEM;
			return NULL;
		}
		ob->buf = bigger;
		ob->cap = n;
	}
	return ob->buf + ob->len;
}

void outbuf__commit(struct outbuf *ob, const char *end)
{
	ob->len = (size_t)(end - ob->buf);
	if (ob->err)
		ob->len = 0;
	else if (ob->len >= ob->flush_at)
		outbuf__flush(ob);
}

void outbuf__append(struct outbuf *ob, const void *p, size_t n)
{
	char *at;

	if (n > ob->cap - ob->len && n >= ob->flush_at) {
		/* larger than what the buffer is for: straight to the descriptor, in order */
		if (!outbuf__flush(ob))
			ob->err = write_all(ob->fd, p, n);
		return;
	}
	at = outbuf__reserve(ob, n);
	if (at) {
		memcpy(at, p, n);
		outbuf__commit(ob, at + n);
	}
}

void outbuf__free(struct outbuf *ob)
{
	free(ob->buf);
	ob->buf = NULL;
	ob->len = ob->cap = 0;
}
