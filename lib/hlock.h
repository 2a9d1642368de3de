/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libhlock: a thin library over /dev/hlock.
 *
 * Every function returns a non-negative value on success and -errno on
 * failure; none of them sets errno.
 */
#ifndef LIBHLOCK_H
#define LIBHLOCK_H

#include <stdint.h>
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

#ifdef __cplusplus
}
#endif

#endif /* LIBHLOCK_H */
