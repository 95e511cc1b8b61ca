/* rheapctl: start, stop and inspect local tracer daemons, and run programs
 * on a disaggregated heap. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "livestats.h"
#include "rheap/rheap.h"
#include "soak.h"
#include "state.h"

static const char *prog = "rheapctl";
static bool opt_json; /* --json: status and stats as JSON */

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rheapctl COMMAND [options]\n"
	        "\n"
	        "commands:\n"
	        "  up      start a tracer for every local server of the config and leave\n"
	        "          them up until 'down': they serve one program at a time, one after\n"
	        "          another, each on an empty heap (a second program at once is\n"
	        "          refused: busy). Refused while a tracer of that cluster is up.\n"
	        "          Without --config: the default cluster, whose config is\n"
	        "          STATE_DIR/default.json (RHEAP_CONFIG=that ./my-vm)\n"
	        "  down    stop the tracers of the cluster (exit 1 if one will not stop)\n"
	        "  status  show each tracer's state, regions, memory held, bytes traced and\n"
	        "          last heartbeat (exit 3 if a tracer is down or no cluster is up)\n"
	        "  stats [PID]  the live stats of every running heap of this user (or of\n"
	        "          PID): collections, pauses, faults; rewritten at most every 100 ms\n"
	        "          after collections (exit 3 if PID has none)\n"
	        "  run     run PROGRAM ARGS on the heap (RHEAP_CONFIG is set for it): without\n"
	        "          --config on a cluster of its own, started and stopped around it;\n"
	        "          with --config on that cluster, started for it unless it is up\n"
	        "  soak    up, run a torture workload with the heap verifier on, down; ends\n"
	        "          with PASS or FAIL (exit status 1)\n"
	        "  version print the version (also -V, --version)\n"
	        "\n"
	        "options:\n"
	        "  -c, --config FILE    heap config (default: a single-host cluster of two shm\n"
	        "                       tracers, 1 GiB heap, 25%% cache, made under the state "
	        "dir)\n"
	        "  -d, --state-dir DIR  pid and status files (default /tmp/rheap-UID)\n"
	        "  -t, --tracerd PATH   the rheap-tracerd binary (default: next to rheapctl, then "
	        "PATH)\n"
	        "  --json               status and stats as JSON\n"
	        "  -h, --help\n"
	        "\n"
	        "soak options (default config: 256 MiB heap, 10%% cache, two shm tracers):\n"
	        "  --minutes N | --seconds N  how long (default 10 minutes; SIGINT ends it early)\n"
	        "  --threads T          mutator threads (default 4)\n"
	        "  --live SIZE_MIB      live data to keep, MiB (default a quarter of the heap)\n"
	        "  --seed N             random seed (default from the clock; printed)\n"
	        "\n"
	        "examples:\n"
	        "  rheapctl run -- ./my-vm script.scm\n"
	        "  RHEAP_LOG_LEVEL=info rheapctl run -- ./my-vm script.scm   # a line per GC\n"
	        "  rheapctl up; RHEAP_CONFIG=/tmp/rheap-$(id -u)/default.json ./my-vm a.scm;\n"
	        "  rheapctl status; rheapctl down\n"
	        "  rheapctl up --config cluster.json && rheapctl status --config cluster.json\n"
	        "  rheapctl soak --minutes 30 --threads 8\n"
	        "  rheapctl stats          (while a program runs on a heap)\n");
}

typedef struct ctl {
	char config[PATH_MAX + 64];
	char state[PATH_MAX - 64];
	char tracerd[PATH_MAX];
	int dfd; /* the state directory, checked (state.h) */
	rh_config cfg;
	/* A cluster rheapctl made in the state dir (default, run-PID,
	 * soak-PID): its name, which keys its tracers' files; empty for a
	 * config of the user's, whose files are keyed by port. */
	char name[32];
	/* Made by this process: its tracers listen on ports they pick, and
	 * the config is rewritten with them once they are up (operations.C1). */
	bool generated;
	const char *heap; /* the generated config's heap size, cache, timeout */
	double cache;
	unsigned timeout_ms;
	bool reused; /* 'run' on tracers already up: they stay up after it */
	pid_t child[RH_MAX_SERVERS + RH_MAX_SPARES]; /* tracers this process started */
	int child_status[RH_MAX_SERVERS + RH_MAX_SPARES];
} ctl;

static int die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return 1;
}

