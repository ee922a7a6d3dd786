/* goelf and x86ret: table-driven checks of the pieces (pcvalue tables, version strings, x86
 * decoding of RET sites and Go's stack-check prologue), then the API on every Go fixture build
 * (directory in argv[1] or $BINDTRACE_GOFIXTURES) and the refusal of truncated, corrupted,
 * non-Go, too-old and missing files, under ASan/UBSan. Given no fixture directory it exits 77, a
 * skip, not a pass; given one that is not there, it fails. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "goelf.h"
#include "x86ret.h"

static void test_version_parse(void)
{
	static const struct {
		const char *in;
		int major, minor, patch;
	} cases[] = {
		{ "go1.21.13", 1, 21, 13 },
		{ "go1.26.8", 1, 26, 8 },
		{ "go1.22", 1, 22, 0 },
		{ "go1.23rc2", 1, 23, 0 },
		{ "go1.24.4 X:boringcrypto", 1, 24, 4 },
		{ "go1.16.15", 1, 16, 15 },
		{ "devel go1.25-abcdef", -1, -1, -1 },
		{ "", -1, -1, -1 },
		{ "gox", -1, -1, -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ma, mi, pa;

		go_version__parse(cases[i].in, &ma, &mi, &pa);
		CHECK(ma == cases[i].major && mi == cases[i].minor && pa == cases[i].patch,
		      "%s: got %d.%d.%d", cases[i].in, ma, mi, pa);
	}
}

/* pcvalue tables as the Go linker writes them: (zigzag value delta, pc delta / minLC) varint
 * pairs, ended by a zero value delta after the first pair. */
static void test_pcvalue(void)
{
	/* value -1 +11 = 10 for pc [0x100,0x110); +2 = 12 for [0x110,0x130); -3 = 9 until 0x1b0 */
	static const uint8_t table[] = { 22, 0x10, 4, 0x20, 5, 0x80, 0x01, 0 };
	static const struct {
		uint64_t pc;
		int err;
		int32_t value;
	} cases[] = {
		{ 0x100, 0, 10 }, { 0x10f, 0, 10 }, { 0x110, 0, 12 },	   { 0x12f, 0, 12 },
		{ 0x130, 0, 9 },  { 0x1af, 0, 9 },  { 0x1b0, -ENOENT, 0 }, { 0xff, -ENOENT, 0 },
	};
	int32_t v;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = go_pcvalue__lookup(table, sizeof(table), 0x100, cases[i].pc, 1, &v);

		CHECK_INT(err, cases[i].err);
		if (!err && !cases[i].err)
			CHECK(v == cases[i].value, "pc 0x%lx: got %d want %d",
			      (unsigned long)cases[i].pc, v, cases[i].value);
	}
	/* Truncated in the middle of a varint, and a varint longer than 64 bits: errors, no read
	 * past the end (ASan watches). */
	static const uint8_t cut[] = { 22, 0x10, 4, 0x80 };
	static const uint8_t endless[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 0xff };

	CHECK_INT(go_pcvalue__lookup(cut, sizeof(cut), 0x100, 0x1000, 1, &v), -EINVAL);
	CHECK_INT(go_pcvalue__lookup(endless, sizeof(endless), 0, 5, 1, &v), -EINVAL);
	CHECK_INT(go_pcvalue__lookup(table, 0, 0, 5, 1, &v), -EINVAL);
	/* minLC scales pc deltas */
	CHECK_INT(go_pcvalue__lookup(table, sizeof(table), 0, 0x3f, 4, &v), 0);
	CHECK_INT(v, 10);
}

