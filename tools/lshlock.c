// SPDX-License-Identifier: GPL-2.0
/*
 * lshlock: list the hierarchical locks of /dev/hlock the way lslocks(8)
 * lists file locks, one line per granted, converting or waiting request;
 * or, with --stats, the module's lock statistics.
 *
 * Text is escaped the way libsmartcols does it: bytes that are not
 * printable valid UTF-8, and the backslash, show as \xNN (in --raw output
 * also the space).  JSON strings escape '"', '\\' and control characters,
 * and each byte that is not valid UTF-8 as \u00NN (its Latin-1 reading).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>

#include "hlock.h"
/* Before cli_common.h, whose usage_error() prints it. */
#define PROG		"lshlock"
#include "cli_common.h"


/* Without --notruncate, longer RESOURCE values are cut to this width. */
#define TRUNC_WIDTH	40
#define ELLIPSIS	"..."

enum {
	COL_COMMAND, COL_PID, COL_RESOURCE, COL_MODE, COL_STATE, COL_WAIT,
	COL_HELD, COL_BLOCKER, COL_WHY,
	/* The columns after the default ones: only with -o or --output-all. */
	COL_TOKEN, NR_COLS
};
#define NR_DEFAULT_COLS	COL_TOKEN

static const struct column {
	const char *name;
	const char *json;	/* its key in --json output */
	bool right;		/* right-aligned */
	const char *help;
} columns[NR_COLS] = {
	[COL_COMMAND]	= { "COMMAND", "command", false,
			    "command of the process holding or waiting for the lock" },
	[COL_PID]	= { "PID", "pid", true,
			    "PID of that process (- when not in our PID namespace)" },
	[COL_RESOURCE]	= { "RESOURCE", "resource", false,
			    "resource path, " CLI_ROOT_NAME " for the root" },
	[COL_MODE]	= { "MODE", "mode", false,
			    "lock mode: IS, IX, S, SIX or X; HELD->WANTED when converting" },
	[COL_STATE]	= { "STATE", "state", false,
			    "granted, waiting or converting" },
	[COL_WAIT]	= { "WAIT", "wait_ns", true,
			    "how long it has been waiting (ns with --raw)" },
	[COL_HELD]	= { "HELD", "held_ns", true,
			    "how long it has been held (ns with --raw)" },
	[COL_BLOCKER]	= { "BLOCKER", "blockers", false,
			    "PIDs of the requests blocking it (? not visible)" },
	[COL_WHY]	= { "WHY", "why", false,
			    "the locker's description (hlock_describe(3))" },
	[COL_TOKEN]	= { "TOKEN", "token", true,
			    "fencing token of the grant held (- while waiting)" },
};

/* Output options. */
static struct {
	int cols[NR_COLS];	/* the selected columns, in order */
	int ncols;
	bool json, noheadings, raw, notruncate;
} out;

/* A growing string. */
struct sbuf {
	char *s;
	size_t len, cap;
};

static void __attribute__((noreturn)) oom(void)
{
	fprintf(stderr, PROG ": %s\n", strerror(ENOMEM));
	exit(1);
}

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = (b->len + n + 1) * 2;
		char *p = realloc(b->s, cap);

		if (!p)
			oom();
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void __attribute__((format(printf, 2, 3)))
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		n = strlen(tmp);
	sb_add(b, tmp, n);
}

/* The string, owned by the caller from now on ("" if nothing was added). */
static char *sb_take(struct sbuf *b)
{
	if (!b->s)
		sb_add(b, "", 0);
	return b->s;
}

/*
 * Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if there
 * is none: no overlong forms, surrogates or code points above U+10FFFF.
 * Stores the code point in *cp.
 */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t len, i;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		c &= 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		c &= 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		c &= 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/*
 * Escape @s for table or raw output into @b, adding at most @maxw display
 * columns; returns the columns that the whole of @s needs.
 */
static size_t text_escape(struct sbuf *b, const char *s, size_t maxw)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), w = 0;

	while (n) {
		uint32_t cp;
		size_t len = utf8_seq(p, n, &cp), uw = 1;
		char esc[8];
		bool bad = !len || cp < 0x20 || (cp >= 0x7f && cp < 0xa0) ||
			   cp == '\\' || (cp == ' ' && out.raw);

		if (bad) {
			len = 1;
			uw = 4;
		}
		if (w + uw <= maxw) {
			if (bad) {
				snprintf(esc, sizeof(esc), "\\x%02x", *p);
				sb_add(b, esc, 4);
			} else {
				sb_add(b, (const char *)p, len);
			}
		}
		w += uw;
		p += len;
		n -= len;
	}
	return w;
}

