#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# hlock across machines, run on every node of a cluster by
#
#   scripts/vm-cluster --extra build/tools/hlock \
#           --extra build/selftests/hlock_cluster_events \
#           --extra build/selftests/hlock_cluster_lvb \
#           --extra build/selftests/hlock_cluster_do \
#           --extra build/tools/lshlock \
#           --extra selftests/hlock_cluster_lib.sh \
#           N selftests/hlock_cluster_test.sh [nocache]
#
# which binds each node's lock space to the DLM lockspace "hlock" before
# this starts.  Every node runs every test, in the same order: the nodes
# meet at barriers (vm-cluster-barrier) between the steps, and each test
# says which node does what.  A node that must wait checks, at a barrier
# the holder has not passed yet, that it still waits: nothing here
# depends on how fast a VM runs, only on the order the barriers give.
# With "nocache", every node runs with the module parameter cluster_cache
# at 0 (every lock a DLM round trip).  Prints TAP; exits 1 if a test
# failed on this node.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
nodes=${HLOCK_NODES:?run me with scripts/vm-cluster}
# The most any single wait in here may take; no test relies on it.
LONG=60
n=0
failed=0

echo "TAP version 13"
echo "1..28"
if [ "${1:-}" = nocache ]; then
	echo 0 >/sys/module/hlock/parameters/cluster_cache || exit 1
	echo "# cluster_cache=0"
fi
cache=$(cat /sys/module/hlock/parameters/cluster_cache)

. "$(dirname "$0")/hlock_cluster_lib.sh"
do=$(dirname "$0")/hlock_cluster_do

# Whether the background command with marker $1 was granted: it touches
# /tmp/$1 once it holds its lock.
granted() {
	[ -e "/tmp/$1" ]
}

# 1. X on node 1 blocks S on node 2 until node 1 releases it.
t=ok
case $node in
1)
	hlock a -c "vm-cluster-barrier x-held && vm-cluster-barrier s-waits" ||
		t="node 1's X failed"
	;;
2)
	bar x-held
	hlock -w $LONG -s a touch /tmp/s-granted &
	pid=$!
	sleep 1
	! granted s-granted || t="S granted while node 1 held X"
	bar s-waits
	wait $pid || t="S failed after node 1 released"
	granted s-granted || t="S never granted"
	;;
*)
	bar x-held
	bar s-waits
	;;
esac
[ "$t" = ok ] && ok "X on node 1 blocks S on node 2 until released" ||
	not_ok "X on node 1 blocks S on node 2 until released: $t"

# 2. Intents: X on db/a (node 1) and X on db/b (node 2) are both granted,
# X on db (node 3) waits for both.
if [ "$nodes" -lt 3 ]; then
	skip "intents across nodes: needs 3 nodes"
else
	t=ok
	case $node in
	1 | 2)
		p=db/a
		[ "$node" = 1 ] || p=db/b
		hlock -w $LONG "$p" -c "vm-cluster-barrier both-held &&
			vm-cluster-barrier db-waits &&
			{ [ $node = 2 ] || vm-cluster-barrier db-waits-2; }" ||
			t="X on $p failed"
		[ "$node" = 1 ] || bar db-waits-2
		;;
	3)
		bar both-held
		hlock -w $LONG db touch /tmp/db-granted &
		pid=$!
		sleep 1
		! granted db-granted || t="X on db granted beside X on db/a"
		bar db-waits
		sleep 1
		! granted db-granted || t="X on db granted beside X on db/b"
		bar db-waits-2
		wait $pid || t="X on db failed"
		granted db-granted || t="X on db never granted"
		;;
	*)
		bar both-held
		bar db-waits
		bar db-waits-2
		;;
	esac
	[ "$t" = ok ] && ok "intents across nodes" ||
		not_ok "intents across nodes: $t"
fi

# 3. A waiting X on node 2 is not starved by overlapping S holders on the
# other nodes: three readers per node, each retaking S at once, so that a
# node that gives way always has a reader asking again.  With 3 nodes,
# the two reader nodes could take turns ahead of the writer if asking
# again were a DLM conversion (granted beside the other node's S, ahead of
# waiting requests); hlock unlocks instead, and asks again behind it.
t=ok
rm -f /tmp/stop
if [ "$node" != 2 ]; then
	# Out of step with node 1's readers, so that the two nodes do not
	# give way at the same moment.
	[ "$node" = 1 ] || sleep 0.15
	for i in 1 2 3; do
		(
			while [ ! -e /tmp/stop ]; do
				hlock -s f sleep 0.3 || exit 1
			done
		) &
		eval "reader$i=\$!"
		sleep 0.1
	done
	bar readers
	bar writer-done
	touch /tmp/stop
	# shellcheck disable=SC2154 # set by the eval above
	wait "$reader1" && wait "$reader2" && wait "$reader3" ||
		t="a reader failed"
else
	bar readers
	hlock -w $LONG f true || t="X starved behind the readers"
	bar writer-done
fi
[ "$t" = ok ] && ok "a waiting X is not starved by S on other nodes" ||
	not_ok "a waiting X is not starved by S on other nodes: $t"

