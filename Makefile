# pg_tracer — top-level Makefile.
#
# Builds three things:
#   * the PostgreSQL extension (PGXS: src/*.c + common/*.c -> pg_tracer.so)
#   * the BPF objects and their skeletons (bpf/*.bpf.c -> build/*.skel.h),
#     compiled with clang -target bpf against a vmlinux.h generated from the
#     running kernel's BTF.  They are not in OBJS, so PGXS never tries to
#     make LLVM bitcode of them.
#   * the helper binary helper/pg-tracer (libbpf + libelf), with plain $(CC):
#     it is not a PGXS PROGRAM because it must not link against libpq/pgport.
#
# Targets beyond PGXS's own: helper, unit (C unit tests), fuzz (libFuzzer
# targets over every parser of untrusted bytes), install-helper.

EXTENSION   = pg_tracer
MODULE_big  = pg_tracer
EXT_VERSION = 0.5.7

EXT_SRCS    = $(wildcard src/*.c)
COMMON_SRCS = common/pgt_segment.c common/pgt_protocol.c common/pgt_kernel.c
OBJS        = $(EXT_SRCS:.c=.o) $(COMMON_SRCS:.c=.o)
# (the rule below comes before PGXS's `all`: plain `make` builds everything)
.DEFAULT_GOAL := all
# PGXS tracks no header dependencies: a changed shared struct must rebuild
# every object, or the library mixes two layouts of it
$(OBJS): $(wildcard src/*.h common/*.h)

# Install script of the first version, then one upgrade script per version,
# each built from that version's folder of per-feature files (sql/0.2.0/,
# sql/0.3.0/, ...).  A released folder is never edited again: new objects go
# into the next version's folder.
DATA        = sql/pg_tracer--0.1.0.sql
DATA_built  = sql/pg_tracer--0.1.0--0.2.0.sql sql/pg_tracer--0.2.0--0.3.0.sql \
              sql/pg_tracer--0.3.0--0.4.0.sql sql/pg_tracer--0.4.0--0.4.1.sql \
              sql/pg_tracer--0.4.1--0.4.2.sql sql/pg_tracer--0.4.2--0.4.3.sql \
              sql/pg_tracer--0.4.3--0.4.4.sql sql/pg_tracer--0.4.4--0.5.0.sql \
              sql/pg_tracer--0.5.0--0.5.1.sql sql/pg_tracer--0.5.1--0.5.2.sql \
              sql/pg_tracer--0.5.2--0.5.3.sql sql/pg_tracer--0.5.3--0.5.4.sql \
              sql/pg_tracer--0.5.4--0.5.5.sql sql/pg_tracer--0.5.5--0.5.6.sql \
              sql/pg_tracer--0.5.6--0.5.7.sql

REGRESS      = pg_tracer_api pg_tracer_ash pg_tracer_kernel pg_tracer_engine pg_tracer_exact
REGRESS_OPTS = --temp-config=$(CURDIR)/test/regress.conf --temp-instance=$(CURDIR)/tmp_check_regress
TAP_TESTS    = 1

PG_CPPFLAGS = -I$(CURDIR)/common
PG_CONFIG  ?= pg_config
PGXS       := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# upgrade_script(FROM,TO): sql/pg_tracer--FROM--TO.sql from sql/TO/*.sql
define upgrade_script
sql/pg_tracer--$(1)--$(2).sql: $$(sort $$(wildcard sql/$(2)/*.sql))
	( echo "-- generated from sql/$(2)/*.sql by the Makefile: edit those"; \
	  printf '%s\n' '\echo Use "ALTER EXTENSION pg_tracer UPDATE TO '"'"'$(2)'"'"'" to load this file. \quit'; \
	  cat $$^ ) > $$@
endef
$(eval $(call upgrade_script,0.1.0,0.2.0))
$(eval $(call upgrade_script,0.2.0,0.3.0))
$(eval $(call upgrade_script,0.3.0,0.4.0))
$(eval $(call upgrade_script,0.4.0,0.4.1))
$(eval $(call upgrade_script,0.4.1,0.4.2))
$(eval $(call upgrade_script,0.4.2,0.4.3))
$(eval $(call upgrade_script,0.4.3,0.4.4))
$(eval $(call upgrade_script,0.4.4,0.5.0))
$(eval $(call upgrade_script,0.5.0,0.5.1))
$(eval $(call upgrade_script,0.5.1,0.5.2))
$(eval $(call upgrade_script,0.5.2,0.5.3))
$(eval $(call upgrade_script,0.5.3,0.5.4))
$(eval $(call upgrade_script,0.5.4,0.5.5))
$(eval $(call upgrade_script,0.5.5,0.5.6))
$(eval $(call upgrade_script,0.5.6,0.5.7))

# ---------------------------------------------------------------- BPF + helper
BUILD       = build
BPFTOOL    ?= bpftool
BPF_CLANG  ?= clang
ARCH       := $(shell uname -m | sed 's/x86_64/x86/; s/aarch64/arm64/')
BPF_CFLAGS  = -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall \
              -I$(BUILD) -Ibpf -I/usr/include/$(shell uname -m)-linux-gnu
BPF_SRCS    = $(wildcard bpf/*.bpf.c)
BPF_OBJS    = $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
BPF_SKELS   = $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

HELPER      = helper/pg-tracer
HELPER_SRCS = $(filter-out helper/main.c,$(wildcard helper/*.c))
HELPER_CFLAGS = -O2 -g -Wall -Wextra -Wno-unused-parameter -std=gnu11 \
              -Werror=implicit-function-declaration \
              -D_GNU_SOURCE -DPGT_VERSION='"$(EXT_VERSION)"' \
              -I$(BUILD) -Ibpf -Icommon -Ihelper
HELPER_LIBS = -lbpf -lelf -lz

ifndef NO_HELPER
all: $(HELPER)
endif

$(BUILD)/vmlinux.h:
	@mkdir -p $(BUILD)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BUILD)/vmlinux.h $(wildcard bpf/*.h)
	$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# The Makefile too: the helper reports EXT_VERSION, set above.
$(HELPER): helper/main.c $(HELPER_SRCS) $(COMMON_SRCS) $(BPF_SKELS) \
           $(wildcard helper/*.h) $(wildcard common/*.h) $(wildcard bpf/*.h) Makefile
	$(CC) $(HELPER_CFLAGS) -o $@ helper/main.c $(HELPER_SRCS) $(COMMON_SRCS) $(HELPER_LIBS)

helper: $(HELPER)

# ---------------------------------------------------------------- unit tests
UNIT_TESTS = $(patsubst test/unit/%.c,$(BUILD)/%,$(wildcard test/unit/test_*.c))

$(BUILD)/test_%: test/unit/test_%.c test/unit/unit.h $(HELPER_SRCS) $(COMMON_SRCS) $(BPF_SKELS)
	@mkdir -p $(BUILD)
	$(CC) $(HELPER_CFLAGS) -Itest/unit -o $@ $< $(HELPER_SRCS) $(COMMON_SRCS) $(HELPER_LIBS)

unit: $(UNIT_TESTS)
	@ok=0; bad=0; for t in $(UNIT_TESTS); do \
	  if $$t; then ok=$$((ok+1)); else bad=$$((bad+1)); fi; done; \
	  echo "unit programs: $$ok passed, $$bad failed"; test $$bad -eq 0

# ---------------------------------------------------------------- fuzzing
# Each test/fuzz/fuzz_<name>.c is a libFuzzer target over the parsers of
# bytes that cross a trust boundary (layout file, segment, control lines,
# /proc text, pid file, SDT notes, executables), built with clang's
# AddressSanitizer and UndefinedBehaviorSanitizer over its own instrumented
# copy of those sources; `make fuzz` runs each for FUZZ_SECONDS
# (test/fuzz/run.sh).
FUZZ_CC       ?= clang
FUZZ_SECONDS  ?= 20
FUZZ_CFLAGS    = -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                 -std=gnu11 -D_GNU_SOURCE -DPGT_VERSION='"$(EXT_VERSION)"' \
                 -Icommon -Ihelper -Itest/fuzz
FUZZ_LIB_SRCS  = helper/layout_file.c helper/procfs.c helper/pidfile.c helper/usdt_notes.c \
                 helper/fd_read.c \
                 helper/elf_inspect.c \
                 helper/control_server.c helper/escalation.c helper/escalation_anomaly.c \
                 helper/segment_writer.c \
                 helper/log.c helper/parse_num.c $(COMMON_SRCS)
FUZZ_TARGETS   = $(patsubst test/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard test/fuzz/fuzz_*.c))

$(BUILD)/fuzz/fuzz_%: test/fuzz/fuzz_%.c test/fuzz/fuzz.h $(FUZZ_LIB_SRCS) \
                      $(wildcard helper/*.h) $(wildcard common/*.h)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_LIB_SRCS) -lelf -lz

fuzz: $(FUZZ_TARGETS)
	bash test/fuzz/run.sh $(BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# ---------------------------------------------------------------- install
prefix_helper ?= /usr/local
SYSTEMD_DIR   ?= /etc/systemd/system

ifndef NO_HELPER
install: install-helper
endif

install-helper: $(HELPER)
	install -D -m 0755 $(HELPER) $(DESTDIR)$(prefix_helper)/sbin/pg-tracer
	install -D -m 0644 helper/pg-tracer.service $(DESTDIR)$(SYSTEMD_DIR)/pg-tracer.service

clean: clean-helper
clean-helper:
	rm -rf $(BUILD) $(HELPER) tmp_check_regress

.PHONY: helper unit fuzz install-helper clean-helper
