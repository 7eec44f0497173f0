
/*
 * ngx_http_upstream_chring_ring.c — the rings: one per tier (primary,
 * backup) of a chring upstream, built from the round-robin peer lists when
 * the upstream is initialised, in the master (the workers inherit them);
 * with file=, the primary ring follows the ring file through a
 * chr_follower, checked by each worker on its own (on the request path,
 * at most every check= interval). The directive checks that the workers'
 * user can read the file; fallback= is the ring the master starts from
 * when the file cannot be used.
 */


#include "ngx_http_upstream_chring.h"


static void ngx_http_upstream_chring_cleanup(void *data);
static ngx_int_t ngx_http_upstream_chring_build_tier(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_http_upstream_rr_peers_t *peers, ngx_http_upstream_chring_tier_t *tier,
    const char *what);
static void ngx_http_upstream_chring_log_server_error(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_tier_t *tier,
    chr_change *changes, ngx_uint_t nnodes, size_t failed, const char *what);
static ngx_int_t ngx_http_upstream_chring_file_load(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf);
static void ngx_http_upstream_chring_fallback_try(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf);
static ngx_int_t ngx_http_upstream_chring_file_adopt(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log,
    u_char *source);
static void ngx_http_upstream_chring_log_availability(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log,
    u_char *source, chr_snapshot *snap, chr_availability_info *avail);


/* At the `chring` directive */


/*
 * The primary ring, created by the directive so that options a ring
 * refuses fail at its line, and with file= its follower (nothing is read
 * yet: the upstream's servers come later). The cleanup frees what the
 * upstream's rings hold with the configuration's pool.
 */
ngx_int_t
ngx_http_upstream_chring_create_rings(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf)
{
    ngx_pool_cleanup_t  *cln;

    cln = ngx_pool_cleanup_add(cf->pool, 0);
    if (cln == NULL) {
        return NGX_ERROR;
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
        return NGX_ERROR;
    }

    return NGX_OK;
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
    if (ccf->primary.node_down) {
        ngx_free(ccf->primary.node_down);
    }
    chr_snapshot_release(ccf->backup.snapshot);
    chr_ring_free(ccf->backup.ring);
}


/* Configuration time: rings from the round-robin peer lists */


ngx_int_t
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
        /* the file, not the configuration, says who is a member */
        return ngx_http_upstream_chring_file_load(cf, us, ccf);
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


/* file=: the ring file, followed by each process on its own */


/* the access check's child could not take the workers' credentials */
#define NGX_HTTP_CHRING_ACCESS_NOCRED  255


/*
 * At the directive, in the master: can the workers open the ring file?
 * They run as the core module's "user" when the master runs as root (else
 * as the master's own user, whose read at configuration answers). A
 * forked child takes their credentials as ngx_worker_process_init() does
 * (initgroups()'s supplementary groups, the group, the user) and open()s
 * the file as the follower does. Asking the kernel rather than comparing
 * mode bits with the user's ids counts all it counts: POSIX ACLs, the
 * search permission of each directory on the way (also those a symbolic
 * link leads through), security modules, root-squashing network file
 * systems; and the master's own credentials never change, not even for a
 * moment.
 *
 * A file they cannot open (EACCES, EPERM) fails the directive with the
 * file and the user, unless fallback= is given: then access_err makes the
 * upstream start from the fallback. Other errors (a missing file) are the
 * master's own read's to report.
 */