static void test_x86(void)
{
	/* mov eax, 0xc3c3c3c3; ret; int3: the 0xC3 bytes of the immediate are not RETs. */
	static const uint8_t imm[] = { 0xb8, 0xc3, 0xc3, 0xc3, 0xc3, 0xc3, 0xcc };
	/* cmp rsp, [r14+0x10]; jbe +0; ret; jmp -> outside (tail call); ret 8 */
	static const uint8_t go[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x00, 0xc3, 0xe9,
				      0x00, 0x10, 0x00, 0x00, 0xc2, 0x08, 0x00 };
	/* lea r12, [rsp-0x18]; cmp r12, [r14+0x10] */
	static const uint8_t big[] = { 0x4c, 0x8d, 0x64, 0x24, 0xe8, 0x4d, 0x3b, 0x66, 0x10 };
	/* push rbp; mov rbp, rsp: a C prologue */
	static const uint8_t c[] = { 0x55, 0x48, 0x89, 0xe5, 0xc3 };
	static const uint8_t bad[] = { 0x90, 0x0f, 0x0b, 0x06 }; /* nop; ud2; (invalid in 64-bit) */
	struct x86ret_scan scan;
	uint64_t rets[4];
	char text[256];

	CHECK_INT(x86ret__scan(imm, sizeof(imm), 0x1000, rets, 4, &scan), 0);
	CHECK_INT(scan.n_rets, 1);
	CHECK_INT(rets[0], 0x1005);
	CHECK_INT(scan.n_insns, 3);

	CHECK_INT(x86ret__scan(go, sizeof(go), 0x2000, rets, 4, &scan), 0);
	CHECK_INT(scan.n_rets, 2);
	CHECK_INT(rets[0], 0x2006);
	CHECK_INT(rets[1], 0x200c);
	CHECK_INT(scan.n_exits, 1);
	CHECK_INT(scan.first_exit, 0x2007);
	CHECK_INT(x86ret__scan(go, sizeof(go), 0x2000, rets, 1, &scan), -ENOSPC);
	CHECK_INT(scan.n_rets, 2);

	CHECK(x86ret__is_boundary(go, sizeof(go), 0x2000, 0x2004), "jbe starts at +4");
	CHECK(!x86ret__is_boundary(go, sizeof(go), 0x2000, 0x2003), "+3 is mid cmp");
	CHECK(!x86ret__is_boundary(go, sizeof(go), 0x2000, 0x2000 + sizeof(go)), "end is outside");
	CHECK(!x86ret__is_boundary(imm, sizeof(imm), 0x1000, 0x1002), "mid-immediate 0xC3");

	CHECK(x86ret__go_stack_check(go, sizeof(go), 0x2000, text, sizeof(text)), "%s", text);
	CHECK(x86ret__go_stack_check(big, sizeof(big), 0x2000, text, sizeof(text)), "%s", text);
	CHECK(strstr(text, "r14") != NULL, "text: %s", text);
	CHECK(!x86ret__go_stack_check(c, sizeof(c), 0x2000, text, sizeof(text)), "%s", text);
	CHECK(!x86ret__go_stack_check(go + 1, sizeof(go) - 1, 0x2001, text, sizeof(text)),
	      "off by one: %s", text);

	CHECK_INT(x86ret__scan(bad, sizeof(bad), 0x3000, rets, 4, &scan), -EILSEQ);
	CHECK_INT(scan.bad_insn, 0x3003);
	CHECK_INT(x86ret__format(imm, sizeof(imm), 0x1000, text, sizeof(text)), 5);
	CHECK(strstr(text, "mov") != NULL, "format: %s", text);
}

static void test_spill_slots(void)
{
	/* cmp rsp, [r14+0x10]; jbe; push rbp; mov rbp, rsp; sub rsp, 0x40;
	 * mov [rsp+0x50], rax; mov [rsp+0x58], rbx; mov [rsp+0x60], rcx: (*Conn).Read's shape. */
	static const uint8_t read[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x55, 0x48, 0x89, 0xe5,
					0x48, 0x83, 0xec, 0x40, 0x48, 0x89, 0x44, 0x24, 0x50, 0x48,
					0x89, 0x5c, 0x24, 0x58, 0x48, 0x89, 0x4c, 0x24, 0x60 };
	/* The same without the RCX store, and one with a call before the stores. */
	static const uint8_t call[] = {
		0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x55, 0x48, 0x89, 0xe5,
		0xe8, 0x00, 0x00, 0x00, 0x00, 0x48, 0x89, 0x44, 0x24, 0x50
	};
	int rax, rbx, rcx;

	CHECK_INT(x86ret__go_spill_slots(read, sizeof(read), &rax, &rbx, &rcx), 0);
	CHECK_INT(rax, 8);
	CHECK_INT(rbx, 16);
	CHECK_INT(rcx, 24);
	CHECK_INT(x86ret__go_spill_slots(read, sizeof(read) - 5, &rax, &rbx, &rcx), -ENOENT);
	CHECK_INT(x86ret__go_spill_slots(call, sizeof(call), &rax, &rbx, &rcx), -ENOENT);
}