# 4. A try and a timeout while another node holds the lock; then tries
# where this node holds the DLM lock already, and where it does not and
# nobody does (asked with DLM_LKF_NOQUEUE), are granted.
t=ok
case $node in
1)
	hlock t -c "vm-cluster-barrier t-held && vm-cluster-barrier t-tried" ||
		t="node 1's X failed"
	bar t-released
	;;
2)
	bar t-held
	hlock -n t true
	[ $? = 1 ] || t="-n did not fail"
	hlock -w 1 t true
	[ $? = 1 ] || t="-w 1 did not time out"
	bar t-tried
	bar t-released
	hlock -w $LONG t true || t="X failed after node 1 released"
	hlock -n t true || t="-n failed where this node holds the DLM lock"
	hlock -n -s t2/new true || t="-n failed on a resource nobody holds"
	;;
*)
	bar t-held
	bar t-tried
	bar t-released
	;;
esac
[ "$t" = ok ] && ok "try and timeout against another node's lock" ||
	not_ok "try and timeout against another node's lock: $t"

# 5. A signal ends a wait for another node's lock, and leaves nothing
# that would keep the lock from node 1 afterwards.
t=ok
case $node in
1)
	hlock k -c "vm-cluster-barrier k-held && vm-cluster-barrier k-killed" ||
		t="node 1's X failed"
	hlock -w $LONG k true || t="node 1 cannot take X again"
	bar k-again
	;;
2)
	bar k-held
	hlock -w $LONG k true &
	pid=$!
	sleep 1
	kill -TERM $pid
	wait $pid
	[ $? -gt 128 ] || t="the waiter did not die of the signal"
	bar k-killed
	bar k-again
	;;
*)
	bar k-held
	bar k-killed
	bar k-again
	;;
esac
[ "$t" = ok ] && ok "a signal ends a wait for another node's lock" ||
	not_ok "a signal ends a wait for another node's lock: $t"

# 6. Every node in turn takes X on one resource, node 1 twice: each
# waits for the one before to release.
t=ok
i=1
while [ $i -le "$nodes" ]; do
	if [ "$i" = "$node" ]; then
		hlock -w $LONG r -c "echo $node >/tmp/r-held" ||
			t="X on r failed"
	fi
	bar "r-$i"
	i=$((i + 1))
done
if [ "$node" = 1 ]; then
	hlock -w $LONG r true || t="X on r again failed"
fi
bar r-again
[ "$t" = ok ] && ok "X on one resource passes from node to node" ||
	not_ok "X on one resource passes from node to node: $t"

# 7. Long paths: two paths of more than 63 bytes that differ only at their
# end are two resources on every node (their DLM names are digests).
t=ok
long=l/0123456789012345678901234567890123456789012345678901234567890123456789
case $node in
1)
	hlock "$long/x" -c "vm-cluster-barrier long-held &&
		vm-cluster-barrier long-done" || t="X on the long path failed"
	;;
2)
	bar long-held
	hlock -n "$long/y" true || t="X on a sibling long path conflicted"
	hlock -w 1 "$long/x" true
	[ $? = 1 ] || t="X on the same long path did not wait"
	bar long-done
	;;
*)
	bar long-held
	bar long-done
	;;
esac
[ "$t" = ok ] && ok "long paths map to distinct DLM resources" ||
	not_ok "long paths map to distinct DLM resources: $t"

# 8. A holder is told (POLLPRI, HLOCK_EVENT_BLOCKING) when another node
# waits on its lock; it then lets go, and the waiter is granted.
t=ok
case $node in
1)
	hlock_cluster_events n $LONG >/tmp/events &
	pid=$!
	within grep -q held /tmp/events
	bar n-held
	wait $pid || t="not told while node 2 waited"
	bar n-done
	;;
2)
	bar n-held
	hlock -w $LONG n true || t="node 2's X failed"
	bar n-done
	;;
*)
	bar n-held
	bar n-done
	;;
esac
[ "$t" = ok ] && ok "a holder is told when another node waits" ||
	not_ok "a holder is told when another node waits: $t"

# 9. A holder of IS on q (node 1) converts it to IX, for X on q/b, while
# node 2 waits for X on q: the conversion is asked of the DLM all the
# same (node 1's IS already blocks node 2), or the two nodes deadlock.
t=ok
case $node in
1)
	(
		hlock -s 9 q/a || exit 2
		vm-cluster-barrier q-held || exit 2
		vm-cluster-barrier q-waits || exit 2
		hlock -w $LONG 9 q/b || exit 1
	) 9<>/dev/hlock
	case $? in
	0) ;;
	1) t="the conversion to IX never came" ;;
	*) t="S on q/a or a barrier failed" ;;
	esac
	bar q-done
	;;
2)
	bar q-held
	hlock -w $LONG q touch /tmp/q-granted &
	pid=$!
	sleep 1
	bar q-waits
	bar q-done
	wait $pid || t="X on q failed"
	granted q-granted || t="X on q never granted"
	;;
*)
	bar q-held
	bar q-waits
	bar q-done
	;;
esac
[ "$t" = ok ] && ok "a conversion is not held back by another node's wait" ||
	not_ok "a conversion is not held back by another node's wait: $t"

