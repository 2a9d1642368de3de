#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Deadlocks across nodes, run on every node of a cluster by
#
#   scripts/vm-cluster --extra build/tools/hlock \
#           --extra build/tools/hlock-deadlockd \
#           --extra build/selftests/hlock_cluster_do \
#           --extra selftests/hlock_cluster_lib.sh \
#           N selftests/hlock_cluster_deadlock.sh
#
# Every node runs hlock-deadlockd.  Each test builds a cycle of waits whose
# edges span nodes, which no node's own search sees: a 2-node cycle, a
# 3-node one (3 nodes), one through intents, one mixing a node's local
# edge with remote ones, and a conversion deadlock (S to X on two nodes,
# which the DLM may end first).  Each must end with exactly one EDEADLK:
# every node holds S on a marker resource per EDEADLK it got, and node 1
# then counts the markers of all, with tries.  The others are
# granted once the victim lets go.  How long the victim waited is printed
# (the bound is cluster_deadlock_ms plus a round; not a pass criterion).
# Then locks taken in one order only, on every node at once, get no
# EDEADLK at all.  Last, the daemons' logs name each cycle they refused.

node=${HLOCK_NODE:?run me with scripts/vm-cluster}
nodes=${HLOCK_NODES:?run me with scripts/vm-cluster}
LONG=60
n=0
failed=0
dir=$(dirname "$0")
do=$dir/hlock_cluster_do

echo "TAP version 13"
# Node 3 of 3 crashes in test 10.
if [ "$nodes" = 3 ] && [ "$node" = 3 ]; then
	echo "1..9"
else
	echo "1..11"
fi

. "$dir/hlock_cluster_lib.sh"

# The daemon: one per node, all in the group before the first cycle.
"$dir/hlock-deadlockd" --verbose >/tmp/dld.log 2>&1 &
dld=$!
t=ok
within grep -q "^hlock-deadlockd: $nodes members" /tmp/dld.log ||
	t="the daemons did not meet: $(tail -n 3 /tmp/dld.log)"
bar dld-up
[ "$t" = ok ] && ok "hlock-deadlockd runs on every node" ||
	not_ok "hlock-deadlockd runs on every node: $t"

# result FILE PATH: the result of the last lock of PATH in FILE (a
# hlock_cluster_do output), and how long it took, as "R MS".
result() {
	sed -n "s|^lock [0-9] $2: \([A-Z0-9-]*\) (\([0-9]*\) ms)\$|\1 \2|p" "$1" |
		tail -n 1
}

# victims NAME R...: hold S on v/NAME/NODE-I for each R that is EDEADLK;
# node 1 then counts the markers of every node with tries (which fail on
# a held one, and on nothing else: nobody else touches these resources,
# so none is cached anywhere): there must be exactly one.  Sets t when
# not (on node 1, whose verdict fails the run).
victims() {
	name=$1
	shift
	# Not i: within() uses it.
	mk=0
	pids=""
	rm -f "/tmp/$name-go"
	for r in "$@"; do
		mk=$((mk + 1))
		[ "$r" = EDEADLK ] || continue
		hlock -s "v/$name/$node-$mk" -c "touch /tmp/$name-m$mk &&
			until [ -e /tmp/$name-go ]; do sleep 0.1; done" &
		pids="$pids $!"
		within test -e "/tmp/$name-m$mk" || t="marker $mk not taken"
	done
	bar "$name-count"
	if [ "$node" = 1 ]; then
		# A try gives up after cluster_try_ms waiting for the DLM's
		# answer, which a loaded host may take longer to give.
		try=/sys/module/hlock/parameters/cluster_try_ms
		try_was=$(cat $try)
		echo 10000 >$try
		c=0
		for k in $(seq "$nodes"); do
			for mk in 1 2 3; do
				hlock -n "v/$name/$k-$mk" true || c=$((c + 1))
			done
		done
		echo "$try_was" >$try
		[ "$c" = 1 ] || t="$c EDEADLKs across the nodes, not 1"
	fi
	bar "$name-counted"
	touch "/tmp/$name-go"
	for p in $pids; do
		wait "$p" || t="a marker failed"
	done
}

