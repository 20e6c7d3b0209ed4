/*
 * intent.c -- deterministic intent detection (see intent.h).
 *
 * A message is split into clauses at , ; . ! ? and newlines, each clause
 * normalised (normalize.h) and its words passed through the lexicon's
 * abbreviations ("vc" -> "voce"). Every pattern of mode/intents.json is
 * matched against the whole text (match.h). A match of a "negatable"
 * intent is dropped when a negation word ("nao", "sem", ...) stands at
 * most negation_window words before it in the same clause (a pattern
 * that starts with a negation, "nao quero receber", is negated by another
 * one before it: "nao e que nao quero receber"). A match is also dropped
 * when one of its intent's "unless" patterns matches in a clause the
 * match spans
 * ("para de me mandar vaga de noite" is a preference, not an opt-out).
 * An intent's score is the best
 * weight of its matches plus INTENT_EXTRA for each further match (at most
 * 1), so overlapping patterns on the same words barely add up; the highest
 * score wins, ties go to the higher priority, and nothing matched is
 * NEUTRO.
 * A short yes or no means what Julia asked: "answers" in intents.json
 * lists kinds of question (patterns over the last question of Julia's
 * message before it) and the intent a yes or a no to each is ("sim" to
 * "quer que eu pare de te mandar vagas?" is OPT_OUT); it overrules the
 * rules and the model for messages of at most answers.max_words words.
 * Pure: no I/O.
 * SPDX-License-Identifier: MIT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intent.h"
#include "match.h"
#include "normalize.h"

#define LEX_WORD	32	/* an abbreviation or negation word */
#define LEX_EXPAND	64	/* an abbreviation's expansion */
#define LEX_NEG_MAX	16
#define INTENT_TEXT_MAX	2048	/* normalised bytes looked at */
#define INTENT_WORDS	256	/* words whose clause is tracked */
#define INTENT_EXTRA	0.02	/* score added by each further match */
#define LEX_PATS_MAX	4096	/* patterns of a lexicon */
#define INTENT_MATCHED	64	/* matched patterns kept for the evidence */
#define LEX_ANSWERS	16	/* kinds of question in "answers" */
#define LEX_WHEN	12	/* patterns of one kind */
#define LEX_NEEDS	24	/* "needs" patterns of all intents */

struct lex_pat {
	struct pattern	 pat;
	double		 weight;
	enum intent	 intent;
	bool		 unless;	/* a veto of its intent, not evidence */
	char		*src;
};

/* A kind of question Julia asks and what a yes or a no to it means. */
struct lex_answer {
	struct pattern	 when[LEX_WHEN];
	char		*src[LEX_WHEN];
	size_t		 nwhen;
	int		 yes, no;	/* an intent, or -1: no meaning */
};

struct lex_abbr {
	char	from[LEX_WORD];
	char	to[LEX_EXPAND];
	size_t	tolen;
};

struct lexicon {
	struct lex_pat	*pats;
	struct match_set *set;		/* the patterns' words (unless
					   patterns never candidates) */
	size_t		 npats;
	uint16_t	*unless;	/* indices of the unless patterns, by
					   intent: [unless_at[k], unless_at[k +
					   1]) */
	size_t		 unless_at[INTENT__COUNT + 1];
	struct lex_abbr	*abbr;
	size_t		 nabbr;
	size_t		 abbr_max;	/* the longest abbreviated word */
	uint32_t	*abbr_slot;	/* open addressing over abbr by
					   mg_fnv: index + 1 */
	uint32_t	 abbr_mask;	/* slots - 1 */
	char		 neg[LEX_NEG_MAX][LEX_WORD];
	size_t		 nneg;
	int		 window;
	int		 priority[INTENT__COUNT];
	bool		 negatable[INTENT__COUNT];
	bool		 certain[INTENT__COUNT];	/* a full-weight rule wins
						   over the model */
	/* "needs": the model alone picks such an intent only when one of
	 * its patterns matches the message or Julia's message before it */
	struct pattern	 need[LEX_NEEDS];
	int		 need_intent[LEX_NEEDS];
	size_t		 nneed;
	bool		 has_need[INTENT__COUNT];
	struct lex_answer answer[LEX_ANSWERS];
	size_t		 nanswer;
	size_t		 answer_words;	/* the longest message read as an
					   answer */
	const struct model *model;		/* borrowed; may be NULL */
};

/* A normalised message: the text and the clause of each word. */
struct norm_text {
	char			text[INTENT_TEXT_MAX];
	size_t			len;
	size_t			nwords;
	uint16_t		clause[INTENT_WORDS];
	struct match_text	mt;	/* text split into words */
	uint16_t		matched[INTENT_MATCHED];	/* patterns that
						   counted, in order */
	size_t			nmatched;
};

/* Order abbreviations by their word, for bsearch. */
static int
abbr_cmp(const void *a, const void *b)
{
	return strcmp(((const struct lex_abbr *)a)->from,
	    ((const struct lex_abbr *)b)->from);
}

/* Hash the sorted abbreviations by their word, so a message's word is
 * looked up with one hash instead of a binary search of strcmp. Where
 * two keys normalise to the same word, the entry is the one bsearch
 * finds. */
