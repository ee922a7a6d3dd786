/* A traced process's socket as the capture programs keep it (the conns map): shared with user
 * space, which reads the flags (targets__wire_tick: are all of a process's connections keyed?). */
#ifndef BINDTRACE_CONNS_H
#define BINDTRACE_CONNS_H

struct conn_key {
	__u32 tgid;
	__u32 pad;
	__u64 ino;
};

#define CONN_TLS 1
#define CONN_KEYED 2	   /* its TLS 1.3 state was read (harvest_keys) */
#define CONN_KEY_RETRIED 4 /* read again once, not keyed the first time */

struct conn_state {
	__u64 offset[2];      /* per enum data_dir */
	__u64 last_write_sig; /* of the last TLS Write, with the socket's write_seq */
	__u64 sk;	      /* the struct sock, for its TCP sequence numbers */
	__u64 wire_offset;    /* of the next SOURCE_TLS_WIRE byte (copy_tls_wire) */
	__u32 flags;
	__u16 family;
	__u16 lport;
	__u16 rport;
	__u16 pad;
	__u32 wire_inflight; /* bytes the write(2) under way copied (copy_tls_wire), 0 if none */
	__u8 laddr[16];
	__u8 raddr[16];
};

#endif
