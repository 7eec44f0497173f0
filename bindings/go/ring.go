package chring

/*
#cgo pkg-config: chring
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Limits of the C library (chring.h).
const (
	NodeIDMax           = C.CHR_NODE_ID_MAX
	ZoneMax             = C.CHR_ZONE_MAX
	WeightMax           = C.CHR_WEIGHT_MAX
	TokensPerWeightMax  = C.CHR_TOKENS_PER_WEIGHT_MAX
	DefaultHasher       = C.CHR_DEFAULT_HASHER
	DefaultTokensWeight = C.CHR_DEFAULT_TOKENS_PER_WEIGHT
)

// BindingVersion is this package's version, which is the version of the
// libchring it was written for (the project's version in meson.build; a
// test checks both).
const BindingVersion = "0.1.0"

// Version is the version of the loaded libchring, as MAJOR*10000 + MINOR*100 + PATCH.
func Version() uint32 { return uint32(C.chr_version()) }

// VersionString is the version of the loaded libchring as text, "MAJOR.MINOR.PATCH".
func VersionString() string { return C.GoString(C.chr_version_string()) }

// Options configure a new Ring. The zero value means the library defaults.
type Options struct {
	// TokensPerWeight is the number of tokens per unit of weight,
	// 1..TokensPerWeightMax; 0 means the default (160).
	TokensPerWeight uint32
	// Seed is passed to the hasher for every key and token.
	Seed uint64
	// Hasher names the hash function; "" means DefaultHasher (xxh3).
	Hasher string
	// Placement selects how tokens are placed; the zero value is
	// PlacementNative. The compatibility placements name their own hasher
	// (md5 or crc32): leave Hasher empty or set that one.
	Placement Placement
	// PluginDir is an extra directory searched for hash plugins, after the
	// library's own directory and CHRING_PLUGIN_PATH; "" means none.
	PluginDir string
}

// Placement is a CHR_PLACEMENT_* mode (chring.h explains each).
type Placement int32

// Placement modes.
const (
	PlacementNative           Placement = C.CHR_PLACEMENT_NATIVE            // weight x tokens_per_weight tokens at H(id "#" i)
	PlacementKetama           Placement = C.CHR_PLACEMENT_KETAMA            // libmemcached / twemproxy weighted ketama
	PlacementKetamaUnweighted Placement = C.CHR_PLACEMENT_KETAMA_UNWEIGHTED // libmemcached ketama, MD5 hash, weights 0 or 1
	PlacementNginx            Placement = C.CHR_PLACEMENT_NGINX             // nginx `hash $key consistent`
)

// Member is a node to add: its id (1..NodeIDMax bytes, any bytes), its
// weight (0..WeightMax; 0 keeps it a member without tokens), an optional
// zone label and a tag returned with it (e.g. an index into your pool).
type Member struct {
	ID     []byte
	Weight uint32
	Zone   []byte
	Tag    uint64
}

// Node is a member as returned by lookups.
type Node struct {
	ID        []byte
	Zone      []byte
	Tag       uint64
	Weight    uint32
	Tokens    uint32  // tokens placed for it: Weight * TokensPerWeight
	Index     int     // position in the node table, ids in byte order
	Ownership float64 // fraction of the circle it owns, 0..1
	// Down: the member is marked down and lookups route around it now (the
	// ring is not in panic; CHR_NODE_DOWN). Snapshot.MarkedDown tells a
	// mark that panic suspends.
	Down bool
}

// Ring is a consistent-hashing ring. All methods may be called from any
// number of goroutines at once, except Close, which must not run
// concurrently with any other call on the same Ring (its Followers'
// calls excepted: see Close).
type Ring struct {
	ptr handle[C.chr_ring]
	// table is the node table lookups return nodes from: a copy of the
	// ring's nodes when gen was table.gen. gen is a sequence count of the
	// changes made through this Ring (every change is: the C ring is private
	// to it and its Followers, whose checks are bracketed too), odd while
	// one runs; writeMu orders the writers. A lookup whose C call ran while
	// gen stayed at table.gen (even) got an index into that same
	// membership; any other takes the slow path.
	table     atomic.Pointer[nodeTable]
	gen       atomic.Uint64
	writeMu   sync.Mutex
	refreshMu sync.Mutex
	// followers are the C followers that borrow this ring: Close frees
	// them before the ring.
	followers followerSet
}

// handle is a C object's pointer: Close takes it exactly once (even when
// called twice, concurrently), after which get reports ErrClosed.
type handle[T any] struct {
	p atomic.Pointer[T]
}

func (h *handle[T]) get() (*T, error) {
	if p := h.p.Load(); p != nil {
		return p, nil
	}
	return nil, ErrClosed
}

func (h *handle[T]) take() *T { return h.p.Swap(nil) }

// New creates an empty ring; opts may be nil for the defaults.
func New(opts *Options) (*Ring, error) {
	var p *C.chr_ring
	err := withCOptions(opts, "New", func(o *C.chr_options) error {
		return check(C.gochr_ring_new(o, &p))
	})
	if err != nil {
		return nil, err
	}
	return wrapRing(p), nil
}

// withCOptions calls f with opts as a chr_options (nil = the defaults),
// whose strings live during the call; who names the Go function in errors.
func withCOptions(opts *Options, who string, f func(*C.chr_options) error) error {
	var o C.chr_options
	if err := check(C.gochr_result{status: C.chr_options_init(&o, C.CHR_OPTIONS_VERSION)}); err != nil {
		return err
	}
	if opts != nil {
		if opts.TokensPerWeight != 0 {
			o.tokens_per_weight = C.uint32_t(opts.TokensPerWeight)
		}
		o.seed = C.uint64_t(opts.Seed)
		o.placement = C.int32_t(opts.Placement)
		var err error
		if o.hasher, err = cStringOrNil(opts.Hasher, who+": Options.Hasher"); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(o.hasher))
		if o.plugin_dir, err = cStringOrNil(opts.PluginDir, who+": Options.PluginDir"); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(o.plugin_dir))
	}
	return f(&o)
}

// wrapRing owns p from now on.
func wrapRing(p *C.chr_ring) *Ring {
	r := &Ring{}
	r.ptr.p.Store(p)
	// A safety net only: call Close. Close removes the finalizer.
	runtime.SetFinalizer(r, (*Ring).Close)
	return r
}

// Close frees the ring. Snapshots taken from it stay valid until their own
// Close. It must not run concurrently with other calls on this Ring; calls
// after it return ErrClosed. Closing twice is a no-op. Its Followers are
// freed first: Close waits for a check in progress, and their later
// calls return ErrClosed (a WatchFile goroutine ends).
func (r *Ring) Close() error {
	if p := r.ptr.take(); p != nil {
		r.closeFollowers() // each borrows the C ring
		C.chr_ring_free(p)
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

// handle is the C ring, or ErrClosed. Every caller defers
// runtime.KeepAlive(r) so that the finalizer cannot free the ring while a C
// call still uses it.
func (r *Ring) handle() (*C.chr_ring, error) { return r.ptr.get() }

// bytesArg passes a Go byte slice to C as (pointer, length) without a copy;
// cgo pins it for the duration of the call. An empty slice is (NULL, 0).
func bytesArg(b []byte) (unsafe.Pointer, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&b[0]), C.size_t(len(b))
}

// Add adds a member; keys move only onto it.
func (r *Ring) Add(m Member) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	id, idLen := bytesArg(m.ID)
	zone, zoneLen := bytesArg(m.Zone)
	err = check(C.gochr_ring_add(unsafe.Pointer(p), id, idLen, C.uint32_t(m.Weight), zone, zoneLen, C.uint64_t(m.Tag)))
	return err
}

// Remove removes a member; only its keys move.
func (r *Ring) Remove(id []byte) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	ptr, n := bytesArg(id)
	err = check(C.gochr_ring_remove(unsafe.Pointer(p), ptr, n))
	return err
}

// SetWeight changes a member's weight; keys move only to or from it.
func (r *Ring) SetWeight(id []byte, weight uint32) error {
	p, err := r.handle()
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(r)
	r.beginChange()
	defer r.endChange()
	ptr, n := bytesArg(id)
	err = check(C.gochr_ring_set_weight(unsafe.Pointer(p), ptr, n, C.uint32_t(weight)))
	return err
}

// refPool recycles the out-structs of Lookup's slow path: cgo makes
// anything passed to C escape to the heap, and a chr_node_ref is 352 bytes.
var refPool = sync.Pool{New: func() any { return new(C.chr_node_ref) }}

// Lookup returns the member that owns key. ErrEmpty when no member has
// tokens. Allocation-free while the ring is unchanged: the node comes
// from the ring's node table (copied into Go memory once after each
// change), and its ID and Zone slices are shared: do not modify them.
func (r *Ring) Lookup(key []byte) (Node, error) {
	p, err := r.handle()
	if err != nil {
		return Node{}, err
	}
	gen := r.gen.Load()
	t := r.table.Load()
	k, n := bytesArg(key)
	res := C.gochr_ring_lookup_index(unsafe.Pointer(p), k, n)
	runtime.KeepAlive(r) // its finalizer frees the C ring
	if res.status != C.CHR_OK {
		return Node{}, check(C.gochr_result{status: res.status, failure: res.failure})
	}
	if t != nil && t.gen == gen && r.gen.Load() == gen && int(res.index) < len(t.nodes) {
		return t.nodes[res.index], nil
	}
	return r.lookupSlow(p, key)
}

// current is the node table if it is the ring's current membership, else
// nil; gen is Ring.gen at the time, for the check after a C call.
func (r *Ring) current() (t *nodeTable, gen uint64) {
	gen = r.gen.Load()
	if t = r.table.Load(); t != nil && t.gen == gen {
		return t, gen
	}
	return nil, gen
}

// refresh rereads the node table if the ring changed since it was read
// and no change runs now (one goroutine at a time; the others go on).
func (r *Ring) refresh() {
	if !r.refreshMu.TryLock() {
		return
	}
	defer r.refreshMu.Unlock()
	gen := r.gen.Load()
	if t := r.table.Load(); gen&1 != 0 || (t != nil && t.gen == gen) {
		return
	}
	nodes, err := r.Nodes()
	if err != nil || r.gen.Load() != gen { // a change ran meanwhile: next time
		return
	}
	fresh := newNodeTable(len(nodes), func(i int) (Node, []byte, []byte) {
		return nodes[i], nodes[i].ID, nodes[i].Zone
	})
	fresh.gen = gen
	r.table.Store(fresh)
}

// lookupSlow refreshes the node table, then looks key up again, with a
// full copy of its owner if the table is still not current.
func (r *Ring) lookupSlow(p *C.chr_ring, key []byte) (Node, error) {
	defer runtime.KeepAlive(r)
	r.refresh()
	k, n := bytesArg(key)
	if t, gen := r.current(); t != nil {
		res := C.gochr_ring_lookup_index(unsafe.Pointer(p), k, n)
		if res.status != C.CHR_OK {
			return Node{}, check(C.gochr_result{status: res.status, failure: res.failure})
		}
		if r.gen.Load() == gen && int(res.index) < len(t.nodes) {
			return t.nodes[res.index], nil
		}
	}
	ref := refPool.Get().(*C.chr_node_ref)
	defer refPool.Put(ref)
	if err := check(C.gochr_ring_lookup(unsafe.Pointer(p), k, n, ref)); err != nil {
		return Node{}, err
	}
	return nodeFromRef(ref), nil
}

// beginChange and endChange bracket every change made through r (see
// Ring.table).
func (r *Ring) beginChange() {
	r.writeMu.Lock()
	r.gen.Add(1)
}

func (r *Ring) endChange() {
	r.gen.Add(1)
	r.writeMu.Unlock()
}

// endNoChange ends a bracket in which the C ring did not change (a
// follower's check that applied nothing): gen goes back to its value
// before beginChange, so the node table stays current. A lookup that saw
// that value before and after its C call still got an index into the
// same membership.
func (r *Ring) endNoChange() {
	r.gen.Add(^uint64(0))
	r.writeMu.Unlock()
}

// Replicas returns up to n distinct members for key, coordinator first,
// walking clockwise from its owner (members of weight 0 are never chosen).
// n is clamped to the number of members at the time of the call.
func (r *Ring) Replicas(key []byte, n int) ([]Node, error) {
	return r.replicas(key, n, func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_ref, count *C.size_t) C.gochr_result {
		return C.gochr_ring_replicas(p, k, kn, want, out, count)
	})
}

// ReplicasInto is Replicas returning nodes, resized to the number of
// replicas, with the ring's own nodes (their ID and Zone slices shared, as
// Lookup's). nodes is reused when it has room, and then a call while the
// ring is unchanged allocates nothing. On error the contents of nodes
// are unspecified.
func (r *Ring) ReplicasInto(key []byte, n int, nodes []Node) ([]Node, error) {
	p, err := r.handle()
	if err != nil {
		return nodes, err
	}
	defer runtime.KeepAlive(r)
	for try := 0; try < 2; try++ {
		t, gen := r.current()
		if t == nil {
			r.refresh()
			continue
		}
		b := scratchPool.Get().(*batchScratch)
		nodes, err = replicasFromTable(unsafe.Pointer(p), key, n, t.nodes, b, nodes,
			func(p, k unsafe.Pointer, kn, want C.size_t, out *C.uint32_t) C.gochr_count {
				return C.gochr_ring_replicas_index(p, k, kn, want, out)
			})
		scratchPool.Put(b)
		if err != nil || r.gen.Load() == gen {
			return nodes, err
		}
	}
	// The ring keeps changing: copies, as Replicas makes.
	fresh, err := r.Replicas(key, n)
	if err != nil {
		return nodes, err
	}
	return append(nodes[:0], fresh...), nil
}

// replicasFromTable runs a replica call that writes owner indices into
// b's scratch and returns their nodes from table in nodes (resized).
func replicasFromTable(p unsafe.Pointer, key []byte, n int, table []Node, b *batchScratch, nodes []Node,
	call func(p, k unsafe.Pointer, kn, want C.size_t, out *C.uint32_t) C.gochr_count) ([]Node, error) {
	room := clampReplicas(n, len(table))
	b.indices = resize(b.indices, room)
	k, kn := bytesArg(key)
	res := call(p, k, kn, C.size_t(clampCount(n, room)), (*C.uint32_t)(unsafe.Pointer(&b.indices[0])))
	if res.status != C.CHR_OK {
		return nodes, check(C.gochr_result{status: res.status, failure: res.failure})
	}
	nodes = resize(nodes, int(res.count))
	for i, index := range b.indices[:res.count] {
		if int(index) >= len(table) {
			return nodes, &Error{Status: ErrRange, Index: -1, Message: "chring: replica index outside the node table"}
		}
		nodes[i] = table[index]
	}
	return nodes, nil
}

// replicas runs one of the C replica calls for Replicas and ReplicasPolicy.
func (r *Ring) replicas(key []byte, n int, call func(p, k unsafe.Pointer, kn, want C.size_t, out *C.chr_node_ref, count *C.size_t) C.gochr_result) ([]Node, error) {
	p, err := r.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(r)
	var members C.size_t
	if err := check(C.gochr_ring_node_count(unsafe.Pointer(p), &members)); err != nil {
		return nil, err
	}
	room := clampReplicas(n, int(members))
	refs := make([]C.chr_node_ref, room)
	k, kn := bytesArg(key)
	var count C.size_t
	err = check(call(unsafe.Pointer(p), k, kn, C.size_t(clampCount(n, room)), refsArg(refs), &count))
	if err != nil {
		return nil, err
	}
	out := make([]Node, count)
	for i := range out {
		out[i] = nodeFromRef(&refs[i])
	}
	return out, nil
}

// clampReplicas is the room to allocate for n replicas among `members`
// members: at least 1, so that an invalid n reaches the library and gets
// its error message.
func clampReplicas(n, members int) int {
	if n > members {
		n = members
	}
	if n < 1 {
		n = 1
	}
	return n
}

// clampCount is n as the library should see it: 0 for n <= 0 (its
// CHR_EINVAL), else at most the room allocated.
func clampCount(n, room int) int {
	if n <= 0 {
		return 0
	}
	if n > room {
		return room
	}
	return n
}

func refsArg(refs []C.chr_node_ref) *C.chr_node_ref {
	if len(refs) == 0 {
		return nil
	}
	return &refs[0]
}

// NodeCount is the number of members, weight 0 included.
func (r *Ring) NodeCount() (int, error) {
	return r.count(func(p *C.chr_ring, c *C.size_t) C.gochr_result { return C.gochr_ring_node_count(unsafe.Pointer(p), c) })
}

// TokenCount is the number of tokens on the circle.
func (r *Ring) TokenCount() (int, error) {
	return r.count(func(p *C.chr_ring, c *C.size_t) C.gochr_result { return C.gochr_ring_token_count(unsafe.Pointer(p), c) })
}

func (r *Ring) count(call func(*C.chr_ring, *C.size_t) C.gochr_result) (int, error) {
	p, err := r.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(r)
	var c C.size_t
	err = check(call(p, &c))
	return int(c), err
}

// Nodes returns every member, ids in byte order.
func (r *Ring) Nodes() ([]Node, error) {
	p, err := r.handle()
	if err != nil {
		return nil, err
	}
	defer runtime.KeepAlive(r)
	var count C.size_t
	for {
		// Ask the size, then fetch; a writer may grow the ring in between,
		// in which case the library reports CHR_ERANGE and the new size.
		refs := make([]C.chr_node_ref, count)
		res := C.gochr_ring_nodes(unsafe.Pointer(p), refsArg(refs), C.size_t(len(refs)), &count)
		if res.status == C.CHR_ERANGE && int(count) > len(refs) {
			C.free(unsafe.Pointer(res.failure))
			continue
		}
		if err := check(res); err != nil {
			return nil, err
		}
		out := make([]Node, count)
		for i := range out {
			out[i] = nodeFromRef(&refs[i])
		}
		return out, nil
	}
}

// Ownership is the fraction of the circle (0..1) that member id owns.
func (r *Ring) Ownership(id []byte) (float64, error) {
	p, err := r.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(r)
	ptr, n := bytesArg(id)
	var f C.double
	err = check(C.gochr_ring_ownership(unsafe.Pointer(p), ptr, n, &f))
	return float64(f), err
}

// Fingerprint digests the options and the placement: two rings with equal
// fingerprints route every key and every replica list the same.
func (r *Ring) Fingerprint() (uint64, error) {
	p, err := r.handle()
	if err != nil {
		return 0, err
	}
	defer runtime.KeepAlive(r)
	var fp C.uint64_t
	err = check(C.gochr_ring_fingerprint(unsafe.Pointer(p), &fp))
	return uint64(fp), err
}

// nodeFromRef copies a chr_node_ref into Go memory: id and zone share one
// allocation.
func nodeFromRef(ref *C.chr_node_ref) Node {
	idLen, zoneLen := int(ref.id_len), int(ref.zone_len)
	buf := make([]byte, idLen+zoneLen)
	copy(buf, unsafe.Slice((*byte)(unsafe.Pointer(&ref.id[0])), idLen))
	copy(buf[idLen:], unsafe.Slice((*byte)(unsafe.Pointer(&ref.zone[0])), zoneLen))
	node := Node{
		ID:        buf[:idLen:idLen],
		Tag:       uint64(ref.tag),
		Weight:    uint32(ref.weight),
		Tokens:    uint32(ref.tokens),
		Index:     int(ref.index),
		Ownership: float64(ref.ownership),
		Down:      ref.flags&C.CHR_NODE_DOWN != 0,
	}
	if zoneLen > 0 {
		node.Zone = buf[idLen:]
	}
	return node
}