/* A text cell: escaped, and truncated to TRUNC_WIDTH if @trunc. */
static char *text_cell(const char *s, bool trunc)
{
	struct sbuf b = { 0 };

	if (!*s)
		s = "-";
	if (text_escape(&b, s, SIZE_MAX) > TRUNC_WIDTH && trunc) {
		b.len = 0;
		text_escape(&b, s, TRUNC_WIDTH - strlen(ELLIPSIS));
		sb_add(&b, ELLIPSIS, strlen(ELLIPSIS));
	}
	return sb_take(&b);
}

/* Columns a cell takes: its code points (cells are valid UTF-8). */
static size_t cell_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

/* A human duration: 850ns, 12us, 345ms, 1.5s, 1m03s, 2h05m, 3d04h. */
static void fmt_duration(struct sbuf *b, uint64_t ns)
{
	const uint64_t us = 1000, ms = 1000 * us, s = 1000 * ms;
	uint64_t secs = ns / s;

	if (ns < us)
		sb_printf(b, "%" PRIu64 "ns", ns);
	else if (ns < ms)
		sb_printf(b, "%" PRIu64 "us", ns / us);
	else if (ns < s)
		sb_printf(b, "%" PRIu64 "ms", ns / ms);
	else if (secs < 60)
		sb_printf(b, "%" PRIu64 ".%" PRIu64 "s", secs,
			  ns / (100 * ms) % 10);
	else if (secs < 3600)
		sb_printf(b, "%" PRIu64 "m%02" PRIu64 "s", secs / 60,
			  secs % 60);
	else if (secs < 86400)
		sb_printf(b, "%" PRIu64 "h%02" PRIu64 "m", secs / 3600,
			  secs / 60 % 60);
	else
		sb_printf(b, "%" PRIu64 "d%02" PRIu64 "h", secs / 86400,
			  secs / 3600 % 24);
}

/* A duration cell: "-" when it does not apply, ns with --raw. */
static char *duration_cell(bool applies, uint64_t ns)
{
	struct sbuf b = { 0 };

	if (!applies)
		sb_add(&b, "-", 1);
	else if (out.raw)
		sb_printf(&b, "%" PRIu64, ns);
	else
		fmt_duration(&b, ns);
	return sb_take(&b);
}

/* The distinct blocker pids of @rec, in order; returns how many. */
static unsigned int blockers(const struct hlock_lock_record *rec,
			     uint32_t *pids)
{
	unsigned int i, j, n = 0, nr = rec->nr_blockers;

	if (nr > HLOCK_MAX_BLOCKERS)
		nr = HLOCK_MAX_BLOCKERS;
	for (i = 0; i < nr; i++) {
		for (j = 0; j < n && pids[j] != rec->blockers[i]; j++)
			;
		if (j == n)
			pids[n++] = rec->blockers[i];
	}
	return n;
}

static bool waits(const struct hlock_lock_record *rec)
{
	return rec->state == HLOCK_STATE_WAITING ||
	       rec->state == HLOCK_STATE_CONVERTING;
}

static bool holds(const struct hlock_lock_record *rec)
{
	return rec->state == HLOCK_STATE_GRANTED ||
	       rec->state == HLOCK_STATE_CONVERTING;
}

/* The record's fencing token; 0 while waiting or from an older module. */
static uint64_t token(const struct hlock_lock_record *rec)
{
	const struct hlock_record_ext *ext = hlock_record_ext(rec);

	return ext ? ext->token : 0;
}

/* The record's description into @buf, NUL-terminated whatever was sent. */
static void why(const struct hlock_lock_record *rec, char *buf)
{
	const char *w = hlock_record_why(rec);
	size_t n = strnlen(w, HLOCK_WHY_LEN - 1);

	memcpy(buf, w, n);
	buf[n] = '\0';
}