static int
lex_index_abbr(struct lexicon *lex)
{
	const struct lex_abbr	*a;
	size_t			 slots = 16, i;
	uint32_t		 j;

	while (slots < 2 * lex->nabbr)
		slots *= 2;
	if ((lex->abbr_slot = calloc(slots, sizeof *lex->abbr_slot)) == NULL)
		return -1;
	lex->abbr_mask = (uint32_t)slots - 1;
	for (i = 0; i < lex->nabbr; i++) {
		a = bsearch(&lex->abbr[i], lex->abbr, lex->nabbr, sizeof *a,
		    abbr_cmp);
		for (j = mg_fnv(MG_FNV_BASIS, a->from, strlen(a->from)) &
		    lex->abbr_mask;
		    lex->abbr_slot[j] != 0 &&
		    &lex->abbr[lex->abbr_slot[j] - 1] != a;
		    j = (j + 1) & lex->abbr_mask)
			;
		lex->abbr_slot[j] = (uint32_t)(a - lex->abbr + 1);
	}
	return 0;
}

/* The abbreviation of the word (len bytes at w), or NULL. */
static const struct lex_abbr *
lex_abbr_find(const struct lexicon *lex, const char *w, size_t len)
{
	const struct lex_abbr	*a;
	uint32_t		 j;

	if (len > lex->abbr_max)
		return NULL;
	for (j = mg_fnv(MG_FNV_BASIS, w, len) & lex->abbr_mask;
	    lex->abbr_slot[j] != 0;
	    j = (j + 1) & lex->abbr_mask) {
		a = &lex->abbr[lex->abbr_slot[j] - 1];
		if (a->from[len] == '\0' && memcmp(a->from, w, len) == 0)
			return a;
	}
	return NULL;
}

/* Normalise s into one word of at most max-1 bytes; -1 if it is not one. */
static int
lex_one_word(const char *s, char *out, size_t max, bool allow_many)
{
	char	tmp[LEX_EXPAND * 2];
	size_t	n;

	n = text_normalize(s, strlen(s), tmp, sizeof tmp);
	if (n == 0 || n >= max || (!allow_many && strchr(tmp, ' ') != NULL))
		return -1;
	memcpy(out, tmp, n + 1);
	return 0;
}

/* Load "abbreviations": an object of word -> expansion. */
static void
lex_load_abbr(struct lexicon *lex, const struct flat *f, struct diag *d)
{
	const struct flat_ent	*e;
	struct lex_abbr		*a;
	size_t			 i;

	for (i = 0; i < f->n; i++) {
		e = &f->ent[i];
		if (strncmp(e->path, "abbreviations.", 14) != 0)
			continue;
		a = &lex->abbr[lex->nabbr];
		if (e->type != 's')
			diag_add(d, f->file, e->path, "must be a string");
		else if (lex_one_word(e->path + 14, a->from, sizeof a->from,
		    false) == -1)
			diag_add(d, f->file, e->path, "key is not one word");
		else if (lex_one_word(e->val, a->to, sizeof a->to, true) == -1)
			diag_add(d, f->file, e->path,
			    "expansion is empty or too long");
		else {
			a->tolen = strlen(a->to);
			if (strlen(a->from) > lex->abbr_max)
				lex->abbr_max = strlen(a->from);
			lex->nabbr++;
		}
	}
	qsort(lex->abbr, lex->nabbr, sizeof *lex->abbr, abbr_cmp);
}

/* Load "negations" (an array of words) and "negation_window". */
static void
lex_load_neg(struct lexicon *lex, const struct flat *f, struct diag *d)
{
	const struct flat_ent	*e;
	const char		*s;
	size_t			 i;

	for (i = 0; (e = flat_get(f, "negations.%zu", i)) != NULL; i++) {
		s = e->type == 's' ? e->val : "";
		if (lex->nneg == LEX_NEG_MAX)
			diag_add(d, f->file, e->path, "more than %d negations",
			    LEX_NEG_MAX);
		else if (lex_one_word(s, lex->neg[lex->nneg], LEX_WORD,
		    false) == -1)
			diag_add(d, f->file, e->path, "must be one word");
		else
			lex->nneg++;
	}
	lex->window = 3;
	if ((e = flat_get(f, "negation_window")) != NULL) {
		lex->window = (int)strtol(e->val, NULL, 10);
		if (e->type != 'n' || lex->window < 0 || lex->window > 8)
			diag_add(d, f->file, e->path, "must be a number 0..8");
	}
}

/* Is w (len bytes) one of the negation words? */
static bool
lex_is_neg(const struct lexicon *lex, const char *w, size_t len)
{
	size_t	i;

	if (len == 0 || len >= LEX_WORD)
		return false;
	for (i = 0; i < lex->nneg; i++)
		if (lex->neg[i][0] == w[0] && lex->neg[i][len] == '\0' &&
		    memcmp(lex->neg[i], w, len) == 0)
			return true;
	return false;
}

