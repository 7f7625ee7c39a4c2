/* Sockets with deadlines for the store and the launcher: listen, connect (retrying
 * until a deadline while the other side is not up yet), and whole-message send and
 * receive that give up at a deadline. Deadlines are nn_net_now() seconds. */
#ifndef NN_DIST_NET_H
#define NN_DIST_NET_H

#include <stddef.h>

/* Monotonic clock, seconds. */
double nn_net_now(void);

/* Results of the whole-message calls (errno holds the cause of NN_NET_ERROR). */
enum { NN_NET_OK = 0, NN_NET_ERROR = -1, NN_NET_TIMEOUT = -2, NN_NET_CLOSED = -3 };

/* A listening TCP socket on host:port (port 0: any free port); *bound gets the port.
 * Returns the fd, or -1 with a message in err. */
int nn_net_listen(const char *host, int port, int *bound, char *err, size_t errlen);
/* Connect to host:port, retrying refused/unreachable attempts until the deadline.
 * Returns the fd (blocking, TCP_NODELAY), or -1 with a message in err. */
int nn_net_connect(const char *host, int port, double deadline, char *err, size_t errlen);
int nn_net_send_all(int fd, const void *buf, size_t n, double deadline);
int nn_net_recv_all(int fd, void *buf, size_t n, double deadline);
/* The local address of a connected socket as text ("127.0.0.1"); 0 on success. */
int nn_net_local_addr(int fd, char *buf, size_t len);
/* Text for a result of the calls above ("timed out", "connection closed", strerror). */
const char *nn_net_strerror(int result);

#endif
