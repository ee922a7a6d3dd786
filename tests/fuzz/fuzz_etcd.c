/* libFuzzer target: etcd request and response messages, values decoded as k8s objects, and the
 * inference of a message's method from its content; an inferred method's message must decode. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "etcd.h"

static void on_event(const struct etcd_watch_response *r, const struct etcd_watch_event *e,
		     void *ctx)
{
	(void)r;
	(void)ctx;
	volatile int x = e->kv.value.kind;
	(void)x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct etcd_txn t;
	static struct etcd_txn_response tr;
	static struct etcd_range_request rr;
	static struct etcd_range_response rs;
	static struct etcd_watch_request wq;
	static struct etcd_watch_response w;

	etcd__decode_txn_request(data, size, &t);
	etcd__decode_txn_response(data, size, &tr);
	etcd__decode_range_request(data, size, &rr);
	etcd__decode_range_response(data, size, &rs);
	etcd__decode_watch_request(data, size, &wq);
	etcd__decode_watch_response(data, size, &w, on_event, NULL);
	switch (etcd__infer_request_method(data, size)) {
	case ETCD_METHOD_TXN:
		if (etcd__decode_txn_request(data, size, &t))
			abort();
		break;
	case ETCD_METHOD_RANGE:
		if (etcd__decode_range_request(data, size, &rr))
			abort();
		break;
	case ETCD_METHOD_WATCH:
		if (etcd__decode_watch_request(data, size, &wq))
			abort();
		break;
	default:
		break;
	}
	switch (etcd__infer_response_method(data, size)) {
	case ETCD_METHOD_TXN:
		if (etcd__decode_txn_response(data, size, &tr))
			abort();
		break;
	case ETCD_METHOD_RANGE:
		if (etcd__decode_range_response(data, size, &rs))
			abort();
		break;
	case ETCD_METHOD_WATCH:
		if (etcd__decode_watch_response(data, size, &w, on_event, NULL))
			abort();
		break;
	default:
		break;
	}
	return 0;
}