/* Add one pattern entry (a string, or [string, weight]) at path. */
static void
lex_add_pat(struct lexicon *lex, const struct flat *f, const char *path,
    enum intent in, bool unless, struct diag *d)
{
	const struct flat_ent	*e, *w;
	struct lex_pat		*lp = &lex->pats[lex->npats];
	char			 err[128];
	double			 weight = 1.0;

	if ((e = flat_get(f, "%s", path)) == NULL) {
		e = flat_get(f, "%s.0", path);
		if ((w = flat_get(f, "%s.1", path)) == NULL || w->type != 'n' ||
		    flat_get(f, "%s.2", path) != NULL) {
			diag_add(d, f->file, path,
			    "must be \"pattern\" or [\"pattern\", weight]");
			return;
		}
		if ((weight = strtod(w->val, NULL)) <= 0 || weight > 1) {
			diag_add(d, f->file, w->path,
			    "weight %s out of range (0, 1]", w->val);
			return;
		}
	}
	if (e == NULL || e->type != 's' || e->val[0] == '\0') {
		diag_add(d, f->file, path, "empty or missing pattern");
		return;
	}
	if (match_compile(&lp->pat, e->val, err, sizeof err) == -1) {
		diag_add(d, f->file, e->path, "invalid pattern \"%s\": %s",
		    e->val, err);
		return;
	}
	if (unless && (lp->pat.anchor_start || lp->pat.anchor_end)) {
		diag_add(d, f->file, e->path, "an unless pattern takes no "
		    "anchors");
		return;
	}
	if ((lp->src = strdup(e->val)) == NULL) {
		diag_add(d, f->file, path, "out of memory");
		return;
	}
	lp->weight = weight;
	lp->intent = in;
	lp->unless = unless;
	lex->npats++;
}

/* Load one entry of "intents": priority, negatable, patterns. */
static void
lex_load_intent(struct lexicon *lex, const struct flat *f, const char *name,
    struct diag *d)
{
	const struct flat_ent	*e;
	char			 path[128], err[128];
	int			 in;
	size_t			 i;

	snprintf(path, sizeof path, "intents.%s", name);
	if ((in = intent_from_name(name)) == -1 || in == INTENT_NEUTRO) {
		diag_add(d, f->file, path, in == -1 ? "unknown intent \"%s\"" :
		    "%s is the default and takes no patterns", name);
		return;
	}
	if ((e = flat_get(f, "%s.priority", path)) != NULL) {
		lex->priority[in] = (int)strtol(e->val, NULL, 10);
		if (e->type != 'n' || lex->priority[in] < 0 ||
		    lex->priority[in] > 100)
			diag_add(d, f->file, e->path, "must be a number 0..100");
	}
	if ((e = flat_get(f, "%s.negatable", path)) != NULL) {
		lex->negatable[in] = strcmp(e->val, "true") == 0;
		if (e->type != 'b')
			diag_add(d, f->file, e->path, "must be true or false");
	}
	if ((e = flat_get(f, "%s.certain", path)) != NULL) {
		lex->certain[in] = strcmp(e->val, "true") == 0;
		if (e->type != 'b')
			diag_add(d, f->file, e->path, "must be true or false");
	}
	for (i = 0; flat_get(f, "%s.patterns.%zu", path, i) != NULL ||
	    flat_get(f, "%s.patterns.%zu.0", path, i) != NULL; i++) {
		snprintf(path, sizeof path, "intents.%s.patterns.%zu", name, i);
		lex_add_pat(lex, f, path, (enum intent)in, false, d);
		snprintf(path, sizeof path, "intents.%s", name);
	}
	if (i == 0)
		diag_add(d, f->file, path, "no patterns");
	for (i = 0; flat_get(f, "%s.unless.%zu", path, i) != NULL; i++) {
		snprintf(path, sizeof path, "intents.%s.unless.%zu", name, i);
		lex_add_pat(lex, f, path, (enum intent)in, true, d);
		snprintf(path, sizeof path, "intents.%s", name);
	}
	for (i = 0; (e = flat_get(f, "%s.needs.%zu", path, i)) != NULL; i++) {
		if (lex->nneed == LEX_NEEDS || e->type != 's' ||
		    match_compile(&lex->need[lex->nneed], e->val, err,
		    sizeof err) == -1) {
			diag_add(d, f->file, e->path, "%s", lex->nneed ==
			    LEX_NEEDS ? "more \"needs\" than the lexicon "
			    "holds" : e->type != 's' ? "must be a pattern" :
			    err);
			continue;
		}
		lex->need_intent[lex->nneed++] = in;
		lex->has_need[in] = true;
	}
}

/* The intent named at path (absent: -1), or -2 after a diagnostic. */
static int
lex_answer_intent(const struct flat *f, const char *path, struct diag *d)
{
	const struct flat_ent	*e;
	int			 in;

	if ((e = flat_get(f, "%s", path)) == NULL)
		return -1;
	if (e->type != 's' || (in = intent_from_name(e->val)) == -1) {
		diag_add(d, f->file, path, "must name an intent");
		return -2;
	}
	return in;
}

