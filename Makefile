# cuco - one plain GNU Makefile (docs/c-style.md habit 12).
#
#   make            build ./cuco
#   make test       build and run every test that needs no GPU
#   make asan       the same suite under ASan+UBSan
#   make lint       formatting, banned functions, cppcheck
#   make format     apply .clang-format
#   make cuda       compile every .cu of the runtime and workloads (no GPU)
#   make install    PREFIX=/usr/local (DESTDIR for staging): bin/cuco,
#                   bin/cuco-confine, share/cuco/{runtime,workloads,...}
#
# One short line a step ("CC src/foo.c", "LD build/cuco"); V=1 prints the
# whole commands, -s nothing.

# No -j given: one job per CPU.  README's `make test` on a fresh clone
# builds ~110 C objects and binaries before the tests: 28 s serial, 15 s
# with -j2 on the 2-core dev machine (issue 27).  make -jN still wins.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif

CC      ?= gcc
PKGS    := libcurl jansson sqlite3 libmicrohttpd inih libxxhash
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation -Werror
CFLAGS  ?= -O2 -g
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) \
              $(PKG_CFLAGS) -Isrc
# libiberty (Debian libiberty-dev, no .pc file): the demangler nm -C uses
LDLIBS  := $(PKG_LIBS) -liberty -lm -ldl -lpthread
BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=

V ?= 0
ifeq ($(V),1)
Q   :=
msg  =
else
Q   := @
msg  = @printf '  %-7s %s\n' '$(1)' '$(2)'
endif
# make -s: not even the short lines (make >= 4 keeps the one-letter flags
# in the first word of MAKEFLAGS)
ifneq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
msg  =
endif

SRC      := $(wildcard src/*.c)
LIB_SRC  := $(filter-out src/main.c,$(SRC))
OBJ      := $(SRC:src/%.c=$(BUILD)/obj/%.o)
LIB_OBJ  := $(LIB_SRC:src/%.c=$(BUILD)/obj/%.o)
# The web UI (web/) is embedded into the binary with xxd -i.
WEB_FILES := $(shell find web -type f 2>/dev/null | LC_ALL=C sort)
WEB_OBJ  := $(BUILD)/obj/web_assets.o
OBJ      += $(WEB_OBJ)
LIB_OBJ  += $(WEB_OBJ)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPERS := $(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c))
HELPER_BIN := $(TEST_HELPERS:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all test check asan lint format cuda clean gpu-check fuzz install \
        uninstall

all: cuco

cuco: $(BUILD)/cuco
	@if [ "$(BUILD)" = build ]; then cp $(BUILD)/cuco $(BUILD)/cuco-confine .; fi

# cuco-confine: limits and the system-call filter a sandboxed child gets
# (issue 47); cuco looks for it beside its own executable.
$(BUILD)/cuco: $(OBJ) | $(BUILD)/cuco-confine
	$(call msg,LD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(OBJ) $(LDLIBS)

$(BUILD)/cuco-confine: src/confine/confine.c
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< -lseccomp

$(BUILD)/obj/%.o: src/%.c $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/gen/web_assets.c: $(WEB_FILES) scripts/embed-web.sh
	@mkdir -p $(dir $@)
	$(call msg,GEN,$@)
	$(Q)scripts/embed-web.sh $@ $(WEB_FILES)

$(WEB_OBJ): $(BUILD)/gen/web_assets.c src/webassets.h
	@mkdir -p $(dir $@)
	$(call msg,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(BUILD)/tests/test_%: tests/unit/test_%.c $(LIB_OBJ) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

# A unit test of a workload's frozen host code (plain C shared with its .cu
# files) also links that code: test_moe_routing <- workloads/moe_dsv3.
MOE_DIR := workloads/moe_dsv3
$(BUILD)/tests/test_moe_routing: tests/unit/test_moe_routing.c $(MOE_DIR)/moe_routing.c \
    $(MOE_DIR)/moe_routing.h $(MOE_DIR)/moe_fp8.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -I$(MOE_DIR) -o $@ $< $(MOE_DIR)/moe_routing.c \
	  $(LIB_OBJ) $(LDLIBS) -lcmocka

# The speed-of-light bound and every workload's declared work (plain C
# headers of the runtime and the workloads' frozen wl_work.h).
$(BUILD)/tests/test_sol: tests/unit/test_sol.c runtime/rt_sol.h runtime/runtime.h \
    $(wildcard workloads/*/wl_work.h) $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -Iruntime -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

# The runtime's phase accounting (plain C header, issue 26).
$(BUILD)/tests/test_phase: tests/unit/test_phase.c runtime/rt_phase.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/unit -Iruntime -o $@ $< $(LIB_OBJ) $(LDLIBS) -lcmocka

$(BUILD)/tests/%: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LDLIBS)

# the fuzz targets' replay drivers (see fuzzing below) are part of make test
FUZZ_SRC     := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_NAMES   := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_REPLAY  := $(FUZZ_NAMES:%=$(BUILD)/tests/%)
FUZZ_SECONDS ?= 60
FUZZ_LIB_SRC := $(filter-out src/main.c,$(LIB_SRC))

