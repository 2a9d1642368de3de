// SPDX-License-Identifier: GPL-2.0
/*
 * lshlock: list the hierarchical locks of /dev/hlock the way lslocks(8)
 * lists file locks, one line per granted, converting or waiting request;
 * or, with --stats, the module's lock statistics.
 *
 * The tables (human, --raw and --json) are util-linux's libsmartcols, as
 * in lslocks: its layout, its escaping of what is not printable and its
 * typed JSON.  What is left here is what libsmartcols 2.38 gets wrong for
 * strings a user chose: its JSON writer copies bytes that are not valid
 * UTF-8 as they are, which makes invalid JSON, so json_text() hands it
 * each such byte as its Latin-1 character.  The --stats JSON is MongoDB's
 * serverStatus shape, which no table has, and is written here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libsmartcols.h>

#include "hlock.h"
#define PROG		"lshlock"
#include "cli_common.h"

enum {
	COL_COMMAND, COL_PID, COL_RESOURCE, COL_MODE, COL_STATE, COL_WAIT,
	COL_HELD, COL_BLOCKER, COL_WHY,
	/* The columns after the default ones: only with -o or --output-all. */
	COL_TOKEN, COL_BLOCKING, COL_NODEMODE, COL_REMOTE, NR_COLS
};
#define NR_DEFAULT_COLS	COL_TOKEN

/*
 * BLOCKER is a JSON array of numbers, but libsmartcols 2.38 prints an
 * empty SCOLS_JSON_ARRAY_NUMBER cell as [null]: its JSON is written here
 * ("[12, 34]", "[]") and handed over as a number, which is printed as it
 * is.  JT_ARRAY is how --list-columns names that type.
 */
#define JT_ARRAY	(-1)

static const struct column {
	const char *name;
	double whint;		/* width hint, as libsmartcols takes it */
	int flags;		/* SCOLS_FL_* */
	int json;		/* SCOLS_JSON_*, or JT_ARRAY */
	const char *help;
} columns[NR_COLS] = {
	[COL_COMMAND]	= { "COMMAND", 15, 0, SCOLS_JSON_STRING,
			    "command of the process holding or waiting for the lock" },
	[COL_PID]	= { "PID", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			    "PID of that process (- when not in our PID namespace)" },
	[COL_RESOURCE]	= { "RESOURCE", 0, SCOLS_FL_TRUNC, SCOLS_JSON_STRING,
			    "resource path, " CLI_ROOT_NAME " for the root" },
	[COL_MODE]	= { "MODE", 4, 0, SCOLS_JSON_STRING,
			    "lock mode: IS, IX, S, SIX or X; HELD->WANTED when converting" },
	[COL_STATE]	= { "STATE", 5, 0, SCOLS_JSON_STRING,
			    "granted, waiting or converting" },
	[COL_WAIT]	= { "WAIT", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			    "how long it has been waiting (ns with --raw and --json)" },
	[COL_HELD]	= { "HELD", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			    "how long it has been held (ns with --raw and --json)" },
	[COL_BLOCKER]	= { "BLOCKER", 7, 0, JT_ARRAY,
			    "PIDs of the requests blocking it (? not visible); nodeN:PID on other nodes" },
	[COL_WHY]	= { "WHY", 0, 0, SCOLS_JSON_STRING,
			    "the locker's description (hlock_describe(3))" },
	[COL_TOKEN]	= { "TOKEN", 5, SCOLS_FL_RIGHT, SCOLS_JSON_NUMBER,
			    "fencing token of the grant held (- while waiting)" },
	[COL_BLOCKING]	= { "BLOCKING", 3, 0, SCOLS_JSON_BOOLEAN,
			    "whether the grant blocks a waiter (- while waiting)" },
	[COL_NODEMODE]	= { "NODEMODE", 4, 0, SCOLS_JSON_STRING,
			    "this node's DLM mode on the resource (- outside a cluster lock space)" },
	[COL_REMOTE]	= { "REMOTE", 3, 0, SCOLS_JSON_BOOLEAN,
			    "whether another node waits on the resource (- outside a cluster lock space)" },
};

