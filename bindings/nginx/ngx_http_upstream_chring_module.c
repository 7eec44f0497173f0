
/*
 * ngx_http_upstream_chring_module — a consistent-hashing upstream balancer
 * on libchring.
 *
 *     upstream backends {
 *         chring $request_uri tokens=160 hash=xxh3;
 *         server 10.0.0.1:8080 weight=2;
 *         server 10.0.0.2:8080 max_fails=2 fail_timeout=10s;
 *         server 10.0.0.3:8080 backup;
 *     }
 *
 * Modelled on ngx_http_upstream_hash_module.c: round robin builds the peer
 * lists, this module builds one ring per tier (primary, backup) when the
 * upstream is initialised, in the master, and the workers inherit it. A
 * ring node is one `server` text (its addresses share its keys, picked by
 * smooth weighted round robin among them, as nginx's `hash ... consistent`
 * does); its tag is the node's number, in configuration order. A failed
 * try moves the key to its next replica: the next distinct node clockwise
 * on the ring, which is exactly where the key would live with the failed
 * node removed (with replicas=zones-first, the next node of a zone not
 * tried yet, while there is one: chring.h, "Zone-aware replicas"). Lookups go to a snapshot held for the configuration's life
 * and never allocate. The round-robin peer_free does the failure
 * accounting (max_fails, fail_timeout).
 *
 * With file=PATH a ring file says which servers are primary members and
 * with which weights; the library's follower (chr_follower) reads it at
 * configuration, then each worker's copy checks it every check= interval
 * on the request path and applies a changed file to the worker's own ring
 * as one batch. Ring answers then map to servers by id (node_of_index),
 * since the file, not the configuration, orders them.
 */

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include <chring.h>


/*
 * Replicas examined per try before giving up on the ring order and picking
 * any live peer. 32 is what chr_snapshot_replicas serves without
 * allocating.
 */
#define NGX_HTTP_CHRING_REPLICAS  32


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
} ngx_http_upstream_chring_tier_t;


/*
 * file=: the ring file that defines the primary tier's members. The
 * primary tier's follower (chr_follower) reads it; each process (master
 * at configuration, then every worker) has its own follower and ring, so
 * the workers follow the file on their own. What the follower says about
 * the file (revision, fingerprint, a refusal) is its chr_follower_state.
 */