/* Load "answers": max_words and the kinds of question. */
static void
lex_load_answers(struct lexicon *lex, const struct flat *f, struct diag *d)
{
	const struct flat_ent	*e;
	struct lex_answer	*a;
	char			 path[128], err[128];
	size_t			 i, k;

	lex->answer_words = 6;
	if ((e = flat_get(f, "answers.max_words")) != NULL) {
		lex->answer_words = (size_t)strtoul(e->val, NULL, 10);
		if (e->type != 'n' || lex->answer_words > 32)
			diag_add(d, f->file, e->path, "must be 0..32");
	}
	for (i = 0; flat_get(f, "answers.questions.%zu.when.0", i) != NULL;
	    i++) {
		if (i == LEX_ANSWERS) {
			diag_add(d, f->file, "answers.questions", "more than "
			    "%d kinds", LEX_ANSWERS);
			return;
		}
		a = &lex->answer[lex->nanswer++];
		snprintf(path, sizeof path, "answers.questions.%zu.yes", i);
		a->yes = lex_answer_intent(f, path, d);
		snprintf(path, sizeof path, "answers.questions.%zu.no", i);
		a->no = lex_answer_intent(f, path, d);
		if (a->yes == -1 && a->no == -1)
			diag_add(d, f->file, path, "a question needs a yes or "
			    "a no");
		for (k = 0; (e = flat_get(f, "answers.questions.%zu.when.%zu",
		    i, k)) != NULL; k++) {
			if (k == LEX_WHEN || e->type != 's' ||
			    match_compile(&a->when[k], e->val, err,
			    sizeof err) == -1) {
				diag_add(d, f->file, e->path, "invalid or more "
				    "than %d patterns", LEX_WHEN);
				break;
			}
			if ((a->src[k] = strdup(e->val)) == NULL) {
				diag_add(d, f->file, e->path, "out of memory");
				break;
			}
			a->nwhen++;
		}
	}
}

/* Build what matching needs: the abbreviations' hash, the set of the
 * patterns' words, the unless patterns of each intent. */
static int
lex_index(struct lexicon *lex)
{
	const struct pattern	**p;
	size_t			  i, n = 0;
	int			  k;

	if (lex->npats > LEX_PATS_MAX || lex_index_abbr(lex) == -1 ||
	    (p = calloc(lex->npats + 1, sizeof *p)) == NULL)
		return -1;
	if ((lex->unless = calloc(lex->npats + 1, sizeof *lex->unless)) ==
	    NULL) {
		free(p);
		return -1;
	}
	for (i = 0; i < lex->npats; i++)
		p[i] = lex->pats[i].unless ? NULL : &lex->pats[i].pat;
	lex->set = match_set_new(p, lex->npats);
	free(p);
	for (k = 0; k < INTENT__COUNT; k++) {
		lex->unless_at[k] = n;
		for (i = 0; i < lex->npats; i++)
			if (lex->pats[i].unless && lex->pats[i].intent ==
			    (enum intent)k)
				lex->unless[n++] = (uint16_t)i;
	}
	lex->unless_at[INTENT__COUNT] = n;
	return lex->set == NULL ? -1 : 0;
}

struct lexicon *
lexicon_load(const struct flat *f, struct diag *d)
{
	struct lexicon	*lex;
	char		 (*names)[FLAT_NAME_MAX];
	size_t		 before = d->n + d->dropped, n, i;

	if ((lex = calloc(1, sizeof *lex)) == NULL ||
	    (lex->pats = calloc(f->n + 1, sizeof *lex->pats)) == NULL ||
	    (lex->abbr = calloc(f->n + 1, sizeof *lex->abbr)) == NULL ||
	    (names = calloc(INTENT__COUNT * 2, sizeof *names)) == NULL) {
		diag_add(d, f->file, "", "out of memory");
		lexicon_free(lex);
		return NULL;
	}
	lex_load_neg(lex, f, d);
	lex_load_abbr(lex, f, d);
	n = flat_children(f, "intents", names, INTENT__COUNT * 2);
	if (n == 0)
		diag_add(d, f->file, "intents", "missing or empty");
	for (i = 0; i < n && i < INTENT__COUNT * 2; i++)
		lex_load_intent(lex, f, names[i], d);
	free(names);
	lex_load_answers(lex, f, d);
	if (d->n + d->dropped != before) {
		lexicon_free(lex);
		return NULL;
	}
	if (lex_index(lex) == -1) {
		diag_add(d, f->file, "intents", "more than %d patterns or out "
		    "of memory", LEX_PATS_MAX);
		lexicon_free(lex);
		return NULL;
	}
	return lex;
}

void
lexicon_free(struct lexicon *lex)
{
	size_t	i, k;

	if (lex == NULL)
		return;
	for (i = 0; lex->pats != NULL && i < lex->npats; i++)
		free(lex->pats[i].src);
	for (i = 0; i < lex->nanswer; i++)
		for (k = 0; k < lex->answer[i].nwhen; k++)
			free(lex->answer[i].src[k]);
	free(lex->pats);
	match_set_free(lex->set);
	free(lex->unless);
	free(lex->abbr);
	free(lex->abbr_slot);
	free(lex);
}

