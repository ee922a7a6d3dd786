/* goelf: reads a stripped Go executable's .go.buildinfo and pclntab with libelf and bounds-checked
 * raw reads, establishes runtime.text (pcHeader.textStart up to Go 1.25, runtime.moduledata.text
 * from Go 1.26, through dynamic relocations for PIE and external linking), and refuses to hand
 * out any address unless that base has been validated against the code itself. Everything read
 * from the file is treated as hostile: every offset and length is checked against what is there.
 */
#include "goelf.h"
#include "x86ret.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GO_MAGIC_112 0xfffffffbu
#define GO_MAGIC_116 0xfffffffau
#define GO_MAGIC_118 0xfffffff0u
#define GO_MAGIC_120 0xfffffff1u

#define PCHEADER_SIZE 72 /* 1.18+: magic..pclnOffset on 64-bit */
#define FUNC_MIN_SIZE 44 /* 1.18+ _func without its pcdata/funcdata arrays */
#define MAX_FUNCS (16u << 20)
#define MAX_FILES (16u << 20)
#define MAX_VERSION_LEN 256
#define MAX_MODINFO_LEN (16u << 20)
#define FUNC_LOOKUPS_MAX 32	 /* names whose lookup is remembered (found or not) */
#define FUNC_LOOKUP_NAME_MAX 192 /* longer names are looked up every time */

/* runtime.moduledata, Go 1.18 to 1.26 (checked against each toolchain's runtime/symtab.go):
 * pcHeader *pcHeader, then six slices (funcnametab, cutab, filetab, pctab, pclntable, ftab),
 * findfunctab, minpc, maxpc, then text at 22*8. */
#define MD_PCHEADER 0
#define MD_FUNCNAMETAB (8 + 0 * 24)
#define MD_PCLNTABLE (8 + 4 * 24)
#define MD_FTAB (8 + 5 * 24)
#define MD_TEXT (22 * 8)
#define MD_ETEXT (23 * 8)

static const char buildinfo_magic[14] = "\xff Go buildinf:";

struct segment {
	uint64_t vaddr, memsz, offset, filesz;
	uint32_t flags;
};

struct reloc {
	uint64_t where;
	uint64_t value; /* link-time value the loader will store there */
};

/* go_binary__pc_to_line's answers by PC, direct-mapped: a traced call's stack is symbolised at
 * every bind, mostly the same PCs (4% of the tracer's CPU in a 1000-pod burst without it). */
#define PC_LINE_CACHE 256

struct pc_line {
	uint64_t vaddr; /* 0: empty */
	const char *func, *file;
	int line;
};

struct go_binary {
	unsigned int refs; /* go_binary__ref; freed by the close that drops the last */
	uint8_t *image;	   /* the whole file, owned (mmap or malloc) */
	size_t size;
	bool mmapped;
	Elf *elf;
	size_t shstrndx;
	bool has_shstrndx;

	struct segment *segs;
	size_t n_segs;
	const struct segment *exec;
	struct reloc *relocs;
	size_t n_relocs;

	/* buildinfo: strings point into these owned copies */
	char *version;
	char *modinfo;
	struct go_module main_mod, *deps, *repls;
	size_t n_repls;
	struct go_build_setting *settings;
	struct go_buildinfo bi;

	/* pclntab, as offsets from its header, all below pcln_len */
	const uint8_t *pcln;
	size_t pcln_len;
	/* The last NUL byte of the pclntab: a string at offset `at` is NUL-terminated inside it
	 * exactly when at <= pcln_last_nul (no NUL at all: pcln_has_nul false). */
	size_t pcln_last_nul;
	bool pcln_has_nul;
	uint32_t min_lc;
	uint64_t n_funcs;
	uint64_t funcname_off, cu_off, filetab_off, pctab_off, functab_off;

	/* Functions looked up by name, found or not: a lookup reads every function's name, and
	 * one binary's attach asks for the same few names several times (entry, then its bounds
	 * to validate a probe, its RETs). Filled by func__by_name and go_binary__find_funcs. */
	struct func_lookup {
		char name[FUNC_LOOKUP_NAME_MAX];
		uint64_t index;
		bool found;
	} lookups[FUNC_LOOKUPS_MAX];
	size_t n_lookups;

	struct go_text_info ti;
	char how[512], validation[512], where[128];
	char err[512];

	struct pc_line pc_lines[PC_LINE_CACHE];
};

static void gb_error(struct go_binary *gb, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void gb_error(struct go_binary *gb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(gb->err, sizeof(gb->err), fmt, ap);
	va_end(ap);
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* A sweep over a whole table (every function's name, a segment searched for a magic) would leave
 * every page it read resident for as long as gb lives, tens of MB for a kube-apiserver. Every
 * `period` steps it drops them (read-only file pages: nothing is lost, a later read faults the
 * page back in), so a sweep holds a window of the table, not all of it. */
static void gb_sweep_step(const struct go_binary *gb, uint64_t step, uint64_t period)
{
	if (gb->mmapped && step && step % period == 0)
		madvise(gb->image, gb->size, MADV_DONTNEED);
}

#define SWEEP_FUNCS 8192u      /* functions per window: ~1-2 MB of the tables */
#define SWEEP_BYTES (2u << 20) /* bytes per window of a segment scan */

/* Pointer to len bytes of file content at vaddr, or NULL if they are not all in the file. */
static const uint8_t *gb_ptr(const struct go_binary *gb, uint64_t vaddr, uint64_t len)
{
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];
		uint64_t rel = vaddr - s->vaddr;

		if (vaddr < s->vaddr || rel > s->filesz || len > s->filesz - rel)
			continue;
		if (s->offset + rel > gb->size || len > gb->size - (s->offset + rel))
			return NULL;
		return gb->image + s->offset + rel;
	}
	return NULL;
}

/* How many file bytes follow vaddr in its segment (0 if it is not in the file). */
static uint64_t gb_avail(const struct go_binary *gb, uint64_t vaddr)
{
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];
		uint64_t rel = vaddr - s->vaddr, avail;

		if (vaddr < s->vaddr || rel >= s->filesz)
			continue;
		avail = s->filesz - rel;
		if (s->offset + rel >= gb->size)
			return 0;
		return avail < gb->size - (s->offset + rel) ? avail : gb->size - (s->offset + rel);
	}
	return 0;
}

static const struct reloc *reloc__find(const struct go_binary *gb, uint64_t where)
{
	size_t lo = 0, hi = gb->n_relocs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (gb->relocs[mid].where < where)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < gb->n_relocs && gb->relocs[lo].where == where ? &gb->relocs[lo] : NULL;
}

/* A pointer-sized value as the loader leaves it: through a RELA relocation when there is one
 * (PIE and externally linked binaries may hold zero in the file), else the bytes in the file. */
static int gb_read_addr(struct go_binary *gb, uint64_t vaddr, uint64_t *out)
{
	const struct reloc *r = reloc__find(gb, vaddr);
	const uint8_t *p;

	if (r) {
		*out = r->value;
		gb->ti.relocated = true;
		return 0;
	}
	p = gb_ptr(gb, vaddr, 8);
	if (!p)
		return -EFAULT;
	*out = get_u64(p);
	return 0;
}

static bool section__find(struct go_binary *gb, const char *name, GElf_Shdr *out)
{
	Elf_Scn *scn = NULL;

	if (!gb->has_shstrndx)
		return false;
	while ((scn = elf_nextscn(gb->elf, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, out))
			continue;
		n = elf_strptr(gb->elf, gb->shstrndx, out->sh_name);
		if (n && strcmp(n, name) == 0)
			return out->sh_type != SHT_NOBITS;
	}
	return false;
}

static int reloc__cmp(const void *a, const void *b)
{
	const struct reloc *x = a, *y = b;

	return x->where < y->where ? -1 : x->where > y->where;
}