static char *cell(const struct hlock_lock_record *rec, int col)
{
	uint32_t pids[HLOCK_MAX_BLOCKERS];
	char text[HLOCK_WHY_LEN];
	struct sbuf b = { 0 };
	unsigned int i, n;
	char comm[HLOCK_COMM_LEN];

	switch (col) {
	case COL_COMMAND:
		memcpy(comm, rec->comm, sizeof(comm));
		comm[sizeof(comm) - 1] = '\0';
		return text_cell(rec->pid ? comm : "", false);
	case COL_PID:
		if (!rec->pid)
			return text_cell("", false);
		sb_printf(&b, "%" PRIu32, rec->pid);
		break;
	case COL_RESOURCE:
		return text_cell(cli_path_name(hlock_record_path(rec)),
				 !out.raw && !out.notruncate);
	case COL_MODE:
		sb_printf(&b, "%s", hlock_mode_name(rec->mode));
		if (rec->state == HLOCK_STATE_CONVERTING)
			sb_printf(&b, "->%s",
				  hlock_mode_name(rec->convert_mode));
		break;
	case COL_STATE:
		sb_printf(&b, "%s", hlock_state_name(rec->state));
		break;
	case COL_WAIT:
		return duration_cell(waits(rec), rec->wait_ns);
	case COL_HELD:
		return duration_cell(holds(rec), rec->held_ns);
	case COL_BLOCKER:
		n = blockers(rec, pids);
		for (i = 0; i < n; i++) {
			if (pids[i])
				sb_printf(&b, "%s%" PRIu32, i ? "," : "",
					  pids[i]);
			else
				sb_printf(&b, "%s?", i ? "," : "");
		}
		if (rec->nr_blockers > HLOCK_MAX_BLOCKERS)
			sb_printf(&b, ",%s", ELLIPSIS);
		if (!n)
			sb_add(&b, "-", 1);
		break;
	case COL_WHY:
		why(rec, text);
		return text_cell(text, false);
	case COL_TOKEN:
		if (!token(rec))
			return text_cell("", false);
		sb_printf(&b, "%" PRIu64, token(rec));
		break;
	}
	return sb_take(&b);
}

/*
 * Print @nrows rows of cells (row-major, out.ncols... @ncols each) under
 * @heads: aligned, or with --raw separated by single spaces.
 */
static void print_table(const char *const *heads, const bool *right,
			char **cells, size_t nrows, int ncols)
{
	size_t width[NR_COLS] = { 0 }, r;
	int c;

	if (!out.raw) {
		for (c = 0; c < ncols; c++) {
			if (!out.noheadings)
				width[c] = cell_width(heads[c]);
			for (r = 0; r < nrows; r++) {
				size_t w = cell_width(cells[r * ncols + c]);

				if (w > width[c])
					width[c] = w;
			}
		}
	}
	for (r = out.noheadings; r <= nrows; r++) {
		const char *const *row = r ? (const char *const *)cells +
					 (r - 1) * ncols : heads;

		for (c = 0; c < ncols; c++) {
			size_t pad = 0, w = cell_width(row[c]);

			if (!out.raw && width[c] > w)
				pad = width[c] - w;
			if (c)
				putchar(' ');
			if (right[c])
				printf("%*s", (int)pad, "");
			fputs(row[c], stdout);
			if (!right[c] && c < ncols - 1)
				printf("%*s", (int)pad, "");
		}
		putchar('\n');
	}
}

/* @s as a JSON string. */
static void json_string(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);

	putchar('"');
	while (n) {
		uint32_t cp;
		size_t len = utf8_seq(p, n, &cp);

		if (!len || cp < 0x20 || cp == 0x7f) {
			printf("\\u%04x", *p);
			len = 1;
		} else if (cp == '"' || cp == '\\') {
			printf("\\%c", (int)cp);
		} else {
			fwrite(p, 1, len, stdout);
		}
		p += len;
		n -= len;
	}
	putchar('"');
}

