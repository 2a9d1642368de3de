/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Tracepoints of hlock: events/hlock/ in tracefs.
 *
 * Paths are copied with __dynamic_array rather than __string, whose
 * __assign_str() lost an argument between 6.1 and 6.12.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM hlock

#if !defined(_HLOCK_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _HLOCK_TRACE_H

#include <linux/string.h>
#include <linux/tracepoint.h>

#include "hlock_internal.h"
#include "hlock_space.h"

#define hlock_show_mode(m)						\
	__print_symbolic(m, { 0, "NL" }, { 1, "IS" }, { 2, "IX" },	\
			 { 3, "S" }, { 4, "SIX" }, { 5, "X" })

/* One event about one resource: who, which resource, which mode. */
DECLARE_EVENT_CLASS(hlock_res_class,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode),
	TP_STRUCT__entry(
		__field(int, pid)
		__field(unsigned int, mode)
		__dynamic_array(char, path, hl_path_len(h) + 1)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->mode = mode;
		hl_path_fill(h, __get_dynamic_array(path),
			     __get_dynamic_array_len(path) - 1);
	),
	TP_printk("pid=%d path=\"%s\" mode=%s", __entry->pid,
		  __get_str(path), hlock_show_mode(__entry->mode))
);

/* One event about a path a lock call names. */
DECLARE_EVENT_CLASS(hlock_path_class,
	TP_PROTO(int pid, const char *path, unsigned int mode),
	TP_ARGS(pid, path, mode),
	TP_STRUCT__entry(
		__field(int, pid)
		__field(unsigned int, mode)
		__dynamic_array(char, path, strlen(path) + 1)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->mode = mode;
		memcpy(__get_dynamic_array(path), path, strlen(path) + 1);
	),
	TP_printk("pid=%d path=\"%s\" mode=%s", __entry->pid,
		  __get_str(path), hlock_show_mode(__entry->mode))
);

/* A lock call: the whole path and the mode asked for on it. */
TRACE_EVENT(hlock_request,
	TP_PROTO(int pid, const char *path, unsigned int mode,
		 unsigned int flags, s64 timeout_ns),
	TP_ARGS(pid, path, mode, flags, timeout_ns),
	TP_STRUCT__entry(
		__field(int, pid)
		__field(unsigned int, mode)
		__field(unsigned int, flags)
		__field(s64, timeout_ns)
		__dynamic_array(char, path, strlen(path) + 1)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->mode = mode;
		__entry->flags = flags;
		__entry->timeout_ns = timeout_ns;
		memcpy(__get_dynamic_array(path), path, strlen(path) + 1);
	),
	TP_printk("pid=%d path=\"%s\" mode=%s flags=%#x timeout_ns=%lld",
		  __entry->pid, __get_str(path),
		  hlock_show_mode(__entry->mode), __entry->flags,
		  __entry->timeout_ns)
);

/* One level of a lock call has to wait. */
DEFINE_EVENT(hlock_res_class, hlock_wait,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode));

/* One level of a lock call was granted, at once or after waiting. */
DEFINE_EVENT(hlock_res_class, hlock_grant,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode));

/* A held request asks to convert to a stronger mode (granted or not). */
DEFINE_EVENT(hlock_res_class, hlock_convert,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode));

/*
 * A request is released (its last acquisition, or its locker closed).
 * While it is on, the host hears of every release (hl_release_traced).
 */
DEFINE_EVENT_FN(hlock_res_class, hlock_release,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode), hl_release_trace_reg, hl_release_trace_unreg);

/* A level's wait would close a cycle of waits: refused with EDEADLK. */
DEFINE_EVENT(hlock_res_class, hlock_deadlock,
	TP_PROTO(int pid, const struct hl_head *h, unsigned int mode),
	TP_ARGS(pid, h, mode));

/* A lock call gave up: timeout, or a try that would have waited. */
DEFINE_EVENT(hlock_path_class, hlock_timeout,
	TP_PROTO(int pid, const char *path, unsigned int mode),
	TP_ARGS(pid, path, mode));

/* Why hlock_cancel withdrew a request. */
#define HLOCK_CANCEL_UNLOCK	0
#define HLOCK_CANCEL_CLOSE	1
#define HLOCK_CANCEL_SIGNAL	2
#define HLOCK_CANCEL_RING	3	/* ring teardown, exec (io_uring) */

/*
 * A queued lock call was withdrawn: by unlock, close, a signal, or its
 * ring going away.
 */
TRACE_EVENT(hlock_cancel,
	TP_PROTO(int pid, const char *path, unsigned int mode,
		 unsigned int why),
	TP_ARGS(pid, path, mode, why),
	TP_STRUCT__entry(
		__field(int, pid)
		__field(unsigned int, mode)
		__field(unsigned int, why)
		__dynamic_array(char, path, strlen(path) + 1)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->mode = mode;
		__entry->why = why;
		memcpy(__get_dynamic_array(path), path, strlen(path) + 1);
	),
	TP_printk("pid=%d path=\"%s\" mode=%s why=%s", __entry->pid,
		  __get_str(path), hlock_show_mode(__entry->mode),
		  __print_symbolic(__entry->why,
				   { HLOCK_CANCEL_UNLOCK, "unlock" },
				   { HLOCK_CANCEL_CLOSE, "close" },
				   { HLOCK_CANCEL_SIGNAL, "signal" },
				   { HLOCK_CANCEL_RING, "ring" }))
);

/*
 * A yield releases the resources its locker held, to lock them again
 * within timeout_ns: the grants it lets in and its lock calls follow.
 */
TRACE_EVENT(hlock_yield,
	TP_PROTO(int pid, unsigned int resources, s64 timeout_ns),
	TP_ARGS(pid, resources, timeout_ns),
	TP_STRUCT__entry(
		__field(int, pid)
		__field(unsigned int, resources)
		__field(s64, timeout_ns)
	),
	TP_fast_assign(
		__entry->pid = pid;
		__entry->resources = resources;
		__entry->timeout_ns = timeout_ns;
	),
	TP_printk("pid=%d resources=%u timeout_ns=%lld", __entry->pid,
		  __entry->resources, __entry->timeout_ns)
);

/*
 * A lease that expired was taken over: @pid's acquisition of the path
 * (in @mode) and what it held below were released for a waiter (the log
 * names it).
 */
DEFINE_EVENT(hlock_path_class, hlock_takeover,
	TP_PROTO(int pid, const char *path, unsigned int mode),
	TP_ARGS(pid, path, mode)
);

#endif /* _HLOCK_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE hlock_trace
#include <trace/define_trace.h>