static void test_stack_check_branch(void)
{
	/* (*Conn).Read and (*Conn).Write entries as Go 1.21-1.26 compile them (kube-apiserver
	 * v1.33.13): the jbe follows the cmp, after an lea r12 for a large frame. */
	static const uint8_t read[] = { 0x49, 0x3b, 0x66, 0x10, 0x0f, 0x86, 0x7a,
					0x03, 0x00, 0x00, 0x55, 0x48, 0x89, 0xe5 };
	static const uint8_t write[] = { 0x4c, 0x8d, 0x64, 0x24, 0xb8, 0x4d, 0x3b, 0x66,
					 0x10, 0x0f, 0x86, 0x93, 0x07, 0x00, 0x00, 0x55 };
	/* A short jbe; then shapes that must be refused: no stack check, the guard at another
	 * offset, a jb instead of jbe, the lea into another register. */
	static const uint8_t short_jbe[] = { 0x49, 0x3b, 0x66, 0x10, 0x76, 0x20, 0x55 };
	static const uint8_t plain[] = { 0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x40 };
	static const uint8_t disp8[] = { 0x49, 0x3b, 0x66, 0x18, 0x76, 0x20, 0x55 };
	static const uint8_t jb[] = { 0x49, 0x3b, 0x66, 0x10, 0x72, 0x20, 0x55 };
	static const uint8_t lea_r13[] = { 0x4c, 0x8d, 0x6c, 0x24, 0xb8, 0x4d,
					   0x3b, 0x66, 0x10, 0x76, 0x20, 0x55 };
	uint64_t at = 99;

	CHECK_INT(x86ret__go_stack_check_branch(read, sizeof(read), &at), 0);
	CHECK_INT(at, 4);
	CHECK_INT(x86ret__go_stack_check_branch(write, sizeof(write), &at), 0);
	CHECK_INT(at, 9);
	CHECK_INT(x86ret__go_stack_check_branch(short_jbe, sizeof(short_jbe), &at), 0);
	CHECK_INT(at, 4);
	CHECK_INT(x86ret__go_stack_check_branch(plain, sizeof(plain), &at), -ENOENT);
	CHECK_INT(x86ret__go_stack_check_branch(disp8, sizeof(disp8), &at), -ENOENT);
	CHECK_INT(x86ret__go_stack_check_branch(jb, sizeof(jb), &at), -ENOENT);
	CHECK_INT(x86ret__go_stack_check_branch(lea_r13, sizeof(lea_r13), &at), -ENOENT);
	/* Cut before the branch is complete. */
	CHECK_INT(x86ret__go_stack_check_branch(read, 6, &at), -ENOENT);
}

static uint8_t *read_file(const char *path, size_t *size)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !(buf = malloc((size_t)st.st_size))) {
		close(fd);
		return NULL;
	}
	if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static const char *const tls_funcs[] = { "crypto/tls.(*Conn).Write", "crypto/tls.(*Conn).Read" };

