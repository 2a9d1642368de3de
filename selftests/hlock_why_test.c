// SPDX-License-Identifier: GPL-2.0
/*
 * hlock: lockers' descriptions (HLOCK_IOC_DESCRIBE) and fencing tokens
 * (HLOCK_IOC_TOKEN), through the ioctls, the lock table, lshlock (taken
 * from the directory of this program) and debugfs.
 *
 * Conventions:
 *  - Every test uses resource names of its own, with its pid in them, so
 *    that records left by other tests cannot match.
 *  - Token tests assert order, never values, but in a lock space of their
 *    own, where no other locker draws tokens: there the values are known.
 *  - No timing is asserted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/statfs.h>
#include <sys/wait.h>

/* The harness's macros trip -Wextra, as hlock_test.c explains. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wclobbered"
#include "kselftest_harness.h"
#include "hlock_helpers.h"

#define NLOCKERS	4
#define DEBUGFS_DIR	"/sys/kernel/debug"
#define DEBUGFS_LOCKS	DEBUGFS_DIR "/hlock/locks"
#define DEBUGFS_MAGIC_	0x64626720	/* linux/magic.h DEBUGFS_MAGIC */
/* A description with bytes every reader must escape. */
#define UGLY_WHY	"a\nb\"c\001d\377"
/* Bytes of lshlock output a test reads at most. */
#define OUT_MAX		65536

FIXTURE(why) {
	int fd[NLOCKERS];
	char name[64];		/* this test's resource prefix */
};

FIXTURE_SETUP(why)
{
	int ret = lockers_open(self->fd, NLOCKERS);

	if (ret == -ENODEV)
		SKIP(return, HLOCK_DEVICE " is absent (module not loaded)");
	ASSERT_EQ(0, ret) TH_LOG("hlock_open: %s", strerror(-ret));
	snprintf(self->name, sizeof(self->name), "why%d", (int)getpid());
}

FIXTURE_TEARDOWN(why)
{
	int i;

	for (i = 0; i < NLOCKERS; i++)
		if (self->fd[i] >= 0)
			close(self->fd[i]);
}

/*
 * Our record in state @state on @path in the table copied to @buf (@count
 * records), or NULL; *@nr says how many there are.
 */
static const struct hlock_lock_record *
find_rec(const void *buf, int count, const char *path, unsigned int state,
	 int *nr)
{
	const struct hlock_lock_record *rec = buf, *found = NULL;
	int i;

	*nr = 0;
	for (i = 0; i < count; i++, rec = hlock_record_next(rec)) {
		if ((pid_t)rec->pid == getpid() && rec->state == state &&
		    !strcmp(hlock_record_path(rec), path)) {
			found = rec;
			(*nr)++;
		}
	}
	return found;
}

/*
 * Check the extension of our one record on @path in @state: its
 * description @why (NUL-terminated, zeros after), its token @token,
 * nothing else set.  Return: true if so (else logged).
 */
static bool rec_in(struct __test_metadata *_metadata, int fd,
		   const char *path, unsigned int state, const char *why,
		   uint64_t token)
{
	const struct hlock_lock_record *rec;
	const struct hlock_record_ext *ext;
	void *buf = NULL;
	bool ok = false;
	size_t i;
	int n, nr;

	n = hlock_table_alloc(fd, &buf);
	if (n < 0) {
		TH_LOG("hlock_table_alloc: %s", strerror(-n));
		return false;
	}
	rec = find_rec(buf, n, path, state, &nr);
	ext = rec ? hlock_record_ext(rec) : NULL;
	if (nr != 1 || !ext) {
		TH_LOG("\"%s\": %d records, ext %s", path, nr,
		       ext ? "present" : "absent");
	} else if (rec->rec_len != HLOCK_RECORD_EXT_OFFSET(rec->path_len) +
				   sizeof(*ext)) {
		TH_LOG("\"%s\": rec_len %u", path, rec->rec_len);
	} else if (strcmp(ext->why, why) || strcmp(hlock_record_why(rec), why)) {
		TH_LOG("\"%s\": why \"%.*s\", expected \"%s\"", path,
		       (int)sizeof(ext->why), ext->why, why);
	} else if (ext->token != token) {
		TH_LOG("\"%s\": token %llu, expected %llu", path,
		       (unsigned long long)ext->token,
		       (unsigned long long)token);
	} else if (ext->lease_ns || (ext->flags & ~HLOCK_REC_BLOCKING) ||
		   ext->node_mode) {
		/* A grant with a waiter behind it blocks: hlock_lvb_test's. */
		TH_LOG("\"%s\": lease_ns, flags or node_mode set", path);
	} else {
		ok = true;
		for (i = strlen(why); i < sizeof(ext->why); i++)
			ok &= !ext->why[i];
		if (!ok)
			TH_LOG("\"%s\": why not zero after its NUL", path);
	}
	free(buf);
	return ok;
}