static int is_local(const char *host)
{
	return !strcmp(host, "127.0.0.1") || !strcmp(host, "localhost") || !strcmp(host, "::1") ||
	       !strncmp(host, "127.", 4);
}

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof a;
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* The generated config with these ports: two shm tracers on this host. */
static int write_config(ctl *c, const int *port)
{
	char text[1024], config_name[48];
	snprintf(config_name, sizeof config_name, "%s.json", c->name);
	int n = snprintf(text, sizeof text,
	                 "{\n  \"heap\": {\"size\": \"%s\"},\n  \"cache\": {\"fraction\": %g},\n"
	                 "  \"transport\": {\"provider\": \"shm\", \"timeout_ms\": %u},\n"
	                 "  \"secret_file\": \"%s.secret\",\n"
	                 "  \"servers\": [\n    {\"host\": \"127.0.0.1\", \"port\": %d},\n"
	                 "    {\"host\": \"127.0.0.1\", \"port\": %d}\n  ]\n}\n",
	                 c->heap, c->cache, c->timeout_ms, c->name, port[0], port[1]);
	if (rh_state_write(c->dfd, config_name, text, (size_t)n, 0600) < 0)
		return die("writing %s: %s", c->config, strerror(errno));
	return 0;
}

/* A cluster of this process's own, NAME.json and NAME.secret in the state
 * dir, with a fresh secret. Its ports are placeholders until the tracers
 * have picked theirs (cmd_up). The soak's default is smaller, with a 10 %
 * cache, so that most old regions live on the tracers and they mark and
 * evacuate. */
static int make_default(ctl *c, const char *name, const char *heap, double cache,
                        unsigned timeout_ms)
{
	char secret_name[48];
	snprintf(c->name, sizeof c->name, "%s", name);
	snprintf(c->config, sizeof c->config, "%s/%s.json", c->state, name);
	snprintf(secret_name, sizeof secret_name, "%s.secret", name);
	c->generated = true;
	c->heap = heap;
	c->cache = cache;
	c->timeout_ms = timeout_ms;
	uint8_t raw[24];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return die("getrandom: %s", strerror(errno));
	char hex[sizeof raw * 2 + 2];
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	if (rh_state_write(c->dfd, secret_name, hex, strlen(hex), 0600) < 0)
		return die("writing %s/%s: %s", c->state, secret_name, strerror(errno));
	int port[2] = {free_port(), free_port()};
	if (port[0] < 0 || port[1] < 0)
		return die("cannot find free ports on 127.0.0.1");
	if (port[1] == port[0])
		port[1] = port[0] < 65535 ? port[0] + 1 : port[0] - 1;
	return write_config(c, port);
}

/* The generated cluster's config and secret (after its tracers are down). */
static void remove_generated(const ctl *c)
{
	char name[48];
	snprintf(name, sizeof name, "%s.json", c->name);
	unlinkat(c->dfd, name, 0);
	snprintf(name, sizeof name, "%s.secret", c->name);
	unlinkat(c->dfd, name, 0);
}

/* Keyed by the cluster's name, or the config's port: several clusters can
 * share a state dir. */
/* The cluster's tracers: its servers, then its spares (red.S1). */
static size_t n_tracers(const ctl *c)
{
	return c->cfg.n_servers + c->cfg.n_spares;
}

static const rh_server_config *tracer_addr(const ctl *c, size_t i)
{
	return i < c->cfg.n_servers ? &c->cfg.servers[i] : &c->cfg.spares[i - c->cfg.n_servers];
}

static void name_of(const ctl *c, size_t i, const char *what, char *out, size_t n)
{
	if (c->name[0])
		snprintf(out, n, "%s-tracer-%zu.%s", c->name, i, what);
	else
		snprintf(out, n, "tracer-%u-%zu.%s", tracer_addr(c, i)->port, i, what);
}

static void file_of(const ctl *c, size_t i, const char *what, char *out, size_t n)
{
	char name[96];
	name_of(c, i, what, name, sizeof name);
	snprintf(out, n, "%s/%s", c->state, name);
}

/* The pid of tracer i if its pid file names one of this cluster's tracers
 * (security.S3); a pid file naming anything else is a leftover or a plant,
 * and is removed without signalling anyone. */