static int reloc__add(struct go_binary *gb, size_t *cap, uint64_t where, uint64_t value)
{
	if (gb->n_relocs == *cap) {
		size_t ncap = *cap ? *cap * 2 : 1024;
		struct reloc *r = realloc(gb->relocs, ncap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		gb->relocs = r;
		*cap = ncap;
	}
	gb->relocs[gb->n_relocs++] = (struct reloc){ where, value };
	return 0;
}

/* Without section headers (cut or sstripped), the loader's view: DT_RELA in PT_DYNAMIC. Only
 * R_X86_64_RELATIVE, which needs no symbol table. */
static void relocs__load_dynamic(struct go_binary *gb, size_t *cap)
{
	uint64_t rela = 0, relasz = 0, relaent = sizeof(Elf64_Rela);
	size_t n;

	if (elf_getphdrnum(gb->elf, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		const uint8_t *dyn;

		if (!gelf_getphdr(gb->elf, (int)i, &ph) || ph.p_type != PT_DYNAMIC)
			continue;
		if (ph.p_offset > gb->size || ph.p_filesz > gb->size - ph.p_offset)
			return;
		dyn = gb->image + ph.p_offset;
		for (uint64_t d = 0; d + 16 <= ph.p_filesz; d += 16) {
			uint64_t tag = get_u64(dyn + d), val = get_u64(dyn + d + 8);

			if (tag == DT_NULL)
				break;
			if (tag == DT_RELA)
				rela = val;
			else if (tag == DT_RELASZ)
				relasz = val;
			else if (tag == DT_RELAENT)
				relaent = val;
		}
	}
	if (!rela || relaent != sizeof(Elf64_Rela) || !gb_ptr(gb, rela, relasz))
		return;
	const uint8_t *p = gb_ptr(gb, rela, relasz);

	for (uint64_t i = 0; i + sizeof(Elf64_Rela) <= relasz; i += sizeof(Elf64_Rela)) {
		Elf64_Rela r;

		memcpy(&r, p + i, sizeof(r));
		if (ELF64_R_TYPE(r.r_info) == R_X86_64_RELATIVE &&
		    reloc__add(gb, cap, r.r_offset, (uint64_t)r.r_addend))
			return;
	}
}

/* Collect the R_X86_64_RELATIVE and R_X86_64_64 relocations of allocated RELA sections: enough
 * to read the pointers Go's tables hold. (RELR relocations keep the value in place.) */
static int relocs__load(struct go_binary *gb)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;

	while ((scn = elf_nextscn(gb->elf, scn))) {
		GElf_Shdr shdr, symshdr;
		Elf_Data *data, *symdata = NULL;
		size_t n;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_RELA ||
		    !(shdr.sh_flags & SHF_ALLOC) || shdr.sh_entsize != sizeof(Elf64_Rela))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data)
			return -EINVAL;
		if (shdr.sh_link) {
			Elf_Scn *sym = elf_getscn(gb->elf, shdr.sh_link);

			if (sym && gelf_getshdr(sym, &symshdr))
				symdata = elf_getdata(sym, NULL);
		}
		n = data->d_size / sizeof(Elf64_Rela);
		for (size_t i = 0; i < n; i++) {
			GElf_Rela rela;
			GElf_Sym sym;
			uint64_t value;

			if (!gelf_getrela(data, (int)i, &rela))
				return -EINVAL;
			switch (GELF_R_TYPE(rela.r_info)) {
			case R_X86_64_RELATIVE:
				value = (uint64_t)rela.r_addend;
				break;
			case R_X86_64_64:
				if (!symdata ||
				    !gelf_getsym(symdata, (int)GELF_R_SYM(rela.r_info), &sym) ||
				    sym.st_shndx == SHN_UNDEF)
					continue;
				value = sym.st_value + (uint64_t)rela.r_addend;
				break;
			default:
				continue;
			}
			if (reloc__add(gb, &cap, rela.r_offset, value))
				return -ENOMEM;
		}
	}
	if (!gb->n_relocs)
		relocs__load_dynamic(gb, &cap);
	if (gb->n_relocs)
		qsort(gb->relocs, gb->n_relocs, sizeof(*gb->relocs), reloc__cmp);
	return 0;
}

static int elf__load(struct go_binary *gb)
{
	GElf_Ehdr ehdr;
	size_t n;

	if (gb->size < 4 || memcmp(gb->image, ELFMAG, SELFMAG) != 0) {
		gb_error(gb, "not an ELF file");
		return -ENOEXEC;
	}
	gb->elf = elf_memory((char *)gb->image, gb->size);
	if (!gb->elf || elf_kind(gb->elf) != ELF_K_ELF || !gelf_getehdr(gb->elf, &ehdr)) {
		gb_error(gb, "truncated or corrupt ELF: %s", elf_errmsg(-1));
		return -ENOEXEC;
	}
	if (gelf_getclass(gb->elf) != ELFCLASS64 || ehdr.e_machine != EM_X86_64) {
		gb_error(gb, "not an x86-64 ELF (class %d, machine %d): bindtrace supports x86-64",
			 gelf_getclass(gb->elf), ehdr.e_machine);
		return -ENOEXEC;
	}
	if (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) {
		gb_error(gb, "not an executable (ELF type %d)", ehdr.e_type);
		return -ENOEXEC;
	}
	gb->ti.pie = ehdr.e_type == ET_DYN;
	if (elf_getphdrnum(gb->elf, &n) != 0 || n == 0 || n > 4096) {
		gb_error(gb, "truncated or corrupt ELF: no program headers");
		return -ENOEXEC;
	}
	gb->segs = calloc(n, sizeof(*gb->segs));
	if (!gb->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(gb->elf, (int)i, &ph)) {
			gb_error(gb, "truncated or corrupt ELF: bad program header %zu", i);
			return -ENOEXEC;
		}
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset > gb->size || ph.p_filesz > gb->size - ph.p_offset) {
			gb_error(gb,
				 "truncated or corrupt ELF: segment at file offset 0x%" PRIx64
				 " size 0x%" PRIx64 " is past the end of the file (0x%zx bytes)",
				 (uint64_t)ph.p_offset, (uint64_t)ph.p_filesz, gb->size);
			return -ENOEXEC;
		}
		gb->segs[gb->n_segs++] = (struct segment){ ph.p_vaddr, ph.p_memsz, ph.p_offset,
							   ph.p_filesz, ph.p_flags };
		if ((ph.p_flags & PF_X) && !gb->exec)
			gb->exec = &gb->segs[gb->n_segs - 1];
	}
	if (!gb->exec) {
		gb_error(gb, "no executable PT_LOAD segment");
		return -ENOEXEC;
	}
	gb->has_shstrndx = elf_getshdrstrndx(gb->elf, &gb->shstrndx) == 0;
	if (relocs__load(gb)) {
		gb_error(gb, "truncated or corrupt ELF: unreadable relocations: %s",
			 elf_errmsg(-1));
		return -ENOEXEC;
	}
	return 0;
}

/* ---- buildinfo ---- */

void go_version__parse(const char *version, int *major, int *minor, int *patch)
{
	int ma, mi, pa = 0, n = 0;

	*major = *minor = *patch = -1;
	if (!version || sscanf(version, "go%d.%d%n", &ma, &mi, &n) != 2)
		return;
	if (version[n] == '.' && sscanf(version + n + 1, "%d", &pa) != 1)
		pa = 0;
	*major = ma;
	*minor = mi;
	*patch = pa;
}