ngx_int_t
ngx_http_upstream_chring_file_access(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf)
{
#if !(NGX_WIN32)
    int                               fd, n, ngroups, status;
    char                             *user;
    uid_t                             uid;
    gid_t                             gid, *groups;
    pid_t                             pid;
    u_char                           *p;
    sigset_t                          set, old;
    ngx_err_t                         err;
    struct group                     *grp;
    struct passwd                    *pwd;
    ngx_core_conf_t                  *core;
    ngx_http_upstream_chring_file_t  *file;
    u_char                            text[NGX_MAX_ERROR_STR];

    file = ccf->file;

    if (geteuid() != 0 || ngx_process == NGX_PROCESS_SIGNALLER) {
        return NGX_OK;
    }

    core = (ngx_core_conf_t *) ngx_get_conf(cf->cycle->conf_ctx,
                                           ngx_core_module);

    if (core->user != (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        user = core->username;
        uid = core->user;
        gid = core->group;

    } else {
        /* no "user" yet: nginx's default, as its core module sets it */
        pwd = getpwnam(NGX_USER);
        grp = getgrnam(NGX_GROUP);

        if (pwd == NULL || grp == NULL) {
            return NGX_OK;      /* nginx refuses it with its own message */
        }

        user = NGX_USER;
        uid = pwd->pw_uid;
        gid = grp->gr_gid;
    }

    file->access_checked = 1;
    file->access_user = user;
    file->access_uid = uid;
    file->access_gid = gid;

    if (uid == 0) {
        return NGX_OK;
    }

    /* the supplementary groups initgroups() gives the workers */
    ngroups = 64;

    for ( ;; ) {
        groups = ngx_palloc(cf->temp_pool, ngroups * sizeof(gid_t));
        if (groups == NULL) {
            return NGX_ERROR;
        }

        n = ngroups;

        if (getgrouplist(user, gid, groups, &n) != -1) {
            ngroups = n;
            break;
        }

        ngroups = (n > ngroups) ? n : ngroups * 2;

        if (ngroups > 65536) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "chring: cannot list the groups of user "
                               "\"%s\" (the workers' user)", user);
            return NGX_ERROR;
        }
    }

    /* SIGCHLD held: nginx's handler must not reap the child first */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);

    pid = fork();

    if (pid == 0) {
        if (setgroups((size_t) ngroups, groups) == -1
            || setgid(gid) == -1
            || setuid(uid) == -1)
        {
            _exit(NGX_HTTP_CHRING_ACCESS_NOCRED);
        }

        fd = open((const char *) file->path.data,
                  O_RDONLY|O_NOCTTY|O_NONBLOCK);

        _exit(fd != -1 ? 0
              : (errno > 0 && errno < NGX_HTTP_CHRING_ACCESS_NOCRED)
                ? errno : EIO);
    }

    err = (pid == -1) ? ngx_errno : 0;
    status = 0;

    while (pid > 0 && waitpid(pid, &status, 0) == -1) {
        if (ngx_errno != NGX_EINTR) {
            err = ngx_errno;
            break;
        }
    }

    sigprocmask(SIG_SETMASK, &old, NULL);

    if (err) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, err,
                           "chring: cannot check that user \"%s\" (the "
                           "workers' user) can read file \"%s\": %s failed",
                           user, file->path.data,
                           pid == -1 ? "fork()" : "waitpid()");
        return NGX_ERROR;
    }

    if (!WIFEXITED(status)
        || WEXITSTATUS(status) == NGX_HTTP_CHRING_ACCESS_NOCRED)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: cannot check that user \"%s\" (the "
                           "workers' user) can read file \"%s\": the "
                           "checking process %s", user, file->path.data,
                           WIFEXITED(status)
                           ? "could not take that user's uid and gid"
                           : "was killed by a signal");
        return NGX_ERROR;
    }

    err = WEXITSTATUS(status);

    if (err != NGX_EACCES && err != NGX_EPERM) {
        return NGX_OK;
    }

    if (file->fallback.len) {
        file->access_err = err;
        return NGX_OK;
    }

    p = ngx_strerror(err, text, sizeof(text) - 1);
    *p = '\0';

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "chring: file \"%s\" is not readable by user \"%s\" "
                       "(the workers' user): %s; each worker reads the file "
                       "itself: give that user read access to it and search "
                       "access to its directories", file->path.data, user,
                       text);

    return NGX_ERROR;
#else
    return NGX_OK;
#endif
}


/*
 * The directive checked the file as the user the core module had when
 * the upstream was read: a "user" directive after the "http" block was
 * not known yet. Say so (the cycle is committed here: init_module cannot
 * fail a reload without stopping the master).
 */
