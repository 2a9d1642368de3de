#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# A node crashes with locks held.  Run on every node of a cluster by
#
#   scripts/vm-cluster --extra build/tools/hlock \
#           --extra build/selftests/hlock_cluster_lvb \
#           --extra selftests/hlock_cluster_lib.sh \
#           3 selftests/hlock_cluster_crash.sh
#
# (which binds each node's lock space to the DLM lockspace "hlock").  The
# last node holds X on c/d, and so IX on c, and X on e, whose lock value
# block it sets but never publishes; node 1 waits for X on c, node 2 for S
# on e.  Then the last node crashes (vm-cluster-crash): its VM powers off
# without leaving the cluster.  Once corosync has seen it go and the DLM
# has recovered, its locks are gone: both waiters are granted, and the
# value of e reads as lost (zeros), since the DLM cannot know what the
# dead holder of X did with it.  Then the survivors lock e as before.
# The last node also draws the last fencing token before the crash (and
# holds the lockspace's token counter when it crashes); the survivors
# read it as the value of tk, and the tokens they draw afterwards are
# greater.
# The last node also dies waiting and converting: it waits for X on f,
# which node 1 holds, and its S on g, which node 2 shares, waits to become
# X.  Neither may outlive it: once node 1 lets f go, node 2 gets X on f at
# once, and node 2 converts its own S on g to X.
# The steps are ordered by barriers, never by timing.  Prints TAP on the
# nodes left; exits 1 if a test failed on this node.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
nodes=${HLOCK_NODES:?run me with scripts/vm-cluster}
# The most any single wait in here may take; no test relies on it.
LONG=60
n=0
failed=0

echo "TAP version 13"
if [ "$node" = "$nodes" ]; then
	echo "1..0 # node $node crashes"
else
	echo "1..6"
fi

. "$(dirname "$0")/hlock_cluster_lib.sh"

# Wait until the file $1 exists and is not empty, for up to LONG seconds.
wait_for() {
	i=0
	while [ ! -s "$1" ]; do
		i=$((i + 1))
		[ $i -lt $((LONG * 10)) ] || return 1
		sleep 0.1
	done
}

# Before: a value of e, published.
if [ "$node" = 1 ]; then
	hlock_cluster_lvb e x kept >/dev/null || echo "# X on e failed"
fi
bar e-set

# Node 1 holds X on f, node 2 S on g, in lockers of the shell (fd 8).
case $node in
1)
	exec 8<>/dev/hlock
	hlock 8 f || echo "# node 1: X on f failed"
	;;
2)
	exec 8<>/dev/hlock
	hlock -s 8 g || echo "# node 2: S on g failed"
	;;
esac
bar fg-held

t=ok
t2=ok
case $node in
"$nodes")
	hlock_cluster_lvb -t tk x >/dev/null ||
		echo "# node $node: X on tk or its token failed"
	# A wait, and a conversion that waits, for the crash to end.
	hlock -w $LONG f true &
	(
		exec 9<>/dev/hlock
		hlock -s 9 g && echo >/tmp/g-shared && hlock -w $LONG 9 g
	) &
	wait_for /tmp/g-shared || echo "# node $node: S on g failed"
	hlock c/d -c "echo held >/tmp/cd-held; sleep 3600" &
	hlock_cluster_lvb -h e x never >/tmp/e-held &
	wait_for /tmp/cd-held && wait_for /tmp/e-held ||
		echo "# node $node: X on c/d or e failed"
	bar held
	bar waiting
	;;
1)
	bar held
	tprev=$(hlock_cluster_lvb tk s)
	hlock -w $LONG c touch /tmp/c-granted &
	pid=$!
	sleep 1
	[ ! -e /tmp/c-granted ] || t="X on c granted beside node $nodes's IX"
	bar waiting
	;;
2)
	bar held
	tprev=$(hlock_cluster_lvb tk s)
	hlock_cluster_lvb e s >/tmp/e-read &
	pid=$!
	# Long enough for node $nodes's probes (cluster_probe_ms) of what
	# it keeps for this wait: their requests must not save its value.
	sleep 2
	[ ! -s /tmp/e-read ] || t="S on e granted beside node $nodes's X"
	bar waiting
	;;
*)
	bar held
	bar waiting
	;;
esac

# The last node ends here.
vm-cluster-crash

case $node in
1)
	wait "$pid" || t="X on c failed after node $nodes crashed"
	[ -e /tmp/c-granted ] || t="X on c never granted"
	;;
2)
	wait "$pid" || t="S on e failed after node $nodes crashed"
	v=$(cat /tmp/e-read)
	[ -z "$v" ] || t2="the value of e read '$v', not lost"
	;;
esac
[ "$t" = ok ] && ok "a crashed node's locks go to the others" ||
	not_ok "a crashed node's locks go to the others: $t"
[ "$t2" = ok ] && ok "a value a crashed node held under X reads as lost" ||
	not_ok "a value a crashed node held under X reads as lost: $t2"

# After: the nodes left share e as before.
t=ok
bar after
case $node in
1)
	hlock_cluster_lvb e x again >/dev/null || t="X on e failed"
	bar again-set
	;;
2)
	bar again-set
	v=$(hlock_cluster_lvb e s) || t="S on e failed"
	[ "$v" = again ] || t="read '$v', not again"
	;;
*)
	bar again-set
	;;
esac
[ "$t" = ok ] && ok "the nodes left lock as before" ||
	not_ok "the nodes left lock as before: $t"

# The crashed node's wait for f and its conversion on g went with it:
# node 1, whom it asked for f, lets f go and takes it again, and node 2
# then gets X on f, and converts its S on g to X, which the crashed node's
# S, or a remote waiter that node 2 still believed in, would keep waiting.
t=ok
t2=ok
case $node in
1)
	hlock -u 8 f || t="node 1's unlock of f failed"
	# Nobody waits for f now: node 1 locks it again as it likes.
	hlock -w $LONG f true || t="node 1 cannot lock f again"
	bar f-free
	bar g-converted
	;;
2)
	bar f-free
	hlock -w $LONG f true || t="X on f not granted once node 1 let it go"
	hlock -w $LONG 8 g || t2="S on g not converted to X"
	bar g-converted
	;;
*)
	bar f-free
	bar g-converted
	;;
esac
[ "$t" = ok ] && ok "a crashed node's wait leaves the queue" ||
	not_ok "a crashed node's wait leaves the queue: $t"
[ "$t2" = ok ] && ok "a crashed node's conversion leaves the queue" ||
	not_ok "a crashed node's conversion leaves the queue: $t2"

# Tokens drawn after the crash, on either node left, are greater than the
# last one the crashed node drew.
t=ok
case $node in
1 | 2)
	[ $node = 1 ] || bar token-1
	out=$(hlock_cluster_lvb -t tk x) || t="X on tk or its token failed"
	tok=$(echo "$out" | sed -n 2p)
	echo "# token $tok after node $nodes's $tprev"
	[ -n "$tprev" ] || t="no token of node $nodes read before the crash"
	[ "$tok" -gt "${tprev:-0}" ] 2>/dev/null ||
		t="token $tok after node $nodes's $tprev"
	[ $node = 2 ] || bar token-1
	;;
*)
	bar token-1
	;;
esac
[ "$t" = ok ] && ok "fencing tokens after the crash are greater" ||
	not_ok "fencing tokens after the crash are greater: $t"

exit $failed
