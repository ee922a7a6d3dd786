/* goelf: what bindtrace can know about a Go executable that has no symbols and no DWARF, read
 * with libelf from the two tables that survive `-s -w`: .go.buildinfo (Go version, modules,
 * build settings) and the pclntab (every function's entry, name, and PC -> file:line).
 *
 * go_binary__open() succeeds only when the text base (runtime.text, which function entries are
 * relative to) has been established AND validated, so a caller that got a struct go_binary may
 * place probes at what it returns. Addresses are link-time virtual addresses ("vaddr"); uprobes
 * take file offsets (go_binary__file_offset); runtime PCs of a PIE differ by the load bias. */
#ifndef BINDTRACE_GOELF_H
#define BINDTRACE_GOELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct go_binary;

struct go_module {
	const char *path;
	const char *version;		 /* "(devel)" for the main module of a local build */
	const char *sum;		 /* "" when none */
	const struct go_module *replace; /* the "=>" line that replaces it, or NULL */
};

struct go_build_setting {
	const char *key;   /* "-ldflags", "CGO_ENABLED", "vcs.revision", ... (unquoted) */
	const char *value; /* unquoted: -ldflags="-s -w" gives "-s -w" */
};

struct go_buildinfo {
	const char *go_version;		  /* as recorded: "go1.26.8", "go1.24.4 X:boringcrypto" */
	int go_major, go_minor, go_patch; /* 1, 26, 8; -1 when the version is not go1.N[.P] */
	const char *path;		  /* main package path, "" when absent */
	const struct go_module *main;	  /* NULL when absent */
	const struct go_module *deps;
	size_t n_deps;
	const struct go_build_setting *settings;
	size_t n_settings;
};

enum go_text_base_source {
	GO_TEXT_BASE_PCHEADER,	 /* pcHeader.textStart (Go 1.18 to 1.25) */
	GO_TEXT_BASE_MODULEDATA, /* runtime.moduledata.text (Go 1.26: textStart is zero) */
};

/* Where the pclntab and the text base came from, for `inspect` and for error messages. */
struct go_text_info {
	uint64_t text_base; /* runtime.text */
	enum go_text_base_source source;
	const char *how;	/* one line: source, relocation, cross-checks */
	const char *validation; /* one line: what was checked, e.g. runtime.main's prologue */
	uint64_t pclntab_vaddr;
	const char *pclntab_where; /* ".gopclntab section", "found by magic in .data.rel.ro" */
	uint32_t pclntab_magic;
	uint64_t n_funcs, n_files;
	uint64_t moduledata_vaddr;   /* 0 when not found */
	uint64_t text_section_vaddr; /* .text's address (0 if none): differs for cgo binaries */
	uint64_t exec_vaddr, exec_offset, exec_filesz; /* the executable PT_LOAD */
	bool pie;	/* ET_DYN: runtime address = vaddr + load bias */
	bool relocated; /* a pointer read had to go through a dynamic relocation */
};

/* Open and validate a Go ELF executable (x86-64, Go 1.18 or newer). Returns NULL with errno set
 * and a one-line reason in why (e.g. "Go 1.16 binary: bindtrace needs Go 1.18 or newer",
 * "not a Go binary: no .go.buildinfo and no Go pclntab") when anything cannot be established.
 * Go 1.17 binaries are refused: their pclntab layout (magic 0xfffffffa) is not read. */
struct go_binary *go_binary__open(const char *path, char *why, size_t why_len);
/* The same, with the functions of these names (NULL entries skipped; at most 31) looked up in
 * the pass over the pclntab that opening makes anyway, as go_binary__find_funcs would: a caller
 * that knows what it will ask for (a tracer placing its probes) reads the table once. */
struct go_binary *go_binary__open_find(const char *path, const char *const *names, size_t n,
				       char *why, size_t why_len);
/* The same on an ELF image in memory (copied: the caller keeps data): for tests and fuzzing. */
struct go_binary *go_binary__open_mem(const void *data, size_t size, char *why, size_t why_len);
/* Another owner of gb (processes running one executable share it): gb is freed by the
 * go_binary__close that drops the last. Returns gb. */
struct go_binary *go_binary__ref(struct go_binary *gb);
void go_binary__close(struct go_binary *gb);

const struct go_buildinfo *go_binary__buildinfo(const struct go_binary *gb);
const struct go_text_info *go_binary__text_info(const struct go_binary *gb);
/* Why the last failing call on gb failed (one line, never NULL). */
const char *go_binary__last_error(const struct go_binary *gb);

/* Entry and end (the next function's entry, INT3 padding included) of the function with exactly
 * this name, e.g. "crypto/tls.(*Conn).Write". 0, or -ENOENT. */
