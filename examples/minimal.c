/* A complete, minimal embedding of rheap: the example of docs/embedding.md.
 *
 * It registers two types (a cons cell and a string), attaches the main
 * thread, builds a list of strings reachable from a shadow-stack frame and a
 * global, lets collections happen, and checks every element afterwards.
 * Build: cc minimal.c $(pkg-config --cflags --libs rheap)
 */
#include <rheap/rheap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The VM's object layouts: rheap's 8-byte header comes first. */
typedef struct cell {
	uint64_t header;
	void *car;
	struct cell *cdr;
} cell;

typedef struct string {
	uint64_t header;
	uint64_t length; /* rheap's length word for array layouts */
	char bytes[];
} string;

static rh_type_id CELL, STRING;

static int register_types(rh_heap *h, rh_error *err)
{
	static const uint32_t cell_ptrs[] = {offsetof(cell, car), offsetof(cell, cdr)};
	rh_type_desc cell_desc = {.name = "cell",
	                          .layout = RH_LAYOUT_FIXED,
	                          .size = sizeof(cell),
	                          .ptr_offsets = cell_ptrs,
	                          .n_ptrs = 2};
	rh_type_desc string_desc = {.name = "string",
	                            .layout = RH_LAYOUT_BYTE_ARRAY,
	                            .size = offsetof(string, bytes),
	                            .elem_size = 1};
	CELL = rh_type_register(h, &cell_desc, err);
	STRING = CELL ? rh_type_register(h, &string_desc, err) : 0;
	return STRING ? 0 : -1;
}

/* Allocation may move objects: everything live across it is in a frame. */
static cell *push_string(rh_mutator *m, cell *list, const char *text)
{
	void *slots[2] = {list, NULL};
	rh_frame frame;
	rh_push_frame(m, &frame, slots, 2);
	size_t n = strlen(text);
	string *s = rh_alloc_array(m, STRING, n);
	if (!s) {
		rh_pop_frame(m, &frame);
		return NULL;
	}
	memcpy(s->bytes, text, n);
	slots[1] = s;
	cell *c = rh_alloc(m, CELL);
	if (c) {
		rh_write_ref(m, &c->car, slots[1]);
		rh_write_ref(m, (void **)&c->cdr, slots[0]);
	}
	rh_pop_frame(m, &frame);
	return c;
}

static void *global_list; /* a root outside any frame */

int main(void)
{
	rh_config cfg;
	rh_config_default(&cfg);
	cfg.heap_size = 16u << 20; /* small, so that collections happen */
	rh_error err;
	rh_heap *h = rh_heap_open(&cfg, &err);
	if (!h || register_types(h, &err) < 0) {
		fprintf(stderr, "rheap: %s\n", err.msg);
		return 1;
	}
	rh_global_add(h, &global_list);
	rh_mutator *m = rh_mutator_attach(h, &err);
	if (!m) {
		fprintf(stderr, "rheap: %s\n", err.msg);
		return 1;
	}

	/* Keep 1000 strings alive while allocating ~10 MB of garbage. */
	char buf[32];
	for (int i = 0; i < 200000; i++) {
		snprintf(buf, sizeof buf, "item-%d", i);
		cell *l = push_string(m, i % 200 == 0 ? global_list : NULL, buf);
		if (!l) {
			fprintf(stderr, "rheap: %s\n", rh_last_error()->msg);
			return 1;
		}
		if (i % 200 == 0)
			global_list = l; /* a global is not a heap slot: plain store */
		rh_safepoint(m);
	}

	int n = 0, bad = 0;
	for (cell *c = global_list; c; c = c->cdr, n++) {
		string *s = c->car;
		snprintf(buf, sizeof buf, "item-%d", (999 - n) * 200);
		bad += s->length != strlen(buf) || memcmp(s->bytes, buf, s->length) != 0;
	}
	rh_stats st;
	rh_stats_get(h, &st);
	printf("%d strings kept, %d wrong; %llu collections, %llu MiB copied, max pause %.2f ms\n",
	       n, bad, (unsigned long long)(st.collections + st.full_collections),
	       (unsigned long long)(st.bytes_copied >> 20), st.max_pause_ns / 1e6);
	rh_mutator_detach(m);
	rh_heap_close(h);
	return n == 1000 && bad == 0 && st.collections > 0 ? 0 : 1;
}