/* Our granted records on @path carry the @n tokens @t, each once. */
static bool tokens_on(struct __test_metadata *_metadata, int fd,
		      const char *path, const uint64_t *t, int n)
{
	const struct hlock_lock_record *rec;
	const struct hlock_record_ext *ext;
	int i, j, count, seen = 0, hits;
	void *buf = NULL;

	count = hlock_table_alloc(fd, &buf);
	if (count < 0)
		return false;
	for (i = 0; i < n; i++) {
		hits = 0;
		rec = buf;
		for (j = 0; j < count; j++, rec = hlock_record_next(rec)) {
			ext = hlock_record_ext(rec);
			if ((pid_t)rec->pid == getpid() && ext &&
			    !strcmp(hlock_record_path(rec), path) &&
			    ext->token == t[i])
				hits++;
		}
		if (hits != 1)
			TH_LOG("token %llu on \"%s\": %d records",
			       (unsigned long long)t[i], path, hits);
		seen += hits == 1;
	}
	free(buf);
	return seen == n;
}

/* The same for a granted record. */
static bool rec_is(struct __test_metadata *_metadata, int fd,
		   const char *path, const char *why, uint64_t token)
{
	return rec_in(_metadata, fd, path, HLOCK_STATE_GRANTED, why, token);
}

static bool debugfs_mounted(void)
{
	struct statfs sfs;

	return statfs(DEBUGFS_DIR, &sfs) == 0 &&
	       (long)sfs.f_type == DEBUGFS_MAGIC_;
}

/* The whole of a file, NUL-terminated, into @buf.  Return: 0 or -errno. */
static int read_all(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return -errno;
	while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return 0;
}

/* The token of @fd's grant on @path, 0 if none (then *@err says why). */
static uint64_t token_of(int fd, const char *path, int *err)
{
	uint64_t t = 0;

	*err = hlock_token(fd, path, &t);
	return *err ? 0 : t;
}

/* A field of an ioctl's argument that must be zero. */
struct field {
	void *p;
	size_t size;
};

/*
 * Set each of the @n fields of @arg in turn to 1 (the others as they
 * are): the call must fail with EINVAL.  Return: 0, or which field (from
 * 1) did not make it fail so.
 */
static int bad_fields(int fd, unsigned long cmd, void *arg,
		      const struct field *f, int n)
{
	int i, ret;

	for (i = 0; i < n; i++) {
		memset(f[i].p, 0, f[i].size);
		*(unsigned char *)f[i].p = 1;
		ret = raw_ioctl(fd, cmd, arg);
		memset(f[i].p, 0, f[i].size);
		if (ret != -EINVAL)
			return i + 1;
	}
	return 0;
}

/* The fields of @a (an hlock_token_args or hlock_describe_args). */
#define CHECKED_FIELDS(a) ((const struct field[]){			\
	{ &(a).flags, sizeof((a).flags) },				\
	{ &(a).reserved[0], sizeof((a).reserved[0]) },			\
	{ &(a).reserved[1], sizeof((a).reserved[1]) } })
#define NR_CHECKED_FIELDS	3

