// SPDX-License-Identifier: GPL-2.0
/*
 * json_check: a strict JSON (RFC 8259) validator for hlock_cli.sh.
 *
 *	json_check [--top-keys K,...] [--lock-keys K,...] [--exact]
 *		   [--min-locks N] [--types] < FILE
 *
 * Exits 0 if stdin is exactly one JSON value, with whitespace around it
 * allowed, and the checks asked for hold; 1 (with a message) if not; 2 on
 * a usage error.  Strict: UTF-8 only (no BOM, overlong forms or
 * surrogates), no lone \u surrogates, no duplicate member names.
 *
 *   --top-keys K,...   the value is an object with these members
 *   --lock-keys K,...  its member "locks" is an array of objects, each
 *                      with these members (--exact: and no others)
 *   --min-locks N      that array has at least N elements
 *   --types            print "NAME TYPE" for each member of each element of
 *                      "locks", TYPE the JSON type of its value: string,
 *                      number, boolean, null, array or object (so that
 *                      two tools' records can be compared by shape)
 *
 * Member names are compared as written (no escape sequences decoded).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH	256
#define MAX_KEYS	32

enum role { ROLE_TOP, ROLE_LOCKS, ROLE_LOCK, ROLE_OTHER };

struct keys {
	const char *name[MAX_KEYS];
	int n;
};

static const unsigned char *buf, *p, *end;
static struct keys top_keys, lock_keys;
static bool exact, want_locks, types;
static long min_locks = -1, nr_locks = -1;

static void __attribute__((noreturn)) fail(const char *msg)
{
	const unsigned char *s;
	int line = 1, col = 1;

	for (s = buf; s < p && s < end; s++, col++)
		if (*s == '\n') {
			line++;
			col = 0;
		}
	fprintf(stderr, "json_check: line %d, column %d: %s\n", line, col,
		msg);
	exit(1);
}

static void ws(void)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' ||
			   *p == '\r'))
		p++;
}

static void expect(char c, const char *msg)
{
	ws();
	if (p >= end || *p != c)
		fail(msg);
	p++;
}

static int hex4(void)
{
	int v = 0, i;

	for (i = 0; i < 4; i++, p++) {
		if (p >= end)
			fail("truncated \\u escape");
		v <<= 4;
		if (*p >= '0' && *p <= '9')
			v |= *p - '0';
		else if ((*p | 0x20) >= 'a' && (*p | 0x20) <= 'f')
			v |= (*p | 0x20) - 'a' + 10;
		else
			fail("bad hex digit in \\u escape");
	}
	return v;
}

/* One UTF-8 sequence of two or more bytes, strictly. */
static void utf8(void)
{
	unsigned int c = *p, min, len, i;

	if (c >= 0xc2 && c <= 0xdf)
		len = 2, c &= 0x1f, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3, c &= 0x0f, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4, c &= 0x07, min = 0x10000;
	else
		fail("invalid UTF-8");
	if ((size_t)(end - p) < len)
		fail("truncated UTF-8");
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			fail("invalid UTF-8");
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		fail("invalid UTF-8 (overlong, surrogate or too large)");
	p += len;
}

/* A string; *sp and *lenp get its raw contents. */
static void parse_string(const unsigned char **sp, size_t *lenp)
{
	int u;

	expect('"', "expected a string");
	*sp = p;
	for (;;) {
		if (p >= end)
			fail("unterminated string");
		if (*p == '"')
			break;
		if (*p < 0x20)
			fail("control character in string");
		if (*p >= 0x80) {
			utf8();
			continue;
		}
		if (*p++ != '\\')
			continue;
		if (p >= end)
			fail("unterminated string");
		if (strchr("\"\\/bfnrt", *p) && *p) {
			p++;
			continue;
		}
		if (*p++ != 'u')
			fail("bad escape in string");
		u = hex4();
		if (u >= 0xdc00 && u <= 0xdfff)
			fail("lone low surrogate");
		if (u >= 0xd800 && u <= 0xdbff) {
			if (end - p < 2 || p[0] != '\\' || p[1] != 'u')
				fail("lone high surrogate");
			p += 2;
			u = hex4();
			if (u < 0xdc00 || u > 0xdfff)
				fail("lone high surrogate");
		}
	}
	*lenp = p - *sp;
	p++;
}

static void digits(void)
{
	if (p >= end || *p < '0' || *p > '9')
		fail("expected a digit");
	while (p < end && *p >= '0' && *p <= '9')
		p++;
}

static void parse_number(void)
{
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0')
		p++;
	else
		digits();
	if (p < end && *p == '.') {
		p++;
		digits();
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		digits();
	}
}

static int key_index(const struct keys *k, const unsigned char *s,
		     size_t len)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (strlen(k->name[i]) == len && !memcmp(k->name[i], s, len))
			return i;
	return -1;
}

static void missing(const struct keys *k, unsigned long found,
		    const char *what)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (!(found & 1UL << i)) {
			fprintf(stderr, "json_check: %s has no member \"%s\"\n",
				what, k->name[i]);
			exit(1);
		}
}

static void parse_value(int depth, enum role role);

/* The JSON type of the value that starts at p (after blanks). */
static const char *value_type(void)
{
	ws();
	if (p >= end)
		return "none";
	switch (*p) {
	case '{':
		return "object";
	case '[':
		return "array";
	case '"':
		return "string";
	case 't':
	case 'f':
		return "boolean";
	case 'n':
		return "null";
	default:
		return "number";
	}
}