# ring NAME K: nodes 1 to K each hold X on NAME/I, then ask for
# NAME/(I%K+1): a cycle through K nodes.  The victim lets go of its own,
# its neighbour is granted and lets go, and so on round the ring.
ring() {
	name=$1
	k=$2
	t=ok
	r=""
	if [ "$node" -le "$k" ]; then
		nx=$((node % k + 1))
		$do open 0 lock 0 "$name/$node" X -1 expect 0 bar "$name-held" \
			lock 0 "$name/$nx" X 30000 expect 0,EDEADLK \
			unlock 0 "$name/$node" unlock 0 "$name/$nx" \
			bar "$name-done" close 0 >"/tmp/$name.out" 2>&1 ||
			t="$(grep -E "^(expect|bar)" "/tmp/$name.out" | tail -n 1)"
		set -- $(result "/tmp/$name.out" "$name/$nx")
		r=${1:-none}
		echo "# node $node: $r after ${2:-?} ms"
	else
		bar "$name-held"
		bar "$name-done"
	fi
	victims "$name" $r
}

# 2. A cycle of 2 nodes.
ring c2 2
[ "$t" = ok ] && ok "a cycle of 2 nodes ends with one EDEADLK" ||
	not_ok "a cycle of 2 nodes ends with one EDEADLK: $t"

# 3. A cycle of 3 nodes.
if [ "$nodes" -lt 3 ]; then
	skip "a cycle of 3 nodes: needs 3 nodes"
else
	ring c3 3
	[ "$t" = ok ] && ok "a cycle of 3 nodes ends with one EDEADLK" ||
		not_ok "a cycle of 3 nodes ends with one EDEADLK: $t"
fi

# 4. Through intents: node 1 holds X on ia and asks X on ib/t (IX on ib);
# node 2 holds X on ib and asks X on ia/t (IX on ia).
t=ok
r=""
case $node in
1 | 2)
	mine=ia
	other=ib
	[ "$node" = 1 ] || { mine=ib; other=ia; }
	$do open 0 lock 0 $mine X -1 expect 0 bar in-held \
		lock 0 $other/t X 30000 expect 0,EDEADLK \
		unlock 0 $mine unlock 0 $other/t bar in-done close 0 \
		>/tmp/in.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/in.out | tail -n 1)"
	set -- $(result /tmp/in.out $other/t)
	r=${1:-none}
	echo "# node $node: $r after ${2:-?} ms"
	;;
*)
	bar in-held
	bar in-done
	;;
esac
victims in $r
[ "$t" = ok ] && ok "a cycle through intents ends with one EDEADLK" ||
	not_ok "a cycle through intents ends with one EDEADLK: $t"

# 5. Local and remote edges: on node 1, locker 0 holds X on mx/a and
# waits for mx/b; node 2 holds mx/b and waits for mx/c; node 1's locker 1
# holds mx/c and closes the cycle asking for mx/a, last.  Its own node's
# search sees only the edge between its two lockers.  The victim is the
# last to wait, locker 1: the others are asynchronous, so that a process
# blocked in a wait never holds what the cycle's end needs.
t=ok
r=""
case $node in
1)
	$do open 0 open 1 lock 0 mx/a X -1 expect 0 lock 1 mx/c X -1 \
		expect 0 bar mx-held lock 0 mx/b X -1 async expect EINPROGRESS \
		bar mx-b bar mx-bw sleep 300 lock 1 mx/a X 30000 \
		expect 0,EDEADLK \
		unlock 1 mx/c unlock 1 mx/a \
		wait 0 30000 expect 0,EDEADLK unlock 0 mx/a unlock 0 mx/b \
		bar mx-done close 0 close 1 >/tmp/mx.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/mx.out | tail -n 1)"
	set -- $(result /tmp/mx.out mx/a)
	r=${1:-none}
	echo "# node 1, locker 1: $r after ${2:-?} ms"
	w=$(sed -n 's/^wait 0 30000: \([A-Z0-9-]*\) .*/\1/p' /tmp/mx.out)
	echo "# node 1, locker 0: ${w:-none}"
	r="$r ${w:-none}"
	;;