static int describe_raw(int fd, const void *why, uint32_t len)
{
	struct hlock_describe_args a;

	memset(&a, 0, sizeof(a));
	a.why = (uintptr_t)why;
	a.why_len = len;
	return raw_ioctl(fd, HLOCK_IOC_DESCRIBE, &a);
}

/*
 * Run "lshlock ARGS" (the lshlock next to this program) and keep its
 * standard output in @out.  Return: its exit status, -1 if it did not run.
 */
static int run_lshlock(const char *args, char *out, size_t size)
{
	char self[PATH_MAX], cmd[PATH_MAX + 256], *slash;
	size_t len = 0;
	ssize_t n;
	FILE *p;
	int st;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	snprintf(cmd, sizeof(cmd), "%s/lshlock", self);
	if (access(cmd, X_OK))
		return -1;
	snprintf(cmd, sizeof(cmd), "%s/lshlock %s", self, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (len < size - 1 &&
	       (n = fread(out + len, 1, size - 1 - len, p)) > 0)
		len += n;
	out[len] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * lshlock's JSON (libsmartcols's, a member a line) on one line: each run
 * of newlines and spaces becomes one space.
 */
static void flatten(char *s)
{
	char *start = s, *q = s;

	for (; *s; s++) {
		if (*s == '\n' || *s == ' ') {
			if (q == start || q[-1] != ' ')
				*q++ = ' ';
		} else {
			*q++ = *s;
		}
	}
	*q = '\0';
}

static bool have_lshlock(void)
{
	char out[64];

	return run_lshlock("-V", out, sizeof(out)) == 0;
}

/* ------------------------------------------------------------------ */
/* Descriptions */

TEST_F_TIMEOUT(why, features, TEST_TMO)
{
	struct hlock_info info;

	ASSERT_EQ(0, hlock_info(self->fd[0], &info));
	EXPECT_TRUE((info.features & HLOCK_FEAT_TOKEN) != 0);
	EXPECT_TRUE((info.features & HLOCK_FEAT_DESCRIBE) != 0);
}

/* Each locker's description shows on its own records, and only there. */
TEST_F_TIMEOUT(why, describe_round_trip, TEST_TMO)
{
	char a[96], b[96];
	int err;

	/* Apart but for the root: their records on it are alike. */
	snprintf(a, sizeof(a), "%s/a", self->name);
	snprintf(b, sizeof(b), "%sb/b", self->name);
	ASSERT_EQ(0, hlock_lock(self->fd[0], a, S, 0, 0));
	ASSERT_EQ(0, hlock_lock(self->fd[1], b, S, 0, 0));
	ASSERT_TRUE(rec_is(_metadata, self->fd[0], a, "",
			   token_of(self->fd[0], a, &err)));
	ASSERT_EQ(0, err);

	ASSERT_EQ(0, hlock_describe(self->fd[0], "reads orders"));
	ASSERT_EQ(0, hlock_describe(self->fd[1], "rebuilds users"));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], a, "reads orders",
			   token_of(self->fd[0], a, &err)));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], b, "rebuilds users",
			   token_of(self->fd[1], b, &err)));
	/* The intent on the parent is the locker's too. */
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], self->name, "reads orders",
			   token_of(self->fd[0], self->name, &err)));

	/* A new description replaces the old; "" clears it. */
	ASSERT_EQ(0, hlock_describe(self->fd[0], "x"));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], a, "x",
			   token_of(self->fd[0], a, &err)));
	ASSERT_EQ(0, hlock_describe(self->fd[0], ""));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], a, "",
			   token_of(self->fd[0], a, &err)));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], b, "rebuilds users",
			   token_of(self->fd[1], b, &err)));

	/* A waiting request shows its locker's description, no token. */
	ASSERT_EQ(0, hlock_describe(self->fd[3], "waits"));
	ASSERT_EQ(-EINPROGRESS, hlock_lock(self->fd[3], a, X, ASYNC, -1));
	EXPECT_TRUE(rec_in(_metadata, self->fd[2], a, HLOCK_STATE_WAITING,
			   "waits", 0));
	EXPECT_EQ(0ULL, (unsigned long long)token_of(self->fd[3], a, &err));
	EXPECT_EQ(-ENOENT, err);
	ASSERT_EQ(0, hlock_unlock(self->fd[0], a));
	ASSERT_EQ(0, hlock_wait(self->fd[3], SETTLE_NS));
	EXPECT_TRUE(rec_is(_metadata, self->fd[2], a, "waits",
			   token_of(self->fd[3], a, &err)));
	EXPECT_EQ(0, err);
	ASSERT_EQ(0, hlock_unlock(self->fd[3], a));
}