typedef struct {
    ngx_str_t                          path;        /* NUL-terminated */
    ngx_msec_t                         check;       /* check= interval */
    ngx_msec_t                         next_check;
    /*
     * the follower applied a file whose snapshot and id map are not in
     * use yet (they could not be allocated): retried at the next check
     */
    ngx_uint_t                         stale;       /* unsigned:1 */
    chr_ringfile_info                  applied;     /* that apply's counts */
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

#define NGX_HTTP_CHRING_CHECK_DEFAULT  1000      /* check=, milliseconds */


typedef struct {
    /* the round robin data must be first */
    ngx_http_upstream_rr_peer_data_t      rrp;
    ngx_http_upstream_chring_srv_conf_t  *conf;
    ngx_str_t                             key;
    ngx_uint_t                            in_backup;  /* unsigned:1 */
    ngx_pool_t                           *pool;       /* the request's */
} ngx_http_upstream_chring_peer_data_t;


static ngx_int_t ngx_http_upstream_init_chring(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_upstream_chring_build_tier(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_http_upstream_rr_peers_t *peers, ngx_http_upstream_chring_tier_t *tier,
    const char *what);
static void ngx_http_upstream_chring_log_server_error(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_tier_t *tier,
    chr_change *changes, ngx_uint_t nnodes, size_t failed, const char *what);
static ngx_int_t ngx_http_upstream_init_chring_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us);
static ngx_int_t ngx_http_upstream_get_chring_peer(ngx_peer_connection_t *pc,
    void *data);
static ngx_http_upstream_rr_peer_t *ngx_http_upstream_chring_pick(
    ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_log_t *log);
static ngx_http_upstream_rr_peer_t *ngx_http_upstream_chring_pick_bounded(
    ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_log_t *log);
static ngx_uint_t ngx_http_upstream_chring_usable(
    ngx_http_upstream_chring_peer_data_t *cp, ngx_http_upstream_rr_peer_t *peer,
    ngx_uint_t i, time_t now);
static ngx_http_upstream_rr_peer_t *ngx_http_upstream_chring_best_of_node(
    ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_uint_t node);

static void *ngx_http_upstream_chring_create_conf(ngx_conf_t *cf);
static char *ngx_http_upstream_chring(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_upstream_chring_parameter(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_str_t *value,
    ngx_uint_t *seen);
static void ngx_http_upstream_chring_cleanup(void *data);

static ngx_int_t ngx_http_upstream_chring_file_adopt(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log);
static void ngx_http_upstream_chring_file_check(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log);
static ngx_uint_t ngx_http_upstream_chring_view_node(
    ngx_http_upstream_chring_tier_t *tier, chr_node_view *view);
static ngx_int_t ngx_http_upstream_chring_add_variables(ngx_conf_t *cf);
static ngx_int_t ngx_http_upstream_chring_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_upstream_chring_named_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);
static ngx_int_t ngx_http_upstream_chring_value(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, ngx_http_upstream_srv_conf_t *uscf,
    uintptr_t which);


/* Bits of `seen` in the directive parser: each parameter at most once. */
#define NGX_HTTP_CHRING_SEEN_TOKENS      0x01
#define NGX_HTTP_CHRING_SEEN_HASH        0x02
#define NGX_HTTP_CHRING_SEEN_SEED        0x04
#define NGX_HTTP_CHRING_SEEN_PLACEMENT   0x08
#define NGX_HTTP_CHRING_SEEN_PLUGIN_DIR  0x10
#define NGX_HTTP_CHRING_SEEN_FILE        0x20
#define NGX_HTTP_CHRING_SEEN_CHECK       0x40
#define NGX_HTTP_CHRING_SEEN_REPLICAS    0x80
#define NGX_HTTP_CHRING_SEEN_BALANCE     0x100
#define NGX_HTTP_CHRING_SEEN_SLACK       0x200


static ngx_command_t  ngx_http_upstream_chring_commands[] = {

    { ngx_string("chring"),
      NGX_HTTP_UPS_CONF|NGX_CONF_1MORE,
      ngx_http_upstream_chring,
      NGX_HTTP_SRV_CONF_OFFSET,
      0,
      NULL },

      ngx_null_command
};


static ngx_http_module_t  ngx_http_upstream_chring_module_ctx = {
    ngx_http_upstream_chring_add_variables, /* preconfiguration */
    NULL,                                  /* postconfiguration */

    NULL,                                  /* create main configuration */
    NULL,                                  /* init main configuration */

    ngx_http_upstream_chring_create_conf,  /* create server configuration */
    NULL,                                  /* merge server configuration */

    NULL,                                  /* create location configuration */
    NULL                                   /* merge location configuration */
};


ngx_module_t  ngx_http_upstream_chring_module = {
    NGX_MODULE_V1,
    &ngx_http_upstream_chring_module_ctx,  /* module context */
    ngx_http_upstream_chring_commands,     /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    NULL,                                  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* Configuration time: rings from the round-robin peer lists */


static ngx_int_t
ngx_http_upstream_init_chring(ngx_conf_t *cf, ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_rr_peers_t         *peers;
    ngx_http_upstream_chring_srv_conf_t  *ccf;

    if (ngx_http_upstream_init_round_robin(cf, us) != NGX_OK) {
        return NGX_ERROR;
    }

    us->peer.init = ngx_http_upstream_init_chring_peer;

    ccf = ngx_http_conf_upstream_srv_conf(us, ngx_http_upstream_chring_module);
    peers = us->peer.data;

    if (ngx_http_upstream_chring_build_tier(cf, us, ccf, peers, &ccf->primary,
                                            "primary")
        != NGX_OK)
    {
        return NGX_ERROR;
    }

    if (peers->next == NULL) {
        return NGX_OK;
    }

    return ngx_http_upstream_chring_build_tier(cf, us, ccf, peers->next,
                                               &ccf->backup, "backup");
}


/*
 * One node per distinct `server` text, numbered in configuration order
 * (the tag, which also orders equal points in placement=nginx). A node's
 * weight is its servers' weight; a node whose servers are all `down` is
 * kept with weight 0: a member without tokens, never chosen.
 */
static ngx_int_t
ngx_http_upstream_chring_build_tier(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_http_upstream_rr_peers_t *peers, ngx_http_upstream_chring_tier_t *tier,
    const char *what)
{
    size_t                        failed;
    uint32_t                      weight;
    chr_status                    rc;
    chr_change                   *changes;
    ngx_uint_t                    i, k, nnodes;
    ngx_http_upstream_rr_peer_t  *peer, *other;

    tier->node_of_peer = ngx_palloc(cf->pool,
                                    peers->number * sizeof(ngx_uint_t));
    tier->node_id = ngx_palloc(cf->pool, peers->number * sizeof(ngx_str_t));
    changes = ngx_pcalloc(cf->temp_pool, peers->number * sizeof(chr_change));
    if (tier->node_of_peer == NULL || tier->node_id == NULL || changes == NULL)
    {
        return NGX_ERROR;
    }

    nnodes = 0;
    failed = (size_t) -1;   /* no change at fault until chr_ring_apply says */

    for (peer = peers->peer, i = 0; peer; peer = peer->next, i++) {
        weight = peer->down ? 0 : (uint32_t) peer->weight;

        /* a repeated server text joins the node of its first occurrence */
        for (other = peers->peer, k = 0; k < i; other = other->next, k++) {
            if (other->server.len == peer->server.len
                && ngx_strncmp(other->server.data, peer->server.data,
                               peer->server.len) == 0)
            {
                break;
            }
        }

        if (k < i) {
            tier->node_of_peer[i] = tier->node_of_peer[k];

            if (weight > changes[tier->node_of_peer[k]].weight) {
                changes[tier->node_of_peer[k]].weight = weight;
            }

            continue;
        }

        tier->node_of_peer[i] = nnodes;
        tier->node_id[nnodes] = peer->server;
        changes[nnodes].op = CHR_OP_ADD;
        changes[nnodes].id = peer->server.data;
        changes[nnodes].id_len = peer->server.len;
        changes[nnodes].weight = weight;
        changes[nnodes].tag = nnodes;
        nnodes++;
    }

    tier->nnodes = nnodes;

    if (ccf->file && tier == &ccf->primary) {
        /*
         * the file, not the configuration, says who is a member: the
         * follower's first check reads it whatever its stamp
         */
        ccf->file->applied = (chr_ringfile_info) CHR_RINGFILE_INFO_INIT;

        if (chr_follower_check(tier->follower, NULL, &ccf->file->applied)
            != CHR_OK)
        {
            ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                          "chring: upstream \"%V\" in %s:%ui: %s", &us->host,
                          us->file_name, us->line, chr_last_error());
            return NGX_ERROR;
        }

        ccf->file->stale = 1;

        return ngx_http_upstream_chring_file_adopt(ccf, cf->log);
    }

    if (tier->ring == NULL) {
        rc = chr_ring_new(&ccf->options, &tier->ring);
        if (rc != CHR_OK) {
            goto failed;
        }
    }

    /* one batch: the ring publishes a single snapshot with every node */
    rc = chr_ring_apply(tier->ring, changes, nnodes, &failed);
    if (rc != CHR_OK) {
        goto failed;
    }

    rc = chr_ring_snapshot(tier->ring, &tier->snapshot);
    if (rc != CHR_OK) {
        goto failed;
    }

    return NGX_OK;

failed:

    ngx_http_upstream_chring_log_server_error(cf, us, tier, changes, nnodes,
                                              failed, what);

    return NGX_ERROR;
}


/*
 * A ring that refuses the configured servers: names the server at fault
 * (the change chr_ring_apply reports in `failed`, the one that passes the
 * token total included), else the tier's servers. nginx keeps no position
 * for a `server` directive (ngx_http_upstream_server_t has none, and the
 * rings are built after the whole configuration is read), so the server
 * is named by its text and its rank among the upstream's `server`
 * directives (us->servers, in configuration order, includes followed),
 * with the `upstream` block's file and line.
 */
static void
ngx_http_upstream_chring_log_server_error(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_tier_t *tier,
    chr_change *changes, ngx_uint_t nnodes, size_t failed, const char *what)
{
    size_t                        len;
    uint32_t                      weight;
    ngx_str_t                    *node;
    ngx_uint_t                    i, found, backup;
    const char                   *message, *suffix;
    ngx_http_upstream_server_t   *server;
    u_char                        copy[NGX_MAX_ERROR_STR];

    /* chr_last_error() is thread-local and stays; copy it all the same */
    message = chr_last_error();
    len = ngx_min(ngx_strlen(message), sizeof(copy) - 1);
    *ngx_cpymem(copy, message, len) = '\0';

    backup = ngx_strcmp(what, "backup") == 0;
    server = us->servers->elts;
    found = us->servers->nelts;

    if (failed < nnodes) {
        /*
         * the node's `server`: of its directives (one text written more
         * than once is one node), the first that gave the node its weight
         */
        node = &tier->node_id[failed];

        for (i = 0; i < us->servers->nelts; i++) {
            if ((ngx_uint_t) server[i].backup != backup
                || server[i].name.len != node->len
                || ngx_strncmp(server[i].name.data, node->data, node->len)
                   != 0)
            {
                continue;
            }

            weight = server[i].down ? 0 : (uint32_t) server[i].weight;

            if (found == us->servers->nelts) {
                found = i;
            }

            if (weight == changes[failed].weight) {
                found = i;
                break;
            }
        }
    }

    if (found == us->servers->nelts) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "chring: %s servers of upstream \"%V\" in %s:%ui: %s",
                      what, &us->host, us->file_name, us->line, copy);
        return;
    }

    i = found + 1;
    suffix = (i % 100 / 10 == 1) ? "th"
             : (i % 10 == 1) ? "st"
             : (i % 10 == 2) ? "nd"
             : (i % 10 == 3) ? "rd" : "th";

    ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                  "chring: %s server \"%V\", the %ui%s \"server\" of upstream "
                  "\"%V\" in %s:%ui: %s", what, &server[found].name, i,
                  suffix, &us->host, us->file_name, us->line, copy);
}


