#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Lock churn across the nodes of a cluster while node 1 reclaims, run on
# every node by
#
#   scripts/vm-cluster --extra build/selftests/hlock_cluster_churn \
#           --extra selftests/hlock_cluster_lib.sh \
#           N selftests/hlock_cluster_churn.sh [SECONDS]
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
secs=${1:-20}
threads=4
seed=${HLOCK_SEED:-$(($(date +%s) % 100000 * 10 + node))}
churn=$(dirname "$0")/hlock_cluster_churn

echo "TAP version 13"
echo "1..3"

. "$(dirname "$0")/hlock_cluster_lib.sh"

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
$churn run $r $threads "$secs" "$seed" >/tmp/churn.out
rc=$?
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

exit $failed
