#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Seeded random sequences on every node of a cluster at once, the cluster
# counterpart of hlock_interact, run on every node by
#
#   scripts/vm-cluster --extra build/selftests/hlock_cluster_interact \
#           --extra build/tools/hlock-deadlockd \
#           --extra selftests/hlock_cluster_lib.sh \
#           N selftests/hlock_cluster_interact.sh [SEEDS [STEPS [FIRST [-v]]]]
#
# Every node runs hlock_cluster_interact (see its header): the same seeds
# (6 from 1 of 200 steps by default, scaled by HLOCK_TEST_SCALE), with
# commands of its own, over the same paths; node 1 also runs the witness
# that every locker of every node reports its grants to (TCP port 7701),
# which fails the run when two lockers hold conflicting modes at once.
# Between seeds' halves every node releases everything, then each node in
# turn takes and tries X on every path (granted within 5 s, blocking
# nobody), and the nodes duel: lease takeover, yield, a waiter that gives
# up, tries, a conversion deadlock, an asynchronous request.
# hlock-deadlockd runs on every node (a round every 300 ms while a wait is
# that old): cycles of waits across nodes end with EDEADLK.  Prints TAP:
# one line a seed on each node, and the witness's verdict on node 1; a
# failure names its seed and step and the command that runs it alone.
#
# Leading arguments HLOCK_CI_DUEL=NAME, HLOCK_CI_PROBES=0 and
# HLOCK_CI_KEEP_GOING=1 are put in the environment, for diagnosis (see
# hlock_cluster_interact.c): the VMs do not inherit the host's.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
nodes=${HLOCK_NODES:?run me with scripts/vm-cluster}
dir=$(dirname "$0")

# Only its barriers (bar): the TAP lines are the program's.
. "$dir/hlock_cluster_lib.sh"

# The parameters the run depends on, as this node has them.
for p in cluster cluster_cache cluster_probe_ms cluster_try_ms write_tickets \
	cluster_deadlock_ms; do
	f=/sys/module/hlock/parameters/$p
	[ -r "$f" ] && echo "# $p=$(cat "$f")"
done
while [ $# -gt 0 ]; do
	case $1 in
	HLOCK_CI_*=*) export "${1%%=*}=${1#*=}"; shift ;;
	*) break ;;
	esac
done
# hlock-deadlockd, searching often: a cycle of waits across nodes ends
# with EDEADLK, which the program allows every lock that waits (a timed,
# an asynchronous one, a yield's).
"$dir/hlock-deadlockd" --interval 300 --verbose >/tmp/dld.log 2>&1 &
dld=$!
bar interact-start
"$dir/hlock_cluster_interact" "$node" "$nodes" "$@"
rc=$?
bar interact-done
kill "$dld"
wait "$dld"
echo "# hlock-deadlockd on node $node refused $(grep -c "refused the starred" /tmp/dld.log) waits, in $(grep -c " begins," /tmp/dld.log) rounds"
grep -A 3 "refused the starred" /tmp/dld.log | head -n 12 | sed 's/^/# /'
exit $rc