/* Request time */


static ngx_int_t
ngx_http_upstream_init_chring_peer(ngx_http_request_t *r,
    ngx_http_upstream_srv_conf_t *us)
{
    ngx_http_upstream_chring_srv_conf_t   *ccf;
    ngx_http_upstream_chring_peer_data_t  *cp;

    cp = ngx_palloc(r->pool, sizeof(ngx_http_upstream_chring_peer_data_t));
    if (cp == NULL) {
        return NGX_ERROR;
    }

    r->upstream->peer.data = &cp->rrp;

    if (ngx_http_upstream_init_round_robin_peer(r, us) != NGX_OK) {
        return NGX_ERROR;
    }

    /* free (failure accounting) and the SSL session hooks stay round robin */
    r->upstream->peer.get = ngx_http_upstream_get_chring_peer;

    ccf = ngx_http_conf_upstream_srv_conf(us, ngx_http_upstream_chring_module);

    if (ngx_http_complex_value(r, &ccf->key, &cp->key) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, r->connection->log, 0,
                   "upstream chring key:\"%V\"", &cp->key);

    cp->conf = ccf;
    cp->in_backup = 0;
    cp->pool = r->pool;

    ngx_http_upstream_chring_file_check(ccf, r->connection->log);

    return NGX_OK;
}


static ngx_int_t
ngx_http_upstream_get_chring_peer(ngx_peer_connection_t *pc, void *data)
{
    ngx_http_upstream_chring_peer_data_t  *cp = data;

    ngx_uint_t                        i, n;
    ngx_http_upstream_rr_peer_t      *peer;
    ngx_http_upstream_rr_peers_t     *peers;
    ngx_http_upstream_chring_tier_t  *tier;

    ngx_log_debug1(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                   "get chring peer, try: %ui", pc->tries);

    /* as `hash ... consistent`: no key, or nothing to choose from */
    if (cp->key.len == 0 || cp->rrp.peers->single) {
        return ngx_http_upstream_get_round_robin_peer(pc, &cp->rrp);
    }

    pc->cached = 0;
    pc->connection = NULL;

    for ( ;; ) {
        peers = cp->rrp.peers;
        tier = cp->in_backup ? &cp->conf->backup : &cp->conf->primary;

        /* write lock: the pick updates conns and current_weight */
        ngx_http_upstream_rr_peers_wlock(peers);

        peer = ngx_http_upstream_chring_pick(cp, tier, pc->log);

        if (peer) {
            pc->sockaddr = peer->sockaddr;
            pc->socklen = peer->socklen;
            pc->name = &peer->name;

            peer->conns++;

            ngx_http_upstream_rr_peers_unlock(peers);
            return NGX_OK;
        }

        ngx_http_upstream_rr_peers_unlock(peers);

        if (cp->in_backup || peers->next == NULL) {
            break;
        }

        /* every primary is tried or unavailable: the backup ring, afresh */
        ngx_log_debug0(NGX_LOG_DEBUG_HTTP, pc->log, 0,
                       "chring: backup servers");

        cp->rrp.peers = peers->next;
        cp->in_backup = 1;

        n = (cp->rrp.peers->number + (8 * sizeof(uintptr_t) - 1))
            / (8 * sizeof(uintptr_t));

        for (i = 0; i < n; i++) {
            cp->rrp.tried[i] = 0;
        }
    }

    pc->name = peers->name;

    return NGX_BUSY;
}


