#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Lock churn across the nodes of a cluster while node 1 reclaims, run on
# every node by
#
#   scripts/vm-cluster --extra build/selftests/hlock_cluster_churn \
#           --extra selftests/hlock_cluster_lib.sh \
#           N selftests/hlock_cluster_churn.sh [SECONDS] [ast]
#
# Every node's threads lock random paths of one small tree in random
# modes with short timeouts, downgrade and unlock, for SECONDS (20 by
# default), while node 1 asks for a reclaim pass every 2 ms, which
# unlocks its cached DLM locks of idle resources, also as another node's
# blocking AST comes in.  Under X each one counts in the path's lock
# value block and checks the fencing token chain there (see
# hlock_cluster_churn.c).  Then:
#
# - with no other node locking anything, each node in turn takes X on
#   every path: nothing conflicts anywhere, so none may time out (a
#   resource that keeps a remote waiter after its DLM lock is gone
#   would: issue 30);
# - the counters of all paths add up to the increments the nodes made.
#
# With "ast" (the test build: hlock/test_stall), node 1 also opens, again
# and again during the churn, the window of issue 30's second defect, as
# hlock_cluster_test.sh's test 20 does once: the completion AST of a
# reclaim pass's unlock of ua is held after it noted the answer, a refused
# request's resume work has ua's work take that answer in, and the
# reclaim passes (every 2 ms) find ua idle with no DLM lock while the AST
# still has to touch it.  Test 4 counts the windows held: on the debug
# kernel, KASAN reports the callback's touch if ua was freed under it
# (vm-run fails the VM on any report).
#
# The values stay in the DLM because the nodes but node 1 hold a DLM lock
# on every path throughout (they take X on each first, their caches keep
# it, and they reclaim nothing: far fewer resources than reclaim_at).
# HLOCK_SEED sets the seed (printed) to replay a run.  Prints TAP; exits 1
# if a test failed on this node.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
nodes=${HLOCK_NODES:?run me with scripts/vm-cluster}
# The most any single wait in here may take; no test relies on it.
LONG=60
n=0
failed=0
secs=20
ast=0
for a in "$@"; do
	case $a in
	ast) ast=1 ;;
	*[!0-9]* | "") echo "usage: $0 [SECONDS] [ast]" >&2; exit 64 ;;
	*) secs=$a ;;
	esac
done
threads=4
seed=${HLOCK_SEED:-$(($(date +%s) % 100000 * 10 + node))}
churn=$(dirname "$0")/hlock_cluster_churn
stall=/sys/kernel/debug/hlock/test_stall
fail=/sys/module/hlock/parameters/test_dlm_fail

echo "TAP version 13"
echo "1..$((3 + ast))"

. "$(dirname "$0")/hlock_cluster_lib.sh"

stalled() {
	[ "$(cat $stall)" = stalled ]
}
reclaim() {
	echo 1 >/sys/kernel/debug/hlock/reclaim
}

