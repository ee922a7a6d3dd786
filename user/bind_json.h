/* A finished bind as one JSON object: the schema the README documents (schema_version, seq, pod,
 * node, result, status, revision, stages, watchers, legs_ns, etcd_txn_attempts, citation,
 * missing_stages, gap, drops, started_midway), built from the bind view so its legs are the
 * view's. It is what `--json` prints, one per line, and the evidence's bind.json: one definition
 * for both. BIND_JSON_SCHEMA_VERSION goes up when a key changes meaning or goes away (added keys
 * leave it). */
#ifndef BINDTRACE_BIND_JSON_H
#define BINDTRACE_BIND_JSON_H

#include <stdio.h>

#include "bindview.h"

#define BIND_JSON_SCHEMA_VERSION 1

/* The object on one line of out, written in one piece (nothing when it fails). 0, or -ENOMEM /
 * -EIO. */
int bind_json__print(FILE *out, const struct bind_view *view);

#endif
