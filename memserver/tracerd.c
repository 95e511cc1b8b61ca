/* rheap-tracerd: hosts one partition of one heap on a memory server, for
 * one CPU server after another (or one, with --once). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/common.h"
#include "memserver/server.h"

static void usage(FILE *f)
{
	fputs("usage: rheap-tracerd --config FILE (--index N | --spare K) [options]\n"
	      "\n"
	      "Hosts partition N of the heap described by FILE (the same JSON config as the\n"
	      "CPU server) and serves one CPU server after another: when one leaves or is\n"
	      "lost, it releases all its memory and waits for the next.\n"
	      "\n"
	      "  -c, --config FILE      heap configuration (required)\n"
	      "  -i, --index N          which server of the config this is\n"
	      "  -S, --spare K          be spare K of redundancy.spares instead: host the\n"
	      "                         partition of whichever server the CPU server replaces\n"
	      "  -l, --listen HOST:PORT listen here instead of the config's host and port\n"
	      "  -f, --foreground       do not detach from the terminal\n"
	      "  -s, --status FILE      keep a JSON status file (state, bytes held, heartbeat)\n"
	      "  -w, --wait-ms MS       exit if no CPU server connects within MS of the start\n"
	      "                         or of the last session's end (default: forever)\n"
	      "  -1, --once             exit after the first session (status 0 if the CPU\n"
	      "                         server said BYE, 1 if it was lost)\n"
	      "  -m, --memory-limit SIZE\n"
	      "                         hold at most SIZE of partition memory (e.g. 512MiB);\n"
	      "                         past it the tracer refuses the CPU server, saying why\n"
	      "  -H, --max-handshakes N connections in the handshake at once (default 8; verbs 1)\n"
	      "  -L, --log-level LEVEL  error, warn, info or debug (default warn)\n"
	      "  -h, --help             this text\n"
	      "  -V, --version          version\n",
	      f);
}

/* "512MiB", "2 GiB", "65536"; 0 if it is not a size. */
static uint64_t parse_size(const char *t)
{
	static const struct {
		const char *name;
		unsigned shift;
	} units[] = {{"", 0},     {"B", 0},  {"K", 10},   {"KiB", 10}, {"M", 20},
	             {"MiB", 20}, {"G", 30}, {"GiB", 30}, {"T", 40},   {"TiB", 40}};
	char *end;
	errno = 0;
	unsigned long long v = strtoull(t, &end, 10);
	if (end == t || errno || *t == '-')
		return 0;
	while (*end == ' ')
		end++;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(end, units[i].name))
			return v > (UINT64_MAX >> units[i].shift) ? 0
			                                          : (uint64_t)v << units[i].shift;
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	rh_server_request_stop();
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"config", required_argument, NULL, 'c'},
	                                     {"index", required_argument, NULL, 'i'},
	                                     {"spare", required_argument, NULL, 'S'},
	                                     {"listen", required_argument, NULL, 'l'},
	                                     {"foreground", no_argument, NULL, 'f'},
	                                     {"status", required_argument, NULL, 's'},
	                                     {"wait-ms", required_argument, NULL, 'w'},
	                                     {"once", no_argument, NULL, '1'},
	                                     {"log-level", required_argument, NULL, 'L'},
	                                     {"memory-limit", required_argument, NULL, 'm'},
	                                     {"max-handshakes", required_argument, NULL, 'H'},
	                                     {"help", no_argument, NULL, 'h'},
	                                     {"version", no_argument, NULL, 'V'},
	                                     {NULL, 0, NULL, 0}};
	const char *config = NULL, *listen = NULL, *status = NULL;
	long index = -1, spare = -1, wait_ms = -1, handshakes = 0;
	uint64_t memory_limit = 0;
	int foreground = 0, once = 0;
	for (int c; (c = getopt_long(argc, argv, "c:i:S:l:fs:w:1m:H:L:hV", opts, NULL)) != -1;) {
		char *end;
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'i':
			index = strtol(optarg, &end, 10);
			if (*end || index < 0 || index >= RH_MAX_SERVERS) {
				fprintf(stderr, "rheap-tracerd: --index: '%s' is not 0..%d\n",
				        optarg, RH_MAX_SERVERS - 1);
				return 2;
			}
			break;
		case 'S':
			spare = strtol(optarg, &end, 10);
			if (*end || spare < 0 || spare >= RH_MAX_SPARES) {
				fprintf(stderr, "rheap-tracerd: --spare: '%s' is not 0..%d\n",
				        optarg, RH_MAX_SPARES - 1);
				return 2;
			}
			break;
		case 'l':
			listen = optarg;
			break;
		case 'f':
			foreground = 1;
			break;
		case '1':
			once = 1;
			break;
		case 's':
			status = optarg;
			break;
		case 'w':
			wait_ms = strtol(optarg, &end, 10);
			if (*end || wait_ms < 0) {
				fprintf(stderr, "rheap-tracerd: --wait-ms: '%s' is not a number\n",
				        optarg);
				return 2;
			}
			break;
		case 'm':
			memory_limit = parse_size(optarg);
			if (!memory_limit) {
				fprintf(stderr,
				        "rheap-tracerd: --memory-limit: '%s' is not a size like "
				        "512MiB\n",
				        optarg);
				return 2;
			}
			break;
		case 'H':
			handshakes = strtol(optarg, &end, 10);
			if (*end || handshakes < 1 || handshakes > RH_SERVER_MAX_HANDSHAKES) {
				fprintf(stderr,
				        "rheap-tracerd: --max-handshakes: '%s' is not 1..%d\n",
				        optarg, RH_SERVER_MAX_HANDSHAKES);
				return 2;
			}
			break;
		case 'L': {
			int l = rh_log_level_parse(optarg);
			if (l < 0) {
				fprintf(stderr,
				        "rheap-tracerd: --log-level: '%s' is not error, warn, info "
				        "or debug\n",
				        optarg);
				return 2;
			}
			rh_log_set_level(l);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rheap-tracerd %s\n", RH_VERSION_STRING);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!config || (index < 0) == (spare < 0) || optind != argc) {
		fprintf(stderr, "rheap-tracerd: %s\n",
		        optind != argc ? "unexpected arguments"
		        : index >= 0   ? "--index and --spare exclude each other"
		                       : "--config and --index (or --spare) are required");
		usage(stderr);
		return 2;
	}
	rh_log_start(); /* timestamps from the tracer's start */
	rh_config cfg;
	rh_error err;
	if (rh_config_load(config, &cfg, &err) != RH_OK) {
		fprintf(stderr, "rheap-tracerd: %s\n", err.msg);
		return 2;
	}
	if (spare < 0 && (size_t)index >= cfg.n_servers) {
		fprintf(stderr, "rheap-tracerd: --index %ld: %s lists %zu memory servers\n", index,
		        config, cfg.n_servers);
		return 2;
	}
	if (spare >= 0 && (size_t)spare >= cfg.n_spares) {
		fprintf(stderr, "rheap-tracerd: --spare %ld: %s lists %zu spares\n", spare, config,
		        cfg.n_spares);
		return 2;
	}
	rh_server_opts so = {.cfg = &cfg,
	                     .index = (uint32_t)(spare >= 0 ? spare : index),
	                     .spare = spare >= 0,
	                     .status_path = status,
	                     .accept_timeout_ms = (int)wait_ms,
	                     .memory_limit = memory_limit,
	                     .max_handshakes = (int)handshakes,
	                     .once = once};
	char host[RH_HOST_MAX];
	if (listen) {
		const char *colon = strrchr(listen, ':');
		char *end;
		long port = colon ? strtol(colon + 1, &end, 10) : -1;
		if (!colon || colon == listen || (size_t)(colon - listen) >= sizeof host || *end ||
		    port < 0 || port > 65535) {
			fprintf(stderr, "rheap-tracerd: --listen: '%s' is not HOST:PORT\n", listen);
			return 2;
		}
		memcpy(host, listen, (size_t)(colon - listen));
		host[colon - listen] = 0;
		so.listen_host = host;
		so.listen_port = (uint16_t)port;
	}
	if (!foreground && daemon(1, 1) < 0) {
		perror("rheap-tracerd: daemon");
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int rc = rh_server_run(&so, &err);
	if (rc != RH_OK) {
		/* One line with a level, like every other event of the tracer. */
		rh_log(RH_LOG_ERROR, "tracerd", "exiting: %s", err.msg);
		return rc == RH_EBUSY || rc == RH_ECONFIG ? 2 : 1;
	}
	return 0;
}
