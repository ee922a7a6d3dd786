/* Keeps secrets inside the decoders: credentials in headers, bearer tokens anywhere in a header
 * value or query string, values stored under a secrets key in etcd, and Secret objects. Every
 * string that leaves a decoder and may carry one goes through here. */
#ifndef BINDTRACE_REDACT_H
#define BINDTRACE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#define REDACTED "[redacted]"

/* Header names whose values are credentials (case-insensitive). */
bool redact__header_is_sensitive(const char *name, size_t name_len);

/* Copies a header value into dst (NUL-terminated, cut to cap - 1), replacing it with "[redacted]"
 * when the name is sensitive or the value carries a credential ("Bearer ...", "Basic ..."). */
void redact__header_value(const char *name, size_t name_len, const char *value, size_t value_len,
			  char *dst, size_t cap);

/* Copies a request path, replacing the values of credential query parameters (access_token,
 * token, password...) with "[redacted]". */
void redact__path(const char *path, size_t len, char *dst, size_t cap);

/* True for etcd keys whose values are Secrets (/registry/secrets/..., any prefix). */
bool redact__etcd_key_is_secret(const char *key);

#endif