# 10. Tries right after a release.  Without caching, this node's DLM lock
# is still going down when the try comes: the try waits for that answer
# and then asks the DLM, it does not fail.  Node 1 takes the lock first,
# so that it masters the resource and node 2's answers cross the network.
t=ok
case $node in
1)
	hlock u true || t="node 1's X failed"
	bar u-mastered
	bar u-done
	;;
2)
	bar u-mastered
	i=0
	while [ $i -lt 20 ]; do
		hlock -w $LONG u true || t="X failed"
		hlock -n u true || t="try $i right after a release failed"
		i=$((i + 1))
	done
	bar u-done
	;;
*)
	bar u-mastered
	bar u-done
	;;
esac
[ "$t" = ok ] && ok "tries right after a release" ||
	not_ok "tries right after a release: $t"

# 11. Lock value blocks cross nodes: what an X holder on one node sets, an
# S holder on the next reads; a SIX holder there sets the next value,
# which node 1 reads under X; S held on two nodes at once reads the same.
t=ok
case $node in
1)
	v=$(hlock_cluster_lvb v x one) || t="X on node 1 failed"
	[ -z "$v" ] || t="node 1 read '$v' before any was set"
	bar v-one
	bar v-two
	v=$(hlock_cluster_lvb v x) || t="X on node 1 failed again"
	[ "$v" = two ] || t="node 1 read '$v', not two"
	hlock -s v -c "vm-cluster-barrier v-shared && vm-cluster-barrier v-read" ||
		t="S on node 1 failed"
	;;
2)
	bar v-one
	v=$(hlock_cluster_lvb v s) || t="S on node 2 failed"
	[ "$v" = one ] || t="node 2 read '$v', not one"
	v=$(hlock_cluster_lvb v six two) || t="SIX on node 2 failed"
	[ "$v" = one ] || t="node 2 read '$v' under SIX, not one"
	bar v-two
	bar v-shared
	v=$(hlock_cluster_lvb v s) || t="S beside node 1's failed"
	[ "$v" = two ] || t="node 2 read '$v' beside node 1's S, not two"
	bar v-read
	;;
*)
	bar v-one
	bar v-two
	bar v-shared
	v=$(hlock_cluster_lvb v s) || t="S on node $node failed"
	[ "$v" = two ] || t="node $node read '$v', not two"
	bar v-read
	;;
esac
[ "$t" = ok ] && ok "lock value blocks cross nodes" ||
	not_ok "lock value blocks cross nodes: $t"

# 12. lshlock shows this node's DLM mode on a resource (NODEMODE), and
# whether another node waits there (REMOTE): node 1 holds S on m, node 2
# waits for X on it.  Each polls its own table until the row comes.
t=ok
# listed ROW: whether lshlock lists ROW (resource, state, mode, DLM mode
# and REMOTE).
listed() {
	lshlock -r -n -o resource,state,mode,nodemode,remote | grep -qx "$1"
}
case $node in
1)
	(
		hlock -s 9 m || exit 2
		vm-cluster-barrier m-held || exit 2
		vm-cluster-barrier m-waits || exit 2
		within listed "m granted S S yes" || exit 1
	) 9<>/dev/hlock
	case $? in
	0) ;;
	1) t="no row 'm granted S S yes': $(lshlock -r -n -o resource,state,mode,nodemode,remote | grep '^m ')" ;;
	*) t="S on m or a barrier failed" ;;
	esac
	bar m-done
	;;
2)
	bar m-held
	hlock -w $LONG m true &
	pid=$!
	within listed "m waiting X NL no" ||
		t="no row 'm waiting X NL no': $(lshlock -r -n -o resource,state,mode,nodemode,remote | grep '^m ')"
	bar m-waits
	bar m-done
	wait "$pid" || t="X on m failed"
	;;
*)
	bar m-held
	bar m-waits
	bar m-done
	;;
esac
[ "$t" = ok ] && ok "lshlock shows the DLM mode and remote waiters" ||
	not_ok "lshlock shows the DLM mode and remote waiters: $t"

# 13. A wait for another node's lock that ends (a signal here) takes its
# request out of the DLM's queue (DLM_LKF_CANCEL), rather than leave it
# to take the lock later for nobody: node 1 holds X on z, and so masters
# it, and sees node 2's request queue there, then leave.
t=ok
# queued NAME: whether a DLM lock waits or converts on the DLM resource
# NAME, as this node's DLM shows it (the master's shows every node's).
queued() {
	awk -v n="\"$1\"" '
		/^Resource / { r = ($NF == n); q = 0; next }
		/^Granted Queue/ { q = 0; next }
		/^(Conversion|Waiting) Queue/ { q = 1; next }
		r && q && NF { found = 1 }
		END { exit !found }' /sys/kernel/debug/dlm/hlock
}
unqueued() {
	! queued "$1"
}
case $node in
1)
	(
		hlock 9 z || exit 3
		vm-cluster-barrier z-held || exit 3
		within queued pz || exit 1
		vm-cluster-barrier z-queued || exit 3
		vm-cluster-barrier z-killed || exit 3
		within unqueued pz || exit 2
	) 9<>/dev/hlock
	case $? in
	0) ;;
	1) t="node 2's request never queued in the DLM" ;;
	2) t="node 2's request stayed in the DLM's queue" ;;
	*) t="X on z or a barrier failed" ;;
	esac
	bar z-done
	;;
