/* rheapctl: start, stop and inspect local tracer daemons, and run programs
 * on a disaggregated heap. */
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

#include "rheap/rheap.h"
#include "soak.h"
#include "state.h"

static const char *prog = "rheapctl";

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rheapctl COMMAND [options]\n"
	        "\n"
	        "commands:\n"
	        "  up      start a tracer for every local server of the config; they serve\n"
	        "          one program after another until 'down'\n"
	        "  down    stop the tracers started by 'up'\n"
	        "  status  show each tracer's state, regions, memory held, bytes traced and\n"
	        "          last heartbeat\n"
	        "  run     up, run PROGRAM ARGS on the heap (RHEAP_CONFIG is set for it), down\n"
	        "  soak    up, run a torture workload with the heap verifier on, down; ends\n"
	        "          with PASS or FAIL (exit status 1)\n"
	        "\n"
	        "options:\n"
	        "  -c, --config FILE    heap config (default: a single-host cluster of two shm\n"
	        "                       tracers, 1 GiB heap, 25%% cache, made under the state "
	        "dir)\n"
	        "  -d, --state-dir DIR  pid and status files (default /tmp/rheap-UID)\n"
	        "  -t, --tracerd PATH   the rheap-tracerd binary (default: next to rheapctl, then "
	        "PATH)\n"
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
	        "  rheapctl up --config cluster.json && rheapctl status --config cluster.json\n"
	        "  rheapctl soak --minutes 30 --threads 8\n");
}

