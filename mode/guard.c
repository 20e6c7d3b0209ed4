/*
 * guard.c -- the forbidden-claim table (mode/claims.json) and the output
 * guard that checks a reply against it, clause by clause (see guard.h).
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"

#define GUARD_SEEN	64	/* distinct clauses remembered */
#define GUARD_REPLY_MAX	8192	/* bytes of a reply without its repeats */
#include "match.h"
#include "normalize.h"

struct claim {
	char		*id;
	char		*prompt;
	struct pattern	*pat;		/* npat */
	struct match_filter *patf;	/* their filters, compact */
	size_t		 npat;
	struct pattern	*allow;		/* nallow */
	struct match_filter *allowf;
	size_t		 nallow;
	bool		 skip_questions;
};

struct claims {
	struct claim		 c[GUARD_MAX_CLAIMS];
	size_t			 n;
	const struct model	*model;		/* borrowed; may be NULL */
};

/* The keys a claim may have; anything else is a typo worth reporting. */
static const char *const claim_keys[] = {
	"id", "prompt", "patterns", "allow", "skip_questions", NULL
};

/* Write "a.b" into out (truncated to outlen, which keys never reach). */
static void
key_join(char *out, size_t outlen, const char *a, const char *b)
{
	if (snprintf(out, outlen, "%s.%s", a, b) >= (int)outlen)
		out[outlen - 1] = '\0';
}

/* True when s is a non-empty [a-z0-9_] identifier. */
static bool
claim_id_ok(const char *s)
{
	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		    *s == '_'))
			return false;
	return true;
}

/*
 * Compile the list of patterns at key (e.g. "claims.2.allow") into a new
 * array stored in *out. Every bad entry is reported; required says an
 * absent or empty list is itself a problem. Returns the count.
 */
static size_t
claim_patterns(const struct flat *f, struct diag *d, const char *key,
    bool required, struct pattern **out)
{
	char			 names[GUARD_MAX_PATTERNS][FLAT_NAME_MAX];
	char			 sub[FLAT_NAME_MAX * 2], err[128];
	const struct flat_ent	*e;
	const char		*src;
	size_t			 n, i, ok = 0;

	*out = NULL;
	e = flat_get(f, "%s", key);
	n = flat_children(f, key, names, GUARD_MAX_PATTERNS);
	if (e != NULL && e->type != 'a') {
		diag_add(d, f->file, key, "not a list of patterns");
		return 0;
	}
	if (n == 0) {
		if (required)
			diag_add(d, f->file, key, "no patterns");
		return 0;
	}
	if (n > GUARD_MAX_PATTERNS) {
		diag_add(d, f->file, key, "more than %d patterns",
		    GUARD_MAX_PATTERNS);
		n = GUARD_MAX_PATTERNS;
	}
	if ((*out = calloc(n, sizeof **out)) == NULL) {
		diag_add(d, f->file, key, "out of memory");
		return 0;
	}
	for (i = 0; i < n; i++) {
		key_join(sub, sizeof sub, key, names[i]);
		if ((src = flat_str(f, "%s", sub)) == NULL)
			diag_add(d, f->file, sub, "not a string");
		else if (match_compile(&(*out)[ok], src, err, sizeof err) == -1)
			diag_add(d, f->file, sub, "%s in \"%s\"", err, src);
		else
			ok++;
	}
	return ok;
}

/* Report keys of claim prefix that claims.json does not define. */
static void
claim_unknown_keys(const struct flat *f, struct diag *d, const char *prefix)
{
	char	names[16][FLAT_NAME_MAX], sub[FLAT_NAME_MAX * 2];
	size_t	n, i, k;

	n = flat_children(f, prefix, names, 16);
	for (i = 0; i < n && i < 16; i++) {
		for (k = 0; claim_keys[k] != NULL; k++)
			if (strcmp(names[i], claim_keys[k]) == 0)
				break;
		if (claim_keys[k] != NULL)
			continue;
		key_join(sub, sizeof sub, prefix, names[i]);
		diag_add(d, f->file, sub, "unknown key (expected id, prompt, "
		    "patterns, allow, skip_questions)");
	}
}

