/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libhlock: a thin library over /dev/hlock.
 *
 * Every function returns a non-negative value on success and -errno on
 * failure; none of them sets errno.
 */
#ifndef LIBHLOCK_H
#define LIBHLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
/*
 * The uapi header: uapi/linux/hlock.h in the tree (-Iuapi), and
 * installed as INCLUDEDIR/hlock/linux/hlock.h beside this file, which
 * libhlock.pc's -I${includedir}/hlock finds.
 */
#include <linux/hlock.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The device node hlock_open() opens. */
#define HLOCK_DEVICE	"/dev/hlock"

int hlock_open(void);
int hlock_lock(int fd, const char *path, int mode, unsigned int flags,
	       int64_t timeout_ns);
int hlock_wait(int fd, int64_t timeout_ns);
int hlock_unlock(int fd, const char *path);
int hlock_downgrade(int fd, const char *path, int mode);
int hlock_held(int fd, const char *path);
int hlock_info(int fd, struct hlock_info *info);
const char *hlock_mode_name(int mode);
int hlock_mode_parse(const char *name);
int hlock_stats(int fd, unsigned int scope, struct hlock_stats *st);
int hlock_table(int fd, void *buf, size_t size, size_t *needed);
int hlock_table_alloc(int fd, void **buf);
const char *hlock_level_name(unsigned int level);
const char *hlock_state_name(unsigned int state);
int hlock_yield(int fd, int64_t timeout_ns);
int hlock_lock_lease(int fd, const char *path, int mode, unsigned int flags,
		     int64_t timeout_ns, int64_t lease_ns);
int hlock_renew(int fd);
int hlock_token(int fd, const char *path, uint64_t *token);
int hlock_describe(int fd, const char *why);
const struct hlock_record_ext *
hlock_record_ext(const struct hlock_lock_record *rec);
const char *hlock_record_why(const struct hlock_lock_record *rec);
int hlock_lvb_get(int fd, const char *path, void *buf);
int hlock_lvb_set(int fd, const char *path, const void *buf);
int hlock_events(int fd, unsigned int *events);
int hlock_events_want(int fd, unsigned int want);
int hlock_blocking(int fd, const char *path);
int hlock_cluster_get(int fd, pid_t pid, char *name, size_t size);
int hlock_cluster_set(int fd, pid_t pid, const char *name);
int hlock_owner(int fd, unsigned int flags);
int hlock_table_ids_alloc(int fd, void **buf);
const struct hlock_record_ids *
hlock_record_ids(const struct hlock_lock_record *rec);
int hlock_refuse(int fd, const struct hlock_record_ids *ids);

/*
 * Walking the records hlock_table() copied:
 *
 *	const struct hlock_lock_record *rec = buf;
 *	for (i = 0; i < count; i++, rec = hlock_record_next(rec))
 *		printf("%s\n", hlock_record_path(rec));
 */
static inline const struct hlock_lock_record *
hlock_record_next(const struct hlock_lock_record *rec)
{
	return (const struct hlock_lock_record *)((const char *)rec +
						  rec->rec_len);
}

/* The record's resource path, NUL-terminated ("" for the root). */
static inline const char *hlock_record_path(const struct hlock_lock_record *rec)
{
	return (const char *)(rec + 1);
}

#ifdef __cplusplus
}
#endif

#endif /* LIBHLOCK_H */
