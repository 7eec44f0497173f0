/*
 * ringfile_probe — the C library's view of ring files, for the etcd harness.
 *
 *   ringfile_probe fingerprint FILE...
 *       Builds the ring each FILE describes (chr_ring_new_from_file) and
 *       prints one line per file: "0x" and 16 hex digits, its
 *       chr_ring_fingerprint(), or "error MESSAGE" for a file the library
 *       refuses. The harness writes the files itself from etcd's state, so
 *       these are the expected fingerprints computed offline, independent
 *       of any watcher.
 *
 *   ringfile_probe read-loop FILE SECONDS MAX_READS BAD_COPY
 *       Reads FILE whole again and again, as fast as it can, until SECONDS
 *       have passed, MAX_READS reads were made, or stdin reaches end of
 *       file; each text that differs from the last good one is parsed
 *       (chr_ring_new_from_text) and must have a %%fingerprint, which the
 *       library checks against the members it lists, so a partial file
 *       fails. A file that was replaced by rename is always complete. Prints
 *       "reads N ok N bad N missing N revisions N"; the first bad text is
 *       copied to BAD_COPY and its error printed as "first-bad: MESSAGE".
 *
 *   ringfile_probe availability FILE
 *       Builds the ring FILE describes and prints its availability as the
 *       library holds it: "digest 0x... panic N threshold N down ID ..."
 *       (the ids marked down, in the ring's node order, raw bytes).
 *
 * Exit status 0 (read-loop: also when it saw bad files; the harness
 * judges the counts), 1 when a file was refused or on an error, 2 on bad
 * usage.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, O_CLOEXEC under -std=c99 */

#include <chring.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int usage(void) {
    fprintf(stderr, "usage: ringfile_probe fingerprint FILE...\n"
                    "       ringfile_probe read-loop FILE SECONDS MAX_READS BAD_COPY\n"
                    "       ringfile_probe availability FILE\n");
    return 2;
}

static int cmd_fingerprint(int count, char **paths) {
    int failed = 0;
    for (int i = 0; i < count; i++) {
        chr_ring *ring = NULL;
        uint64_t fp = 0;
        chr_status st = chr_ring_new_from_file(paths[i], NULL, &ring, NULL);
        if (st == CHR_OK) {
            st = chr_ring_fingerprint(ring, &fp);
        }
        if (st == CHR_OK) {
            printf("0x%016" PRIx64 "\n", fp);
        } else {
            /* one line per file: the message's own line breaks become blanks */
            char message[1024];
            snprintf(message, sizeof message, "%s: %s", chr_strerror(st), chr_last_error());
            for (char *c = message; *c; c++) {
                if (*c == '\n' || *c == '\r') {
                    *c = ' ';
                }
            }
            printf("error %s\n", message);
            failed = 1;
        }
        chr_ring_free(ring);
    }
    return failed;
}

static int cmd_availability(const char *path) {
    chr_ring *ring = NULL;
    chr_snapshot *snap = NULL;
    chr_availability_info info = CHR_AVAILABILITY_INFO_INIT;
    chr_status st = chr_ring_new_from_file(path, NULL, &ring, NULL);
    if (st == CHR_OK) {
        st = chr_ring_availability(ring, &info);
    }
    if (st == CHR_OK) {
        st = chr_ring_snapshot(ring, &snap);
    }
    if (st != CHR_OK) {
        printf("error %s: %s\n", chr_strerror(st), chr_last_error());
        chr_ring_free(ring);
        return 1;
    }
    printf("digest 0x%016" PRIx64 " panic %u threshold %u down", info.digest, (unsigned) info.panic,
           (unsigned) info.panic_threshold);
    size_t n = 0;
    st = chr_snapshot_node_count(snap, &n);
    for (size_t i = 0; i < n && st == CHR_OK; i++) {
        uint32_t marked = 0;
        chr_node_view view;
        st = chr_snapshot_marked_down(snap, i, &marked);
        if (st == CHR_OK && marked) {
            st = chr_snapshot_node(snap, i, &view);
            if (st == CHR_OK) {
                printf(" %.*s", (int) view.id_len, (const char *) view.id);
            }
        }
    }
    printf("\n");
    chr_snapshot_release(snap);
    chr_ring_free(ring);
    return st == CHR_OK ? 0 : 1;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* The whole file into *buf (grown as needed); -1 with errno on failure. */
static long read_whole(const char *path, char **buf, size_t *cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    size_t len = 0;
    for (;;) {
        if (len == *cap) {
            size_t ncap = *cap ? *cap * 2 : 65536;
            char *nbuf = realloc(*buf, ncap);
            if (nbuf == NULL) {
                close(fd);
                errno = ENOMEM;
                return -1;
            }
            *buf = nbuf;
            *cap = ncap;
        }
        ssize_t n = read(fd, *buf + len, *cap - len);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            int saved = errno;
            close(fd);
            errno = saved;
            return -1;
        }
        if (n == 0) {
            break;
        }
        len += (size_t) n;
    }
    close(fd);
    return (long) len;
}