2)
	bar z-held
	hlock -w $LONG z true &
	pid=$!
	bar z-queued
	kill -TERM $pid
	wait $pid
	[ $? -gt 128 ] || t="the waiter did not die of the signal"
	bar z-killed
	bar z-done
	;;
*)
	bar z-held
	bar z-queued
	bar z-killed
	bar z-done
	;;
esac
[ "$t" = ok ] && ok "a wait that ends leaves the DLM's queue" ||
	not_ok "a wait that ends leaves the DLM's queue: $t"

# 14. An administrator binds the lock space of another IPC namespace to a
# DLM lockspace of its own (HLOCK_IOC_CLUSTER, hlock --cluster): there,
# X on node 1 blocks a try on node 2, while the same path in the initial
# namespace's lock space (lockspace hlock) is free; while a locker is open
# in the namespace its binding stays; then the binding goes.
t=ok
unshare -i sleep 1000 &
nspid=$!
# Whether the process $nspid is in an IPC namespace of its own by now.
unshared() {
	[ "$(readlink /proc/$nspid/ns/ipc)" != "$(readlink /proc/self/ns/ipc)" ]
}
within unshared || t="unshare -i failed"
[ "$(hlock --cluster)" = hlock ] || t="the initial space is not bound to hlock"
# Bound to the initial space's lockspace, its first locker cannot open:
# a lockspace serves one lock space on a node.
hlock --cluster=hlock --pid $nspid || t="binding the namespace failed"
out=$(nsenter -t $nspid -i hlock -n c true 2>&1)
rc=$?
[ $rc = 66 ] && [ "${out#*in use on this node}" != "$out" ] ||
	t="a lock space sharing lockspace hlock: exit $rc, $out"
hlock --cluster=hlock2 --pid $nspid || t="binding the namespace failed"
[ "$(hlock --cluster --pid $nspid)" = hlock2 ] ||
	t="the namespace's binding does not read hlock2"
# Every node opens a locker in the namespace, which joins hlock2 (node 1
# first, alone), and no node locks there before every node's DLM has
# ended the recoveries of those joins (vm-cluster-settle).  Each locker
# is its namespace shell's descriptor 9, which keeps the space, and so
# the join, until the shell ends.
case $node in
1)
	nsenter -t $nspid -i sh -c '
		exec 9<>/dev/hlock || exit 3
		[ -d /sys/kernel/debug/dlm ] && ! [ -e /sys/kernel/debug/dlm/hlock2 ] &&
			exit 2
		vm-cluster-barrier b-first || exit 3
		vm-cluster-barrier b-joined || exit 3
		vm-cluster-settle hlock2 || exit 3
		vm-cluster-barrier b-settled || exit 3
		hlock 9 b || exit 3
		vm-cluster-barrier b-held || exit 3
		hlock --cluster= --pid '$nspid' 2>/dev/null
		[ $? = 75 ] || exit 1
		vm-cluster-barrier b-tried || exit 3
	'
	case $? in
	0) ;;
	1) t="unbinding the namespace with a locker open did not fail EBUSY" ;;
	2) t="this node's DLM has no lockspace hlock2" ;;
	*) t="X on b in the namespace, a barrier or the DLM's recovery failed" ;;
	esac
	;;
