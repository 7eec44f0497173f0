-- chring_balancer: a consistent-hashing upstream for OpenResty's
-- balancer_by_lua_block, on the chring Lua binding (bindings/lua).
--
--   init_by_lua_block {
--       local chring_balancer = require "chring_balancer"
--       backends = assert(chring_balancer.new({
--           { "10.0.0.1:8080", weight = 2 },
--           { "10.0.0.2:8080" },
--           { "10.0.0.3:8080", down = true },
--       }, { ring = { hasher = "xxh3", tokens_per_weight = 160 }, fail_timeout = 10 }))
--   }
--   upstream backends {
--       server 0.0.0.1;   # placeholder: the balancer sets every peer
--       balancer_by_lua_block { backends:balance(ngx.var.request_uri) }
--   }
--
-- The same behaviour as the ngx_http_upstream_chring_module: a node is a
-- server ("host:port", its text is the ring id, its position the tag); a
-- `down` server is a member of weight 0, never chosen. A try that fails
-- moves the key to its next replica (the next distinct server clockwise),
-- at most one try per server and at most proxy_next_upstream_tries. A
-- server whose connection failed is skipped for fail_timeout seconds by
-- this worker (max_fails=1 in nginx terms; 0 turns that memory off);
-- when every server is tried or skipped the request gets 502, as nginx's
-- "no live upstreams". No `backup` tier here: see the C module for that.
--
-- Which server a retry goes to is the library's rule, not this file's:
-- snap:lookup_bounded(key, nil, mask) without a bound is the first server
-- of the key's replica walk (chr_snapshot_replicas order) that the mask
-- lets this request try. The walk covers every server with tokens: where
-- the C module stops after 32 replicas and takes any available server,
-- this example keeps following the ring. The mask is filled and read in
-- one balance() call, which never yields, so one table serves a worker.
--
-- Built in init_by_lua (the master), the ring is inherited by every worker;
-- lookups go to one snapshot and allocate nothing once each node has been
-- seen. Rebuild by reloading nginx with a new list.
local balancer = require "ngx.balancer"
local chring = require "chring"

local ngx = ngx
local ngx_now = ngx.now
local ngx_log = ngx.log
local ngx_ERR = ngx.ERR
local ngx_exit = ngx.exit

local _M = { _VERSION = "0.1.0" }
local mt = { __index = _M }

-- servers: { { "host:port", weight = N, down = true|nil }, ... } in
-- configuration order. opts.ring: chring.new options (hasher,
-- tokens_per_weight, seed, placement, plugin_dir); opts.fail_timeout:
-- seconds (default 10, as nginx). Returns the balancer, or nil and a message.
function _M.new(servers, opts)
    opts = opts or {}
    local ring, err = chring.new(opts.ring)
    if not ring then
        return nil, err
    end

    local changes, peers, live = {}, {}, 0
    for i, server in ipairs(servers) do
        local id = server[1]
        local host, port = tostring(id):match("^(.+):(%d+)$")
        if not host then
            return nil, "chring_balancer: server " .. i .. " '" .. tostring(id)
                        .. "' is not host:port"
        end
        local weight = server.down and 0 or (server.weight or 1)
        if weight > 0 then
            live = live + 1
        end
        peers[id] = { host = host, port = tonumber(port), weight = weight }
        changes[i] = { op = "add", id = id, weight = weight, tag = i - 1 }
    end

    local ok, apply_err = ring:apply(changes)
    if not ok then
        return nil, apply_err
    end
    local snapshot, snap_err = ring:snapshot()
    if not snapshot then
        return nil, snap_err
    end

    -- The snapshot's node order (ids in byte order), for the retry mask.
    local by_index, mask = {}, {}
    for i = 1, snapshot:node_count() do
        by_index[i] = snapshot:node(i).id
        mask[i] = false
    end

    return setmetatable({
        ring = ring,
        snapshot = snapshot,
        peers = peers,
        by_index = by_index, -- snapshot node index -> id
        mask = mask,         -- reused: which servers a retry may go to
        live = live,
        fail_timeout = opts.fail_timeout or 10,
        failed_until = {},   -- per worker: id -> time before which it is skipped
    }, mt)
end

-- Whether this request may try server `id` now.
local function available(self, state, id, now)
    return not state.tried[id] and (self.failed_until[id] or 0) <= now
end

-- Picks the peer for `key` and sets it; call from balancer_by_lua_block.
-- nginx runs the block again for every retry of the same request.
function _M:balance(key)
    local ctx = ngx.ctx
    local state = ctx.chring_balancer
    local now = ngx_now()

    if not state then
        state = { tried = {} }
        ctx.chring_balancer = state
        if self.live > 1 then
            -- nginx caps this at proxy_next_upstream_tries
            balancer.set_more_tries(self.live - 1)
        end
    elseif self.fail_timeout > 0 and balancer.get_last_failure() == "failed" then
        self.failed_until[state.last] = now + self.fail_timeout
    end

    local owner, err = self.snapshot:lookup(key)
    if not owner then
        ngx_log(ngx_ERR, "chring_balancer: ", err)
        return ngx_exit(502)
    end

    local pick
    if available(self, state, owner.id, now) then
        pick = owner.id
    else
        -- The key's next replica this request may try: the library walks
        -- the ring from the key, skipping the servers the mask rules out.
        local mask, peers = self.mask, self.peers
        for i, id in ipairs(self.by_index) do
            mask[i] = peers[id].weight > 0 and available(self, state, id, now)
        end
        local node, walk_err, code = self.snapshot:lookup_bounded(key, nil, mask)
        if node then
            pick = node.id
        elseif code ~= chring.status.EEMPTY then
            ngx_log(ngx_ERR, "chring_balancer: ", walk_err)
            return ngx_exit(502)
        end
    end

    if not pick then
        ngx_log(ngx_ERR, "chring_balancer: no live upstreams for key \"", key, "\"")
        return ngx_exit(502)
    end

    state.tried[pick] = true
    state.last = pick
    local peer = self.peers[pick]
    local ok, set_err = balancer.set_current_peer(peer.host, peer.port)
    if not ok then
        ngx_log(ngx_ERR, "chring_balancer: set_current_peer ", pick, ": ", set_err)
        return ngx_exit(500)
    end
end

return _M