/* Check the id at prefix.id: present, well formed, not seen before. */
static const char *
claim_check_id(const struct claims *cl, const struct flat *f,
    struct diag *d, const char *prefix)
{
	const char	*id;
	char		 key[FLAT_NAME_MAX * 2];
	size_t		 i;

	key_join(key, sizeof key, prefix, "id");
	if ((id = flat_str(f, "%s", key)) == NULL || *id == '\0') {
		diag_add(d, f->file, key, "missing or empty");
		return NULL;
	}
	if (!claim_id_ok(id)) {
		diag_add(d, f->file, key, "\"%s\" is not [a-z0-9_]", id);
		return NULL;
	}
	for (i = 0; i < cl->n; i++)
		if (cl->c[i].id != NULL && strcmp(cl->c[i].id, id) == 0) {
			diag_add(d, f->file, key, "duplicate id \"%s\" (also "
			    "claims.%zu)", id, i);
			return NULL;
		}
	return id;
}

/* Load the claim at prefix ("claims.3") into c; problems go to d. */
static void
claim_load_one(struct claims *cl, struct claim *c, const struct flat *f,
    struct diag *d, const char *prefix)
{
	const struct flat_ent	*e;
	const char		*id, *prompt;
	char			 key[FLAT_NAME_MAX * 2];
	size_t			 i;

	claim_unknown_keys(f, d, prefix);
	if ((id = claim_check_id(cl, f, d, prefix)) != NULL &&
	    (c->id = strdup(id)) == NULL)
		diag_add(d, f->file, prefix, "out of memory");
	prompt = flat_str(f, "%s.prompt", prefix);
	if (prompt == NULL || prompt[strspn(prompt, " \t\n")] == '\0') {
		key_join(key, sizeof key, prefix, "prompt");
		diag_add(d, f->file, key, "missing or empty");
	} else if ((c->prompt = strdup(prompt)) == NULL)
		diag_add(d, f->file, prefix, "out of memory");
	key_join(key, sizeof key, prefix, "patterns");
	c->npat = claim_patterns(f, d, key, true, &c->pat);
	key_join(key, sizeof key, prefix, "allow");
	c->nallow = claim_patterns(f, d, key, false, &c->allow);
	c->patf = calloc(c->npat + 1, sizeof *c->patf);
	c->allowf = calloc(c->nallow + 1, sizeof *c->allowf);
	if (c->patf == NULL || c->allowf == NULL)
		diag_add(d, f->file, prefix, "out of memory");
	for (i = 0; c->patf != NULL && i < c->npat; i++)
		match_filter_of(&c->pat[i], &c->patf[i]);
	for (i = 0; c->allowf != NULL && i < c->nallow; i++)
		match_filter_of(&c->allow[i], &c->allowf[i]);
	if ((e = flat_get(f, "%s.skip_questions", prefix)) != NULL) {
		if (e->type != 'b') {
			key_join(key, sizeof key, prefix, "skip_questions");
			diag_add(d, f->file, key, "not true or false");
		} else
			c->skip_questions = strcmp(e->val, "true") == 0;
	}
}

struct claims *
claims_load(const struct flat *f, struct diag *d)
{
	char		 names[GUARD_MAX_CLAIMS][FLAT_NAME_MAX];
	char		 top[4][FLAT_NAME_MAX], prefix[FLAT_NAME_MAX * 2];
	struct claims	*cl;
	size_t		 n, i, before = d->n + d->dropped;

	if ((cl = calloc(1, sizeof *cl)) == NULL) {
		diag_add(d, f->file, "", "out of memory");
		return NULL;
	}
	n = flat_children(f, "", top, 4);
	for (i = 0; i < n && i < 4; i++)
		if (strcmp(top[i], "claims") != 0)
			diag_add(d, f->file, top[i], "unknown key (expected "
			    "claims)");
	n = flat_children(f, "claims", names, GUARD_MAX_CLAIMS);
	if (n == 0)
		diag_add(d, f->file, "claims", "missing or empty list");
	if (n > GUARD_MAX_CLAIMS) {
		diag_add(d, f->file, "claims", "more than %d claims",
		    GUARD_MAX_CLAIMS);
		n = GUARD_MAX_CLAIMS;
	}
	for (i = 0; i < n; i++) {
		key_join(prefix, sizeof prefix, "claims", names[i]);
		claim_load_one(cl, &cl->c[cl->n++], f, d, prefix);
	}
	if (d->n + d->dropped != before) {
		claims_free(cl);
		return NULL;
	}
	return cl;
}