*)
	bar b-first
	# Prints the try's status.
	try=$(nsenter -t $nspid -i sh -c '
		exec 9<>/dev/hlock || exit 3
		vm-cluster-barrier b-joined || exit 3
		vm-cluster-settle hlock2 || exit 3
		vm-cluster-barrier b-settled || exit 3
		vm-cluster-barrier b-held || exit 3
		hlock -n b true
		echo $?
	')
	if [ $? != 0 ]; then
		t="a locker in the namespace, a barrier or the DLM's recovery failed"
	elif [ "$try" != 1 ]; then
		t="a try on b in the namespace ended $try, not 1 (a conflict)"
	fi
	# The initial namespace's b is another resource, in another lockspace
	# (S: the other nodes but node 1 try it at the same time).
	hlock -n -s b true || t="a try on b in the initial namespace failed"
	bar b-tried
	;;
esac
bar b-done
# Not at once: the barrier's busybox timeout keeps the namespace's locker
# open a moment after the shell that opened it is gone.
within hlock --cluster= --pid $nspid 2>/dev/null ||
	t="unbinding the namespace failed"
# The try asked the DLM for X on b, which node 1 holds, at once
# (NOQUEUE), was refused, waited cluster_try_ms for the queued request
# that followed and gave up; the node cancelled the request and asked
# nothing more: it left hlock2 after five requests, the root's lock and
# b's, each made in NL, the root's converted to IX, b's asked for X twice
# (the cancel aside; caching: without, a release lowers the root's DLM
# mode, and maybe a reclaim unlocks it).
left_hlock2() {
	dmesg | grep -o 'left DLM lockspace hlock2 after [0-9]* DLM requests'
}
if [ "$node" != 1 ] && [ "$cache" = Y ]; then
	within left_hlock2 >/dev/null
	out=$(left_hlock2)
	[ "$out" = "left DLM lockspace hlock2 after 5 DLM requests" ] ||
		t="node $node's DLM requests in hlock2: '$out', not 5"
fi
[ -z "$(hlock --cluster --pid $nspid)" ] || t="the namespace is still bound"
kill $nspid
wait $nspid 2>/dev/null
[ "$t" = ok ] && ok "another IPC namespace's lock space in its own lockspace" ||
	not_ok "another IPC namespace's lock space in its own lockspace: $t"

# 15. Fencing tokens increase across nodes: each node in turn, twice
# round, takes X on tk, draws its grant's token (from the lockspace's
# counter, hl_cluster_token()) and leaves it as tk's value, which the
# next holder, on the next node, reads: each token is greater than the
# last one drawn.
t=ok
r=1
while [ $r -le 2 ]; do
	i=1
	while [ $i -le "$nodes" ]; do
		if [ $i = "$node" ]; then
			out=$(hlock_cluster_lvb -t tk X) ||
				t="X on tk or its token failed"
			prev=$(echo "$out" | sed -n 1p)
			tok=$(echo "$out" | sed -n 2p)
			if [ -z "$prev" ]; then
				[ $r = 1 ] && [ $i = 1 ] ||
					t="round $r: no token before this node's"
			elif ! [ "$tok" -gt "$prev" ] 2>/dev/null; then
				t="round $r: token $tok after $prev"
			fi
			echo "# round $r: token $tok after ${prev:-none}"
		fi
		bar "tk-$r-$i"
		i=$((i + 1))
	done
	r=$((r + 1))
done
[ "$t" = ok ] && ok "fencing tokens increase across nodes" ||
	not_ok "fencing tokens increase across nodes: $t"

# 16. The DLM refuses requests at once (dlm_lock() returns an error, as it
# does without memory; the module parameter test_dlm_fail makes the next
# N fail so): node 1 asks again a moment later, and X on rf is granted,
# where nothing would answer the waiter otherwise; a try-lock whose
# request is refused gives up.
t=ok
if [ "$node" = 1 ]; then
	p=/sys/module/hlock/parameters/test_dlm_fail
	echo 3 >$p || t="test_dlm_fail cannot be set"
	hlock -w $LONG rf true || t="X on rf failed after refused DLM requests"
	[ "$(cat $p)" = 0 ] || t="$(cat $p) of 3 refusals left unused"
	dmesg | grep -q 'DLM request in lockspace hlock: -12; asking again' ||
		t="no refusal in the kernel log"
	# A try-lock gives up when the DLM refuses its request, as when
	# another node holds the resource.
	echo 1 >$p
	hlock -n rt true 2>/dev/null
	rc=$?
	[ $rc = 1 ] || t="a try whose DLM request was refused ended $rc"
	echo 0 >$p
	hlock -n rt true || t="a try after the refusal failed"
fi
bar refused
[ "$t" = ok ] && ok "a request the DLM refused at once is asked again" ||
	not_ok "a request the DLM refused at once is asked again: $t"

# 17. A lock space bound to a lockspace leaves it after its last locker
# closes, and a locker that opens meanwhile waits until it has left, then
# joins again: two processes of one namespace open, lock and close, 10
# times each, at once (node 1 alone in the lockspace hlock3).  The
# binding then goes, once the last space left.
t=ok
if [ "$node" = 1 ]; then
	unshare -i sleep 1000 &
	nspid=$!
	within unshared || t="unshare -i failed"
	hlock --cluster=hlock3 --pid $nspid || t="binding the namespace failed"
	nsenter -t $nspid -i sh -c '
		loop() {
			i=0
			while [ $i -lt 10 ]; do
				hlock -w 60 "r$1" true || exit 1
				i=$((i + 1))
			done
		}
		loop 1 & a=$!
		loop 2 & b=$!
		wait $a; ra=$?
		wait $b
		[ $? = 0 ] && [ $ra = 0 ]
	' 2>/tmp/reopen.err || t="a locker failed: $(head -n 1 /tmp/reopen.err)"
	[ "$t" = ok ] && ! hlock --cluster= --pid $nspid &&
		t="unbinding the namespace failed"
	joins=$(dmesg | grep -c 'joined DLM lockspace hlock3')
	lefts=$(dmesg | grep -c 'left DLM lockspace hlock3 after')
	echo "# hlock3 joined $joins times and left $lefts times"
	[ "$t" != ok ] || { [ "$joins" -ge 1 ] && [ "$lefts" = "$joins" ]; } ||
		t="$joins joins of hlock3 and $lefts leaves once unbound"
	kill $nspid
	wait $nspid 2>/dev/null
fi
bar reopened
[ "$t" = ok ] && ok "a lock space that ends leaves its lockspace before the next joins" ||
	not_ok "a lock space that ends leaves its lockspace before the next joins: $t"

# 18. Locks queued without blocking complete across nodes: while node 1
# holds X on aq, node 2 queues S on it twice, with HLOCK_F_ASYNC and
# through io_uring (hlock_cluster_events -q); neither completes while
# node 1 holds X, both do once it releases.
t=ok
case $node in
1)
	hlock aq -c "vm-cluster-barrier aq-held && vm-cluster-barrier aq-queued" ||
		t="node 1's X failed"
	bar aq-done
	;;
