/* Length-prefixed message framing over a byte stream cut at arbitrary places: gRPC's 5-byte
 * prefix (compressed flag + big-endian length) and the 4-byte big-endian length the Kubernetes
 * protobuf watch stream uses. Feed it DATA payloads (or HTTP/1.1 body bytes) as they come; it
 * hands back each whole message with the time of the chunks that carried its first and last byte. */
#ifndef BINDTRACE_GRPC_H
#define BINDTRACE_GRPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Messages above this are skipped (reported with a NULL buffer and their length). */
#define GRPC_MESSAGE_MAX (4u << 20)

enum lp_framer_state {
	LP_PREFIX = 0, /* reading the prefix */
	LP_BODY,       /* reading a message we keep */
	LP_SKIP,       /* skipping a message too large to keep */
	LP_LOST,       /* lost the boundaries: the owner decides how to find the next message */
};

struct lp_message {
	const uint8_t *data; /* NULL when skipped for size */
	size_t len;
	bool compressed;
	uint64_t ts_first_ns;
	uint64_t ts_last_ns;
};

typedef void (*lp_message_cb)(const struct lp_message *msg, void *ctx);

/* Zero-initialise, set prefix_len (5 for gRPC, 4 for k8s watch), free with lp_framer__free(). */
struct lp_framer {
	enum lp_framer_state state;
	uint8_t prefix_len;
	uint8_t prefix[5];
	uint8_t prefix_got;
	bool compressed;
	uint32_t msg_len;
	uint32_t got;
	uint64_t ts_first_ns;
	uint8_t *buf;
	uint32_t cap;
	uint64_t messages;
};

/* Returns 0, or -EBADMSG when a prefix is impossible (bad flag); the framer is then LP_LOST. */
int lp_framer__feed(struct lp_framer *f, const uint8_t *buf, size_t len, uint64_t ts_ns,
		    lp_message_cb cb, void *ctx);
/* Bytes were lost: drop the partial message; state becomes LP_LOST. */
void lp_framer__lose(struct lp_framer *f);
/* Resume at a message boundary the owner found. */
void lp_framer__resume(struct lp_framer *f);
bool lp_framer__idle(const struct lp_framer *f);
void lp_framer__free(struct lp_framer *f);

/* Is this a gRPC content type (application/grpc, application/grpc+proto...)? */
bool grpc__is_content_type(const char *content_type);
/* Does buf start like a gRPC message prefix whose body is a plausible protobuf message? */
bool grpc__looks_like_message(const uint8_t *buf, size_t len);
/* Percent-decodes a grpc-message trailer value into dst. */
void grpc__decode_message(const char *src, char *dst, size_t cap);

#endif
