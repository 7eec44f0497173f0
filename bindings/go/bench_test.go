package chring

import (
	"fmt"
	"testing"
)

// benchKeys are 1024 distinct keys, reused round-robin.
func benchKeys() [][]byte {
	keys := make([][]byte, 1024)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%08d", i))
	}
	return keys
}

// 100 members x 160 tokens per weight x weight 1..3.
func BenchmarkRingLookup(b *testing.B) {
	r := newRing(b, nil, 100)
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Lookup(keys[i&1023]); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSnapshot is a snapshot of a 100-member ring, closed after b.
func benchSnapshot(b *testing.B) *Snapshot {
	snap, err := newRing(b, nil, 100).Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { snap.Close() })
	return snap
}

func BenchmarkSnapshotLookup(b *testing.B) {
	snap := benchSnapshot(b)
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := snap.Lookup(keys[i&1023]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshotLookupParallel(b *testing.B) {
	snap := benchSnapshot(b)
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := snap.Lookup(keys[i&1023]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkReplicas3(b *testing.B) {
	r := newRing(b, nil, 100)
	keys := benchKeys()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := r.Replicas(keys[i&1023], 3); err != nil {
			b.Fatal(err)
		}
	}
}
