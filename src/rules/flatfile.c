/*
 * rules.c -- json-c at the edge: rule files are parsed here and handed to
 * the pure core as flat buffers (mode/flat.h).
 * SPDX-License-Identifier: MIT
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "rules/flatfile.h"

struct sbuf {
	char	*p;
	size_t	 len, cap;
	int	 oom;
};

/* Append n bytes to b, growing it; sets b->oom on failure. */
static void
sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	char	*np;
	size_t	 ncap;

	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		ncap = b->cap ? b->cap : 1024;
		while (ncap < b->len + n + 1)
			ncap *= 2;
		if ((np = realloc(b->p, ncap)) == NULL) {
			b->oom = 1;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
}

/* Append s with backslash, newline and tab escaped. */
static void
sbuf_escaped(struct sbuf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			sbuf_add(b, "\\\\", 2);
		else if (*s == '\n')
			sbuf_add(b, "\\n", 2);
		else if (*s == '\t')
			sbuf_add(b, "\\t", 2);
		else
			sbuf_add(b, s, 1);
	}
}

/* One "PATH\tTV\n" line. */
static void
flat_line(struct sbuf *b, const char *path, char type, const char *val)
{
	sbuf_add(b, path, strlen(path));
	sbuf_add(b, "\t", 1);
	sbuf_add(b, &type, 1);
	sbuf_escaped(b, val);
	sbuf_add(b, "\n", 1);
}

/* Walk o depth-first, writing one line per scalar or empty container. */
static void
flatten_walk(struct sbuf *b, json_object *o, char *path, size_t plen,
    size_t pcap)
{
	size_t	 i, n, k;
	int	 w;

	switch (json_object_get_type(o)) {
	case json_type_object:
		if (json_object_object_length(o) == 0) {
			flat_line(b, path, 'o', "");
			return;
		}
		json_object_object_foreach(o, key, val) {
			k = strlen(key);
			if (plen + k + 2 > pcap || strchr(key, '.') != NULL) {
				b->oom = 1;	/* reported as too deep/dotted */
				return;
			}
			w = snprintf(path + plen, pcap - plen, "%s%s",
			    plen ? "." : "", key);
			flatten_walk(b, val, path, plen + (size_t)w, pcap);
			path[plen] = '\0';
		}
		return;
	case json_type_array:
		n = json_object_array_length(o);
		if (n == 0) {
			flat_line(b, path, 'a', "");
			return;
		}
		for (i = 0; i < n; i++) {
			if (plen + 24 > pcap) {
				b->oom = 1;
				return;
			}
			w = snprintf(path + plen, pcap - plen, "%s%zu",
			    plen ? "." : "", i);
			flatten_walk(b, json_object_array_get_idx(o, i), path,
			    plen + (size_t)w, pcap);
			path[plen] = '\0';
		}
		return;
	case json_type_string:
		flat_line(b, path, 's', json_object_get_string(o));
		return;
	case json_type_boolean:
		flat_line(b, path, 'b', json_object_get_boolean(o) ? "true" :
		    "false");
		return;
	case json_type_int:
	case json_type_double:
		flat_line(b, path, 'n', json_object_get_string(o));
		return;
	case json_type_null:
		flat_line(b, path, 'z', "");
		return;
	}
}

char *
rules_flatten(const char *json, size_t len, const char *label,
    size_t *outlen, struct diag *d)
{
	json_tokener	*tok;
	json_object	*root;
	struct sbuf	 b = { NULL, 0, 0, 0 };
	char		 path[512] = "";
	size_t		 line = 1, i, off;

	if ((tok = json_tokener_new()) == NULL) {
		diag_add(d, label, "", "out of memory");
		return NULL;
	}
	root = json_tokener_parse_ex(tok, json, (int)len);
	off = json_tokener_get_parse_end(tok);
	if (root == NULL || off != len) {
		for (i = 0; i < off && i < len; i++)
			if (json[i] == '\n')
				line++;
		diag_add(d, label, "", "line %zu: invalid JSON: %s", line,
		    root == NULL ? json_tokener_error_desc(
		    json_tokener_get_error(tok)) : "trailing data");
		json_object_put(root);
		json_tokener_free(tok);
		return NULL;
	}
	json_tokener_free(tok);
	flatten_walk(&b, root, path, 0, sizeof path);
	json_object_put(root);
	if (b.oom) {
		diag_add(d, label, "", "too deeply nested, a key with '.', "
		    "or out of memory");
		free(b.p);
		return NULL;
	}
	if (b.p == NULL)
		sbuf_add(&b, "", 0);
	*outlen = b.len;
	return b.p;
}

char *
rules_flatten_file(const char *path, const char *label, size_t *outlen,
    struct diag *d)
{
	FILE	*fp;
	char	*buf = NULL, *nb, *flatbuf;
	size_t	 len = 0, cap = 0, n;
	int	 rc;

	if ((fp = fopen(path, "r")) == NULL) {
		diag_add(d, label, "", "cannot open: %s", strerror(errno));
		return NULL;
	}
	do {
		if (len + 4096 > cap) {
			if ((nb = realloc(buf, cap = cap ? cap * 2 : 8192)) ==
			    NULL) {
				free(buf);
				fclose(fp);
				diag_add(d, label, "", "out of memory");
				return NULL;
			}
			buf = nb;
		}
		n = fread(buf + len, 1, cap - len, fp);
		len += n;
	} while (n > 0);
	rc = ferror(fp);
	fclose(fp);
	if (rc) {
		free(buf);
		diag_add(d, label, "", "read error");
		return NULL;
	}
	flatbuf = rules_flatten(buf, len, label, outlen, d);
	free(buf);
	return flatbuf;
}

int
rules_read_flat(const char *path, const char *label, struct flat *f,
    struct diag *d)
{
	char	*flatbuf;
	size_t	 flen;
	int	 rc;

	if ((flatbuf = rules_flatten_file(path, label, &flen, d)) == NULL)
		return -1;
	rc = flat_parse(f, label, flatbuf, flen, d);
	free(flatbuf);
	if (rc == -1)
		diag_add(d, label, "", "out of memory");
	return rc;
}
