#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double nn_net_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int ms_left(double deadline)
{
    double left = deadline - nn_net_now();
    if (left <= 0) return 0;
    return left > 1e6 ? 1000000000 : (int)(left * 1000) + 1;
}

static int resolve(const char *host, int port, int passive, struct addrinfo **res, char *err, size_t errlen)
{
    struct addrinfo hints = {0};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    int rc = getaddrinfo(host && *host ? host : NULL, ps, &hints, res);
    if (rc) snprintf(err, errlen, "cannot resolve '%s': %s", host ? host : "", gai_strerror(rc));
    return rc ? -1 : 0;
}

int nn_net_listen(const char *host, int port, int *bound, char *err, size_t errlen)
{
    struct addrinfo *res;
    if (resolve(host, port, 1, &res, err, errlen)) return -1;
    int fd = -1, e = 0;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) { e = errno; continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 1024) == 0) break;
        e = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "cannot listen on %s:%d (%s)", host, port, strerror(e));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* One non-blocking connect attempt bounded by the deadline; 0 or an errno. */
static int try_connect(const struct addrinfo *a, double deadline, int *out)
{
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) return errno;
    int e = 0;
    if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
        e = errno;
        if (e == EINPROGRESS) {
            struct pollfd p = {fd, POLLOUT, 0};
            int n = poll(&p, 1, ms_left(deadline));
            socklen_t l = sizeof e;
            if (n == 0) e = ETIMEDOUT;
            else if (n < 0) e = errno;
            else getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l);
        }
    }
    if (e) { close(fd); return e; }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *out = fd;
    return 0;
}

int nn_net_connect(const char *host, int port, double deadline, char *err, size_t errlen)
{
    int e = ETIMEDOUT;
    double wait = 0.01;
    for (;;) {
        struct addrinfo *res;
        if (resolve(host, port, 0, &res, err, errlen) == 0) {
            for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = -1;
                e = try_connect(a, deadline, &fd);
                if (!e) { freeaddrinfo(res); return fd; }
            }
            freeaddrinfo(res);
        } else e = EHOSTUNREACH;
        if (nn_net_now() + wait > deadline) break;
        struct timespec ts = {0, (long)(wait * 1e9)};
        nanosleep(&ts, NULL);
        if (wait < 0.5) wait *= 2; /* the server may not be up yet: try again, backing off */
    }
    snprintf(err, errlen, "cannot connect to %s:%d (%s)", host, port, strerror(e));
    return -1;
}

int nn_net_send_all(int fd, const void *buf, size_t n, double deadline)
{
    const char *p = buf;
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k > 0) { p += k; n -= (size_t)k; continue; }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return errno == EPIPE || errno == ECONNRESET ? NN_NET_CLOSED : NN_NET_ERROR;
        struct pollfd pf = {fd, POLLOUT, 0};
        int r = poll(&pf, 1, ms_left(deadline));
        if (r == 0) return NN_NET_TIMEOUT;
        if (r < 0 && errno != EINTR) return NN_NET_ERROR;
    }
    return NN_NET_OK;
}

int nn_net_recv_all(int fd, void *buf, size_t n, double deadline)
{
    char *p = buf;
    while (n) {
        struct pollfd pf = {fd, POLLIN, 0};
        int r = poll(&pf, 1, ms_left(deadline));
        if (r == 0) return NN_NET_TIMEOUT;
        if (r < 0) {
            if (errno == EINTR) continue;
            return NN_NET_ERROR;
        }
        ssize_t k = recv(fd, p, n, MSG_DONTWAIT);
        if (k == 0) return NN_NET_CLOSED;
        if (k < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
            return errno == ECONNRESET ? NN_NET_CLOSED : NN_NET_ERROR;
        }
        p += k;
        n -= (size_t)k;
    }
    return NN_NET_OK;
}

int nn_net_local_addr(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl)) return -1;
    const void *a = ss.ss_family == AF_INET6 ? (const void *)&((struct sockaddr_in6 *)&ss)->sin6_addr
                                              : (const void *)&((struct sockaddr_in *)&ss)->sin_addr;
    return inet_ntop(ss.ss_family, a, buf, (socklen_t)len) ? 0 : -1;
}

const char *nn_net_strerror(int result)
{
    switch (result) {
    case NN_NET_OK: return "ok";
    case NN_NET_TIMEOUT: return "timed out";
    case NN_NET_CLOSED: return "connection closed by the other side";
    default: return strerror(errno);
    }
}