/*
 * The key's owner if it can take the request, else its next replicas in
 * ring order; past NGX_HTTP_CHRING_REPLICAS of them, any available peer.
 * Called with the peers locked. No allocation: the views live on the
 * stack and borrow from the snapshot held by the configuration.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_upstream_chring_pick(ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_log_t *log)
{
    size_t                        i, count, seen, want;
    chr_status                    rc;
    chr_node_view                 views[NGX_HTTP_CHRING_REPLICAS];
    ngx_http_upstream_rr_peer_t  *peer;

    if (cp->conf->balance_pct) {
        peer = ngx_http_upstream_chring_pick_bounded(cp, tier, log);
        if (peer) {
            return peer;
        }
        /* nothing with room found through the bound: the plain walk */
    }

    rc = chr_snapshot_lookup(tier->snapshot, cp->key.data, cp->key.len,
                             &views[0]);
    if (rc == CHR_EEMPTY) {
        return NULL;    /* every server of the tier is down */
    }

    if (rc != CHR_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "chring: %s", chr_last_error());
        return NULL;
    }

    ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                   "chring owner: \"%*s\"", views[0].id_len, views[0].id);

    peer = ngx_http_upstream_chring_best_of_node(cp, tier,
                               ngx_http_upstream_chring_view_node(tier, &views[0]));
    if (peer) {
        return peer;
    }

    /*
     * Ask for 2, 4, ... NGX_HTTP_CHRING_REPLICAS replicas, looking only at
     * the ones not seen yet: the ring walk goes only as far as the first
     * node that can take the request (within twice the distance), not to
     * the 32nd distinct node. A walk that returns fewer nodes than asked has
     * seen every node with tokens: nothing is left to try in ring order.
     */
    seen = 1;
    for (want = 2; ; want *= 2) {
        if (want > NGX_HTTP_CHRING_REPLICAS) {
            want = NGX_HTTP_CHRING_REPLICAS;
        }

        rc = chr_snapshot_replicas_policy(tier->snapshot, cp->key.data,
                                          cp->key.len, cp->conf->policy, want,
                                          views, &count);
        if (rc != CHR_OK) {
            ngx_log_error(NGX_LOG_ERR, log, 0, "chring: %s", chr_last_error());
            return NULL;
        }

        for (i = seen; i < count; i++) {
            peer = ngx_http_upstream_chring_best_of_node(cp, tier,
                               ngx_http_upstream_chring_view_node(tier, &views[i]));
            if (peer) {
                ngx_log_debug2(NGX_LOG_DEBUG_HTTP, log, 0,
                               "chring replica %uz: \"%V\"", i, &peer->server);
                return peer;
            }
        }

        if (count < want) {
            return NULL;    /* every node with tokens was tried or unavailable */
        }

        seen = count;

        if (want == NGX_HTTP_CHRING_REPLICAS) {
            break;
        }
    }

    return ngx_http_upstream_chring_best_of_node(cp, tier, NGX_CONF_UNSET_UINT);
}


/*
 * balance=: the first node of the key's replica walk whose requests in
 * flight (the sum of its peers' conns: in the upstream's shared zone when
 * it has one, so counted over every worker) are below its capacity, by
 * chr_snapshot_lookup_bounded; nodes without a usable, untried peer are
 * unavailable to it. Then its best peer. NULL if none (the caller walks
 * the ring as without a bound). Called with the peers locked.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_upstream_chring_pick_bounded(ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_log_t *log)
{
    time_t                        now;
    size_t                        n, m, j;
    uint64_t                     *loads, *node_load;
    ngx_uint_t                    i, node;
    chr_status                    rc;
    u_char                       *up, *node_up;
    chr_node_view                 view;
    chr_bound_result              res;
    chr_bound_options             opts = CHR_BOUND_OPTIONS_INIT;
    ngx_http_upstream_rr_peer_t  *peer;

    if (chr_snapshot_node_count(tier->snapshot, &n) != CHR_OK || n == 0) {
        return NULL;
    }

    /* node numbers: below the peer count, or below nnodes with file= */
    m = cp->rrp.peers->number + tier->nnodes + 1;

    loads = ngx_pcalloc(cp->pool, (n + m) * sizeof(uint64_t) + n + m);
    if (loads == NULL) {
        return NULL;
    }
    node_load = loads + n;
    up = (u_char *) (node_load + m);
    node_up = up + n;

    now = ngx_time();

    for (peer = cp->rrp.peers->peer, i = 0; peer; peer = peer->next, i++) {
        node = tier->node_of_peer[i];
        if (node >= m) {
            continue;
        }
        node_load[node] += peer->conns;
        if (ngx_http_upstream_chring_usable(cp, peer, i, now)) {
            node_up[node] = 1;
        }
    }

    for (j = 0; j < n; j++) {
        if (chr_snapshot_node(tier->snapshot, j, &view) != CHR_OK) {
            return NULL;
        }
        node = ngx_http_upstream_chring_view_node(tier, &view);
        if (node < m) {
            loads[j] = node_load[node] < CHR_LOAD_MAX ? node_load[node] : CHR_LOAD_MAX;
            up[j] = node_up[node];
        }
    }

    opts.factor_pct = cp->conf->balance_pct;
    opts.slack = cp->conf->balance_slack;

    rc = chr_snapshot_lookup_bounded(tier->snapshot, cp->key.data, cp->key.len,
                                     loads, up, n, &opts, &view, &res);
    if (rc == CHR_EEMPTY) {
        return NULL;
    }

    if (rc != CHR_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "chring: %s", chr_last_error());
        return NULL;
    }

    ngx_log_debug5(NGX_LOG_DEBUG_HTTP, log, 0,
                   "chring bounded: \"%*s\" load %uL of %uL, %ui probes",
                   view.id_len, view.id, res.load, res.capacity,
                   (ngx_uint_t) res.probes);

    return ngx_http_upstream_chring_best_of_node(cp, tier,
                               ngx_http_upstream_chring_view_node(tier, &view));
}


