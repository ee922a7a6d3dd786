/* Presenting bind timelines: the legs between stages, the human block and the JSON object of
 * one bind, and the percentile summary over many. */
#ifndef BINDTRACE_TIMELINE_H
#define BINDTRACE_TIMELINE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "correlate.h"

enum leg_id {
	LEG_SCHEDULER_TO_APISERVER, /* bind_request -> apiserver_received */
	LEG_APISERVER_TO_ETCD_TXN,  /* apiserver_received -> etcd_txn_sent */
	LEG_TXN_TO_ETCD,	    /* etcd_txn_sent -> etcd_txn_received */
	LEG_ETCD_COMMIT,	    /* etcd_txn_received -> etcd_txn_response */
	LEG_WAL_FSYNC,		    /* the fdatasync itself */
	LEG_ETCD_TO_WATCH,	    /* etcd_txn_response -> etcd_watch_event */
	LEG_APISERVER_RESPOND,	    /* etcd_txn_response -> bind_response */
	LEG_APISERVER_TO_SCHEDULER, /* bind_response -> bind_response_received */
	LEG_TOTAL,		    /* bind_request -> bind_response_received */
	LEG_WATCH_FANOUT,	    /* etcd_watch_event -> watch_event_sent, per watcher */
	LEG_WATCH_DELIVERY,	    /* watch_event_sent -> watch_event_received, per watcher */
	LEG_MAX,
};

const char *leg__name(enum leg_id leg);
const char *leg__description(enum leg_id leg);
/* Duration of a leg of t in ns; false when one of its ends is missing. Per-watcher legs use
 * watcher w (ignored for the others). */
bool leg__duration(const struct bind_timeline *t, enum leg_id leg, int w, int64_t *ns);

/* The human block of one bind. */
void timeline__print(FILE *out, const struct bind_timeline *t, int64_t wall_offset_ns);
/* One JSON object on one line. */
void timeline__print_json(FILE *out, const struct bind_timeline *t, int64_t wall_offset_ns);

struct summary;
struct summary *summary__new(void);
void summary__free(struct summary *s);
void summary__add(struct summary *s, const struct bind_timeline *t);
/* Per leg: count, p50, p90, p99, max; then a log2 histogram of total bind latency. */
void summary__print(FILE *out, const struct summary *s);

#endif
