/* A reader like netCDF-C's on a classic file: read(2) 8 KiB at a time, each 8-byte
 * value byte-swapped into an output buffer touched before the clock starts, so its
 * time is the file system's and the swap's, without the first-touch cost of a fresh
 * result array (which on the development VM swings by a second from run to run).
 * Prints the bytes read, the seconds from open to the last read, and a checksum.
 *
 *   cc -O2 -o /tmp/read8k scripts/bench/read8k.c
 *   bash scripts/bench/ab.sh OLD NEW target/bench/grid '/tmp/read8k $MNT/latest/array.nc' 6
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: read8k FILE\n");
        return 2;
    }
    struct stat st;
    if (stat(argv[1], &st) != 0) {
        perror(argv[1]);
        return 1;
    }
    uint64_t *out = malloc(st.st_size + 8);
    if (!out) {
        perror("malloc");
        return 1;
    }
    memset(out, 1, st.st_size + 8);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    char buf[8192];
    long long total = 0;
    ssize_t n;
    uint64_t *o = out;
    while ((n = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i + 8 <= n; i += 8) {
            uint64_t v;
            memcpy(&v, buf + i, 8);
            *o++ = __builtin_bswap64(v);
        }
        total += n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (n < 0) {
        perror("read");
        return 1;
    }
    uint64_t sum = 0;
    for (long long i = 0; i < total / 8; i++)
        sum += out[i];
    printf("%lld %.4f %llu\n", total,
           (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
           (unsigned long long)sum);
    return 0;
}