ngx_int_t
ngx_http_upstream_chring_init_module(ngx_cycle_t *cycle)
{
    ngx_uint_t                            i;
    ngx_core_conf_t                      *core;
    ngx_http_upstream_main_conf_t        *umcf;
    ngx_http_upstream_srv_conf_t        **uscfp;
    ngx_http_upstream_chring_srv_conf_t  *ccf;

    core = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);
    umcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_upstream_module);

    if (umcf == NULL) {
        return NGX_OK;
    }

    uscfp = umcf->upstreams.elts;

    for (i = 0; i < umcf->upstreams.nelts; i++) {
        if (uscfp[i]->srv_conf == NULL) {
            continue;
        }

        ccf = ngx_http_conf_upstream_srv_conf(uscfp[i],
                                              ngx_http_upstream_chring_module);

        if (ccf == NULL || ccf->file == NULL || !ccf->file->access_checked
            || (core->user == ccf->file->access_uid
                && core->group == ccf->file->access_gid))
        {
            continue;
        }

        ngx_log_error(NGX_LOG_WARN, cycle->log, 0,
                      "chring: upstream \"%V\": file \"%s\" was checked as "
                      "user \"%s\", but the workers run as \"%s\": put the "
                      "\"user\" directive before \"http\"",
                      &uscfp[i]->host, ccf->file->path.data,
                      ccf->file->access_user,
                      core->username ? core->username : "?");
    }

    return NGX_OK;
}


/*
 * Configuration time, in the master: the primary ring from the file, the
 * follower's first check reading it whatever its stamp. When the file
 * cannot be used (the workers cannot read it; it is missing, unreadable
 * or refused), the ring is fallback='s, if given, and the follower goes
 * on following the primary: the workers inherit its stamp, so a file
 * still missing changes nothing and the first good one is applied.
 */
static ngx_int_t
ngx_http_upstream_chring_file_load(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf)
{
    u_char                           *p;
    size_t                            len;
    chr_status                        rc;
    const char                       *message;
    ngx_http_upstream_chring_file_t  *file;
    u_char                            reason[NGX_MAX_ERROR_STR];

    /*
     * "nginx -s stop|quit|reopen|reload" reads the configuration only to
     * signal the master, which reads the file itself on reload: a file
     * that cannot be used must not keep nginx from being stopped
     */
    if (ngx_process == NGX_PROCESS_SIGNALLER) {
        return NGX_OK;
    }

    file = ccf->file;
    file->applied = (chr_ringfile_info) CHR_RINGFILE_INFO_INIT;

    if (file->access_err) {
        p = ngx_snprintf(reason, sizeof(reason) - 1,
                         "file \"%s\" is not readable by user \"%s\" (the "
                         "workers' user): ", file->path.data,
                         file->access_user);
        p = ngx_strerror(file->access_err, p, reason + sizeof(reason) - 1 - p);
        *p = '\0';
        rc = CHR_EIO;

    } else {
        rc = chr_follower_check(ccf->primary.follower, NULL, &file->applied);

        if (rc == CHR_OK) {
            if (file->fallback.len) {
                ngx_http_upstream_chring_fallback_try(cf, us, ccf);
            }

            file->stale = 1;

            return ngx_http_upstream_chring_file_adopt(ccf, cf->log,
                                                       file->path.data);
        }

        /* chr_last_error() is thread-local and stays; copied all the same */
        message = chr_last_error();
        len = ngx_min(ngx_strlen(message), sizeof(reason) - 1);
        *ngx_cpymem(reason, message, len) = '\0';
    }

    if (file->fallback.len == 0) {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "chring: upstream \"%V\" in %s:%ui: %s%s", &us->host,
                      us->file_name, us->line, reason,
                      rc == CHR_EIO ? " (and no \"fallback=\" to start from)"
                                    : "");
        return NGX_ERROR;
    }

    /* the primary ring is still empty: the fallback's members are added */
    file->fallback_applied = (chr_ringfile_info) CHR_RINGFILE_INFO_INIT;

    if (chr_ring_apply_file(ccf->primary.ring,
                            (const char *) file->fallback.data,
                            &file->fallback_applied)
        != CHR_OK)
    {
        ngx_log_error(NGX_LOG_EMERG, cf->log, 0,
                      "chring: upstream \"%V\" in %s:%ui: %s; and the "
                      "fallback cannot be used either: %s", &us->host,
                      us->file_name, us->line, reason, chr_last_error());
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                  "chring: upstream \"%V\": %s; starting from the fallback "
                  "%s (revision %uL, fingerprint 0x%016xL) and following %s",
                  &us->host, reason, file->fallback.data,
                  file->fallback_applied.revision,
                  file->fallback_applied.fingerprint, file->path.data);

    file->on_fallback = 1;
    file->applied = file->fallback_applied;
    file->stale = 1;

    return ngx_http_upstream_chring_file_adopt(ccf, cf->log,
                                               file->fallback.data);
}