static int uvarint(const uint8_t *p, size_t len, size_t *pos, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned int shift = 0; shift < 64; shift += 7) {
		uint8_t b;

		if (*pos >= len)
			return -EINVAL;
		b = p[(*pos)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EINVAL;
}

static char *strndup_checked(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static size_t utf8_put(char *w, uint32_t cp)
{
	if (cp < 0x80) {
		w[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		w[0] = (char)(0xc0 | (cp >> 6));
		w[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		w[0] = (char)(0xe0 | (cp >> 12));
		w[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		w[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	w[0] = (char)(0xf0 | ((cp >> 18) & 0x07));
	w[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	w[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	w[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Undo strconv.Quote in place: s points at the opening quote. The result starts at s and is
 * NUL-terminated; returns the character after the closing quote, or NULL if malformed. Escapes
 * never lengthen the text (\u takes 6 chars for at most 3 bytes, \U 10 for 4), so writing
 * stays behind reading. */
static char *go_unquote(char *s)
{
	char *r = s + 1, *w = s;

	while (*r && *r != '"') {
		char c = *r++;

		if (c != '\\') {
			*w++ = c;
			continue;
		}
		c = *r++;
		switch (c) {
		case 'a':
			*w++ = '\a';
			break;
		case 'b':
			*w++ = '\b';
			break;
		case 'f':
			*w++ = '\f';
			break;
		case 'n':
			*w++ = '\n';
			break;
		case 'r':
			*w++ = '\r';
			break;
		case 't':
			*w++ = '\t';
			break;
		case 'v':
			*w++ = '\v';
			break;
		case '\\':
		case '"':
		case '\'':
			*w++ = c;
			break;
		case 'x': {
			int h = util__hexval(r[0]), l = h < 0 ? -1 : util__hexval(r[1]);

			if (l < 0)
				return NULL;
			*w++ = (char)(h << 4 | l);
			r += 2;
			break;
		}
		case 'u':
		case 'U': {
			int digits = c == 'u' ? 4 : 8;
			uint32_t cp = 0;

			for (int i = 0; i < digits; i++) {
				int d = util__hexval(r[i]);

				if (d < 0)
					return NULL;
				cp = cp << 4 | (uint32_t)d;
			}
			if (cp > 0x10ffff)
				return NULL;
			w += utf8_put(w, cp);
			r += digits;
			break;
		}
		default:
			if (c >= '0' && c <= '7' && r[0] >= '0' && r[0] <= '7' && r[1] >= '0' &&
			    r[1] <= '7') {
				*w++ = (char)((c - '0') << 6 | (r[0] - '0') << 3 | (r[1] - '0'));
				r += 2;
				break;
			}
			return NULL;
		}
	}
	if (*r != '"')
		return NULL;
	*w = '\0';
	return r + 1;
}

/* Split a module line "PATH\tVERSION[\tSUM]" (after its tag) into m. */
static void module__parse(char *fields, struct go_module *m)
{
	char *tab;

	m->path = fields;
	m->version = "";
	m->sum = "";
	m->replace = NULL;
	if ((tab = strchr(fields, '\t'))) {
		*tab = '\0';
		m->version = tab + 1;
		if ((tab = strchr(tab + 1, '\t'))) {
			*tab = '\0';
			m->sum = tab + 1;
		}
	}
}

/* The module info text that cmd/go writes (what `go version -m` prints): "path", "mod", "dep",
 * "=>" (replaces the module before it) and "build KEY=VALUE" lines, tab separated. */
static int modinfo__parse(struct go_binary *gb)
{
	size_t lines = 1, n_settings = 0;
	struct go_module *last = NULL;
	char *line, *next;

	for (const char *p = gb->modinfo; *p; p++)
		lines += *p == '\n';
	gb->deps = calloc(lines, sizeof(*gb->deps));
	gb->repls = calloc(lines, sizeof(*gb->repls));
	gb->settings = calloc(lines, sizeof(*gb->settings));
	if (!gb->deps || !gb->repls || !gb->settings)
		return -ENOMEM;
	gb->bi.path = "";
	gb->bi.deps = gb->deps;
	gb->bi.settings = gb->settings;
	for (line = gb->modinfo; line && *line; line = next) {
		char *tag = line, *rest;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		rest = strchr(tag, '\t');
		if (!rest)
			continue;
		*rest++ = '\0';
		if (strcmp(tag, "path") == 0) {
			gb->bi.path = rest;
		} else if (strcmp(tag, "mod") == 0) {
			module__parse(rest, &gb->main_mod);
			gb->bi.main = last = &gb->main_mod;
		} else if (strcmp(tag, "dep") == 0) {
			last = &gb->deps[gb->bi.n_deps++];
			module__parse(rest, last);
		} else if (strcmp(tag, "=>") == 0 && last && !last->replace) {
			struct go_module *r = &gb->repls[gb->n_repls++];

			module__parse(rest, r);
			last->replace = r;
		} else if (strcmp(tag, "build") == 0) {
			struct go_build_setting *s = &gb->settings[n_settings];
			char *eq;

			if (*rest == '"') {
				eq = go_unquote(rest);
				if (!eq || *eq != '=')
					continue;
			} else {
				eq = strchr(rest, '=');
				if (!eq)
					continue;
			}
			*eq = '\0';
			s->key = rest;
			s->value = eq + 1;
			if (eq[1] == '"' && !go_unquote(eq + 1))
				continue;
			n_settings++;
		}
	}
	gb->bi.n_settings = n_settings;
	return 0;
}

/* A Go string header {ptr, len} at vaddr (pre-1.18 buildinfo), copied out. */
static char *go_string__read(struct go_binary *gb, uint64_t vaddr, size_t max)
{
	uint64_t ptr, len;
	const uint8_t *p;

	if (gb_read_addr(gb, vaddr, &ptr) || !gb_ptr(gb, vaddr + 8, 8))
		return NULL;
	len = get_u64(gb_ptr(gb, vaddr + 8, 8));
	if (len > max || !(p = gb_ptr(gb, ptr, len)))
		return NULL;
	return strndup_checked(p, len);
}

static int buildinfo__find(struct go_binary *gb, uint64_t *vaddr)
{
	GElf_Shdr shdr;

	if (section__find(gb, ".go.buildinfo", &shdr) && gb_ptr(gb, shdr.sh_addr, 32) &&
	    memcmp(gb_ptr(gb, shdr.sh_addr, 32), buildinfo_magic, sizeof(buildinfo_magic)) == 0) {
		*vaddr = shdr.sh_addr;
		return 0;
	}
	/* No section (or a stripped section table): Go aligns the blob to 16 in a data segment. */
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];

		if (s->flags & PF_X)
			continue;
		for (uint64_t off = (16 - (s->vaddr & 15)) & 15; off + 32 <= s->filesz; off += 16) {
			const uint8_t *p = gb_ptr(gb, s->vaddr + off, 32);

			gb_sweep_step(gb, off & ~15ull, SWEEP_BYTES);

			if (!p)
				break;
			if (memcmp(p, buildinfo_magic, sizeof(buildinfo_magic)) == 0) {
				*vaddr = s->vaddr + off;
				return 0;
			}
		}
	}
	return -ENOENT;
}

static int buildinfo__load(struct go_binary *gb)
{
	uint64_t vaddr, avail, len;
	const uint8_t *p;
	size_t pos = 32, modinfo_len = 0;
	int err;

	if (buildinfo__find(gb, &vaddr))
		return -ENOENT;
	p = gb_ptr(gb, vaddr, 32);
	avail = gb_avail(gb, vaddr);
	if (p[14] != 8) {
		gb_error(gb, "unsupported buildinfo: pointer size %u (bindtrace supports 64-bit)",
			 p[14]);
		return -ENOEXEC;
	}
	if (p[15] & 2) { /* Go 1.18+: two varint-prefixed strings inline */
		if (uvarint(p, avail, &pos, &len) || len > MAX_VERSION_LEN || len > avail - pos)
			goto corrupt;
		gb->version = strndup_checked(p + pos, len);
		pos += len;
		if (uvarint(p, avail, &pos, &len) || len > MAX_MODINFO_LEN || len > avail - pos)
			goto corrupt;
		gb->modinfo = strndup_checked(p + pos, len);
		modinfo_len = len;
	} else { /* before 1.18: pointers to string headers, relocated in PIE */
		if (p[15] & 1) {
			gb_error(gb, "unsupported buildinfo: big-endian");
			return -ENOEXEC;
		}
		uint64_t vp, mp;

		if (gb_read_addr(gb, vaddr + 16, &vp) || gb_read_addr(gb, vaddr + 24, &mp))
			goto corrupt;
		gb->version = go_string__read(gb, vp, MAX_VERSION_LEN);
		gb->modinfo = go_string__read(gb, mp, MAX_MODINFO_LEN);
		if (!gb->modinfo)
			gb->modinfo = strdup("");
		modinfo_len = gb->modinfo ? strlen(gb->modinfo) : 0;
	}
	if (!gb->version || !gb->modinfo)
		goto corrupt;
	/* Strip the 16-byte sentinels that frame the module text (they may hold NUL bytes). */
	len = modinfo_len;
	if (len >= 33 && gb->modinfo[len - 17] == '\n') {
		memmove(gb->modinfo, gb->modinfo + 16, len - 32);
		gb->modinfo[len - 32] = '\0';
	}
	gb->bi.go_version = gb->version;
	go_version__parse(gb->version, &gb->bi.go_major, &gb->bi.go_minor, &gb->bi.go_patch);
	err = modinfo__parse(gb);
	if (err)
		return err;
	return 0;
corrupt:
	gb_error(gb, "corrupt .go.buildinfo at 0x%" PRIx64, vaddr);
	return -EINVAL;
}

/* ---- pclntab ---- */

static const char *magic__layout(uint32_t magic)
{
	switch (magic) {
	case GO_MAGIC_112:
		return "Go 1.2-1.15";
	case GO_MAGIC_116:
		return "Go 1.16-1.17";
	case GO_MAGIC_118:
		return "Go 1.18-1.19";
	case GO_MAGIC_120:
		return "Go 1.20+";
	}
	return NULL;
}

static uint64_t ftab_entryoff(const struct go_binary *gb, uint64_t i)
{
	return get_u32(gb->pcln + gb->functab_off + i * 8);
}

static uint64_t ftab_funcoff(const struct go_binary *gb, uint64_t i)
{
	return get_u32(gb->pcln + gb->functab_off + i * 8 + 4);
}

/* The _func record of function i, or NULL if it does not fit. */
static const uint8_t *func__record(const struct go_binary *gb, uint64_t i)
{
	uint64_t off = gb->functab_off + ftab_funcoff(gb, i);

	if (off < gb->functab_off || off > gb->pcln_len || gb->pcln_len - off < FUNC_MIN_SIZE)
		return NULL;
	return gb->pcln + off;
}

/* NUL-terminated string at offset off of the table starting at table_off, or NULL. */
static const char *pcln__string(const struct go_binary *gb, uint64_t table_off, uint64_t off)
{
	uint64_t at = table_off + off;

	/* Terminated inside the table: a NUL at or after `at`, i.e. at <= the table's last NUL
	 * (the same test as memchr from `at`, without reading the string). */
	if (at < table_off || at >= gb->pcln_len || !gb->pcln_has_nul || at > gb->pcln_last_nul)
		return NULL;
	return (const char *)gb->pcln + at;
}

static const char *func__name(const struct go_binary *gb, uint64_t i)
{
	const uint8_t *f = func__record(gb, i);

	return f ? pcln__string(gb, gb->funcname_off, get_u32(f + 4)) : NULL;
}

/* Parse and check a candidate pclntab header at vaddr; on success gb's pclntab fields are set.
 * why gets the reason on failure. */
static int pclntab__parse(struct go_binary *gb, uint64_t vaddr, uint64_t region, char *why,
			  size_t why_len)
{
	const uint8_t *p = gb_ptr(gb, vaddr, PCHEADER_SIZE);
	uint64_t offs[5], n_funcs, n_files, prev = 0;
	uint32_t magic;

	if (!p || region < PCHEADER_SIZE) {
		snprintf(why, why_len, "pclntab at 0x%" PRIx64 " is truncated", vaddr);
		return -EINVAL;
	}
	magic = get_u32(p);
	if (magic == GO_MAGIC_112 || magic == GO_MAGIC_116) {
		snprintf(why, why_len,
			 "pclntab layout of %s (magic 0x%08x): bindtrace reads the Go 1.18+ layout",
			 magic__layout(magic), magic);
		return -ENOTSUP;
	}
	if (magic != GO_MAGIC_118 && magic != GO_MAGIC_120) {
		snprintf(why, why_len, "no pclntab magic at 0x%" PRIx64 " (0x%08x)", vaddr, magic);
		return -EINVAL;
	}
	if (p[4] || p[5] || (p[6] != 1 && p[6] != 2 && p[6] != 4) || p[7] != 8) {
		snprintf(why, why_len,
			 "pclntab header at 0x%" PRIx64 " is not sane "
			 "(pad %u %u, minLC %u, ptrSize %u)",
			 vaddr, p[4], p[5], p[6], p[7]);
		return -EINVAL;
	}
	n_funcs = get_u64(p + 8);
	n_files = get_u64(p + 16);
	if (n_funcs == 0 || n_funcs > MAX_FUNCS || n_files > MAX_FILES) {
		snprintf(why, why_len,
			 "pclntab at 0x%" PRIx64 ": implausible counts (%" PRIu64
			 " functions, %" PRIu64 " files)",
			 vaddr, n_funcs, n_files);
		return -EINVAL;
	}
	for (int i = 0; i < 5; i++) {
		offs[i] = get_u64(p + 32 + 8 * i);
		if (offs[i] < PCHEADER_SIZE || offs[i] >= region) {
			snprintf(why, why_len,
				 "pclntab at 0x%" PRIx64 ": table offset 0x%" PRIx64
				 " outside its 0x%" PRIx64 " bytes",
				 vaddr, offs[i], region);
			return -EINVAL;
		}
	}
	if ((n_funcs + 1) * 8 > region - offs[4]) {
		snprintf(why, why_len, "pclntab at 0x%" PRIx64 ": function table truncated", vaddr);
		return -EINVAL;
	}
	gb->pcln = p;
	gb->pcln_len = region;
	gb->min_lc = p[6];
	gb->n_funcs = n_funcs;
	gb->funcname_off = offs[0];
	gb->cu_off = offs[1];
	gb->filetab_off = offs[2];
	gb->pctab_off = offs[3];
	gb->functab_off = offs[4];
	gb->n_lookups = 0;
	{
		const uint8_t *nul = memrchr(p, '\0', region);

		gb->pcln_has_nul = nul != NULL;
		gb->pcln_last_nul = nul ? (size_t)(nul - p) : 0;
	}
	/* The entries, in order (the table is 8 bytes a function). Each function's record and name
	 * are checked by funcs__pass, in the pass that looks functions up by name. */
	for (uint64_t i = 0; i <= n_funcs; i++) {
		uint64_t e = ftab_entryoff(gb, i);

		if (e < prev) {
			snprintf(why, why_len,
				 "pclntab at 0x%" PRIx64 ": function %" PRIu64
				 " is corrupt (entry out of order)",
				 vaddr, i);
			gb->pcln = NULL;
			return -EINVAL;
		}
		prev = e;
	}
	gb->ti.pclntab_vaddr = vaddr;
	gb->ti.pclntab_magic = magic;
	gb->ti.n_funcs = n_funcs;
	gb->ti.n_files = n_files;
	return 0;
}

/* Does the name at offset `at` of the pclntab have exactly this name (len bytes, then its
 * NUL)? The terminator is looked at first: it tells most names of another length apart
 * without reading them, and most names share their first bytes ("k8s.io/..."). */
static bool pcln__name_is(const struct go_binary *gb, uint64_t at, const char *name, size_t len)
{
	return at < gb->pcln_len && len < gb->pcln_len - at && gb->pcln[at + len] == '\0' &&
	       memcmp(gb->pcln + at, name, len) == 0;
}

static struct func_lookup *func_lookup__find(struct go_binary *gb, const char *name)
{
	for (size_t k = 0; k < gb->n_lookups; k++)
		if (strcmp(gb->lookups[k].name, name) == 0)
			return &gb->lookups[k];
	return NULL;
}

static void func_lookup__add(struct go_binary *gb, const char *name, bool found, uint64_t index)
{
	struct func_lookup *l;

	if (gb->n_lookups == FUNC_LOOKUPS_MAX || strlen(name) >= FUNC_LOOKUP_NAME_MAX ||
	    func_lookup__find(gb, name))
		return;
	l = &gb->lookups[gb->n_lookups++];
	memcpy(l->name, name, strlen(name) + 1);
	l->found = found;
	l->index = index;
}

/* One pass over every function, reading its record's name offset: with check, a record or a
 * name outside the pclntab makes the table corrupt (-EINVAL, why says which function); and the
 * first function of each of names[] (n <= FUNC_LOOKUPS_MAX) is found, index[k] = UINT64_MAX
 * when none has it, and remembered. A pass reads a few bytes of every function (a
 * kube-apiserver has 116,000), so open does its check and its callers' lookups in one. */
static int funcs__pass(struct go_binary *gb, const char *const *names, size_t n, uint64_t *index,
		       bool check, char *why, size_t why_len)
{
	size_t lens[FUNC_LOOKUPS_MAX], left;

	if (n > FUNC_LOOKUPS_MAX)
		n = FUNC_LOOKUPS_MAX;
	left = n;
	for (size_t k = 0; k < n; k++) {
		index[k] = UINT64_MAX;
		lens[k] = strlen(names[k]);
	}
	for (uint64_t i = 0; i < gb->n_funcs && (left || check); i++) {
		const uint8_t *f = func__record(gb, i);
		uint64_t at;

		gb_sweep_step(gb, i, SWEEP_FUNCS);

		at = f ? gb->funcname_off + get_u32(f + 4) : 0;
		if (check && (!f || !pcln__string(gb, gb->funcname_off, get_u32(f + 4)))) {
			snprintf(why, why_len,
				 "pclntab at 0x%" PRIx64 ": function %" PRIu64
				 " is corrupt (%s outside the table)",
				 gb->ti.pclntab_vaddr, i, f ? "name" : "record");
			return -EINVAL;
		}
		if (!f)
			continue;
		for (size_t k = 0; k < n; k++) {
			if (index[k] == UINT64_MAX && pcln__name_is(gb, at, names[k], lens[k])) {
				index[k] = i;
				left--;
			}
		}
	}
	for (size_t k = 0; k < n; k++)
		func_lookup__add(gb, names[k], index[k] != UINT64_MAX, index[k]);
	return 0;
}

/* Look for a pclntab header by its magic in one range of file-backed addresses. */
static int pclntab__scan(struct go_binary *gb, uint64_t from, uint64_t len, const char *where,
			 char *why, size_t why_len)
{
	for (uint64_t off = (8 - (from & 7)) & 7; off + PCHEADER_SIZE <= len; off += 8) {
		const uint8_t *p = gb_ptr(gb, from + off, 8);
		uint32_t magic;

		gb_sweep_step(gb, off & ~7ull, SWEEP_BYTES);

		if (!p)
			return -ENOENT;
		magic = get_u32(p);
		if ((magic != GO_MAGIC_118 && magic != GO_MAGIC_120 && magic != GO_MAGIC_116 &&
		     magic != GO_MAGIC_112) ||
		    p[4] || p[5] || p[7] != 8)
			continue;
		int err = pclntab__parse(gb, from + off, gb_avail(gb, from + off), why, why_len);

		/* A candidate found by its magic alone is taken only whole: every function's
		 * record and name too. */
		if (err == 0 && funcs__pass(gb, NULL, 0, NULL, true, why, why_len)) {
			gb->pcln = NULL;
			continue;
		}
		if (err == 0 || err == -ENOTSUP) {
			snprintf(gb->where, sizeof(gb->where), "found by magic in %s", where);
			return err;
		}
	}
	return -ENOENT;
}

static int pclntab__find(struct go_binary *gb, char *why, size_t why_len)
{
	GElf_Shdr shdr;
	uint64_t vaddr;
	int err;

	snprintf(why, why_len, "no Go pclntab");
	if (section__find(gb, ".gopclntab", &shdr)) {
		uint64_t region = gb_avail(gb, shdr.sh_addr);

		if (shdr.sh_size < region)
			region = shdr.sh_size;
		snprintf(gb->where, sizeof(gb->where), ".gopclntab section");
		return pclntab__parse(gb, shdr.sh_addr, region, why, why_len);
	}
	/* Go 1.26 keeps runtime.moduledata in .go.module; its first field points at the header. */
	if (section__find(gb, ".go.module", &shdr) && gb_read_addr(gb, shdr.sh_addr, &vaddr) == 0 &&
	    gb_ptr(gb, vaddr, PCHEADER_SIZE)) {
		snprintf(gb->where, sizeof(gb->where), "runtime.moduledata.pcHeader (.go.module)");
		return pclntab__parse(gb, vaddr, gb_avail(gb, vaddr), why, why_len);
	}
	/* PIE and external linking may leave it inside .data.rel.ro: find it by its magic. */
	if (section__find(gb, ".data.rel.ro", &shdr)) {
		err = pclntab__scan(gb, shdr.sh_addr, shdr.sh_size, ".data.rel.ro", why, why_len);
		if (err != -ENOENT)
			return err;
	}
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];
		char name[64];

		if (s->flags & PF_X)
			continue;
		snprintf(name, sizeof(name), "the segment at 0x%" PRIx64, s->vaddr);
		err = pclntab__scan(gb, s->vaddr, s->filesz, name, why, why_len);
		if (err != -ENOENT)
			return err;
	}
	return -ENOENT;
}

/* Does vaddr hold a runtime.moduledata for the pclntab found? Its slices must point into it. */
static bool moduledata__check(struct go_binary *gb, uint64_t md)
{
	uint64_t v, pcln = gb->ti.pclntab_vaddr;

	if (gb_read_addr(gb, md + MD_PCHEADER, &v) || v != pcln)
		return false;
	if (gb_read_addr(gb, md + MD_FUNCNAMETAB, &v) || v != pcln + gb->funcname_off)
		return false;
	if (gb_read_addr(gb, md + MD_PCLNTABLE, &v) || v != pcln + gb->functab_off)
		return false;
	if (gb_read_addr(gb, md + MD_FTAB, &v) || v != pcln + gb->functab_off)
		return false;
	return gb_read_addr(gb, md + MD_TEXT, &v) == 0;
}

/* runtime.moduledata: .go.module (Go 1.26), else whatever points at the pclntab header and
 * checks out, through a relocation (PIE) or in the raw data (.noptrdata). 0 if not found. */
static uint64_t moduledata__find(struct go_binary *gb, const char **where)
{
	GElf_Shdr shdr;

	if (section__find(gb, ".go.module", &shdr) && moduledata__check(gb, shdr.sh_addr)) {
		*where = ".go.module section";
		return shdr.sh_addr;
	}
	for (size_t i = 0; i < gb->n_relocs; i++) {
		if (gb->relocs[i].value == gb->ti.pclntab_vaddr &&
		    moduledata__check(gb, gb->relocs[i].where)) {
			*where = "found through its relocated pcHeader pointer";
			return gb->relocs[i].where;
		}
	}
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];

		if (!(s->flags & PF_W))
			continue;
		for (uint64_t off = (8 - (s->vaddr & 7)) & 7; off + 8 <= s->filesz; off += 8) {
			const uint8_t *p = gb_ptr(gb, s->vaddr + off, 8);

			gb_sweep_step(gb, off & ~7ull, SWEEP_BYTES);

			if (!p)
				break;
			if (get_u64(p) == gb->ti.pclntab_vaddr &&
			    moduledata__check(gb, s->vaddr + off)) {
				*where = "found by its pcHeader pointer in the data segment";
				return s->vaddr + off;
			}
		}
	}
	return 0;
}

static int func__by_name(struct go_binary *gb, const char *name, uint64_t *index)
{
	const struct func_lookup *l = func_lookup__find(gb, name);

	if (!l) {
		funcs__pass(gb, &name, 1, index, false, NULL, 0);
		if (*index == UINT64_MAX)
			return -ENOENT;
		return 0;
	}
	if (!l->found)
		return -ENOENT;
	*index = l->index;
	return 0;
}

void go_binary__find_funcs(struct go_binary *gb, const char *const *names, size_t n)
{
	const char *todo[FUNC_LOOKUPS_MAX];
	uint64_t index[FUNC_LOOKUPS_MAX];
	size_t m = 0;

	for (size_t k = 0; k < n && m < FUNC_LOOKUPS_MAX; k++)
		if (names[k] && names[k][0] && !func_lookup__find(gb, names[k]))
			todo[m++] = names[k];
	if (m)
		funcs__pass(gb, todo, m, index, false, NULL, 0);
}

static const struct segment *segment__exec_containing(const struct go_binary *gb, uint64_t vaddr)
{
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];

		if ((s->flags & PF_X) && vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz)
			return s;
	}
	return NULL;
}

/* Establish runtime.text and check it against the code before anything may use it. */
static int text_base__establish(struct go_binary *gb)
{
	uint64_t header_text = 0, md_text = 0, md, base, first, last, idx, entry, end;
	const char *md_where = NULL, *via;
	const struct segment *exec;
	char insns[256];
	struct x86ret_scan scan;
	const uint8_t *code;
	GElf_Shdr shdr;
	size_t n;

	gb->ti.relocated = false;
	if (gb_read_addr(gb, gb->ti.pclntab_vaddr + 24, &header_text))
		header_text = 0;
	bool header_relocated = gb->ti.relocated;

	md = moduledata__find(gb, &md_where);
	if (md) {
		gb->ti.moduledata_vaddr = md;
		gb_read_addr(gb, md + MD_TEXT, &md_text);
	}
	via = gb->ti.relocated ? ", read through a dynamic relocation" : "";
	if (header_text) {
		base = header_text;
		gb->ti.source = GO_TEXT_BASE_PCHEADER;
		n = (size_t)snprintf(gb->how, sizeof(gb->how), "pcHeader.textStart%s",
				     header_relocated ? " (through a dynamic relocation)" : "");
		if (md && md_text != header_text) {
			gb_error(gb,
				 "text base cannot be established: pcHeader.textStart 0x%" PRIx64
				 " disagrees with runtime.moduledata.text 0x%" PRIx64,
				 header_text, md_text);
			return -EINVAL;
		}
		if (md && n < sizeof(gb->how))
			n += (size_t)snprintf(gb->how + n, sizeof(gb->how) - n,
					      "; agrees with runtime.moduledata.text at 0x%" PRIx64
					      " (%s)",
					      md + MD_TEXT, md_where);
	} else if (md && md_text) {
		base = md_text;
		gb->ti.source = GO_TEXT_BASE_MODULEDATA;
		n = (size_t)snprintf(gb->how, sizeof(gb->how),
				     "runtime.moduledata.text at 0x%" PRIx64
				     " (%s%s; pcHeader.textStart"
				     " is zero, Go 1.26 layout)",
				     md + MD_TEXT, md_where, via);
	} else {
		gb_error(gb,
			 "text base cannot be established: pcHeader.textStart is zero (Go 1.26 "
			 "layout) and runtime.moduledata %s",
			 md ? "has a zero text field" : "was not found");
		return -ENOENT;
	}
	gb->ti.text_base = base;
	if (section__find(gb, ".text", &shdr)) {
		gb->ti.text_section_vaddr = shdr.sh_addr;
		if (shdr.sh_addr != base && n < sizeof(gb->how))
			snprintf(gb->how + n, sizeof(gb->how) - n,
				 "; .text starts at 0x%" PRIx64 ", %s runtime.text (%s)",
				 shdr.sh_addr, shdr.sh_addr < base ? "before" : "after",
				 shdr.sh_addr < base ? "C code linked in before Go's"
						     : "unexpected");
	}

	exec = segment__exec_containing(gb, base);
	if (!exec) {
		gb_error(gb,
			 "text base 0x%" PRIx64 " is outside every executable segment: refusing",
			 base);
		return -EINVAL;
	}
	gb->exec = exec;
	first = base + ftab_entryoff(gb, 0);
	last = base + ftab_entryoff(gb, gb->n_funcs);
	if (first < exec->vaddr || last > exec->vaddr + exec->filesz || last < first) {
		gb_error(gb,
			 "function entries 0x%" PRIx64 "-0x%" PRIx64 " from text base 0x%" PRIx64
			 " fall outside the executable segment 0x%" PRIx64 "-0x%" PRIx64
			 ": refusing",
			 first, last, base, exec->vaddr, exec->vaddr + exec->filesz);
		return -EINVAL;
	}
	gb->ti.exec_vaddr = exec->vaddr;
	gb->ti.exec_offset = exec->offset;
	gb->ti.exec_filesz = exec->filesz;

	if (func__by_name(gb, "runtime.main", &idx)) {
		gb_error(gb, "no runtime.main in the pclntab: cannot validate the text base");
		return -EINVAL;
	}
	entry = base + ftab_entryoff(gb, idx);
	end = base + ftab_entryoff(gb, idx + 1);
	code = gb_ptr(gb, entry, end - entry);
	if (!code || end <= entry) {
		gb_error(gb, "runtime.main at 0x%" PRIx64 " is not in the file: refusing", entry);
		return -EINVAL;
	}
	if (!x86ret__go_stack_check(code, end - entry, entry, insns, sizeof(insns))) {
		gb_error(gb,
			 "text base 0x%" PRIx64 " fails validation: runtime.main at 0x%" PRIx64
			 " does not begin with Go's stack check (decodes as: %s)",
			 base, entry, insns);
		return -EINVAL;
	}
	if (x86ret__scan(code, end - entry, entry, NULL, 0, &scan) == -EILSEQ) {
		gb_error(gb,
			 "text base 0x%" PRIx64 " fails validation: runtime.main does not decode "
			 "at 0x%" PRIx64,
			 base, scan.bad_insn);
		return -EINVAL;
	}
	snprintf(gb->validation, sizeof(gb->validation),
		 "runtime.main at 0x%" PRIx64 " begins with the stack check `%.120s` and decodes "
		 "to its end (%zu instructions); %" PRIu64
		 " function entries inside the executable "
		 "segment 0x%" PRIx64 "-0x%" PRIx64,
		 entry, insns, scan.n_insns, gb->n_funcs, exec->vaddr, exec->vaddr + exec->filesz);
	gb->ti.how = gb->how;
	gb->ti.validation = gb->validation;
	gb->ti.pclntab_where = gb->where;
	return 0;
}

/* ---- open/close ---- */

static struct go_binary *go_binary__init(struct go_binary *gb, const char *const *names, size_t n,
					 char *why, size_t why_len)
{
	const char *find[FUNC_LOOKUPS_MAX];
	uint64_t index[FUNC_LOOKUPS_MAX];
	char pcln_why[256];
	size_t n_find = 0;
	int err, bi_err;

	gb->refs = 1;

	err = elf__load(gb);
	if (err)
		goto fail;
	bi_err = buildinfo__load(gb);
	if (bi_err && bi_err != -ENOENT) {
		err = bi_err;
		goto fail;
	}
	if (!bi_err && gb->bi.go_major == 1 && gb->bi.go_minor < 18) {
		gb_error(gb, "Go 1.%d binary: bindtrace needs Go 1.18 or newer", gb->bi.go_minor);
		err = -ENOTSUP;
		goto fail;
	}
	err = pclntab__find(gb, pcln_why, sizeof(pcln_why));
	if (err == -ENOENT && bi_err) {
		gb_error(gb, "not a Go binary: no .go.buildinfo and no Go pclntab");
		err = -ENOEXEC;
		goto fail;
	}
	if (err == -ENOTSUP && bi_err) {
		/* Old enough to predate buildinfo's inline layout and our pclntab reader. */
		gb_error(gb,
			 "Go binary older than 1.18 (%s): bindtrace needs Go 1.18 or newer and "
			 "reads Go 1.18+ tables",
			 pcln_why);
		goto fail;
	}
	if (err) {
		gb_error(gb, "%s%s%s", bi_err ? "" : gb->bi.go_version,
			 bi_err ? "" : " binary: ", pcln_why);
		goto fail;
	}
	if (bi_err) {
		gb_error(gb, "Go binary without .go.buildinfo: cannot tell its Go version");
		err = -ENOEXEC;
		goto fail;
	}
	/* Every function's record and name checked, runtime.main (to validate the text base) and
	 * the caller's functions found: one pass. */
	find[n_find++] = "runtime.main";
	for (size_t k = 0; k < n && n_find < FUNC_LOOKUPS_MAX; k++)
		if (names[k])
			find[n_find++] = names[k];
	err = funcs__pass(gb, find, n_find, index, true, pcln_why, sizeof(pcln_why));
	if (err) {
		gb_error(gb, "%s binary: %s", gb->bi.go_version, pcln_why);
		goto fail;
	}
	err = text_base__establish(gb);
	if (err)
		goto fail;
	return gb;
fail:
	if (why && why_len)
		snprintf(why, why_len, "%s", gb->err[0] ? gb->err : strerror(-err));
	go_binary__close(gb);
	errno = err < 0 ? -err : EINVAL;
	return NULL;
}

struct go_binary *go_binary__open(const char *path, char *why, size_t why_len)
{
	return go_binary__open_find(path, NULL, 0, why, why_len);
}

struct go_binary *go_binary__open_find(const char *path, const char *const *names, size_t n,
				       char *why, size_t why_len)
{
	struct go_binary *gb;
	struct stat st;
	int fd, err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(why, why_len, "libelf: %s", elf_errmsg(-1));
		errno = EINVAL;
		return NULL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		snprintf(why, why_len, "%s", strerror(err));
		errno = err;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size == 0) {
		err = S_ISDIR(st.st_mode) ? EISDIR : ENOEXEC;
		snprintf(why, why_len, "%s",
			 S_ISDIR(st.st_mode) ? "is a directory"
			 : st.st_size == 0   ? "empty file"
					     : "not a regular file");
		close(fd);
		errno = err;
		return NULL;
	}
	gb = calloc(1, sizeof(*gb));
	if (!gb) {
		close(fd);
		snprintf(why, why_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	gb->size = (size_t)st.st_size;
	/* Read-only: nothing writes to the image (relocations are kept in gb->relocs, libelf's
	 * elf_memory() reads in place or converts into its own copies), so its pages stay the page
	 * cache's and go_binary__release() can drop them from our RSS without losing anything.
	 * Shared, not private: the kernel writes a uprobe's breakpoint (int3) into every private
	 * mapping of the file that may execute, ours included, so a private image of a binary that
	 * is being traced (by us after attaching, by another tracer) shows 0xcc at the probe sites
	 * and its functions decode wrongly. Shared mappings are never written by uprobes. */
	gb->image = mmap(NULL, gb->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (gb->image == MAP_FAILED) {
		err = errno;
		free(gb);
		snprintf(why, why_len, "mmap: %s", strerror(err));
		errno = err;
		return NULL;
	}
	gb->mmapped = true;
	return go_binary__init(gb, names, n, why, why_len);
}

struct go_binary *go_binary__open_mem(const void *data, size_t size, char *why, size_t why_len)
{
	struct go_binary *gb;

	if (elf_version(EV_CURRENT) == EV_NONE || !size) {
		snprintf(why, why_len, "%s", size ? "libelf unusable" : "empty image");
		errno = EINVAL;
		return NULL;
	}
	gb = calloc(1, sizeof(*gb));
	if (gb)
		gb->image = malloc(size);
	if (!gb || !gb->image) {
		free(gb);
		snprintf(why, why_len, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	memcpy(gb->image, data, size);
	gb->size = size;
	return go_binary__init(gb, NULL, 0, why, why_len);
}

struct go_binary *go_binary__ref(struct go_binary *gb)
{
	gb->refs++;
	return gb;
}

void go_binary__close(struct go_binary *gb)
{
	if (!gb || --gb->refs > 0)
		return;
	if (gb->elf)
		elf_end(gb->elf);
	if (gb->mmapped)
		munmap(gb->image, gb->size);
	else
		free(gb->image);
	free(gb->segs);
	free(gb->relocs);
	free(gb->version);
	free(gb->modinfo);
	free(gb->deps);
	free(gb->repls);
	free(gb->settings);
	free(gb);
}

void go_binary__release(struct go_binary *gb)
{
	/* Read-only and private: dropping the pages loses nothing, a later read faults them back
	 * in from the page cache. A malloc'd image (open_mem) is not ours to drop. */
	if (gb && gb->mmapped)
		madvise(gb->image, gb->size, MADV_DONTNEED);
}

const struct go_buildinfo *go_binary__buildinfo(const struct go_binary *gb)
{
	return &gb->bi;
}

const struct go_text_info *go_binary__text_info(const struct go_binary *gb)
{
	return &gb->ti;
}

const char *go_binary__last_error(const struct go_binary *gb)
{
	return gb->err;
}

/* ---- functions, probes, lines ---- */

static int func__bounds(struct go_binary *gb, const char *name, uint64_t *entry, uint64_t *end)
{
	uint64_t idx;

	if (func__by_name(gb, name, &idx)) {
		gb_error(gb, "%s not found in the pclntab", name);
		return -ENOENT;
	}
	if (entry)
		*entry = gb->ti.text_base + ftab_entryoff(gb, idx);
	if (end)
		*end = gb->ti.text_base + ftab_entryoff(gb, idx + 1);
	return 0;
}

int go_binary__func(struct go_binary *gb, const char *name, uint64_t *entry, uint64_t *end)
{
	return func__bounds(gb, name, entry, end);
}

static const uint8_t *func__code(struct go_binary *gb, const char *name, uint64_t entry,
				 uint64_t end)
{
	const uint8_t *code;

	if (end <= entry || entry < gb->exec->vaddr || end > gb->exec->vaddr + gb->exec->filesz ||
	    !(code = gb_ptr(gb, entry, end - entry))) {
		gb_error(gb,
			 "%s at 0x%" PRIx64 "-0x%" PRIx64 " is not inside the executable segment",
			 name, entry, end);
		return NULL;
	}
	return code;
}

int go_binary__ret_sites(struct go_binary *gb, const char *name, uint64_t *out, size_t cap)
{
	uint64_t entry, end;
	struct x86ret_scan scan;
	const uint8_t *code;
	int err;

	err = func__bounds(gb, name, &entry, &end);
	if (err)
		return err;
	code = func__code(gb, name, entry, end);
	if (!code)
		return -ERANGE;
	err = x86ret__scan(code, end - entry, entry, out, out ? cap : 0, &scan);
	if (err == -EILSEQ) {
		gb_error(gb, "%s: undecodable instruction at 0x%" PRIx64, name, scan.bad_insn);
		return err;
	}
	if (scan.n_exits) {
		gb_error(gb,
			 "%s leaves by a jump at 0x%" PRIx64 " to 0x%" PRIx64 " (%zu such exits): "
			 "RET probes would miss them",
			 name, scan.first_exit, scan.first_exit_to, scan.n_exits);
		return -EXDEV;
	}
	if (err == -ENOSPC) {
		if (!out && !cap)
			return (int)scan.n_rets;
		gb_error(gb, "%s has %zu RET instructions, more than %zu", name, scan.n_rets, cap);
		return err;
	}
	/* Belt and braces: each site must re-decode as a boundary from the entry. */
	for (size_t i = 0; i < scan.n_rets; i++) {
		if (!x86ret__is_boundary(code, end - entry, entry, out[i])) {
			gb_error(gb, "%s: RET at 0x%" PRIx64 " is not an instruction boundary",
				 name, out[i]);
			return -EILSEQ;
		}
	}
	return (int)scan.n_rets;
}

int go_binary__check_probe(struct go_binary *gb, const char *name, uint64_t vaddr)
{
	uint64_t entry, end;
	const uint8_t *code;
	int err;

	err = func__bounds(gb, name, &entry, &end);
	if (err)
		return err;
	if (vaddr < entry || vaddr >= end) {
		gb_error(gb, "0x%" PRIx64 " is outside %s (0x%" PRIx64 "-0x%" PRIx64 ")", vaddr,
			 name, entry, end);
		return -ERANGE;
	}
	code = func__code(gb, name, entry, end);
	if (!code)
		return -ERANGE;
	if (!x86ret__is_boundary(code, end - entry, entry, vaddr)) {
		gb_error(gb, "0x%" PRIx64 " is not an instruction boundary of %s", vaddr, name);
		return -EILSEQ;
	}
	return 0;
}

int64_t go_binary__file_offset(struct go_binary *gb, uint64_t vaddr)
{
	const struct segment *s = gb->exec;

	if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz) {
		gb_error(gb, "0x%" PRIx64 " is outside the executable segment", vaddr);
		return -ERANGE;
	}
	return (int64_t)(vaddr - s->vaddr + s->offset);
}

ssize_t go_binary__read_text(struct go_binary *gb, uint64_t vaddr, void *buf, size_t len)
{
	const struct segment *s = gb->exec;
	uint64_t avail;
	const uint8_t *p;

	if (vaddr < s->vaddr || vaddr - s->vaddr >= s->filesz) {
		gb_error(gb, "0x%" PRIx64 " is outside the executable segment", vaddr);
		return -ERANGE;
	}
	avail = s->filesz - (vaddr - s->vaddr);
	if (len > avail)
		len = (size_t)avail;
	p = gb_ptr(gb, vaddr, len);
	if (!p) {
		gb_error(gb, "0x%" PRIx64 " is not in the file", vaddr);
		return -ERANGE;
	}
	memcpy(buf, p, len);
	return (ssize_t)len;
}

uint64_t go_binary__load_bias(const struct go_binary *gb, uint64_t map_start, uint64_t map_offset)
{
	/* runtime(vaddr) = map_start + (file_offset(vaddr) - map_offset) */
	return map_start - map_offset + gb->exec->offset - gb->exec->vaddr;
}

int go_pcvalue__lookup(const uint8_t *table, size_t len, uint64_t entry, uint64_t pc,
		       unsigned int min_lc, int32_t *value)
{
	uint64_t cur = entry;
	uint32_t val = (uint32_t)-1;
	size_t pos = 0;
	bool first = true;

	if (pc < entry)
		return -ENOENT;
	for (;;) {
		uint64_t uv, pcdelta;

		if (pos < len && table[pos] == 0 && !first)
			return -ENOENT;
		if (uvarint(table, len, &pos, &uv) || uv > UINT32_MAX)
			return -EINVAL;
		val += (uv & 1) ? ~(uint32_t)(uv >> 1) : (uint32_t)(uv >> 1);
		if (uvarint(table, len, &pos, &pcdelta) || pcdelta > UINT32_MAX)
			return -EINVAL;
		cur += pcdelta * min_lc;
		first = false;
		if (pc < cur) {
			*value = (int32_t)val;
			return 0;
		}
	}
}

static int pcvalue(const struct go_binary *gb, uint32_t off, uint64_t entry, uint64_t pc,
		   int32_t *value)
{
	uint64_t at = gb->pctab_off + off;

	if (!off || at >= gb->pcln_len)
		return -ENOENT;
	return go_pcvalue__lookup(gb->pcln + at, gb->pcln_len - at, entry, pc, gb->min_lc, value);
}

/* Index of the function whose code holds vaddr: 0, or -ENOENT. */
static int func__containing(struct go_binary *gb, uint64_t vaddr, uint64_t *index)
{
	uint64_t base = gb->ti.text_base, off, lo = 0, hi = gb->n_funcs;

	if (vaddr < base || (off = vaddr - base) < ftab_entryoff(gb, 0) ||
	    off >= ftab_entryoff(gb, gb->n_funcs)) {
		gb_error(gb, "0x%" PRIx64 " is in no Go function", vaddr);
		return -ENOENT;
	}
	while (hi - lo > 1) { /* largest i with entryoff(i) <= off */
		uint64_t mid = lo + (hi - lo) / 2;

		if (ftab_entryoff(gb, mid) <= off)
			lo = mid;
		else
			hi = mid;
	}
	*index = lo;
	return 0;
}

int go_binary__pc_to_line(struct go_binary *gb, uint64_t pc, uint64_t load_bias, const char **func,
			  const char **file, int *line)
{
	uint64_t vaddr = pc - load_bias, base = gb->ti.text_base, lo;
	struct pc_line *hit = &gb->pc_lines[(vaddr ^ vaddr >> 8) % PC_LINE_CACHE];
	const char *fn = NULL, *fl = NULL;
	const uint8_t *f;
	int32_t fileno = -1, ln = -1;

	if (vaddr && hit->vaddr == vaddr) {
		if (func)
			*func = hit->func;
		if (file)
			*file = hit->file;
		if (line)
			*line = hit->line;
		return 0;
	}
	if (func__containing(gb, vaddr, &lo))
		return -ENOENT;
	f = func__record(gb, lo);
	if (!f) {
		gb_error(gb, "corrupt function record for 0x%" PRIx64, vaddr);
		return -EINVAL;
	}
	fn = func__name(gb, lo);
	uint64_t entry = base + ftab_entryoff(gb, lo);

	if (pcvalue(gb, get_u32(f + 24), entry, vaddr, &ln))
		ln = 0;
	if (pcvalue(gb, get_u32(f + 20), entry, vaddr, &fileno) == 0 && fileno >= 0) {
		uint64_t idx = (uint64_t)get_u32(f + 32) + (uint64_t)fileno;
		uint64_t at = gb->cu_off + idx * 4;

		if (at + 4 <= gb->pcln_len && get_u32(gb->pcln + at) != UINT32_MAX)
			fl = pcln__string(gb, gb->filetab_off, get_u32(gb->pcln + at));
	}
	if (!fl)
		fl = "?";
	*hit = (struct pc_line){ .vaddr = vaddr, .func = fn, .file = fl, .line = ln };
	if (func)
		*func = fn;
	if (file)
		*file = fl;
	if (line)
		*line = ln;
	return 0;
}

int go_binary__func_args(struct go_binary *gb, const char *name, int32_t *args)
{
	const uint8_t *f;
	uint64_t idx;

	if (func__by_name(gb, name, &idx)) {
		gb_error(gb, "%s not found in the pclntab", name);
		return -ENOENT;
	}
	f = func__record(gb, idx);
	if (!f) {
		gb_error(gb, "corrupt function record for %s", name);
		return -ENOENT;
	}
	*args = (int32_t)get_u32(f + 8);
	return 0;
}

int go_binary__sp_delta(struct go_binary *gb, uint64_t vaddr, int32_t *delta)
{
	const uint8_t *f;
	uint64_t idx;

	if (func__containing(gb, vaddr, &idx))
		return -ENOENT;
	f = func__record(gb, idx);
	if (!f ||
	    pcvalue(gb, get_u32(f + 16), gb->ti.text_base + ftab_entryoff(gb, idx), vaddr, delta)) {
		gb_error(gb, "no SP delta recorded for 0x%" PRIx64, vaddr);
		return -ENOENT;
	}
	return 0;
}

int go_binary__read_data(struct go_binary *gb, uint64_t vaddr, void *buf, size_t len)
{
	const uint8_t *p = gb_ptr(gb, vaddr, len);

	if (!p) {
		gb_error(gb, "0x%" PRIx64 "+%zu is not in the file", vaddr, len);
		return -ERANGE;
	}
	memcpy(buf, p, len);
	return 0;
}

/* The writable segment holding len bytes at vaddr, in memory (file or .bss), or NULL. */
static const struct segment *segment__writable(const struct go_binary *gb, uint64_t vaddr,
					       uint64_t len)
{
	for (size_t i = 0; i < gb->n_segs; i++) {
		const struct segment *s = &gb->segs[i];

		if ((s->flags & PF_W) && vaddr >= s->vaddr && vaddr - s->vaddr <= s->memsz &&
		    len <= s->memsz - (vaddr - s->vaddr))
			return s;
	}
	return NULL;
}

int go_binary__read_string_var(struct go_binary *gb, uint64_t vaddr, char *buf, size_t cap)
{
	const struct segment *s = segment__writable(gb, vaddr, 16);
	bool relocated = gb->ti.relocated;
	uint64_t ptr, len;
	const uint8_t *p;

	if (!s || !cap) {
		gb_error(gb, "0x%" PRIx64 " is not a variable in a writable segment", vaddr);
		return -EFAULT;
	}
	if (vaddr - s->vaddr >= s->filesz && !reloc__find(gb, vaddr)) {
		buf[0] = '\0'; /* in .bss: the zero string */
		return 0;
	}
	if (gb_read_addr(gb, vaddr, &ptr) || !(p = gb_ptr(gb, vaddr + 8, 8))) {
		gb->ti.relocated = relocated;
		gb_error(gb, "string header at 0x%" PRIx64 " is not in the file", vaddr);
		return -EFAULT;
	}
	gb->ti.relocated = relocated; /* that flag describes the text base, not this read */
	len = get_u64(p);
	if (len >= cap) {
		gb_error(gb, "string at 0x%" PRIx64 " is %" PRIu64 " bytes long", vaddr, len);
		return -E2BIG;
	}
	if (len && !(p = gb_ptr(gb, ptr, len))) {
		gb_error(gb, "string bytes at 0x%" PRIx64 " are not in the file", ptr);
		return -ERANGE;
	}
	if (len)
		memcpy(buf, p, len);
	buf[len] = '\0';
	return (int)len;
}
