
/*
 * ngx_http_upstream_chring.h — what the files of the chring upstream
 * module share (internal; nginx's module build compiles them as one
 * module, see `config`):
 *
 *   ngx_http_upstream_chring_module.c     the module, the `chring`
 *                                         directive and its parameters
 *   ngx_http_upstream_chring_ring.c       the rings of the tiers (built
 *                                         when the upstream is initialised)
 *                                         and file=: the ring file's
 *                                         follower
 *   ngx_http_upstream_chring_peer.c       request time: the peer for a key
 *                                         (ring order, bounded loads,
 *                                         retries, the backup tier)
 *   ngx_http_upstream_chring_variables.c  $chring_fingerprint and the
 *                                         other variables
 */

#ifndef _NGX_HTTP_UPSTREAM_CHRING_H_INCLUDED_
#define _NGX_HTTP_UPSTREAM_CHRING_H_INCLUDED_


#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <chring.h>


/* One tier of peers (primary or backup) and its ring. */
typedef struct {
    chr_ring                          *ring;
    chr_snapshot                      *snapshot;   /* held for the lookups */
    ngx_uint_t                        *node_of_peer;  /* peer index -> tag */
    /* file= only: the nodes' server texts, and snapshot node index -> node */
    ngx_str_t                         *node_id;
    ngx_uint_t                         nnodes;
    ngx_uint_t                        *node_of_index;
    /* file= (primary tier): keeps `ring` equal to the file (chr_follower) */
    chr_follower                      *follower;
    /*
     * file=: node -> 1 while the snapshot routes around it (CHR_NODE_DOWN:
     * marked down, not in panic), nnodes entries; NULL without file=
     */
    u_char                            *node_down;
    /* the snapshot's availability digest and panic, as last logged */
    uint64_t                           availability;
    ngx_uint_t                         panic;       /* unsigned:1 */
} ngx_http_upstream_chring_tier_t;


/*
 * file=: the ring file that defines the primary tier's members. The
 * primary tier's follower (chr_follower) reads it; each process (master
 * at configuration, then every worker) has its own follower and ring, so
 * the workers follow the file on their own. What the follower says about
 * the file (revision, fingerprint, a refusal) is its chr_follower_state.
 *
 * fallback=: the ring file the master loads instead when the primary
 * cannot be used at configuration (missing, unreadable, refused); the
 * follower still follows the primary, whose first good file replaces it.
 */
typedef struct {
    ngx_str_t                          path;        /* NUL-terminated */
    ngx_str_t                          fallback;    /* NUL-terminated; or empty */
    ngx_msec_t                         check;       /* check= interval */
    ngx_msec_t                         next_check;
    /*
     * the follower applied a file whose snapshot and id map are not in
     * use yet (they could not be allocated): retried at the next check
     */
    ngx_uint_t                         stale;       /* unsigned:1 */
    /* the ring in use is the fallback's until the follower applies a file */
    ngx_uint_t                         on_fallback; /* unsigned:1 */
    chr_ringfile_info                  applied;     /* that apply's counts */
    chr_ringfile_info                  fallback_applied;

    /*
     * The workers' user as the directive checked the file with it (the
     * module's init warns if a later "user" names another), and the errno
     * of their open() (0: they can open it, or there was nothing to check)
     */
    ngx_uint_t                         access_checked;  /* unsigned:1 */
    ngx_uid_t                          access_uid;
    ngx_gid_t                          access_gid;
    char                              *access_user;
    ngx_err_t                          access_err;
} ngx_http_upstream_chring_file_t;


typedef struct {
    ngx_http_complex_value_t           key;
    chr_options                        options;
    ngx_str_t                          plugin_dir;  /* NUL-terminated */
    ngx_http_upstream_chring_tier_t    primary;
    ngx_http_upstream_chring_tier_t    backup;
    ngx_flag_t                         configured;
    ngx_http_upstream_chring_file_t   *file;        /* NULL without file= */
    ngx_str_t                          host;        /* the upstream's name */
    int32_t                            policy;      /* replicas=: CHR_REPLICAS_* */
    /* balance=: the bound in percent of the mean in-flight count, 0 = none */
    uint32_t                           balance_pct;
    uint64_t                           balance_slack;  /* balance_slack=N */
} ngx_http_upstream_chring_srv_conf_t;


/* node_of_index for a file id that matches no server of the upstream */
#define NGX_HTTP_CHRING_NO_NODE  ((ngx_uint_t) -2)


extern ngx_module_t  ngx_http_upstream_chring_module;


/*
 * The functions one file of the module calls in another: hidden, so that
 * the module's .so exports what a single-file module does (the module and
 * nginx's ngx_modules tables), nothing more.
 */
#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility push(hidden)
#endif

/* ngx_http_upstream_chring_ring.c */
ngx_int_t ngx_http_upstream_chring_create_rings(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf);
ngx_int_t ngx_http_upstream_chring_file_access(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf);
ngx_int_t ngx_http_upstream_chring_init_module(ngx_cycle_t *cycle);
ngx_int_t ngx_http_upstream_init_chring(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
void ngx_http_upstream_chring_file_check(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log);
ngx_int_t ngx_http_upstream_chring_file_state(
    ngx_http_upstream_chring_srv_conf_t *ccf, chr_follow_state *state);

/* ngx_http_upstream_chring_peer.c */
ngx_int_t ngx_http_upstream_init_chring_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
ngx_int_t ngx_http_upstream_chring_request_availability(ngx_http_request_t *r,
    uint64_t *digest);

/* ngx_http_upstream_chring_variables.c */
ngx_int_t ngx_http_upstream_chring_add_variables(ngx_conf_t *cf);

#if defined(__GNUC__) && __GNUC__ >= 4
#pragma GCC visibility pop
#endif


/* The ring node of a lookup's answer: by tag, or through the file's map. */
static ngx_inline ngx_uint_t
ngx_http_upstream_chring_view_node(ngx_http_upstream_chring_tier_t *tier,
    chr_node_view *view)
{
    if (tier->node_of_index == NULL) {
        return (ngx_uint_t) view->tag;
    }

    return tier->node_of_index[view->index];
}


#endif /* _NGX_HTTP_UPSTREAM_CHRING_H_INCLUDED_ */