typedef struct ctl {
	char config[PATH_MAX + 64];
	char state[PATH_MAX - 64];
	char tracerd[PATH_MAX];
	int dfd; /* the state directory, checked (state.h) */
	rh_config cfg;
	pid_t child[RH_MAX_SERVERS]; /* tracers this process started */
	int child_status[RH_MAX_SERVERS];
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

/* The shipped default: two shm tracers on this host, a fresh secret. The
 * soak's default is smaller, with a 10 % cache, so that most old regions
 * live on the tracers and they mark and evacuate. */
static int make_default(ctl *c, const char *name, const char *heap, double cache,
                        unsigned timeout_ms)
{
	char secret_name[64], config_name[64];
	snprintf(c->config, sizeof c->config, "%s/%s.json", c->state, name);
	snprintf(config_name, sizeof config_name, "%s.json", name);
	snprintf(secret_name, sizeof secret_name, "%s.secret", name);
	uint8_t raw[24];
	if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return die("getrandom: %s", strerror(errno));
	char hex[sizeof raw * 2 + 2];
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	if (rh_state_write(c->dfd, secret_name, hex, strlen(hex), 0600) < 0)
		return die("writing %s/%s: %s", c->state, secret_name, strerror(errno));
	/* Free ports, picked by the kernel: two default clusters at once do
	 * not collide. */
	int port = free_port(), port2 = free_port();
	if (port < 0 || port2 < 0)
		return die("cannot find free ports on 127.0.0.1");
	char text[1024];
	int n = snprintf(text, sizeof text,
	                 "{\n  \"heap\": {\"size\": \"%s\"},\n  \"cache\": {\"fraction\": %g},\n"
	                 "  \"transport\": {\"provider\": \"shm\", \"timeout_ms\": %u},\n"
	                 "  \"secret_file\": \"%s\",\n"
	                 "  \"servers\": [\n    {\"host\": \"127.0.0.1\", \"port\": %d},\n"
	                 "    {\"host\": \"127.0.0.1\", \"port\": %d}\n  ]\n}\n",
	                 heap, cache, timeout_ms, secret_name, port, port2);
	if (rh_state_write(c->dfd, config_name, text, (size_t)n, 0600) < 0)
		return die("writing %s: %s", c->config, strerror(errno));
	return 0;
}

/* Keyed by the config's port: several clusters can share a state dir. */
static void name_of(const ctl *c, size_t i, const char *what, char *out, size_t n)
{
	snprintf(out, n, "tracer-%u-%zu.%s", c->cfg.servers[i].port, i, what);
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

/* supervised: this process stays in the foreground and brings the tracers
 * down itself ('run', 'soak'); they must not outlive it even if it is
 * killed before it can. Otherwise ('up') they are daemons. */
static int cmd_up(ctl *c, bool supervised)
{
	size_t started = 0;
	pid_t self = getpid();
	for (size_t i = 0; i < c->cfg.n_servers; i++) {
		if (!is_local(c->cfg.servers[i].host))
			continue;
		if (read_pid(c, i)) {
			fprintf(stderr, "%s: tracer %zu is already running\n", prog, i);
			continue;
		}
		char status[PATH_MAX + 64], pidf[96], idx[24];
		file_of(c, i, "status", status, sizeof status);
		name_of(c, i, "pid", pidf, sizeof pidf);
		snprintf(idx, sizeof idx, "%zu", i);
		remove_files(c, i);
		pid_t p = fork();
		if (p < 0)
			return die("fork: %s", strerror(errno));
		if (p == 0) {
			/* Its own session either way: a ^C at the terminal goes to
			 * the program 'run' forwards it to, and the tracers are
			 * stopped after it, in order. */
			setsid();
			if (supervised) {
				/* The death signal survives the exec. If this
				 * process died before prctl, the signal will never
				 * come: the tracer has been reparented already. */
				if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != self)
					_exit(1);
			}
			execl(c->tracerd, c->tracerd, "--config", c->config, "--index", idx,
			      "--foreground", "--status", status, (char *)NULL);
			fprintf(stderr, "%s: cannot run %s: %s\n", prog, c->tracerd,
			        strerror(errno));
			_exit(127);
		}
		char text[32];
		int n = snprintf(text, sizeof text, "%d\n", (int)p);
		if (rh_state_write(c->dfd, pidf, text, (size_t)n, 0600) < 0)
			return die("writing %s/%s: %s", c->state, pidf, strerror(errno));
		c->child[i] = p;
		started++;
	}
	/* Ready when every tracer reports it is listening. */
	for (int t = 0; t < 200; t++) {
		size_t ready = 0, local = 0;
		for (size_t i = 0; i < c->cfg.n_servers; i++) {
			if (!is_local(c->cfg.servers[i].host))
				continue;
			local++;
			json_t *j = read_status(c, i);
			ready += j != NULL;
			json_decref(j);
			/* A child may not have exec'd yet: read_pid would not
			 * know it for a tracer. */
			if (c->child[i] ? waitpid(c->child[i], NULL, WNOHANG) == c->child[i]
			                : !read_pid(c, i))
				return die(
				        "tracer %zu exited while starting (see its messages above)",
				        i);
		}
		if (ready == local) {
			if (started)
				fprintf(stderr, "%s: %zu tracer(s) up for %s\n", prog, started,
				        c->config);
			return 0;
		}
		usleep(25000);
	}
	return die("tracers did not report ready within 5 s");
}

/* Collect the tracers this process started that have exited: the number
 * that did so with a failure (a signal or a nonzero status). */
static int reap(ctl *c)
{
	int failed = 0;
	for (size_t i = 0; i < c->cfg.n_servers; i++) {
		int st;
		if (c->child[i] && waitpid(c->child[i], &st, WNOHANG) == c->child[i]) {
			c->child[i] = 0;
			c->child_status[i] = st;
			failed += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		}
	}
	return failed;
}

static int cmd_down(ctl *c)
{
	reap(c);
	for (size_t i = 0; i < c->cfg.n_servers; i++) {
		pid_t p = read_pid(c, i);
		if (!p)
			continue;
		kill(p, SIGTERM);
		for (int t = 0; t < 100 && kill(p, 0) == 0; t++) {
			waitpid(p, NULL, WNOHANG);
			usleep(20000);
		}
		if (kill(p, 0) == 0) {
			kill(p, SIGKILL);
			waitpid(p, NULL, 0);
		}
		remove_files(c, i);
	}
	return 0;
}

static int cmd_status(ctl *c)
{
	printf("%-6s %-22s %-8s %-8s %13s %10s %10s %11s %8s %10s\n", "tracer", "address", "state",
	       "pid", "regions", "held MiB", "limit MiB", "traced MiB", "refused", "heartbeat");
	int rc = 0;
	for (size_t i = 0; i < c->cfg.n_servers; i++) {
		char addr[300];
		snprintf(addr, sizeof addr, "%s:%u", c->cfg.servers[i].host,
		         c->cfg.servers[i].port);
		json_t *j = is_local(c->cfg.servers[i].host) ? read_status(c, i) : NULL;
		pid_t p = read_pid(c, i);
		if (!j || !p) {
			printf("%-6zu %-22s %-8s\n", i, addr,
			       is_local(c->cfg.servers[i].host) ? "down" : "remote");
			rc = is_local(c->cfg.servers[i].host) ? 3 : rc;
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
		printf("%-6zu %-22s %-8s %-8d %13s %10.1f %10s %11.1f %8lld %10s\n", i, addr,
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

static int cmd_run(ctl *c, char **argv)
{
	if (!argv[0])
		return die("run: no PROGRAM given (rheapctl run [--config FILE] -- PROGRAM ARGS)");
	if (cmd_up(c, true) != 0) {
		cmd_down(c);
		return 1;
	}
	pid_t p = fork();
	if (p == 0) {
		setenv("RHEAP_CONFIG", c->config, 1);
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
	cmd_down(c);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* The soak runs in a child: a verifier failure aborts it, a lost tracer
 * ends it with RH_EXIT_LOST, and either way this process is left to say
 * FAIL and bring the tracers down. */
static int cmd_soak(ctl *c, const rh_soak_opts *so)
{
	if (cmd_up(c, true) != 0) {
		cmd_down(c);
		return 1;
	}
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

int main(int argc, char **argv)
{
	ctl c = {0};
	const char *cmd = argc > 1 ? argv[1] : NULL;
	if (!cmd || !strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(cmd ? stdout : stderr);
		return cmd ? 0 : 2;
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
	if (!c.tracerd[0])
		find_tracerd(&c);
	if (config) {
		if (!realpath(config, c.config))
			return die("--config %s: %s", config, strerror(errno));
	} else if (!strcmp(cmd, "run") || !strcmp(cmd, "up")) {
		if (make_default(&c, "default", "1GiB", 0.25, 2000) != 0)
			return 1;
	} else if (!strcmp(cmd, "soak")) {
		/* A loaded machine must not fail a correctness soak on a
		 * heartbeat: a lost tracer is still reported, later. */
		if (make_default(&c, "soak", "256MiB", 0.1, 5000) != 0)
			return 1;
	} else {
		snprintf(c.config, sizeof c.config, "%s/default.json", c.state);
	}
	rh_error err;
	if (rh_config_load(c.config, &c.cfg, &err) != RH_OK)
		return die("%s", err.msg);
	if (c.cfg.n_servers == 0)
		return die("%s lists no memory servers: nothing to start", c.config);
	if (!strcmp(cmd, "up"))
		return cmd_up(&c, false);
	if (!strcmp(cmd, "down"))
		return cmd_down(&c);
	if (!strcmp(cmd, "status"))
		return cmd_status(&c);
	if (!strcmp(cmd, "run"))
		return cmd_run(&c, argv + i);
	if (!strcmp(cmd, "soak")) {
		if (i < argc)
			return die("soak: unexpected argument '%s'", argv[i]);
		so.config = c.config;
		return cmd_soak(&c, &so);
	}
	die("unknown command '%s'", cmd);
	usage(stderr);
	return 2;
}
