/* Length-prefixed framing for gRPC and the Kubernetes protobuf watch stream. A message's bytes are
 * copied once into a buffer sized to the message (grown, never per byte) so that decoders see it
 * whole however the transport cut it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grpc.h"
#include "protobuf.h"
#include "util.h"

static void deliver(struct lp_framer *f, const uint8_t *data, uint64_t ts, lp_message_cb cb,
		    void *ctx)
{
	struct lp_message m = {
		.data = data,
		.len = f->msg_len,
		.compressed = f->compressed,
		.ts_first_ns = f->ts_first_ns,
		.ts_last_ns = ts,
	};
	f->messages++;
	f->state = LP_PREFIX;
	f->prefix_got = 0;
	f->got = 0;
	if (cb)
		cb(&m, ctx);
}

int lp_framer__feed(struct lp_framer *f, const uint8_t *buf, size_t len, uint64_t ts,
		    lp_message_cb cb, void *ctx)
{
	if (!f->prefix_len)
		f->prefix_len = 5;
	while (len) {
		switch (f->state) {
		case LP_LOST:
			return 0;
		case LP_PREFIX: {
			if (!f->prefix_got)
				f->ts_first_ns = ts;
			size_t n = f->prefix_len - f->prefix_got;
			if (n > len)
				n = len;
			memcpy(f->prefix + f->prefix_got, buf, n);
			f->prefix_got += (uint8_t)n;
			buf += n;
			len -= n;
			if (f->prefix_got < f->prefix_len)
				break;
			const uint8_t *p = f->prefix;
			if (f->prefix_len == 5) {
				if (p[0] > 1) {
					lp_framer__lose(f);
					return -EBADMSG;
				}
				f->compressed = p[0] == 1;
				p++;
			}
			f->msg_len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
				     (uint32_t)p[2] << 8 | p[3];
			f->got = 0;
			if (f->msg_len > GRPC_MESSAGE_MAX) {
				f->state = LP_SKIP;
				break;
			}
			if (f->msg_len > f->cap) {
				uint32_t cap = f->cap ? f->cap : 256;
				while (cap < f->msg_len)
					cap *= 2;
				uint8_t *nb = realloc(f->buf, cap);
				if (!nb) {
					f->state = LP_SKIP;
					break;
				}
				f->buf = nb;
				f->cap = cap;
			}
			f->state = LP_BODY;
			if (!f->msg_len)
				deliver(f, f->buf, ts, cb, ctx);
			break;
		}
		case LP_BODY:
		case LP_SKIP: {
			size_t n = f->msg_len - f->got;
			if (n > len)
				n = len;
			if (f->state == LP_BODY)
				memcpy(f->buf + f->got, buf, n);
			f->got += (uint32_t)n;
			buf += n;
			len -= n;
			if (f->got == f->msg_len)
				deliver(f, f->state == LP_BODY ? f->buf : NULL, ts, cb, ctx);
			break;
		}
		}
	}
	return 0;
}

void lp_framer__lose(struct lp_framer *f)
{
	f->state = LP_LOST;
	f->prefix_got = 0;
	f->got = 0;
}

void lp_framer__resume(struct lp_framer *f)
{
	f->state = LP_PREFIX;
	f->prefix_got = 0;
	f->got = 0;
}

bool lp_framer__idle(const struct lp_framer *f)
{
	return f->state == LP_PREFIX && !f->prefix_got;
}

void lp_framer__free(struct lp_framer *f)
{
	free(f->buf);
	f->buf = NULL;
	f->cap = 0;
}

bool grpc__is_content_type(const char *ct)
{
	return !strncasecmp(ct, "application/grpc", 16) &&
	       (ct[16] == 0 || ct[16] == '+' || ct[16] == ';');
}

bool grpc__looks_like_message(const uint8_t *buf, size_t len)
{
	if (len < 5 || buf[0] > 1)
		return false;
	uint32_t n =
	    (uint32_t)buf[1] << 24 | (uint32_t)buf[2] << 16 | (uint32_t)buf[3] << 8 | buf[4];
	if (n > GRPC_MESSAGE_MAX)
		return false;
	if (buf[0] == 1)
		return true;
	/* Check the part of the body we have: its first fields must parse. */
	size_t have = len - 5 < n ? len - 5 : n;
	if (have < n) {
		/* A truncated view: only require a sane first tag. */
		if (!have)
			return true;
		uint8_t t = buf[5];
		return (t >> 3) != 0 && (t & 7) != 3 && (t & 7) != 4 && (t & 7) < 6;
	}
	return pb__valid_message(buf + 5, n);
}

void grpc__decode_message(const char *src, char *dst, size_t cap)
{
	size_t o = 0;

	if (!cap)
		return;
	for (size_t i = 0; src[i] && o + 1 < cap; i++) {
		int h, l;
		if (src[i] == '%' && (h = util__hexval(src[i + 1])) >= 0 &&
		    (l = util__hexval(src[i + 2])) >= 0) {
			char c = (char)(h << 4 | l);
			dst[o++] = (c < 0x20 || c == 0x7f) ? '?' : c;
			i += 2;
		} else {
			dst[o++] = src[i];
		}
	}
	dst[o] = 0;
}