/* read_text gives the file's bytes; after release every answer is the same, read back. */
static void check_read_and_release(struct go_binary *gb, const char *path)
{
	const struct go_text_info *ti = go_binary__text_info(gb);
	uint64_t entry, end, rets[64] = { 0 }, rets_after[64],
			     seg_end = ti->exec_vaddr + ti->exec_filesz;
	uint8_t got[128], want[128] = { 0 };
	const char *func, *file, *func_after, *file_after;
	int line, line_after, n;
	ssize_t len;
	int fd;

	CHECK_INT(go_binary__func(gb, tls_funcs[1], &entry, &end), 0);
	len = go_binary__read_text(gb, entry, got, sizeof(got));
	CHECK_INT(len, (ssize_t)sizeof(got));
	fd = open(path, O_RDONLY);
	CHECK(fd >= 0, "%s: open", path);
	if (fd >= 0) {
		CHECK_INT(pread(fd, want, sizeof(want), go_binary__file_offset(gb, entry)),
			  (ssize_t)sizeof(want));
		CHECK(memcmp(got, want, sizeof(want)) == 0, "%s: read_text differs from the file",
		      path);
		close(fd);
	}
	CHECK_INT(go_binary__read_text(gb, seg_end - 3, got, sizeof(got)), 3);
	CHECK_INT(go_binary__read_text(gb, seg_end, got, sizeof(got)), -ERANGE);
	CHECK_INT(go_binary__read_text(gb, ti->exec_vaddr - 1, got, sizeof(got)), -ERANGE);

	n = go_binary__ret_sites(gb, tls_funcs[1], rets, 64);
	CHECK_INT(go_binary__pc_to_line(gb, rets[0], 0, &func, &file, &line), 0);
	go_binary__release(gb);
	CHECK_INT(go_binary__ret_sites(gb, tls_funcs[1], rets_after, 64), n);
	CHECK(n > 0 && memcmp(rets, rets_after, (size_t)n * sizeof(rets[0])) == 0,
	      "%s: RETs differ after release", path);
	CHECK_INT(go_binary__pc_to_line(gb, rets[0], 0, &func_after, &file_after, &line_after), 0);
	CHECK_STR(func_after, func);
	CHECK_STR(file_after, file);
	CHECK_INT(line_after, line);
	CHECK_INT(go_binary__read_text(gb, entry, got, sizeof(got)), (ssize_t)sizeof(got));
	CHECK(memcmp(got, want, sizeof(want)) == 0, "%s: read_text differs after release", path);
}

/* The API on one good build: functions, RETs as boundaries, offsets, bias, lines. */
/* go_binary__pc_to_line keeps its answers by PC: every PC of (*Conn).Write, 4 bytes apart
 * (more than its cache holds, so slots are shared and replaced), asked forward then backward,
 * answers the same both times, with or without the out-parameters. */
static void check_pc_line_cache(struct go_binary *gb)
{
	enum { MAX_PCS = 4096 };
	static const char *fn[MAX_PCS], *fl[MAX_PCS];
	static int ln[MAX_PCS];
	uint64_t entry = 0, end = 0;
	int n = 0, bad = 0;

	if (go_binary__func(gb, "crypto/tls.(*Conn).Write", &entry, &end))
		return;
	for (uint64_t pc = entry; pc < end && n < MAX_PCS; pc += 4, n++)
		CHECK_INT(go_binary__pc_to_line(gb, pc, 0, &fn[n], &fl[n], &ln[n]), 0);
	CHECK(n > 256, "(*Conn).Write spans %d PCs 4 bytes apart", n);
	for (int i = n - 1; i >= 0; i--) {
		const char *f2 = NULL, *l2 = NULL;
		int line2 = -1;

		if (go_binary__pc_to_line(gb, entry + 4 * (uint64_t)i, 0, &f2, &l2, &line2) ||
		    strcmp(f2, fn[i]) || strcmp(l2, fl[i]) || line2 != ln[i])
			bad++;
		if (i % 7 == 0 &&
		    (go_binary__pc_to_line(gb, entry + 4 * (uint64_t)i, 0, NULL, NULL, &line2) ||
		     line2 != ln[i]))
			bad++;
	}
	CHECK(bad == 0, "PCs asked again: %d answered differently", bad);
}

