/* `capture --json`'s records, written by hand: one line per data event or gap, byte for byte what
 * jansson's compact dump of the same object prints (keys in the same order, strings escaped the
 * same way: tests/unit/test_capture_json.c compares the two), without building, dumping and
 * freeing an object per record. A bulk capture writes tens of MB a second of these; jansson's
 * object, its copy and UTF-8 check of the base64 text and its escaping pass over it cost more
 * than the base64 itself.
 *
 * The writers put one whole line (ending in '\n') at out, which has room for
 * capture_json__data_size(e->len) or CAPTURE_JSON_GAP_SIZE bytes, and return the end of what they
 * wrote; they allocate nothing and print nothing. Strings that may need escaping (the comm) come
 * already quoted from capture_json__quote(); laddr and raddr are endpoint__format() text
 * (digits, hex, '.', ':', '[', ']'), which JSON takes as it is. */
#ifndef BINDTRACE_CAPTURE_JSON_H
#define BINDTRACE_CAPTURE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "events.h"

/* A quoted comm: 16 bytes, each at most 6 escaped ("\u001f"), the quotes and a NUL. */
#define CAPTURE_JSON_QUOTED_COMM (TASK_COMM_LEN * 6 + 3)
#define CAPTURE_JSON_GAP_SIZE 256

/* s as a JSON string with its quotes, as jansson dumps util__json_string(s) (bytes that are
 * not UTF-8 become '?'), into out (size bytes, CAPTURE_JSON_QUOTED_COMM for a comm). 0, or
 * -ENOSPC / -ENOMEM, and out is then "\"?\"". */
int capture_json__quote(const char *s, char *out, size_t size);

/* Bytes a data line of len payload bytes may take, with a quoted comm and endpoints of at most
 * CAPTURE_JSON_QUOTED_COMM and ENDPOINT_STRLEN bytes. */
size_t capture_json__data_size(size_t len);

/* {"ts_ns":..,"wall_ns":..,"pid":..,"tid":..,"comm":..,"conn":..,"fd":..,"laddr":..,"raddr":..,
 *  "dir":..,"source":..,"offset":..,"len":..,"data":"<base64>"}\n */
char *capture_json__data(char *out, const struct data_event *e, int64_t wall_offset_ns,
			 const char *comm_quoted, const char *laddr, const char *raddr);

/* {"gap":missed,"ts_ns":..,"pid":..,"conn":..,"dir":..,"offset":..}\n: missed bytes lost on
 * e's stream just before e->offset. */
char *capture_json__gap(char *out, const struct data_event *e, uint64_t missed);

#endif