int go_binary__func(struct go_binary *gb, const char *name, uint64_t *entry, uint64_t *end);

/* Looks up n function names in one pass over the pclntab (a pass reads a few bytes of every
 * function: 116,000 in a kube-apiserver) and remembers each answer, found or not, so that the
 * calls taking a name (go_binary__func, ret_sites, check_probe, func_args) answer them without
 * another pass. Every lookup by name is remembered anyway (up to 32 names per binary); this
 * only saves passes when a caller knows several names it will ask for. */
void go_binary__find_funcs(struct go_binary *gb, const char *const *names, size_t n);

/* Every RET instruction of a function, decoded with Capstone from entry to end. Returns the number
 * of RETs (written to out), or: -ENOENT no such function; -ENOSPC more RETs than cap (call with
 * cap 0 to count); -EILSEQ undecodable bytes; -EXDEV the function also leaves by a jump out of
 * itself (a tail call), which RET probes would miss. Attach nothing on error. */
int go_binary__ret_sites(struct go_binary *gb, const char *name, uint64_t *out, size_t cap);

/* 0 if vaddr is an instruction boundary inside the function of this name (a probe may go there),
 * else -ENOENT (no function), -ERANGE (outside it) or -EILSEQ (mid-instruction). */
int go_binary__check_probe(struct go_binary *gb, const char *name, uint64_t vaddr);

/* File offset of vaddr through the executable PT_LOAD (what uprobes take), or -ERANGE. */
int64_t go_binary__file_offset(struct go_binary *gb, uint64_t vaddr);

/* Copy up to len bytes of the executable segment from vaddr (a prologue to decode): the number
 * copied (fewer at the segment's end), or -ERANGE when vaddr is outside it. */
ssize_t go_binary__read_text(struct go_binary *gb, uint64_t vaddr, void *buf, size_t len);

/* Bytes of arguments and results the function of this name takes on the stack frame's
 * argument area (_func.args): for a function without arguments, the size of its results.
 * 0, or -ENOENT. */
int go_binary__func_args(struct go_binary *gb, const char *name, int32_t *args);

/* How far SP is below its value at function entry (return address not counted) while the
 * instruction at vaddr runs, from the function's pcsp table: 0, or -ENOENT (in no function,
 * or no table entry). */
int go_binary__sp_delta(struct go_binary *gb, uint64_t vaddr, int32_t *delta);

/* Copy len bytes of file content at vaddr, from any loaded segment (rodata, data): 0, or
 * -ERANGE when they are not all in the file. */
int go_binary__read_data(struct go_binary *gb, uint64_t vaddr, void *buf, size_t len);

/* The value a Go string variable has before the program runs: its header {ptr, len} at vaddr,
 * which must lie in a writable segment (a variable, not a constant), read as the loader leaves
 * it (through a relocation in PIE; zero in .bss), and its bytes. Writes them NUL-terminated to
 * buf and returns the length, or: -EFAULT (vaddr is not a variable's header in a writable
 * segment), -E2BIG (longer than cap - 1), -ERANGE (the bytes are not in the file). */
int go_binary__read_string_var(struct go_binary *gb, uint64_t vaddr, char *buf, size_t cap);

/* Drop the file pages read so far from this process's memory (they stay in the page cache): gb
 * stays valid, and later calls fault back in only the pages they read. For a gb kept open after
 * its probes are placed, which opening and validating (every pclntab entry) would otherwise keep
 * resident. No effect on an image from go_binary__open_mem. */
void go_binary__release(struct go_binary *gb);

/* Load bias of a running process's image, from any of its mappings of this file as listed in
 * /proc/PID/maps (start address and file offset): runtime address = vaddr + bias. 0 for
 * non-PIE executables mapped where they were linked. */
uint64_t go_binary__load_bias(const struct go_binary *gb, uint64_t map_start, uint64_t map_offset);

/* Symbolise a runtime PC: the function containing pc - load_bias, its source file and line.
 * For return addresses from a stack, pass pc - 1 to get the call's line. Strings live as long as
 * gb. 0, or -ENOENT when the PC is in no Go function. */
int go_binary__pc_to_line(struct go_binary *gb, uint64_t pc, uint64_t load_bias, const char **func,
			  const char **file, int *line);

/* Pieces exposed for unit tests: decode a pcvalue table (varint deltas) of a function at entry;
 * 0 with *value set, -ENOENT when pc is past the table, -EINVAL when the table is malformed. */
int go_pcvalue__lookup(const uint8_t *table, size_t len, uint64_t entry, uint64_t pc,
		       unsigned int min_lc, int32_t *value);
/* Parse "go1.21.13" style versions; -1s when not of that form. */
void go_version__parse(const char *version, int *major, int *minor, int *patch);

#endif