void
claims_free(struct claims *cl)
{
	size_t	i;

	if (cl == NULL)
		return;
	for (i = 0; i < cl->n; i++) {
		free(cl->c[i].id);
		free(cl->c[i].prompt);
		free(cl->c[i].pat);
		free(cl->c[i].patf);
		free(cl->c[i].allow);
		free(cl->c[i].allowf);
	}
	free(cl);
}

size_t
claims_count(const struct claims *cl)
{
	return cl->n;
}

int
claims_find(const struct claims *cl, const char *id)
{
	size_t	i;

	for (i = 0; i < cl->n; i++)
		if (strcmp(cl->c[i].id, id) == 0)
			return (int)i;
	return -1;
}

const char *
claims_id(const struct claims *cl, int idx)
{
	if (idx < 0 || (size_t)idx >= cl->n)
		return NULL;
	return cl->c[idx].id;
}

const char *
claims_prompt(const struct claims *cl, int idx)
{
	if (idx < 0 || (size_t)idx >= cl->n)
		return NULL;
	return cl->c[idx].prompt;
}

/* True when byte i of s (n bytes) ends a clause. */
static bool
clause_boundary(const char *s, size_t n, size_t i)
{
	switch (s[i]) {
	case '.':
	case ',':
		/* "R$ 1.200" and "1,5" are numbers, not clause ends. */
		return !(i > 0 && i + 1 < n && s[i - 1] >= '0' &&
		    s[i - 1] <= '9' && s[i + 1] >= '0' && s[i + 1] <= '9');
	case '!':
	case '?':
	case ';':
	case '\n':
	case '\r':
		return true;
	default:
		return false;
	}
}

/*
 * The next clause of s (n bytes) from *pos: its start and length (at most
 * GUARD_CHUNK bytes, cut at a space or a UTF-8 boundary) and whether it
 * ends in '?'. Returns false at the end of s.
 */
static bool
clause_next(const char *s, size_t n, size_t *pos, size_t *start,
    size_t *clen, bool *question)
{
	size_t	i = *pos, cut = 0;

	if (i >= n)
		return false;
	*start = i;
	while (i < n && !clause_boundary(s, n, i) && i - *start < GUARD_CHUNK) {
		if (s[i] == ' ')
			cut = i;
		i++;
	}
	*question = i < n && s[i] == '?';
	if (i < n && !clause_boundary(s, n, i)) {
		/* Too long: cut at the last space, else at a character. */
		if (cut > *start)
			i = cut;
		else
			while (i > *start + 1 && ((unsigned char)s[i] & 0xC0) ==
			    0x80)
				i--;
		*clen = i - *start;
		*pos = i;
		return true;
	}
	*clen = i - *start;
	*pos = i < n ? i + 1 : i;
	return true;
}

/* True when the normalised clause violates claim c. */
static bool
claim_violated(const struct claim *c, const struct match_text *mt,
    bool question)
{
	size_t	i;

	if (question && c->skip_questions)
		return false;
	/* The patterns first: most clauses match none, and then the
	 * exceptions need no look. */
	for (i = 0; i < c->npat; i++)
		if (match_filter_test(&c->patf[i], mt) &&
		    match_find_text(&c->pat[i], mt, 0, NULL, NULL))
			break;
	if (i == c->npat)
		return false;
	for (i = 0; i < c->nallow; i++)
		if (match_filter_test(&c->allowf[i], mt) &&
		    match_find_text(&c->allow[i], mt, 0, NULL, NULL))
			return false;
	return true;
}