/* Output options. */
static struct {
	int cols[NR_COLS];	/* the selected columns, in order */
	int ncols;
	bool json, noheadings, raw, notruncate, noinaccessible;
} out;

static void __attribute__((noreturn)) oom(void)
{
	cli_die(1, "%s", strerror(ENOMEM));
}

/* A cell's text, which libsmartcols then owns (scols_line_refer_data). */
static __attribute__((format(printf, 1, 2))) char *
xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return s;
}

/*
 * Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if there
 * is none: no overlong forms, surrogates or code points above U+10FFFF.
 */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t c = s[0], min;
	size_t len, i;

	if (c < 0x80)
		return 1;
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
	return len;
}

/*
 * @s for a JSON string cell: valid UTF-8, each byte that is not read as
 * its Latin-1 character (\xff becomes U+00FF).  libsmartcols escapes the
 * rest ('"', '\\', control characters).
 */
static char *json_text(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s);
	char *buf = malloc(2 * n + 1), *q = buf;

	if (!buf)
		oom();
	while (n) {
		size_t len = utf8_seq(p, n);

		if (len) {
			memcpy(q, p, len);
			q += len;
		} else {
			*q++ = 0xc0 | *p >> 6;
			*q++ = 0x80 | (*p & 0x3f);
			len = 1;
		}
		p += len;
		n -= len;
	}
	*q = '\0';
	return buf;
}

/*
 * A text cell: for JSON as json_text(), empty (null) when there is no
 * text; else as it is, "-" when there is none.  libsmartcols escapes it.
 */
static char *text_cell(const char *s)
{
	if (out.json)
		return json_text(s);
	return xasprintf("%s", *s ? s : "-");
}

/* A number cell: "-" when it does not apply, and null in JSON. */
static char *number_cell(bool applies, uint64_t v)
{
	if (!applies)
		return xasprintf("%s", out.json ? "" : "-");
	return xasprintf("%" PRIu64, v);
}

/* A human duration: 850ns, 12us, 345ms, 1.5s, 1m03s, 2h05m, 3d04h. */
static char *fmt_duration(uint64_t ns)
{
	const uint64_t us = 1000, ms = 1000 * us, s = 1000 * ms;
	uint64_t secs = ns / s;

	if (ns < us)
		return xasprintf("%" PRIu64 "ns", ns);
	if (ns < ms)
		return xasprintf("%" PRIu64 "us", ns / us);
	if (ns < s)
		return xasprintf("%" PRIu64 "ms", ns / ms);
	if (secs < 60)
		return xasprintf("%" PRIu64 ".%" PRIu64 "s", secs,
				 ns / (100 * ms) % 10);
	if (secs < 3600)
		return xasprintf("%" PRIu64 "m%02" PRIu64 "s", secs / 60,
				 secs % 60);
	if (secs < 86400)
		return xasprintf("%" PRIu64 "h%02" PRIu64 "m", secs / 3600,
				 secs / 60 % 60);
	return xasprintf("%" PRIu64 "d%02" PRIu64 "h", secs / 86400,
			 secs / 3600 % 24);
}

