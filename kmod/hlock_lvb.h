/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_lvb.c: lock value blocks (HLOCK_IOC_LVB) and the events a locker
 * polls for (HLOCK_IOC_EVENTS: blocking notifications, lost locks).
 */
#ifndef _HLOCK_LVB_H
#define _HLOCK_LVB_H

#include <linux/compiler.h>
#include <linux/types.h>

struct hl_file;
struct hl_req;
struct hl_res;

/* Bits of hl_events.bits: HLOCK_EVENT_BLOCKING pending, and asked for. */
#define HL_EVENT_BLOCKING_BIT	0
#define HL_EVENT_WANT_BIT	1

/**
 * struct hl_events - The events a locker polls for (HLOCK_IOC_EVENTS).
 * @bits: HL_EVENT_*_BIT, atomic: BLOCKING set under a head lock by
 *	hl_note_blocking() while WANT is, cleared by HLOCK_IOC_EVENTS; read
 *	by poll.
 */
struct hl_events {
	unsigned long bits;
};

void hl_lvb_free(struct hl_res *r);
int hl_lvb_prepare(struct hl_res *r);
void hl_lvb_load(struct hl_res *r, const u8 *val);
void hl_lvb_store(struct hl_res *r, u8 *val);
long hl_ioctl_lvb(struct hl_file *f, size_t usize, void __user *uarg);
unsigned int hl_file_events(struct hl_file *f);
long hl_ioctl_events(struct hl_file *f, size_t usize, void __user *uarg);
void hl_lvb_flush(struct hl_req *req);
void hl_event_blocking(struct hl_req *holder);
void hl_event_lost(struct hl_req *holder);

#endif /* _HLOCK_LVB_H */
