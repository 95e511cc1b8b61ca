/* rheapctl's state directory against another local user (docs/security.md,
 * security.S1-S4). Root plays both sides: the victim is root, the attacker
 * a child that became uid 65534 (nobody). Every case must be refused, or
 * defused, and leave the victim's files and processes as they were.
 *
 * usage: test-statedir RHEAPCTL TRACERD   (exit 77 unless run as root)
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>

#include "tests/ops/ops.h"
#include "tests/swap/proc.h"

#define NOBODY 65534

static const char *rheapctl, *tracerd;
static char base[64]; /* sticky and world-writable, like /tmp */

static void path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", base, name);
}

/* Run fn(arg) as the attacker; its exit status (0: done). */
static int as_nobody(int (*fn)(const char *), const char *arg)
{
	pid_t p = fork();
	if (p == 0) {
		if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
			_exit(126);
		_exit(fn(arg));
	}
	return p < 0 ? -1 : proc_wait(p);
}

static int make_open_dir(const char *path)
{
	return mkdir(path, 0777) < 0 || chmod(path, 0777) < 0;
}

static int make_link(const char *spec)
{
	/* "LINK=TARGET" */
	char link[256];
	const char *eq = strchr(spec, '=');
	snprintf(link, sizeof link, "%.*s", (int)(eq - spec), spec);
	return symlink(eq + 1, link) < 0;
}

static int make_secret(const char *dir)
{
	char p[256];
	snprintf(p, sizeof p, "%s/planted.secret", dir);
	if (mkdir(dir, 0700) < 0)
		return 1;
	FILE *f = fopen(p, "w");
	/* Private, as the loader wants: only the owner is wrong. */
	return !f || fputs("attacker-knows-this-secret\n", f) < 0 || fclose(f) != 0 ||
	       chmod(p, 0600) != 0;
}

static int write_file(const char *path, const char *text, mode_t mode)
{
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		return -1;
	return chmod(path, mode);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

/* rheapctl CMD --state-dir DIR [--config CFG]: exit status, output in out. */
static int ctl(const char *cmd, const char *dir, const char *cfg, char *out, size_t cap)
{
	char log[256];
	path_of(log, sizeof log, "ctl.log");
	unlink(log);
	char *argv[] = {(char *)rheapctl,
	                (char *)cmd,
	                "--state-dir",
	                (char *)dir,
	                "--tracerd",
	                (char *)tracerd,
	                cfg ? "--config" : NULL,
	                (char *)cfg,
	                NULL};
	int rc = proc_run(argv, PROC_BOTH, log, out, cap);
	FILE *f = fopen(log, "r");
	size_t n = f ? fread(out, 1, cap - 1, f) : 0;
	out[n] = 0;
	if (f)
		fclose(f);
	return rc;
}

/* After an 'up' that should have been refused: its tracers must not
 * outlive the test. */
static void undo_up(int rc, const char *dir)
{
	char out[4096];
	if (rc == 0)
		ctl("down", dir, NULL, out, sizeof out);
}

/* A directory another user made, open to all: refused, nothing written. */
static void test_foreign_dir(void)
{
	char dir[128], out[4096];
	path_of(dir, sizeof dir, "foreign");
	CHECK(as_nobody(make_open_dir, dir) == 0, "the attacker makes %s", dir);
	int rc = ctl("up", dir, NULL, out, sizeof out);
	CHECK(rc != 0 && strstr(out, dir) && strstr(out, "owned by uid 65534"),
	      "up in another user's directory is refused, naming it and its owner (%d: %s)", rc,
	      out);
	CHECK(entries(dir) == 0, "and nothing was written into it (%zu entries)", entries(dir));
	undo_up(rc, dir);
}

/* The victim's own directory, but open to others. */
static void test_open_mode(void)
{
	char dir[128], out[4096];
	path_of(dir, sizeof dir, "open");
	mkdir(dir, 0700);
	chmod(dir, 0777);
	int rc = ctl("up", dir, NULL, out, sizeof out);
	CHECK(rc != 0 && strstr(out, dir) && strstr(out, "mode 0777"),
	      "a state dir of mode 0777 is refused, naming the mode (%d: %s)", rc, out);
	CHECK(entries(dir) == 0, "and nothing was written into it");
	undo_up(rc, dir);
}

/* The attacker's symlink at the state dir's path, to a victim directory. */
static void test_symlink_dir(void)
{
	char dir[128], target[128], spec[300], out[4096];
	path_of(dir, sizeof dir, "linked");
	path_of(target, sizeof target, "victim-files");
	mkdir(target, 0700);
	snprintf(spec, sizeof spec, "%s=%s", dir, target);
	CHECK(as_nobody(make_link, spec) == 0, "the attacker links %s to %s", dir, target);
	int rc = ctl("up", dir, NULL, out, sizeof out);
	CHECK(rc != 0 && strstr(out, dir) && strstr(out, "symlink"),
	      "a symlink as the state dir is refused (%d: %s)", rc, out);
	CHECK(entries(target) == 0, "and nothing was written where it points");
	undo_up(rc, dir);
}

/* Symlinks inside the victim's state dir, at the names 'up' writes, to a
 * victim file; and a pid file naming an unrelated process of the victim.
 * Both are what a directory once open to others could hold. */
static void test_inside(void)
{
	char dir[128], precious[128], link[200], out[8192];
	path_of(dir, sizeof dir, "state");
	path_of(precious, sizeof precious, "precious");
	mkdir(dir, 0700);
	write_file(precious, "keep me\n", 0600);
	const char *names[] = {"default.json", ".default.json.tmp", "default.secret",
	                       ".default.secret.tmp"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(link, sizeof link, "%s/%s", dir, names[i]);
		symlink(precious, link);
	}
	int rc = ctl("up", dir, NULL, out, sizeof out);
	char buf[64] = {0};
	FILE *f = fopen(precious, "r");
	if (f) {
		(void)!fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	CHECK(rc == 0, "up replaces the symlinks in its own dir and starts (%d: %s)", rc, out);
	CHECK(!strcmp(buf, "keep me\n"), "the file they pointed to is untouched (%s)", buf);
	struct stat st;
	snprintf(link, sizeof link, "%s/default.json", dir);
	CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode), "default.json is a file now");

	/* An unrelated process of the victim, named by tracer 0's pid file. */
	pid_t victim = fork();
	if (victim == 0) {
		pause();
		_exit(0);
	}
	char cfg[200];
	snprintf(cfg, sizeof cfg, "%s/default.json", dir);
	DIR *d = opendir(dir);
	char pidf[400] = "";
	for (struct dirent *e; d && (e = readdir(d));)
		if (strstr(e->d_name, "-0.pid"))
			snprintf(pidf, sizeof pidf, "%s/%s", dir, e->d_name);
	if (d)
		closedir(d);
	char tracer0[32] = "";
	f = fopen(pidf, "r");
	if (f) {
		(void)!fgets(tracer0, sizeof tracer0, f);
		fclose(f);
	}
	char text[32];
	snprintf(text, sizeof text, "%d\n", (int)victim);
	CHECK(pidf[0] && write_file(pidf, text, 0600) == 0, "plant pid %d in %s", (int)victim,
	      pidf);
	rc = ctl("down", dir, cfg, out, sizeof out);
	usleep(100000);
	CHECK(waitpid(victim, NULL, WNOHANG) == 0,
	      "down does not signal a process that is not a tracer (%d: %s)", rc, out);
	CHECK(strstr(out, "names no tracer"), "and says so: %s", out);
	kill(victim, SIGKILL);
	waitpid(victim, NULL, 0);
	/* Tracer 0 is still up (its pid file was the plant): end it here. */
	int t0 = atoi(tracer0);
	if (t0 > 0)
		kill(t0, SIGTERM);
}