2)
	$do open 0 lock 0 mx/b X -1 expect 0 bar mx-held bar mx-b \
		lock 0 mx/c X -1 async expect EINPROGRESS bar mx-bw \
		wait 0 30000 expect 0,EDEADLK \
		unlock 0 mx/b unlock 0 mx/c bar mx-done close 0 \
		>/tmp/mx.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/mx.out | tail -n 1)"
	set -- $(sed -n 's/^wait 0 30000: \([A-Z0-9-]*\) (\([0-9]*\) ms)$/\1 \2/p' \
		/tmp/mx.out)
	r=${1:-none}
	echo "# node 2: $r after ${2:-?} ms"
	;;
*)
	bar mx-held
	bar mx-b
	bar mx-bw
	bar mx-done
	;;
esac
victims mx $r
[ "$t" = ok ] && ok "a cycle of local and remote edges ends with one EDEADLK" ||
	not_ok "a cycle of local and remote edges ends with one EDEADLK: $t"

# 6. A conversion deadlock: nodes 1 and 2 hold S on cx and convert to X.
# The DLM may refuse one itself (DLM_LKF_CONVDEADLK), or the daemons:
# either way exactly one EDEADLK.
t=ok
r=""
case $node in
1 | 2)
	$do open 0 lock 0 cx S -1 expect 0 bar cx-s \
		lock 0 cx X 30000 expect 0,EDEADLK close 0 bar cx-done \
		>/tmp/cx.out 2>&1 ||
		t="$(grep -E "^(expect|bar)" /tmp/cx.out | tail -n 1)"
	set -- $(result /tmp/cx.out cx)
	r=${1:-none}
	echo "# node $node: $r after ${2:-?} ms"
	;;
*)
	bar cx-s
	bar cx-done
	;;
esac
victims cx $r
[ "$t" = ok ] && ok "a conversion deadlock across nodes ends with one EDEADLK" ||
	not_ok "a conversion deadlock across nodes ends with one EDEADLK: $t"

# 7. One lock order on every node: X on o/1, then o/2, o/3, each held
# while the next is asked for, many times at once: waits across nodes,
# no cycle, so no EDEADLK.  And the daemons refused nothing else.
t=ok
before=$(grep -c "refused the starred wait" /tmp/dld.log)
bar order-go
i=0
while [ $i -lt 15 ]; do
	hlock -w $LONG o/1 hlock -w $LONG o/2 hlock -w $LONG o/3 true ||
		t="a lock in order failed (exit $?)"
	i=$((i + 1))
done
bar order-done
refused=$(grep -c "refused the starred wait" /tmp/dld.log)
echo "# node $node: this node's daemon refused $refused waits"
grep -A 4 "refused the starred wait" /tmp/dld.log | sed 's/^/# /'
[ "$refused" = "$before" ] || t="the daemon refused a wait"
[ "$t" = ok ] && ok "one lock order across nodes: no EDEADLK" ||
	not_ok "one lock order across nodes: no EDEADLK: $t"

# 8. lshlock on node 2 names the holder on node 1 that blocks its wait
# (node, pid, description), once a round saw the wait: node 1 holds X on
# rb, described, and node 2 asks for S there.
t=ok
case $node in
1)
	# The holder's shell meets the others at both barriers.
	hlock --why "nightly load" rb -c \
		"vm-cluster-barrier rb-held && vm-cluster-barrier rb-seen" ||
		t="node 1's X failed"
	;;