/* A duration cell: human, or ns with --raw and --json. */
static char *duration_cell(bool applies, uint64_t ns)
{
	if (applies && !out.raw && !out.json)
		return fmt_duration(ns);
	return number_cell(applies, ns);
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

/*
 * The BLOCKING cell: yes or no for a grant, - while waiting (and from a
 * module without HLOCK_FEAT_BLOCKING, whose records never say yes); in
 * JSON true, false or null.
 */
static char *blocking_cell(const struct hlock_lock_record *rec)
{
	const struct hlock_record_ext *ext = hlock_record_ext(rec);
	bool blocking = ext && (ext->flags & HLOCK_REC_BLOCKING);

	if (rec->state == HLOCK_STATE_WAITING)
		return xasprintf("%s", out.json ? "" : "-");
	if (out.json)
		return xasprintf("%s", blocking ? "true" : "false");
	return xasprintf("%s", blocking ? "yes" : "no");
}

/*
 * The NODEMODE and REMOTE cells: this node's DLM mode on the resource, and
 * yes or no; - outside a cluster lock space (and from a module without
 * HLOCK_FEAT_CLUSTER); in JSON a string and true or false, or null.
 */
static char *cluster_cell(const struct hlock_lock_record *rec, int col)
{
	const struct hlock_record_ext *ext = hlock_record_ext(rec);
	bool remote;

	if (!ext || !(ext->flags & HLOCK_REC_CLUSTER))
		return xasprintf("%s", out.json ? "" : "-");
	if (col == COL_NODEMODE)
		return xasprintf("%s", hlock_mode_name(ext->node_mode));
	remote = ext->flags & HLOCK_REC_REMOTE_WAIT;
	if (out.json)
		return xasprintf("%s", remote ? "true" : "false");
	return xasprintf("%s", remote ? "yes" : "no");
}

/* The record's description into @buf, NUL-terminated whatever was sent. */
static void why(const struct hlock_lock_record *rec, char *buf)
{
	const char *w = hlock_record_why(rec);
	size_t n = strnlen(w, HLOCK_WHY_LEN - 1);

	memcpy(buf, w, n);
	buf[n] = '\0';
}

/*
 * What blocks this node's waits on other nodes, as hlock-deadlockd last
 * saw it (CLI_REMOTE_BLOCKERS): a holder on another node, for the wait
 * of locker @serial that had @wait_seq.
 */
struct remote {
	uint64_t serial;
	uint32_t wait_seq;
	uint32_t node;
	uint32_t pid;
	char comm[HLOCK_COMM_LEN];
	char why[HLOCK_WHY_LEN];
};

static struct remote *remotes;
static size_t nremotes;

/* @hex (hlock-deadlockd's, "-" for empty) into @buf of @size bytes. */
static bool unhex(const char *hex, char *buf, size_t size)
{
	size_t i, n = strcmp(hex, "-") ? strlen(hex) : 0;

	if (n % 2 || n / 2 >= size)
		return false;
	for (i = 0; i < n / 2; i++) {
		unsigned int c;

		if (sscanf(hex + 2 * i, "%2x", &c) != 1 || !c)
			return false;
		buf[i] = (char)c;
	}
	buf[i] = '\0';
	return true;
}

/*
 * Read the remote blockers hlock-deadlockd published, if it runs: lines
 * it did not write as documented are skipped.
 */
static void read_remotes(void)
{
	char line[512], comm[64], why[192];
	struct remote r;
	FILE *f = fopen(CLI_REMOTE_BLOCKERS, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct remote *n;

		memset(&r, 0, sizeof(r));
		if (sscanf(line, "%" SCNu64 " %" SCNu32 " %" SCNu32 " %" SCNu32
			   " %63s %191s", &r.serial, &r.wait_seq, &r.node,
			   &r.pid, comm, why) != 6 ||
		    !unhex(comm, r.comm, sizeof(r.comm)) ||
		    !unhex(why, r.why, sizeof(r.why)))
			continue;
		n = realloc(remotes, (nremotes + 1) * sizeof(*remotes));
		if (!n)
			oom();
		remotes = n;
		remotes[nremotes++] = r;
	}
	fclose(f);
}

/* Whether @r blocks the wait of @rec: its locker, in that very wait. */
static bool remote_of(const struct remote *r,
		      const struct hlock_lock_record *rec)
{
	const struct hlock_record_ids *ids = hlock_record_ids(rec);

	return ids && waits(rec) && r->serial == ids->serial &&
	       r->wait_seq == ids->wait_seq;
}

/* @s as the inside of a JSON string: UTF-8 (json_text()), escaped. */
static void json_escaped(FILE *f, const char *s)
{
	char *u = json_text(s), *p;

	for (p = u; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	free(u);
}

/*
 * The BLOCKER cell: "12,34" (? for a PID we cannot see, ... when there
 * were more than the record holds), then the holders on other nodes that
 * hlock-deadlockd named, "node2:623" or "node2:623(why)"; "-" for none.
 * In JSON [12, null, {"node": 2, "pid": 623, "command": "...", "why":
 * "..."}].
 */
static char *blocker_cell(const struct hlock_lock_record *rec)
{
	uint32_t pids[HLOCK_MAX_BLOCKERS];
	unsigned int i, n = blockers(rec, pids), shown = 0;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		oom();
	if (out.json)
		fputc('[', f);
	for (i = 0; i < n; i++, shown++) {
		if (i)
			fputs(out.json ? ", " : ",", f);
		if (pids[i])
			fprintf(f, "%" PRIu32, pids[i]);
		else
			fputs(out.json ? "null" : "?", f);
	}
	if (!out.json && rec->nr_blockers > HLOCK_MAX_BLOCKERS)
		fputs(",...", f);
	for (i = 0; i < nremotes; i++) {
		const struct remote *r = &remotes[i];

		if (!remote_of(r, rec))
			continue;
		if (shown++)
			fputs(out.json ? ", " : ",", f);
		if (out.json) {
			fprintf(f, "{\"node\": %" PRIu32 ", \"pid\": %" PRIu32
				", \"command\": \"", r->node, r->pid);
			json_escaped(f, r->comm);
			fputs("\", \"why\": ", f);
			if (r->why[0]) {
				fputc('"', f);
				json_escaped(f, r->why);
				fputc('"', f);
			} else {
				fputs("null", f);
			}
			fputc('}', f);
		} else {
			fprintf(f, "node%" PRIu32 ":%" PRIu32, r->node, r->pid);
			if (r->why[0])
				fprintf(f, "(%s)", r->why);
		}
	}
	if (out.json)
		fputc(']', f);
	else if (!shown)
		fputc('-', f);
	if (fclose(f))
		oom();
	return buf;
}

static char *cell(const struct hlock_lock_record *rec, int col)
{
	char text[HLOCK_WHY_LEN], comm[HLOCK_COMM_LEN];

	switch (col) {
	case COL_COMMAND:
		memcpy(comm, rec->comm, sizeof(comm));
		comm[sizeof(comm) - 1] = '\0';
		return text_cell(rec->pid ? comm : "");
	case COL_PID:
		return number_cell(rec->pid, rec->pid);
	case COL_RESOURCE:
		/* In JSON the root is null, its empty path. */
		if (out.json)
			return text_cell(hlock_record_path(rec));
		return text_cell(cli_path_name(hlock_record_path(rec)));
	case COL_MODE:
		if (rec->state == HLOCK_STATE_CONVERTING)
			return xasprintf("%s->%s", hlock_mode_name(rec->mode),
					 hlock_mode_name(rec->convert_mode));
		return xasprintf("%s", hlock_mode_name(rec->mode));
	case COL_STATE:
		return xasprintf("%s", hlock_state_name(rec->state));
	case COL_WAIT:
		return duration_cell(waits(rec), rec->wait_ns);
	case COL_HELD:
		return duration_cell(holds(rec), rec->held_ns);
	case COL_BLOCKER:
		return blocker_cell(rec);
	case COL_WHY:
		why(rec, text);
		return text_cell(text);
	case COL_TOKEN:
		return number_cell(token(rec), token(rec));
	case COL_BLOCKING:
		return blocking_cell(rec);
	case COL_NODEMODE:
	case COL_REMOTE:
		return cluster_cell(rec, col);
	}
	return NULL;
}

/* A table for the output options, named for its JSON member. */
static struct libscols_table *new_table(const char *name)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		oom();
	scols_table_set_name(tb, name);
	scols_table_enable_raw(tb, out.raw);
	scols_table_enable_json(tb, out.json);
	scols_table_enable_noheadings(tb, out.noheadings);
	return tb;
}

static struct libscols_column *add_column(struct libscols_table *tb,
					  const char *name, double whint,
					  int flags, int json)
{
	struct libscols_column *cl;

	cl = scols_table_new_column(tb, name, whint, flags);
	if (!cl)
		oom();
	scols_column_set_json_type(cl, json == JT_ARRAY ? SCOLS_JSON_NUMBER :
				   json);
	return cl;
}

/* A row of @n cells, each allocated, which the table takes. */
static void add_row(struct libscols_table *tb, char **cells, int n)
{
	struct libscols_line *ln = scols_table_new_line(tb, NULL);
	int c;

	if (!ln)
		oom();
	for (c = 0; c < n; c++)
		if (!cells[c] || scols_line_refer_data(ln, c, cells[c]))
			oom();
}

static void print_table(struct libscols_table *tb)
{
	if (scols_print_table(tb))
		cli_die(1, "cannot print the table: %s", strerror(errno));
	scols_unref_table(tb);
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
	struct libscols_table *tb = new_table("locks");
	char *cells[NR_COLS];
	size_t nrows = 0, i;
	struct row *rows;
	int c, r;

	for (c = 0; c < out.ncols; c++) {
		const struct column *col = &columns[out.cols[c]];
		int flags = col->flags;

		if (out.notruncate)
			flags &= ~SCOLS_FL_TRUNC;
		add_column(tb, col->name, col->whint, flags, col->json);
	}
	rows = calloc(count ? count : 1, sizeof(*rows));
	if (!rows)
		oom();
	for (r = 0; r < count; r++, rec = hlock_record_next(rec)) {
		if (pid >= 0 && rec->pid != pid)
			continue;
		if (out.noinaccessible && !rec->pid)
			continue;
		rows[nrows].rec = rec;
		rows[nrows].index = r;
		nrows++;
	}
	qsort(rows, nrows, sizeof(*rows), row_cmp);
	for (i = 0; i < nrows; i++) {
		for (c = 0; c < out.ncols; c++)
			cells[c] = cell(rows[i].rec, out.cols[c]);
		add_row(tb, cells, out.ncols);
	}
	free(rows);
	print_table(tb);
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

static void stats_table(const struct hlock_stats *st)
{
	static const struct {
		const char *name;
		int flags;
	} heads[] = {
		{ "LEVEL", 0 }, { "MODE", 0 }, { "ACQUIRE", SCOLS_FL_RIGHT },
		{ "WAITS", SCOLS_FL_RIGHT }, { "WAIT-TIME", SCOLS_FL_RIGHT },
	};
	struct libscols_table *tb = new_table("stats");
	char *cells[ARRAY_SIZE(heads)];
	unsigned int l, m;

	for (m = 0; m < ARRAY_SIZE(heads); m++)
		add_column(tb, heads[m].name, 0, heads[m].flags,
			   SCOLS_JSON_STRING);
	for (l = 0; l < HLOCK_NR_LEVELS; l++) {
		const struct hlock_level_stats *ls = &st->level[l];

		for (m = 0; m < ARRAY_SIZE(stat_modes); m++) {
			int mode = stat_modes[m];

			if (!ls->acquire_count[mode] && !ls->wait_count[mode])
				continue;
			cells[0] = xasprintf("%s", hlock_level_name(l));
			cells[1] = xasprintf("%s", hlock_mode_name(mode));
			cells[2] = xasprintf("%" PRIu64,
					     (uint64_t)ls->acquire_count[mode]);
			cells[3] = xasprintf("%" PRIu64,
					     (uint64_t)ls->wait_count[mode]);
			cells[4] = duration_cell(ls->wait_count[mode] ||
						 ls->wait_time_ns[mode],
						 ls->wait_time_ns[mode]);
			add_row(tb, cells, ARRAY_SIZE(heads));
		}
	}
	print_table(tb);
	printf("timeouts: %" PRIu64 ", interrupts: %" PRIu64
	       ", cancels: %" PRIu64 ", deadlocks: %" PRIu64
	       ", takeovers: %" PRIu64 ", yields: %" PRIu64 "\n",
	       (uint64_t)st->timeouts, (uint64_t)st->interrupts,
	       (uint64_t)st->cancels, (uint64_t)st->deadlocks,
	       (uint64_t)st->takeovers, (uint64_t)st->yields);
	stats_tickets_line(st);
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
	      " " PROG " --stats [-J|-r] [-n]\n", f);
}

/* lslocks's answer to a usage error: a pointer to --help, exit 1. */
static void __attribute__((noreturn)) try_help(void)
{
	fputs("Try '" PROG " --help' for more information.\n", stderr);
	exit(1);
}

static void __attribute__((noreturn, format(printf, 1, 2)))
bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cli_vwarn(fmt, ap);
	va_end(ap);
	try_help();
}

