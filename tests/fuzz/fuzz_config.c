/* libFuzzer harness for the config parser (config/config.c).
 *
 * The input is the JSON text. Beyond "never crash, never leak", an accepted
 * config must pass rh_config_check() unchanged, and its JSON form must parse
 * back to the same config: the tools print configs with rh_config_to_json()
 * and hand them to other nodes, so a config that does not survive the trip
 * would split a cluster's view of its own heap.
 *
 * A relative "secret_file" resolves against a private temporary directory
 * holding one throw-away secret file, "rheap.secret" (the name the shipped
 * examples use), so inputs with servers can reach the accepting path.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "rheap/rheap-config.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base_dir[] = "/tmp/rheap-fuzz-config-XXXXXX";
static char secret_path[sizeof base_dir + 16];

static void remove_base_dir(void)
{
	unlink(secret_path);
	rmdir(base_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	if (!mkdtemp(base_dir))
		rh_panic("fuzz_config: cannot create %s", base_dir);
	snprintf(secret_path, sizeof secret_path, "%s/rheap.secret", base_dir);
	FILE *f = fopen(secret_path, "w");
	if (!f || chmod(secret_path, 0600) != 0)
		rh_panic("fuzz_config: cannot create %s", secret_path);
	fputs("fuzzing-only-secret-0123456789\n", f);
	fclose(f);
	atexit(remove_base_dir);
	return 0;
}

/* Everything but the secret bytes, which are re-read from secret_file on
 * every parse (and a file the input names may change between reads). */
static const char *differs(const rh_config *a, const rh_config *b)
{
	if (a->heap_base != b->heap_base)
		return "heap.base";
	if (a->heap_size != b->heap_size)
		return "heap.size";
	if (a->region_size != b->region_size)
		return "heap.region_size";
	if (a->cache_fraction != b->cache_fraction)
		return "cache.fraction";
	if (a->faults != b->faults)
		return "cache.faults";
	if (a->fault_spin_us != b->fault_spin_us)
		return "cache.fault_spin_us";
	if (a->readahead != b->readahead)
		return "cache.readahead";
	if (a->readahead_adaptive != b->readahead_adaptive)
		return "cache.readahead_adaptive";
	if (a->checksum != b->checksum)
		return "cache.checksum";
	if (strcmp(a->provider, b->provider) != 0)
		return "transport.provider";
	if (a->timeout_ms != b->timeout_ms)
		return "transport.timeout_ms";
	if (a->n_servers != b->n_servers)
		return "servers (count)";
	for (size_t i = 0; i < a->n_servers; i++) {
		const rh_server_config *x = &a->servers[i], *y = &b->servers[i];
		if (strcmp(x->host, y->host) != 0 || x->port != y->port ||
		    x->partition_size != y->partition_size)
			return "servers[i]";
	}
	if (a->pause_budget_us != b->pause_budget_us)
		return "gc.pause_budget_ms";
	if (a->order != b->order)
		return "gc.order";
	if (a->young_fraction != b->young_fraction)
		return "gc.young_fraction";
	if (a->full_threshold != b->full_threshold)
		return "gc.full_threshold";
	if (a->offload != b->offload || a->reorder != b->reorder || a->verify != b->verify ||
	    a->preclean != b->preclean || a->pretouch != b->pretouch)
		return "gc booleans";
	if (a->tracer_threads != b->tracer_threads)
		return "gc.tracer_threads";
	if (a->copy_threads != b->copy_threads)
		return "gc.copy_threads";
	if (strcmp(a->secret_file, b->secret_file) != 0)
		return "secret_file";
	return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;

	rh_config cfg, again, back;
	rh_error err = {0};
	int rc = rh_config_parse(text, base_dir, &cfg, &err);
	free(text);
	if (rc != RH_OK) {
		if (rc != RH_ECONFIG || err.code != rc || strncmp(err.msg, "config: ", 8) != 0)
			rh_panic("fuzz_config: rejected with status %d and message \"%s\"", rc,
			         err.msg);
		return 0;
	}

	again = cfg;
	if ((rc = rh_config_check(&again, &err)) != RH_OK)
		rh_panic("fuzz_config: parsed config fails rh_config_check: %s", err.msg);
	const char *what = differs(&cfg, &again);
	if (what)
		rh_panic("fuzz_config: rh_config_check changed an accepted config: %s", what);

	char *json = rh_config_to_json(&cfg);
	if (!json)
		rh_panic("fuzz_config: rh_config_to_json failed on an accepted config");
	if ((rc = rh_config_parse(json, base_dir, &back, &err)) != RH_OK)
		rh_panic("fuzz_config: the JSON of an accepted config is rejected: %s\n%s", err.msg,
		         json);
	if ((what = differs(&cfg, &back)))
		rh_panic("fuzz_config: %s differs after a JSON round trip:\n%s", what, json);
	free(json);
	return 0;
}