/*
 * A reply cut into clauses, each normalised once: the rules read each
 * clause, the model the clauses joined by spaces.
 */
#define GUARD_NORM	((GUARD_CHUNK * 4 + 64) * 2)
#define GUARD_CLAUSES	256

struct clauses {
	char	text[GUARD_NORM];	/* the clauses, NUL-terminated each */
	size_t	start[GUARD_CLAUSES];
	bool	question[GUARD_CLAUSES];
	size_t	n, len;
	bool	repeats;	/* a clause comes twice */
};

/* FNV-1a of a normalised clause. */
static uint32_t
clause_hash(const char *s)
{
	return mg_fnv(MG_FNV_BASIS, s, strlen(s));
}

/* Cut len bytes of reply into cs: its clauses that have words, normalised
 * (as many as fit), and whether one repeats. */
static void
clauses_build(const char *reply, size_t len, struct clauses *cs)
{
	uint32_t	seen[GUARD_CLAUSES], h;
	bool		question;
	size_t		pos = 0, start, clen, k, i;

	cs->n = cs->len = 0;
	cs->repeats = false;
	while (cs->n < GUARD_CLAUSES && GUARD_NORM - cs->len > 1 &&
	    clause_next(reply, len, &pos, &start, &clen, &question)) {
		k = text_normalize(reply + start, clen, cs->text + cs->len,
		    GUARD_NORM - cs->len);
		if (k == 0)
			continue;
		h = clause_hash(cs->text + cs->len);
		for (i = 0; i < cs->n && seen[i] != h; i++)
			;
		cs->repeats = cs->repeats || i < cs->n;
		seen[cs->n] = h;
		cs->start[cs->n] = cs->len;
		cs->question[cs->n++] = question;
		cs->len += k + 1;
	}
}

/* The claims (all of them) whose rules fire in some clause of cs. */
static void
clauses_rules(const struct claims *cl, const struct clauses *cs, bool *hit)
{
	struct match_text	mt;
	size_t			c, i;

	memset(hit, 0, sizeof(bool) * GUARD_MAX_CLAIMS);
	for (c = 0; c < cs->n; c++) {
		match_text_init(&mt, cs->text + cs->start[c]);
		for (i = 0; i < cl->n; i++)
			if (!hit[i])
				hit[i] = claim_violated(&cl->c[i], &mt,
				    cs->question[c]);
	}
}

/* True when w (len bytes) is one of the NULL-terminated list. */
static bool
word_in(const char *const *list, const char *w, size_t len)
{
	for (; *list != NULL; list++)
		if ((*list)[0] == w[0] && strncmp(*list, w, len) == 0 &&
		    (*list)[len] == '\0')
			return true;
	return false;
}

static const char *const cue_neg[] = {
	"nao", "nem", "nunca", "jamais", "sem", "ninguem", NULL
};
/* Weekdays, months, today and tomorrow: "<dia>". */
static const char *const cue_day[] = {
	"segunda", "terca", "quarta", "quinta", "sexta", "sabado", "domingo",
	"hoje", "amanha", "feriado", "janeiro", "fevereiro", "marco", "abril",
	"maio", "junho", "julho", "agosto", "setembro", "outubro", "novembro",
	"dezembro", NULL
};
/* The first letters of cue_day's words and cue_neg's, a bit a letter. */
#define CUE_BIT(c)	(1u << ((c) - 'a'))
#define CUE_DAY_FIRST	(CUE_BIT('s') | CUE_BIT('t') | CUE_BIT('q') | \
			 CUE_BIT('d') | CUE_BIT('h') | CUE_BIT('a') | \
			 CUE_BIT('f') | CUE_BIT('j') | CUE_BIT('m') | \
			 CUE_BIT('o') | CUE_BIT('n'))
#define CUE_NEG_FIRST	(CUE_BIT('n') | CUE_BIT('j') | CUE_BIT('s'))