/* How --list-columns names a column's JSON type. */
static const char *json_type_name(int json)
{
	switch (json) {
	case SCOLS_JSON_NUMBER:
		return "number";
	case JT_ARRAY:
		return "array";
	case SCOLS_JSON_BOOLEAN:
		return "boolean";
	default:
		return "string";
	}
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
" -i, --noinaccessible   leave out the requests of processes outside our\n"
"                          PID namespace (PID -)\n"
" -J, --json             use JSON output format\n"
" -n, --noheadings       don't print headings\n"
" -o, --output <list>    output columns (comma-separated; +<list> adds to\n"
"                          the default, which is all but TOKEN,\n"
"                          BLOCKING, NODEMODE and REMOTE)\n"
"     --output-all       output all columns\n"
" -p, --pid <pid>        only the requests of this process\n"
" -r, --raw              use the raw output format (WAIT and HELD in ns)\n"
" -u, --notruncate       don't truncate RESOURCE to fit the terminal\n"
" -H, --list-columns     list the available columns\n"
"     --stats            the module's lock statistics instead\n"
" -h, --help             display this help\n"
" -V, --version          display version\n"
"\n"
"LSHLOCK_COLUMNS, when no -o is given, is the -o list.\n"
"\n"
"JSON: {\"locks\": [{\"command\": \"x\", \"pid\": 12, \"resource\": \"db/c\",\n"
"  \"mode\": \"S\", \"state\": \"waiting\", \"wait\": 40, \"held\": null,\n"
"  \"blocker\": [34], \"why\": null}]}: the columns, named in lower case;\n"
"  WAIT and HELD in ns; what the table shows as - is null (the root's\n"
"  resource is null too); bytes that are not UTF-8 are read as Latin-1.\n"
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
"Exit status: 0 ok, 1 failure (usage errors too).\n"
"\n"
"Available output columns:\n", stdout);
	for (c = 0; c < NR_COLS; c++)
		printf(" %8s  %s\n", columns[c].name, columns[c].help);
	printf("\nFor more details see " PROG "(8).\n");
	exit(0);
}

