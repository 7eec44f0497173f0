/*
 * vectors.h — the known-answer files of tests/vectors/ring-file.
 *
 * NAME.ring is a ring file; NAME.expect what the library says about it:
 * its fingerprint, counts, revision, whether NAME.ring is canonical, and
 * for a fixed list of keys the owner and up to 3 replicas. make_vectors
 * writes NAME.expect (and canonical forms); test_ringfile recomputes each
 * one and compares it byte for byte with the stored file.
 */
#ifndef CHRING_RINGFILE_VECTORS_H
#define CHRING_RINGFILE_VECTORS_H

#include <stddef.h>

#include <chring.h>

/* A file's bytes, malloc'd and NUL-terminated; NULL if it cannot be read. */
char *vectors_read(const char *path, size_t *len);

/* The .expect text of ring file `text` (named `name`), malloc'd; NULL with
 * chr_last_error() set if the file does not load. */
char *vectors_expect(const char *name, const char *text, size_t len);

/* The canonical export of ring file `text` (keeping its %%revision), malloc'd. */
char *vectors_canonical(const char *name, const char *text, size_t len, size_t *out_len);

/* The JSON twin of ring file `text` (keeping its %%revision), malloc'd. */
char *vectors_json(const char *name, const char *text, size_t len);

#endif