test check: $(BUILD)/cuco $(TEST_BIN) $(HELPER_BIN) $(FUZZ_REPLAY)
	@if [ "$(BUILD)" = build ]; then cp $(BUILD)/cuco $(BUILD)/cuco-confine .; fi
	@BUILD=$(BUILD) tests/run.sh

asan:
	$(MAKE) BUILD=build-asan \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  test

lint:
	@scripts/lint.sh

format:
	clang-format -i src/*.c src/*.h tests/unit/*.c

cuda: $(BUILD)/cuco
	@BUILD=$(BUILD) scripts/cuda-compile.sh

# On a GPU machine only (the device run): the GPU scripts named in GPU
# (default: every workload through cuco eval, then the integrity proof).
GPU ?= tests/gpu/workloads.sh:590 tests/gpu/integrity.sh:590
gpu-check: cuco
	@tests/gpu/run-all.sh $(GPU)

clean:
	rm -rf build build-asan cuco cuco-confine

# What cuco reads at run time, where the installed binary looks for it
# (PREFIX/bin/../share/cuco: src/build.c finds runtime/ there, and
# src/transform_prompt.c the runtime and the docs its prompts carry;
# src/sandbox.c wants cuco-confine beside cuco); the workloads and
# examples, so that `cuco eval PREFIX/share/cuco/workloads/W` works.
# Built objects and transform work folders stay behind.
SHARE_FILES = $(shell find runtime workloads examples docs -type f \
                ! -name '*.o' ! -path '*/transform/*' 2>/dev/null | LC_ALL=C sort)
datadir     = $(PREFIX)/share/cuco

install: $(BUILD)/cuco $(BUILD)/cuco-confine
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX)/bin/cuco)
	$(Q)install -d '$(DESTDIR)$(PREFIX)/bin'
	$(Q)install -m 755 $(BUILD)/cuco $(BUILD)/cuco-confine '$(DESTDIR)$(PREFIX)/bin/'
	$(call msg,INSTALL,$(DESTDIR)$(datadir))
	$(Q)for f in $(SHARE_FILES); do \
	  install -D -m 644 "$$f" '$(DESTDIR)$(datadir)'/"$$f" || exit 1; done

uninstall:
	$(call msg,RM,$(DESTDIR)$(PREFIX)/bin/cuco $(DESTDIR)$(datadir))
	$(Q)rm -f '$(DESTDIR)$(PREFIX)/bin/cuco' '$(DESTDIR)$(PREFIX)/bin/cuco-confine'
	$(Q)rm -rf '$(DESTDIR)$(datadir)'

# ---- fuzzing (docs/c-style.md habit 11): one target per parser ----------
# `make fuzz` runs each for FUZZ_SECONDS under libFuzzer (clang, ASan and
# UBSan) from the seeds in tests/fuzz/corpus/NAME/; `make test` replays
# those with the gcc-built replay driver (build/tests/fuzz_NAME).

$(BUILD)/tests/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call msg,CCLD,$@)
	$(Q)$(CC) $(ALL_CFLAGS) -Itests/fuzz -o $@ $< tests/fuzz/replay.c $(LIB_OBJ) $(LDLIBS)

FUZZ_CC    := clang -std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 \
              -fsanitize=fuzzer-no-link,address,undefined $(PKG_CFLAGS) -Isrc
FUZZ_OBJ   := $(FUZZ_LIB_SRC:src/%.c=build-fuzz/obj/%.o) build-fuzz/obj/web_assets.o

build-fuzz/obj/%.o: src/%.c $(wildcard src/*.h)
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) -c -o $@ $<

build-fuzz/obj/web_assets.o: $(BUILD)/gen/web_assets.c
	@mkdir -p $(dir $@)
	@$(FUZZ_CC) -c -o $@ $<

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@clang -g -O1 -fsanitize=fuzzer,address,undefined $(PKG_CFLAGS) -Isrc \
	  -Itests/fuzz -o $@ $< $(FUZZ_OBJ) $(LDLIBS)

# New inputs go to build-fuzz/corpus/NAME; tests/fuzz/corpus/NAME holds
# the seeds and the findings worth keeping (copy them there by hand).
fuzz: $(FUZZ_NAMES:%=build-fuzz/%)
	@set -e; for n in $(FUZZ_NAMES); do \
	  mkdir -p build-fuzz/corpus/$$n; \
	  echo "fuzz: $$n for $(FUZZ_SECONDS) s"; \
	  build-fuzz/$$n -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -print_final_stats=1 -artifact_prefix=build-fuzz/$$n- \
	    build-fuzz/corpus/$$n tests/fuzz/corpus/$$n 2>&1 | \
	    grep -E 'stat::number_of_executed_units|ERROR|SUMMARY|BINGO|crash' || true; \
	  if ls build-fuzz/$$n-crash-* build-fuzz/$$n-leak-* build-fuzz/$$n-timeout-* >/dev/null 2>&1; then \
	    echo "fuzz: $$n found a failing input: build-fuzz/$$n-*"; exit 1; fi; \
	done