/* -H: the columns, their JSON types and what they show, as a table. */
static void list_columns(void)
{
	struct libscols_table *tb = new_table("lshlock-columns");
	char *cells[3];
	int c;

	if (!out.json)
		scols_table_enable_noheadings(tb, 1);
	add_column(tb, "NAME", 0, 0, SCOLS_JSON_STRING);
	add_column(tb, "TYPE", 0, 0, SCOLS_JSON_STRING);
	add_column(tb, "DESCRIPTION", 0, 0, SCOLS_JSON_STRING);
	for (c = 0; c < NR_COLS; c++) {
		cells[0] = xasprintf("%s", columns[c].name);
		cells[1] = xasprintf(out.json ? "%s" : "<%s>",
				     json_type_name(columns[c].json));
		cells[2] = xasprintf("%s", columns[c].help);
		add_row(tb, cells, 3);
	}
	print_table(tb);
}

/* The default columns, or with @all every one. */
static void default_columns(bool all)
{
	int n = all ? NR_COLS : NR_DEFAULT_COLS;

	for (out.ncols = 0; out.ncols < n; out.ncols++)
		out.cols[out.ncols] = out.ncols;
}

/*
 * -o LIST replaces the columns, -o +LIST appends to them (the default or
 * --output-all's); a column named twice is shown once, so that the JSON
 * has no key twice.
 */