static int stdin_closed(void) {
    struct pollfd p = {.fd = 0, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0) {
        return 0;
    }
    char c[64];
    return read(0, c, sizeof c) <= 0;
}

static int cmd_read_loop(const char *path, double seconds, long max_reads, const char *bad_copy) {
    char *buf = NULL, *good = NULL;
    size_t cap = 0, good_len = 0;
    long reads = 0, ok = 0, bad = 0, missing = 0, revisions = 0;
    uint64_t last_revision = 0;
    int have_revision = 0;
    double deadline = now_seconds() + seconds;
    while (reads < max_reads && now_seconds() < deadline) {
        if ((reads & 255) == 0 && stdin_closed()) {
            break;
        }
        reads++;
        long len = read_whole(path, &buf, &cap);
        if (len < 0) {
            if (errno == ENOENT) {
                missing++;
                continue;
            }
            fprintf(stderr, "ringfile_probe: %s: %s\n", path, strerror(errno));
            free(buf);
            free(good);
            return 1;
        }
        if (good != NULL && (size_t) len == good_len && memcmp(buf, good, good_len) == 0) {
            ok++; /* the text parsed last time: building its ring again proves nothing */
            continue;
        }
        chr_ring *ring = NULL;
        chr_ringfile_info info = CHR_RINGFILE_INFO_INIT;
        chr_status st = chr_ring_new_from_text(buf, (size_t) len, path, NULL, &ring, &info);
        if (st == CHR_OK && (info.flags & CHR_RINGFILE_HAS_FINGERPRINT)) {
            ok++;
            char *copy = realloc(good, (size_t) len + 1);
            if (copy != NULL) {
                memcpy(copy, buf, (size_t) len);
                good = copy;
                good_len = (size_t) len;
            }
            if ((info.flags & CHR_RINGFILE_HAS_REVISION)
                && (!have_revision || info.revision != last_revision)) {
                have_revision = 1;
                last_revision = info.revision;
                revisions++;
            }
        } else {
            if (bad == 0) {
                printf("first-bad: %s\n", st == CHR_OK ? "no %%fingerprint in the file"
                                                       : chr_last_error());
                FILE *f = fopen(bad_copy, "wb");
                if (f != NULL) {
                    fwrite(buf, 1, (size_t) len, f);
                    fclose(f);
                }
            }
            bad++;
        }
        chr_ring_free(ring);
    }
    printf("reads %ld ok %ld bad %ld missing %ld revisions %ld\n", reads, ok, bad, missing,
           revisions);
    free(buf);
    free(good);
    return 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "fingerprint") == 0) {
        return cmd_fingerprint(argc - 2, argv + 2);
    }
    if (argc == 3 && strcmp(argv[1], "availability") == 0) {
        return cmd_availability(argv[2]);
    }
    if (argc == 6 && strcmp(argv[1], "read-loop") == 0) {
        double seconds = strtod(argv[3], NULL);
        long max_reads = strtol(argv[4], NULL, 10);
        if (seconds <= 0 || max_reads <= 0) {
            return usage();
        }
        return cmd_read_loop(argv[2], seconds, max_reads, argv[5]);
    }
    return usage();
}