/* The bit of w's first letter (0 for anything but a-z). */
static uint32_t
cue_first(const char *w)
{
	return w[0] >= 'a' && w[0] <= 'z' ? CUE_BIT(w[0]) : 0;
}

/*
 * The class of word w (len bytes) into cls: "<dia>" for a weekday, a
 * month, today or tomorrow; for a word with digits, the word with each
 * run of digits as one 0 ("1k7" "0k0", "19h" "0h", "450" "0"); else "".
 */
static size_t
cue_class(const char *w, size_t len, char *cls, size_t clslen)
{
	size_t	k, n = 0;

	if ((cue_first(w) & CUE_DAY_FIRST) && len >= 4 && len <= 9 &&
	    word_in(cue_day, w, len)) {
		memcpy(cls, "<dia>", 6);	/* clslen >= 6 */
		return 5;
	}
	for (k = 0; k < len && (w[k] < '0' || w[k] > '9'); k++)
		;
	if (k == len) {
		cls[0] = '\0';
		return 0;
	}
	for (k = 0; k < len && n + 2 < clslen; k++)
		if (w[k] < '0' || w[k] > '9')
			cls[n++] = w[k];
		else if (n == 0 || cls[n - 1] != '0')
			cls[n++] = '0';
	cls[n] = '\0';
	return n;
}

/*
 * The claims' cues, beside the words of norm (a normalised text): the
 * words in a negation's scope (tag 'n': "nao consigo garantir" is no
 * promise), and a number or a day as its class joined with the word
 * before it (tag 'd') and after it (tag 'e'): "em 1 450" and "por 1k7"
 * are "em 0" and "por 0k0", "na quinta" and "na sexta" both "na
 * <dia>", so an amount or a date the train set never wrote is still one.
 */
static void
feats_cues(struct feats *f, const char *norm)
{
	char		 buf[96], cls[24];
	const char	*w, *prev = "<s>";
	size_t		 wl, pl = 3, scope = 0, cn = 0, n;

	for (w = norm; *w != '\0'; w += wl + (w[wl] == ' ')) {
		if ((wl = strcspn(w, " ")) == 0)
			break;
		if (cn > 0 && cn + 1 + wl < sizeof buf) {
			/* The class of the word before, with this word. */
			memcpy(buf + cn + 1, w, wl);
			feats_add(f, 'e', buf, cn + 1 + wl);
		}
		cn = 0;
		if ((cue_first(w) & CUE_NEG_FIRST) && wl <= 7 &&
		    word_in(cue_neg, w, wl))
			scope = 3;
		else if (scope > 0) {
			feats_add(f, 'n', w, wl);
			scope--;
		}
		if ((n = cue_class(w, wl, cls, sizeof cls)) > 0 &&
		    pl + 1 + n < sizeof buf) {
			memcpy(buf, prev, pl);
			buf[pl] = ' ';
			memcpy(buf + pl + 1, cls, n);
			feats_add(f, 'd', buf, pl + 1 + n);
			/* "CLASS " for the next word's 'e'. */
			memcpy(buf, cls, n);
			buf[n] = ' ';
			cn = n;
		}
		prev = w;
		pl = wl < 48 ? wl : 48;
	}
}

/* Features of the reply (cut into cs) given the rules' hits; cs's text
 * becomes the clauses joined by spaces. */
static void
feats_reply(const struct claims *cl, const char *reply, size_t len,
    struct clauses *cs, const bool *hit, struct feats *f)
{
	size_t	i;

	for (i = 1; i < cs->n; i++)
		cs->text[cs->start[i] - 1] = ' ';
	if (cs->n == 0)
		cs->text[0] = '\0';
	feats_text(f, cs->text);
	feats_cues(f, cs->text);
	if (memchr(reply, '?', len) != NULL)
		feats_add(f, 'q', "?", 1);
	for (i = 0; i < cl->n; i++)
		if (hit[i])
			feats_add(f, 'r', cl->c[i].id, strlen(cl->c[i].id));
}

