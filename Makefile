# SPDX-License-Identifier: GPL-2.0
#
# hlock: hierarchical locks for userspace through /dev/hlock.
#
#   make              the module for the running kernel (KDIR) and libhlock
#   make lib          lib/libhlock.a and lib/libhlock.so
#   make sqlite       the SQLite VFS "hlock" (lib/sqlite/): the loadable
#                     extension lib/libhlock_sqlite.so and the static
#                     library lib/libhlock_sqlite.a; libhlock_sqlite(3)
#   make wheel        the Python package for pip, a wheel and an sdist,
#                     in build/deb/ (make deb builds them too)
#   make ko KREL=...  the test build of the module for one installed kernel,
#                     in build/KREL/ (hlock.ko with the stall points of
#                     kmod/hlock_test.h, and hlock_torture.ko beside it)
#   make ko-debug     the module for the debug kernel, in build/debug/
#   make debug-kernel the 6.12 debug kernel (lockdep, KASAN, UBSAN,
#                     kmemleak), built once and cached; see scripts/debug-kernel
#   make selftests    the static kselftest binaries, in build/selftests/
#   make unit         the grant logic's userspace unit tests (ASan, UBSan),
#                     and hlock-deadlockd's search (tools/test/)
#   make check        everything above on 6.1, 6.12, 6.12 PREEMPT_RT and
#                     the debug kernel, in VMs
#   make demo         processes sharing hierarchical locks, in a VM
#   make checkpatch   checkpatch.pl on kmod/ and uapi/
#   make bench        hlock against flock, OFD, semop...: tables, in 2 VMs
#   make torture      hlock_torture.ko on 6.12, 6.1 and the debug kernel:
#                     invariants checked, rates against rwsem, percpu-rwsem
#                     and mutex; see scripts/torture
#   make tools        the static tools the VMs run, in build/tools/
#   make tools-shared the tools make install installs, linked with
#                     lib/libhlock.so, in build/tools-shared/
#   make install      everything under DESTDIR/PREFIX
#   make deb          the Debian packages hlock-dkms, libhlock1,
#                     libhlock-dev, hlock-tools, python3-hlock and
#                     libsqlite3-mod-hlock, and the Python wheel, in
#                     build/deb/, checked by lintian; see scripts/deb
#                     (scripts/vm-deb tests them)
#   make man-version  write lib/VERSION into the man pages
#   make dkms-install the module through the system's DKMS, for KREL (a
#                     list; default the running kernel), as root; see
#                     scripts/dkms

KDIR	?= /lib/modules/$(shell uname -r)/build
TOP	:= $(CURDIR)
BUILD	:= $(TOP)/build

CC	?= gcc
CFLAGS	?= -O2 -g
WFLAGS	:= -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
LIB_CFLAGS := $(CFLAGS) $(WFLAGS) -fPIC -fvisibility=default -Ilib -Iuapi

LIB_SRCS := lib/hlock.c
LIB_OBJS := $(patsubst lib/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
LIB_SOVER := 1
# hlock's version, written once: lib/VERSION (the tools' --version, the
# library's file name, libhlock.pc and the man pages).
HLOCK_VERSION := $(shell cat $(TOP)/lib/VERSION)
TOOL_DEFS := -DHLOCK_VERSION='"$(HLOCK_VERSION)"'

.PHONY: all module lib sqlite wheel ko selftests unit check demo deps clean checkpatch tools \
	tools-shared install bench ko-debug debug-kernel torture deb dkms-install \
	man-version

all: module lib sqlite

module:
	$(MAKE) -C $(KDIR) M=$(TOP) modules

lib: lib/libhlock.a lib/libhlock.so

$(BUILD)/lib/%.o: lib/%.c lib/hlock.h uapi/linux/hlock.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIB_CFLAGS) -c $< -o $@

lib/libhlock.a: $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

lib/libhlock.so: $(LIB_OBJS) lib/libhlock.map
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libhlock.so.$(LIB_SOVER) \
		-Wl,-z,defs -Wl,--version-script=lib/libhlock.map \
		-o $@ $(LIB_OBJS)

# The SQLite VFS, from one source built twice: as a loadable extension
# (SQLite's routines reached through the pointer it is given, only the
# entry point exported, libhlock.so.1 needed), and with SQLITE_CORE for
# the static library that C programs link with -lhlock -lsqlite3.
# Debian's libsqlite3-dev has the headers (scripts/install-deps).
SQLITE_DEPS := lib/sqlite/hlock_sqlite.c lib/sqlite/hlock_sqlite.h \
	lib/hlock.h uapi/linux/hlock.h
sqlite: lib/libhlock_sqlite.so lib/libhlock_sqlite.a

$(BUILD)/sqlite/ext.o: $(SQLITE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIB_CFLAGS) -fvisibility=hidden -c $< -o $@