/*
 * Whether peer i can take the request: not tried yet, not down, not failed
 * (max_fails within fail_timeout), not full (max_conns).
 */
static ngx_uint_t
ngx_http_upstream_chring_usable(ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_rr_peer_t *peer, ngx_uint_t i, time_t now)
{
    uintptr_t   m;
    ngx_uint_t  n;

    n = i / (8 * sizeof(uintptr_t));
    m = (uintptr_t) 1 << i % (8 * sizeof(uintptr_t));

    if (cp->rrp.tried[n] & m) {
        return 0;
    }

    if (peer->down) {
        return 0;
    }

    if (peer->max_fails
        && peer->fails >= peer->max_fails
        && now - peer->checked <= peer->fail_timeout)
    {
        return 0;
    }

    if (peer->max_conns && peer->conns >= peer->max_conns) {
        return 0;
    }

    return 1;
}


/*
 * The best available, untried peer of ring node `node` (or of any node for
 * NGX_CONF_UNSET_UINT) by smooth weighted round robin, skipping peers that
 * are down, failed (max_fails within fail_timeout) or full (max_conns),
 * exactly as ngx_http_upstream_get_chash_peer() does; marks it tried.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_upstream_chring_best_of_node(ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_uint_t node)
{
    time_t                        now;
    uintptr_t                     m;
    ngx_int_t                     total;
    ngx_uint_t                    i, n, best_i;
    ngx_http_upstream_rr_peer_t  *peer, *best;

    now = ngx_time();

    best = NULL;
    best_i = 0;
    total = 0;

    for (peer = cp->rrp.peers->peer, i = 0; peer; peer = peer->next, i++) {

        if (node != NGX_CONF_UNSET_UINT && tier->node_of_peer[i] != node) {
            continue;
        }

        if (!ngx_http_upstream_chring_usable(cp, peer, i, now)) {
            continue;
        }

        peer->current_weight += peer->effective_weight;
        total += peer->effective_weight;

        if (peer->effective_weight < peer->weight) {
            peer->effective_weight++;
        }

        if (best == NULL || peer->current_weight > best->current_weight) {
            best = peer;
            best_i = i;
        }
    }

    if (best == NULL) {
        return NULL;
    }

    best->current_weight -= total;

    if (now - best->checked > best->fail_timeout) {
        best->checked = now;
    }

    cp->rrp.current = best;

    n = best_i / (8 * sizeof(uintptr_t));
    m = (uintptr_t) 1 << best_i % (8 * sizeof(uintptr_t));

    cp->rrp.tried[n] |= m;

    return best;
}


/* Configuration directive */


static void *
ngx_http_upstream_chring_create_conf(ngx_conf_t *cf)
{
    ngx_http_upstream_chring_srv_conf_t  *conf;

    conf = ngx_pcalloc(cf->pool, sizeof(ngx_http_upstream_chring_srv_conf_t));
    if (conf == NULL) {
        return NULL;
    }

    /*
     * set by ngx_pcalloc():
     *
     *     conf->primary = { NULL, ... };
     *     conf->backup = { NULL, ... };
     *     conf->configured = 0;
     */

    return conf;
}


/*
 * chring KEY [tokens=N] [hash=NAME] [seed=N] [placement=native|nginx]
 *            [replicas=nodes|zones-first] [balance=F [balance_slack=N]]
 *            [plugin_dir=PATH]
 *            [file=PATH [check=TIME]];
 *
 * The options are checked here by creating the primary ring (an unknown
 * hasher or an out-of-range value fails `nginx -t` at this line, with
 * chring's own message); servers join it when the upstream is initialised.
 */