static void json_record(const struct hlock_lock_record *rec)
{
	uint32_t pids[HLOCK_MAX_BLOCKERS];
	char comm[HLOCK_COMM_LEN], text[HLOCK_WHY_LEN];
	unsigned int i, n;
	int c;

	fputs("  {", stdout);
	for (c = 0; c < out.ncols; c++) {
		int col = out.cols[c];

		printf("%s\"%s\": ", c ? ", " : "", columns[col].json);
		switch (col) {
		case COL_COMMAND:
			memcpy(comm, rec->comm, sizeof(comm));
			comm[sizeof(comm) - 1] = '\0';
			json_string(comm);
			break;
		case COL_PID:
			printf("%" PRIu32, rec->pid);
			break;
		case COL_RESOURCE:
			json_string(hlock_record_path(rec));
			break;
		case COL_MODE:
			json_string(hlock_mode_name(rec->mode));
			if (rec->state == HLOCK_STATE_CONVERTING) {
				fputs(", \"convert_mode\": ", stdout);
				json_string(hlock_mode_name(rec->convert_mode));
			}
			break;
		case COL_STATE:
			json_string(hlock_state_name(rec->state));
			break;
		case COL_WAIT:
			printf("%" PRIu64, (uint64_t)rec->wait_ns);
			break;
		case COL_HELD:
			printf("%" PRIu64, (uint64_t)rec->held_ns);
			break;
		case COL_BLOCKER:
			n = blockers(rec, pids);
			putchar('[');
			for (i = 0; i < n; i++)
				printf("%s%" PRIu32, i ? ", " : "", pids[i]);
			putchar(']');
			break;
		case COL_WHY:
			why(rec, text);
			json_string(text);
			break;
		case COL_TOKEN:
			printf("%" PRIu64, token(rec));
			break;
		}
	}
	putchar('}');
}

/* A record to print, and its place in the table for a stable sort. */
struct row {
	const struct hlock_lock_record *rec;
	int index;
};

/*
 * Paths in tree order: a resource right before its descendants, so '/'
 * sorts below every other byte.
 */
static int path_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a;
	const unsigned char *y = (const unsigned char *)b;

	for (; *x && *x == *y; x++, y++)
		;
	if (*x == *y)
		return 0;
	if (!*x || (*x == '/' && *y))
		return -1;
	if (!*y || *y == '/')
		return 1;
	return *x < *y ? -1 : 1;
}

/* By pid, then path; the module's order (queue order) within a path. */
static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	int d;

	if (a->rec->pid != b->rec->pid)
		return a->rec->pid < b->rec->pid ? -1 : 1;
	d = path_cmp(hlock_record_path(a->rec), hlock_record_path(b->rec));
	if (d)
		return d;
	return a->index - b->index;
}

static void list_locks(const void *buf, int count, long pid)
{
	const struct hlock_lock_record *rec = buf;
	const char *heads[NR_COLS];
	bool right[NR_COLS];
	size_t nrows = 0, i;
	struct row *rows;
	char **cells;
	int c, r;

	rows = calloc(count ? count : 1, sizeof(*rows));
	if (!rows)
		oom();
	for (r = 0; r < count; r++, rec = hlock_record_next(rec)) {
		if (pid >= 0 && rec->pid != pid)
			continue;
		rows[nrows].rec = rec;
		rows[nrows].index = r;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), row_cmp);

	if (out.json) {
		fputs("{\"locks\": [", stdout);
		for (i = 0; i < nrows; i++) {
			fputs(i ? ",\n" : "\n", stdout);
			json_record(rows[i].rec);
		}
		fputs(nrows ? "\n]}\n" : "]}\n", stdout);
		free(rows);
		return;
	}

	cells = calloc((nrows ? nrows : 1) * out.ncols, sizeof(*cells));
	if (!cells)
		oom();
	for (i = 0; i < nrows; i++)
		for (c = 0; c < out.ncols; c++)
			cells[i * out.ncols + c] = cell(rows[i].rec,
							out.cols[c]);
	for (c = 0; c < out.ncols; c++) {
		heads[c] = columns[out.cols[c]].name;
		right[c] = columns[out.cols[c]].right;
	}
	print_table(heads, right, cells, nrows, out.ncols);
	for (i = 0; i < nrows * out.ncols; i++)
		free(cells[i]);
	free(cells);
	free(rows);
}

/* The names of the ticket pools, as MongoDB's serverStatus has them. */
static const char *const pool_names[HLOCK_NR_TICKET_POOLS] = {
	[HLOCK_TICKET_READ] = "read",
	[HLOCK_TICKET_WRITE] = "write",
};

