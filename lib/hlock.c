// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libhlock: each call fills one ioctl argument and converts the result
 * to 0/value or -errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/ioctl.h>

#include "hlock.h"

static const char *const mode_names[HLOCK_NR_MODES] = {
	[HLOCK_NL] = "NL", [HLOCK_IS] = "IS", [HLOCK_IX] = "IX",
	[HLOCK_S] = "S", [HLOCK_SIX] = "SIX", [HLOCK_X] = "X",
};

static int sys_result(int ret)
{
	return ret < 0 ? -errno : ret;
}

/* The length of a path, or -errno. */
static int path_len(const char *path)
{
	size_t len;

	if (!path)
		return -EFAULT;
	len = strnlen(path, HLOCK_PATH_MAX + 1);
	if (len > HLOCK_PATH_MAX)
		return -ENAMETOOLONG;
	return (int)len;
}

static int lease_ioctl(int fd, unsigned long cmd, const char *path, int mode,
		       unsigned int flags, int64_t timeout_ns, int64_t lease_ns)
{
	struct hlock_lock_args args;
	int len = path_len(path);

	if (len < 0)
		return len;
	memset(&args, 0, sizeof(args));
	args.path = (uint64_t)(uintptr_t)path;
	args.path_len = (uint32_t)len;
	args.mode = (uint32_t)mode;
	args.flags = flags;
	args.timeout_ns = timeout_ns;
	args.lease_ns = lease_ns;
	return sys_result(ioctl(fd, cmd, &args));
}

static int path_ioctl(int fd, unsigned long cmd, const char *path, int mode,
		      unsigned int flags, int64_t timeout_ns)
{
	return lease_ioctl(fd, cmd, path, mode, flags, timeout_ns, 0);
}

int hlock_open(void)
{
	return sys_result(open(HLOCK_DEVICE, O_RDWR | O_CLOEXEC));
}

int hlock_lock(int fd, const char *path, int mode, unsigned int flags,
	       int64_t timeout_ns)
{
	return path_ioctl(fd, HLOCK_IOC_LOCK, path, mode, flags, timeout_ns);
}

int hlock_wait(int fd, int64_t timeout_ns)
{
	struct hlock_wait_args args;

	memset(&args, 0, sizeof(args));
	args.timeout_ns = timeout_ns;
	return sys_result(ioctl(fd, HLOCK_IOC_WAIT, &args));
}

int hlock_unlock(int fd, const char *path)
{
	return path_ioctl(fd, HLOCK_IOC_UNLOCK, path, 0, 0, 0);
}

int hlock_downgrade(int fd, const char *path, int mode)
{
	return path_ioctl(fd, HLOCK_IOC_DOWNGRADE, path, mode, 0, 0);
}

int hlock_held(int fd, const char *path)
{
	return path_ioctl(fd, HLOCK_IOC_HELD, path, 0, 0, 0);
}

int hlock_info(int fd, struct hlock_info *info)
{
	if (!info)
		return -EFAULT;
	return sys_result(ioctl(fd, HLOCK_IOC_GET_INFO, info));
}

const char *hlock_mode_name(int mode)
{
	if (mode < 0 || mode >= HLOCK_NR_MODES)
		return "?";
	return mode_names[mode];
}

int hlock_mode_parse(const char *name)
{
	int mode;

	if (!name)
		return -EINVAL;
	for (mode = HLOCK_IS; mode < HLOCK_NR_MODES; mode++)
		if (!strcasecmp(name, mode_names[mode]))
			return mode;
	return -EINVAL;
}

int hlock_stats(int fd, unsigned int scope, struct hlock_stats *st)
{
	struct hlock_stats_args args;

	if (!st)
		return -EFAULT;
	memset(&args, 0, sizeof(args));
	args.stats = (uint64_t)(uintptr_t)st;
	args.size = sizeof(*st);
	args.scope = scope;
	return sys_result(ioctl(fd, HLOCK_IOC_STATS, &args));
}