/*
 * The primary file is good: is the fallback? Only a warning, since the
 * primary is what runs; but the fallback is needed when it cannot be
 * read again, which is the wrong time to find it missing or refused.
 */
static void
ngx_http_upstream_chring_fallback_try(ngx_conf_t *cf,
    ngx_http_upstream_srv_conf_t *us, ngx_http_upstream_chring_srv_conf_t *ccf)
{
    chr_ring  *ring;

    ring = NULL;

    if (chr_ring_new(&ccf->options, &ring) != CHR_OK
        || chr_ring_apply_file(ring, (const char *) ccf->file->fallback.data,
                               NULL)
           != CHR_OK)
    {
        ngx_log_error(NGX_LOG_WARN, cf->log, 0,
                      "chring: upstream \"%V\" in %s:%ui: the fallback "
                      "for %s cannot be used: %s", &us->host, us->file_name,
                      us->line, ccf->file->path.data, chr_last_error());
    }

    chr_ring_free(ring);
}


/*
 * Puts the ring the follower applied last in use in this process: its
 * snapshot, and the map from the snapshot's node indexes to the nodes
 * (the upstream's server texts); `source` is the file it came from. On
 * failure (allocation) the snapshot and map in use stay, `stale` stays set
 * and the next check tries again.
 */
static ngx_int_t
ngx_http_upstream_chring_file_adopt(ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_log_t *log, u_char *source)
{
    size_t                             i, count;
    u_char                            *down;
    ngx_uint_t                         k, *map;
    chr_snapshot                      *snap;
    chr_node_view                      view;
    chr_ringfile_info                 *info;
    chr_availability_info              avail = CHR_AVAILABILITY_INFO_INIT;
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

    if (chr_snapshot_availability(snap, &avail) != CHR_OK) {
        ngx_log_error(NGX_LOG_ERR, log, 0,
                      "chring: upstream \"%V\": %s", &ccf->host,
                      chr_last_error());
        chr_snapshot_release(snap);
        return NGX_ERROR;
    }

    map = ngx_alloc((count ? count : 1) * sizeof(ngx_uint_t), log);
    if (map == NULL) {
        chr_snapshot_release(snap);
        return NGX_ERROR;
    }

    down = ngx_calloc(tier->nnodes ? tier->nnodes : 1, log);
    if (down == NULL) {
        ngx_free(map);
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
                          view.id_len, view.id, source);

        } else if (view.flags & CHR_NODE_DOWN) {
            down[map[i]] = 1;
        }
    }

    chr_snapshot_release(tier->snapshot);
    if (tier->node_of_index) {
        ngx_free(tier->node_of_index);
    }
    if (tier->node_down) {
        ngx_free(tier->node_down);
    }

    tier->snapshot = snap;
    tier->node_of_index = map;
    tier->node_down = down;
    file->stale = 0;

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "chring: upstream \"%V\": loaded %s: revision %uL%s, "
                  "fingerprint 0x%016xL, %uz members (%uD added, "
                  "%uD removed, %uD reweighted, %uD replaced)",
                  &ccf->host, source, info->revision,
                  (info->flags & CHR_RINGFILE_HAS_REVISION)
                  ? "" : " (none in the file)",
                  info->fingerprint, count, info->added, info->removed,
                  info->reweighted, info->replaced);

    if (avail.digest != tier->availability || avail.panic != tier->panic) {
        ngx_http_upstream_chring_log_availability(ccf, log, source, snap,
                                                  &avail);
        tier->availability = avail.digest;
        tier->panic = avail.panic;
    }

    return NGX_OK;
}