static char *
ngx_http_upstream_chring(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_upstream_chring_srv_conf_t  *ccf = conf;

    char                              *rv;
    ngx_str_t                         *value;
    ngx_uint_t                         i, seen;
    ngx_pool_cleanup_t                *cln;
    ngx_http_upstream_srv_conf_t      *uscf;
    ngx_http_compile_complex_value_t   ccv;
    chr_placement_info                 info;

    if (ccf->configured) {
        return "is duplicate";
    }

    ccf->configured = 1;

    value = cf->args->elts;

    ngx_memzero(&ccv, sizeof(ngx_http_compile_complex_value_t));

    ccv.cf = cf;
    ccv.value = &value[1];
    ccv.complex_value = &ccf->key;

    if (ngx_http_compile_complex_value(&ccv) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    (void) chr_options_init(&ccf->options, CHR_OPTIONS_VERSION);

    seen = 0;

    for (i = 2; i < cf->args->nelts; i++) {
        rv = ngx_http_upstream_chring_parameter(cf, ccf, &value[i], &seen);
        if (rv != NGX_CONF_OK) {
            return rv;
        }
    }

    if (ccf->policy == CHR_REPLICAS_ZONES_FIRST
        && !(seen & NGX_HTTP_CHRING_SEEN_FILE))
    {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "chring: \"replicas=zones-first\" without "
                           "\"file=\" walks as \"nodes\": zones come from "
                           "the ring file's members");
    }

    if ((seen & NGX_HTTP_CHRING_SEEN_CHECK)
        && !(seen & NGX_HTTP_CHRING_SEEN_FILE))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: \"check=\" needs \"file=\"");
        return NGX_CONF_ERROR;
    }

    /* What the placement requires comes from the library itself. */
    info = (chr_placement_info) CHR_PLACEMENT_INFO_INIT;
    if (chr_placement_describe(ccf->options.placement, &info) != CHR_OK) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chring: %s", chr_last_error());
        return NGX_CONF_ERROR;
    }

    if (!(info.flags & CHR_PLACEMENT_SEEDED)
        && (seen & (NGX_HTTP_CHRING_SEEN_TOKENS|NGX_HTTP_CHRING_SEEN_SEED)))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: \"tokens\" and \"seed\" have no effect "
                           "with \"placement=%s\" (it places its own points, "
                           "without a seed)", info.name);
        return NGX_CONF_ERROR;
    }

    if (info.hasher != NULL
        && ccf->options.hasher != NULL
        && ngx_strcmp(ccf->options.hasher, info.hasher) != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: \"placement=%s\" hashes with %s, "
                           "as the original does, not \"%s\"",
                           info.name, info.hasher, ccf->options.hasher);
        return NGX_CONF_ERROR;
    }

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_CONF_ERROR;
    }

    cln->handler = ngx_http_upstream_chring_cleanup;
    cln->data = ccf;

    if (chr_ring_new(&ccf->options, &ccf->primary.ring) != CHR_OK
        || (ccf->file
            && chr_follower_new(ccf->primary.ring,
                                (const char *) ccf->file->path.data, 0,
                                &ccf->primary.follower)
               != CHR_OK))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "chring: %s",
                           chr_last_error());
        return NGX_CONF_ERROR;
    }

    uscf = ngx_http_conf_get_module_srv_conf(cf, ngx_http_upstream_module);

    ccf->host = uscf->host;

    if (uscf->peer.init_upstream) {
        ngx_conf_log_error(NGX_LOG_WARN, cf, 0,
                           "load balancing method redefined");
    }

    uscf->flags = NGX_HTTP_UPSTREAM_CREATE
                  |NGX_HTTP_UPSTREAM_WEIGHT
                  |NGX_HTTP_UPSTREAM_MAX_CONNS
                  |NGX_HTTP_UPSTREAM_MAX_FAILS
                  |NGX_HTTP_UPSTREAM_FAIL_TIMEOUT
                  |NGX_HTTP_UPSTREAM_DOWN
                  |NGX_HTTP_UPSTREAM_BACKUP;

    uscf->peer.init_upstream = ngx_http_upstream_init_chring;

    return NGX_CONF_OK;
}


