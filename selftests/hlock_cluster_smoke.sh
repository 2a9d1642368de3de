#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# The cluster harness's own test, run on every node by
#
#   scripts/vm-cluster N selftests/hlock_cluster_smoke.sh
#
# Every node joins the DLM lockspace "smoke" (dlm_tool, through
# dlm_controld and the kernel's DLM) and must see all HLOCK_NODES nodes as
# its members: corosync's membership, dlm_controld's configuration of the
# kernel and the DLM's connections between the VMs all work.  A join
# returns once the lockspace change is done on every member, so each node
# sees the full list after its own join; a node that never does fails
# after 30 s.  Then the barrier (vm-cluster-barrier): nodes that call it
# with different names fail at once, every one, and meet at the next;
# a node that reaches a barrier its peer passed (timed out) fails at once
# too; a --sync barrier meets by name, after the nodes called different
# numbers of barriers.  Prints TAP.

echo "TAP version 13"
echo "1..5"
if dlm_tool join smoke >/tmp/join 2>&1; then
	echo "ok 1 node $HLOCK_NODE joins the lockspace"
else
	sed 's/^/# /' /tmp/join
	echo "not ok 1 node $HLOCK_NODE joins the lockspace"
	exit 1
fi
# The members of lockspace smoke (dlm_tool ls lists hlock's too).
members() {
	dlm_tool ls | awk '$1 == "name" { ls = $2 }
		$1 == "members" && ls == "smoke" { $1 = ""; print }'
}
i=0
until [ "$(members | wc -w)" = "$HLOCK_NODES" ]; do
	i=$((i + 1))
	if [ $i -ge 300 ]; then
		dlm_tool ls | sed 's/^/# /'
		echo "not ok 2 node $HLOCK_NODE sees $HLOCK_NODES members"
		exit 1
	fi
	sleep 0.1
done
echo "# members: $(members)"
echo "ok 2 node $HLOCK_NODE sees $HLOCK_NODES members"

# secs CMD...: run CMD and set took to the seconds it took, rc to its
# status.
secs() {
	t0=$(date +%s)
	"$@" 2>/tmp/bar.err
	rc=$?
	took=$(($(date +%s) - t0))
}

# 3. Different names at one point: every node fails at once, naming the
# other's barrier; the next barrier finds them in step.
secs vm-cluster-barrier "named-$HLOCK_NODE" 60
if [ "$rc" != 0 ] && [ "$took" -lt 30 ] &&
	grep -q "at #[0-9]* 'named-" /tmp/bar.err &&
	vm-cluster-barrier in-step; then
	echo "ok 3 node $HLOCK_NODE: a barrier named otherwise fails at once"
else
	sed 's/^/# /' /tmp/bar.err
	echo "not ok 3 node $HLOCK_NODE: a barrier named otherwise fails at once (exit $rc after $took s)"
fi

# 4. Node 2 times out at p1 and goes on to p2; node 1 comes to p1 late,
# finds node 2 past it and fails at once; both meet at p2.
t=ok
case $HLOCK_NODE in
1)
	sleep 6
	secs vm-cluster-barrier p1 60
	[ "$rc" != 0 ] && [ "$took" -lt 30 ] ||
		t="p1 ended $rc after $took s"
	grep -q "past it" /tmp/bar.err || t="$t; no word of a node past p1"
	;;
2)
	secs vm-cluster-barrier p1 3
	[ "$rc" != 0 ] || t="p1 passed without node 1"
	;;
*)
	vm-cluster-barrier p1 60 2>/dev/null
	;;
esac
vm-cluster-barrier p2 || t="$t; p2 failed"
if [ "$t" = ok ]; then
	echo "ok 4 node $HLOCK_NODE: a barrier a peer went past fails at once"
else
	sed 's/^/# /' /tmp/bar.err
	echo "not ok 4 node $HLOCK_NODE: a barrier a peer went past fails at once: $t"
fi

# 5. Node 2 calls one barrier more (alone, it times out); a --sync
# barrier meets all the same, and the barriers after it are in step.
t=ok
[ "$HLOCK_NODE" != 2 ] || ! vm-cluster-barrier extra 2 2>/dev/null ||
	t="a barrier of node 2 alone passed"
vm-cluster-barrier --sync synced 60 || t="--sync failed"
vm-cluster-barrier after-sync || t="$t; the barrier after it failed"
[ "$t" = ok ] && echo "ok 5 node $HLOCK_NODE: --sync meets by name" ||
	echo "not ok 5 node $HLOCK_NODE: --sync meets by name: $t"
