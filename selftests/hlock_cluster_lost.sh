#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# A node loses the cluster.  Run on both nodes of a cluster by
#
#   scripts/vm-cluster --extra build/tools/hlock \
#           --extra build/selftests/hlock_cluster_events \
#           --extra build/selftests/hlock_cluster_lvb \
#           --extra selftests/hlock_cluster_lib.sh \
#           2 selftests/hlock_cluster_lost.sh
#
# (which binds each node's lock space to the DLM lockspace "hlock").  Node
# 1 holds X on w; node 2, with cluster_grace_ms at 3000, holds S on h and
# waits for X on w, a lock call and a try-lock.  Then node 2's
# dlm_controld is killed: node 2's DLM stops the lockspace for a recovery
# that never comes, while node 1's removes node 2 and recovers.  Three
# seconds later node 2 counts as having lost the cluster: its waiters fail
# with ENOLINK (hlock exits 69 and says so), the holder of h is told
# (POLLPRI, HLOCK_EVENT_LOST), its lock calls fail and its unlock works;
# node 1 is granted X on h, which node 2 held.  A fencing token that node
# 2 draws while its lockspace is stopped waits for the recovery, and
# fails with ENOLINK once the node lost the cluster.  At the end node 2 leaves
# the stopped lockspace (vm-cluster-node unbinds hlock), which must work
# without dlm_controld.  Steps are ordered by barriers, never by timing.
# Prints TAP; exits 1 if a test failed on this node.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
# The most any single wait in here may take; no test relies on it.
LONG=60
n=0
failed=0

echo "TAP version 13"
[ "$node" = 1 ] && echo "1..1" || echo "1..4"

. "$(dirname "$0")/hlock_cluster_lib.sh"

# has FILE TEXT: whether FILE has a line TEXT.
has() {
	grep -qx "$2" "$1" 2>/dev/null
}

case $node in
1)
	t=ok
	(
		hlock 9 w || exit 3
		vm-cluster-barrier w-held || exit 3
		vm-cluster-barrier lost || exit 3
	) 9<>/dev/hlock || t="X on w or a barrier failed"
	# Node 2's S on h went with node 2, once this node's DLM recovered.
	hlock -w $LONG h true || t="X on h, which node 2 held, failed"
	bar finished
	[ "$t" = ok ] && ok "the other node gets what the lost node held" ||
		not_ok "the other node gets what the lost node held: $t"
	;;
*)
	t=ok
	t2=ok
	t3=ok
	t4=ok
	echo 3000 >/sys/module/hlock/parameters/cluster_grace_ms ||
		t="cannot set cluster_grace_ms"
	# hlock says when the DLM stops its lockspace (pr_debug).
	echo 'module hlock func hl_cluster_recover_prep +p' \
		>/sys/kernel/debug/dynamic_debug/control ||
		t4="cannot enable hlock's debug messages"
	bar w-held
	hlock_cluster_events -l h $LONG >/tmp/h-events 2>&1 &
	hpid=$!
	within has /tmp/h-events held || t="S on h failed"
	# X on tk, whose token it draws once told to (a line on the fifo).
	mkfifo /tmp/go
	hlock_cluster_lvb -t -w tk X </tmp/go >/tmp/tk-out 2>&1 &
	tpid=$!
	exec 8>/tmp/go
	within has /tmp/tk-out held || t4="X on tk failed"
	hlock -w $LONG w true 2>/tmp/w-err &
	wpid=$!
	sleep 1
	kill -0 $wpid 2>/dev/null || t="X on w did not wait"
	killall -9 dlm_controld || t="no dlm_controld to kill"
	stopped() {
		dmesg | grep -q 'DLM lockspace hlock stopped for a recovery'
	}
	within stopped || t4="hlock never saw its lockspace stop"
	# Drawn while stopped (not yet lost): it waits, then fails.
	echo >&8
	exec 8>&-
	# A try-lock that came while the lockspace is stopped.
	hlock -n w true 2>/tmp/try-err
	trc=$?
	wait $wpid
	rc=$?
	[ $rc = 69 ] && grep -q "this node lost the cluster" /tmp/w-err ||
		t="the wait for w ended $rc: $(cat /tmp/w-err)"
	[ $trc = 69 ] || [ $trc = 1 ] ||
		t="the try on w ended $trc: $(cat /tmp/try-err)"
	wait $hpid || t2="the holder of h: $(cat /tmp/h-events)"
	has /tmp/h-events lost || t2="the holder of h was not told"
	hlock -n z true 2>/tmp/z-err
	rc=$?
	[ $rc = 69 ] || t3="a new lock ended $rc: $(cat /tmp/z-err)"
	# (Not killable once in the DLM: a wait that ends, or a hang.)
	wait $tpid
	rc=$?
	[ $rc = 1 ] && grep -q 'token of tk: Link has been severed' /tmp/tk-out ||
		t4="the token drawn while stopped: exit $rc, $(tr '\n' ' ' </tmp/tk-out)"
	bar lost
	bar finished
	[ "$t" = ok ] && ok "a wait fails with ENOLINK when the node lost the cluster" ||
		not_ok "a wait fails with ENOLINK when the node lost the cluster: $t"
	[ "$t2" = ok ] && ok "a holder is told, and its calls fail but its unlock" ||
		not_ok "a holder is told, and its calls fail but its unlock: $t2"
	[ "$t3" = ok ] && ok "a new lock fails with ENOLINK" ||
		not_ok "a new lock fails with ENOLINK: $t3"
	[ "$t4" = ok ] && ok "a token drawn while stopped fails with ENOLINK" ||
		not_ok "a token drawn while stopped fails with ENOLINK: $t4"
	;;
esac
exit $failed
