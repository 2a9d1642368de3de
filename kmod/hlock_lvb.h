/* SPDX-License-Identifier: GPL-2.0 */
/*
 * hlock_lvb.c: lock value blocks and the events a locker polls for
 * (blocking notifications, lost locks); their ioctls: hlock_lvb_ioctl.h.
 */
#ifndef _HLOCK_LVB_H
#define _HLOCK_LVB_H

#include <linux/compiler.h>
#include <linux/types.h>

struct hl_head;
struct hl_hooks;
struct hl_lvb;
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
int hl_lvb_access(struct hl_head *h, const struct hl_req *req, bool set,
		  u8 *val, struct hl_lvb **spare);
struct hl_lvb *hl_lvb_alloc(void);
void hl_lvb_flush(struct hl_req *req);
void hl_event_blocking(struct hl_req *holder);
void hl_event_lost(struct hl_req *holder);

extern const struct hl_hooks hl_lvb_hooks;

#endif /* _HLOCK_LVB_H */