static char *
ngx_http_upstream_chring_parameter(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_str_t *value,
    ngx_uint_t *seen)
{
    u_char      *eq, *p, *last;
    int32_t      policy;
    uint64_t     seed;
    ngx_int_t    n, frac;
    ngx_str_t    arg;
    ngx_uint_t   bit;

    eq = ngx_strlchr(value->data, value->data + value->len, '=');
    if (eq == NULL) {
        goto invalid;
    }

    arg.data = eq + 1;
    arg.len = value->data + value->len - arg.data;

    if (ngx_strncmp(value->data, "tokens=", 7) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_TOKENS;
        n = ngx_atoi(arg.data, arg.len);
        if (n == NGX_ERROR || n == 0 || n > CHR_TOKENS_PER_WEIGHT_MAX) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: invalid \"%V\": tokens per unit of "
                               "weight must be 1..%d", value,
                               (int) CHR_TOKENS_PER_WEIGHT_MAX);
            return NGX_CONF_ERROR;
        }
        ccf->options.tokens_per_weight = (uint32_t) n;

    } else if (ngx_strncmp(value->data, "hash=", 5) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_HASH;
        if (arg.len == 0) {
            goto invalid;
        }
        /* the parser NUL-terminates arguments, in the cycle's pool */
        ccf->options.hasher = (const char *) arg.data;

    } else if (ngx_strncmp(value->data, "seed=", 5) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_SEED;
        if (arg.len == 0 || arg.len > NGX_INT64_LEN) {
            goto invalid;
        }
        seed = 0;
        for (last = arg.data + arg.len, p = arg.data; p < last; p++) {
            if (*p < '0' || *p > '9'
                || seed > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "chring: invalid \"%V\": the seed is an "
                                   "unsigned 64-bit decimal number", value);
                return NGX_CONF_ERROR;
            }
            seed = seed * 10 + (uint64_t) (*p - '0');
        }
        ccf->options.seed = seed;

    } else if (ngx_strncmp(value->data, "placement=", 10) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_PLACEMENT;
        if (arg.len == 6 && ngx_strncmp(arg.data, "native", 6) == 0) {
            ccf->options.placement = CHR_PLACEMENT_NATIVE;

        } else if (arg.len == 5 && ngx_strncmp(arg.data, "nginx", 5) == 0) {
            ccf->options.placement = CHR_PLACEMENT_NGINX;

        } else {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: invalid \"%V\": the placement is "
                               "\"native\" or \"nginx\"", value);
            return NGX_CONF_ERROR;
        }

    } else if (ngx_strncmp(value->data, "file=", 5) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_FILE;
        if (arg.len == 0) {
            goto invalid;
        }
        if (ccf->file == NULL) {
            ccf->file = ngx_pcalloc(cf->pool,
                                    sizeof(ngx_http_upstream_chring_file_t));
            if (ccf->file == NULL) {
                return NGX_CONF_ERROR;
            }
            ccf->file->check = NGX_HTTP_CHRING_CHECK_DEFAULT;
        }
        if (ngx_conf_full_name(cf->cycle, &arg, 0) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
        ccf->file->path.data = ngx_pnalloc(cf->pool, arg.len + 1);
        if (ccf->file->path.data == NULL) {
            return NGX_CONF_ERROR;
        }
        ccf->file->path.len = arg.len;
        *ngx_cpymem(ccf->file->path.data, arg.data, arg.len) = '\0';

    } else if (ngx_strncmp(value->data, "check=", 6) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_CHECK;
        n = ngx_parse_time(&arg, 0);
        if (n == NGX_ERROR || n == 0 || n > 3600000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: invalid \"%V\": the check interval "
                               "is a time from 1ms to 1h, e.g. 500ms or 1s",
                               value);
            return NGX_CONF_ERROR;
        }
        if (ccf->file == NULL) {
            ccf->file = ngx_pcalloc(cf->pool,
                                    sizeof(ngx_http_upstream_chring_file_t));
            if (ccf->file == NULL) {
                return NGX_CONF_ERROR;
            }
        }
        ccf->file->check = (ngx_msec_t) n;

    } else if (ngx_strncmp(value->data, "replicas=", 9) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_REPLICAS;
        /* the parser NUL-terminates arguments */
        if (chr_replica_policy_find((const char *) arg.data, &policy) != CHR_OK
            || (policy != CHR_REPLICAS_NODES
                && policy != CHR_REPLICAS_ZONES_FIRST))
        {
            /* nts is not prefix-stable: the walk below needs prefixes */
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: invalid \"%V\": the failover order "
                               "is \"nodes\" or \"zones-first\"", value);
            return NGX_CONF_ERROR;
        }
        ccf->policy = policy;

    } else if (ngx_strncmp(value->data, "balance=", 8) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_BALANCE;
        /* a decimal factor with up to 2 fractional digits: 1.25 -> 125 */
        n = 0;
        frac = -1;
        for (last = arg.data + arg.len, p = arg.data; p < last; p++) {
            if (*p == '.' && frac < 0) {
                frac = 0;
                continue;
            }
            if (*p < '0' || *p > '9' || frac >= 2 || n > 100000) {
                goto bad_balance;
            }
            n = n * 10 + (*p - '0');
            if (frac >= 0) {
                frac++;
            }
        }
        for (frac = frac < 0 ? 0 : frac; frac < 2; frac++) {
            n *= 10;
        }
        if (arg.len == 0 || n < (ngx_int_t) CHR_BALANCE_FACTOR_MIN
            || n > (ngx_int_t) CHR_BALANCE_FACTOR_MAX)
        {
            goto bad_balance;
        }
        ccf->balance_pct = (uint32_t) n;

    } else if (ngx_strncmp(value->data, "balance_slack=", 14) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_SLACK;
        n = ngx_atoi(arg.data, arg.len);
        if (n == NGX_ERROR || n > 1000000) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: invalid \"%V\": the slack is a whole "
                               "number of requests, 0..1000000", value);
            return NGX_CONF_ERROR;
        }
        ccf->balance_slack = (uint64_t) n;

    } else if (ngx_strncmp(value->data, "plugin_dir=", 11) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_PLUGIN_DIR;
        if (arg.len == 0) {
            goto invalid;
        }
        /* relative to the prefix, as nginx paths are; NUL-terminated */
        if (ngx_conf_full_name(cf->cycle, &arg, 0) != NGX_OK) {
            return NGX_CONF_ERROR;
        }
        ccf->plugin_dir.data = ngx_pnalloc(cf->pool, arg.len + 1);
        if (ccf->plugin_dir.data == NULL) {
            return NGX_CONF_ERROR;
        }
        ccf->plugin_dir.len = arg.len;
        *ngx_cpymem(ccf->plugin_dir.data, arg.data, arg.len) = '\0';
        ccf->options.plugin_dir = (const char *) ccf->plugin_dir.data;

    } else {
        goto invalid;
    }

    if (*seen & bit) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: \"%*s\" is given twice",
                           (size_t) (eq - value->data), value->data);
        return NGX_CONF_ERROR;
    }

    *seen |= bit;

    return NGX_CONF_OK;

invalid:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "chring: invalid parameter \"%V\" (expected tokens=N, "
                       "hash=NAME, seed=N, placement=native|nginx, "
                       "replicas=nodes|zones-first, balance=F, "
                       "balance_slack=N, plugin_dir=PATH, "
                       "file=PATH or check=TIME)", value);

    return NGX_CONF_ERROR;

bad_balance:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "chring: invalid \"%V\": the balance factor is a "
                       "decimal number from 1.00 to 1000 (e.g. 1.25)", value);

    return NGX_CONF_ERROR;
}


/* The configuration's pool is destroyed (reload, exit, failed test). */
static void
ngx_http_upstream_chring_cleanup(void *data)
{
    ngx_http_upstream_chring_srv_conf_t  *ccf = data;

    /* the follower borrows the ring: freed first */
    chr_follower_free(ccf->primary.follower);
    chr_snapshot_release(ccf->primary.snapshot);
    chr_ring_free(ccf->primary.ring);
    if (ccf->primary.node_of_index) {
        ngx_free(ccf->primary.node_of_index);
    }
    chr_snapshot_release(ccf->backup.snapshot);
    chr_ring_free(ccf->backup.ring);
}


/* file=: the ring file, loaded at configuration and re-checked by workers */


/* The ring node of a lookup's answer: by tag, or through the file's map. */
static ngx_uint_t
ngx_http_upstream_chring_view_node(ngx_http_upstream_chring_tier_t *tier,
    chr_node_view *view)
{
    if (tier->node_of_index == NULL) {
        return (ngx_uint_t) view->tag;
    }

    return tier->node_of_index[view->index];
}


