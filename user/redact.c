/* Redaction rules. Conservative: when in doubt, a value is withheld. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "redact.h"

static const char *const sensitive_headers[] = {
	"authorization",
	"proxy-authorization",
	"cookie",
	"set-cookie",
	"x-auth-token",
	"x-api-key",
	"x-remote-extra-token",
	"impersonate-extra-token",
	"www-authenticate",
	"proxy-authenticate",
};

bool redact__header_is_sensitive(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(sensitive_headers) / sizeof(sensitive_headers[0]); i++)
		if (strlen(sensitive_headers[i]) == n &&
		    !strncasecmp(sensitive_headers[i], name, n))
			return true;
	/* Anything that names itself a token, secret or password. */
	char lower[64];
	if (n >= sizeof(lower))
		n = sizeof(lower) - 1;
	for (size_t i = 0; i < n; i++)
		lower[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
	lower[n] = 0;
	return strstr(lower, "token") || strstr(lower, "secret") || strstr(lower, "password") ||
	       strstr(lower, "credential");
}

static bool has_credential(const char *v, size_t n)
{
	static const char *const schemes[] = { "bearer ", "basic ", "digest ", "negotiate " };
	while (n && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t l = strlen(schemes[i]);
		if (n >= l && !strncasecmp(v, schemes[i], l))
			return true;
	}
	/* A JWT: three base64url segments starting with "eyJ". */
	for (size_t i = 0; i + 3 <= n; i++)
		if (!strncmp(v + i, "eyJ", 3) && memchr(v + i, '.', n - i))
			return true;
	return false;
}

static void copy_printable(char *dst, size_t cap, const char *src, size_t n)
{
	if (!cap)
		return;
	if (n > cap - 1)
		n = cap - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];
		dst[i] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	dst[n] = 0;
}

void redact__header_value(const char *name, size_t name_len, const char *value, size_t value_len,
			  char *dst, size_t cap)
{
	if (redact__header_is_sensitive(name, name_len) || has_credential(value, value_len))
		copy_printable(dst, cap, REDACTED, strlen(REDACTED));
	else
		copy_printable(dst, cap, value, value_len);
}

static bool sensitive_param(const char *k, size_t n)
{
	static const char *const params[] = { "access_token",  "token",	   "password",	   "secret",
					      "client_secret", "id_token", "refresh_token" };
	for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
		if (strlen(params[i]) == n && !strncasecmp(params[i], k, n))
			return true;
	return false;
}

void redact__path(const char *path, size_t len, char *dst, size_t cap)
{
	const char *q = memchr(path, '?', len);
	size_t out = 0;

	if (!cap)
		return;
	if (!q) {
		copy_printable(dst, cap, path, len);
		return;
	}
	size_t head = (size_t)(q - path) + 1;
	copy_printable(dst, cap, path, head);
	out = strlen(dst);
	const char *p = q + 1, *end = path + len;
	while (p < end && out + 1 < cap) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(pe - p));
		size_t klen = eq ? (size_t)(eq - p) : (size_t)(pe - p);
		if (eq && sensitive_param(p, klen))
			snprintf(dst + out, cap - out, "%.*s=" REDACTED, (int)klen, p);
		else
			copy_printable(dst + out, cap - out, p, (size_t)(pe - p));
		out = strlen(dst);
		if (amp && out + 1 < cap) {
			dst[out++] = '&';
			dst[out] = 0;
		}
		p = amp ? amp + 1 : end;
	}
}

bool redact__etcd_key_is_secret(const char *key)
{
	return strstr(key, "/secrets/") != NULL;
}