void
claims_set_model(struct claims *cl, const struct model *m)
{
	cl->model = m;
}

void
guard_features(const struct claims *cl, const char *reply, size_t len,
    struct feats *f)
{
	struct clauses	cs;
	bool		hit[GUARD_MAX_CLAIMS];

	clauses_build(reply, len, &cs);
	clauses_rules(cl, &cs, hit);
	feats_reply(cl, reply, len, &cs, hit, f);
}

int
guard_probs(const struct claims *cl, const int *which, size_t nwhich,
    const char *reply, size_t len, double *prob)
{
	struct feats	f;
	struct clauses	cs;
	bool		hit[GUARD_MAX_CLAIMS];
	uint32_t	mask = 1;
	size_t		i;

	if (cl->model == NULL)
		return -1;
	for (i = 0; i < nwhich; i++)
		if (which[i] >= 0 && (size_t)which[i] < cl->n &&
		    which[i] + 1 < MODEL_MAX_LABELS)
			mask |= 1u << (which[i] + 1);
	clauses_build(reply, len, &cs);
	clauses_rules(cl, &cs, hit);
	feats_init(&f, NULL);
	feats_reply(cl, reply, len, &cs, hit, &f);
	model_probs(cl->model, &f, mask, prob);
	return 0;
}

/*
 * The model's verdict. The reply is clean when OK's probability reaches
 * the model's threshold for OK (0.5 when none). Otherwise the violated
 * claims are the most likely one, the others at least half as likely, and
 * those the rules also name.
 */
static void
guard_model_part(const struct claims *cl, const int *which, size_t nwhich,
    const char *reply, size_t len, struct clauses *cs, bool *hit)
{
	struct feats	f;
	bool		rule[GUARD_MAX_CLAIMS];
	double		prob[MODEL_MAX_LABELS], thr, top = 0;
	uint32_t	mask = 1;
	size_t		i;
	int		idx;
	bool		sure = false;

	memset(hit, 0, sizeof(bool) * GUARD_MAX_CLAIMS);
	for (i = 0; i < nwhich; i++)
		if (which[i] >= 0 && (size_t)which[i] < cl->n &&
		    which[i] + 1 < MODEL_MAX_LABELS)
			mask |= 1u << (which[i] + 1);
	clauses_rules(cl, cs, rule);
	feats_init(&f, NULL);
	feats_reply(cl, reply, len, cs, rule, &f);
	model_probs(cl->model, &f, mask, prob);
	thr = model_threshold(cl->model, 0);
	if (prob[0] >= (thr > 0 ? thr : 0.5))
		return;
	for (i = 1; i < model_nlabels(cl->model); i++)
		if (prob[i] > top)
			top = prob[i];
	for (i = 0; i < nwhich; i++) {
		idx = which[i];
		if (idx < 0 || (size_t)idx >= cl->n || idx + 1 >=
		    MODEL_MAX_LABELS)
			continue;
		/* Without a rule naming it, a claim needs its own threshold. */
		if (rule[idx] || prob[idx + 1] >= model_threshold(cl->model,
		    (size_t)idx + 1))
			sure = true;
		hit[idx] = prob[idx + 1] >= top * 0.5 || rule[idx];
	}
	if (!sure)
		memset(hit, 0, sizeof(bool) * GUARD_MAX_CLAIMS);
}

/*
 * The model judges replies of the size it learned from (a few sentences):
 * a longer reply is judged in parts of whole clauses of at most
 * GUARD_CHUNK bytes (a linear model's sums grow with the text, and 200
 * repeats of a friendly sentence are not a promise), a claim violated
 * when any part violates it.
 */
/*
 * A reply that repeats a clause says no more than once: when some clause
 * (normalised) comes again, out gets the reply without the repeats and
 * the length is returned; 0 when nothing repeats (judge the reply as is).
 */