static void check_fixture(const char *path)
{
	struct go_binary *gb;
	char why[512];

	gb = go_binary__open(path, why, sizeof(why));
	CHECK(gb != NULL, "%s: %s", path, why);
	if (!gb)
		return;
	const struct go_text_info *ti = go_binary__text_info(gb);
	const struct go_buildinfo *bi = go_binary__buildinfo(gb);

	CHECK(bi->go_major == 1 && bi->go_minor >= 21, "%s: version %s", path, bi->go_version);
	CHECK_STR(bi->path, "bindtrace.test/gofixtures/tlsfix");
	CHECK(bi->n_deps == 1 && bi->deps[0].replace &&
		  strcmp(bi->deps[0].replace->path, "./payload") == 0,
	      "%s: replaced dependency", path);
	CHECK(ti->n_funcs > 1000, "%s: %lu functions", path, (unsigned long)ti->n_funcs);
	for (size_t i = 0; i < 2; i++) {
		uint64_t entry, end, rets[64];
		const char *func, *file;
		int line, n;

		CHECK_INT(go_binary__func(gb, tls_funcs[i], &entry, &end), 0);
		CHECK(entry >= ti->exec_vaddr && end <= ti->exec_vaddr + ti->exec_filesz &&
			  entry < end,
		      "%s: %s bounds", path, tls_funcs[i]);
		n = go_binary__ret_sites(gb, tls_funcs[i], rets, 64);
		CHECK(n > 0, "%s: %s: %d %s", path, tls_funcs[i], n, go_binary__last_error(gb));
		CHECK_INT(go_binary__ret_sites(gb, tls_funcs[i], NULL, 0), n);
		if (n > 1)
			CHECK_INT(go_binary__ret_sites(gb, tls_funcs[i], rets, 1), -ENOSPC);
		n = go_binary__ret_sites(gb, tls_funcs[i], rets, 64);
		for (int j = 0; j < n; j++) {
			CHECK(rets[j] > entry && rets[j] < end, "ret in function");
			CHECK_INT(go_binary__check_probe(gb, tls_funcs[i], rets[j]), 0);
		}
		CHECK_INT(go_binary__check_probe(gb, tls_funcs[i], entry), 0);
		CHECK_INT(go_binary__check_probe(gb, tls_funcs[i], entry + 1), -EILSEQ);
		CHECK_INT(go_binary__check_probe(gb, tls_funcs[i], end), -ERANGE);
		CHECK_INT(go_binary__file_offset(gb, entry),
			  (int64_t)(entry - ti->exec_vaddr + ti->exec_offset));
		CHECK_INT(go_binary__file_offset(gb, ti->exec_vaddr + ti->exec_filesz), -ERANGE);

		CHECK_INT(go_binary__pc_to_line(gb, entry, 0, &func, &file, &line), 0);
		CHECK_STR(func, tls_funcs[i]);
		CHECK(strstr(file, "crypto/tls/conn.go") != NULL, "file %s", file);
		CHECK(line > 100, "line %d", line);
		/* The same PC as seen in a PIE loaded at a bias: same answer. */
		if (ti->pie) {
			uint64_t map_start = 0x7f0000000000ull + ti->exec_offset, bias;

			bias = go_binary__load_bias(gb, map_start, ti->exec_offset & ~0xfffull);
			CHECK_INT(go_binary__pc_to_line(gb, entry + bias, bias, &func, NULL, NULL),
				  0);
			CHECK_STR(func, tls_funcs[i]);
		} else {
			CHECK_INT(go_binary__load_bias(gb, ti->exec_vaddr & ~0xfffull,
						       ti->exec_offset & ~0xfffull),
				  0);
		}
	}
	CHECK_INT(go_binary__func(gb, "crypto/tls.(*Conn).Nope", NULL, NULL), -ENOENT);
	CHECK_INT(go_binary__pc_to_line(gb, 0x10, 0, NULL, NULL, NULL), -ENOENT);
	check_pc_line_cache(gb);
	check_read_and_release(gb, path);
	go_binary__close(gb);
}

static void expect_refused(const char *what, const void *data, size_t size, const char *reason)
{
	char why[512] = "";
	struct go_binary *gb = go_binary__open_mem(data, size, why, sizeof(why));

	CHECK(!gb, "%s: accepted", what);
	go_binary__close(gb);
	if (reason)
		CHECK(strstr(why, reason) != NULL, "%s: reason \"%s\", want \"%s\"", what, why,
		      reason);
	CHECK(why[0] != '\0', "%s: empty reason", what);
}

static size_t find(const uint8_t *buf, size_t size, const void *needle, size_t n)
{
	for (size_t i = 0; i + n <= size; i++)
		if (memcmp(buf + i, needle, n) == 0)
			return i;
	return SIZE_MAX;
}