2)
	bar aq-held
	hlock_cluster_events -q aq $LONG >/tmp/queued 2>/tmp/queued.err &
	pid=$!
	within grep -q queued /tmp/queued ||
		t="S never queued: $(head -n 1 /tmp/queued.err)"
	sleep 1
	! grep -q granted /tmp/queued || t="S completed while node 1 held X"
	bar aq-queued
	wait $pid || t="S did not complete: $(head -n 1 /tmp/queued.err)"
	bar aq-done
	;;
*)
	bar aq-held
	bar aq-queued
	bar aq-done
	;;
esac
[ "$t" = ok ] && ok "async and io_uring locks complete when another node releases" ||
	not_ok "async and io_uring locks complete when another node releases: $t"

# 18b. A ring lock that waits for another node ends without its grant by
# its timeout, by an unlock of its path, and by its locker's close and
# its ring's teardown (hlock_cluster_events -e), each leaving nothing
# queued here or with the DLM: once node 1 releases, node 2 takes X at
# once.
t=ok
case $node in
1)
	hlock re -c "vm-cluster-barrier re-held && vm-cluster-barrier re-ended" ||
		t="node 1's X failed"
	bar re-done
	;;
2)
	bar re-held
	hlock_cluster_events -e re 10 >/tmp/ends 2>/tmp/ends.err ||
		t="$(head -n 1 /tmp/ends.err)"
	bar re-ended
	[ "$t" != ok ] || hlock -w 10 re true ||
		t="no X once node 1 released"
	bar re-done
	;;
*)
	bar re-held
	bar re-ended
	bar re-done
	;;
esac
[ "$t" = ok ] && ok "a ring lock that waits for another node ends by timeout, unlock and teardown" ||
	not_ok "a ring lock that waits for another node ends by timeout, unlock and teardown: $t"

# 19. A reclaim pass unlocks a resource whose blocking AST came in before
# its work took it in: node 1 caches X on bx, node 2 asks for it, and
# node 1's work, which the blocking AST queued, is held back (the test
# build's stall point "bast") while a reclaim pass asks to unlock bx; let
# go, the work notes the AST and unlocks in one pass.  Node 2 is granted;
# afterwards node 1 takes X on bx again, no other node waiting any more.
# (Caching only: without, bx goes down to NL at the release, and no
# blocking AST comes.)
t=ok
stall=/sys/kernel/debug/hlock/test_stall
# stalled: whether this node's stall point stalls now.
stalled() {
	[ "$(cat $stall)" = stalled ]
}
if [ "$cache" != Y ]; then
	skip "a reclaim unlock that crosses a blocking AST: needs cluster_cache"
else
	case $node in
	1)
		hlock bx true || t="node 1's X failed"
		echo "bast bx" >$stall || t="stall point bast cannot be armed"
		bar bx-armed
		if within stalled; then
			echo 1 >/sys/kernel/debug/hlock/reclaim ||
				t="reclaim failed"
		else
			t="node 1 never noted node 2's wait"
		fi
		echo go >$stall
		bar bx-go
		bar bx-taken
		hlock -w $LONG bx true ||
			t="X on bx after node 2's failed: node 1 still sees a waiter"
		;;
	2)
		bar bx-armed
		hlock -w $LONG bx true || t="node 2's X on bx failed"
		bar bx-go
		bar bx-taken
		;;
	*)
		bar bx-armed
		bar bx-go
		bar bx-taken
		;;
	esac
	bar bx-done
	[ "$t" = ok ] && ok "a reclaim unlock that crosses a blocking AST" ||
		not_ok "a reclaim unlock that crosses a blocking AST: $t"
fi

# 20. A completion AST held after it noted the answer and before it queued
# the work (the test build's stall point "ast"), while a pass of the work
# that something else queued takes the answer in (the resume work, which
# a request the DLM refused at once queues 100 ms later) and reclaim
# passes find the resource idle, with no DLM lock: the resource stays
# until the callback is done with it.  On node 1 alone: a reclaim pass
# unlocks ua, and the unlock's answer is held.  Without cluster_cache the
# DLM lock goes with the last release, before any reclaim pass: skipped.
t=ok
[ "$cache" = Y ] || t=nocache
res() {
	sed -n 's/^resources //p' /sys/kernel/debug/hlock/resources
}
reclaim() {
	echo 1 >/sys/kernel/debug/hlock/reclaim
}
# none: whether a reclaim pass leaves no resource (a first pass unlocks
# the DLM locks of idle ones, a later one frees them once answered).
none() {
	reclaim
	[ "$(res)" = 0 ]
}
reclaimed_stalled() {
	reclaim
	stalled
}
if [ "$node" = 1 ] && [ "$t" = ok ]; then
	within none || t="resources stay: $(res)"
	hlock ua true || t="X on ua failed"
	echo "ast ua" >$stall || t="stall point ast cannot be armed"
	# A pass that meets ua's work still running (the grant's) leaves ua
	# to the next one: pass until one unlocked it and its answer is held.
	if within reclaimed_stalled; then
		echo 1 >/sys/module/hlock/parameters/test_dlm_fail
		hlock -n uo true 2>/dev/null
		echo 0 >/sys/module/hlock/parameters/test_dlm_fail
		# uo has no DLM lock, and goes; ua must stay.
		i=0
		while [ $i -lt 10 ]; do
			reclaim
			sleep 0.1
			i=$((i + 1))
		done
		r=$(res)
		if ! stalled; then
			t=skip
		elif [ "$r" != 1 ]; then
			t="$r resources while ua's AST was held: ua was freed"
		fi
	else
		t="ua's unlock was never answered"
	fi
	echo go >$stall
	within none || t="ua stays after its AST went on: $(res)"
	hlock -w $LONG ua true || t="X on ua failed afterwards"
