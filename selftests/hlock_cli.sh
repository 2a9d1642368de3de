#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# hlock_cli.sh: tests of the hlock(1) and lshlock(8) command-line tools,
# for busybox ash in the VM:
#
#   gcc -O2 -static -o build/selftests/json_check selftests/json_check.c
#   scripts/vm-run --extra build/tools/hlock --extra build/tools/lshlock \
#	--extra build/selftests/json_check --extra /usr/bin/flock \
#	--extra /usr/bin/lslocks selftests/hlock_cli.sh
#
# hlock, lshlock and json_check (static) are taken from the directory of
# this script, and util-linux's flock and lslocks, if they are there
# (--extra /usr/bin/flock, --extra /usr/bin/lslocks), for the tests
# comparing hlock with flock(1) (skipped without flock) and lshlock with
# lslocks(8) (skipped without both).  Prints kselftest-style TAP and a
# "# Totals:" line; exits 0 if every test passed, else 1; without
# /dev/hlock or one of the three programs, skips every test and exits 4
# (KSFT_SKIP).
#
# Every test uses resource names of its own (cli<N>/...), starts what it
# needs in the background and kills and reaps it afterwards.  Waits are
# poll loops, never fixed sleeps; no timing is asserted.

cd "$(dirname "$0")" || exit 1
# HLOCK_CLI_BIN: the directory of hlock, lshlock and hlock-uring-demo, when
# not this script's (/usr/bin for the packaged tools, scripts/vm-deb).
B=${HLOCK_CLI_BIN:-.}
H=$B/hlock
L=$B/lshlock
U=$B/hlock-uring-demo
J=./json_check
TMP=${TMPDIR:-/tmp}/hlock_cli.$$
mkdir -p "$TMP" || exit 1
ERR=$TMP/err
OUT=$TMP/out
LOCK_KEYS=command,pid,resource,mode,state,wait,held,blocker,why
# The shell's own messages (such as "Terminated" for a background job
# killed on purpose) would break the TAP stream: keep them, print them as
# diagnostics at the end.
exec 3>&2 2>"$TMP/sh.err"

NTESTS=42
n=0
pass=0
fail=0
skip=0
BG=

# A diagnostic line.
diag() {
	echo "# $*"
}

# Fail the current test with a message; returns 1 for "|| return".
bad() {
	diag "$*"
	return 1
}

# Start a command in the background; its pid is in $BGPID.
bg() {
	"$@" &
	BGPID=$!
	BG="$BG $BGPID"
}

# Kill and reap what the test left in the background.
cleanup() {
	for p in $BG; do
		kill "$p" 2>/dev/null
	done
	for p in $BG; do
		wait "$p" 2>/dev/null
	done
	BG=
}

# Retry a command, 0.1 s apart, until it succeeds; 1 if it never does.
poll() {
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -ge 150 ] && return 1
		sleep 0.1
	done
	return 0
}

# has PID RESOURCE STATE: the lock table has that request.
has() {
	$L -r -n -o pid,resource,state -p "$1" | grep -qxF "$1 $2 $3"
}

# started STATE RESOURCE COMMAND...: run COMMAND in the background ($BGPID)
# and wait until it has a request in STATE on RESOURCE.
started() {
	st=$1
	res=$2
	shift 2
	bg "$@"
	poll has $BGPID "$res" "$st" || bad "$res never $st"
}

# gone PID RESOURCE: it has none.
gone() {
	! $L -r -n -o pid,resource -p "$1" | grep -qxF "$1 $2"
}

# flat FILE: libsmartcols's JSON on one line, runs of blanks as one space.
flat() {
	tr '\n' ' ' <"$1" | sed 's/  */ /g'
}

# expect_rc WANT GOT WHAT
expect_rc() {
	[ "$2" = "$1" ] || bad "$3: exit status $2, expected $1"
}

run() {
	name=$1
	shift
	if "$@"; then
		rc=0
	else
		rc=1
		[ -s "$ERR" ] && sed 's/^/# stderr: /' "$ERR"
	fi
	cleanup
	: >"$ERR"
	n=$((n + 1))
	if [ $rc = 0 ]; then
		pass=$((pass + 1))
		echo "ok $n $name"
	else
		fail=$((fail + 1))
		echo "not ok $n $name"
	fi
}

# --- hlock -----------------------------------------------------------------

t_exit_status() {
	$H cli1/a true 2>"$ERR"
	expect_rc 0 $? "hlock true" || return 1
	$H cli1/a sh -c 'exit 7' 2>"$ERR"
	expect_rc 7 $? "hlock sh -c 'exit 7'"
}

t_shell_command() {
	# shellcheck disable=SC2016 # $0 is for the shell hlock runs
	out=$(SHELL='' $H cli2/a -c 'echo "$0:hi"; exit 3' 2>"$ERR")
	expect_rc 3 $? "hlock -c 'exit 3'" || return 1
	[ "$out" = "/bin/sh:hi" ] || bad "output '$out'"
}

t_killed_status() {
	$H cli3/a sh -c 'kill -TERM $$' 2>"$ERR"
	expect_rc 143 $? "command killed by SIGTERM"
}

t_root() {
	out=$($H "" -c "$L -r -n -o resource,mode -p \$PPID" 2>"$ERR")
	expect_rc 0 $? "hlock ''" || return 1
	[ "$out" = "(global) X" ] || bad "holds '$out', expected (global) X"
}

t_mode_ix() {
	out=$($H -m ix cli5/m -c "$L -r -n -o resource,mode -p \$PPID" \
	      2>"$ERR")
	expect_rc 0 $? "hlock -m ix" || return 1
	want=$(printf '(global) IX\ncli5 IX\ncli5/m IX')
	[ "$out" = "$want" ] || bad "holds '$out'"
}

t_held_while_running() {
	$H cli6/a -c "$H -n cli6/a true" 2>"$ERR"
	expect_rc 1 $? "hlock -n inside hlock on the same resource"
}

t_conflict_nonblock() {
	bg $H cli7/b sleep 60
	poll has $BGPID cli7/b granted || bad "holder never granted" ||
		return 1
	$H -n cli7/b true 2>"$ERR"
	expect_rc 1 $? "hlock -n on a held X" || return 1
	# Quiet, as flock is, unless -v.
	[ ! -s "$ERR" ] || bad "a message without -v" || return 1
	$H -v -n cli7/b true 2>"$ERR"
	expect_rc 1 $? "hlock -v -n on a held X" || return 1
	grep -q "cli7/b" "$ERR" || bad "no message naming cli7/b"
}

t_conflict_exit_code() {
	bg $H cli8/b sleep 60
	poll has $BGPID cli8/b granted || bad "holder never granted" ||
		return 1
	$H -n -E 42 cli8/b true 2>"$ERR"
	expect_rc 42 $? "hlock -n -E 42"
}

t_timeout() {
	bg $H cli9/b sleep 60
	poll has $BGPID cli9/b granted || bad "holder never granted" ||
		return 1
	$H -v -w 0.3 cli9/b true 2>"$ERR"
	expect_rc 1 $? "hlock -v -w 0.3" || return 1
	grep -q "timed out" "$ERR" || bad "no 'timed out' message"
}

t_shared() {
	bg $H -s cli10/s sleep 60
	poll has $BGPID cli10/s granted || bad "first S never granted" ||
		return 1
	$H -s -n cli10/s true 2>"$ERR"
	expect_rc 0 $? "second hlock -s -n" || return 1
	$H -n cli10/s true 2>"$ERR"
	expect_rc 1 $? "hlock -n (X) against S"
}

t_verbose() {
	$H -v cli11/db/coll true 2>"$ERR"
	expect_rc 0 $? "hlock -v" || return 1
	grep -q "got X on cli11/db/coll after [0-9.]* s, token [1-9][0-9]*$" \
		"$ERR" || bad "no 'got X on ... after ..., token N' line" ||
		return 1
	grep -q "locks: {.*Global: { acquireCount: { w: 1 } }" "$ERR" ||
		bad "no Global IX in the locks line" || return 1
	grep -q "Object: { acquireCount: { W: 1 } }" "$ERR" ||
		bad "no Object X in the locks line"
}

