/* The launcher: `nnrepl --nproc-per-node N [--nnodes M --node-rank R --master-addr A
 * --master-port P] [options] script.lua args` (or -e code) starts N ranks of this node, each an
 * nnrepl running the script with torchrun's environment (RANK, LOCAL_RANK,
 * WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT; OMP_NUM_THREADS=1
 * unless set). With several ranks each output line is prefixed "[rankR]: ".
 *
 * Ranks run in their own process groups with stdin from /dev/null; SIGINT, SIGTERM,
 * SIGHUP and SIGQUIT reaching the launcher are passed on to them. When a rank fails
 * (non-zero exit or a signal) the launcher names it and its status, sends SIGTERM to
 * the others, SIGKILL after a grace period, and exits with the failed rank's status
 * (128 + signal for a signal). With one node and no port given, the port is a free one. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dist/net.h"
#include "interp.h"

#define GRACE_SECONDS 5.0  /* between SIGTERM and SIGKILL */
#define DECIDE_SECONDS 0.3 /* after a rank fails, for the others that fail with it to be seen too */

typedef struct {
    char *data;
    size_t len, cap;
} linebuf;

typedef struct {
    pid_t pid;
    int rank, local_rank;
    int fd[2];       /* stdout, stderr pipes; -1 once at end of file */
    linebuf buf[2];
    bool running, failed;
    bool collective_error; /* its stderr reported a failed collective: likely a peer's failure, not its own */
    int status;
} child;

static volatile sig_atomic_t got_signal;
static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int e = errno;
    if (sig != SIGCHLD) got_signal = sig;
    char b = (char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) { /* the pipe is full: the loop sees got_signal anyway */ }
    errno = e;
}

static const char *const long_opts[] = {"nproc-per-node", "nproc_per_node", "nnodes", "node-rank", "node_rank",
                                        "master-addr", "master_addr", "master-port", "master_port", NULL};

/* "--name" or "--name=value": the option's index in long_opts, -1 if not a launcher option. */
static int launcher_opt(const char *a, const char **value)
{
    if (strncmp(a, "--", 2)) return -1;
    for (int i = 0; long_opts[i]; i++) {
        size_t n = strlen(long_opts[i]);
        if (strncmp(a + 2, long_opts[i], n)) continue;
        if (a[2 + n] == '\0') { *value = NULL; return i; }
        if (a[2 + n] == '=') { *value = a + 3 + n; return i; }
    }
    return -1;
}

bool interp_launch_requested(char **argv)
{
    for (int i = 1; argv[i] && argv[i][0] == '-' && strcmp(argv[i], "--") && strcmp(argv[i], "-"); i++) {
        const char *v;
        if (launcher_opt(argv[i], &v) >= 0) return true;
        if ((argv[i][1] == 'e' || argv[i][1] == 'l') && argv[i][2] == '\0') i++; /* skip the option's argument */
        if (!argv[i]) break;
    }
    return false;
}

void interp_launch_child_init(void)
{
    const char *v = getenv("NNREPL_LAUNCHED");
    if (v && *v == '1') setvbuf(stdout, NULL, _IOLBF, 0); /* lines reach the launcher as they are printed */
}

static int parse_int(const char *name, const char *v, int min, int max, int *out)
{
    char *end;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || !*v || *end || x < min || x > max) {
        fprintf(stderr, "%s: --%s needs an integer in [%d, %d], got '%s'\n", INTERP_PROGNAME, name, min, max, v ? v : "");
        return -1;
    }
    *out = (int)x;
    return 0;
}

static void emit(int rank, int stream, const char *line, size_t n, bool prefix)
{
    FILE *f = stream ? stderr : stdout;
    if (prefix) fprintf(f, "[rank%d]: ", rank);
    fwrite(line, 1, n, f);
    fflush(f);
}

/* Pass on the complete lines read into b (all of it at end of file). */
static void flush_lines(child *c, int stream, bool all, bool prefix)
{
    linebuf *b = &c->buf[stream];
    size_t start = 0;
    for (size_t i = 0; i < b->len; i++)
        if (b->data[i] == '\n') {
            emit(c->rank, stream, b->data + start, i + 1 - start, prefix);
            if (stream == 1 && memmem(b->data + start, i - start, " failed on rank ", 16)) c->collective_error = true;
            start = i + 1;
        }
    if (all && start < b->len) {
        emit(c->rank, stream, b->data + start, b->len - start, prefix);
        emit(c->rank, stream, "\n", 1, false);
        start = b->len;
    }
    memmove(b->data, b->data + start, b->len - start);
    b->len -= start;
}

/* Read what is there; false when nothing more is (for now or for good). */
static bool read_pipe(child *c, int stream, bool prefix)
{
    linebuf *b = &c->buf[stream];
    if (b->cap - b->len < 4096) {
        size_t cap = b->cap * 2 + 8192;
        char *d = realloc(b->data, cap);
        if (!d) { flush_lines(c, stream, true, prefix); return false; }
        b->data = d;
        b->cap = cap;
    }
    ssize_t k = read(c->fd[stream], b->data + b->len, b->cap - b->len);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) return false;
    if (k <= 0) {
        flush_lines(c, stream, true, prefix);
        close(c->fd[stream]);
        c->fd[stream] = -1;
        return false;
    }
    b->len += (size_t)k;
    flush_lines(c, stream, false, prefix);
    return true;
}