# ast_windows: on node 1 during the churn, until /tmp/churn.done appears,
# hold ua's unlock answer in its completion AST while its work takes the
# answer in and reclaim passes find it idle (hlock_cluster_test.sh's test
# 20, where the steps are explained); prints how many it tried, how many
# stalled and how many it held.  On a loaded host the debug kernel's VM
# may not hold one during the churn (a CI run held none in 20 s): then it
# goes on after the churn, for at most 4 more tries (each at most 14 s,
# well inside the next barrier's 120 s), until one is held.
ast_windows() {
	tries=0
	stalls=0
	held=0
	after=0
	while [ ! -e /tmp/churn.done ] ||
		{ [ $held = 0 ] && [ $after -lt 4 ]; }; do
		[ ! -e /tmp/churn.done ] || after=$((after + 1))
		tries=$((tries + 1))
		# Armed while ua is held, so that the reclaim thread cannot
		# unlock it before: then the first answer for ua is its unlock's.
		hlock ua sh -c "echo 'ast ua' >$stall" ||
			{ echo "# X on ua, or arming ast, failed"; break; }
		# A reclaim pass unlocks ua's cached DLM lock; its answer stalls.
		i=0
		while [ $i -lt 50 ] && ! stalled; do
			reclaim
			sleep 0.1
			i=$((i + 1))
		done
		if stalled; then
			stalls=$((stalls + 1))
			# The next DLM request fails (uo's, or a churn
			# thread's, which asks again): the resume work, 100 ms
			# later, queues every resource's work, ua's too.  In
			# the background: the DLM's other answers on this node
			# may wait behind the one held.
			echo 1 >$fail
			hlock -n uo true 2>/dev/null &
			i=0
			# (Up to 8 s: on a loaded host the debug kernel's
			# VM took more than 2 s to start hlock.)
			while [ $i -lt 80 ] && [ "$(cat $fail)" != 0 ]; do
				sleep 0.1
				i=$((i + 1))
			done
			# The resume work's pass and the reclaim thread's
			# (and one of ours, for the tries after the churn).
			reclaim
			sleep 0.5
			# Refused, and still held: the window was open.
			[ "$(cat $fail)" != 0 ] || ! stalled ||
				held=$((held + 1))
			echo 0 >$fail
		fi
		echo go >$stall
		wait
	done
	echo "# ast windows: $tries tried, $stalls stalled, $held held"
}

# 1. The churn, with reclaim on node 1: no error, token or value check
# fails, and something is granted.
t=ok
bar churn-start
if [ "$node" != 1 ]; then
	$churn touch || t="X on every path failed"
fi
bar churn-touched
r=
[ "$node" != 1 ] || r=-r
rm -f /tmp/churn.done
if [ "$node" = 1 ] && [ "$ast" = 1 ]; then
	ast_windows >/tmp/ast.out &
	apid=$!
fi
$churn run $r $threads "$secs" "$seed" >/tmp/churn.out
rc=$?
touch /tmp/churn.done
[ -z "${apid:-}" ] || wait "$apid"
grep '^#' /tmp/churn.out
[ $rc = 0 ] || t="$(grep -m 1 '# FAIL' /tmp/churn.out || echo "exit $rc")"
incr=$(sed -n 's/^increments //p' /tmp/churn.out)
[ -n "$incr" ] || { incr=0; t="no count of increments"; }
bar churned
[ "$t" = ok ] && ok "churn on $nodes nodes, reclaim on node 1" ||
	not_ok "churn on $nodes nodes, reclaim on node 1: $t"

# 2. Each node in turn takes X on every path, the others idle.
t=ok
i=1
while [ $i -le "$nodes" ]; do
	if [ $i = "$node" ]; then
		$churn probe $LONG || t="a lock that nothing conflicts with waited"
	fi
	bar "probed-$i"
	i=$((i + 1))
done
[ "$t" = ok ] && ok "after the churn, X on every path is granted on node $node" ||
	not_ok "after the churn, X on every path is granted on node $node: $t"

# 3. The counters add up to the increments of every node.
t=ok
$churn add "$incr" || t="adding this node's $incr increments failed"
bar added
$churn check || t="the counters do not add up"
bar checked
[ "$t" = ok ] && ok "value block counters add up across nodes" ||
	not_ok "value block counters add up across nodes: $t"

# 4. The completion AST windows held during the churn (node 1).
if [ "$ast" = 1 ]; then
	if [ "$node" = 1 ]; then
		cat /tmp/ast.out
		held=$(sed -n 's/.* stalled, \([0-9]*\) held$/\1/p' /tmp/ast.out)
		[ "${held:-0}" -gt 0 ] &&
			ok "$held completion AST windows held across reclaim" ||
			not_ok "no completion AST window held across reclaim"
	else
		ok "completion AST windows: node 1's test"
	fi
fi

exit $failed
