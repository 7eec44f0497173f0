
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
 * since the file, not the configuration, orders them. The workers must be
 * able to read the file (checked as their user); fallback=PATH is the
 * file the master starts from when that one cannot be used, the workers
 * still following the first.
 *
 * This file holds the module and its directive; the rings and the file
 * follower, the peer selection and the variables have files of their own
 * (their list: ngx_http_upstream_chring.h, the header they share).
 */

#include "ngx_http_upstream_chring.h"


#define NGX_HTTP_CHRING_CHECK_DEFAULT  1000      /* check=, milliseconds */


static void *ngx_http_upstream_chring_create_conf(ngx_conf_t *cf);
static char *ngx_http_upstream_chring(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_upstream_chring_parameter(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf, ngx_str_t *value,
    ngx_uint_t *seen);
static ngx_http_upstream_chring_file_t *ngx_http_upstream_chring_file_conf(
    ngx_conf_t *cf, ngx_http_upstream_chring_srv_conf_t *ccf);
static ngx_int_t ngx_http_upstream_chring_path(ngx_conf_t *cf, ngx_str_t *arg,
    ngx_str_t *path);


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
#define NGX_HTTP_CHRING_SEEN_FALLBACK    0x400


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
    ngx_http_upstream_chring_init_module,  /* init module */
    NULL,                                  /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    NULL,                                  /* exit process */
    NULL,                                  /* exit master */
    NGX_MODULE_V1_PADDING
};


/* The `chring` directive */


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
 *            [file=PATH [check=TIME] [fallback=PATH]];
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

    if ((seen & NGX_HTTP_CHRING_SEEN_FALLBACK)
        && !(seen & NGX_HTTP_CHRING_SEEN_FILE))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "chring: \"fallback=\" needs \"file=\"");
        return NGX_CONF_ERROR;
    }

    /* workers that could not read the file would never follow it */
    if ((seen & NGX_HTTP_CHRING_SEEN_FILE)
        && ngx_http_upstream_chring_file_access(cf, ccf) != NGX_OK)
    {
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

    if (ngx_http_upstream_chring_create_rings(cf, ccf) != NGX_OK) {
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
        if (ngx_http_upstream_chring_file_conf(cf, ccf) == NULL
            || ngx_http_upstream_chring_path(cf, &arg, &ccf->file->path)
               != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

    } else if (ngx_strncmp(value->data, "fallback=", 9) == 0) {
        bit = NGX_HTTP_CHRING_SEEN_FALLBACK;
        if (arg.len == 0) {
            goto invalid;
        }
        if (ngx_http_upstream_chring_file_conf(cf, ccf) == NULL
            || ngx_http_upstream_chring_path(cf, &arg, &ccf->file->fallback)
               != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }

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
        if (ngx_http_upstream_chring_file_conf(cf, ccf) == NULL) {
            return NGX_CONF_ERROR;
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
        if (ngx_http_upstream_chring_path(cf, &arg, &ccf->plugin_dir)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
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
                       "file=PATH, check=TIME or fallback=PATH)", value);

    return NGX_CONF_ERROR;

bad_balance:

    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                       "chring: invalid \"%V\": the balance factor is a "
                       "decimal number from 1.00 to 1000 (e.g. 1.25)", value);

    return NGX_CONF_ERROR;
}


/* file=, check=, fallback=: the file's configuration, made by the first */
static ngx_http_upstream_chring_file_t *
ngx_http_upstream_chring_file_conf(ngx_conf_t *cf,
    ngx_http_upstream_chring_srv_conf_t *ccf)
{
    if (ccf->file == NULL) {
        ccf->file = ngx_pcalloc(cf->pool,
                                sizeof(ngx_http_upstream_chring_file_t));
        if (ccf->file == NULL) {
            return NULL;
        }
        ccf->file->check = NGX_HTTP_CHRING_CHECK_DEFAULT;
    }

    return ccf->file;
}


/* A path parameter: relative to the prefix, as nginx paths are; NUL-terminated */
static ngx_int_t
ngx_http_upstream_chring_path(ngx_conf_t *cf, ngx_str_t *arg, ngx_str_t *path)
{
    if (ngx_conf_full_name(cf->cycle, arg, 0) != NGX_OK) {
        return NGX_ERROR;
    }

    path->data = ngx_pnalloc(cf->pool, arg->len + 1);
    if (path->data == NULL) {
        return NGX_ERROR;
    }

    path->len = arg->len;
    *ngx_cpymem(path->data, arg->data, arg->len) = '\0';

    return NGX_OK;
}
