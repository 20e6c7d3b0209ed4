# modegate -- one handwritten Makefile.
#
#   make            bin/modegate
#   make run        dependencies, build, local PostgreSQL under ./var, serve
#   make test       dependencies, build, unit + integration tests
#   make asan       the whole suite under ASan + UBSan
#   make valgrind   every unit test binary under valgrind memcheck
#   make bench      benchmarks (figures in README)
#   make demo       a scripted conversation against `make run`
#   make test-crash kill -9 under load, then account for every message
#   make check-core the purity check of policy/ and mode/
#   make check-layers  src/ calls only downwards (declared layer order)

CC	?= cc
BUILD	?= build
BIN	?= bin
PREFIX	?= /usr/local
PKGS	 = libevent libevent_pthreads libcurl json-c libpq libcrypto

WARN	 = -Wall -Wextra -Wformat=2 -Wstrict-prototypes -Wmissing-prototypes \
	   -Wshadow -Wpointer-arith -Wsign-compare -Wno-unused-parameter -Werror
OPT	?= -O2 -g
SAN	?=
ifeq ($(SAN),1)
OPT	 = -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	   -fno-sanitize-recover=all
LDFLAGS	+= -fsanitize=address,undefined
endif
CFLAGS	+= -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) \
	   -DMG_RULES_DIR='"$(RULES_DIR)"'
RULES_DIR ?= $(CURDIR)

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CMOCKA_LIBS = $(shell pkg-config --libs cmocka 2>/dev/null)

# The pure core: no I/O, linked by its unit tests with nothing else.
CORE_SRCS = $(wildcard mode/*.c policy/*.c)
CORE_OBJS = $(CORE_SRCS:%.c=$(BUILD)/%.o)
LIBCORE	  = $(BUILD)/libcore.a

# The shell: everything that touches fds, clock, env, network, database.
SHELL_SRCS = $(filter-out src/main.c,$(wildcard src/*.c src/*/*.c))
SHELL_OBJS = $(SHELL_SRCS:%.c=$(BUILD)/%.o)
LIBSHELL   = $(BUILD)/libshell.a

CORE_TESTS  = $(patsubst tests/unit/core/%.c,$(BUILD)/tests/%,\
	      $(wildcard tests/unit/core/test_*.c))
SHELL_TESTS = $(patsubst tests/unit/shell/%.c,$(BUILD)/tests/%,\
	      $(wildcard tests/unit/shell/test_*.c))

.PHONY: all deps test-deps run test unit integ asan valgrind bench check-core \
	check-layers clean \
	install fmt-check

all: $(BIN)/modegate

deps:
	@deploy/install-deps.sh

# make test also needs promtool (deploy/prometheus/alerts.yml's tests).
test-deps:
	@deploy/install-deps.sh test

$(BUILD)/%.o: %.c $(wildcard mode/*.h policy/*.h src/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(if $(filter src/%,$<),-Isrc $(PKG_CFLAGS)) -c $< -o $@

# RULES_DIR is compiled in (-DMG_RULES_DIR), so a change of it (make install
# PREFIX=...) must rebuild what uses it: a stamp holding its value, rewritten
# only when that changes, is a prerequisite of the objects that use it.
RULES_STAMP = $(BUILD)/rules_dir.stamp
RULES_USERS = $(patsubst %.c,$(BUILD)/%.o,\
	      $(shell grep -l MG_RULES_DIR src/*.c src/*/*.c 2>/dev/null))
$(RULES_STAMP): FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(RULES_DIR)' | cmp -s - $@ || \
	    printf '%s\n' '$(RULES_DIR)' > $@
$(RULES_USERS): $(RULES_STAMP)
.PHONY: FORCE
FORCE:

$(LIBCORE): $(CORE_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIBSHELL): $(SHELL_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BIN)/modegate: $(BUILD)/src/main.o $(LIBSHELL) $(LIBCORE)
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lm

# Core unit tests link libcore.a and cmocka only: a stray I/O call in the
# core is a link error here, not a review comment.
$(BUILD)/tests/%: tests/unit/core/%.c $(LIBCORE) $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests/unit -o $@ $< $(LIBCORE) $(LDFLAGS) \
	    $(CMOCKA_LIBS) -lm