t_verbose_wait() {
	bg $H cli12/b sleep 60
	holder=$BGPID
	poll has $holder cli12/b granted || bad "holder never granted" ||
		return 1
	$H -v cli12/b true 2>"$ERR" &
	waiter=$!
	BG="$BG $waiter"
	poll has $waiter cli12/b waiting || bad "waiter never queued" ||
		return 1
	kill $holder
	wait $waiter
	expect_rc 0 $? "hlock -v after a wait" || return 1
	grep -q "Collection: {.*acquireWaitCount: { W: 1 }.*timeAcquiringMicros: { W: [1-9]" \
		"$ERR" || bad "no wait in the Collection statistics"
}

t_why() {
	bg $H --why 'nightly "backup"' cli35/w sleep 60
	pid=$BGPID
	poll has $pid cli35/w granted || bad "never granted" || return 1
	out=$($L -r -n -o resource,why -p $pid | grep '^cli35/w ')
	[ "$out" = 'cli35/w nightly\x20"backup"' ] ||
		bad "lshlock -r shows '$out'" || return 1
	$L -J -o resource,why -p $pid >"$OUT" 2>"$ERR" ||
		bad "lshlock -J failed" || return 1
	$J --lock-keys resource,why --exact <"$OUT" 2>>"$ERR" ||
		bad "JSON rejected" || return 1
	flat "$OUT" |
		grep -qF '"resource": "cli35/w", "why": "nightly \"backup\"" }' ||
		bad "no why in the JSON" || return 1
	$H --why "$(printf '%064d' 0)" cli35/x true 2>"$ERR"
	expect_rc 64 $? "hlock --why with 64 bytes"
}

t_usage() {
	$H --bogus cli13/x true 2>"$ERR"
	expect_rc 64 $? "hlock --bogus" || return 1
	grep -q "Try 'hlock --help'" "$ERR" || bad "no pointer to --help" ||
		return 1
	for args in "" "cli13/x" "-m foo cli13/x true" "-w abc cli13/x true" \
		    "-E 256 cli13/x true" "cli13/x -c" "cli13/x -c a b"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args 2>/dev/null
		expect_rc 64 $? "hlock $args" || return 1
	done
}

# own_ipc_ns PID: whether PID is in another IPC namespace than this shell.
own_ipc_ns() {
	[ "$(readlink "/proc/$1/ns/ipc")" != "$(readlink /proc/self/ns/ipc)" ]
}

t_cluster() {
	# These VMs have no DLM (but the debug kernel's, built in): nothing
	# is bound, and nothing can be.
	out=$($H --cluster 2>"$ERR")
	expect_rc 0 $? "hlock --cluster" || return 1
	[ -z "$out" ] || bad "hlock --cluster printed '$out'" || return 1
	for args in "--pid 1" "--cluster x" "--cluster --pid" \
		    "--cluster --pid 0" "--cluster --pid -3" "--cluster --pid 1x"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args 2>/dev/null
		expect_rc 64 $? "hlock $args" || return 1
	done
	$H --cluster=a/b 2>"$ERR"
	expect_rc 65 $? "hlock --cluster=a/b" || return 1
	grep -q "invalid lockspace name 'a/b'" "$ERR" ||
		bad "no message naming a/b" || return 1
	$H --cluster="$(printf '%065d' 0)" 2>"$ERR"
	expect_rc 65 $? "hlock --cluster=<65 bytes>" || return 1
	# hlock's own locker is open in this lock space.
	$H --cluster=x 2>"$ERR"
	expect_rc 75 $? "hlock --cluster=x" || return 1
	grep -q "lockers are open in it" "$ERR" ||
		bad "no message saying lockers are open" || return 1
	unshare -i sleep 100 &
	ns=$!
	poll own_ipc_ns $ns || bad "unshare -i failed" || return 1
	$H --cluster=x --pid $ns 2>"$ERR"
	rc=$?
	if [ -d /sys/kernel/dlm ]; then
		# The DLM is built in (the debug kernel): a space no locker
		# uses is bound, and joins the lockspace when first used.
		expect_rc 0 $rc "hlock --cluster=x --pid <another namespace>" ||
			return 1
	else
		expect_rc 69 $rc "hlock --cluster=x --pid <another namespace>" ||
			return 1
		grep -q "DLM is not loaded" "$ERR" ||
			bad "no message saying the DLM is not loaded" || return 1
	fi
	$H --cluster= --pid $ns 2>"$ERR"
	expect_rc 0 $? "hlock --cluster= --pid <another namespace>" || return 1
	kill $ns
	wait $ns 2>/dev/null
	$H --cluster --pid $ns 2>"$ERR"
	expect_rc 65 $? "hlock --cluster --pid <gone>" || return 1
	grep -q "no process $ns" "$ERR" || bad "no message naming the pid"
}

t_bad_path() {
	$H 'a//b' true 2>"$ERR"
	expect_rc 65 $? "hlock a//b" || return 1
	grep -q 'a//b' "$ERR" || bad "no message naming a//b" || return 1
	for p in /x x/ cli14/a/b/c/d/e/f/g/h; do
		$H "$p" true 2>/dev/null
		expect_rc 65 $? "hlock $p" || return 1
	done
}

t_not_found() {
	# flock's EX_UNAVAILABLE, where a shell would exit 127.
	$H cli15/a /nonexistent/command 2>"$ERR"
	expect_rc 69 $? "hlock /nonexistent/command" || return 1
	$H cli15/a no-such-command-here 2>"$ERR"
	expect_rc 69 $? "hlock no-such-command-here" || return 1
	grep -q "no-such-command-here: command not found" "$ERR" ||
		bad "no 'command not found' message"
}

t_not_executable() {
	: >"$TMP/noexec"
	chmod 644 "$TMP/noexec"
	$H cli16/a "$TMP/noexec" 2>"$ERR"
	expect_rc 69 $? "hlock on a file without x"
}

t_forward_signal() {
	# The command traps SIGTERM: 5 if it got it, 143 if only hlock did.
	# shellcheck disable=SC2016 # $1 is for that shell
	bg $H cli17/f sh -c 'trap "exit 5" TERM; : >"$1"
			     while :; do sleep 0.1; done' sh "$TMP/ready17"
	pid=$BGPID
	poll has $pid cli17/f granted || bad "never granted" || return 1
	poll test -e "$TMP/ready17" || bad "the trap was never set" ||
		return 1
	kill -TERM $pid
	wait $pid
	expect_rc 5 $? "hlock after SIGTERM" || return 1
	BG=
	poll gone $pid cli17/f || bad "lock not released"
}

t_interrupt_waiting() {
	started granted cli18/i $H cli18/i sleep 60 || return 1
	holder=$BGPID
	started waiting cli18/i $H cli18/i true || return 1
	waiter=$BGPID
	kill -TERM $waiter
	wait $waiter
	expect_rc 143 $? "waiting hlock after SIGTERM" || return 1
	poll gone $waiter cli18/i || bad "waiter still queued" || return 1
	has $holder cli18/i granted || bad "holder lost its lock"
}

t_lease_renewed() {
	# hlock renews every quarter of the lease: a waiter waits it out.
	started granted cli19/r $H --lease 1 cli19/r sleep 3 \
		2>"$TMP/lease19" || return 1
	holder=$BGPID
	started waiting cli19/r $H cli19/r true || return 1
	waiter=$BGPID
	wait $holder
	expect_rc 0 $? "hlock --lease 1 sleep 3" || return 1
	wait $waiter
	expect_rc 0 $? "the waiter" || return 1
	BG=
	! grep -q "taken over" "$TMP/lease19" || bad "the lease was taken over"
}

t_lease_stopped() {
	# Stopped, hlock renews nothing: a waiter takes the lock over.
	started granted cli20/s $H --lease 0.2 cli20/s sleep 60 \
		2>"$TMP/lease20" || return 1
	holder=$BGPID
	kill -STOP $holder
	$H -w 30 cli20/s true
	rc=$?
	kill -CONT $holder
	expect_rc 0 $rc "hlock -w 30 against a stopped lease holder" ||
		return 1
	poll grep -q "taken over" "$TMP/lease20" ||
		bad "the holder did not tell" || return 1
	for args in "--lease 0" "--lease abc" "--lease -1" "--lease"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args cli20/u true 2>/dev/null
		expect_rc 64 $? "hlock $args" || return 1
	done
}

