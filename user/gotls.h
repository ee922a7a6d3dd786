/* Where Go's crypto/tls keeps a connection's TLS 1.3 state, by Go release: the offsets in a
 * tls.Conn of its two halfConns (in: what it reads, out: what it writes), and in a halfConn of
 * the record sequence number and the traffic secret (a []byte kept for the connection's life:
 * a KeyUpdate derives the next one from it). With them, one read of a *tls.Conn gives what
 * user/tls13.c needs to decrypt both directions of that connection from its wire bytes.
 *
 * Release binaries are stripped: no DWARF says where these fields are, so the table is the
 * compiler's layout for each Go minor release as reflect reports it (tlsfix layout, checked for
 * every fixture toolchain by test_gotls). A release not in the table is refused, never guessed:
 * a read at a wrong offset would take other bytes for a secret. What is read at these offsets
 * is still to be checked where it is read (session.c, for BINDTRACE_TLS_KEYS: halfConn.version
 * 0x0304 in both halves, a secret of the suite's hash length). The layout is events.h's struct
 * tls_layout: the BPF program reads at these offsets. */
#ifndef BINDTRACE_GOTLS_H
#define BINDTRACE_GOTLS_H

#include <linux/types.h>

#include "events.h" /* struct tls_layout */

/* The layout of Go major.minor (go1.21 to go1.26): 0, or -ENOTSUP for a release not known. */
int gotls__layout(int major, int minor, struct tls_layout *out);

#endif