$(BUILD)/tests/%: tests/unit/shell/%.c $(LIBSHELL) $(LIBCORE) \
    $(wildcard tests/unit/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc $(PKG_CFLAGS) -Itests/unit -o $@ $< $(LIBSHELL) \
	    $(LIBCORE) $(LDFLAGS) $(PKG_LIBS) $(CMOCKA_LIBS) -lm

# The default rule files in flat form, for the core unit tests (which read
# them with stdio: the core itself never opens a file).
RULE_FLATS = $(patsubst %.json,$(BUILD)/rules/%.flat,\
	     $(wildcard mode/*.json policy/*.json))
$(BUILD)/rules/%.flat: %.json $(BIN)/modegate
	@mkdir -p $(dir $@)
	$(BIN)/modegate rules-flatten $< > $@.tmp && mv $@.tmp $@

unit: $(CORE_TESTS) $(SHELL_TESTS) $(RULE_FLATS) $(BUILD)/tests/gen_router_golden \
	$(BUILD)/tests/gen_turn_golden

check-core: $(LIBCORE)
	@tests/check-core.sh $(LIBCORE)

# The shell's layer order (tests/check-layers.sh): calls go only downwards.
check-layers: $(LIBSHELL) $(BUILD)/src/main.o
	@tests/check-layers.sh $(BUILD)

test: test-deps
	@$(MAKE) --no-print-directory all unit
	@tests/run.sh $(BUILD) $(BIN)/modegate

asan: test-deps
	@$(MAKE) --no-print-directory BUILD=build/asan BIN=build/asan/bin \
	    SAN=1 all unit
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1 \
	    tests/run.sh build/asan build/asan/bin/modegate

# The unit tests under memcheck: no error, no definite or indirect leak.
valgrind:
	@deploy/install-deps.sh valgrind
	@$(MAKE) --no-print-directory all unit
	@tests/valgrind.sh $(BUILD)

run: deps all
	@tests/lib/run-local.sh $(BIN)/modegate

bench: deps all
	@tests/bench/run.sh $(BIN)/modegate

# A scripted doctor's conversation against `make run` (another terminal).
.PHONY: demo
demo:
	@deploy/demo.sh

# Crash test: kill -9 under load, >= 20 times, then account for every
# message (tests/crash/crash.py; about 75 s; figures in README).
.PHONY: test-crash
test-crash: all
	@MODEGATE_BIN=$(CURDIR)/$(BIN)/modegate python3 tests/crash/crash.py

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary, built to find its
# rules, migrations and queries under $(PREFIX)/share/modegate.
SHARE = $(PREFIX)/share/modegate
install:
	@$(MAKE) --no-print-directory BUILD=build/install BIN=build/install/bin \
	    RULES_DIR=$(SHARE) all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(SHARE)/mode \
	    $(DESTDIR)$(SHARE)/policy $(DESTDIR)$(SHARE)/sql/queries \
	    $(DESTDIR)$(SHARE)/sql/functions
	install -m 755 build/install/bin/modegate $(DESTDIR)$(PREFIX)/bin/
	install -m 644 mode/*.json mode/*.md mode/*.model $(DESTDIR)$(SHARE)/mode/
	install -m 644 policy/*.json $(DESTDIR)$(SHARE)/policy/
	install -m 644 sql/*.sql $(DESTDIR)$(SHARE)/sql/
	install -m 644 sql/functions/*.sql $(DESTDIR)$(SHARE)/sql/functions/
	install -m 644 sql/queries/*.sql $(DESTDIR)$(SHARE)/sql/queries/
	install -d $(DESTDIR)$(SHARE)/prometheus
	install -m 644 deploy/prometheus/alerts.yml $(DESTDIR)$(SHARE)/prometheus/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 deploy/modegate.1 $(DESTDIR)$(PREFIX)/share/man/man1/

clean:
	rm -rf $(BUILD) $(BIN) build/install

fmt-check:
	@clang-format --version >/dev/null && echo "clang-format present"

# Intent detection throughput (the lead wires it into `make bench`).
$(BUILD)/bench/intent_bench: tests/bench/intent_bench.c $(LIBCORE)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIBCORE) $(LDFLAGS) -lm

# The claim with 300,000 unanswered messages (tests/bench/claim_bench.sh).
.PHONY: bench-claim
bench-claim: all
	@tests/bench/claim_bench.sh $(BIN)/modegate

# Intents (rules + model) and guard checks (rules + model, every claim) on
# one core (CPU time): over tests/cases (the sets the figures were first
# measured on) and over a train author's messages and replies (longer,
# nearer production).
.PHONY: bench-intent
bench-intent: $(BUILD)/bench/intent_bench $(BUILD)/rules/mode/intents.flat \
    $(BUILD)/rules/mode/claims.flat
	@$(BUILD)/bench/intent_bench $(BUILD)/rules/mode/intents.flat \
	    mode/intent.model tests/cases/intent.tsv \
	    $(BUILD)/rules/mode/claims.flat mode/guard.model \
	    tests/cases/guard.tsv
	@$(BUILD)/bench/intent_bench $(BUILD)/rules/mode/intents.flat \
	    mode/intent.model tests/corpus/messages/a1.tsv \
	    $(BUILD)/rules/mode/claims.flat mode/guard.model \
	    tests/corpus/replies/a1.tsv

# Learn mode/intent.model and mode/guard.model from tests/corpus (the
# train authors; the dev authors calibrate). Deterministic.
.PHONY: train
train: $(BIN)/modegate
	$(BIN)/modegate train --corpus tests/corpus

# Fuzzing (libFuzzer, clang): every harness in tests/fuzz/ against its seed
# corpus in tests/fuzz/corpus/<target>/ for FUZZ_SECONDS each; any crash
# fails. Objects are built with the fuzz flags under build/fuzz/.
FUZZ_SECONDS ?= 60
FUZZ_CC	 ?= clang
FUZZ_DIR  = build/fuzz
FUZZ_SAN  = -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer \
	   $(WARN) -Wno-format-nonliteral -Wno-string-concatenation \
	   -DMG_RULES_DIR='"$(RULES_DIR)"' $(FUZZ_SAN) \
	   -fsanitize=fuzzer-no-link
FUZZ_TARGETS = $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BINS = $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)

$(FUZZ_DIR)/%.o: %.c $(wildcard mode/*.h policy/*.h src/*.h src/*/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Isrc $(PKG_CFLAGS) -c $< -o $@

$(FUZZ_DIR)/libfuzzcore.a: $(CORE_SRCS:%.c=$(FUZZ_DIR)/%.o)
	rm -f $@ && ar rcs $@ $^
$(FUZZ_DIR)/libfuzzshell.a: $(SHELL_SRCS:%.c=$(FUZZ_DIR)/%.o)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_main.h \
    $(FUZZ_DIR)/libfuzzshell.a $(FUZZ_DIR)/libfuzzcore.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -DMG_LIBFUZZER -fsanitize=fuzzer \
	    -Isrc $(PKG_CFLAGS) -o $@ $< $(FUZZ_DIR)/libfuzzshell.a \
	    $(FUZZ_DIR)/libfuzzcore.a $(PKG_LIBS) -lm

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: fuzz-build
	@tests/fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The same harnesses as plain drivers (no libFuzzer; any compiler, e.g. gcc
# or afl-gcc): each replays its seed corpus once.
REPLAY_DIR = $(BUILD)/fuzz-replay
$(REPLAY_DIR)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_main.h $(LIBSHELL) \
    $(LIBCORE) $(RULES_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc $(PKG_CFLAGS) -o $@ $< $(LIBSHELL) $(LIBCORE) \
	    $(LDFLAGS) $(PKG_LIBS) -lm

.PHONY: fuzz-replay
fuzz-replay: $(FUZZ_TARGETS:%=$(REPLAY_DIR)/fuzz_%)
	@for t in $(FUZZ_TARGETS); do \
	    $(REPLAY_DIR)/fuzz_$$t tests/fuzz/corpus/$$t/* || exit 1; \
	    echo "fuzz-replay: $$t ok"; done