# --- hlock: what a flock(1) user meets (resources ux<N>/...) -------------
NTESTS=$((NTESTS + 6))

# -E 0 is the exit code of a conflict, never a grant: against a holder,
# -n, -w, -F and -c all exit 0 without running the command, as flock does.
t_conflict_exit_zero() {
	bg $H ux1/b sleep 60
	poll has $BGPID ux1/b granted || bad "holder never granted" ||
		return 1
	ran=$TMP/ran
	rm -f "$ran"
	for args in "-n -E 0" "-w 0.3 -E 0" "-F -n -E 0" "-E 0 -w 0"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args ux1/b touch "$ran" 2>"$ERR"
		expect_rc 0 $? "hlock $args against a holder" || return 1
		[ ! -e "$ran" ] || bad "hlock $args ran the command" || return 1
	done
	$H -n -E 0 ux1/b -c "touch '$ran'" 2>"$ERR"
	expect_rc 0 $? "hlock -n -E 0 -c against a holder" || return 1
	[ ! -e "$ran" ] || bad "hlock -n -E 0 -c ran the command" || return 1
	# Granted, the command runs (and its status is hlock's).
	$H -n -E 0 ux1/free sh -c "touch '$ran'; exit 5" 2>"$ERR"
	expect_rc 5 $? "hlock -n -E 0 without a holder" || return 1
	[ -e "$ran" ] || bad "hlock -n -E 0 did not run the command"
}

# path_says PATH TEXT...: hlock PATH exits 65 and says each TEXT.
path_says() {
	p=$1
	shift
	$H "$p" true 2>"$ERR"
	expect_rc 65 $? "hlock '$p'" || return 1
	for t in "$@"; do
		grep -qF -- "$t" "$ERR" || bad "hlock '$p': no '$t'" || return 1
	done
	[ "$(wc -l <"$ERR")" = 1 ] || bad "hlock '$p': not one line"
}

# Each malformed path says what is wrong, and the fix where there is one.
t_path_messages() {
	long=$(printf '%0256d' 0)
	path_says /ux2/a "starts with '/'" "try 'ux2/a'" || return 1
	path_says ux2/a/ "ends with '/'" "try 'ux2/a'" || return 1
	path_says ux2//a "empty component" "try 'ux2/a'" || return 1
	path_says / "starts with '/'" "the global root" || return 1
	path_says "ux2/$long" "component 2 is 256 bytes" "at most 255" ||
		return 1
	path_says ux2/a/b/c/d/e/f/g/h "9 levels" "at most 8" || return 1
	# The limits themselves are accepted.
	$H "ux2/$(printf '%0255d' 0)" true 2>"$ERR"
	expect_rc 0 $? "hlock with a 255-byte component" || return 1
	$H ux2/a/b/c/d/e/f/g true 2>"$ERR"
	expect_rc 0 $? "hlock with 8 levels" || return 1
	# The <fd> form's unlock explains too.
	$H -u 9 ux2//a 9<>/dev/hlock 2>"$ERR"
	expect_rc 65 $? "hlock -u 9 ux2//a" || return 1
	grep -qF "try 'ux2/a'" "$ERR" || bad "hlock -u: no fix suggested"
}

# -w takes seconds as a decimal number with an optional fraction, up to
# the kernel's range, and nothing else.
t_timeout_strict() {
	for w in inf nan 0x10 1e2 -1 +1 " 1" "1 " "" . 1.5s \
		 99999999999999999999 9223372037 9223372036.9; do
		$H -w "$w" ux3/a true 2>"$ERR"
		expect_rc 64 $? "hlock -w '$w'" || return 1
		grep -qF "invalid timeout '$w'" "$ERR" ||
			bad "hlock -w '$w': no message" || return 1
	done
	$H --lease 1e2 ux3/a true 2>"$ERR"
	expect_rc 64 $? "hlock --lease 1e2" || return 1
	for w in 0 .5 1. 2.25 9223372036; do
		$H -w "$w" ux3/a true 2>"$ERR"
		expect_rc 0 $? "hlock -w '$w'" || return 1
	done
}

# The longest timeout -w takes waits: it is not cut short by the kernel
# adding it to its clock.
t_timeout_max() {
	bg $H ux4/b sleep 60
	poll has $BGPID ux4/b granted || bad "holder never granted" ||
		return 1
	started waiting ux4/b $H -w 9223372036 ux4/b true || return 1
}

# Usage errors are one line and a pointer to --help, as util-linux's.
t_usage_lines() {
	for args in --bogus "-w" "-m foo ux5/a true" "ux5/a"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args 2>"$ERR"
		expect_rc 64 $? "hlock $args" || return 1
		[ "$(wc -l <"$ERR")" = 2 ] ||
			bad "hlock $args: $(wc -l <"$ERR") lines" || return 1
		[ "$(tail -n 1 "$ERR")" = "Try 'hlock --help' for more information." ] ||
			bad "hlock $args: no pointer to --help" || return 1
	done
	[ "$($H --help | tail -n 1)" = "For more details see hlock(1)." ] ||
		bad "hlock --help: no pointer to hlock(1)" || return 1
	[ "$($L --help | tail -n 1)" = "For more details see lshlock(8)." ] ||
		bad "lshlock --help: no pointer to lshlock(8)"
}

# lshlock -o with an empty column name says so.
t_ls_empty_column() {
	for o in , pid, ,pid pid,,mode +,; do
		$L -o "$o" 2>"$ERR" >/dev/null
		expect_rc 1 $? "lshlock -o '$o'" || return 1
		grep -qF "empty column name" "$ERR" ||
			bad "lshlock -o '$o': says '$(cat "$ERR")'" || return 1
	done
}

# --- hlock: flock(1)'s options and the file-descriptor form ----------------
# (resources fl<N>/...)

NTESTS=$((NTESTS + 12))

t_fl_nonblocking() {
	started granted fl1/b $H fl1/b sleep 60 || return 1
	for o in -n --nb --nonblock --nonblocking "-w 0"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $o fl1/b true 2>"$ERR"
		expect_rc 1 $? "hlock $o on a held X" || return 1
		[ ! -s "$ERR" ] || bad "hlock $o: a message without -v" ||
			return 1
	done
	$H --nonblocking -E 3 fl1/b true 2>"$ERR"
	expect_rc 3 $? "hlock --nonblocking -E 3" || return 1
	$H -w 0.2 --conflict-exit-code 4 fl1/b true 2>"$ERR"
	expect_rc 4 $? "hlock -w 0.2 --conflict-exit-code 4" || return 1
	$H --verbose -n fl1/b true 2>"$ERR"
	expect_rc 1 $? "hlock --verbose -n" || return 1
	grep -q "cannot lock fl1/b: a conflicting lock is held" "$ERR" ||
		bad "no message with --verbose"
}

t_fl_shell() {
	printf '#!/bin/sh\necho "myshell $*"\n' >"$TMP/mysh"
	chmod 755 "$TMP/mysh"
	out=$(SHELL=$TMP/mysh $H fl2/a -c 'exit 3' 2>"$ERR")
	expect_rc 0 $? "hlock -c with SHELL=mysh" || return 1
	[ "$out" = "myshell -c exit 3" ] || bad "\$SHELL not run: '$out'" ||
		return 1
	# shellcheck disable=SC2016 # $0 is for the shell hlock runs
	out=$( (unset SHELL; $H fl2/a -c 'echo "$0"') 2>"$ERR")
	expect_rc 0 $? "hlock -c without SHELL" || return 1
	[ "$out" = /bin/sh ] || bad "without \$SHELL ran '$out'"
}

t_fl_command_eq() {
	# shellcheck disable=SC2016 # $0 is for the shell hlock runs
	out=$(SHELL='' $H fl3/a --command='echo "$0:eq"; exit 4' 2>"$ERR")
	expect_rc 4 $? "hlock PATH --command=STRING" || return 1
	[ "$out" = "/bin/sh:eq" ] || bad "output '$out'" || return 1
	$H fl3/a --command 'exit 5' 2>"$ERR"
	expect_rc 5 $? "hlock PATH --command STRING" || return 1
	$H fl3/a --command= 2>"$ERR"
	expect_rc 0 $? "hlock PATH --command="
}

