/* A decoded message as one JSON object, the same wherever messages are written (the evidence's
 * messages.jsonl, `bindtrace decode --json`): kind, protocol, direction, stream, first and last
 * byte times, HTTP request and response fields, gRPC status, flags (unreliable, incomplete,
 * streaming) and the decoded body (Binding, Pod, Status, watch event, etcd Txn, TxnResponse,
 * Range, Watch...). Values are the decoders' own, redactions included: nothing secret is
 * decoded, so nothing secret is written. The caller owns the object (json_decref). */
#ifndef BINDTRACE_MESSAGE_JSON_H
#define BINDTRACE_MESSAGE_JSON_H

#include <jansson.h>

#include "decode.h"

json_t *message_json__new(const struct decoded_msg *msg);
/* Just the decoded body (NULL when the message has none). */
json_t *message_json__body(const struct decoded_msg *msg);

#endif
