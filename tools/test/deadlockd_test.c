// SPDX-License-Identifier: GPL-2.0
/*
 * hlock-deadlockd's search, on the host: the wait-for graph built from
 * members' snapshots, the cycle across nodes it finds (or must not), the
 * victim it picks, and the remote blockers it publishes for lshlock.  The
 * daemon's source is included whole, its main() renamed; corosync is not
 * called.
 */
#define CLI_REMOTE_DIR	"/tmp/hlock-deadlockd-test"
#define main daemon_main
#include "../hlock-deadlockd.c"
#undef main

static int checks, failures;

#define CHECK(cond, ...) do {						\
	checks++;							\
	if (!(cond)) {							\
		failures++;						\
		printf("deadlockd_test.c:%d: %s: ", __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf("\n");						\
	}								\
} while (0)

static char bufs[4][8192];
static char *ends[4];

/* Members 1 to 4, nodes 1 to 4 (a second daemon on node 1: member 4). */
static void begin(unsigned int members)
{
	unsigned int m;

	memset(&d, 0, sizeof(d));
	d.nr_round = members;
	for (m = 0; m < members; m++) {
		d.round_members[m] = (uint64_t)(m + 1) << 32 | (100 + m);
		ends[m] = bufs[m];
	}
	d.me = d.round_members[0];
}

/* A record of member @m: locker @serial, @state, @mode on @path. */
static void rec(unsigned int m, uint64_t serial, unsigned int state,
		unsigned int mode, unsigned int convert, const char *path,
		uint64_t wait_ns)
{
	struct snap_rec *r = (void *)ends[m];
	size_t len = strlen(path);

	memset(r, 0, sizeof(*r) + ((len + 8) & ~7u));
	r->serial = serial;
	r->locker = (uint32_t)serial;
	r->state = (uint8_t)state;
	r->mode = (uint8_t)mode;
	r->convert = (uint8_t)convert;
	r->wait_seq = state == HLOCK_STATE_GRANTED ? 2 : 3;
	r->pid = 1000 + (uint32_t)serial;
	r->wait_ns = wait_ns;
	snprintf(r->comm, sizeof(r->comm), "p%u", (unsigned int)serial);
	snprintf(r->why, sizeof(r->why), "why %u", (unsigned int)serial);
	r->path_len = (uint16_t)len;
	memcpy(r + 1, path, len);
	ends[m] += rec_size(r);
}

#define G(m, s, mode, path)	rec(m, s, HLOCK_STATE_GRANTED, mode, 0, path, 0)
#define W(m, s, mode, path, ns)	rec(m, s, HLOCK_STATE_WAITING, mode, 0, path, ns)
#define C(m, s, held, to, path, ns) \
	rec(m, s, HLOCK_STATE_CONVERTING, held, to, path, ns)

/* Search the snapshots; the cycle's lockers by serial, victim starred. */
static bool run(char *out, size_t size)
{
	unsigned int m, k;
	char *p;
	bool found;

	for (m = 0; m < d.nr_round; m++) {
		const char *q;

		d.snaps[m].member = d.round_members[m];
		d.snaps[m].in = true;
		d.snaps[m].data = bufs[m];
		d.snaps[m].len = (size_t)(ends[m] - bufs[m]);
		d.snaps[m].count = 0;
		for (q = bufs[m]; q < ends[m];
		     q += rec_size((const struct snap_rec *)q))
			d.snaps[m].count++;
	}
	found = search();
	p = out;
	*p = 0;
	for (k = 0; found && k < d.cycle_len; k++)
		p += snprintf(p, size - (size_t)(p - out), "%s%s%u",
			      k ? " " : "", (int)k == d.victim ? "*" : "",
			      (unsigned int)d.cycle[k]->serial);
	return found;
}

static void test_two_nodes(void)
{
	char c[128];

	begin(2);
	G(0, 1, HLOCK_X, "x");
	W(0, 1, HLOCK_X, "y", 2000);
	G(1, 2, HLOCK_X, "y");
	W(1, 2, HLOCK_X, "x", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 *2"), "%s", c);
	/* The one that waited least is the victim, whichever node. */
	begin(2);
	G(0, 1, HLOCK_X, "x");
	W(0, 1, HLOCK_X, "y", 500);
	G(1, 2, HLOCK_X, "y");
	W(1, 2, HLOCK_X, "x", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "*1 2"), "%s", c);
	/* Ties: the higher node. */
	begin(2);
	G(0, 1, HLOCK_X, "x");
	W(0, 1, HLOCK_X, "y", 700);
	G(1, 2, HLOCK_X, "y");
	W(1, 2, HLOCK_X, "x", 700);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 *2"), "%s", c);
}