/* Append one word, expanded through the abbreviations, recording clause. */
static void
norm_append(const struct lexicon *lex, struct norm_text *nt, const char *w,
    size_t len, uint16_t clause)
{
	const struct lex_abbr	*a;
	const char		*s;
	size_t			 n, i;

	s = w;
	n = len;
	if ((a = lex_abbr_find(lex, w, len)) != NULL) {
		s = a->to;
		n = a->tolen;
	}
	if (nt->len + n + 2 > sizeof nt->text)
		return;
	if (nt->len > 0)
		nt->text[nt->len++] = ' ';
	memcpy(nt->text + nt->len, s, n);
	nt->len += n;
	nt->text[nt->len] = '\0';
	for (i = 0; i < n && nt->nwords < INTENT_WORDS; i++)
		if (i == 0 || s[i - 1] == ' ')
			nt->clause[nt->nwords++] = clause;
}

/* The bytes that end a clause. */
static const bool clause_end[256] = {
	[','] = true, [';'] = true, ['.'] = true, ['!'] = true, ['?'] = true,
	['\n'] = true,
};

/* Normalise text clause by clause into nt. */
static void
norm_clauses(const struct lexicon *lex, const char *text, size_t len,
    struct norm_text *nt)
{
	char		 tmp[INTENT_TEXT_MAX];
	const char	*p = text, *end = text + len, *q, *w;
	uint16_t	 clause = 0;
	size_t		 wl;

	nt->len = 0;
	nt->nwords = 0;
	nt->text[0] = '\0';
	while (p < end) {
		for (q = p; q < end && !clause_end[(unsigned char)*q]; q++)
			;
		text_normalize(p, (size_t)(q - p), tmp, sizeof tmp);
		for (w = tmp; *w != '\0'; w += wl + (w[wl] == ' ')) {
			for (wl = 0; w[wl] != ' ' && w[wl] != '\0'; wl++)
				;
			norm_append(lex, nt, w, wl, clause);
		}
		clause++;
		p = q + 1;
	}
	match_text_init(&nt->mt, nt->text);
}

size_t
intent_normalize(const struct lexicon *lex, const char *text, size_t len,
    char *out, size_t outlen)
{
	struct norm_text	*nt;
	size_t			 n;

	if (outlen == 0 || (nt = malloc(sizeof *nt)) == NULL)
		return 0;
	norm_clauses(lex, text, len, nt);
	n = nt->len < outlen ? nt->len : outlen - 1;
	memcpy(out, nt->text, n);
	out[n] = '\0';
	free(nt);
	return n;
}

