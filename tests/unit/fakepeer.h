/*
 * fakepeer.h -- start a python fake peer (tests/fakes/) as a child on a
 * free port, script it and read what it recorded. Test-only helpers; the
 * control calls block, which is fine outside the event loop.
 * SPDX-License-Identifier: MIT
 */
#ifndef MG_FAKEPEER_H
#define MG_FAKEPEER_H

#include <sys/types.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

struct fakepeer {
	pid_t	pid;
	int	port;
	char	base[64];	/* http://127.0.0.1:PORT */
};

/* Start python3 script --port 0 and read the port it prints. */
static inline int
fakepeer_start(struct fakepeer *fp, const char *script)
{
	int	 pfd[2];
	char	 line[32];
	FILE	*f;

	if (pipe(pfd) == -1)
		return -1;
	if ((fp->pid = fork()) == -1)
		return -1;
	if (fp->pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execlp("python3", "python3", script, "--port", "0", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	f = fdopen(pfd[0], "r");
	if (f == NULL || fgets(line, sizeof line, f) == NULL) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	fp->port = atoi(line);
	snprintf(fp->base, sizeof fp->base, "http://127.0.0.1:%d", fp->port);
	return fp->port > 0 ? 0 : -1;
}

static inline void
fakepeer_stop(struct fakepeer *fp)
{
	int	st;

	if (fp->pid > 0) {
		kill(fp->pid, SIGTERM);
		waitpid(fp->pid, &st, 0);
		fp->pid = 0;
	}
}

static inline size_t
fakepeer_collect(char *p, size_t size, size_t n, void *arg)
{
	char	**buf = arg;
	size_t	 old = *buf ? strlen(*buf) : 0;
	char	*nb = realloc(*buf, old + size * n + 1);

	if (nb == NULL)
		return 0;
	memcpy(nb + old, p, size * n);
	nb[old + size * n] = '\0';
	*buf = nb;
	return size * n;
}

/* A blocking control call; returns the parsed answer (caller puts). */
static inline json_object *
fakepeer_call(struct fakepeer *fp, const char *method, const char *path,
    const char *body)
{
	CURL		*e = curl_easy_init();
	char		 url[128], *buf = NULL;
	json_object	*o;

	snprintf(url, sizeof url, "%s%s", fp->base, path);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, fakepeer_collect);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &buf);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	curl_easy_perform(e);
	curl_easy_cleanup(e);
	o = buf ? json_tokener_parse(buf) : NULL;
	free(buf);
	return o;
}

/* Queue scripted steps (a JSON list). */
static inline void
fakepeer_script(struct fakepeer *fp, const char *steps)
{
	json_object_put(fakepeer_call(fp, "POST", "/__script", steps));
}

static inline void
fakepeer_reset(struct fakepeer *fp)
{
	json_object_put(fakepeer_call(fp, "POST", "/__reset", "{}"));
}

/* Every request recorded so far (caller puts). */
static inline json_object *
fakepeer_requests(struct fakepeer *fp)
{
	return fakepeer_call(fp, "GET", "/__requests", NULL);
}

/* Member lookup by a dotted path ("body.messages.0.role"); borrowed. */
static inline json_object *
fakepeer_get(json_object *o, const char *path)
{
	char	 key[128], *dot;
	size_t	 n;

	while (o != NULL && *path != '\0') {
		dot = strchr(path, '.');
		n = dot ? (size_t)(dot - path) : strlen(path);
		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(key));
		else if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (dot ? 1 : 0);
	}
	return o;
}

/* String at a dotted path, or "" when absent. */
static inline const char *
fakepeer_str(json_object *o, const char *path)
{
	json_object	*v = fakepeer_get(o, path);

	return v ? json_object_get_string(v) : "";
}

#endif