/* The ticket pools, one line (a total of 0 is unlimited). */
static void stats_tickets_line(const struct hlock_stats *st)
{
	unsigned int p;

	fputs("tickets:", stdout);
	for (p = 0; p < HLOCK_NR_TICKET_POOLS; p++) {
		const struct hlock_ticket_stats *t = &st->tickets[p];

		printf("%s %s %" PRIu64 " out, %" PRIu64 " available, %" PRIu64
		       " total, %" PRIu64 " waiting", p ? ";" : "",
		       pool_names[p], (uint64_t)t->out,
		       (uint64_t)t->available, (uint64_t)t->total,
		       (uint64_t)t->waiting);
	}
	putchar('\n');
}

/*
 * MongoDB's serverStatus "concurrentTransactions": {"read": {"out": 1,
 * "available": 127, "totalTickets": 128}, "write": {...}}.
 */
static void stats_tickets_json(const struct hlock_stats *st)
{
	unsigned int p;

	fputs("  \"concurrentTransactions\": {", stdout);
	for (p = 0; p < HLOCK_NR_TICKET_POOLS; p++) {
		const struct hlock_ticket_stats *t = &st->tickets[p];

		printf("%s\"%s\": {\"out\": %" PRIu64 ", \"available\": %"
		       PRIu64 ", \"totalTickets\": %" PRIu64 "}",
		       p ? ", " : "", pool_names[p], (uint64_t)t->out,
		       (uint64_t)t->available, (uint64_t)t->total);
	}
	fputs("},\n", stdout);
}

/* The modes of the human statistics table, in their natural order. */
static const int stat_modes[] = {
	HLOCK_IS, HLOCK_IX, HLOCK_S, HLOCK_SIX, HLOCK_X,
};
#define NR_STAT_MODES	ARRAY_SIZE(stat_modes)
#define NR_STAT_COLS	5

static void stats_table(const struct hlock_stats *st)
{
	static const char *const heads[NR_STAT_COLS] = {
		"LEVEL", "MODE", "ACQUIRE", "WAITS", "WAIT-TIME",
	};
	static const bool right[NR_STAT_COLS] = {
		false, false, true, true, true,
	};
	char *cells[HLOCK_NR_LEVELS * NR_STAT_MODES * NR_STAT_COLS];
	size_t nrows = 0, i;
	unsigned int l, m;

	for (l = 0; l < HLOCK_NR_LEVELS; l++) {
		const struct hlock_level_stats *ls = &st->level[l];

		for (m = 0; m < NR_STAT_MODES; m++) {
			int mode = stat_modes[m];
			char **row = cells + nrows * NR_STAT_COLS;
			struct sbuf b = { 0 };

			if (!ls->acquire_count[mode] && !ls->wait_count[mode])
				continue;
			row[0] = text_cell(hlock_level_name(l), false);
			row[1] = text_cell(hlock_mode_name(mode), false);
			sb_printf(&b, "%" PRIu64,
				  (uint64_t)ls->acquire_count[mode]);
			row[2] = sb_take(&b);
			b = (struct sbuf){ 0 };
			sb_printf(&b, "%" PRIu64,
				  (uint64_t)ls->wait_count[mode]);
			row[3] = sb_take(&b);
			row[4] = duration_cell(ls->wait_count[mode] ||
					       ls->wait_time_ns[mode],
					       ls->wait_time_ns[mode]);
			nrows++;
		}
	}
	print_table(heads, right, cells, nrows, NR_STAT_COLS);
	printf("timeouts: %" PRIu64 ", interrupts: %" PRIu64
	       ", cancels: %" PRIu64 ", deadlocks: %" PRIu64
	       ", takeovers: %" PRIu64 ", yields: %" PRIu64 "\n",
	       (uint64_t)st->timeouts, (uint64_t)st->interrupts,
	       (uint64_t)st->cancels, (uint64_t)st->deadlocks,
	       (uint64_t)st->takeovers, (uint64_t)st->yields);
	stats_tickets_line(st);
	for (i = 0; i < nrows * NR_STAT_COLS; i++)
		free(cells[i]);
}

/*
 * MongoDB's serverStatus "locks" document, and hlock's own counters:
 *   {"Global": {"acquireCount": {"r": 2, "w": 1}, ...}, ...,
 *    "hlock": {"timeouts": 0, "interrupts": 0, "cancels": 0,
 *              "deadlocks": 0, "takeovers": 0, "yields": 0}}
 */