/*
 * An adopted file changed the availability (the members marked down or
 * the panic threshold: the digest; or whether the ring is in panic): a
 * notice with the ids marked down, and a warning while in panic, when
 * the marks are ignored. Called once per change in each process.
 */
static void
ngx_http_upstream_chring_log_availability(
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_log_t *log, u_char *source,
    chr_snapshot *snap, chr_availability_info *avail)
{
    u_char         *p, *last, ids[512];
    size_t          i, count;
    uint32_t        marked;
    chr_node_view   view;

    p = ids;
    last = ids + sizeof(ids) - sizeof("...");

    if (chr_snapshot_node_count(snap, &count) != CHR_OK) {
        count = 0;
    }

    for (i = 0; i < count; i++) {
        if (chr_snapshot_marked_down(snap, i, &marked) != CHR_OK || !marked
            || chr_snapshot_node(snap, i, &view) != CHR_OK)
        {
            continue;
        }

        if (p != ids) {
            p = ngx_slprintf(p, last, ",");
        }

        p = ngx_slprintf(p, last, "%*s", view.id_len, view.id);

        if (p == last) {
            p = ngx_cpymem(p, "...", 3);
            break;
        }
    }

    if (p == ids) {
        p = ngx_cpymem(ids, "none", 4);
    }

    ngx_log_error(NGX_LOG_NOTICE, log, 0,
                  "chring: upstream \"%V\": availability 0x%016xL from %s: "
                  "%uD marked down (%*s), %uL of %uL weight, panic "
                  "threshold %uD%%", &ccf->host, avail->digest, source,
                  avail->down, (size_t) (p - ids), ids, avail->down_weight,
                  avail->total_weight, avail->panic_threshold);

    if (avail->panic) {
        ngx_log_error(NGX_LOG_WARN, log, 0,
                      "chring: upstream \"%V\": panic: %uL of %uL weight "
                      "is marked down, more than the threshold %uD%%; every "
                      "member is used as if none were down", &ccf->host,
                      avail->down_weight, avail->total_weight,
                      avail->panic_threshold);
    }
}


/*
 * On the request path: one time comparison, and at most every check=
 * interval one chr_follower_check(), which looks at the file's stamp and
 * applies a changed file to this process's ring as one batch. A refused
 * file is reported once by the follower (it keeps the refused file's
 * stamp), so it is logged once; the ring keeps the last good file.
 */
void
ngx_http_upstream_chring_file_check(ngx_http_upstream_chring_srv_conf_t *ccf,
    ngx_log_t *log)
{
    int32_t                           outcome = CHR_FOLLOW_UNCHANGED;
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
        file->on_fallback = 0;
        file->stale = 1;

    } else if (outcome == CHR_FOLLOW_REFUSED) {
        (void) ngx_http_upstream_chring_file_state(ccf, &state);
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
        (void) ngx_http_upstream_chring_file_adopt(ccf, log, file->path.data);
    }
}


/*
 * The follower's state; while the ring in use is the fallback's (the
 * follower has applied no file yet), with the fallback's revision and
 * fingerprint as those of the file applied last.
 */
ngx_int_t
ngx_http_upstream_chring_file_state(ngx_http_upstream_chring_srv_conf_t *ccf,
    chr_follow_state *state)
{
    ngx_http_upstream_chring_file_t  *file;

    if (chr_follower_state(ccf->primary.follower, state) != CHR_OK) {
        return NGX_ERROR;
    }

    file = ccf->file;

    if (file->on_fallback && state->applied == 0) {
        state->applied_flags = file->fallback_applied.flags;
        state->applied_revision = file->fallback_applied.revision;
        state->applied_fingerprint = file->fallback_applied.fingerprint;
    }

    return NGX_OK;
}