static int table_flags(int fd, unsigned int flags, void *buf, size_t size,
		       size_t *needed)
{
	struct hlock_table_args args;
	int ret;

	memset(&args, 0, sizeof(args));
	args.buf = (uint64_t)(uintptr_t)buf;
	args.size = size;
	args.flags = flags;
	ret = sys_result(ioctl(fd, HLOCK_IOC_TABLE, &args));
	if (needed)
		*needed = args.needed;
	return ret < 0 ? ret : (int)args.count;
}

int hlock_table(int fd, void *buf, size_t size, size_t *needed)
{
	return table_flags(fd, 0, buf, size, needed);
}

/* Bounded: the table can grow between the two calls, but not forever. */
#define TABLE_TRIES	8

static int table_alloc_flags(int fd, unsigned int flags, void **bufp)
{
	size_t size = 0, needed = 0;
	void *buf = NULL;
	int i, ret = -ENOSPC;

	for (i = 0; i < TABLE_TRIES && ret == -ENOSPC; i++) {
		free(buf);
		/* Room for the records that appear meanwhile. */
		size = needed + needed / 4 + 4096;
		buf = malloc(size);
		if (!buf)
			return -ENOMEM;
		ret = table_flags(fd, flags, buf, size, &needed);
	}
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*bufp = buf;
	return ret;
}

int hlock_table_alloc(int fd, void **bufp)
{
	return table_alloc_flags(fd, 0, bufp);
}

int hlock_table_ids_alloc(int fd, void **bufp)
{
	return table_alloc_flags(fd, HLOCK_TABLE_F_IDS, bufp);
}

const struct hlock_record_ids *
hlock_record_ids(const struct hlock_lock_record *rec)
{
	size_t off = HLOCK_RECORD_IDS_OFFSET(rec->path_len);

	if (rec->rec_len < off + sizeof(struct hlock_record_ids))
		return NULL;
	return (const struct hlock_record_ids *)((const char *)rec + off);
}

int hlock_refuse(int fd, const struct hlock_record_ids *ids)
{
	struct hlock_refuse_args args;

	if (!ids)
		return -EFAULT;
	memset(&args, 0, sizeof(args));
	args.serial = ids->serial;
	args.locker = ids->locker;
	args.wait_seq = ids->wait_seq;
	args.hold_seq = ids->hold_seq;
	return sys_result(ioctl(fd, HLOCK_IOC_REFUSE, &args));
}

const char *hlock_level_name(unsigned int level)
{
	static const char *const names[HLOCK_NR_LEVELS] = {
		"Global", "Database", "Collection", "Object",
	};

	return level < HLOCK_NR_LEVELS ? names[level] : "?";
}

const char *hlock_state_name(unsigned int state)
{
	static const char *const names[] = {
		[HLOCK_STATE_GRANTED] = "granted",
		[HLOCK_STATE_WAITING] = "waiting",
		[HLOCK_STATE_CONVERTING] = "converting",
	};

	return state < sizeof(names) / sizeof(names[0]) ? names[state] : "?";
}

int hlock_yield(int fd, int64_t timeout_ns)
{
	struct hlock_yield_args args;

	memset(&args, 0, sizeof(args));
	args.timeout_ns = timeout_ns;
	return sys_result(ioctl(fd, HLOCK_IOC_YIELD, &args));
}

int hlock_lock_lease(int fd, const char *path, int mode, unsigned int flags,
		     int64_t timeout_ns, int64_t lease_ns)
{
	return lease_ioctl(fd, HLOCK_IOC_LOCK, path, mode, flags, timeout_ns,
			   lease_ns);
}

int hlock_renew(int fd)
{
	return sys_result(ioctl(fd, HLOCK_IOC_RENEW, 0));
}

int hlock_token(int fd, const char *path, uint64_t *token)
{
	struct hlock_token_args args;
	int len = path_len(path), ret;

	if (len < 0)
		return len;
	if (!token)
		return -EFAULT;
	memset(&args, 0, sizeof(args));
	args.path = (uint64_t)(uintptr_t)path;
	args.path_len = (uint32_t)len;
	ret = sys_result(ioctl(fd, HLOCK_IOC_TOKEN, &args));
	if (!ret)
		*token = args.token;
	return ret;
}

