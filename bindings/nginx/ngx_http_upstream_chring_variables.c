
/*
 * ngx_http_upstream_chring_variables.c — $chring_fingerprint,
 * $chring_revision, $chring_refusal, $chring_refused_revision,
 * $chring_availability, $chring_down, and the same with _NAME for
 * upstream NAME: what the worker's primary ring is and, with file=, what
 * its follower says of the ring file.
 */


#include "ngx_http_upstream_chring.h"


#define NGX_HTTP_CHRING_VAR_FINGERPRINT       0
#define NGX_HTTP_CHRING_VAR_REVISION          1
#define NGX_HTTP_CHRING_VAR_REFUSAL           2
#define NGX_HTTP_CHRING_VAR_REFUSED_REVISION  3
#define NGX_HTTP_CHRING_VAR_AVAILABILITY      4
#define NGX_HTTP_CHRING_VAR_DOWN              5


static ngx_int_t ngx_http_upstream_chring_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_upstream_chring_named_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_upstream_chring_value(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, ngx_http_upstream_srv_conf_t *uscf,
    uintptr_t which);
static u_char *ngx_http_upstream_chring_down_ids(ngx_http_request_t *r,
    chr_snapshot *snap, size_t *len);


static ngx_http_variable_t  ngx_http_upstream_chring_vars[] = {

    { ngx_string("chring_fingerprint"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_FINGERPRINT,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("chring_revision"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_REVISION,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("chring_refusal"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_REFUSAL,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("chring_refused_revision"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_REFUSED_REVISION,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("chring_availability"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_AVAILABILITY,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("chring_down"), NULL,
      ngx_http_upstream_chring_variable, NGX_HTTP_CHRING_VAR_DOWN,
      NGX_HTTP_VAR_NOCACHEABLE, 0 },

    /*
     * $chring_fingerprint_NAME, ...: upstream NAME's. nginx gives a prefix
     * variable's handler its full name, not `data`: the prefix is looked
     * up again in ngx_http_upstream_chring_prefixes. No prefix is the
     * start of another, so that any name has one meaning.
     */

    { ngx_string("chring_fingerprint_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

    { ngx_string("chring_revision_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

    { ngx_string("chring_refusal_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

    { ngx_string("chring_refused_revision_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

    { ngx_string("chring_availability_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

    { ngx_string("chring_down_"), NULL,
      ngx_http_upstream_chring_named_variable, 0,
      NGX_HTTP_VAR_NOCACHEABLE|NGX_HTTP_VAR_PREFIX, 0 },

      ngx_http_null_variable
};


static struct {
    ngx_str_t   prefix;
    uintptr_t   which;
} ngx_http_upstream_chring_prefixes[] = {
    { ngx_string("chring_fingerprint_"), NGX_HTTP_CHRING_VAR_FINGERPRINT },
    { ngx_string("chring_revision_"), NGX_HTTP_CHRING_VAR_REVISION },
    { ngx_string("chring_refusal_"), NGX_HTTP_CHRING_VAR_REFUSAL },
    { ngx_string("chring_refused_revision_"),
      NGX_HTTP_CHRING_VAR_REFUSED_REVISION },
    { ngx_string("chring_availability_"), NGX_HTTP_CHRING_VAR_AVAILABILITY },
    { ngx_string("chring_down_"), NGX_HTTP_CHRING_VAR_DOWN },
};


ngx_int_t
ngx_http_upstream_chring_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_upstream_chring_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }

        var->get_handler = v->get_handler;
        var->data = v->data;
    }

    return NGX_OK;
}


/*
 * The variables of the request's upstream (empty when the request has no
 * chring upstream). $chring_availability is the digest of the ring that
 * chose the request's peer, even if a newer file is in use by now.
 */
static ngx_int_t
ngx_http_upstream_chring_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    u_char    *p;
    uint64_t   digest;

    if (r->upstream == NULL || r->upstream->upstream == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    if (data == NGX_HTTP_CHRING_VAR_AVAILABILITY
        && ngx_http_upstream_chring_request_availability(r, &digest) == NGX_OK)
    {
        p = ngx_pnalloc(r->pool, 2 + 16);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "0x%016xL", digest) - p;
        v->data = p;
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        return NGX_OK;
    }

    return ngx_http_upstream_chring_value(r, v, r->upstream->upstream, data);
}


/*
 * The same for upstream NAME, whatever the request (a status location).
 * nginx lowercases variable names, so NAME is compared without case.
 */
static ngx_int_t
ngx_http_upstream_chring_named_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    ngx_str_t                       *name = (ngx_str_t *) data;

    size_t                           skip;
    ngx_uint_t                       i, k;
    ngx_http_upstream_main_conf_t   *umcf;
    ngx_http_upstream_srv_conf_t   **uscfp;

    v->not_found = 1;

    for (k = 0; k < sizeof(ngx_http_upstream_chring_prefixes)
                    / sizeof(ngx_http_upstream_chring_prefixes[0]); k++)
    {
        skip = ngx_http_upstream_chring_prefixes[k].prefix.len;

        if (name->len >= skip
            && ngx_strncmp(name->data,
                           ngx_http_upstream_chring_prefixes[k].prefix.data,
                           skip)
               == 0)
        {
            break;
        }
    }

    if (k == sizeof(ngx_http_upstream_chring_prefixes)
             / sizeof(ngx_http_upstream_chring_prefixes[0]))
    {
        return NGX_OK;
    }

    umcf = ngx_http_get_module_main_conf(r, ngx_http_upstream_module);
    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->host.len == name->len - skip
            && ngx_strncasecmp(uscfp[i]->host.data, name->data + skip,
                               name->len - skip) == 0
            && uscfp[i]->srv_conf != NULL)
        {
            return ngx_http_upstream_chring_value(r, v, uscfp[i],
                                  ngx_http_upstream_chring_prefixes[k].which);
        }
    }

    return NGX_OK;
}


/*
 * The variables' value for chring upstream `uscf` (else not found), in
 * this worker:
 *
 *   fingerprint       the primary ring's, "0x" and 16 hex digits: with
 *                     file=, the follower's applied_fingerprint (the
 *                     fallback's while the ring is the fallback's)
 *   revision          the %%revision of the ring file applied last (empty
 *                     without file= or without %%revision), or of the
 *                     fallback
 *   refusal           while the file as last read is refused, why: the
 *                     follower's message, chring's "file:line: reason"
 *   refused_revision  while it is refused, the %%revision it declared
 *   availability      the ring's availability digest, "0x" and 16 hex
 *                     digits (0 when nothing is marked down and the panic
 *                     threshold is the default, also without file=)
 *   down              the ids the ring marks down, comma-separated (empty
 *                     when none), whether or not the ring is in panic
 *
 * Reading one checks the file first, as a request through the upstream
 * does.
 */
static ngx_int_t
ngx_http_upstream_chring_value(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, ngx_http_upstream_srv_conf_t *uscf,
    uintptr_t data)
{
    u_char                               *p;
    size_t                                len;
    uint64_t                              fingerprint;
    chr_follow_state                      state = CHR_FOLLOW_STATE_INIT;
    ngx_http_upstream_chring_srv_conf_t  *ccf;

    v->not_found = 1;

    if (uscf->srv_conf == NULL) {
        return NGX_OK;          /* an implicit upstream (proxy_pass host) */
    }

    ccf = ngx_http_conf_upstream_srv_conf(uscf, ngx_http_upstream_chring_module);

    if (ccf == NULL || !ccf->configured || ccf->primary.snapshot == NULL) {
        return NGX_OK;
    }

    ngx_http_upstream_chring_file_check(ccf, r->connection->log);

    if (ccf->file) {
        if (ngx_http_upstream_chring_file_state(ccf, &state) != NGX_OK) {
            return NGX_OK;
        }

    } else if (data != NGX_HTTP_CHRING_VAR_FINGERPRINT
               && data != NGX_HTTP_CHRING_VAR_AVAILABILITY
               && data != NGX_HTTP_CHRING_VAR_DOWN)
    {
        return NGX_OK;
    }

    switch (data) {

    case NGX_HTTP_CHRING_VAR_AVAILABILITY:
        p = ngx_pnalloc(r->pool, 2 + 16);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "0x%016xL", ccf->primary.availability) - p;
        break;

    case NGX_HTTP_CHRING_VAR_DOWN:
        p = ngx_http_upstream_chring_down_ids(r, ccf->primary.snapshot, &len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = len;
        break;

    case NGX_HTTP_CHRING_VAR_FINGERPRINT:
        if (ccf->file) {
            fingerprint = state.applied_fingerprint;

        } else if (chr_snapshot_fingerprint(ccf->primary.snapshot,
                                            &fingerprint)
                   != CHR_OK)
        {
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, 2 + 16);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "0x%016xL", fingerprint) - p;
        break;

    case NGX_HTTP_CHRING_VAR_REVISION:
    case NGX_HTTP_CHRING_VAR_REFUSED_REVISION:
        if (data == NGX_HTTP_CHRING_VAR_REVISION
            ? !(state.applied_flags & CHR_RINGFILE_HAS_REVISION)
            : state.status == CHR_OK
              || !(state.refused_flags & CHR_RINGFILE_HAS_REVISION))
        {
            return NGX_OK;
        }

        p = ngx_pnalloc(r->pool, NGX_INT64_LEN);
        if (p == NULL) {
            return NGX_ERROR;
        }

        v->len = ngx_sprintf(p, "%uL", data == NGX_HTTP_CHRING_VAR_REVISION
                                       ? state.applied_revision
                                       : state.refused_revision)
                 - p;
        break;

    default: /* NGX_HTTP_CHRING_VAR_REFUSAL */
        if (state.status == CHR_OK) {
            return NGX_OK;
        }

        len = ngx_strlen(state.message);

        p = ngx_pnalloc(r->pool, len);
        if (p == NULL) {
            return NGX_ERROR;
        }

        ngx_memcpy(p, state.message, len);
        v->len = len;
        break;
    }

    v->data = p;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;

    return NGX_OK;
}


/* The ids `snap` marks down, comma-separated, in the request's pool. */
static u_char *
ngx_http_upstream_chring_down_ids(ngx_http_request_t *r, chr_snapshot *snap,
    size_t *len)
{
    u_char         *ids, *p;
    size_t          i, count, size;
    uint32_t        marked;
    chr_node_view   view;

    if (chr_snapshot_node_count(snap, &count) != CHR_OK) {
        count = 0;
    }

    size = 0;

    for (i = 0; i < count; i++) {
        if (chr_snapshot_marked_down(snap, i, &marked) == CHR_OK && marked
            && chr_snapshot_node(snap, i, &view) == CHR_OK)
        {
            size += view.id_len + 1;
        }
    }

    ids = ngx_pnalloc(r->pool, size ? size : 1);
    if (ids == NULL) {
        return NULL;
    }

    p = ids;

    for (i = 0; i < count && (size_t) (p - ids) < size; i++) {
        if (chr_snapshot_marked_down(snap, i, &marked) == CHR_OK && marked
            && chr_snapshot_node(snap, i, &view) == CHR_OK
            && (size_t) (p - ids) + view.id_len + 1 <= size)
        {
            if (p != ids) {
                *p++ = ',';
            }
            p = ngx_cpymem(p, view.id, view.id_len);
        }
    }

    *len = p - ids;

    return ids;
}