/* Damaged copies of a good build: refused with a reason or still right, never a crash. */
static void check_damage(const char *path)
{
	static const uint8_t pcln_magic[] = { 0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8 };
	size_t size, at;
	uint8_t *good = read_file(path, &size), *bad;
	char why[512];

	CHECK(good != NULL, "read %s", path);
	if (!good)
		return;
	bad = malloc(size);
	/* Truncations: at every eighth of the file and inside the headers. */
	for (int k = 0; k < 8; k++) {
		size_t cut = size / 8 * (size_t)k + (k ? 0 : 1);

		expect_refused("truncated", good, cut, NULL);
	}
	expect_refused("truncated ELF header", good, 40, NULL);
	expect_refused("not ELF", "#!/bin/sh\necho hi\n", 18, "not an ELF file");

	at = find(good, size, pcln_magic, sizeof(pcln_magic));
	CHECK(at != SIZE_MAX, "pclntab magic in %s", path);
	if (at != SIZE_MAX) {
		/* nfunc zero, nfunc huge, an offset past the end, minLC wrong: refused. */
		static const struct {
			size_t off;
			uint64_t value;
			size_t len;
			const char *reason;
		} pokes[] = {
			{ 8, 0, 8, "implausible counts" }, { 8, 1u << 30, 8, "implausible counts" },
			{ 64, 1ull << 40, 8, "outside" },  { 32, 3, 8, "outside" },
			{ 6, 3, 1, "not sane" },	   { 0, 0xfffffffb, 4, "Go 1.2-1.15" },
		};
		for (size_t i = 0; i < sizeof(pokes) / sizeof(pokes[0]); i++) {
			memcpy(bad, good, size);
			memcpy(bad + at + pokes[i].off, &pokes[i].value, pokes[i].len);
			expect_refused("poked pclntab header", bad, size, pokes[i].reason);
		}
		/* Random damage to the header and the start of the tables: either refused, or
		 * still resolving the same functions inside the executable segment. */
		srand(42);
		for (int i = 0; i < 60; i++) {
			memcpy(bad, good, size);
			for (int j = 0; j < 4; j++)
				bad[at + (size_t)(rand() % 4096)] = (uint8_t)rand();
			struct go_binary *gb = go_binary__open_mem(bad, size, why, sizeof(why));

			if (gb) {
				uint64_t entry, end, rets[64];
				const char *f, *file;
				int line;

				if (!go_binary__func(gb, tls_funcs[0], &entry, &end)) {
					go_binary__ret_sites(gb, tls_funcs[0], rets, 64);
					go_binary__pc_to_line(gb, entry + 7, 0, &f, &file, &line);
				}
				go_binary__close(gb);
			}
		}
	}
	/* A text base that is off: runtime.text + 1 puts every entry mid-instruction. */
	at = find(good, size, "\xff Go buildinf:", 14);
	CHECK(at != SIZE_MAX, "buildinfo in %s", path);
	if (at != SIZE_MAX) {
		memcpy(bad, good, size);
		memcpy(bad + at + 35, "1.16", 4); /* go1.2x.y -> go1.16.y */
		expect_refused("go1.16 buildinfo", bad, size, "needs Go 1.18 or newer");
		memcpy(bad, good, size);
		bad[at + 32] = 0xff; /* version length varint runs past the end */
		bad[at + 33] = 0xff;
		expect_refused("corrupt buildinfo", bad, size, NULL);
	}
	free(bad);
	free(good);
}

/* Functions looked up while opening (go_binary__open_find) or in one pass (find_funcs) give what
 * a lookup of each by itself gives; a name no function has stays -ENOENT; a binary shared by
 * go_binary__ref outlives the first close. */