/* A secret file of another user's (who then knows the secret). */
static void test_foreign_secret(void)
{
	char nob[128], cfg[200], out[4096], text[600];
	path_of(nob, sizeof nob, "nobody");
	CHECK(as_nobody(make_secret, nob) == 0, "the attacker writes %s/planted.secret", nob);
	path_of(cfg, sizeof cfg, "foreign-secret.json");
	snprintf(text, sizeof text,
	         "{\"heap\": {\"size\": \"64MiB\"}, \"transport\": {\"provider\": \"shm\"},\n"
	         " \"secret_file\": \"%s/planted.secret\",\n"
	         " \"servers\": [{\"host\": \"127.0.0.1\", \"port\": 1}]}\n",
	         nob);
	write_file(cfg, text, 0600);
	char dir[128];
	path_of(dir, sizeof dir, "state-secret");
	int rc = ctl("up", dir, cfg, out, sizeof out);
	CHECK(rc != 0 && strstr(out, "planted.secret is owned by uid 65534"),
	      "a secret file owned by another user is refused (%d: %s)", rc, out);
	char *argv[] = {(char *)tracerd, "--config", cfg, "--index", "0", "--foreground", NULL};
	rc = proc_run(argv, PROC_BOTH, NULL, out, sizeof out);
	CHECK(rc == 2 && strstr(out, "owned by uid 65534"), "and by the tracer too (%d: %s)", rc,
	      out);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s RHEAPCTL TRACERD\n", argv[0]);
		return 2;
	}
	if (geteuid() != 0) {
		printf("skipped: playing a second user needs root\n");
		return 77;
	}
	rheapctl = argv[1];
	tracerd = argv[2];
	snprintf(base, sizeof base, "/tmp/rheap-statedir-XXXXXX");
	if (!mkdtemp(base) || chmod(base, 01777) < 0) {
		perror("test-statedir: temporary directory");
		return 1;
	}
	test_foreign_dir();
	test_open_mode();
	test_symlink_dir();
	test_inside();
	test_foreign_secret();
	char *rm[] = {"/bin/rm", "-rf", base, NULL};
	char out[256];
	proc_run(rm, PROC_BOTH, NULL, out, sizeof out);
	return check_done();
}