static void parse_columns(const char *arg)
{
	const char *p = arg;
	int c, i;

	if (*p == '+')
		p++;
	else
		out.ncols = 0;
	if (!*p)
		cli_die(1, "no column in '%s'", arg);
	for (;;) {
		size_t n = strcspn(p, ",");

		if (!n)
			cli_die(1, "empty column name in '%s' (names are separated by single commas, as in -o pid,mode)",
				arg);
		for (c = 0; c < NR_COLS; c++)
			if (strlen(columns[c].name) == n &&
			    !strncasecmp(p, columns[c].name, n))
				break;
		if (c == NR_COLS)
			cli_die(1, "unknown column: %.*s", (int)n, p);
		for (i = 0; i < out.ncols && out.cols[i] != c; i++)
			;
		if (i == out.ncols)
			out.cols[out.ncols++] = c;
		if (!p[n])
			break;
		p += n + 1;
	}
}

enum { OPT_OUTPUT_ALL = 256, OPT_STATS };

static const struct option long_opts[] = {
	{ "noinaccessible",	no_argument,		NULL, 'i' },
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
	bool stats = false, list_cols = false, all = false;
	const char *outarg = NULL, *lock_opt = NULL;
	long pid = -1;
	int fd, opt, ret;

	setlocale(LC_ALL, "");
	while ((opt = getopt_long(argc, argv, "iJno:p:ruHhV", long_opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'i':
			out.noinaccessible = true;
			lock_opt = "--noinaccessible";
			break;
		case 'J':
			out.json = true;
			break;
		case 'n':
			out.noheadings = true;
			break;
		case 'o':
			outarg = optarg;
			lock_opt = "--output";
			break;
		case OPT_OUTPUT_ALL:
			all = true;
			lock_opt = "--output-all";
			break;
		case 'p':
			if (!cli_long(optarg, 1, INT32_MAX, &pid))
				cli_die(1, "invalid PID argument: '%s'",
					optarg);
			lock_opt = "--pid";
			break;
		case 'r':
			out.raw = true;
			break;
		case 'u':
			out.notruncate = true;
			lock_opt = "--notruncate";
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
			printf(CLI_VERSION_LINE(PROG));
			return 0;
		default:
			try_help();
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);
	if (out.json && out.raw)
		bad_usage("mutually exclusive arguments: --json --raw");
	if (stats && lock_opt)
		bad_usage("mutually exclusive arguments: --stats %s", lock_opt);
	if (list_cols) {
		list_columns();
		return 0;
	}

	default_columns(all);
	if (!outarg)
		outarg = getenv("LSHLOCK_COLUMNS");
	if (outarg && !stats)
		parse_columns(outarg);

	ret = cli_open(PROG, &fd);
	if (ret)
		return 1;

	if (stats) {
		struct hlock_stats st;

		ret = hlock_stats(fd, HLOCK_STATS_GLOBAL, &st);
		if (ret < 0)
			cli_die(1, "cannot read the statistics: %s",
				strerror(-ret));
		if (out.json)
			stats_json(&st);
		else
			stats_table(&st);
	} else {
		void *buf;

		/*
		 * With the lockers' names, to find what hlock-deadlockd says
		 * blocks them on other nodes; a module without them (EINVAL)
		 * gives the table as before.
		 */
		ret = hlock_table_ids_alloc(fd, &buf);
		if (ret == -EINVAL)
			ret = hlock_table_alloc(fd, &buf);
		else if (ret >= 0)
			read_remotes();
		if (ret < 0)
			cli_die(1, "cannot read the lock table: %s",
				strerror(-ret));
		list_locks(buf, ret, pid);
		free(buf);
	}
	if (fflush(stdout) || ferror(stdout))
		cli_die(1, "write error: %s", strerror(errno));
	return 0;
}