static pid_t read_pid(const ctl *c, size_t i)
{
	char name[96], status[PATH_MAX + 64], text[32];
	name_of(c, i, "pid", name, sizeof name);
	file_of(c, i, "status", status, sizeof status);
	if (rh_state_read(c->dfd, name, text, sizeof text) <= 0)
		return 0;
	text[strcspn(text, "\n")] = 0;
	char *end;
	long pid = strtol(text, &end, 10);
	if (pid > 0 && pid <= INT_MAX && !*end && rh_state_is_tracer((pid_t)pid, c->config, status))
		return (pid_t)pid;
	/* A tracer that has exited is no news; a live process that is not
	 * one of ours is. */
	if (pid > 0 && pid <= INT_MAX && !*end && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
		fprintf(stderr, "%s: %s/%s names no tracer of %s (pid %.20s); removed\n", prog,
		        c->state, name, c->config, text);
	unlinkat(c->dfd, name, 0);
	return 0;
}

static json_t *read_status(const ctl *c, size_t i)
{
	char name[96], text[16384];
	name_of(c, i, "status", name, sizeof name);
	ssize_t n = rh_state_read(c->dfd, name, text, sizeof text);
	return n > 0 ? json_loadb(text, (size_t)n, 0, NULL) : NULL;
}

static void remove_files(const ctl *c, size_t i)
{
	char name[96];
	name_of(c, i, "pid", name, sizeof name);
	unlinkat(c->dfd, name, 0);
	name_of(c, i, "status", name, sizeof name);
	unlinkat(c->dfd, name, 0);
}

static bool local_server(const ctl *c, size_t i)
{
	return is_local(tracer_addr(c, i)->host);
}

/* How many of the cluster's local tracers run; `list` names them. */
static size_t running(const ctl *c, char *list, size_t n)
{
	size_t up = 0, len = 0;
	list[0] = 0;
	for (size_t i = 0; i < n_tracers(c); i++) {
		pid_t p = local_server(c, i) ? read_pid(c, i) : 0;
		if (p && len < n) {
			len += (size_t)snprintf(list + len, n - len, "%stracer %zu pid %d",
			                        up ? ", " : "", i, (int)p);
			up++;
		} else if (p) {
			up++;
		}
	}
	return up;
}

static size_t n_local(const ctl *c)
{
	size_t n = 0;
	for (size_t i = 0; i < n_tracers(c); i++)
		n += local_server(c, i);
	return n;
}

/* The generated config again, with the ports the tracers listen on (their
 * status files say), for the programs that open the heap (operations.C1). */
static int publish_ports(ctl *c)
{
	int port[2] = {0, 0};
	for (size_t i = 0; i < 2 && i < c->cfg.n_servers; i++) {
		json_t *j = read_status(c, i);
		json_int_t p = j ? json_integer_value(json_object_get(j, "port")) : 0;
		json_decref(j);
		if (p <= 0 || p > 65535)
			return die("tracer %zu reported no port in its status file", i);
		port[i] = (int)p;
		c->cfg.servers[i].port = (uint16_t)p;
	}
	return write_config(c, port);
}

static pid_t start_tracer(ctl *c, size_t i, bool supervised)
{
	char status[PATH_MAX + 64], idx[24];
	file_of(c, i, "status", status, sizeof status);
	bool spare = i >= c->cfg.n_servers;
	snprintf(idx, sizeof idx, "%zu", spare ? i - c->cfg.n_servers : i);
	pid_t self = getpid();
	pid_t p = fork();
	if (p != 0)
		return p;
	/* Its own session either way: a ^C at the terminal goes to the
	 * program 'run' forwards it to, and the tracers are stopped after
	 * it, in order. */
	setsid();
	if (supervised) {
		/* The death signal survives the exec. If this process died
		 * before prctl, the signal will never come: the tracer has been
		 * reparented already. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != self)
			_exit(1);
	}
	char *argv[] = {c->tracerd, "--config",     c->config,  spare ? "--spare" : "--index",
	                idx,        "--foreground", "--status", status,
	                NULL,       NULL,           NULL};
	/* A cluster of our own: the tracer takes a port no one uses
	 * (operations.C1). */
	if (c->generated) {
		argv[8] = "--listen";
		argv[9] = "127.0.0.1:0";
	}
	execv(c->tracerd, argv);
	if (!strchr(c->tracerd, '/'))
		execvp(c->tracerd, argv);
	fprintf(stderr, "%s: cannot run %s: %s\n", prog, c->tracerd, strerror(errno));
	_exit(127);
}

/* The command that stops c's cluster, for messages. */
static const char *down_hint(const ctl *c, char *out, size_t n)
{
	char dflt[64];
	snprintf(dflt, sizeof dflt, "/tmp/rheap-%u", (unsigned)getuid());
	int len = snprintf(out, n, "rheapctl down");
	if (strcmp(c->name, "default") && len >= 0 && (size_t)len < n)
		len += snprintf(out + len, n - (size_t)len, " --config %s", c->config);
	if (strcmp(c->state, dflt) && len >= 0 && (size_t)len < n)
		snprintf(out + len, n - (size_t)len, " --state-dir %s", c->state);
	return out;
}

static bool stop_tracer(ctl *c, size_t i, pid_t p);

/* supervised: this process stays in the foreground and brings the tracers
 * down itself ('run', 'soak'); they must not outlive it even if it is
 * killed before it can. Otherwise ('up') they are daemons. may_reuse: a
 * cluster whose tracers are all up already is used as it is ('run
 * --config'); otherwise any tracer of it still up is refused
 * (operations.C2). */
static int start_cluster(ctl *c, bool supervised, bool may_reuse)
{
	char list[512], hint[sizeof c->config + sizeof c->state + 48];
	size_t up = running(c, list, sizeof list), local = n_local(c);
	if (up && may_reuse && up == local) {
		c->reused = true;
		fprintf(stderr, "%s: using the tracers already up for %s (%s)\n", prog, c->config,
		        list);
		return 0;
	}
	if (up)
		return die("%s is already up (%s); '%s' stops it", c->config, list,
		           down_hint(c, hint, sizeof hint));
	char pidf[96];
	for (size_t i = 0; i < n_tracers(c); i++) {
		if (!local_server(c, i))
			continue;
		remove_files(c, i);
		pid_t p = start_tracer(c, i, supervised);
		if (p < 0)
			return die("fork: %s", strerror(errno));
		name_of(c, i, "pid", pidf, sizeof pidf);
		char text[32];
		int n = snprintf(text, sizeof text, "%d\n", (int)p);
		c->child[i] = p;
		if (rh_state_write(c->dfd, pidf, text, (size_t)n, 0600) < 0)
			return die("writing %s/%s: %s", c->state, pidf, strerror(errno));
	}
	/* Ready when every tracer reports it is listening; a tracer that
	 * exits instead is reported at once (operations.C3). */
	for (int t = 0; t < 200; t++) {
		size_t ready = 0;
		for (size_t i = 0; i < n_tracers(c); i++) {
			if (!local_server(c, i))
				continue;
			json_t *j = read_status(c, i);
			ready += j != NULL;
			json_decref(j);
			int st;
			if (c->child[i] && waitpid(c->child[i], &st, WNOHANG) == c->child[i]) {
				c->child[i] = 0;
				return die("tracer %zu exited while starting (%s %d; see its "
				           "messages above)",
				           i, WIFEXITED(st) ? "status" : "signal",
				           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
			}
		}
		if (ready == local) {
			if (c->generated && publish_ports(c) != 0)
				return 1;
			fprintf(stderr, "%s: %zu tracer(s) up for %s\n", prog, local, c->config);
			return 0;
		}
		usleep(t < 40 ? 5000 : 25000);
	}
	return die("tracers did not report ready within 5 s");
}

/* Collect the tracers this process started that have exited: the number
 * that did so with a failure (a signal or a nonzero status). */
static int reap(ctl *c)
{
	int failed = 0;
	for (size_t i = 0; i < n_tracers(c); i++) {
		int st;
		if (c->child[i] && waitpid(c->child[i], &st, WNOHANG) == c->child[i]) {
			c->child[i] = 0;
			c->child_status[i] = st;
			failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
	}
	return failed;
}

/* Whether p is still tracer i of this cluster (security.S3). A child of
 * ours that has exited is reaped here; a zombie of someone else's has no
 * command line, and no longer counts either. */
static bool still_ours(ctl *c, size_t i, pid_t p)
{
	if (c->child[i] == p && waitpid(p, NULL, WNOHANG) == p) {
		c->child[i] = 0;
		return false;
	}
	char status[PATH_MAX + 64];
	file_of(c, i, "status", status, sizeof status);
	return rh_state_is_tracer(p, c->config, status);
}

/* SIGTERM, then SIGKILL, each given 2 s; whether it has gone. */
static bool stop_tracer(ctl *c, size_t i, pid_t p)
{
	const int sigs[] = {SIGTERM, SIGKILL};
	for (size_t s = 0; s < 2; s++) {
		kill(p, sigs[s]);
		for (int t = 0; t < 100; t++) {
			if (!still_ours(c, i, p))
				return true;
			usleep(20000);
		}
	}
	return false;
}

/* start_cluster, and if it fails, the tracers it started stopped again (and
 * never a tracer it did not start). */
static int cmd_up(ctl *c, bool supervised, bool may_reuse)
{
	if (start_cluster(c, supervised, may_reuse) == 0)
		return 0;
	bool all = true;
	for (size_t i = 0; i < n_tracers(c); i++)
		if (c->child[i]) {
			if (stop_tracer(c, i, c->child[i]))
				remove_files(c, i);
			else
				all = false;
		}
	if (c->generated && all)
		remove_generated(c);
	return 1;
}

/* Every tracer of the cluster, found by its pid file (operations.C2). 1 if
 * one is still running after SIGKILL. */
static int cmd_down(ctl *c)
{
	reap(c);
	int failed = 0;
	for (size_t i = 0; i < n_tracers(c); i++) {
		pid_t p = read_pid(c, i);
		if (p && !stop_tracer(c, i, p)) {
			fprintf(stderr, "%s: tracer %zu (pid %d) is still running after SIGKILL\n",
			        prog, i, (int)p);
			failed++;
			continue;
		}
		remove_files(c, i);
	}
	if (c->name[0] && !failed)
		remove_generated(c);
	return failed ? 1 : 0;
}

/* status --json: the config, and per tracer its address, state (down,
 * remote, or the status file's), pid and the status file's fields. */
static int status_json(ctl *c)
{
	json_t *tr = json_array();
	int rc = 0;
	for (size_t i = 0; i < n_tracers(c); i++) {
		json_t *j = local_server(c, i) ? read_status(c, i) : NULL;
		pid_t p = read_pid(c, i);
		json_t *o =
		        json_pack("{s:I, s:s, s:i}", "index", (json_int_t)i, "host",
		                  tracer_addr(c, i)->host, "port", (int)tracer_addr(c, i)->port);
		if (j && p) {
			json_object_update_missing(o, j);
			json_object_set_new(o, "pid", json_integer(p));
		} else {
			json_object_set_new(o, "state",
			                    json_string(local_server(c, i) ? "down" : "remote"));
			rc = local_server(c, i) ? 3 : rc;
		}
		json_decref(j);
		json_array_append_new(tr, o);
	}
	json_t *doc =
	        json_pack("{s:s, s:b, s:o}", "config", c->config, "up", rc == 0, "tracers", tr);
	json_dumpf(doc, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(doc);
	return rc;
}

static int cmd_status(ctl *c)
{
	if (opt_json)
		return status_json(c);
	printf("%-6s %-22s %-8s %-8s %13s %10s %10s %11s %8s %10s\n", "tracer", "address", "state",
	       "pid", "regions", "held MiB", "limit MiB", "traced MiB", "refused", "heartbeat");
	int rc = 0;
	for (size_t i = 0; i < n_tracers(c); i++) {
		char addr[300];
		snprintf(addr, sizeof addr, "%s:%u", tracer_addr(c, i)->host,
		         tracer_addr(c, i)->port);
		char label[24]; /* a server's index, or "sK" for spare K */
		if (i < c->cfg.n_servers)
			snprintf(label, sizeof label, "%zu", i);
		else
			snprintf(label, sizeof label, "s%zu", i - c->cfg.n_servers);
		json_t *j = local_server(c, i) ? read_status(c, i) : NULL;
		pid_t p = read_pid(c, i);
		if (!j || !p) {
			printf("%-6s %-22s %-8s\n", label, addr,
			       local_server(c, i) ? "down" : "remote");
			rc = local_server(c, i) ? 3 : rc;
			json_decref(j);
			continue;
		}
#define FIELD(name) ((long long)json_integer_value(json_object_get(j, name)))
		char hb[32], regions[48], limit[24];
		const char *state = json_string_value(json_object_get(j, "state"));
		/* The heartbeat means something only while a CPU server is served. */
		if (state && !strcmp(state, "serving"))
			snprintf(hb, sizeof hb, "%lld ms ago", FIELD("last_heartbeat_ms_ago"));
		else
			snprintf(hb, sizeof hb, "-");
		snprintf(regions, sizeof regions, "%lld/%lld", FIELD("regions_hosted"),
		         FIELD("regions_total"));
		if (FIELD("memory_limit"))
			snprintf(limit, sizeof limit, "%.1f",
			         (double)FIELD("memory_limit") / 1048576.0);
		else
			snprintf(limit, sizeof limit, "-");
		printf("%-6s %-22s %-8s %-8d %13s %10.1f %10s %11.1f %8lld %10s\n", label, addr,
		       state ? state : "?", (int)p, regions,
		       (double)FIELD("bytes_held") / 1048576.0, limit,
		       (double)FIELD("bytes_traced") / 1048576.0, FIELD("connections_refused"), hb);
#undef FIELD
		json_decref(j);
	}
	return rc;
}

static volatile sig_atomic_t child_pid;
static void forward(int sig)
{
	if (child_pid > 0)
		kill(child_pid, sig);
}

/* The cluster's tracers down, unless 'run' found them up and used them. */
static int finish(ctl *c)
{
	return c->reused ? 0 : cmd_down(c);
}

static int cmd_run(ctl *c, char **argv)
{
	if (!argv[0])
		return die("run: no PROGRAM given (rheapctl run [--config FILE] -- PROGRAM ARGS)");
	if (cmd_up(c, true, true) != 0)
		return 1;
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		finish(c);
		return die("fork: %s", strerror(errno));
	}
	if (p == 0) {
		setenv("RHEAP_CONFIG", c->config, 1);
		/* Its live stats beside the tracers' files: rheapctl stats --state-dir. */
		setenv("RHEAP_STATE_DIR", c->state, 1);
		execvp(argv[0], argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", prog, argv[0], strerror(errno));
		_exit(127);
	}
	child_pid = p;
	struct sigaction sa = {.sa_handler = forward};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int st = 0;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	finish(c);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* The soak runs in a child: a verifier failure aborts it, a lost tracer
 * ends it with RH_EXIT_LOST, and either way this process is left to say
 * FAIL and bring the tracers down. */
static int cmd_soak(ctl *c, const rh_soak_opts *so)
{
	if (cmd_up(c, true, false) != 0)
		return 1;
	fflush(stdout);
	pid_t p = fork();
	if (p < 0) {
		cmd_down(c);
		return die("fork: %s", strerror(errno));
	}
	if (p == 0)
		_exit(rh_soak_run(so));
	child_pid = p;
	struct sigaction sa = {.sa_handler = forward};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int st = 0;
	while (waitpid(p, &st, 0) < 0 && errno == EINTR)
		;
	/* Tracers that died under the soak are a failure too; one that left
	 * after its CPU server said BYE exited with 0. */
	int lost = reap(c);
	cmd_down(c);
	if (WIFSIGNALED(st)) {
		printf("soak: FAIL: the workload died of signal %d (%s)%s\n", WTERMSIG(st),
		       strsignal(WTERMSIG(st)),
		       WTERMSIG(st) == SIGABRT ? "; a heap verifier failure aborts, see above"
		                               : "");
		return 1;
	}
	int code = WEXITSTATUS(st);
	if (code == RH_EXIT_LOST)
		printf("soak: FAIL: a memory server was lost (see the message above)\n");
	else if (code == 2)
		printf("soak: FAIL: the heap could not be opened\n");
	else if (code == 1)
		printf("soak: FAIL: lost or damaged objects (see above)\n");
	else if (code != 0)
		printf("soak: FAIL: the workload exited with status %d (see above)\n", code);
	else if (lost)
		printf("soak: FAIL: %d tracer(s) exited during the run\n", lost);
	else
		printf("soak: PASS (seed %llu)\n", (unsigned long long)so->seed);
	return code != 0 || lost ? 1 : 0;
}

static int find_tracerd(ctl *c)
{
	const char *env = getenv("RHEAP_TRACERD");
	if (env && *env) {
		snprintf(c->tracerd, sizeof c->tracerd, "%s", env);
		return 0;
	}
	char self[PATH_MAX - 64];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n > 0) {
		self[n] = 0;
		char *slash = strrchr(self, '/');
		if (slash) {
			*slash = 0;
			/* Installed side by side, or in a build tree. */
			const char *cands[] = {"%s/rheap-tracerd", "%s/../memserver/rheap-tracerd"};
			for (size_t i = 0; i < 2; i++) {
				snprintf(c->tracerd, sizeof c->tracerd, cands[i], self);
				if (access(c->tracerd, X_OK) == 0)
					return 0;
			}
		}
	}
	snprintf(c->tracerd, sizeof c->tracerd, "rheap-tracerd");
	return 0;
}

/* A config in the state dir named as rheapctl names its own clusters
 * (default.json, run-PID.json, soak-PID.json) is that cluster, whichever
 * way it is named on the command line: its tracers' files go by its name. */
static void name_from_path(ctl *c)
{
	const char *slash = strrchr(c->config, '/');
	if (!slash || (size_t)(slash - c->config) != strlen(c->state) ||
	    strncmp(c->config, c->state, strlen(c->state)))
		return;
	const char *b = slash + 1;
	int pid, used = 0, used2 = 0;
	if (strcmp(b, "default.json") &&
	    !(sscanf(b, "run-%d.json%n", &pid, &used) == 1 && used && !b[used]) &&
	    !(sscanf(b, "soak-%d.json%n", &pid, &used2) == 1 && used2 && !b[used2]))
		return;
	snprintf(c->name, sizeof c->name, "%.*s", (int)(strlen(b) - 5), b);
}

/* The files of run-PID and soak-PID clusters whose rheapctl died without
 * removing them (SIGKILL: its tracers got SIGTERM from the kernel, the
 * files stayed). A cluster with a tracer still running is left alone. */
static void sweep_stale(const ctl *c)
{
	int fd = dup(c->dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	for (struct dirent *e; (e = readdir(d));) {
		int pid, used = 0;
		char kind[8];
		if (sscanf(e->d_name, "%4[a-z]-%d.json%n", kind, &pid, &used) != 2 || !used ||
		    e->d_name[used] || (strcmp(kind, "run") && strcmp(kind, "soak")) || pid <= 0 ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		ctl old = {.dfd = c->dfd, .cfg.n_servers = 2};
		snprintf(old.state, sizeof old.state, "%s", c->state);
		snprintf(old.name, sizeof old.name, "%s-%d", kind, pid);
		snprintf(old.config, sizeof old.config, "%s/%.40s", c->state, e->d_name);
		bool live = false;
		for (size_t i = 0; i < 2; i++)
			live |= read_pid(&old, i) != 0;
		if (live)
			continue;
		for (size_t i = 0; i < 2; i++)
			remove_files(&old, i);
		remove_generated(&old);
	}
	closedir(d);
}

/* Without --config, 'run' and 'soak' make a cluster of their own, named
 * after this process (operations.C1); 'up', 'down' and 'status' work on the
 * default cluster, STATE/default.json, which 'up' makes. -1 to go on, or
 * the exit status. */
static int pick_default(ctl *c, const char *cmd)
{
	if (!strcmp(cmd, "run") || !strcmp(cmd, "soak")) {
		sweep_stale(c);
		char name[32];
		snprintf(name, sizeof name, "%s-%d", cmd, (int)getpid());
		/* A loaded machine must not fail a correctness soak on a
		 * heartbeat: a lost tracer is still reported, later. */
		if (!strcmp(cmd, "soak"))
			return make_default(c, name, "256MiB", 0.1, 5000) ? 1 : -1;
		return make_default(c, name, "1GiB", 0.25, 2000) ? 1 : -1;
	}
	snprintf(c->name, sizeof c->name, "default");
	snprintf(c->config, sizeof c->config, "%s/default.json", c->state);
	struct stat st;
	if (fstatat(c->dfd, "default.json", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (!strcmp(cmd, "up"))
			return make_default(c, "default", "1GiB", 0.25, 2000) ? 1 : -1;
		if (opt_json && !strcmp(cmd, "status"))
			printf("{\"config\": null, \"up\": false, \"tracers\": []}\n");
		else
			printf("no cluster up (%s does not exist; 'rheapctl up' starts one)\n",
			       c->config);
		return !strcmp(cmd, "status") ? 3 : 0;
	}
	if (strcmp(cmd, "up"))
		return -1;
	/* 'up' again is refused while a tracer of the default cluster runs:
	 * a new config would leave it listening on ports no config names
	 * (operations.C2). */
	rh_error err;
	char list[512], hint[sizeof c->config + sizeof c->state + 48];
	if (rh_config_load(c->config, &c->cfg, &err) == RH_OK) {
		if (running(c, list, sizeof list))
			return die("the default cluster (%s) is already up (%s); '%s' stops it",
			           c->config, list, down_hint(c, hint, sizeof hint));
		for (size_t i = 0; i < n_tracers(c); i++)
			remove_files(c, i);
	}
	return make_default(c, "default", "1GiB", 0.25, 2000) ? 1 : -1;
}

int main(int argc, char **argv)
{
	ctl c = {0};
	const char *cmd = argc > 1 ? argv[1] : NULL;
	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
	}
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
		printf("rheapctl %s\n", RH_VERSION_STRING);
		return 0;
	}
	if (strcmp(cmd, "up") && strcmp(cmd, "down") && strcmp(cmd, "status") &&
	    strcmp(cmd, "run") && strcmp(cmd, "soak") && strcmp(cmd, "stats")) {
		die("unknown command '%s'", cmd);
		usage(stderr);
		return 2;
	}
	const char *config = NULL, *state = NULL;
	rh_soak_opts so = {.seconds = 600, .threads = 4, .seed = (uint64_t)time(NULL)};
	int i = 2;
	for (; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if ((!strcmp(a, "-c") || !strcmp(a, "--config")) && i + 1 < argc)
			config = argv[++i];
		else if ((!strcmp(a, "-d") || !strcmp(a, "--state-dir")) && i + 1 < argc)
			state = argv[++i];
		else if (!strcmp(a, "--json") && (!strcmp(cmd, "status") || !strcmp(cmd, "stats")))
			opt_json = true;
		else if ((!strcmp(a, "-t") || !strcmp(a, "--tracerd")) && i + 1 < argc)
			snprintf(c.tracerd, sizeof c.tracerd, "%s", argv[++i]);
		else if (!strcmp(cmd, "soak") && i + 1 < argc &&
		         (!strcmp(a, "--minutes") || !strcmp(a, "--seconds") ||
		          !strcmp(a, "--threads") || !strcmp(a, "--live") ||
		          !strcmp(a, "--seed"))) {
			char *end;
			double v = strtod(argv[++i], &end);
			if (*end || v <= 0 || (strcmp(a, "--seed") && v > 1e7))
				return die("%s: '%s' is not a positive number", a, argv[i]);
			if (!strcmp(a, "--minutes"))
				so.seconds = v * 60;
			else if (!strcmp(a, "--seconds"))
				so.seconds = v;
			else if (!strcmp(a, "--threads"))
				so.threads = v > 256 ? 256 : (unsigned)v;
			else if (!strcmp(a, "--live"))
				so.live_bytes = (uint64_t)(v * 1048576.0);
			else
				so.seed = (uint64_t)v;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-V") || !strcmp(a, "--version")) {
			printf("rheapctl %s\n", RH_VERSION_STRING);
			return 0;
		} else if (a[0] == '-') {
			die("unknown option '%s'", a);
			usage(stderr);
			return 2;
		} else
			break;
	}
	if (state)
		snprintf(c.state, sizeof c.state, "%s", state);
	else
		snprintf(c.state, sizeof c.state, "/tmp/rheap-%u", (unsigned)getuid());
	char why[PATH_MAX + 200];
	if ((c.dfd = rh_state_open(c.state, why, sizeof why)) < 0)
		return die("state dir refused: %s", why);
	/* Canonical, as the tracers' command lines name files in it. */
	char real[PATH_MAX];
	if (realpath(c.state, real) && strlen(real) < sizeof c.state)
		snprintf(c.state, sizeof c.state, "%s", real);
	if (!strcmp(cmd, "stats")) {
		long pid = 0;
		if (i < argc) {
			char *end;
			pid = strtol(argv[i], &end, 10);
			if (*end || pid <= 0 || i + 1 < argc)
				return die("stats: expected one PID, got '%s'", argv[i]);
		}
		return rh_ctl_stats(c.dfd, c.state, (pid_t)pid, opt_json);
	}
	if (!c.tracerd[0])
		find_tracerd(&c);
	if (config) {
		if (!realpath(config, c.config))
			return die("--config %s: %s", config, strerror(errno));
		name_from_path(&c);
	} else {
		int rc = pick_default(&c, cmd);
		if (rc >= 0)
			return rc;
	}
	rh_error err;
	if (rh_config_load(c.config, &c.cfg, &err) != RH_OK)
		return die("%s", err.msg);
	if (c.cfg.n_servers == 0)
		return die("%s lists no memory servers: nothing to start", c.config);
	if (c.generated && (c.cfg.n_servers != 2 || n_local(&c) != 2))
		return die("%s: changed while rheapctl set it up", c.config);
	if (!strcmp(cmd, "up"))
		return cmd_up(&c, false, false);
	if (!strcmp(cmd, "down"))
		return cmd_down(&c);
	if (!strcmp(cmd, "status"))
		return cmd_status(&c);
	if (!strcmp(cmd, "run"))
		return cmd_run(&c, argv + i);
	if (i < argc)
		return die("soak: unexpected argument '%s'", argv[i]);
	so.config = c.config;
	return cmd_soak(&c, &so);
}