/* The index of the word at byte off of the normalised text. */
static size_t
word_index(const struct norm_text *nt, size_t off)
{
	size_t	lo = 0, hi = nt->mt.n, mid;

	/* The last word starting at or before off. */
	while (hi - lo > 1) {
		mid = (lo + hi) / 2;
		if (nt->mt.start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Is the match starting at byte off negated by a word before it? */
static bool
match_negated(const struct lexicon *lex, const struct norm_text *nt,
    size_t off)
{
	size_t	idx, k;

	idx = word_index(nt, off);
	if (idx >= INTENT_WORDS)
		return false;
	/* The words of the window before it, in the same clause. */
	for (k = idx > (size_t)lex->window ? idx - (size_t)lex->window : 0;
	    k < idx; k++)
		if (nt->clause[k] == nt->clause[idx] && lex_is_neg(lex,
		    nt->text + nt->mt.start[k], nt->mt.len[k]))
			return true;
	return false;
}

/* Does an unless pattern of in match in a clause spanned by [s, e)? */
static bool
match_vetoed(const struct lexicon *lex, const struct norm_text *nt,
    enum intent in, size_t s, size_t e)
{
	const struct lex_pat	*lp;
	size_t			 i, from, us, ue, w, lo, hi;

	lo = word_index(nt, s);
	hi = word_index(nt, e > s ? e - 1 : s);
	if (hi >= INTENT_WORDS)
		return false;
	for (i = lex->unless_at[in]; i < lex->unless_at[in + 1]; i++) {
		lp = &lex->pats[lex->unless[i]];
		/* Every occurrence, resuming at the word after each start. */
		for (from = 0; from < nt->mt.n && match_find_text(&lp->pat,
		    &nt->mt, from, &us, &ue); ) {
			w = word_index(nt, us);
			if (w < INTENT_WORDS && nt->clause[w] >=
			    nt->clause[lo] && nt->clause[w] <= nt->clause[hi])
				return true;
			from = w + 1;
		}
	}
	return false;
}

/* Does pattern lp (not an unless one) match nt and count (not negated,
 * not vetoed)? */
static bool
pat_counts(const struct lexicon *lex, const struct norm_text *nt,
    const struct lex_pat *lp)
{
	size_t	s, e;

	if (!match_find_text(&lp->pat, &nt->mt, 0, &s, &e))
		return false;
	if (lex->negatable[lp->intent] &&
	    match_negated(lex, nt, s))
		return false;
	return !match_vetoed(lex, nt, lp->intent, s, e);
}

/* Append a pattern's text to the evidence, "; "-separated, bounded. */
static void
evidence_add(char *ev, const char *src)
{
	size_t	n = strlen(ev);

	snprintf(ev + n, INTENT_EVIDENCE_MAX - n, "%s%s", n ? "; " : "", src);
}

/* Pick the winner from the scores: highest, ties to priority. */
static enum intent
intent_pick(const struct lexicon *lex, const double *score, double *second)
{
	int	i, best = INTENT_NEUTRO;
	double	bs = 0;

	*second = 0;
	for (i = 0; i < INTENT__COUNT; i++) {
		if (score[i] <= 0)
			continue;
		if (score[i] > bs + 1e-9 || (score[i] > bs - 1e-9 &&
		    lex->priority[i] > lex->priority[best])) {
			*second = bs;
			bs = score[i];
			best = i;
		} else if (score[i] > *second)
			*second = score[i];
	}
	return (enum intent)best;
}

void
lexicon_set_model(struct lexicon *lex, const struct model *m)
{
	lex->model = m;
}

const char *
intent_source_name(enum intent_source s)
{
	switch (s) {
	case INTENT_SRC_RULES:
		return "rules";
	case INTENT_SRC_MODEL:
		return "model";
	default:
		return "both";
	}
}

/* Score every intent by the rules (see the file comment). */
static void
rules_score(const struct lexicon *lex, struct norm_text *nt, double *score)
{
	const struct lex_pat	*lp;
	double			 best[INTENT__COUNT];
	uint64_t		 cand[LEX_PATS_MAX / 64], bits;
	size_t			 i, wi, hits[INTENT__COUNT];
	int			 k;

	for (k = 0; k < INTENT__COUNT; k++) {
		best[k] = 0;
		hits[k] = 0;
	}
	nt->nmatched = 0;
	memset(cand, 0, (lex->npats + 63) / 64 * sizeof cand[0]);
	match_set_candidates(lex->set, &nt->mt, cand);
	/* Only the candidates, in pattern order. */
	for (wi = 0; wi < (lex->npats + 63) / 64; wi++)
	    for (bits = cand[wi]; bits != 0; bits &= bits - 1) {
		i = wi * 64 + (size_t)__builtin_ctzll(bits);
		lp = &lex->pats[i];
		if (!pat_counts(lex, nt, lp))
			continue;
		if (lp->weight > best[lp->intent])
			best[lp->intent] = lp->weight;
		hits[lp->intent]++;
		if (nt->nmatched < INTENT_MATCHED)
			nt->matched[nt->nmatched++] = (uint16_t)i;
	    }
	for (k = 0; k < INTENT__COUNT; k++) {
		score[k] = hits[k] == 0 ? 0 :
		    best[k] + INTENT_EXTRA * (double)(hits[k] - 1);
		if (score[k] > 1)
			score[k] = 1;
	}
}

/* The model's features: the normalised message, the rules' verdicts and
 * the context (Julia's previous message). */
static void
feats_build(const struct lexicon *lex, const struct norm_text *nt,
    const double *score, enum intent rule, const char *ctx, size_t ctxlen,
    struct feats *f)
{
	char		 cbuf[512];
	const char	*w, *name;
	size_t		 wl, i, scope = 0;
	int		 k;
	char		 pol;

	feats_text(f, nt->text);
	/* Words in a negation's scope are features of their own ("nao ..
	 * interesse" is not interest). */
	for (i = 0; i < nt->mt.n; i++) {
		w = nt->text + nt->mt.start[i];
		wl = nt->mt.len[i];
		if (lex_is_neg(lex, w, wl)) {
			scope = 3;
			continue;
		}
		if (scope > 0) {
			feats_add(f, 'n', w, wl);
			scope--;
		}
	}
	name = intent_name(rule);
	feats_add(f, 'r', name, strlen(name));
	for (k = 0; k < INTENT__COUNT; k++)
		if (score[k] > 0) {
			name = intent_name(k);
			feats_add(f, 'h', name, strlen(name));
		}
	if (ctx == NULL || ctxlen == 0) {
		feats_add(f, 'x', "<none>", 6);
		return;
	}
	if (memchr(ctx, '?', ctxlen) != NULL)
		feats_add(f, 'q', "?", 1);
	text_normalize(ctx, ctxlen, cbuf, sizeof cbuf);
	/* A yes or a no means what Julia asked: its polarity joined with
	 * each of her words ("s" after "quer que eu pare?" is an opt-out). */
	pol = score[INTENT_CONFIRMACAO] > 0 ? 'Y' :
	    score[INTENT_RECUSA] > 0 ? 'N' : 0;
	for (w = cbuf; *w != '\0'; w += wl + (w[wl] == ' ')) {
		if ((wl = strcspn(w, " ")) == 0)
			break;
		feats_add(f, 'x', w, wl);
		if (pol != 0)
			feats_add(f, pol, w, wl);
	}
}

void
intent_features(const struct lexicon *lex, const char *text, size_t len,
    const char *ctx, size_t ctxlen, struct feats *f)
{
	struct norm_text	nt;
	double			score[INTENT__COUNT], second;

	norm_clauses(lex, text, len, &nt);
	rules_score(lex, &nt, score);
	feats_build(lex, &nt, score, intent_pick(lex, score, &second), ctx,
	    ctxlen, f);
}

/* The rules' evidence: the patterns of intent in that counted. */
static void
evidence_rules(const struct lexicon *lex, const struct norm_text *nt,
    enum intent in, char *ev)
{
	const struct lex_pat	*lp;
	size_t			 i;

	for (i = 0; i < nt->nmatched; i++) {
		lp = &lex->pats[nt->matched[i]];
		if (lp->intent == in)
			evidence_add(ev, lp->src);
	}
}

/* The model's evidence: its top features for the winner against the
 * runner-up (f holds their names). */
static void
evidence_model(const struct lexicon *lex, const struct feats *f,
    const struct intent_result *r, char *ev)
{
	size_t	idx[5], n, i, off;
	double	c[5];

	n = model_top(lex->model, f, r->intent, r->runner_up, idx, c, 5);
	off = strlen(ev);
	off += (size_t)snprintf(ev + off, off < INTENT_EVIDENCE_MAX ?
	    INTENT_EVIDENCE_MAX - off : 0, "%smodel:", off ? " | " : "");
	for (i = 0; i < n && off < INTENT_EVIDENCE_MAX; i++)
		off += (size_t)snprintf(ev + off, INTENT_EVIDENCE_MAX - off,
		    " %s %+.2f", f->name[idx[i]], c[i]);
}

/* The rules-only result (no model attached). */
static void
decide_rules(const struct lexicon *lex, const double *score,
    struct intent_result *out)
{
	double	second;
	int	k;

	out->intent = intent_pick(lex, score, &second);
	out->rule_intent = out->intent;
	out->model_intent = INTENT_NEUTRO;
	out->model_confidence = 0;
	out->source = INTENT_SRC_RULES;
	out->disagree = false;
	out->runner_up = INTENT_NEUTRO;
	out->runner_up_score = 0;
	for (k = 0; k < INTENT__COUNT; k++)
		if (k != (int)out->intent && score[k] > out->runner_up_score) {
			out->runner_up = (enum intent)k;
			out->runner_up_score = score[k];
		}
	if (out->intent == INTENT_NEUTRO) {
		out->confidence = 0.5;
		return;
	}
	out->confidence = score[out->intent] - 0.3 * second;
	if (out->confidence < 0.05)
		out->confidence = 0.05;
}

/* The best and second-best labels of prob, honouring the thresholds. */
static void
model_pick(const struct model *m, const double *prob, int *best, int *next)
{
	int	k, b = -1, s = -1;

	for (k = 0; k < INTENT__COUNT; k++) {
		if (b == -1 || prob[k] > prob[b]) {
			s = b;
			b = k;
		} else if (s == -1 || prob[k] > prob[s])
			s = k;
	}
	if (model_threshold(m, (size_t)b) > 0 &&
	    prob[b] < model_threshold(m, (size_t)b)) {
		k = b;
		b = s;
		s = k;
	}
	*best = b;
	*next = s;
}

/* What a short yes or no means after the last question of Julia's
 * message (ctx): the first kind of question whose pattern matches it
 * decides. Returns the intent and its pattern in *why, or -1. */
static int
answer_of(const struct lexicon *lex, const struct norm_text *nt,
    const double *score, const char *ctx, size_t ctxlen, const char **why)
{
	struct norm_text	 q;
	const struct lex_answer	*a;
	const char		*end, *p;
	size_t			 i, k, s, e;
	bool			 yes;

	if (lex->nanswer == 0 || ctx == NULL || nt->mt.n == 0 ||
	    nt->mt.n > lex->answer_words)
		return -1;
	for (end = ctx + ctxlen; end > ctx && end[-1] != '?'; end--)
		;
	if (end-- == ctx)
		return -1;
	if (score[INTENT_CONFIRMACAO] > 0 &&
	    score[INTENT_CONFIRMACAO] >= score[INTENT_RECUSA])
		yes = true;
	else if (score[INTENT_RECUSA] > 0)
		yes = false;
	else
		return -1;
	for (p = end; p > ctx && strchr(".!?\n", p[-1]) == NULL; p--)
		;
	norm_clauses(lex, p, (size_t)(end - p), &q);
	for (i = 0; i < lex->nanswer; i++) {
		a = &lex->answer[i];
		for (k = 0; k < a->nwhen; k++)
			if (match_find_text(&a->when[k], &q.mt, 0, &s, &e)) {
				*why = a->src[k];
				return yes ? a->yes : a->no;
			}
	}
	return -1;
}

/* May the model alone pick in? Only when in has no "needs", or one of
 * them matches the message or Julia's message before it. */
static bool
needs_met(const struct lexicon *lex, enum intent in,
    const struct norm_text *nt, const char *ctx, size_t ctxlen)
{
	struct norm_text	q;
	size_t			i, s, e;

	if (!lex->has_need[in])
		return true;
	for (i = 0; i < lex->nneed; i++)
		if (lex->need_intent[i] == (int)in &&
		    match_find_text(&lex->need[i], &nt->mt, 0, &s, &e))
			return true;
	if (ctx == NULL || ctxlen == 0)
		return false;
	norm_clauses(lex, ctx, ctxlen, &q);
	for (i = 0; i < lex->nneed; i++)
		if (lex->need_intent[i] == (int)in &&
		    match_find_text(&lex->need[i], &q.mt, 0, &s, &e))
			return true;
	return false;
}

/* A short answer to one of the questions of "answers" means what it
 * answers, whatever the rules and the model read in it alone. */
static void
answer_override(const struct lexicon *lex, const struct norm_text *nt,
    const double *score, const char *ctx, size_t ctxlen,
    struct intent_result *out)
{
	const char	*why;
	int		 in;

	if ((in = answer_of(lex, nt, score, ctx, ctxlen, &why)) < 0 ||
	    in == (int)out->intent)
		return;
	out->runner_up = out->intent;
	out->runner_up_score = out->confidence;
	out->intent = (enum intent)in;
	out->source = INTENT_SRC_RULES;
	out->confidence = 0.9;
	snprintf(out->evidence, INTENT_EVIDENCE_MAX, "answer to: %s", why);
}

/* Classify; with names, the model's top features go to the evidence. */
static void
detect(const struct lexicon *lex, const char *text, size_t len,
    const char *ctx, size_t ctxlen, char (*names)[FEAT_NAME],
    struct intent_result *out)
{
	struct norm_text	nt;
	struct feats		f;
	double			score[INTENT__COUNT], prob[MODEL_MAX_LABELS];
	int			best, next, k;

	norm_clauses(lex, text, len, &nt);
	rules_score(lex, &nt, score);
	decide_rules(lex, score, out);
	out->evidence[0] = '\0';
	if (lex->model == NULL) {
		if (out->intent != INTENT_NEUTRO)
			evidence_rules(lex, &nt, out->intent, out->evidence);
		answer_override(lex, &nt, score, ctx, ctxlen, out);
		return;
	}
	feats_init(&f, names);
	feats_build(lex, &nt, score, out->rule_intent, ctx, ctxlen, &f);
	model_probs(lex->model, &f, (1u << INTENT__COUNT) - 1, prob);
	model_pick(lex->model, prob, &best, &next);
	out->model_intent = (enum intent)best;
	out->model_confidence = prob[best];
	out->disagree = out->rule_intent != out->model_intent;
	if (lex->certain[out->rule_intent] &&
	    score[out->rule_intent] >= 1 - 1e-9 && out->disagree) {
		/* A certain rule keeps precedence over the model. */
		out->source = INTENT_SRC_RULES;
		out->confidence = prob[out->rule_intent] > 0.9 ?
		    prob[out->rule_intent] : 0.9;
		out->runner_up = out->model_intent;
		out->runner_up_score = prob[best];
	} else {
		out->intent = out->model_intent;
		out->source = out->disagree ? INTENT_SRC_MODEL :
		    INTENT_SRC_BOTH;
		out->confidence = prob[best];
		out->runner_up = (enum intent)next;
		out->runner_up_score = prob[next];
	}
	/* No rule of its intent and none of the words it needs (an opt-out
	 * about nothing like stopping): the runner-up stands. */
	if (out->source == INTENT_SRC_MODEL && score[out->intent] <= 0 &&
	    !needs_met(lex, out->intent, &nt, ctx, ctxlen)) {
		k = out->intent;
		out->intent = out->runner_up;
		out->confidence = out->runner_up_score;
		out->runner_up = (enum intent)k;
		out->runner_up_score = prob[k];
	}
	if (out->runner_up == out->intent)
		for (k = 0, out->runner_up_score = -1; k < INTENT__COUNT; k++)
			if (k != (int)out->intent &&
			    prob[k] > out->runner_up_score) {
				out->runner_up = (enum intent)k;
				out->runner_up_score = prob[k];
			}
	if (out->source != INTENT_SRC_MODEL && out->intent != INTENT_NEUTRO)
		evidence_rules(lex, &nt, out->intent, out->evidence);
	if (out->source != INTENT_SRC_RULES && names != NULL)
		evidence_model(lex, &f, out, out->evidence);
	else if (out->source == INTENT_SRC_MODEL)
		snprintf(out->evidence, INTENT_EVIDENCE_MAX, "model");
	answer_override(lex, &nt, score, ctx, ctxlen, out);
}

void
intent_detect_ctx(const struct lexicon *lex, const char *text, size_t len,
    const char *ctx, size_t ctxlen, struct intent_result *out)
{
	detect(lex, text, len, ctx, ctxlen, NULL, out);
}

int
intent_explain(const struct lexicon *lex, const char *text, size_t len,
    const char *ctx, size_t ctxlen, struct intent_result *out)
{
	char	(*names)[FEAT_NAME];

	if ((names = calloc(FEATS_MAX, sizeof *names)) == NULL) {
		detect(lex, text, len, ctx, ctxlen, NULL, out);
		return -1;
	}
	detect(lex, text, len, ctx, ctxlen, names, out);
	free(names);
	return 0;
}


void
intent_detect(const struct lexicon *lex, const char *text, size_t len,
    struct intent_result *out)
{
	intent_detect_ctx(lex, text, len, NULL, 0, out);
}
