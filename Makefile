# bindtrace build: BPF objects -> skeletons -> user space, plus a sanitizer build for the tests.
# `make` builds build/bindtrace; `make test` runs the whole suite; `make demo` shows one bind.

OUT := build
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
VMLINUX := vmlinux/$(ARCH)/vmlinux.h
CLANG ?= clang
BPFTOOL ?= bpftool
PKGS := libbpf libelf zlib jansson
# Capstone decodes x86 (it, unlike Zydis, has a static library in Debian); libevent serves
# --metrics over HTTP (see the README's "Run it on a cluster" for why these two); libcrypto
# hashes the traced binaries (SHA-256; the README's Development section says why); --otlp posts
# to a collector with libevent's HTTP client, over OpenSSL for https (libevent_openssl, libssl).
PKGS += capstone libevent libcrypto libevent_openssl libssl
# Only the unit tests link these (test_hpack checks our HPACK decoder against nghttp2's encoder).
TEST_PKGS := libnghttp2

# Recursive (=) so pkg-config runs after install-deps has made sure the packages are there.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
TEST_PKG_CFLAGS = $(shell pkg-config --cflags $(TEST_PKGS))
TEST_PKG_LIBS = $(shell pkg-config --libs $(TEST_PKGS))

WARN := -Wall -Wextra -Werror
CFLAGS ?= -g -O2
ALL_CFLAGS = $(CFLAGS) $(WARN) -std=gnu11 -D_GNU_SOURCE -I$(OUT) -Iuser -Ibpf $(PKG_CFLAGS)
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-omit-frame-pointer
FUZZ_OBJ_SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_HDRS := $(wildcard bpf/*.h)
SKELS := $(patsubst bpf/%.bpf.c,$(OUT)/%.skel.h,$(BPF_SRCS))
USER_SRCS := $(wildcard user/*.c)
USER_HDRS := $(wildcard user/*.h)
# Everything but main.c: what unit tests and fuzz targets link against.
LIB_SRCS := $(filter-out user/main.c,$(USER_SRCS))
OBJS := $(patsubst user/%.c,$(OUT)/obj/%.o,$(USER_SRCS))
SAN_OBJS := $(patsubst user/%.c,$(OUT)/san/%.o,$(USER_SRCS))
SAN_LIB_OBJS := $(patsubst user/%.c,$(OUT)/san/%.o,$(LIB_SRCS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(OUT)/tests/%,$(UNIT_SRCS))
FUZZ_LIB_OBJS := $(patsubst user/%.c,$(OUT)/fuzzobj/%.o,$(LIB_SRCS))
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,$(OUT)/fuzz/%,$(FUZZ_SRCS))
FUZZ_SECONDS ?= 60

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all deps test-deps san unit fuzz-build fuzz test test-full demo bench soak format \
	clean controlplane
.PHONY: static image

all: $(OUT)/bindtrace

$(OUT)/.deps: scripts/install-deps
	$(Q)mkdir -p $(OUT)
	$(Q)scripts/install-deps
	$(Q)touch $@

$(OUT)/.test-deps: scripts/install-deps
	$(Q)mkdir -p $(OUT)
	$(Q)scripts/install-deps --test
	$(Q)touch $@

deps: $(OUT)/.deps
test-deps: $(OUT)/.test-deps

$(VMLINUX):
	@echo "bindtrace: no $(VMLINUX) for architecture '$(ARCH)'; generate it with:" >&2
	@echo "  bpftool btf dump file /sys/kernel/btf/vmlinux format c > $(VMLINUX)" >&2
	@false

$(OUT)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) $(VMLINUX) | $(OUT)/.deps
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(OUT)
	$(Q)$(CLANG) -g -O2 -Wall -Werror -target bpf -D__TARGET_ARCH_$(ARCH) -Ivmlinux/$(ARCH) -Ibpf \
		-c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(OUT)/obj/%.o: user/%.c $(USER_HDRS) $(SKELS) | $(OUT)/.deps
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) -c $< -o $@

$(OUT)/san/%.o: user/%.c $(USER_HDRS) $(SKELS) | $(OUT)/.deps
	$(call msg,CC-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(SAN) -O1 -c $< -o $@

# bindtrace's version and commit (scripts/version-h), rewritten only when they change so that
# only version.c is rebuilt for a new commit.
$(OUT)/version_stamp.h: FORCE
	$(Q)mkdir -p $(OUT)
	$(Q)scripts/version-h > $@.tmp
	$(Q)if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(OUT)/obj/version.o $(OUT)/san/version.o $(OUT)/fuzzobj/version.o: $(OUT)/version_stamp.h

.PHONY: FORCE
FORCE:

$(OUT)/bindtrace: $(OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ $(PKG_LIBS) -lm -o $@

# The sanitizer build of the tool itself: what the probe tests run.
$(OUT)/bindtrace-san: $(SAN_OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(SAN) $^ $(PKG_LIBS) -lm -o $@

san: $(OUT)/bindtrace-san

# One self-contained executable for any x86-64 Linux with BTF (the FROM scratch image, copying to
# a node): every library from Debian's .a files, glibc included. The linker warns that libevent's
# evutil_getaddrinfo may call glibc's getaddrinfo, getservbyname and getprotobynumber (which need
# glibc's shared NSS modules at run time): bindtrace never reaches them, as --metrics takes
# numeric addresses only and binds its socket itself.
$(OUT)/bindtrace-static: $(OBJS)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -static $^ $(shell pkg-config --static --libs $(PKGS)) -lm -o $@
	$(Q)printf '  %-8s %s: %s bytes\n' SIZE $@ "$$(stat -c %s $@)"

static: $(OUT)/bindtrace-static

# The OCI image (deploy/Containerfile, FROM scratch): the static binary alone as its context.
IMAGE ?= localhost/bindtrace:$(shell scripts/version-h | sed -n 's/.*VERSION "\(.*\)"/\1/p')
image: $(OUT)/bindtrace-static
	$(Q)mkdir -p $(OUT)/image
	$(Q)cp $< $(OUT)/image/bindtrace
	$(Q)podman build -q -f deploy/Containerfile -t $(IMAGE) $(OUT)/image

$(OUT)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(SAN_LIB_OBJS)
	$(call msg,TEST,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(ALL_CFLAGS) $(TEST_PKG_CFLAGS) $(SAN) -O1 -Itests/unit $< $(SAN_LIB_OBJS) \
		$(PKG_LIBS) $(TEST_PKG_LIBS) -lm -o $@

unit: $(UNIT_BINS)

# libFuzzer targets: clang, with the decoders compiled once under the same sanitizers.
$(OUT)/fuzzobj/%.o: user/%.c $(USER_HDRS) $(SKELS) | $(OUT)/.test-deps
	$(call msg,CC-FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(ALL_CFLAGS) -Wno-unused-command-line-argument $(FUZZ_OBJ_SAN) -O1 -c $< -o $@

$(OUT)/fuzz/%: tests/fuzz/%.c $(FUZZ_LIB_OBJS) | $(OUT)/.test-deps
	$(call msg,FUZZ,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(ALL_CFLAGS) -Wno-unused-command-line-argument $(FUZZ_SAN) -O1 $< \
		$(FUZZ_LIB_OBJS) $(PKG_LIBS) -lm -lpthread -o $@

fuzz-build: $(FUZZ_BINS)

fuzz: $(FUZZ_BINS)
	$(Q)tests/fuzz/run $(FUZZ_SECONDS) $(FUZZ_BINS)

controlplane: | $(OUT)/.test-deps
	tests/controlplane/cluster build

test: $(OUT)/.test-deps $(OUT)/bindtrace $(OUT)/bindtrace-san $(UNIT_BINS) $(FUZZ_BINS)
	$(Q)tests/run

# Everything in test plus the heavy tests (HA bed, kubelet-like load, the older release, OTLP
# into a real Jaeger).
test-full: $(OUT)/.test-deps $(OUT)/bindtrace $(OUT)/bindtrace-san $(UNIT_BINS) $(FUZZ_BINS)
	$(Q)BINDTRACE_TEST_FULL=1 tests/run

demo: $(OUT)/.test-deps $(OUT)/bindtrace
	$(Q)tests/demo

# Benchmarks (not part of test): BENCH="scale soak" runs only those of tests/bench; BINDTRACE=PATH
# measures another build of the tracer. `make soak` is the soak alone.
bench: $(OUT)/.test-deps $(OUT)/bindtrace
	$(Q)tests/bench/run

soak: $(OUT)/.test-deps $(OUT)/bindtrace
	$(Q)BENCH=soak tests/bench/run

format:
	clang-format -i $(wildcard bpf/*.c bpf/*.h user/*.c user/*.h tests/unit/*.c tests/unit/*.h \
		tests/fuzz/*.c)

clean:
	rm -rf $(OUT)