t_fl_no_fork() {
	# The command replaces hlock: its own pid holds the lock.
	out=$($H -F fl4/a -c "$L -r -n -o resource,mode -p \$\$" 2>"$ERR")
	expect_rc 0 $? "hlock -F" || return 1
	echo "$out" | grep -qx "fl4/a X" ||
		bad "the command does not hold fl4/a: '$out'" || return 1
	$H --no-fork fl4/a sh -c 'exit 6' 2>"$ERR"
	expect_rc 6 $? "hlock --no-fork sh -c 'exit 6'" || return 1
	$H -F fl4/a no-such-command-here 2>"$ERR"
	expect_rc 69 $? "hlock -F no-such-command-here" || return 1
	$H -n fl4/a true 2>"$ERR"
	expect_rc 0 $? "fl4/a once the command ended"
}

t_fl_close() {
	# shellcheck disable=SC2016 # $$ is for the shell hlock runs
	out=$($H -o fl5/a -c 'ls -l /proc/$$/fd/' 2>"$ERR")
	expect_rc 0 $? "hlock -o" || return 1
	! echo "$out" | grep -q /dev/hlock ||
		bad "the command inherited the locker" || return 1
	# shellcheck disable=SC2016
	out=$($H --close fl5/a -c 'ls -l /proc/$$/fd/' 2>"$ERR")
	expect_rc 0 $? "hlock --close" || return 1
	! echo "$out" | grep -q /dev/hlock ||
		bad "--close: the command inherited the locker" || return 1
	# shellcheck disable=SC2016
	out=$($H -F fl5/a -c 'ls -l /proc/$$/fd/' 2>"$ERR")
	expect_rc 0 $? "hlock -F" || return 1
	echo "$out" | grep -q /dev/hlock || bad "-F: no locker in the command"
}

t_fl_unavailable() {
	mv /dev/hlock /dev/hlock.away || bad "cannot move /dev/hlock" ||
		return 1
	$H fl6/a true 2>"$ERR"
	rc=$?
	mv /dev/hlock.away /dev/hlock
	expect_rc 66 $rc "hlock without /dev/hlock" || return 1
	grep -q "is the hlock module loaded" "$ERR" || bad "no message"
}

t_fd_form() {
	# flock's pattern: the shell opens a locker, hlock locks on it and
	# exits, and the lock stays until the shell closes the descriptor.
	(
		$H -x 9 fl7/a || exit 10
		$L -r -n -o resource,mode | grep -qx "fl7/a X" || exit 11
		$H -n fl7/a true
		[ $? = 1 ] || exit 12
		$H -u 9 fl7/a || exit 13
		$H -n fl7/a true || exit 14
		$H -s 9 fl7/a || exit 15
		$H -s -n fl7/a true || exit 16
		$H -n fl7/a true
		[ $? = 1 ] || exit 17
	) 9<>/dev/hlock 2>"$ERR"
	expect_rc 0 $? "the fd form in a subshell" || return 1
	$H -n fl7/a true 2>"$ERR"
	expect_rc 0 $? "hlock -n once the subshell closed fd 9"
}

t_fd_form_modes() {
	(
		exec 9<>/dev/hlock
		$H -m ix 9 fl8/db || exit 10
		$H -s 9 fl8/db/c1 || exit 11
		$H -x 9 fl8/db/c2 || exit 12
		$H -x 9 fl8/db/c2 || exit 13
		$L -r -n -o resource,mode | grep '^fl8' | sort >"$OUT"
		$H -v -u 9 fl8/db/c2 || exit 14
		$H -n fl8/db/c2 true
		[ $? = 1 ] || exit 15
		$H --unlock 9 fl8/db/c2 || exit 16
		$H -n fl8/db/c2 true || exit 17
		$H -u 9 fl8/db/c2
		[ $? = 65 ] || exit 18
		exec 9>&-
		$H -n fl8/db true || exit 19
	) 2>"$ERR"
	expect_rc 0 $? "the fd form with exec 9<>/dev/hlock" || return 1
	want=$(printf 'fl8 IX\nfl8/db IX\nfl8/db/c1 S\nfl8/db/c2 X' | sort)
	[ "$(cat "$OUT")" = "$want" ] || bad "held '$(cat "$OUT")'" ||
		return 1
	grep -q "unlocked fl8/db/c2 on 9, acquisitions left: 1" "$ERR" ||
		bad "no -v line for -u" || return 1
	grep -q "cannot unlock fl8/db/c2: not locked on 9" "$ERR" ||
		bad "no message for -u of nothing"
}

t_fd_form_conflict() {
	started granted fl9/b $H fl9/b sleep 60 || return 1
	( $H -n -E 7 9 fl9/b ) 9<>/dev/hlock 2>"$ERR"
	expect_rc 7 $? "hlock -n -E 7 9 on a held X" || return 1
	( $H -w 0.2 9 fl9/b ) 9<>/dev/hlock 2>"$ERR"
	expect_rc 1 $? "hlock -w 0.2 9 on a held X" || return 1
	(
		$H -v --why script 9 fl9/c || exit 10
		$L -r -n -o resource,why | grep -qx "fl9/c script" || exit 11
	) 9<>/dev/hlock 2>"$ERR"
	expect_rc 0 $? "hlock --why in the fd form" || return 1
	grep -q "got X on fl9/c after [0-9.]* s, token [1-9][0-9]*$" "$ERR" ||
		bad "no -v line with a token"
}

t_fd_form_errors() {
	$H -x 9 fl10/a 9>&- 2>"$ERR"
	expect_rc 65 $? "hlock on a closed fd 9" || return 1
	grep -q "9: not an open file descriptor" "$ERR" ||
		bad "no message for a closed fd" || return 1
	$H -x 9 fl10/a 9</dev/null 2>"$ERR"
	expect_rc 65 $? "hlock on /dev/null as fd 9" || return 1
	grep -q "9: not a locker of /dev/hlock" "$ERR" ||
		bad "no message for /dev/null" || return 1
	( $H 9 'fl10//a' ) 9<>/dev/hlock 2>"$ERR"
	expect_rc 65 $? "hlock 9 fl10//a" || return 1
	# A resource named 9 runs a command through -c or with arguments.
	$H 9 -c true 9>&- 2>"$ERR"
	expect_rc 0 $? "hlock 9 -c true" || return 1
	$H 9 true arg 9>&- 2>"$ERR"
	expect_rc 0 $? "hlock 9 true arg"
}

t_fl_usage() {
	for args in "-u fl11/a true" "-F -o fl11/a true" "-c true fl11/a" \
		    "--lease 1 -F fl11/a true" "--lease 1 9 fl11/a" 9 \
		    "fl11/a --command=true x" --nonblocking "-u 9"; do
		# shellcheck disable=SC2086 # split on purpose
		$H $args 9<>/dev/hlock 2>"$ERR"
		expect_rc 64 $? "hlock $args" || return 1
		grep -q "Try 'hlock --help'" "$ERR" ||
			bad "hlock $args: no pointer to --help" || return 1
	done
}


# same WHAT FLOCK-CMD HLOCK-CMD: the two shell commands exit alike.
same() {
	eval "$2" </dev/null >/dev/null 2>>"$ERR"
	a=$?
	eval "$3" </dev/null >/dev/null 2>>"$ERR"
	b=$?
	[ "$a" = "$b" ] || bad "$1: flock exits $a, hlock $b"
}