static void test_no_cycle(void)
{
	char c[128];

	/* A chain, compatible modes, a cycle within one node. */
	begin(2);
	G(0, 1, HLOCK_X, "x");
	W(0, 1, HLOCK_X, "y", 2000);
	G(1, 2, HLOCK_X, "y");
	W(1, 2, HLOCK_X, "z", 1000);
	CHECK(!run(c, sizeof(c)), "chain: %s", c);
	begin(2);
	G(0, 1, HLOCK_IS, "x");
	W(0, 1, HLOCK_S, "y", 2000);
	G(1, 2, HLOCK_IS, "y");
	W(1, 2, HLOCK_IX, "x", 1000);
	CHECK(!run(c, sizeof(c)), "compatible: %s", c);
	begin(2);
	G(0, 1, HLOCK_X, "x");
	W(0, 1, HLOCK_X, "y", 2000);
	G(0, 3, HLOCK_X, "y");
	W(0, 3, HLOCK_X, "x", 1000);
	CHECK(!run(c, sizeof(c)), "within node 1: %s", c);
	/* Records of one locker apart in the snapshot are one vertex. */
	begin(2);
	W(0, 1, HLOCK_X, "p", 2000);
	G(1, 2, HLOCK_S, "p");
	G(0, 1, HLOCK_S, "q");
	CHECK(!run(c, sizeof(c)), "one vertex: %s", c);
}

/*
 * A cycle across nodes that shares a locker with one within a node: a
 * search marking what it explored as done missed it (review).  Node 1:
 * A waits X on p, holds S on q; B holds S on p and r, waits X on q.
 * Node 2: C holds S on p, waits X on r.  A -> B -> A is local; A -> C ->
 * B -> A crosses.
 */
static void test_shared_with_local(void)
{
	char c[128];

	begin(2);
	W(0, 1, HLOCK_X, "p", 3000);
	G(0, 1, HLOCK_S, "q");
	G(0, 2, HLOCK_S, "p");
	G(0, 2, HLOCK_S, "r");
	W(0, 2, HLOCK_X, "q", 2000);
	G(1, 3, HLOCK_S, "p");
	W(1, 3, HLOCK_X, "r", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 *3 2"), "%s", c);
}

/* Three nodes; intents; a conversion; two daemons on one node. */
static void test_kinds(void)
{
	char c[128];

	begin(3);
	G(0, 1, HLOCK_X, "r/1");
	W(0, 1, HLOCK_X, "r/2", 3000);
	G(1, 2, HLOCK_X, "r/2");
	W(1, 2, HLOCK_X, "r/3", 2000);
	G(2, 3, HLOCK_X, "r/3");
	W(2, 3, HLOCK_X, "r/1", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 2 *3"), "ring: %s", c);
	begin(2);
	G(0, 1, HLOCK_X, "ia");
	W(0, 1, HLOCK_IX, "ib", 2000);
	G(1, 2, HLOCK_X, "ib");
	W(1, 2, HLOCK_IX, "ia", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 *2"), "intents: %s", c);
	begin(2);
	C(0, 1, HLOCK_S, HLOCK_X, "cv", 2000);
	C(1, 2, HLOCK_S, HLOCK_X, "cv", 1000);
	CHECK(run(c, sizeof(c)) && !strcmp(c, "1 *2"), "conversions: %s", c);
	/*
	 * Member 3 is a second daemon on node... 3 in begin(); make it node
	 * 1's: the same snapshot twice is one graph, and a conversion does
	 * not wait for its own copy.
	 */
	begin(3);
	d.round_members[2] = (uint64_t)1 << 32 | 999;
	C(0, 1, HLOCK_S, HLOCK_X, "cv", 2000);
	G(0, 4, HLOCK_S, "cv");
	C(2, 1, HLOCK_S, HLOCK_X, "cv", 2000);
	G(2, 4, HLOCK_S, "cv");
	CHECK(!run(c, sizeof(c)), "two daemons on node 1: %s", c);
}

/* What lshlock is told: node 1's waiter, blocked by node 2's holder. */
static void test_publish(void)
{
	char line[256] = "", c[128];
	FILE *f;

	begin(2);
	W(0, 1, HLOCK_S, "rb", 2000);
	G(1, 2, HLOCK_X, "rb");
	G(1, 3, HLOCK_IS, "rb");
	CHECK(!run(c, sizeof(c)), "%s", c);
	f = fopen(CLI_REMOTE_BLOCKERS, "r");
	CHECK(f && fgets(line, sizeof(line), f), "no blockers file");
	CHECK(!strcmp(line, "1 3 2 1002 7032 7768792032\n"), "%s", line);
	CHECK(!f || !fgets(line, sizeof(line), f), "a compatible holder: %s",
	      line);
	if (f)
		fclose(f);
	unlink(CLI_REMOTE_BLOCKERS);
	rmdir(CLI_REMOTE_DIR);
}

int main(void)
{
	test_two_nodes();
	test_no_cycle();
	test_shared_with_local();
	test_kinds();
	test_publish();
	printf("deadlockd_test: %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
