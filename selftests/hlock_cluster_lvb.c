// SPDX-License-Identifier: GPL-2.0
/*
 * A helper of hlock_cluster_test.sh: read and set a lock value block.
 *
 *   hlock_cluster_lvb [-h] PATH MODE [VALUE]
 *   hlock_cluster_lvb -t [-w] PATH MODE
 *
 * Takes MODE (S, SIX or X) on PATH, waiting up to a minute, and prints the
 * value it reads, up to its first NUL byte.  With VALUE (SIX or X), sets
 * it: the release, when the helper exits, publishes it.  Exits 0, or 1
 * when a call failed.  With -h, it then prints "held" and holds the lock
 * until it is killed (which publishes nothing: the value stays pending).
 * With -t (SIX or X), it draws the grant's fencing token, prints it on a
 * second line and sets the value to it, in decimal: the next holder reads
 * the token of the last.  With -w too, it prints "held" once it holds the
 * lock and draws the token only once a line (or the end of the file)
 * comes on standard input.
 */
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>

#include "hlock.h"

/* How long the lock may wait: a minute. */
#define WAIT_NS	(60 * 1000000000LL)

int main(int argc, char **argv)
{
	char val[HLOCK_LVB_LEN + 1] = "";
	char tok[HLOCK_LVB_LEN + 1];
	int fd, mode, ret, hold = 0, token = 0, go = 0;
	const char *value;
	uint64_t t;

	for (; argc > 1 && argv[1][0] == '-'; argc--, argv++) {
		if (!strcmp(argv[1], "-h"))
			hold = 1;
		else if (!strcmp(argv[1], "-t"))
			token = 1;
		else if (!strcmp(argv[1], "-w"))
			go = 1;
		else
			break;
	}
	if (argc < 3 || argc > 4 || (token && argc != 3) || (go && !token)) {
		fprintf(stderr, "usage: hlock_cluster_lvb [-h] PATH MODE [VALUE]\n"
				"       hlock_cluster_lvb -t [-w] PATH MODE\n");
		return 64;
	}
	value = argc == 4 ? argv[3] : NULL;
	if (!strcasecmp(argv[2], "s"))
		mode = HLOCK_S;
	else if (!strcasecmp(argv[2], "six"))
		mode = HLOCK_SIX;
	else if (!strcasecmp(argv[2], "x"))
		mode = HLOCK_X;
	else {
		fprintf(stderr, "hlock_cluster_lvb: mode %s: S, SIX or X\n",
			argv[2]);
		return 64;
	}
	if (argc == 4 && strlen(argv[3]) > HLOCK_LVB_LEN) {
		fprintf(stderr, "hlock_cluster_lvb: a value of at most %d bytes\n",
			HLOCK_LVB_LEN);
		return 64;
	}
	fd = hlock_open();
	if (fd < 0) {
		fprintf(stderr, "hlock_cluster_lvb: /dev/hlock: %s\n",
			strerror(-fd));
		return 1;
	}
	ret = hlock_lock(fd, argv[1], mode, 0, WAIT_NS);
	if (!ret)
		ret = hlock_lvb_get(fd, argv[1], val);
	if (ret) {
		fprintf(stderr, "hlock_cluster_lvb: %s: %s\n", argv[1],
			strerror(-ret));
		return 1;
	}
	printf("%s\n", val);
	if (go) {
		printf("held\n");
		fflush(stdout);
		while ((ret = getchar()) != EOF && ret != '\n')
			;
	}
	if (token) {
		ret = hlock_token(fd, argv[1], &t);
		if (ret) {
			fprintf(stderr, "hlock_cluster_lvb: token of %s: %s\n",
				argv[1], strerror(-ret));
			return 1;
		}
		printf("%" PRIu64 "\n", t);
		snprintf(tok, sizeof(tok), "%" PRIu64, t);
		value = tok;
	}
	if (value) {
		memset(val, 0, sizeof(val));
		memcpy(val, value, strlen(value));
		ret = hlock_lvb_set(fd, argv[1], val);
		if (ret) {
			fprintf(stderr, "hlock_cluster_lvb: set %s: %s\n",
				argv[1], strerror(-ret));
			return 1;
		}
	}
	if (hold) {
		printf("held\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	return 0;
}