$(BUILD)/sqlite/core.o: $(SQLITE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(LIB_CFLAGS) -DSQLITE_CORE -c $< -o $@

lib/libhlock_sqlite.so: $(BUILD)/sqlite/ext.o lib/libhlock.so
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-z,defs -o $@ $< \
		-Llib -lhlock

lib/libhlock_sqlite.a: $(BUILD)/sqlite/core.o
	rm -f $@
	$(AR) rcs $@ $^

# The Python package as a wheel and an sdist (lib/python/pyproject.toml,
# built by its own standard-library backend, lib/python/hlock_build.py),
# beside the Debian packages.
wheel:
	mkdir -p $(BUILD)/deb
	cd lib/python && /usr/bin/python3 -B -c \
		'import sys, hlock_build as b; print(b.build_wheel(sys.argv[1])); print(b.build_sdist(sys.argv[1]))' \
		$(BUILD)/deb

# Build the module for one Debian kernel (KREL, a /lib/modules name) in a
# private copy of the sources, so 6.1 and 6.12 objects never mix.  KO_KDIR
# builds against another kernel tree instead, into build/KREL/.
KO_KDIR	?= /lib/modules/$(KREL)/build
ko:
	@test -n "$(KREL)" || { echo "make ko: set KREL" >&2; exit 2; }
	@mkdir -p $(BUILD)/$(KREL)/src
	@cp -a Kbuild kmod uapi $(BUILD)/$(KREL)/src/
	$(MAKE) -C $(KO_KDIR) M=$(BUILD)/$(KREL)/src W=1 \
		KCFLAGS=-Werror CONFIG_HLOCK_TEST=y modules
	cp $(BUILD)/$(KREL)/src/kmod/hlock.ko $(BUILD)/$(KREL)/hlock.ko
	cp $(BUILD)/$(KREL)/src/kmod/hlock_torture.ko \
		$(BUILD)/$(KREL)/hlock_torture.ko

# The debug kernel is built on first use (about 20 minutes) and cached
# outside the checkout; its module goes to build/debug/.
debug-kernel:
	scripts/debug-kernel

ko-debug:
	@kdir=$$(scripts/debug-kernel) && \
		$(MAKE) --no-print-directory ko KREL=debug KO_KDIR="$$kdir"

deps:
	scripts/install-deps

# Static, so that they run in the VM's initramfs as they are.  The tools
# that use io_uring (lib/hlock_uring.h) link liburing.a too.  lshlock uses
# util-linux's libsmartcols, of which Debian 12 ships no static archive: it
# links libsmartcols.so (and the C library) dynamically, and scripts/vm-run
# copies those libraries into the VM.
TOOLS := $(patsubst %,$(BUILD)/tools/%,hlock-demo hlock lshlock hlock-bench \
	hlock-cluster-bench hlock-sqlite-bench \
	hlock-uring-demo hlock-deadlockd)
URING_TOOLS := $(patsubst %,$(BUILD)/tools/%,hlock-bench hlock-uring-demo)
tools: $(TOOLS)

# Asked of pkg-config only when lshlock is built (deferred, =), and
# quietly: before scripts/install-deps has installed libsmartcols-dev,
# `make demo` and the other targets must not print pkg-config's complaint.
SMARTCOLS_CFLAGS = $(shell pkg-config --cflags smartcols 2>/dev/null)
SMARTCOLS_LIBS = $(shell pkg-config --libs smartcols 2>/dev/null || \
	echo -lsmartcols)

TOOL_LDFLAGS := -static
$(URING_TOOLS): TOOL_LIBS := -luring
$(URING_TOOLS): lib/hlock_uring.h
$(BUILD)/tools/lshlock: TOOL_LDFLAGS :=
$(BUILD)/tools/lshlock: TOOL_CFLAGS = $(SMARTCOLS_CFLAGS)
$(BUILD)/tools/lshlock: TOOL_LIBS = $(SMARTCOLS_LIBS)
# The SQLite benchmark links Debian's libsqlite3 dynamically, as SQLite's
# users do (vm-run copies it), and the VFS's static library.
# The daemon of deadlocks across nodes talks to corosync through libcpg,
# dynamically, as dlm_controld does (vm-run copies the library).
$(BUILD)/tools/hlock-deadlockd: TOOL_LDFLAGS :=
$(BUILD)/tools/hlock-deadlockd: TOOL_LIBS := -lcpg
$(BUILD)/tools/hlock-sqlite-bench: TOOL_LDFLAGS :=
$(BUILD)/tools/hlock-sqlite-bench: TOOL_CFLAGS := -Ilib/sqlite
$(BUILD)/tools/hlock-sqlite-bench: TOOL_LIBS := lib/libhlock_sqlite.a -lsqlite3
$(BUILD)/tools/hlock-sqlite-bench: lib/libhlock_sqlite.a

$(BUILD)/tools/%: tools/%.c tools/cli_common.h $(LIB_SRCS) lib/hlock.h \
		uapi/linux/hlock.h lib/VERSION
	@mkdir -p $(@D)
	$(CC) $(TOOL_DEFS) $(CFLAGS) $(WFLAGS) $(TOOL_LDFLAGS) $(TOOL_CFLAGS) -Ilib -Iuapi \
		-o $@ $< $(LIB_SRCS) $(TOOL_LIBS)

# The tools as `make install` installs them: linked with lib/libhlock.so,
# so that they need libhlock.so.1 (its soname) and use the library
# installed beside them, and with liburing and libsmartcols dynamically.
# Only the ABI of lib/libhlock.map is theirs to call.
SHARED_TOOLS := $(patsubst %,$(BUILD)/tools-shared/%,hlock lshlock \
	hlock-uring-demo hlock-deadlockd)
tools-shared: $(SHARED_TOOLS)

$(BUILD)/tools-shared/hlock-uring-demo: TOOL_LIBS := -luring
$(BUILD)/tools-shared/hlock-uring-demo: lib/hlock_uring.h
$(BUILD)/tools-shared/hlock-deadlockd: TOOL_LIBS := -lcpg
$(BUILD)/tools-shared/lshlock: TOOL_CFLAGS = $(SMARTCOLS_CFLAGS)
$(BUILD)/tools-shared/lshlock: TOOL_LIBS = $(SMARTCOLS_LIBS)

$(BUILD)/tools-shared/%: tools/%.c tools/cli_common.h lib/hlock.h \
		uapi/linux/hlock.h lib/libhlock.so lib/VERSION
	@mkdir -p $(@D)
	$(CC) $(TOOL_DEFS) $(CPPFLAGS) $(CFLAGS) $(WFLAGS) $(TOOL_CFLAGS) -Ilib -Iuapi \
		$(LDFLAGS) -o $@ $< lib/libhlock.so $(TOOL_LIBS)

selftests: deps lib sqlite tools
	$(MAKE) -C selftests OUTPUT=$(BUILD)/selftests TOP=$(TOP)

unit: $(BUILD)/unit/deadlockd_test
	$(MAKE) -C kmod/test TOP=$(TOP) run
	$(BUILD)/unit/deadlockd_test

# hlock-deadlockd's search on made-up snapshots (no corosync needed).
$(BUILD)/unit/deadlockd_test: tools/test/deadlockd_test.c tools/hlock-deadlockd.c \
		tools/cli_common.h $(LIB_SRCS) lib/hlock.h uapi/linux/hlock.h lib/VERSION
	@mkdir -p $(@D)
	$(CC) $(TOOL_DEFS) -O1 -g $(WFLAGS) -fsanitize=address,undefined \
		-fno-sanitize-recover=all -Ilib -Iuapi -o $@ $< $(LIB_SRCS) -lcpg

check: deps
	scripts/check

demo: deps
	scripts/demo

checkpatch: deps
	scripts/checkpatch

# hlock next to the kernel's other locks (tools/hlock-bench): one VM run
# for single operations, handoff, a writer behind readers and the
# statistics' cost, one with parallel vCPUs for scaling; see scripts/bench.
bench: deps
	scripts/bench

# The in-kernel API under torture, in a VM per kernel; scripts/torture
# --broken proves its checks fail on a lock manager that ignores conflicts.
torture: deps
	scripts/torture

# Module (for KDIR, when it has headers), library, headers, pkg-config
# file, tools and man pages under DESTDIR/PREFIX; see scripts/install.
PREFIX	?= /usr/local
install: lib sqlite tools-shared
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" KDIR="$(KDIR)" scripts/install

# Packages of the Debian layout (scripts/debian/), built from a copy of
# the tree: see scripts/deb.
deb: deps
	scripts/deb

# Stage the module's sources in /usr/src/hlock-VERSION and dkms add, build
# and install them, as the hlock-dkms package does.
dkms-install:
	scripts/dkms $(or $(KREL),$(shell uname -r))

# The man pages say the version of lib/VERSION on their .TH lines and in
# their --version examples; after changing lib/VERSION, this writes it
# there (scripts/doc-check fails until then).
man-version:
	sed -i -E -e '/^\.TH /s/"hlock [^"]*"/"hlock $(HLOCK_VERSION)"/' \
		-e 's/from hlock [^ ]+ \(ABI/from hlock $(HLOCK_VERSION) (ABI/' \
		tools/hlock.1 tools/hlock-uring-demo.1 lib/libhlock.3 \
		lib/libhlock_sqlite.3 kmod/hlock.4 tools/lshlock.8 \
		tools/hlock-deadlockd.8

clean:
	rm -rf $(BUILD) lib/libhlock.a lib/libhlock.so lib/libhlock_sqlite.a \
		lib/libhlock_sqlite.so
	$(MAKE) -C $(KDIR) M=$(TOP) clean 2>/dev/null || true