fi
bar ast-done
if [ "$t" = nocache ]; then
	skip "a completion AST held keeps its resource: needs cluster_cache"
elif [ "$t" = skip ]; then
	skip "a completion AST held keeps its resource: the stall gave up first"
elif [ "$t" = ok ]; then
	ok "a completion AST held keeps its resource"
else
	not_ok "a completion AST held keeps its resource: $t"
fi

# 21. Another node's wait that gives up ends: node 1 holds IX on pdb and
# S on ps; node 2 asks X on both, 1.5 s each, and times out, which tells
# nobody.  Node 1 keeps what other nodes wait for, so it probes every
# cluster_probe_ms: once it finds nobody waiting any more, its own
# compatible requests, X on pdb/c and S on ps, are granted while the
# holder keeps its locks, and its grant on ps blocks nobody.  (They used
# to wait until the holder let go.)
t=ok
case $node in
1)
	$do open 0 lock 0 pdb/x X -1 expect 0 lock 0 ps S -1 expect 0 \
		bar rw-held bar rw-gone \
		open 1 lock 1 pdb/c X 20000 expect 0 lock 1 ps S 20000 expect 0 \
		until 0 5000 blocking 0 ps \; expect 0 close 1 close 0 \
		bar rw-done >/tmp/rw.out 2>&1 ||
		t="$(grep -E "^(expect|slower|faster|bar)" /tmp/rw.out | tail -n 1)"
	;;
2)
	bar rw-held
	hlock -w 1.5 pdb true
	[ $? = 1 ] || t="X on pdb did not time out"
	hlock -w 1.5 ps true
	[ $? = 1 ] || t="X on ps did not time out"
	bar rw-gone
	bar rw-done
	;;
*)
	bar rw-held
	bar rw-gone
	bar rw-done
	;;
esac
[ "$t" = ok ] && ok "a remote waiter that gave up blocks nothing" ||
	not_ok "a remote waiter that gave up blocks nothing: $t"

# 22. A conversion deadlock across nodes: nodes 1 and 2 hold S on cv and
# both convert to X.  The DLM refuses the conversion that asked second;
# that node's holders hold all it holds, so their conversion fails with
# EDEADLK at once (it used to ask the DLM again and again until its
# timeout), the holder lets go, and the other conversion is granted.
t=ok
case $node in
1 | 2)
	$do open 0 lock 0 cv S -1 expect 0 bar cv-s \
		lock 0 cv X 30000 expect 0,EDEADLK close 0 bar cv-done \
		>/tmp/cv.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/cv.out | tail -n 1)"
	grep "^lock 0 cv" /tmp/cv.out | tail -n 1 | sed 's/^/# /'
	;;
*)
	bar cv-s
	bar cv-done
	;;
esac
[ "$t" = ok ] && ok "a conversion deadlock across nodes ends with EDEADLK" ||
	not_ok "a conversion deadlock across nodes ends with EDEADLK: $t"

# 23. A try wins a resource another node only caches: node 1 takes X on
# tc and lets go (its DLM lock stays, cached).  Node 2's tries are
# granted: the first is refused at once and tells node 1 (NOQUEUEBAST),
# waits for the queued request that follows, which node 1 lets through;
# the others find node 2's own DLM lock.  (None was before.)  With
# cluster_try_ms long, as a loaded host's VMs may take a while.
t=ok
case $node in
1)
	hlock tc true || t="node 1's X failed"
	bar tc-cached
	bar tc-done
	;;
2)
	bar tc-cached
	echo 10000 >/sys/module/hlock/parameters/cluster_try_ms ||
		t="cluster_try_ms cannot be set"
	i=0
	won=0
	while [ $i -lt 40 ]; do
		m=-x
		[ $i -lt 20 ] || m=-s
		hlock -n $m tc true && won=$((won + 1))
		i=$((i + 1))
	done
	[ "$won" = 40 ] || t="$won of 40 tries granted"
	echo 100 >/sys/module/hlock/parameters/cluster_try_ms
	bar tc-done
	;;
*)
	bar tc-cached
	bar tc-done
	;;
esac
[ "$t" = ok ] && ok "a try wins what another node only caches" ||
	not_ok "a try wins what another node only caches: $t"

