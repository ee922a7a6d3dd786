/* The build IDs an ELF binary carries in its notes, part of a traced binary's identity: the GNU
 * build ID (NT_GNU_BUILD_ID, as hex: what `readelf -n` and debuginfod use) and the Go build ID
 * (the Go linker's note, printable as `go tool buildid` prints it). Read with libelf, from the
 * note segments or, when there are none, the note sections. */
#ifndef BINDTRACE_ELF_NOTE_H
#define BINDTRACE_ELF_NOTE_H

struct elf_build_ids {
	char gnu[129]; /* hex; "" when absent */
	char go[256];  /* "" when absent */
};

/* Both IDs of the file at path; empty where absent, unreadable or not ELF. libelf's version must
 * have been set (elf_version) before threads call this. */
void elf_build_ids__read(struct elf_build_ids *ids, const char *path);

#endif