# The same scenarios through util-linux's flock(1) on a file and hlock on
# a path (flock and FF are used by the commands same() evaluates).
t_fl_vs_flock() {
	flock=./flock
	FF=$TMP/flock12
	: >"$FF"
	: >"$TMP/noexec12"
	chmod 644 "$TMP/noexec12"
	# shellcheck disable=SC2016 # same() evaluates them
	{
	same "a command" '$flock $FF true' '$H fl12/a true' &&
	same "its status" '$flock $FF sh -c "exit 7"' \
		'$H fl12/a sh -c "exit 7"' &&
	same "-c" '$flock $FF -c "exit 3"' '$H fl12/a -c "exit 3"' &&
	same "--command" '$flock $FF --command "exit 3"' \
		'$H fl12/a --command "exit 3"' &&
	same "a signal" '$flock $FF sh -c "kill -TERM \$\$"' \
		'$H fl12/a sh -c "kill -TERM \$\$"' &&
	same "not found" '$flock $FF no-such-command-here' \
		'$H fl12/a no-such-command-here' &&
	same "not executable" '$flock $FF $TMP/noexec12' \
		'$H fl12/a $TMP/noexec12' &&
	same "-F" '$flock -F $FF sh -c "exit 6"' \
		'$H -F fl12/a sh -c "exit 6"' &&
	same "-o" '$flock -o $FF true' '$H -o fl12/a true' &&
	same "--verbose" '$flock --verbose $FF true' \
		'$H --verbose fl12/a true' &&
	same "no operand" '$flock' '$H' &&
	same "-c without its argument" '$flock $FF -c' '$H fl12/a -c' &&
	same "-c with two" '$flock $FF -c a b' '$H fl12/a -c a b' &&
	same "a closed fd" '$flock -x 9 9>&-' '$H -x 9 fl12/a 9>&-' &&
	same "fd form, -u" \
		'( $flock -x 9 && ! $flock -n $FF true && $flock -u 9 &&
		   $flock -n $FF true ) 9<$FF' \
		'( $H -x 9 fl12/a && ! $H -n fl12/a true && $H -u 9 fl12/a &&
		   $H -n fl12/a true ) 9<>/dev/hlock'
	} || return 1
	for o in --bogus "-E 256" "-w abc" "-F -o" -E; do
		same "$o" "\$flock $o \$FF true" "\$H $o fl12/a true" ||
			return 1
	done

	# Conflicts, with an exclusive holder of each that ends on demand.
	# shellcheck disable=SC2016 # $1 is for that shell
	bg $flock -o "$FF" sh -c 'until [ -e "$1" ]; do sleep 0.1; done' \
		sh "$TMP/stop12"
	fholder=$BGPID
	# shellcheck disable=SC2016
	bg $H fl12/a sh -c 'until [ -e "$1" ]; do sleep 0.1; done' \
		sh "$TMP/stop12"
	poll has $BGPID fl12/a granted || bad "hlock never granted" ||
		return 1
	# shellcheck disable=SC2016
	poll sh -c '! "$1" -n "$2" true' sh $flock "$FF" ||
		bad "flock never granted" || return 1
	for o in -n --nb --nonblocking "-w 0" "-w 0.2" "-n -E 42" \
		 "--conflict-exit-code 5 -n" "-s -n"; do
		same "$o on a held lock" "\$flock $o \$FF true" \
			"\$H $o fl12/a true" || return 1
	done
	# shellcheck disable=SC2016
	same "fd form on a held lock" '( $flock -n -E 9 9 ) 9<$FF' \
		'( $H -n -E 9 9 fl12/a ) 9<>/dev/hlock' || return 1
	: >"$TMP/stop12"
	wait $fholder
	expect_rc 0 $? "the flock holder"
}

# run, or skip when util-linux's flock is not there (--extra /usr/bin/flock).
run_with_flock() {
	if [ -x ./flock ]; then
		run "$@"
	else
		n=$((n + 1))
		skip=$((skip + 1))
		echo "ok $n $1 # SKIP no ./flock"
	fi
}

# --- lshlock ---------------------------------------------------------------

t_ls_holder() {
	bg $H -s cli19/c sleep 60
	pid=$BGPID
	poll has $pid cli19/c granted || bad "never listed" || return 1
	line=$($L -r -n -o command,pid,resource,mode,state,wait,blocker \
	       -p $pid | grep " cli19/c ")
	[ "$line" = "hlock $pid cli19/c S granted - -" ] ||
		bad "listed as '$line'" || return 1
	# The intents on the ancestors are there too.
	# shellcheck disable=SC2015 # bad only ever returns 1
	has $pid cli19 granted && has $pid "(global)" granted ||
		bad "no intents listed"
}

t_ls_waiter() {
	bg $H cli20/w sleep 60
	holder=$BGPID
	poll has $holder cli20/w granted || bad "holder never granted" ||
		return 1
	bg $H -s cli20/w true
	waiter=$BGPID
	poll has $waiter cli20/w waiting || bad "waiter never listed" ||
		return 1
	line=$($L -r -n -o pid,resource,mode,state,held,blocker -p $waiter |
	       grep " cli20/w ")
	[ "$line" = "$waiter cli20/w S waiting - $holder" ] ||
		bad "listed as '$line'"
}

t_ls_blocking() {
	bg $H cli41/b sleep 60
	holder=$BGPID
	poll has $holder cli41/b granted || bad "holder never granted" ||
		return 1
	line=$($L -r -n -o resource,state,blocking -p $holder | grep "^cli41/b ")
	[ "$line" = "cli41/b granted no" ] || bad "alone: '$line'" || return 1
	bg $H -s cli41/b true
	waiter=$BGPID
	poll has $waiter cli41/b waiting || bad "waiter never listed" ||
		return 1
	line=$($L -r -n -o resource,state,blocking -p $holder | grep "^cli41/b ")
	[ "$line" = "cli41/b granted yes" ] || bad "blocking: '$line'" ||
		return 1
	line=$($L -r -n -o resource,state,blocking -p $waiter | grep "^cli41/b ")
	[ "$line" = "cli41/b waiting -" ] || bad "waiter: '$line'" || return 1
	# The root's intents block nobody.
	line=$($L -r -n -o resource,blocking -p $holder | grep "^(global) ")
	[ "$line" = "(global) no" ] || bad "root: '$line'"
}

t_ls_json() {
	bg $H cli21/j sleep 60
	holder=$BGPID
	poll has $holder cli21/j granted || bad "holder never granted" ||
		return 1
	bg $H cli21/j true
	poll has $BGPID cli21/j waiting || bad "waiter never listed" ||
		return 1
	$L -J >"$OUT" 2>"$ERR" || bad "lshlock -J failed" || return 1
	$J --lock-keys $LOCK_KEYS --exact --min-locks 6 <"$OUT" 2>>"$ERR" ||
		bad "lshlock -J output rejected" || return 1
	# Typed: numbers, null for what the table shows as -, an array.
	flat "$OUT" >"$TMP/flat"
	grep -q "{ \"command\": \"hlock\", \"pid\": $holder, \"resource\": \"cli21/j\", \"mode\": \"X\", \"state\": \"granted\", \"wait\": null, \"held\": [0-9]*, \"blocker\": \[\], \"why\": null }" \
		"$TMP/flat" || bad "no record of the holder" || return 1
	grep -q "\"resource\": \"cli21/j\", \"mode\": \"X\", \"state\": \"waiting\", \"wait\": [0-9]*, \"held\": null, \"blocker\": \[$holder\], \"why\": null }" \
		"$TMP/flat" || bad "no record of the waiter" || return 1
	# The root resource, whose path is empty, is null.
	flat "$OUT" | grep -q "\"pid\": $holder, \"resource\": null, \"mode\": \"IX\"" ||
		bad "no record of the holder's IX on the root"
}

t_ls_json_columns() {
	bg $H cli22/j sleep 60
	poll has $BGPID cli22/j granted || bad "never granted" || return 1
	$L -J -o PID,resource >"$OUT" 2>"$ERR" || bad "lshlock failed" ||
		return 1
	$J --lock-keys pid,resource --exact --min-locks 3 <"$OUT" \
		2>>"$ERR" || bad "lshlock -J -o output rejected"
}

t_ls_json_escape() {
	res=$(printf 'cli23/q"\\\t\377x')
	bg $H -s "$res" sleep 60
	pid=$BGPID
	poll has $pid cli23 granted || bad "never granted" || return 1
	poll has $pid 'cli23/q"\x5c\x09\xffx' granted ||
		bad "raw output not escaped" || return 1
	$L -J -p $pid >"$OUT" 2>"$ERR" || bad "lshlock failed" || return 1
	$J --lock-keys $LOCK_KEYS <"$OUT" 2>>"$ERR" ||
		bad "escaped JSON rejected" || return 1
	# libsmartcols escapes the quote, the backslash and the tab; the byte
	# that is not UTF-8 is its Latin-1 character, U+00FF.
	grep -qF "\"resource\": \"cli23/q\\\"\\\\\\t$(printf '\303\277')x\"" "$OUT" ||
		bad "resource not escaped as expected"
}