/* The limits: 63 bytes, any byte but NUL; failures change nothing. */
TEST_F_TIMEOUT(why, describe_limits, TEST_TMO)
{
	char max[HLOCK_WHY_LEN + 1], path[96];
	struct {
		struct hlock_describe_args a;
		uint64_t tail;
	} big;
	int fd = self->fd[0], err;
	uint64_t t;

	snprintf(path, sizeof(path), "%s/l", self->name);
	ASSERT_EQ(0, hlock_lock(fd, path, IX, 0, 0));
	t = token_of(fd, path, &err);
	ASSERT_EQ(0, err);

	memset(max, 'w', sizeof(max));
	max[HLOCK_WHY_LEN - 1] = '\0';
	ASSERT_EQ(0, hlock_describe(fd, max));
	ASSERT_TRUE(rec_is(_metadata, fd, path, max, t));

	/* 64 bytes: the library refuses, and so does the module. */
	max[HLOCK_WHY_LEN - 1] = 'w';
	max[HLOCK_WHY_LEN] = '\0';
	EXPECT_EQ(-ENAMETOOLONG, hlock_describe(fd, max));
	EXPECT_EQ(-ENAMETOOLONG, describe_raw(fd, max, HLOCK_WHY_LEN));
	EXPECT_EQ(-ENAMETOOLONG, describe_raw(fd, max, UINT32_MAX));
	/* A NUL inside the given length. */
	EXPECT_EQ(-EINVAL, describe_raw(fd, "ab\0cd", 5));
	EXPECT_EQ(-EINVAL, describe_raw(fd, "\0", 1));
	EXPECT_EQ(-EFAULT, describe_raw(fd, unmapped_page(), 3));
	EXPECT_EQ(-EFAULT, raw_ioctl(fd, HLOCK_IOC_DESCRIBE, NULL));
	EXPECT_EQ(-EFAULT, hlock_describe(fd, NULL));

	memset(&big, 0, sizeof(big));
	big.a.why = (uintptr_t)"big";
	big.a.why_len = 3;
	EXPECT_EQ(0, bad_fields(fd, HLOCK_IOC_DESCRIBE, &big.a,
				CHECKED_FIELDS(big.a), NR_CHECKED_FIELDS));
	/* A later, larger structure: its unknown tail must be zero. */
	big.tail = 1;
	EXPECT_EQ(-E2BIG, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC,
					     _IOC_NR(HLOCK_IOC_DESCRIBE),
					     big), &big));
	/* A smaller one is no command of this module. */
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC,
					      _IOC_NR(HLOCK_IOC_DESCRIBE),
					      uint64_t), &big));
	/* Every refusal left the description as it was. */
	max[HLOCK_WHY_LEN - 1] = '\0';
	EXPECT_TRUE(rec_is(_metadata, fd, path, max, t));

	big.tail = 0;
	EXPECT_EQ(0, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC,
					_IOC_NR(HLOCK_IOC_DESCRIBE), big),
			       &big));
	EXPECT_TRUE(rec_is(_metadata, fd, path, "big", t));
	/* Length 0 clears, whatever the pointer. */
	EXPECT_EQ(0, describe_raw(fd, NULL, 0));
	EXPECT_TRUE(rec_is(_metadata, fd, path, "", t));
	/* Any byte but NUL is kept as it is. */
	EXPECT_EQ(0, hlock_describe(fd, UGLY_WHY));
	EXPECT_TRUE(rec_is(_metadata, fd, path, UGLY_WHY, t));
}