2)
	bar rb-held
	hlock -s -w $LONG rb true &
	rbw=$!
	# The JSON on one line, blanks squeezed.
	seen() {
		lshlock -J -o resource,state,blocker | tr -d '\n' | tr -s ' ' \
			>/tmp/rb.json &&
			grep -q '"resource": "rb", "state": "waiting", "blocker": \[{"node": 1, "pid": [0-9]*, "command": "hlock", "why": "nightly load"}\]' \
			/tmp/rb.json
	}
	# Once a second: lshlock takes a while in a VM.
	i=0
	until seen || [ $i -ge 30 ]; do
		i=$((i + 1))
		sleep 1
	done
	if ! seen; then
		t="lshlock did not name it: $(cat /tmp/rb.json)"
		tail -n 5 /tmp/dld.log | sed 's/^/# /'
		sed 's/^/# blockers: /' /run/hlock-deadlockd/blockers
	fi
	lshlock -r -n -o resource,state,blocker | grep '^rb ' | sed 's/^/# /'
	bar rb-seen
	wait "$rbw" || t="S on rb failed"
	;;
*)
	bar rb-held
	bar rb-seen
	;;
esac
[ "$t" = ok ] && ok "lshlock names the holder on another node" ||
	not_ok "lshlock names the holder on another node: $t"

# 9. Random orders, on 2 nodes for CHURN_S seconds: each node runs one
# chain at a time, a locker that takes X on a random one of ch/0 to ch/3,
# 100 ms later X on another, holds both 20 ms and closes.  One locker at a time on
# a node, so no cycle is within a node: every EDEADLK is a daemon's
# refusal, which this node's daemon logs, starred, with the victim's pid
# and path once every node confirmed the cycle; and a wait that timed out
# (30 s) would be a cycle missed.
CHURN_S=60
if [ "$nodes" != 2 ]; then
	skip "random orders across nodes: on 2 nodes"
else
	t=ok
	before=$(grep -c "refused the starred wait" /tmp/dld.log)
	: >/tmp/victims
	chains=0
	bar churn-go
	end=$(($(date +%s) + CHURN_S))
	while [ "$(date +%s)" -lt "$end" ]; do
		set -- $(od -An -N2 -tu1 /dev/urandom)
		a=$(($1 % 4))
		b=$(($2 % 4))
		[ "$a" != "$b" ] || continue
		chains=$((chains + 1))
		$do open 0 lock 0 "ch/$a" X 30000 expect 0 sleep 100 \
			lock 0 "ch/$b" X 30000 expect 0,EDEADLK sleep 20 close 0 \
			>/tmp/chain.out 2>&1 &
		cpid=$!
		wait "$cpid" ||
			t="chain $a, $b: $(grep -E "^expect" /tmp/chain.out)"
		! grep -q "^lock 0 ch/$b: EDEADLK" /tmp/chain.out ||
			echo "$cpid ch/$b" >>/tmp/victims
	done
	bar churn-done
	refused=$(($(grep -c "refused the starred wait" /tmp/dld.log) - before))
	victims=$(wc -l </tmp/victims)
	echo "# node $node: $chains chains, $victims EDEADLK, $refused refusals logged"
	[ "$victims" = "$refused" ] ||
		t="$victims EDEADLKs but $refused refusals logged"
	while read -r pid path; do
		grep -q "^hlock-deadlockd:   \* node $node pid $pid (hlock_cluster_d) .* on \"$path\"\$" \
			/tmp/dld.log || t="EDEADLK of pid $pid on $path: no refusal logged"
	done </tmp/victims
	[ "$t" = ok ] && ok "random orders across nodes: every EDEADLK a confirmed refusal" ||
		not_ok "random orders across nodes: every EDEADLK a confirmed refusal: $t"
fi