t_ls_noheadings() {
	bg $H cli24/n sleep 60
	poll has $BGPID cli24/n granted || bad "never granted" || return 1
	$L >"$OUT" 2>"$ERR" || bad "lshlock failed" || return 1
	[ "$(head -n 1 "$OUT" | tr -s ' ')" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY" ] ||
		bad "header '$(head -n 1 "$OUT")'" || return 1
	$L -n >"$OUT" 2>"$ERR" || bad "lshlock -n failed" || return 1
	[ -s "$OUT" ] || bad "lshlock -n printed nothing" || return 1
	! grep -q '^COMMAND' "$OUT" || bad "lshlock -n printed a header"
}

t_ls_output() {
	bg $H cli25/o sleep 60
	pid=$BGPID
	poll has $pid cli25/o granted || bad "never granted" || return 1
	$L -o PID,resource >"$OUT" 2>"$ERR" || bad "lshlock failed" ||
		return 1
	[ "$(head -n 1 "$OUT" | awk '{ print $1 "," $2 "," NF }')" = \
	  "PID,RESOURCE,2" ] || bad "header '$(head -n 1 "$OUT")'" ||
		return 1
	awk 'NF != 2 { exit 1 }' "$OUT" || bad "rows without 2 columns" ||
		return 1
	grep -q "^ *$pid cli25/o$" "$OUT" || bad "no row of the holder" ||
		return 1
	# +LIST appends to the default columns, which leave TOKEN out.
	[ "$($L -r -o +pid -p $pid | head -n 1)" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY" ] ||
		bad "-o +pid: '$($L -r -o +pid | head -n 1)'" || return 1
	[ "$($L -r -o +token -p $pid | head -n 1)" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY TOKEN" ] ||
		bad "-o +token: '$($L -r -o +token | head -n 1)'" || return 1
	[ "$($L -r --output-all -p $pid | head -n 1)" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY TOKEN BLOCKING NODEMODE REMOTE" ] ||
		bad "--output-all: '$($L -r --output-all | head -n 1)'" ||
		return 1
	$L -r -n -o resource,token -p $pid | grep -qx 'cli25/o [1-9][0-9]*' ||
		bad "no token of the holder" || return 1
	# Not a cluster lock space: no DLM mode, nobody remote.
	$L -r -n -o resource,nodemode,remote -p $pid | grep -qx 'cli25/o - -' ||
		bad "NODEMODE and REMOTE outside a cluster: '$($L -r -n -o resource,nodemode,remote -p $pid)'"
}

t_ls_pid() {
	bg $H cli26/p1 sleep 60
	a=$BGPID
	bg $H cli26/p2 sleep 60
	b=$BGPID
	poll has $a cli26/p1 granted && poll has $b cli26/p2 granted ||
		bad "never granted" || return 1
	[ "$($L -r -n -o pid -p $a | sort -u)" = "$a" ] ||
		bad "-p $a lists other pids" || return 1
	$L -r -n -o resource -p $a | grep -qx cli26/p1 ||
		bad "-p $a misses cli26/p1" || return 1
	! $L -r -n -o resource -p $a | grep -q cli26/p2 ||
		bad "-p $a lists cli26/p2"
}

t_ls_raw() {
	bg $H cli27/r sleep 60
	pid=$BGPID
	poll has $pid cli27/r granted || bad "never granted" || return 1
	$L -r -o command,pid,resource,state,held -p $pid >"$OUT" 2>"$ERR" ||
		bad "lshlock -r failed" || return 1
	[ "$(head -n 1 "$OUT")" = "COMMAND PID RESOURCE STATE HELD" ] ||
		bad "header '$(head -n 1 "$OUT")'" || return 1
	grep -qx "hlock $pid cli27/r granted [0-9][0-9]*" "$OUT" ||
		bad "no raw row of the holder"
}

t_ls_list_columns() {
	$L -H >"$OUT" 2>"$ERR" || bad "lshlock -H failed" || return 1
	for c in COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY TOKEN \
		 BLOCKING NODEMODE REMOTE; do
		grep -q "^$c " "$OUT" || bad "no column $c" || return 1
	done
}

t_ls_stats_json() {
	$L --stats -J >"$OUT" 2>"$ERR" || bad "lshlock --stats -J failed" ||
		return 1
	$J --top-keys concurrentTransactions,Global,Database,Collection,Object,hlock \
		<"$OUT" 2>>"$ERR" || bad "statistics JSON rejected" || return 1
	grep -q '"deadlocks": [0-9]*, "takeovers": [0-9]*, "yields": [0-9]*}' \
		"$OUT" || bad "no takeovers and yields in the JSON" || return 1
	grep -q '"Global": {"acquireCount": {"r": [1-9][0-9]*, "w": [1-9][0-9]*' \
		"$OUT" || bad "no r and w counts at the Global level"
}

t_ls_stats_table() {
	$L --stats >"$OUT" 2>"$ERR" || bad "lshlock --stats failed" ||
		return 1
	head -n 1 "$OUT" | grep -q '^LEVEL  *MODE  *ACQUIRE  *WAITS  *WAIT-TIME$' ||
		bad "header '$(head -n 1 "$OUT")'" || return 1
	grep -q '^Collection  *X  *[1-9]' "$OUT" ||
		bad "no Collection X row" || return 1
	grep -q '^timeouts: [1-9][0-9]*, interrupts: [0-9]*, cancels: [0-9]*, deadlocks: [0-9]*, takeovers: [0-9]*, yields: [0-9]*$' \
		"$OUT" || bad "no timeouts line (with the timeouts so far)"
}

t_ls_usage() {
	# As lslocks: usage errors exit 1, with a pointer to --help.
	for args in --bogus "-o nosuch" "-o ''" "-p abc" "-p 0" extra \
		    "--stats -p 1" "--stats -o pid" "--stats --output-all" \
		    "--stats -i" "--stats -u" "-r -J"; do
		# shellcheck disable=SC2086 # split on purpose
		eval "$L $args" 2>"$ERR" >/dev/null
		expect_rc 1 $? "lshlock $args" || return 1
	done
	grep -q "Try 'lshlock --help'" "$ERR" || bad "no pointer to --help"
}

t_ls_conflicts() {
	# -J and -r exclude each other, in either order, as in lslocks.
	for args in "-J -r" "-r -J" "--json --raw" "--stats -J -r"; do
		# shellcheck disable=SC2086 # split on purpose
		$L $args >"$OUT" 2>"$ERR"
		expect_rc 1 $? "lshlock $args" || return 1
		grep -q "mutually exclusive arguments: --json --raw" "$ERR" ||
			bad "lshlock $args: '$(cat "$ERR")'" || return 1
		[ ! -s "$OUT" ] || bad "lshlock $args printed a table" ||
			return 1
	done
	# -H follows -J: the columns as JSON, typed.
	$L -H -J >"$OUT" 2>"$ERR" || bad "lshlock -H -J failed" || return 1
	$J --top-keys lshlock-columns <"$OUT" 2>>"$ERR" ||
		bad "lshlock -H -J: no JSON" || return 1
	flat "$OUT" | grep -qF '{ "name": "PID", "type": "number",' ||
		bad "lshlock -H -J: no PID of type number"
}

t_ls_truncate() {
	# RESOURCE is only cut to fit a terminal (none here), as lslocks
	# cuts PATH; -u is accepted and changes nothing then.
	long=cli32/0123456789012345678901234567890123456789
	bg $H "$long" sleep 60
	pid=$BGPID
	poll has $pid "$long" granted || bad "never granted" || return 1
	out=$($L -n -o resource -p $pid | grep '^cli32/')
	[ "$out" = "$long" ] || bad "not a terminal, shows '$out'" || return 1
	out=$($L -u -n -o resource -p $pid | grep '^cli32/')
	[ "$out" = "$long" ] || bad "-u shows '$out'"
}

t_ls_empty() {
	$L -J -p 2147483647 >"$OUT" 2>"$ERR"
	expect_rc 0 $? "lshlock -J -p unused" || return 1
	$J --lock-keys $LOCK_KEYS <"$OUT" 2>>"$ERR" || bad "JSON rejected" ||
		return 1
	[ "$(flat "$OUT")" = '{ "locks": [ ] } ' ] ||
		bad "printed '$(cat "$OUT")'" || return 1
	out=$($L -n -p 2147483647 2>"$ERR")
	expect_rc 0 $? "lshlock -n -p unused" || return 1
	[ -z "$out" ] || bad "printed '$out'"
}

t_ls_columns_env() {
	bg $H cli36/e sleep 60
	pid=$BGPID
	poll has $pid cli36/e granted || bad "never granted" || return 1
	# LSHLOCK_COLUMNS stands for -o; -o wins over it.
	out=$(LSHLOCK_COLUMNS=resource,pid $L -r -n -p $pid | grep '^cli36/e ')
	[ "$out" = "cli36/e $pid" ] || bad "LSHLOCK_COLUMNS: '$out'" ||
		return 1
	out=$(LSHLOCK_COLUMNS=resource,pid $L -r -n -o pid,state -p $pid |
	      sort -u)
	[ "$out" = "$pid granted" ] || bad "-o with LSHLOCK_COLUMNS: '$out'" ||
		return 1
	[ "$(LSHLOCK_COLUMNS=+token $L -r -p $pid | head -n 1)" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY TOKEN" ] ||
		bad "LSHLOCK_COLUMNS=+token" || return 1
	LSHLOCK_COLUMNS=nosuch $L -p $pid >/dev/null 2>"$ERR"
	expect_rc 1 $? "LSHLOCK_COLUMNS=nosuch" || return 1
	: >"$ERR"
	# --output-all, then +LIST: a column named again is shown once.
	[ "$($L -r --output-all -o +pid,token -p $pid | head -n 1)" = \
	  "COMMAND PID RESOURCE MODE STATE WAIT HELD BLOCKER WHY TOKEN BLOCKING NODEMODE REMOTE" ] ||
		bad "--output-all -o +pid,token" || return 1
	# Typed JSON: the token is a number, and null while waiting.
	$L -J -o resource,token -p $pid >"$OUT" 2>"$ERR" ||
		bad "lshlock -J failed" || return 1
	$J --lock-keys resource,token --exact <"$OUT" 2>>"$ERR" ||
		bad "JSON rejected" || return 1
	flat "$OUT" | grep -q '"resource": "cli36/e", "token": [1-9][0-9]* }' ||
		bad "no token in the JSON"
}

t_ls_noinaccessible() {
	bg $H cli37/i sleep 60
	pid=$BGPID
	poll has $pid cli37/i granted || bad "never granted" || return 1
	# From a new PID namespace the holder has no PID: "-", and -i
	# leaves its requests out.
	out=$(unshare -p -f $L -r -n -o command,pid,resource | grep ' cli37/i$')
	[ "$out" = "- - cli37/i" ] || bad "seen from a new PID namespace as '$out'" ||
		return 1
	out=$(unshare -p -f $L -i -r -n -o pid,resource | grep ' cli37/i$')
	[ -z "$out" ] || bad "-i lists '$out'" || return 1
	$L -i -r -n -o pid,resource -p $pid | grep -qxF "$pid cli37/i" ||
		bad "-i leaves out what we can see"
}

# --- lshlock: lslocks(8)'s options and JSON --------------------------------
NTESTS=$((NTESTS + 1))

# ls_rc PROG ARGS: the exit status of PROG ARGS, in which $P stands for the
# pid of the holder of PROG's world ($fpid for lslocks, $hpid for lshlock).
ls_rc() {
	# shellcheck disable=SC2034 # the eval uses P
	if [ "$1" = "$LSL" ]; then P=$fpid; else P=$hpid; fi
	eval "$1 $2" </dev/null >/dev/null 2>>"${LSERR:-$ERR}"
}

# same_ls WHAT ARGS: lslocks and lshlock exit alike with ARGS.
same_ls() {
	ls_rc "$LSL" "$2"
	a=$?
	ls_rc "$L" "$2"
	b=$?
	[ "$a" = "$b" ] || bad "$1: lslocks exits $a, lshlock $b"
}

# differ_ls WHAT ARGS A B: a difference on purpose, listed in lshlock(8)
# (DIFFERENCES FROM LSLOCKS): lslocks exits A, lshlock B.
differ_ls() {
	LSERR=/dev/null
	ls_rc "$LSL" "$2"
	a=$?
	ls_rc "$L" "$2"
	b=$?
	LSERR=
	[ "$a $b" = "$3 $4" ] ||
		bad "$1: lslocks exits $a, lshlock $b, where lshlock(8) says $3 and $4"
}

# jtypes PROG COLS ARGS: the types of the members of PROG -J -o COLS ARGS
# (json_check --types), "NAME TYPE" each once, sorted, joined by commas;
# fails unless PROG exits 0 and its JSON is an object whose "locks" is an
# array of objects with exactly the members COLS.
jtypes() {
	eval "$1 -J -o $2 $3" >"$OUT" 2>>"$ERR" || bad "$1 -J $2 $3 failed" ||
		return 1
	$J --types --lock-keys "$2" --exact <"$OUT" >"$TMP/types" 2>>"$ERR" ||
		bad "$1 -J $2 $3: JSON rejected" || return 1
	sort -u "$TMP/types" | tr '\n' , | sed 's/,$//'
}

# The same scenarios through util-linux's lslocks(8) (2.38) on flock(1)'s
# lock of a file and through lshlock on hlock's lock of a path, each with
# a holder and a waiter.
t_ls_vs_lslocks() {
	LSL=./lslocks
	FF=$TMP/lslocks53
	: >"$FF"
	# With no file lock at all, lslocks prints nothing, even with -J;
	# lshlock prints its empty "locks" array whatever is listed.
	if [ -z "$(cat /proc/locks)" ]; then
		[ -z "$($LSL -J)" ] || bad "lslocks -J printed JSON" || return 1
	else
		diag "file locks held: lslocks -J with none not compared"
	fi
	# flock -o: the flock process itself holds the lock, until the
	# test's cleanup kills it; its command then ends too.
	# shellcheck disable=SC2016 # for that shell
	bg ./flock -o "$FF" sh -c 'while kill -0 $PPID; do sleep 0.1; done' \
		2>/dev/null
	fpid=$BGPID
	# shellcheck disable=SC2016 # for that shell
	poll sh -c '"$1" -r -n -o pid -p "$2" | grep -qx "$2"' sh $LSL $fpid ||
		bad "lslocks never lists the flock holder" || return 1
	bg ./flock "$FF" true
	fwait=$BGPID
	# shellcheck disable=SC2016
	poll sh -c '"$1" -r -n -o pid,blocker -p "$2" | grep -qx "$2 $3"' \
		sh $LSL $fwait $fpid || bad "lslocks never lists the waiter" ||
		return 1
	bg $H -s cli53/l sleep 100000
	hpid=$BGPID
	poll has $hpid cli53/l granted || bad "hlock never granted" ||
		return 1
	bg $H cli53/l true
	hwait=$BGPID
	poll has $hwait cli53/l waiting || bad "hlock never waiting" ||
		return 1

	# Options accepted, refused, and their exit statuses.
	# shellcheck disable=SC2016 # ls_rc evaluates $P
	for o in "" -J --json -r --raw -n --noheadings -u --notruncate \
		 -i --noinaccessible "-o command,pid" "-o COMMAND,PID" \
		 "-o +pid" "--output=pid,mode" --output-all '-p $P' \
		 '--pid=$P' "-p 2147483647" "-p abc" "-p ''" "-J -r" \
		 "-r -J" --bogus -Q "-o nosuch" "-o ''" "-o" "-p" \
		 -h --help -V --version; do
		same_ls "'$o'" "$o" || return 1
	done
	for f in "$LSL" "$L"; do
		$f -J -r 2>&1 >/dev/null | sed 's/^[a-z]*: //'
	done | sort | uniq -c | grep -q '^ *2 mutually exclusive arguments: --json --raw$' ||
		bad "-J -r: not the same message" || return 1
	$LSL --bogus 2>&1 | grep -q "Try 'lslocks --help'" &&
		$L --bogus 2>&1 | grep -q "Try 'lshlock --help'" ||
		bad "--bogus: no pointer to --help in both" || return 1
	# The differences, on purpose: no SIZE to print in bytes; no pid 0
	# (all, for lslocks) or -1 (OFD locks); operands refused, not
	# ignored; lshlock's own -H and --stats.
	differ_ls -b -b 0 1 && differ_ls --bytes --bytes 0 1 &&
	differ_ls "-p 0" "-p 0" 0 1 && differ_ls "-p -1" "-p -1" 0 1 &&
	differ_ls "an operand" "-n extra" 0 1 &&
	differ_ls -H -H 1 0 && differ_ls --stats --stats 1 0 || return 1

	# Table output: the shared columns' headers, and -p.
	a=$($LSL -r -o command,pid,mode,blocker -p $fpid | head -n 1)
	b=$($L -r -o command,pid,mode,blocker -p $hpid | head -n 1)
	[ "$a" = "COMMAND PID MODE BLOCKER" ] && [ "$b" = "$a" ] ||
		bad "headers '$a' and '$b'" || return 1
	[ "$($LSL -r -n -o pid -p $fpid | sort -u)" = $fpid ] &&
		[ "$($L -r -n -o pid -p $hpid | sort -u)" = $hpid ] ||
		bad "-p lists other pids" || return 1
	# Mode names differ: lslocks READ, WRITE and a * while waiting;
	# lshlock the hierarchy's modes, and a STATE column.
	[ "$($LSL -r -n -o mode -p $fpid)" = WRITE ] &&
		[ "$($LSL -r -n -o mode -p $fwait)" = "WRITE*" ] &&
		[ "$($L -r -n -o mode,state -p $hpid | grep '^S ')" = \
		  "S granted" ] ||
		bad "modes not as lshlock(8) says" || return 1

	# JSON: {"locks": [{...}, ...]}, members named as the columns in
	# lower case, the shared columns of the same types, except BLOCKER:
	# lslocks's is one pid or null, lshlock's an array of pids.
	cols=command,pid,mode,blocker
	# shellcheck disable=SC2086 # split on purpose
	for w in "$LSL $fpid null" "$LSL $fwait number" "$L $hpid array" \
		 "$L $hwait array"; do
		set -- $w
		t=$(jtypes "$1" $cols "-p $2") || { echo "$t"; return 1; }
		[ "$t" = "blocker $3,command string,mode string,pid number" ] ||
			bad "$1 -J -o $cols -p $2: types $t" || return 1
	done
	# lslocks's PATH is lshlock's RESOURCE: a string (null for the root).
	t=$(jtypes $LSL path "-p $fpid") && [ "$t" = "path string" ] &&
		t=$(jtypes $L resource "-p $hpid") &&
		[ "$t" = "resource null,resource string" ] ||
		bad "PATH and RESOURCE: $t" || return 1
	# A shared column alone: the same JSON, byte for byte, but for the
	# pid and lshlock's three records (the intents on cli53 and the root).
	a=$($LSL -J -o pid -p $fpid | tr '\n' ' ' | sed "s/  */ /g; s/$fpid/P/")
	b=$($L -J -o pid -p $hpid | tr '\n' ' ' |
	    sed "s/  */ /g; s/$hpid/P/g; s/{ \"pid\": P },//g")
	[ "$a" = '{ "locks": [ { "pid": P } ] } ' ] && [ "$b" = "$a" ] ||
		bad "-J -o pid: '$a' and '$b'" || return 1
	# Nothing listed: the same output, in every format.
	for o in -J "-J -o pid" "-J --output-all" -n "-n -r" -r ""; do
		a=$(eval "$LSL $o -p 2147483647" | tr '\n' ' ')
		b=$(eval "$L $o -p 2147483647" | tr '\n' ' ')
		[ "$a" = "$b" ] ||
			bad "'$o' with nothing listed: '$a' and '$b'" || return 1
	done
}

# run, or skip when util-linux's lslocks and flock are not there (--extra
# /usr/bin/lslocks --extra /usr/bin/flock).
run_with_lslocks() {
	if [ -x ./lslocks ] && [ -x ./flock ]; then
		run "$@"
	else
		n=$((n + 1))
		skip=$((skip + 1))
		echo "ok $n $1 # SKIP no ./lslocks or ./flock"
	fi
}

# --- hlock-uring-demo ------------------------------------------------------

# The io_uring example server: 200 clients through one ring, every check
# of its own passed (exit 0), and nothing left locked after it.
t_uring_demo() {
	[ -x $U ] || bad "no $U" || return 1
	# 200 clients, fewer at HLOCK_TEST_SCALE (a percentage, as in
	# hlock_helpers.h's test_scaled()), but never under 20.
	clients=200
	case ${HLOCK_TEST_SCALE:-} in
	[1-9] | [1-9][0-9]) clients=$((clients * HLOCK_TEST_SCALE / 100)) ;;
	esac
	[ $clients -ge 20 ] || clients=20
	$U -n $clients -t 10 >"$OUT" 2>"$ERR"
	expect_rc 0 $? "hlock-uring-demo -n $clients -t 10" || return 1
	out=$($L -n 2>"$ERR")
	expect_rc 0 $? "lshlock -n" || return 1
	[ -z "$out" ] || bad "left in the lock table: '$out'"
}

echo "TAP version 13"
echo "1..$NTESTS"
why=
[ -c /dev/hlock ] || why="no /dev/hlock"
for f in $H $L $J; do
	[ -x "$f" ] || why="no $f"
done
if [ -n "$why" ]; then
	while [ $n -lt $NTESTS ]; do
		n=$((n + 1))
		echo "ok $n # SKIP $why"
	done
	exec 2>&3 3>&-
	rm -rf "$TMP"
	echo "# Totals: pass:0 fail:0 xfail:0 xpass:0 skip:$NTESTS error:0"
	exit 4
fi
run hlock_exit_status t_exit_status
run hlock_shell_command t_shell_command
run hlock_killed_status t_killed_status
run hlock_root t_root
run hlock_mode_ix t_mode_ix
run hlock_held_while_running t_held_while_running
run hlock_conflict_nonblock t_conflict_nonblock
run hlock_conflict_exit_code t_conflict_exit_code
run hlock_timeout t_timeout
run hlock_shared t_shared
run hlock_verbose t_verbose
run hlock_verbose_wait t_verbose_wait
run hlock_why t_why
run hlock_usage t_usage
run hlock_cluster t_cluster
run hlock_bad_path t_bad_path
run hlock_not_found t_not_found
run hlock_not_executable t_not_executable
run hlock_forward_signal t_forward_signal
run hlock_interrupt_waiting t_interrupt_waiting
run hlock_lease_renewed t_lease_renewed
run hlock_lease_stopped t_lease_stopped
run hlock_conflict_exit_zero t_conflict_exit_zero
run hlock_path_messages t_path_messages
run hlock_timeout_strict t_timeout_strict
run hlock_timeout_max t_timeout_max
run hlock_usage_lines t_usage_lines
run lshlock_empty_column t_ls_empty_column
run fl_nonblocking t_fl_nonblocking
run fl_shell t_fl_shell
run fl_command_eq t_fl_command_eq
run fl_no_fork t_fl_no_fork
run fl_close t_fl_close
run fl_unavailable t_fl_unavailable
run fd_form t_fd_form
run fd_form_modes t_fd_form_modes
run fd_form_conflict t_fd_form_conflict
run fd_form_errors t_fd_form_errors
run fl_usage t_fl_usage
run_with_flock fl_vs_flock t_fl_vs_flock
run lshlock_holder t_ls_holder
run lshlock_waiter t_ls_waiter
run lshlock_blocking t_ls_blocking
run lshlock_json t_ls_json
run lshlock_json_columns t_ls_json_columns
run lshlock_json_escape t_ls_json_escape
run lshlock_noheadings t_ls_noheadings
run lshlock_output t_ls_output
run lshlock_pid t_ls_pid
run lshlock_raw t_ls_raw
run lshlock_list_columns t_ls_list_columns
run lshlock_stats_json t_ls_stats_json
run lshlock_stats_table t_ls_stats_table
run lshlock_usage t_ls_usage
run lshlock_truncate t_ls_truncate
run lshlock_empty t_ls_empty
run lshlock_conflicts t_ls_conflicts
run lshlock_columns_env t_ls_columns_env
run lshlock_noinaccessible t_ls_noinaccessible
run_with_lslocks ls_vs_lslocks t_ls_vs_lslocks
run uring_demo t_uring_demo
sed 's/^/# shell: /' "$TMP/sh.err"
exec 2>&3 3>&-
rm -rf "$TMP"
echo "# Totals: pass:$pass fail:$fail xfail:0 xpass:0 skip:$skip error:0"
[ $fail = 0 ] && [ $n = $NTESTS ]