/*
 * Puts the ring the follower applied last in use in this process: its
 * snapshot, and the map from the snapshot's node indexes to the nodes
 * (the upstream's server texts). On failure (allocation) the snapshot and
 * map in use stay, `stale` stays set and the next check tries again.
 */
static ngx_int_t
ngx_http_upstream_chring_file_adopt(ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_log_t *log)
{
    size_t                             i, count;
    ngx_uint_t                         k, *map;
    chr_snapshot                      *snap;
    chr_node_view                      view;
    chr_ringfile_info                 *info;
    ngx_http_upstream_chring_file_t   *file;
    ngx_http_upstream_chring_tier_t   *tier;

    file = ccf->file;
    tier = &ccf->primary;
    info = &file->applied;

    if (chr_ring_snapshot(tier->ring, &snap) != CHR_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chring: upstream \"%V\": %s", &ccf->host,
                      chr_last_error());
        return NGX_ERROR;
    }

    if (chr_snapshot_node_count(snap, &count) != CHR_OK) {
        chr_snapshot_release(snap);
        return NGX_ERROR;
    }

    map = ngx_alloc((count ? count : 1) * sizeof(ngx_uint_t), log);
    if (map == NULL) {
        chr_snapshot_release(snap);
        return NGX_ERROR;
    }

    for (i = 0; i < count; i++) {
        map[i] = NGX_HTTP_CHRING_NO_NODE;

        if (chr_snapshot_node(snap, i, &view) != CHR_OK) {
            continue;
        }

        for (k = 0; k < tier->nnodes; k++) {
            if (tier->node_id[k].len == view.id_len
                && ngx_memcmp(tier->node_id[k].data, view.id, view.id_len)
                   == 0)
            {
                map[i] = k;
                break;
            }
        }

        if (map[i] == NGX_HTTP_CHRING_NO_NODE) {
            /* a member nobody serves: its keys go to their next replica */
            ngx_log_error(NGX_LOG_WARN, log, 0,
                          "chring: upstream \"%V\": \"%*s\" in %s matches no "
                          "server of the upstream", &ccf->host,
                          view.id_len, view.id, file->path.data);
        }
    }

    chr_snapshot_release(tier->snapshot);
    if (tier->node_of_index) {
        ngx_free(tier->node_of_index);
    }

    tier->snapshot = snap;
    tier->node_of_index = map;
    file->stale = 0;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "chring: upstream \"%V\": loaded %s: revision %uL%s, "
                  "fingerprint 0x%016xL, %uz members (%uD added, "
                  "%uD removed, %uD reweighted, %uD replaced)",
                  &ccf->host, file->path.data, info->revision,
                  (info->flags & CHR_RINGFILE_HAS_REVISION)
                  ? "" : " (none in the file)",
                  info->fingerprint, count, info->added, info->removed,
                  info->reweighted, info->replaced);

    return NGX_OK;
}


/*
 * On the request path: one time comparison, and at most every check=
 * interval one chr_follower_check(), which looks at the file's stamp and
 * applies a changed file to this process's ring as one batch. A refused
 * file is reported once by the follower (it keeps the refused file's
 * stamp), so it is logged once; the ring keeps the last good file.
 */
static void
ngx_http_upstream_chring_file_check(ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_log_t *log)
{
    int32_t                           outcome;
    chr_status                        rc;
    chr_ringfile_info                 info = CHR_RINGFILE_INFO_INIT;
    chr_follow_state                  state = CHR_FOLLOW_STATE_INIT;
    ngx_http_upstream_chring_file_t  *file;

    file = ccf->file;

    if (file == NULL
        || (ngx_msec_int_t) (ngx_current_msec - file->next_check) < 0)
    {
        return;
    }

    file->next_check = ngx_current_msec + file->check;

    rc = chr_follower_check(ccf->primary.follower, &outcome, &info);

    if (outcome == CHR_FOLLOW_APPLIED) {
        file->applied = info;
        file->stale = 1;

    } else if (outcome == CHR_FOLLOW_REFUSED) {
        (void) chr_follower_state(ccf->primary.follower, &state);
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chring: upstream \"%V\": %s; keeping the ring of "
                      "revision %uL, fingerprint 0x%016xL", &ccf->host,
                      chr_last_error(), state.applied_revision,
                      state.applied_fingerprint);

    } else if (rc != CHR_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0, "chring: upstream \"%V\": %s",
                      &ccf->host, chr_last_error());
    }

    if (file->stale) {
        (void) ngx_http_upstream_chring_file_adopt(ccf, log);
    }
}


/*
 * Variables: $chring_fingerprint, $chring_revision, $chring_refusal,
 * $chring_refused_revision, and the same with _NAME for upstream NAME
 */


#define NGX_HTTP_CHRING_VAR_FINGERPRINT       0
#define NGX_HTTP_CHRING_VAR_REVISION          1
#define NGX_HTTP_CHRING_VAR_REFUSAL           2
#define NGX_HTTP_CHRING_VAR_REFUSED_REVISION  3


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
};


static ngx_int_t
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
 * chring upstream).
 */
static ngx_int_t
ngx_http_upstream_chring_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data)
{
    if (r->upstream == NULL || r->upstream->upstream == NULL) {
        v->not_found = 1;
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
 *                     file=, the follower's applied_fingerprint
 *   revision          the %%revision of the ring file applied last (empty
 *                     without file= or without %%revision)
 *   refusal           while the file as last read is refused, why: the
 *                     follower's message, chring's "file:line: reason"
 *   refused_revision  while it is refused, the %%revision it declared
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
        if (chr_follower_state(ccf->primary.follower, &state) != CHR_OK) {
            return NGX_OK;
        }

    } else if (data != NGX_HTTP_CHRING_VAR_FINGERPRINT) {
        return NGX_OK;
    }

    switch (data) {

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