# 10. A node dies on a cycle, in the middle of a search: node 3 stops its
# daemon (SIGSTOP: it stays in the group and answers nothing), nodes 1 to
# 3 close a ring (r/I held, r/I+1 asked for), and once the other nodes'
# daemons have begun a round node 3 powers off, still in the cluster.  The survivors' round waits for node 3's
# snapshot and ends with the membership change (or, later, by ABORT),
# nothing refused; without node 3 their waits are no cycle.  Once the DLM
# has recovered its locks, node 2 is granted r/3 and lets go, then node 1
# is granted r/2.
if [ "$nodes" != 3 ]; then
	skip "a node dies on a cycle: needs 3 nodes, no more"
	skip "a cycle after a node died: needs 3 nodes, no more"
	kill "$dld"
	wait "$dld"
	exit $failed
fi
t=ok
nx=$((node % 3 + 1))
logged=$(wc -l </tmp/dld.log)
[ "$node" != 3 ] || kill -STOP "$dld"
if [ "$node" -le 3 ]; then
	if [ "$node" = "$nodes" ]; then
		after="sleep 600000"
	else
		# After the crash: the shell lets go of go/NODE once it has
		# called vm-cluster-crash (a barrier of its own).
		rm -f /tmp/go-held /tmp/go-release
		hlock "go/$node" -c "touch /tmp/go-held &&
			until [ -e /tmp/go-release ]; do sleep 0.1; done" &
		gpid=$!
		within test -e /tmp/go-held || t="X on go/$node failed"
		after="open 1 until 0 $((LONG * 1000)) lock 1 go/$node X 0 ; \
			expect 0 unlock 1 go/$node bar r-crashed \
			wait 0 $((LONG * 1000)) expect 0 \
			unlock 0 r/$node unlock 0 r/$nx bar r-done close 0 close 1"
	fi
	# shellcheck disable=SC2086 # $after is steps, word by word
	$do open 0 lock 0 "r/$node" X -1 expect 0 bar r-held \
		lock 0 "r/$nx" X -1 async expect EINPROGRESS bar r-waits \
		$after >/tmp/r.out 2>&1 &
	rpid=$!
else
	bar r-held
	bar r-waits
fi
within grep -q "^bar r-waits" /tmp/r.out 2>/dev/null || [ "$node" -gt 3 ] ||
	t="the ring was not closed"
# Node 3 dies once a round is under way (waiting for its snapshot).
if [ "$node" != 3 ]; then
	within sh -c "tail -n +$((logged + 1)) /tmp/dld.log | grep -q ' begins,'" ||
		t="no round began"
fi
bar r-searching
vm-cluster-crash
if [ "$node" -le 3 ]; then
	touch /tmp/go-release
	wait "$gpid"
	wait "$rpid" ||
		t="$(grep -E "^(expect|bar)" /tmp/r.out | tail -n 1)"
	set -- $(sed -n 's/^wait 0 [0-9]*: \([A-Z0-9-]*\) (\([0-9]*\) ms)$/\1 \2/p' \
		/tmp/r.out)
	echo "# node $node: ${1:-none} after ${2:-?} ms"
else
	bar r-crashed
	bar r-done
fi
tail -n +$((logged + 1)) /tmp/dld.log | grep -E "membership|abandoned|refused" |
	sed 's/^/# /'
if [ "$node" -le 3 ] && ! tail -n +$((logged + 1)) /tmp/dld.log |
	grep -qE "ends, nothing refused|abandoned"; then
	t="no search was in progress when node 3 died"
fi
if tail -n +$((logged + 1)) /tmp/dld.log | grep -q "refused the starred"; then
	t="a wait was refused"
fi
[ "$t" = ok ] && ok "a node dies on a cycle: the others are granted" ||
	not_ok "a node dies on a cycle: the others are granted: $t"

# 11. The daemons left go on: a cycle of nodes 1 and 2 is refused.
ring c2b 2
[ "$t" = ok ] && ok "a cycle after a node died ends with one EDEADLK" ||
	not_ok "a cycle after a node died ends with one EDEADLK: $t"

kill "$dld"
wait "$dld"
exit $failed