static void parse_object(int depth, enum role role)
{
	const struct keys *k = role == ROLE_TOP ? &top_keys :
			       role == ROLE_LOCK ? &lock_keys : NULL;
	const unsigned char **names = NULL, *s;
	size_t *lens = NULL, n = 0, len, i;
	unsigned long found = 0;
	int idx;

	p++;
	ws();
	if (p < end && *p == '}')
		p++;
	else
		for (;;) {
			parse_string(&s, &len);
			for (i = 0; i < n; i++)
				if (lens[i] == len && !memcmp(names[i], s, len))
					fail("duplicate member name");
			names = realloc(names, (n + 1) * sizeof(*names));
			lens = realloc(lens, (n + 1) * sizeof(*lens));
			if (!names || !lens)
				fail("out of memory");
			names[n] = s;
			lens[n++] = len;
			idx = k ? key_index(k, s, len) : -1;
			if (idx >= 0)
				found |= 1UL << idx;
			else if (role == ROLE_LOCK && exact)
				fail("lock object has a member not asked for");
			expect(':', "expected ':'");
			if (types && role == ROLE_LOCK)
				printf("%.*s %s\n", (int)len, s, value_type());
			parse_value(depth + 1, role == ROLE_TOP && len == 5 &&
				    !memcmp(s, "locks", 5) ? ROLE_LOCKS :
				    ROLE_OTHER);
			ws();
			if (p < end && *p == '}') {
				p++;
				break;
			}
			expect(',', "expected ',' or '}'");
		}
	free(names);
	free(lens);
	if (k)
		missing(k, found, role == ROLE_TOP ? "the top-level object" :
			"a lock object");
}

static void parse_array(int depth, enum role role)
{
	long n = 0;

	p++;
	ws();
	if (p < end && *p == ']')
		p++;
	else
		for (;;) {
			ws();
			if (role == ROLE_LOCKS && want_locks &&
			    (p >= end || *p != '{'))
				fail("an element of \"locks\" is no object");
			parse_value(depth + 1, role == ROLE_LOCKS ?
				    ROLE_LOCK : ROLE_OTHER);
			n++;
			ws();
			if (p < end && *p == ']') {
				p++;
				break;
			}
			expect(',', "expected ',' or ']'");
		}
	if (role == ROLE_LOCKS)
		nr_locks = n;
}

static void parse_value(int depth, enum role role)
{
	const unsigned char *s;
	size_t len;

	if (depth > MAX_DEPTH)
		fail("nested too deeply");
	ws();
	if (p >= end)
		fail("expected a value");
	if (role == ROLE_TOP && (top_keys.n || want_locks) && *p != '{')
		fail("the top-level value is no object");
	if (role == ROLE_LOCKS && want_locks && *p != '[')
		fail("\"locks\" is no array");
	if (*p == '{')
		parse_object(depth, role);
	else if (*p == '[')
		parse_array(depth, role);
	else if (*p == '"')
		parse_string(&s, &len);
	else if (*p == '-' || (*p >= '0' && *p <= '9'))
		parse_number();
	else if (end - p >= 4 && !memcmp(p, "true", 4))
		p += 4;
	else if (end - p >= 5 && !memcmp(p, "false", 5))
		p += 5;
	else if (end - p >= 4 && !memcmp(p, "null", 4))
		p += 4;
	else
		fail("expected a value");
}

static void split(struct keys *k, char *list)
{
	char *tok;

	for (tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		if (k->n == MAX_KEYS) {
			fprintf(stderr, "json_check: too many keys\n");
			exit(2);
		}
		k->name[k->n++] = tok;
	}
}

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: json_check [--top-keys K,...] [--lock-keys K,...] [--exact] [--min-locks N] [--types] < FILE\n");
	exit(2);
}

int main(int argc, char **argv)
{
	size_t size = 0, cap = 0, n;
	unsigned char *data = NULL;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--top-keys") && i + 1 < argc) {
			split(&top_keys, argv[++i]);
		} else if (!strcmp(argv[i], "--lock-keys") && i + 1 < argc) {
			split(&lock_keys, argv[++i]);
			want_locks = true;
		} else if (!strcmp(argv[i], "--min-locks") && i + 1 < argc) {
			min_locks = atol(argv[++i]);
			want_locks = true;
		} else if (!strcmp(argv[i], "--types")) {
			types = true;
			want_locks = true;
		} else if (!strcmp(argv[i], "--exact")) {
			exact = true;
		} else {
			usage();
		}
	}
	do {
		if (size == cap) {
			cap = cap ? cap * 2 : 65536;
			data = realloc(data, cap);
			if (!data) {
				fprintf(stderr, "json_check: out of memory\n");
				return 1;
			}
		}
		n = fread(data + size, 1, cap - size, stdin);
		size += n;
	} while (n);
	if (ferror(stdin)) {
		perror("json_check: stdin");
		return 1;
	}
	buf = p = data;
	end = data + size;
	parse_value(0, ROLE_TOP);
	ws();
	if (p != end)
		fail("trailing data after the value");
	if (want_locks && nr_locks < 0)
		fail("no \"locks\" array in the top-level object");
	if (nr_locks < min_locks) {
		fprintf(stderr, "json_check: %ld locks, expected at least %ld\n",
			nr_locks, min_locks);
		return 1;
	}
	free(data);
	return 0;
}
