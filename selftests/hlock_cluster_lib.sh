#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# What the cluster tests share (hlock_cluster_test.sh, _crash.sh,
# _lost.sh), sourced from the directory they run in: TAP lines, barriers
# and polling.  The caller sets n=0, failed=0 and LONG (seconds) first.

ok() {
	n=$((n + 1))
	echo "ok $n $*"
}

not_ok() {
	n=$((n + 1))
	failed=1
	echo "not ok $n $*"
}

skip() {
	n=$((n + 1))
	echo "ok $n # SKIP $*"
}

# bar NAME [SECONDS]: meet the other nodes at barrier NAME within SECONDS
# (vm-cluster-barrier's default: 120), or end the test.
bar() {
	vm-cluster-barrier "$1" ${2:+"$2"} || {
		echo "# FAIL barrier $1 failed"
		exit 1
	}
}

# within CMD [ARGS]: whether CMD succeeds within LONG seconds, tried every
# tenth of a second.
within() {
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -lt $((LONG * 10)) ] || return 1
		sleep 0.1
	done
}