static void describe(const child *c, char *buf, size_t len)
{
    if (WIFSIGNALED(c->status))
        snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(c->status));
}

static void signal_all(child *cs, int n, int sig)
{
    for (int i = 0; i < n; i++)
        if (cs[i].running) kill(-cs[i].pid, sig);
}

static pid_t spawn(child *c, char **child_argv, int world, int nproc, int node_rank, const char *addr, int port)
{
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        dup2(out[1], 1);
        dup2(err[1], 2);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        char v[32];
        snprintf(v, sizeof v, "%d", c->rank); setenv("RANK", v, 1);
        snprintf(v, sizeof v, "%d", c->local_rank); setenv("LOCAL_RANK", v, 1);
        snprintf(v, sizeof v, "%d", world); setenv("WORLD_SIZE", v, 1);
        snprintf(v, sizeof v, "%d", nproc); setenv("LOCAL_WORLD_SIZE", v, 1);
        snprintf(v, sizeof v, "%d", node_rank); setenv("GROUP_RANK", v, 1);
        snprintf(v, sizeof v, "%d", port); setenv("MASTER_PORT", v, 1);
        setenv("MASTER_ADDR", addr, 1);
        setenv("NNREPL_LAUNCHED", "1", 1);
        if (nproc > 1) setenv("OMP_NUM_THREADS", "1", 0);
        execv("/proc/self/exe", child_argv);
        execvp(child_argv[0], child_argv);
        fprintf(stderr, "%s: cannot start rank %d: %s\n", INTERP_PROGNAME, c->rank, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here, so a signal forwarded at once finds the group */
    close(out[1]);
    close(err[1]);
    c->fd[0] = out[0];
    c->fd[1] = err[0];
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    c->pid = pid;
    c->running = true;
    return pid;
}

int interp_launch(int argc, char **argv)
{
    int nproc = 1, nnodes = 1, node_rank = 0, port = -1;
    const char *addr = NULL;
    char **child_argv = calloc((size_t)argc + 1, sizeof *child_argv);
    if (!child_argv) return EXIT_FAILURE;
    int nc = 0;
    bool has_e = false; /* -e code runs without a script */
    child_argv[nc++] = argv[0];
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i], *v;
        if (a[0] != '-' || !strcmp(a, "-")) break;
        if (!strcmp(a, "--")) { child_argv[nc++] = argv[i++]; break; }
        int k = launcher_opt(a, &v);
        if (k < 0) {
            child_argv[nc++] = argv[i];
            has_e |= a[1] == 'e';
            if ((a[1] == 'e' || a[1] == 'l') && a[2] == '\0' && i + 1 < argc) child_argv[nc++] = argv[++i];
            continue;
        }
        if (!v) {
            if (i + 1 >= argc) { fprintf(stderr, "%s: '%s' needs an argument\n", INTERP_PROGNAME, a); return EXIT_FAILURE; }
            v = argv[++i];
        }
        const char *name = long_opts[k];
        int bad = 0;
        if (k <= 1) bad = parse_int("nproc-per-node", v, 1, 4096, &nproc);
        else if (k == 2) bad = parse_int("nnodes", v, 1, 1 << 20, &nnodes);
        else if (k <= 4) bad = parse_int("node-rank", v, 0, 1 << 20, &node_rank);
        else if (k <= 6) addr = v;
        else bad = parse_int("master-port", v, 1, 65535, &port);
        (void)name;
        if (bad) return EXIT_FAILURE;
    }
    if (i >= argc && !has_e) {
        fprintf(stderr, "%s: the launcher needs a script: %s --nproc-per-node N script.lua [args]\n", INTERP_PROGNAME, INTERP_PROGNAME);
        return EXIT_FAILURE;
    }
    for (; i < argc; i++) child_argv[nc++] = argv[i];
    child_argv[nc] = NULL;
    if (node_rank >= nnodes) {
        fprintf(stderr, "%s: --node-rank %d must be less than --nnodes %d\n", INTERP_PROGNAME, node_rank, nnodes);
        return EXIT_FAILURE;
    }
    if (!addr) addr = getenv("MASTER_ADDR");
    if (!addr || !*addr) addr = "127.0.0.1";
    if (port < 0 && getenv("MASTER_PORT")) parse_int("master-port", getenv("MASTER_PORT"), 1, 65535, &port);
    if (port < 0 && nnodes == 1) { /* one node: any free port */
        char err[256];
        int fd = nn_net_listen("127.0.0.1", 0, &port, err, sizeof err);
        if (fd >= 0) close(fd);
        else port = -1;
    }
    if (port < 0) port = 29500;
    int world = nproc * nnodes;
    bool prefix = nproc > 1;

    if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK)) { perror(INTERP_PROGNAME); return EXIT_FAILURE; }
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t s = 0; s < sizeof sigs / sizeof *sigs; s++) sigaction(sigs[s], &sa, NULL);
    sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    sigaction(SIGCHLD, &sa, NULL); /* wakes the loop at once, so the first rank to fail is the one named */
    signal(SIGPIPE, SIG_IGN);

    child *cs = calloc((size_t)nproc, sizeof *cs);
    if (!cs) return EXIT_FAILURE;
    int started = 0;
    for (int r = 0; r < nproc; r++) {
        cs[r].rank = node_rank * nproc + r;
        cs[r].local_rank = r;
        cs[r].fd[0] = cs[r].fd[1] = -1;
        if (spawn(&cs[r], child_argv, world, nproc, node_rank, addr, port) < 0) {
            fprintf(stderr, "%s: cannot start rank %d: %s\n", INTERP_PROGNAME, cs[r].rank, strerror(errno));
            break;
        }
        started++;
    }
    int exit_code = started == nproc ? EXIT_SUCCESS : EXIT_FAILURE;
    double kill_at = started == nproc ? 0 : nn_net_now() + GRACE_SECONDS;
    if (started < nproc) signal_all(cs, started, SIGTERM);
    int forwarded = 0;
    bool failed = started < nproc;
    int *failed_order = calloc((size_t)nproc, sizeof *failed_order), nfailed = 0;
    double decide_at = 0;

    struct pollfd *pf = calloc((size_t)(2 * nproc + 1), sizeof *pf);
    child **owner = calloc((size_t)(2 * nproc + 1), sizeof *owner);
    int *stream = calloc((size_t)(2 * nproc + 1), sizeof *stream);
    for (;;) {
        int n = 0;
        pf[n++] = (struct pollfd){sig_pipe[0], POLLIN, 0};
        int running = 0;
        for (int r = 0; r < started; r++) {
            running += cs[r].running;
            for (int s = 0; s < 2; s++)
                if (cs[r].fd[s] >= 0) {
                    owner[n] = &cs[r];
                    stream[n] = s;
                    pf[n++] = (struct pollfd){cs[r].fd[s], POLLIN, 0};
                }
        }
        if (!running && n == 1 && (!decide_at || failed)) break;
        poll(pf, (nfds_t)n, decide_at && !failed ? 20 : 100);
        if (pf[0].revents) {
            char b[16];
            while (read(sig_pipe[0], b, sizeof b) > 0) {}
        }
        for (int k = 1; k < n; k++)
            if (pf[k].revents) read_pipe(owner[k], stream[k], prefix);
        if (got_signal) { /* pass it on; a second one ends the ranks for good */
            int sig = got_signal;
            got_signal = 0;
            signal_all(cs, started, forwarded++ ? SIGKILL : sig);
            if (exit_code == EXIT_SUCCESS) exit_code = 128 + sig;
            if (!kill_at) kill_at = nn_net_now() + GRACE_SECONDS;
        }
        int status;
        pid_t pid;
        while ((pid = waitpid(-1, &status, WNOHANG)) > 0) { /* in the order they ended */
            int r = 0;
            while (r < started && cs[r].pid != pid) r++;
            if (r == started) continue;
            cs[r].status = status;
            cs[r].running = false;
            bool ok = WIFEXITED(cs[r].status) && WEXITSTATUS(cs[r].status) == 0;
            if (ok || failed || forwarded) continue;
            cs[r].failed = true;
            failed_order[nfailed++] = r;
            for (int s = 0; s < 2; s++) /* its last words (a process it left behind may hold the pipe) */
                while (cs[r].fd[s] >= 0 && read_pipe(&cs[r], s, prefix)) {}
            if (!decide_at) decide_at = nn_net_now() + DECIDE_SECONDS;
        }
        if (decide_at && nn_net_now() >= decide_at && !failed) {
            /* the first to fail, preferring a rank whose own error was not a collective that failed (the
             * others' collectives fail because it went): ranks dying together are reaped in no set order */
            int r = failed_order[0];
            for (int k = 0; k < nfailed; k++)
                if (!cs[failed_order[k]].collective_error) { r = failed_order[k]; break; }
            failed = true;
            char what[128];
            describe(&cs[r], what, sizeof what);
            fprintf(stderr, "%s: rank %d (local rank %d, pid %d) %s; stopping the other ranks\n", INTERP_PROGNAME, cs[r].rank,
                    cs[r].local_rank, (int)cs[r].pid, what);
            exit_code = WIFSIGNALED(cs[r].status) ? 128 + WTERMSIG(cs[r].status) : WEXITSTATUS(cs[r].status);
            signal_all(cs, started, SIGTERM);
            kill_at = nn_net_now() + GRACE_SECONDS;
        }
        if (kill_at && nn_net_now() > kill_at) {
            signal_all(cs, started, SIGKILL);
            kill_at = nn_net_now() + 3600;
        }
    }
    if (failed && exit_code == EXIT_SUCCESS) exit_code = EXIT_FAILURE;
    for (int r = 0; r < started; r++) {
        free(cs[r].buf[0].data);
        free(cs[r].buf[1].data);
    }
    free(failed_order);
    free(pf);
    free(owner);
    free(stream);
    free(cs);
    free(child_argv);
    return exit_code;
}