static size_t
guard_unrepeat(const char *reply, size_t len, char *out, size_t outlen)
{
	uint32_t	seen[GUARD_SEEN];
	char		norm[GUARD_CHUNK * 4 + 64];
	bool		question, dup = false;
	size_t		pos = 0, start, clen, n = 0, ns = 0, i, end;

	while (clause_next(reply, len, &pos, &start, &clen, &question)) {
		end = pos < len ? pos : len;	/* the clause and its mark */
		text_normalize(reply + start, clen, norm, sizeof norm);
		for (i = 0; i < ns && seen[i] != clause_hash(norm); i++)
			;
		if (norm[0] != '\0' && i < ns) {
			dup = true;
			continue;
		}
		if (ns < GUARD_SEEN)
			seen[ns++] = clause_hash(norm);
		if (n + (end - start) + 1 < outlen) {
			if (n > 0)
				out[n++] = ' ';
			memcpy(out + n, reply + start, end - start);
			n += end - start;
		}
	}
	return dup ? n : 0;
}

static void
guard_model(const struct claims *cl, const int *which, size_t nwhich,
    const char *reply, size_t len, bool *hit)
{
	char			 once[GUARD_REPLY_MAX];
	struct clauses		 cs;
	bool			 part[GUARD_MAX_CLAIMS], question;
	size_t			 pos = 0, start, clen, from = 0, i, n;

	if (len <= GUARD_CHUNK) {
		/* The common case: a short reply, its clauses cut once. */
		clauses_build(reply, len, &cs);
		if (!cs.repeats) {
			guard_model_part(cl, which, nwhich, reply, len, &cs,
			    hit);
			return;
		}
	}
	if ((n = guard_unrepeat(reply, len, once, sizeof once)) > 0) {
		reply = once;
		len = n;
	}
	if (len <= GUARD_CHUNK) {
		clauses_build(reply, len, &cs);
		guard_model_part(cl, which, nwhich, reply, len, &cs, hit);
		return;
	}
	memset(hit, 0, sizeof(bool) * GUARD_MAX_CLAIMS);
	while (from < len) {
		/* Whole clauses while they fit (at least one). */
		for (pos = from; clause_next(reply, len, &pos, &start, &clen,
		    &question) && pos - from <= GUARD_CHUNK; )
			if (pos - from + 1 > GUARD_CHUNK)
				break;
		if (pos - from > GUARD_CHUNK && start > from)
			pos = start;
		clauses_build(reply + from, pos - from, &cs);
		guard_model_part(cl, which, nwhich, reply + from, pos - from,
		    &cs, part);
		for (i = 0; i < GUARD_MAX_CLAIMS; i++)
			hit[i] = hit[i] || part[i];
		from = pos;
	}
}

size_t
guard_check(const struct claims *cl, const int *which, size_t nwhich,
    const char *reply, size_t len, int *violated, size_t max)
{
	struct match_text	mt;
	bool	hit[GUARD_MAX_CLAIMS], question, listed[GUARD_MAX_CLAIMS];
	char	norm[GUARD_CHUNK * 4 + 64];
	size_t	pos = 0, start, clen, i, nv = 0;
	int	idx;

	memset(hit, 0, sizeof hit);
	if (cl->model != NULL)
		guard_model(cl, which, nwhich, reply, len, hit);
	while (cl->model == NULL &&
	    clause_next(reply, len, &pos, &start, &clen, &question)) {
		if (text_normalize(reply + start, clen, norm, sizeof norm) == 0)
			continue;
		match_text_init(&mt, norm);
		for (i = 0; i < nwhich; i++) {
			idx = which[i];
			if (idx < 0 || (size_t)idx >= cl->n || hit[idx])
				continue;
			hit[idx] = claim_violated(&cl->c[idx], &mt, question);
		}
	}
	memset(listed, 0, sizeof listed);
	for (i = 0; i < nwhich; i++) {
		idx = which[i];
		if (idx < 0 || (size_t)idx >= cl->n || !hit[idx] ||
		    listed[idx])
			continue;
		listed[idx] = true;
		if (nv < max)
			violated[nv] = idx;
		nv++;
	}
	return nv;
}
