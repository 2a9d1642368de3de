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
# after 30 s.  Prints TAP.

echo "TAP version 13"
echo "1..2"
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
