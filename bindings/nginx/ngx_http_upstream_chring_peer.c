
/*
 * ngx_http_upstream_chring_peer.c — request time: the peer for the
 * request's key. The key's owner on the tier's ring if it can take the
 * request, else its next replicas in ring order (or, with balance=, the
 * first of them with room under the bound), at most once per peer and
 * within the upstream's tries; then the backup tier. Members the ring
 * file marks down (CHR_NODE_DOWN) are never tried: the ring's lookup and
 * replica lists already put them last, and the walk skips them, unless
 * every member of the key's walk is down. Failure accounting (max_fails,
 * fail_timeout) stays with the round-robin peer_free.
 */


#include "ngx_http_upstream_chring.h"


/*
 * Replicas examined per try before giving up on the ring order and picking
 * any live peer. 32 is what chr_snapshot_replicas serves without
 * allocating.
 */
#define NGX_HTTP_CHRING_REPLICAS  32


typedef struct {
    /* the round robin data must be first */
    ngx_http_upstream_rr_peer_data_t      rrp;
    ngx_http_upstream_chring_srv_conf_t  *conf;
    ngx_str_t                             key;
    ngx_uint_t                            in_backup;  /* unsigned:1 */
    ngx_pool_t                           *pool;       /* the request's */
    /* the primary ring's availability digest at the last try's pick */
    uint64_t                              availability;
} ngx_http_upstream_chring_peer_data_t;


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
    ngx_http_upstream_chring_tier_t *tier, ngx_uint_t node,
    ngx_uint_t avoid_down);


ngx_int_t
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

    cp->availability = ccf->primary.availability;

    return NGX_OK;
}


/*
 * The availability digest of the ring that served request `r`, when a
 * chring upstream chose its peer: NGX_DECLINED otherwise.
 */
ngx_int_t
ngx_http_upstream_chring_request_availability(ngx_http_request_t *r,
    uint64_t *digest)
{
    ngx_http_upstream_chring_peer_data_t  *cp;

    if (r->upstream == NULL
        || r->upstream->peer.get != ngx_http_upstream_get_chring_peer)
    {
        return NGX_DECLINED;
    }

    cp = r->upstream->peer.data;
    *digest = cp->availability;

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

    /* a try after a failure may pick from a newer file's ring */
    cp->availability = cp->conf->primary.availability;

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
    ngx_uint_t                    avoid_down;
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

    /*
     * The lookup answers the first member of the walk not marked down: one
     * marked down only when the whole walk is, and then nothing is avoided
     */
    avoid_down = !(views[0].flags & CHR_NODE_DOWN);

    peer = ngx_http_upstream_chring_best_of_node(cp, tier,
                               ngx_http_upstream_chring_view_node(tier, &views[0]),
                               0);
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
            if (avoid_down && (views[i].flags & CHR_NODE_DOWN)) {
                continue;   /* listed after every available member */
            }

            peer = ngx_http_upstream_chring_best_of_node(cp, tier,
                               ngx_http_upstream_chring_view_node(tier, &views[i]),
                               0);
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

    return ngx_http_upstream_chring_best_of_node(cp, tier, NGX_CONF_UNSET_UINT,
                                                 avoid_down);
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
                               ngx_http_upstream_chring_view_node(tier, &view),
                               0);
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
 * NGX_CONF_UNSET_UINT, then with `avoid_down` none of a node the ring file
 * marks down) by smooth weighted round robin, skipping peers that are
 * down, failed (max_fails within fail_timeout) or full (max_conns),
 * exactly as ngx_http_upstream_get_chash_peer() does; marks it tried.
 */
static ngx_http_upstream_rr_peer_t *
ngx_http_upstream_chring_best_of_node(ngx_http_upstream_chring_peer_data_t *cp,
    ngx_http_upstream_chring_tier_t *tier, ngx_uint_t node,
    ngx_uint_t avoid_down)
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

        if (avoid_down && tier->node_down
            && tier->node_of_peer[i] < tier->nnodes
            && tier->node_down[tier->node_of_peer[i]])
        {
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
