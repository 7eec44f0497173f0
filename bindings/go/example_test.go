package chring_test

import (
	"errors"
	"fmt"

	"chring"
)

func Example() {
	ring, err := chring.New(&chring.Options{Seed: 7})
	if err != nil {
		panic(err)
	}
	defer ring.Close()
	for i, id := range []string{"cache-a", "cache-b", "cache-c"} {
		if err := ring.Add(chring.Member{ID: []byte(id), Weight: uint32(i + 1)}); err != nil {
			panic(err)
		}
	}
	owner, err := ring.Lookup([]byte("user:42"))
	if err != nil {
		panic(err)
	}
	replicas, _ := ring.Replicas([]byte("user:42"), 2)
	fmt.Println(string(owner.ID) == string(replicas[0].ID), len(replicas))

	err = ring.Remove([]byte("cache-z"))
	fmt.Println(errors.Is(err, chring.ErrNotFound))
	// Output:
	// true 2
	// true
}

func ExampleSnapshot() {
	ring, _ := chring.New(nil)
	defer ring.Close()
	_ = ring.Apply([]chring.Change{
		chring.AddChange(chring.Member{ID: []byte("a"), Weight: 1}),
		chring.AddChange(chring.Member{ID: []byte("b"), Weight: 1}),
	})
	snap, _ := ring.Snapshot() // one consistent view for a batch of lookups
	defer snap.Close()
	_ = ring.Remove([]byte("a")) // the snapshot does not see this
	count, _ := snap.NodeCount()
	fmt.Println(count)
	// Output: 2
}