int hlock_describe(int fd, const char *why)
{
	struct hlock_describe_args args;
	size_t len;

	if (!why)
		return -EFAULT;
	len = strnlen(why, HLOCK_WHY_LEN);
	if (len >= HLOCK_WHY_LEN)
		return -ENAMETOOLONG;
	memset(&args, 0, sizeof(args));
	args.why = (uint64_t)(uintptr_t)why;
	args.why_len = (uint32_t)len;
	return sys_result(ioctl(fd, HLOCK_IOC_DESCRIBE, &args));
}

int hlock_owner(int fd, unsigned int flags)
{
	struct hlock_owner_args args;

	memset(&args, 0, sizeof(args));
	args.flags = flags;
	return sys_result(ioctl(fd, HLOCK_IOC_OWNER, &args));
}

const struct hlock_record_ext *
hlock_record_ext(const struct hlock_lock_record *rec)
{
	size_t off = HLOCK_RECORD_EXT_OFFSET(rec->path_len);

	if (rec->rec_len < off + sizeof(struct hlock_record_ext))
		return NULL;
	return (const struct hlock_record_ext *)((const char *)rec + off);
}

const char *hlock_record_why(const struct hlock_lock_record *rec)
{
	const struct hlock_record_ext *ext = hlock_record_ext(rec);

	return ext ? ext->why : "";
}

static int lvb_ioctl(int fd, const char *path, unsigned int op, void *buf)
{
	struct hlock_lvb_args args;
	int len = path_len(path);

	if (len < 0)
		return len;
	if (!buf)
		return -EFAULT;
	memset(&args, 0, sizeof(args));
	args.path = (uint64_t)(uintptr_t)path;
	args.path_len = (uint32_t)len;
	args.op = op;
	args.buf = (uint64_t)(uintptr_t)buf;
	return sys_result(ioctl(fd, HLOCK_IOC_LVB, &args));
}

int hlock_lvb_get(int fd, const char *path, void *buf)
{
	return lvb_ioctl(fd, path, HLOCK_LVB_GET, buf);
}

int hlock_lvb_set(int fd, const char *path, const void *buf)
{
	/* The kernel only reads it. */
	return lvb_ioctl(fd, path, HLOCK_LVB_SET, (void *)(uintptr_t)buf);
}

static int events_ioctl(int fd, unsigned int flags, unsigned int want,
			unsigned int *events)
{
	struct hlock_events_args args;
	int ret;

	memset(&args, 0, sizeof(args));
	args.flags = flags;
	args.want = want;
	ret = sys_result(ioctl(fd, HLOCK_IOC_EVENTS, &args));
	if (!ret && events)
		*events = args.events;
	return ret;
}

int hlock_events(int fd, unsigned int *events)
{
	if (!events)
		return -EFAULT;
	return events_ioctl(fd, 0, 0, events);
}

int hlock_events_want(int fd, unsigned int want)
{
	return events_ioctl(fd, HLOCK_EVENTS_F_WANT, want, NULL);
}

int hlock_blocking(int fd, const char *path)
{
	return path_ioctl(fd, HLOCK_IOC_BLOCKING, path, 0, 0, 0);
}

int hlock_cluster_get(int fd, pid_t pid, char *name, size_t size)
{
	struct hlock_cluster_args args;
	int ret;

	if (!name || !size)
		return -EFAULT;
	memset(&args, 0, sizeof(args));
	args.name = (uintptr_t)name;
	/* Room for the NUL this adds. */
	args.name_len = size - 1 > UINT32_MAX ? UINT32_MAX : size - 1;
	args.pid = pid;
	ret = sys_result(ioctl(fd, HLOCK_IOC_CLUSTER, &args));
	if (ret)
		return ret;
	name[args.name_len] = 0;
	return 0;
}

int hlock_cluster_set(int fd, pid_t pid, const char *name)
{
	struct hlock_cluster_args args;
	size_t len = name ? strlen(name) : 0;

	memset(&args, 0, sizeof(args));
	if (len > HLOCK_CLUSTER_NAME_MAX)
		return -ENAMETOOLONG;
	args.name = (uintptr_t)name;
	args.name_len = len;
	args.flags = HLOCK_CLUSTER_F_SET;
	args.pid = pid;
	return sys_result(ioctl(fd, HLOCK_IOC_CLUSTER, &args));
}
