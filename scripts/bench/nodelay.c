/* TCP_NODELAY on every connection a server accepts, preloaded into the bench's S3
 * server (s3s-fs 0.14 sets no TCP_NODELAY): without it, the small last segment of each
 * response waits for the client's delayed ACK, about 40 ms per request on loopback,
 * for any client (curl shows it on a 5 KB ranged GET over a reused connection). Servers
 * in production (AWS S3, MinIO) answer without that stall; so does the bench's, with
 * this. Built by scripts/bench/run.py: cc -shared -fPIC -o nodelay.so nodelay.c -ldl */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

static int nodelay(int fd) {
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    return fd;
}

int accept4(int sock, struct sockaddr *addr, socklen_t *len, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *, int))dlsym(RTLD_NEXT, "accept4");
    return nodelay(real(sock, addr, len, flags));
}

int accept(int sock, struct sockaddr *addr, socklen_t *len) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (!real)
        real = (int (*)(int, struct sockaddr *, socklen_t *))dlsym(RTLD_NEXT, "accept");
    return nodelay(real(sock, addr, len));
}