# 24. FRONT tries after a refusal: node 1 holds X on tf, node 2's try
# fails; node 1 lets go; node 2's FRONT tries are granted, each asking
# the DLM anew.  (Every one failed, unasked, before.)
t=ok
case $node in
1)
	$do open 0 lock 0 tf X -1 expect 0 bar tf-held bar tf-refused \
		close 0 bar tf-free bar tf-done >/tmp/tf.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/tf.out | tail -n 1)"
	;;
2)
	bar tf-held
	hlock -n tf true
	[ $? = 1 ] || t="a try did not fail while node 1 held X"
	bar tf-refused
	bar tf-free
	$do param cluster_try_ms 10000 open 0 \
		lock 0 tf X 0 front expect 0 unlock 0 tf expect 0 \
		lock 0 tf S 0 front expect 0 unlock 0 tf expect 0 \
		lock 0 tf X 0 front expect 0 unlock 0 tf expect 0 \
		lock 0 tf/z X 0 front expect 0 unlock 0 tf/z expect 0 \
		lock 0 tf X 0 front expect 0 unlock 0 tf expect 0 \
		close 0 param cluster_try_ms 100 >/tmp/tf.out 2>&1 ||
		t="$(grep -E "^expect" /tmp/tf.out | tail -n 1)"
	bar tf-done
	;;
*)
	bar tf-held
	bar tf-refused
	bar tf-free
	bar tf-done
	;;
esac
[ "$t" = ok ] && ok "FRONT tries after a refusal ask the DLM" ||
	not_ok "FRONT tries after a refusal ask the DLM: $t"

# 25. An expired lease is taken over for a waiter on another node: node 1
# holds X on lz under a 2 s lease it does not renew; node 2 waits for X
# on lz (30 s at most) and is granted once the lease expired; node 1's
# unlock then says ESTALE.  (Node 2 timed out, and the unlock said 0.)
t=ok
case $node in
1)
	$do open 0 lock 0 lz X -1 lease=2000 expect 0 bar lz-held \
		bar lz-taken unlock 0 lz expect ESTALE close 0 bar lz-done \
		>/tmp/lz.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/lz.out | tail -n 1)"
	;;
2)
	bar lz-held
	hlock -w 30 lz true || t="X on lz was not granted: the lease stayed"
	bar lz-taken
	bar lz-done
	;;
*)
	bar lz-held
	bar lz-taken
	bar lz-done
	;;
esac
[ "$t" = ok ] && ok "an expired lease is taken over for another node" ||
	not_ok "an expired lease is taken over for another node: $t"

# 26. A yield lets a waiter on another node in: node 1 holds X on yz,
# node 2 waits for it; once node 1 knows (HLOCK_IOC_BLOCKING), its yield
# releases X, node 2 holds it for a second, and the yield takes it back
# after that.  (It returned at once, releasing nothing.)
t=ok
case $node in
1)
	$do open 0 lock 0 yz X -1 expect 0 bar yz-held \
		until 1 30000 blocking 0 yz \; expect 1 \
		yield 0 30000 expect 0 slower 900 held 0 yz expect 5 \
		close 0 bar yz-done >/tmp/yz.out 2>&1 ||
		t="$(grep -E "^(expect|slower|bar)" /tmp/yz.out | tail -n 1)"
	;;
2)
	bar yz-held
	hlock -w 30 yz sleep 1 || t="X on yz was not granted"
	bar yz-done
	;;
*)
	bar yz-held
	bar yz-done
	;;
esac
[ "$t" = ok ] && ok "a yield lets a waiter on another node in" ||
	not_ok "a yield lets a waiter on another node in: $t"

# 27. Nodes that go down only to IS do not starve a SIX on a third: nodes
# 1 and 3 keep IS on s6 (S on s6/k) and three readers each take S on s6
# again and again, out of step, as in test 3; node 2 asks SIX.  A reader
# node gives way down to IS (which SIX does not wait for) and asks for S
# again with a conversion that queues behind the SIX (DLM_LKF_QUECVT),
# not one granted at once beside the other reader node's S.
if [ "$nodes" -lt 3 ]; then
	skip "IS holders' nodes do not starve a SIX: needs 3 nodes"
else
	t=ok
	rm -f /tmp/s6stop /tmp/s6k
	if [ "$node" != 2 ]; then
		hlock -s s6/k -c "touch /tmp/s6k &&
			until [ -e /tmp/s6stop ]; do sleep 0.1; done" &
		holder=$!
		within test -e /tmp/s6k || t="S on s6/k failed"
		[ "$node" = 1 ] || sleep 0.15
		for i in 1 2 3; do
			(
				while [ ! -e /tmp/s6stop ]; do
					hlock -s s6 sleep 2 || exit 1
				done
			) &
			eval "reader$i=\$!"
			sleep 0.6
		done
		bar s6-readers
		bar s6-done
		touch /tmp/s6stop
		wait "$reader1" && wait "$reader2" && wait "$reader3" &&
			wait "$holder" || t="a reader or the holder failed"
	else
		bar s6-readers
		hlock -m SIX -w $LONG s6 true || t="SIX starved behind the readers"
		bar s6-done
	fi
	[ "$t" = ok ] && ok "IS holders' nodes do not starve a SIX" ||
		not_ok "IS holders' nodes do not starve a SIX: $t"
fi

exit $failed