static void check_lookups(const char *path)
{
	const char *names[] = { tls_funcs[0], "bindtrace.test/nope.Missing", tls_funcs[1],
				"runtime.main", "main.main" };
	uint64_t want_entry[5], want_end[5], entry, end;
	int want_rc[5];
	struct go_binary *gb, *found;
	char why[512];

	gb = go_binary__open(path, why, sizeof(why));
	CHECK(gb != NULL, "%s: %s", path, why);
	if (!gb)
		return;
	for (size_t k = 0; k < 5; k++)
		want_rc[k] = go_binary__func(gb, names[k], &want_entry[k], &want_end[k]);
	CHECK(want_rc[0] == 0 && want_rc[1] == -ENOENT && want_rc[2] == 0 && want_rc[3] == 0 &&
		  want_rc[4] == 0,
	      "%s: plain lookups %d %d %d %d %d", path, want_rc[0], want_rc[1], want_rc[2],
	      want_rc[3], want_rc[4]);
	/* Asked again: the remembered answer. */
	CHECK_INT(go_binary__func(gb, names[1], &entry, &end), -ENOENT);
	CHECK_INT(go_binary__func(gb, names[0], &entry, &end), 0);
	CHECK(entry == want_entry[0] && end == want_end[0], "%s: remembered lookup differs", path);
	go_binary__close(gb);

	found = go_binary__open_find(path, names, 5, why, sizeof(why));
	CHECK(found != NULL, "%s: open_find: %s", path, why);
	if (!found)
		return;
	gb = go_binary__ref(found);
	CHECK(gb == found, "ref returns its binary");
	go_binary__close(found); /* one owner left */
	for (size_t k = 0; k < 5; k++) {
		entry = end = 0;
		CHECK_INT(go_binary__func(gb, names[k], &entry, &end), want_rc[k]);
		CHECK(want_rc[k] || (entry == want_entry[k] && end == want_end[k]),
		      "%s: %s found while opening at 0x%llx, by itself at 0x%llx", path, names[k],
		      (unsigned long long)entry, (unsigned long long)want_entry[k]);
	}
	CHECK(go_binary__ret_sites(gb, tls_funcs[1], NULL, 0) > 0,
	      "%s: RETs of a name found while "
	      "opening",
	      path);
	go_binary__close(gb);

	gb = go_binary__open(path, why, sizeof(why));
	CHECK(gb != NULL, "%s: %s", path, why);
	if (!gb)
		return;
	go_binary__find_funcs(gb, names, 5);
	for (size_t k = 0; k < 5; k++) {
		entry = 0;
		CHECK_INT(go_binary__func(gb, names[k], &entry, &end), want_rc[k]);
		CHECK(want_rc[k] || entry == want_entry[k], "%s: %s by find_funcs", path, names[k]);
	}
	go_binary__close(gb);
}

/* A function whose record or name lies outside the pclntab, or whose entry is out of order,
 * makes the table corrupt: refused, whichever function it is. */
static void check_corrupt_funcs(const char *path)
{
	static const uint8_t pcln_magic[] = { 0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8 };
	size_t size, at;
	uint8_t *good = read_file(path, &size), *bad;
	uint64_t nfunc, ftab;

	CHECK(good != NULL, "read %s", path);
	if (!good)
		return;
	bad = malloc(size);
	at = find(good, size, pcln_magic, sizeof(pcln_magic));
	CHECK(at != SIZE_MAX && bad, "pclntab magic in %s", path);
	if (at == SIZE_MAX || !bad) {
		free(bad);
		free(good);
		return;
	}
	memcpy(&nfunc, good + at + 8, 8);
	memcpy(&ftab, good + at + 64, 8); /* functab's offset from the header */
	for (uint64_t i = 0; i < nfunc; i += nfunc / 3) {
		size_t slot = at + ftab + i * 8;
		uint32_t funcoff, entryoff, next, huge = 0xfffffff0u;

		memcpy(&entryoff, good + slot, 4);
		memcpy(&funcoff, good + slot + 4, 4);
		memcpy(&next, good + slot + 8, 4);
		/* Its name offset past the table. */
		memcpy(bad, good, size);
		memcpy(bad + at + ftab + funcoff + 4, &huge, 4);
		expect_refused("function name outside the pclntab", bad, size,
			       "is corrupt (name outside the table)");
		/* Its record past the table. */
		memcpy(bad, good, size);
		memcpy(bad + slot + 4, &huge, 4);
		expect_refused("function record outside the pclntab", bad, size,
			       "is corrupt (record outside the table)");
		/* Its entry after the next one's. */
		if (i + 1 < nfunc && next > entryoff) {
			next++;
			memcpy(bad, good, size);
			memcpy(bad + slot, &next, 4);
			expect_refused("function entries out of order", bad, size, "out of order");
		}
	}
	free(bad);
	free(good);
}

