/* Build IDs from an ELF file's notes. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "elf_note.h"

static void hex_of(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t i;

	out[0] = '\0';
	for (i = 0; i < n && 2 * i + 2 < cap; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

static void read_notes(struct elf_build_ids *ids, Elf_Data *d)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < d->d_size && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)d->d_buf + name_off;
		const uint8_t *desc = (const uint8_t *)d->d_buf + desc_off;

		if (nh.n_namesz == 4 && !memcmp(name, "GNU", 4) && nh.n_type == NT_GNU_BUILD_ID)
			hex_of(ids->gnu, sizeof(ids->gnu), desc, nh.n_descsz);
		/* Go's linker: name "Go\0\0", type 4 (ELF_NOTE_GOBUILDID_TAG), the build ID. */
		if (nh.n_namesz == 4 && !memcmp(name, "Go\0\0", 4) && nh.n_type == 4) {
			size_t n =
			    nh.n_descsz < sizeof(ids->go) - 1 ? nh.n_descsz : sizeof(ids->go) - 1;
			size_t i;

			for (i = 0; i < n && desc[i] >= 0x20 && desc[i] < 0x7f; i++)
				ids->go[i] = (char)desc[i];
			ids->go[i] = '\0';
		}
		off = next;
	}
}

/* From the PT_NOTE segments (stripped binaries may have no section headers), or from SHT_NOTE
 * sections when there are no note segments. */
void elf_build_ids__read(struct elf_build_ids *ids, const char *path)
{
	bool found = false;
	size_t n, i;
	Elf *elf = NULL;
	int fd;

	ids->gnu[0] = ids->go[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		goto close_elf;
	if (elf_getphdrnum(elf, &n) == 0) {
		for (i = 0; i < n; i++) {
			GElf_Phdr ph;
			Elf_Data *d;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			if (d) {
				read_notes(ids, d);
				found = true;
			}
		}
	}
	if (!found) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
				continue;
			d = elf_getdata(scn, NULL);
			if (d)
				read_notes(ids, d);
		}
	}
close_elf:
	elf_end(elf);
	close(fd);
}
