// Package chring is the Go binding of chring, a consistent-hashing ring
// with a stable C ABI (include/c/chring.h). It is a thin layer over
// libchring, found through pkg-config (`#cgo pkg-config: chring`).
//
// A Ring maps keys (byte strings) to nodes so that a change of membership
// moves only the keys it must. Lookups never lock and never wait for
// writers; updates are serialized inside the library and published
// atomically, so one Ring is shared by any number of goroutines:
//
//	ring, err := chring.New(nil) // xxh3, 160 tokens per weight
//	if err != nil { ... }
//	defer ring.Close()
//	_ = ring.Add(chring.Member{ID: []byte("cache-a"), Weight: 1})
//	_ = ring.Add(chring.Member{ID: []byte("cache-b"), Weight: 2})
//	owner, err := ring.Lookup([]byte("user:42"))
//	fmt.Printf("%s\n", owner.ID)
//
// Build a ring with one Apply of all its members (each Add publishes a
// snapshot of its own). Lookups allocate nothing and return nodes that
// share a node table. For many lookups against one consistent view, take a
// Snapshot; its batch lookups (LookupKeys, LookupBatch, LookupNodes) route
// many keys in one cgo call, into buffers the caller reuses.
//
// Errors are *Error values that unwrap to a Status, usable with errors.Is
// (ErrNotFound, ErrEmpty, ...); Error.Message is the library's text naming
// the C function and the bad value.
package chring