/* lshlock shows the description escaped in its table and its JSON. */
TEST_F_TIMEOUT(why, lshlock_shows_why_and_token, TEST_TMO)
{
	static char out[OUT_MAX];
	char path[96], args[128], want[256];
	int fd = self->fd[0], err;
	uint64_t t;

	if (!have_lshlock())
		SKIP(return, "no lshlock next to this program");
	snprintf(path, sizeof(path), "%s/ls", self->name);
	ASSERT_EQ(0, hlock_describe(fd, "nightly backup"));
	ASSERT_EQ(0, hlock_lock(fd, path, X, 0, 0));
	t = token_of(fd, path, &err);
	ASSERT_EQ(0, err);

	snprintf(args, sizeof(args), "-r -n -o resource,why,token -p %d",
		 (int)getpid());
	ASSERT_EQ(0, run_lshlock(args, out, sizeof(out)));
	snprintf(want, sizeof(want), "%s nightly\\x20backup %llu\n", path,
		 (unsigned long long)t);
	EXPECT_TRUE(strstr(out, want) != NULL)
		TH_LOG("no line \"%s\" in:\n%s", want, out);

	/* WHY is a default column; TOKEN is not. */
	snprintf(args, sizeof(args), "-p %d", (int)getpid());
	ASSERT_EQ(0, run_lshlock(args, out, sizeof(out)));
	EXPECT_TRUE(strstr(out, " WHY\n") != NULL) TH_LOG("%s", out);
	EXPECT_TRUE(strstr(out, "TOKEN") == NULL) TH_LOG("%s", out);
	EXPECT_TRUE(strstr(out, " nightly backup\n") != NULL) TH_LOG("%s", out);

	snprintf(args, sizeof(args), "-J -o resource,why,token -p %d",
		 (int)getpid());
	ASSERT_EQ(0, run_lshlock(args, out, sizeof(out)));
	flatten(out);
	snprintf(want, sizeof(want),
		 "{ \"resource\": \"%s\", \"why\": \"nightly backup\", \"token\": %llu }",
		 path, (unsigned long long)t);
	EXPECT_TRUE(strstr(out, want) != NULL)
		TH_LOG("no \"%s\" in:\n%s", want, out);

	/*
	 * Escaped: control bytes, the quote in JSON; a byte that is not
	 * UTF-8 is \xff in the table and U+00FF, its Latin-1 reading, in
	 * the JSON.
	 */
	ASSERT_EQ(0, hlock_describe(fd, UGLY_WHY));
	snprintf(args, sizeof(args), "-n -o resource,why -p %d",
		 (int)getpid());
	ASSERT_EQ(0, run_lshlock(args, out, sizeof(out)));
	snprintf(want, sizeof(want), "%s a\\x0ab\"c\\x01d\\xff\n", path);
	EXPECT_TRUE(strstr(out, want) != NULL)
		TH_LOG("no \"%s\" in:\n%s", want, out);
	snprintf(args, sizeof(args), "-J -o resource,why -p %d",
		 (int)getpid());
	ASSERT_EQ(0, run_lshlock(args, out, sizeof(out)));
	flatten(out);
	snprintf(want, sizeof(want),
		 "{ \"resource\": \"%s\", \"why\": \"a\\nb\\\"c\\u0001d\xc3\xbf\" }",
		 path);
	EXPECT_TRUE(strstr(out, want) != NULL)
		TH_LOG("no \"%s\" in:\n%s", want, out);
}