static void stats_json(const struct hlock_stats *st)
{
	unsigned int l;

	fputs("{\n", stdout);
	stats_tickets_json(st);
	for (l = 0; l < HLOCK_NR_LEVELS; l++) {
		if (cli_level_empty(&st->level[l]))
			continue;
		printf("  \"%s\": ", hlock_level_name(l));
		cli_print_level(stdout, &st->level[l], true);
		fputs(",\n", stdout);
	}
	printf("  \"hlock\": {\"timeouts\": %" PRIu64 ", \"interrupts\": %"
	       PRIu64 ", \"cancels\": %" PRIu64 ", \"deadlocks\": %" PRIu64
	       ", \"takeovers\": %" PRIu64 ", \"yields\": %" PRIu64
	       "}\n}\n", (uint64_t)st->timeouts, (uint64_t)st->interrupts,
	       (uint64_t)st->cancels, (uint64_t)st->deadlocks,
	       (uint64_t)st->takeovers, (uint64_t)st->yields);
}

static void usage_lines(FILE *f)
{
	fputs("Usage:\n"
	      " " PROG " [options]\n"
	      " " PROG " --stats [-J] [-n] [-r]\n", f);
}

static void __attribute__((noreturn)) help(void)
{
	int c;

	usage_lines(stdout);
	fputs("\n"
"List the hierarchical locks of " HLOCK_DEVICE ": one line per granted,\n"
"converting or waiting request.  Locking a path also takes intent locks\n"
"(IS, IX) on its ancestors; each is listed.  Sorted by PID, then by\n"
"resource (each before its descendants); a resource's requests in its\n"
"order: granted ones, then the queue.\n"
"\n"
"Options:\n"
" -J, --json             use JSON output format\n"
" -n, --noheadings       don't print headings\n"
" -o, --output <list>    output columns (comma-separated; +<list> adds to\n"
"                          the default, which is all but TOKEN)\n"
"     --output-all       output all columns\n"
" -p, --pid <pid>        only the requests of this process\n"
" -r, --raw              raw output: single spaces, no truncation, spaces\n"
"                          escaped, WAIT and HELD in nanoseconds\n"
" -u, --notruncate       don't truncate RESOURCE (else to 40 columns)\n"
" -H, --list-columns     list the available columns\n"
"     --stats            the module's lock statistics instead\n"
" -h, --help             display this help\n"
" -V, --version          display version\n"
"\n"
"JSON: {\"locks\": [{\"command\": \"x\", \"pid\": 12, \"resource\": \"db/c\",\n"
"  \"mode\": \"S\", \"state\": \"granted\", \"wait_ns\": 0, \"held_ns\": 5,\n"
"  \"blockers\": [34], \"why\": \"\"}]}, only the -o columns (TOKEN adds\n"
"  \"token\": 7, 0 while waiting); a converting request also has\n"
"  \"convert_mode\" (\"mode\" is the held one).  The root is \"\", a\n"
"  hidden PID 0.  Bytes that are not UTF-8 are escaped as \\u00NN.\n"
"\n"
"--stats: per level (Global, Database, Collection, Object: depth 0, 1, 2\n"
"  and deeper) and mode, the acquisitions, how many waited and for how\n"
"  long.  With -J, MongoDB's serverStatus \"locks\" document (r IS, w IX,\n"
"  R S, W X, SIX SIX; zero counts and empty levels left out) with hlock's\n"
"  own counters added: {\"Global\": {\"acquireCount\": {\"r\": 1},\n"
"  \"acquireWaitCount\": {...}, \"timeAcquiringMicros\": {...}}, ...,\n"
"  \"hlock\": {\"timeouts\": 0, \"interrupts\": 0, \"cancels\": 0,\n"
"  \"deadlocks\": 0, \"takeovers\": 0, \"yields\": 0}}\n"
"\n"
"Exit status: 0 ok, 1 failure, 64 usage error, 69 " HLOCK_DEVICE
" unavailable.\n"
"\n"
"Available output columns:\n", stdout);
	for (c = 0; c < NR_COLS; c++)
		printf(" %8s  %s\n", columns[c].name, columns[c].help);
	exit(0);
}

