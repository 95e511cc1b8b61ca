/* rh-wire-doc: docs/protocol.md's per-message field tables, printed from
 * the one declaration of the layouts (wire/table.h), so that the document
 * cannot drift from the bytes on the wire.
 *
 * usage: rh-wire-doc                 print every table
 *        rh-wire-doc --check FILE    fail, naming the message, where a
 *                                    table in FILE differs or is missing
 *        rh-wire-doc --write FILE    rewrite FILE's tables in place
 *
 * In FILE a table stands between "<!-- rh-wire-doc NAME -->" and
 * "<!-- end rh-wire-doc -->" lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/table.h"

#define BEGIN "<!-- rh-wire-doc "
#define END "<!-- end rh-wire-doc -->\n"

static const char *type_of(uint8_t kind)
{
	switch (WIDTH(kind)) {
	case 1:
		return "u8";
	case 2:
		return "u16";
	case 4:
		return "u32";
	default:
		return "u64";
	}
}

/* The fixed field whose host member is at `off`: an array's count. */
static const field *count_field(const layout *l, uint16_t off)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->f[i].kind != Z32 && l->f[i].off == off)
			return &l->f[i];
	return NULL;
}

/* "noun: `u32 region, u32 ident`", or "noun: `u32`" for a scalar. */
static void put_elem(FILE *o, const array *a)
{
	fprintf(o, "%s: `", a->noun);
	for (unsigned i = 0; i < a->e->n; i++) {
		const field *f = &a->e->f[i];
		fprintf(o, "%s%s%s%s", i ? ", " : "", type_of(f->kind), f->name[0] ? " " : "",
		        f->name);
	}
	fputc('`', o);
}

static void put_table(FILE *o, const layout *l)
{
	fprintf(o, "| offset | size | field |\n| --- | --- | --- |\n");
	size_t off = 0, fixed = fixed_size(l->f, l->n);
	for (unsigned i = 0; i < l->n; i++) {
		const field *f = &l->f[i];
		fprintf(o, "| %zu | %u | `%s`", off, WIDTH(f->kind), f->name);
		if (f->doc)
			fprintf(o, ": %s", f->doc);
		/* A lone array's count is bounded by the largest message
		 * (unless its meaning says more). */
		if (!f->doc && l->n_arrays == 1 && l->a[0].count2 == NO_COUNT &&
		    f->off == l->a[0].count && f->kind != Z32) {
			size_t most = (RH_PROTO_MAX - RH_PROTO_HDR - fixed) / elem_size(l->a[0].e);
			if (most >= 1000)
				fprintf(o, ", at most %zu %03zu", most / 1000, most % 1000);
			else
				fprintf(o, ", at most %zu", most);
		}
		fprintf(o, " |\n");
		off += WIDTH(f->kind);
	}
	if (l->text)
		fprintf(o, "| %zu | 4 | `n`: bytes of text, fewer than %zu |\n| %zu | n | text |\n",
		        off, sizeof(((rh_msg_error *)0)->text), off + 4);
	char at[256];
	snprintf(at, sizeof at, "%zu", off);
	for (unsigned k = 0; k < l->n_arrays; k++) {
		const array *a = &l->a[k];
		const field *c = count_field(l, a->count), *c2 = NULL;
		size_t es = elem_size(a->e);
		char size[128];
		if (a->count2 != NO_COUNT) {
			c2 = count_field(l, a->count2);
			snprintf(size, sizeof size, "%zu × (%s + %s)", es, c->name, c2->name);
		} else {
			snprintf(size, sizeof size, "%zu × %s", es, c->name);
		}
		fprintf(o, "| %s | %s | ", at, size);
		put_elem(o, a);
		fprintf(o, " |\n");
		size_t len = strlen(at);
		snprintf(at + len, sizeof at - len, " + %zu %s", es, c->name);
	}
}

static const layout *by_name(const char *name, size_t len)
{
	for (unsigned t = 1; t <= RH_MSG_TYPE_MAX; t++)
		if (strlen(layouts[t].name) == len && !strncmp(layouts[t].name, name, len))
			return &layouts[t];
	return NULL;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = 0;
	*len = (size_t)n;
	return buf;
}

/* Walks FILE, copying it to `out` with every table replaced by the
 * generated one; counts the tables that differed and names them. */
static int rewrite(const char *doc, FILE *out, int quiet, int *differ, int *found)
{
	const char *p = doc;
	while (*p) {
		const char *b = strstr(p, BEGIN);
		if (!b) {
			fputs(p, out);
			break;
		}
		const char *name = b + strlen(BEGIN), *ne = strstr(name, " -->\n");
		const char *body = ne ? ne + 5 : NULL, *e = body ? strstr(body, END) : NULL;
		const layout *l = ne ? by_name(name, (size_t)(ne - name)) : NULL;
		if (!l || !e) {
			fprintf(stderr,
			        "rh-wire-doc: a table marker names no message, or has no end: "
			        "%.40s\n",
			        b);
			return -1;
		}
		fwrite(p, 1, (size_t)(body - p), out);
		char *gen = NULL;
		size_t glen = 0;
		FILE *g = open_memstream(&gen, &glen);
		put_table(g, l);
		fclose(g);
		if (glen != (size_t)(e - body) || memcmp(gen, body, glen)) {
			if (!quiet)
				fprintf(stderr,
				        "rh-wire-doc: the table of %s differs from wire/table.h\n",
				        l->name);
			(*differ)++;
		}
		found[l - layouts] = 1;
		fputs(gen, out);
		free(gen);
		fputs(END, out);
		p = e + strlen(END);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 1) {
		for (unsigned t = 1; t <= RH_MSG_TYPE_MAX; t++) {
			printf(BEGIN "%s -->\n", layouts[t].name);
			put_table(stdout, &layouts[t]);
			printf(END "\n");
		}
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "--check") && strcmp(argv[1], "--write"))) {
		fprintf(stderr, "usage: %s [--check FILE | --write FILE]\n", argv[0]);
		return 2;
	}
	size_t len;
	char *doc = slurp(argv[2], &len);
	if (!doc) {
		perror(argv[2]);
		return 2;
	}
	char *out = NULL;
	size_t olen = 0;
	FILE *o = open_memstream(&out, &olen);
	int differ = 0, found[RH_MSG_TYPE_MAX + 1] = {0};
	if (rewrite(doc, o, !strcmp(argv[1], "--write"), &differ, found) < 0)
		return 1;
	fclose(o);
	/* Every message with a payload has its table. */
	for (unsigned t = 1; t <= RH_MSG_TYPE_MAX; t++)
		if (!found[t] && (layouts[t].n || layouts[t].n_arrays)) {
			fprintf(stderr, "rh-wire-doc: %s has no table in %s\n", layouts[t].name,
			        argv[2]);
			differ++;
		}
	if (!strcmp(argv[1], "--write")) {
		FILE *f = fopen(argv[2], "wb");
		if (!f || fwrite(out, 1, olen, f) != olen || fclose(f)) {
			perror(argv[2]);
			return 1;
		}
		return 0;
	}
	if (differ)
		fprintf(stderr, "rh-wire-doc: run rh-wire-doc --write %s to regenerate\n", argv[2]);
	free(out);
	free(doc);
	return differ ? 1 : 0;
}