/* debugfs shows the token and the description, escaped. */
TEST_F_TIMEOUT(why, debugfs_shows_why_and_token, TEST_TMO)
{
	static char txt[OUT_MAX];
	char path[96], want[256], *line;
	int fd = self->fd[0], err;
	uint64_t t;

	if (!debugfs_mounted())
		SKIP(return, "debugfs is not mounted on " DEBUGFS_DIR);
	snprintf(path, sizeof(path), "%s/dbg", self->name);
	ASSERT_EQ(0, hlock_describe(fd, UGLY_WHY));
	ASSERT_EQ(0, hlock_lock(fd, path, S, 0, 0));
	t = token_of(fd, path, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(0, read_all(DEBUGFS_LOCKS, txt, sizeof(txt)));
	ASSERT_TRUE(strstr(txt, " TOKEN ") && strstr(txt, " WHY\n"))
		TH_LOG("header: %.200s", txt);
	snprintf(want, sizeof(want), "\"%s\" \"a\\x0ab\\x22c\\x01d\\xff\"",
		 path);
	line = strstr(txt, want);
	ASSERT_TRUE(line != NULL) TH_LOG("no %s in:\n%s", want, txt);
	/* The line's token, before the (empty) blockers. */
	while (line > txt && line[-1] != '\n')
		line--;
	snprintf(want, sizeof(want), " %llu ", (unsigned long long)t);
	line[strcspn(line, "\n")] = '\0';
	EXPECT_TRUE(strstr(line, want) != NULL) TH_LOG("line: %s", line);
}

/* ------------------------------------------------------------------ */
/* Tokens */

/*
 * Grants by several lockers on one path get increasing tokens; a
 * recursion keeps its token, a conversion gets a new one; nothing held,
 * no token.
 */
TEST_F_TIMEOUT(why, tokens_increase, TEST_TMO)
{
	char path[96], other[96];
	uint64_t t[NLOCKERS], u;
	int i, err;

	snprintf(path, sizeof(path), "%s/t", self->name);
	snprintf(other, sizeof(other), "%s/never", self->name);
	EXPECT_EQ(0ULL, (unsigned long long)token_of(self->fd[0], path, &err));
	EXPECT_EQ(-ENOENT, err);
	for (i = 0; i < NLOCKERS; i++) {
		ASSERT_EQ(0, hlock_lock(self->fd[i], path, S, 0, 0));
		t[i] = token_of(self->fd[i], path, &err);
		ASSERT_EQ(0, err);
		if (i)
			EXPECT_LT(t[i - 1], t[i]);
	}
	/* One lock call, one token: its intents have the path's. */
	EXPECT_EQ(t[0], token_of(self->fd[0], self->name, &err));
	EXPECT_EQ(t[0], token_of(self->fd[0], "", &err));
	EXPECT_TRUE(tokens_on(_metadata, self->fd[0], path, t, NLOCKERS));

	/* A recursion is no new grant. */
	ASSERT_EQ(0, hlock_lock(self->fd[1], path, IS, 0, 0));
	EXPECT_EQ(t[1], token_of(self->fd[1], path, &err));
	ASSERT_EQ(0, hlock_lock(self->fd[1], path, S, 0, 0));
	EXPECT_EQ(t[1], token_of(self->fd[1], path, &err));
	EXPECT_EQ(2, hlock_unlock(self->fd[1], path));
	EXPECT_EQ(1, hlock_unlock(self->fd[1], path));
	EXPECT_EQ(t[1], token_of(self->fd[1], path, &err));

	/* A lock of another path under held intents: only it is new. */
	ASSERT_EQ(0, hlock_lock(self->fd[0], other, IS, 0, 0));
	u = token_of(self->fd[0], other, &err);
	EXPECT_LT(t[NLOCKERS - 1], u);
	EXPECT_EQ(t[0], token_of(self->fd[0], self->name, &err));
	ASSERT_EQ(0, hlock_unlock(self->fd[0], other));
	EXPECT_EQ(0ULL, (unsigned long long)token_of(self->fd[0], other, &err));
	EXPECT_EQ(-ENOENT, err);

	/* A conversion is a new grant, on every level it converts. */
	for (i = 1; i < NLOCKERS; i++)
		ASSERT_EQ(0, hlock_unlock(self->fd[i], path));
	ASSERT_EQ(0, hlock_lock(self->fd[0], path, X, 0, 0));
	u = token_of(self->fd[0], path, &err);
	EXPECT_LT(t[NLOCKERS - 1], u);
	EXPECT_EQ(u, token_of(self->fd[0], self->name, &err));
	EXPECT_EQ(u, token_of(self->fd[0], "", &err));
	EXPECT_TRUE(rec_is(_metadata, self->fd[1], path, "", u));

	/* A downgrade is no grant. */
	ASSERT_EQ(0, hlock_downgrade(self->fd[0], path, S));
	EXPECT_EQ(u, token_of(self->fd[0], path, &err));

	/* Unlocked: none, on the path and its ancestors. */
	EXPECT_EQ(1, hlock_unlock(self->fd[0], path));
	EXPECT_EQ(u, token_of(self->fd[0], path, &err));
	EXPECT_EQ(0, hlock_unlock(self->fd[0], path));
	EXPECT_EQ(0ULL, (unsigned long long)token_of(self->fd[0], path, &err));
	EXPECT_EQ(-ENOENT, err);
	EXPECT_EQ(0ULL, (unsigned long long)token_of(self->fd[0], self->name, &err));
	EXPECT_EQ(-ENOENT, err);
}

/*
 * A waiter has no token until granted, then one greater than the holder
 * it waited for; a waiting conversion keeps the token of what it holds.
 */
TEST_F_TIMEOUT(why, waiter_token_greater, TEST_TMO)
{
	int a = self->fd[0], b = self->fd[1], c = self->fd[2], err;
	uint64_t ta, tb, tc;
	char path[96];

	snprintf(path, sizeof(path), "%s/w", self->name);
	ASSERT_EQ(0, hlock_lock(a, path, X, 0, 0));
	ta = token_of(a, path, &err);
	ASSERT_EQ(0, err);
	ASSERT_EQ(-EINPROGRESS, hlock_lock(b, path, S, ASYNC, -1));
	EXPECT_EQ(0ULL, (unsigned long long)token_of(b, path, &err));
	EXPECT_EQ(-ENOENT, err);
	/* Its intents above, granted on the way: none until all is. */
	EXPECT_EQ(0ULL, (unsigned long long)token_of(b, self->name, &err));
	EXPECT_EQ(-ENOENT, err);
	EXPECT_TRUE(rec_is(_metadata, c, path, "", ta));
	EXPECT_TRUE(rec_in(_metadata, c, path, HLOCK_STATE_WAITING, "", 0));

	ASSERT_EQ(0, hlock_unlock(a, path));
	ASSERT_EQ(0, hlock_wait(b, SETTLE_NS));
	tb = token_of(b, path, &err);
	ASSERT_EQ(0, err);
	EXPECT_LT(ta, tb);

	/* c shares S; b's conversion to X waits for c. */
	ASSERT_EQ(0, hlock_lock(c, path, S, 0, 0));
	tc = token_of(c, path, &err);
	EXPECT_LT(tb, tc);
	ASSERT_EQ(-EINPROGRESS, hlock_lock(b, path, X, ASYNC, -1));
	EXPECT_EQ(tb, token_of(b, path, &err));
	EXPECT_TRUE(rec_in(_metadata, c, path, HLOCK_STATE_CONVERTING, "", tb));
	ASSERT_EQ(0, hlock_unlock(c, path));
	ASSERT_EQ(0, hlock_wait(b, SETTLE_NS));
	EXPECT_LT(tc, token_of(b, path, &err));
	EXPECT_EQ(0, err);
}

/* HLOCK_IOC_TOKEN checks its argument like the other path ioctls. */
TEST_F_TIMEOUT(why, token_rejects, TEST_TMO)
{
	struct {
		struct hlock_token_args a;
		uint64_t tail;
	} big;
	int fd = self->fd[0], err;
	char path[96];
	uint64_t t;

	snprintf(path, sizeof(path), "%s/r", self->name);
	ASSERT_EQ(0, hlock_lock(fd, path, IX, 0, 0));
	t = token_of(fd, path, &err);
	ASSERT_EQ(0, err);

	memset(&big, 0, sizeof(big));
	big.a.path = (uintptr_t)path;
	big.a.path_len = strlen(path);
	/* What the caller leaves in @token is ignored. */
	big.a.token = 12345;
	ASSERT_EQ(0, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	EXPECT_EQ(t, big.a.token);
	EXPECT_EQ(0, bad_fields(fd, HLOCK_IOC_TOKEN, &big.a,
				CHECKED_FIELDS(big.a), NR_CHECKED_FIELDS));
	big.a.path_len = HLOCK_PATH_MAX + 1;
	EXPECT_EQ(-ENAMETOOLONG, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	big.a.path_len = UINT32_MAX;
	EXPECT_EQ(-ENAMETOOLONG, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	big.a.path = (uintptr_t)"a\0b";
	big.a.path_len = 3;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	big.a.path = (uintptr_t)"a//b";
	big.a.path_len = 4;
	EXPECT_EQ(-EINVAL, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	big.a.path = (uintptr_t)unmapped_page();
	EXPECT_EQ(-EFAULT, raw_ioctl(fd, HLOCK_IOC_TOKEN, &big.a));
	EXPECT_EQ(-EFAULT, raw_ioctl(fd, HLOCK_IOC_TOKEN, NULL));
	EXPECT_EQ(-EFAULT, hlock_token(fd, path, NULL));
	/* A later, larger structure: its unknown tail must be zero. */
	big.a.path = (uintptr_t)path;
	big.a.path_len = strlen(path);
	big.tail = 1;
	EXPECT_EQ(-E2BIG, raw_ioctl(fd, _IOWR(HLOCK_IOC_MAGIC,
					      _IOC_NR(HLOCK_IOC_TOKEN), big),
				    &big));
	big.tail = 0;
	big.a.token = 0;
	EXPECT_EQ(0, raw_ioctl(fd, _IOWR(HLOCK_IOC_MAGIC,
					 _IOC_NR(HLOCK_IOC_TOKEN), big), &big));
	EXPECT_EQ(t, big.a.token);
	EXPECT_EQ(0ULL, big.tail);
	/* Wrong direction: no command of this module. */
	EXPECT_EQ(-ENOTTY, raw_ioctl(fd, _IOW(HLOCK_IOC_MAGIC,
					      _IOC_NR(HLOCK_IOC_TOKEN),
					      struct hlock_token_args),
				     &big.a));
}

/*
 * Two lock spaces count apart: a child in an IPC namespace of its own
 * draws tokens 1, 2 and 3 there, while ours does not move.
 */
TEST_F_TIMEOUT(why, spaces_count_apart, TEST_TMO)
{
	uint64_t before, after;
	char path[96];
	int err, st;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/ns", self->name);
	ASSERT_EQ(0, hlock_lock(self->fd[0], path, X, 0, 0));
	before = token_of(self->fd[0], path, &err);
	ASSERT_EQ(0, err);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		uint64_t t;
		int fd;

		if (unshare(CLONE_NEWIPC))
			_exit(errno == EPERM ? 4 : 10);
		fd = hlock_open();
		if (fd < 0)
			_exit(11);
		/* Our path too: another resource in another space. */
		if (hlock_lock(fd, path, X, 0, 0) ||
		    hlock_token(fd, path, &t) || t != 1)
			_exit(12);
		if (hlock_lock(fd, "x", S, 0, 0) ||
		    hlock_token(fd, "x", &t) || t != 2)
			_exit(13);
		if (hlock_lock(fd, "x", X, 0, 0) ||
		    hlock_token(fd, "x", &t) || t != 3)
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &st, 0));
	ASSERT_TRUE(WIFEXITED(st));
	if (WEXITSTATUS(st) == 4)
		SKIP(return, "no right to make an IPC namespace");
	ASSERT_EQ(0, WEXITSTATUS(st));
	ASSERT_EQ(0, hlock_unlock(self->fd[0], path));
	ASSERT_EQ(0, hlock_lock(self->fd[0], path, X, 0, 0));
	after = token_of(self->fd[0], path, &err);
	ASSERT_EQ(0, err);
	/* Nobody else draws in this VM's space while this test runs. */
	EXPECT_EQ(before + 1, after);
}

TEST_HARNESS_MAIN