static void list_columns(void)
{
	int c;

	for (c = 0; c < NR_COLS; c++)
		printf("%-8s %s\n", columns[c].name, columns[c].help);
}

/* The default columns, or with @all every one. */
static void default_columns(bool all)
{
	int n = all ? NR_COLS : NR_DEFAULT_COLS;

	for (out.ncols = 0; out.ncols < n; out.ncols++)
		out.cols[out.ncols] = out.ncols;
}

/* -o LIST or -o +LIST; a column named twice is shown once. */
static void parse_columns(const char *arg)
{
	const char *p = arg;
	int c, i;

	out.ncols = 0;
	if (*p == '+') {
		default_columns(false);
		p++;
	}
	for (;;) {
		size_t n = strcspn(p, ",");

		for (c = 0; c < NR_COLS; c++)
			if (strlen(columns[c].name) == n &&
			    !strncasecmp(p, columns[c].name, n))
				break;
		if (c == NR_COLS)
			usage_error("unknown column: '%.*s'", (int)n, p);
		for (i = 0; i < out.ncols && out.cols[i] != c; i++)
			;
		if (i == out.ncols)
			out.cols[out.ncols++] = c;
		if (!p[n])
			break;
		p += n + 1;
	}
}

static long parse_pid(const char *s)
{
	long v;

	if (!cli_long(s, 1, INT32_MAX, &v))
		usage_error("invalid PID '%s'", s);
	return v;
}

enum { OPT_OUTPUT_ALL = 256, OPT_STATS };

static const struct option long_opts[] = {
	{ "json",		no_argument,		NULL, 'J' },
	{ "noheadings",		no_argument,		NULL, 'n' },
	{ "output",		required_argument,	NULL, 'o' },
	{ "output-all",		no_argument,		NULL, OPT_OUTPUT_ALL },
	{ "pid",		required_argument,	NULL, 'p' },
	{ "raw",		no_argument,		NULL, 'r' },
	{ "notruncate",		no_argument,		NULL, 'u' },
	{ "list-columns",	no_argument,		NULL, 'H' },
	{ "stats",		no_argument,		NULL, OPT_STATS },
	{ "help",		no_argument,		NULL, 'h' },
	{ "version",		no_argument,		NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

int main(int argc, char **argv)
{
	bool stats = false, list_cols = false, table_opts = false;
	long pid = -1;
	int fd, opt, ret;

	default_columns(false);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "Jno:p:ruHhV", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'J':
			out.json = true;
			break;
		case 'n':
			out.noheadings = true;
			break;
		case 'o':
			parse_columns(optarg);
			table_opts = true;
			break;
		case OPT_OUTPUT_ALL:
			default_columns(true);
			table_opts = true;
			break;
		case 'p':
			pid = parse_pid(optarg);
			table_opts = true;
			break;
		case 'r':
			out.raw = true;
			break;
		case 'u':
			out.notruncate = true;
			break;
		case 'H':
			list_cols = true;
			break;
		case OPT_STATS:
			stats = true;
			break;
		case 'h':
			help();
		case 'V':
			printf(PROG " for hlock ABI %d\n", HLOCK_ABI_VERSION);
			return 0;
		default:
			bad_option("op", argv[optind - 1]);
		}
	}
	if (optind < argc)
		usage_error("unexpected argument '%s'", argv[optind]);
	if (list_cols) {
		list_columns();
		return 0;
	}
	if (stats && table_opts)
		usage_error("--stats takes no -o, --output-all or -p");

	ret = cli_open(PROG, &fd);
	if (ret)
		return ret == EX_UNAVAILABLE ? ret : 1;

	if (stats) {
		struct hlock_stats st;

		ret = hlock_stats(fd, HLOCK_STATS_GLOBAL, &st);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot read the statistics: %s\n",
				strerror(-ret));
			return 1;
		}
		if (out.json)
			stats_json(&st);
		else
			stats_table(&st);
	} else {
		void *buf;

		ret = hlock_table_alloc(fd, &buf);
		if (ret < 0) {
			fprintf(stderr, PROG ": cannot read the lock table: %s\n",
				strerror(-ret));
			return 1;
		}
		list_locks(buf, ret, pid);
		free(buf);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, PROG ": write error: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
