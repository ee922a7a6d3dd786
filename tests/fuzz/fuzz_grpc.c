/* libFuzzer target: gRPC and watch framing in pieces, each message through the protobuf walker
 * and every etcd decoder. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "etcd.h"
#include "grpc.h"
#include "protobuf.h"

static void on_event(const struct etcd_watch_response *r, const struct etcd_watch_event *e,
		     void *ctx)
{
	(void)r, (void)e, (void)ctx;
}

static void on_msg(const struct lp_message *m, void *ctx)
{
	static struct etcd_txn t;
	static struct etcd_txn_response tr;
	static struct etcd_range_request rr;
	static struct etcd_range_response rs;
	static struct etcd_watch_request wq;
	static struct etcd_watch_response w;

	(void)ctx;
	if (!m->data)
		return;
	pb__valid_message(m->data, m->len);
	etcd__decode_txn_request(m->data, m->len, &t);
	etcd__decode_txn_response(m->data, m->len, &tr);
	etcd__decode_range_request(m->data, m->len, &rr);
	etcd__decode_range_response(m->data, m->len, &rs);
	etcd__decode_watch_request(m->data, m->len, &wq);
	etcd__decode_watch_response(m->data, m->len, &w, on_event, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct lp_framer f = { 0 };

	if (size < 1)
		return 0;
	f.prefix_len = (data[0] & 1) ? 4 : 5;
	size_t piece = (data[0] >> 1) ? (data[0] >> 1) : size;
	grpc__looks_like_message(data + 1, size - 1);
	for (size_t o = 1; o < size; o += piece) {
		size_t n = size - o < piece ? size - o : piece;
		if (lp_framer__feed(&f, data + o, n, o, on_msg, NULL))
			lp_framer__resume(&f);
	}
	lp_framer__free(&f);
	return 0;
}