/* The text base is validated: a binary whose pcHeader.textStart is shifted must be refused. */
static void check_shifted_base(const char *path)
{
	static const uint8_t pcln_magic[] = { 0xf1, 0xff, 0xff, 0xff, 0, 0, 1, 8 };
	size_t size, at;
	uint8_t *img = read_file(path, &size);
	uint64_t text;

	if (!img)
		return;
	at = find(img, size, pcln_magic, sizeof(pcln_magic));
	memcpy(&text, img + at + 24, 8);
	if (at != SIZE_MAX && text) {
		uint64_t pcln_vaddr = 0;
		char why[512];
		struct go_binary *gb = go_binary__open_mem(img, size, why, sizeof(why));

		if (gb) {
			pcln_vaddr = go_binary__text_info(gb)->pclntab_vaddr;
			go_binary__close(gb);
		}
		text += 0x40; /* still inside .text, wrong */
		memcpy(img + at + 24, &text, 8);
		/* moduledata.text still says the truth: caught by the cross-check */
		expect_refused("shifted textStart", img, size, "disagrees");
		/* without a moduledata to compare with, runtime.main's code must catch it */
		uint64_t shoff;
		uint16_t shnum;

		/* the section headers stay: .gopclntab's sh_addr must still find the table */
		memcpy(&shoff, img + 0x28, 8);
		memcpy(&shnum, img + 0x3c, 2);
		for (size_t i = 0; pcln_vaddr && i + 8 <= size; i += 8) {
			uint64_t v;

			if (i >= shoff && i < shoff + shnum * 64ull)
				continue;
			memcpy(&v, img + i, 8);
			if (v == pcln_vaddr)
				memset(img + i, 0, 8);
		}
		expect_refused("shifted textStart, no moduledata", img, size,
			       "does not begin with Go's stack check");
	}
	free(img);
}

static void test_fixtures(const char *dir)
{
	char pattern[4096], path[4096];
	glob_t g;
	char why[512];

	snprintf(pattern, sizeof(pattern), "%s/go1.2*/*/tlsfix", dir);
	if (glob(pattern, 0, NULL, &g) == 0) {
		CHECK(g.gl_pathc >= 4, "%zu fixture builds", g.gl_pathc);
		for (size_t i = 0; i < g.gl_pathc; i++)
			check_fixture(g.gl_pathv[i]);
		globfree(&g);
	} else {
		CHECK(0, "no fixtures matching %s", pattern);
	}
	snprintf(path, sizeof(path), "%s/go1.24/static/tlsfix", dir);
	check_damage(path);
	check_corrupt_funcs(path);
	snprintf(pattern, sizeof(pattern), "%s/go1.2*/*/tlsfix", dir);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			check_lookups(g.gl_pathv[i]);
		globfree(&g);
	}
	snprintf(path, sizeof(path), "%s/go1.21/default/tlsfix", dir);
	check_shifted_base(path);

	snprintf(path, sizeof(path), "%s/go1.16/version/tlsfix", dir);
	CHECK(!go_binary__open(path, why, sizeof(why)), "go1.16 accepted");
	CHECK(strcmp(why, "Go 1.16 binary: bindtrace needs Go 1.18 or newer") == 0, "%s", why);
	snprintf(path, sizeof(path), "%s/go1.16/magic/tlsfix", dir);
	CHECK(!go_binary__open(path, why, sizeof(why)), "1.16 pclntab accepted");
	CHECK(strstr(why, "0xfffffffa") != NULL, "%s", why);
	CHECK(!go_binary__open("/bin/true", why, sizeof(why)), "/bin/true accepted");
	CHECK(strcmp(why, "not a Go binary: no .go.buildinfo and no Go pclntab") == 0, "%s", why);
	CHECK(!go_binary__open("/nonexistent/bin", why, sizeof(why)) && errno == ENOENT,
	      "missing file");
	CHECK(!go_binary__open("/", why, sizeof(why)) && errno == EISDIR, "directory");
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("BINDTRACE_GOFIXTURES");
	struct stat st;

	test_version_parse();
	test_pcvalue();
	test_x86();
	test_spill_slots();
	test_stack_check_branch();
	if (dir && stat(dir, &st) == 0) {
		test_fixtures(dir);
	} else if (dir) {
		CHECK(0, "Go fixtures %s: %s (tests/gofixtures/build)", dir, strerror(errno));
	} else {
		/* Not a pass: the checks against real Go binaries did not run. */
		int rc = check_summary("goelf");
		printf(
		    "skip: no Go fixtures given (BINDTRACE_GOFIXTURES or an argument): the checks "
		    "on real Go binaries did not run\n");
		return rc ? rc : 77;
	}
	return check_summary("goelf");
}
