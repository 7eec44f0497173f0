package chring

import (
	"fmt"
	"math/rand"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The benchmarks run each binding call next to the C call it wraps, made
// as directly as cgo allows (cRef), on the same ring and keys:
//
//	go test -run '^$' -bench . -benchmem                        # raw numbers
//	CHRING_BENCH_RATIOS=1 go test -run TestBenchmarkRatios -v -timeout 0 \
//	    -test.benchtime=200ms                                   # medians and ratios
//
// Rings: N members "node-<i>" of weight 1 (160 tokens each), default
// options, built with one Apply. Keys: 2^18 distinct keys of 20-30 bytes,
// shuffled once, then laid out end to end in walking order (Go slices into
// one buffer; the C reference's copies the same way). Batches: 1,024 keys; batch benchmarks
// report ns per key.

const (
	benchKeyCount = 1 << 18
	benchBatch    = 1024
)

var (
	benchKeysOnce sync.Once
	benchKeySet   [][]byte
)

func benchKeys() [][]byte {
	benchKeysOnce.Do(func() {
		rng := rand.New(rand.NewSource(42))
		benchKeySet = make([][]byte, benchKeyCount)
		for i := range benchKeySet {
			benchKeySet[i] = []byte(fmt.Sprintf("session:user_%d:%x", i, rng.Uint32()))
		}
		rng.Shuffle(len(benchKeySet), func(i, j int) { benchKeySet[i], benchKeySet[j] = benchKeySet[j], benchKeySet[i] })
		// In walking order in one buffer, as cRef's C copies are: both
		// sides read the same memory pattern.
		var arena []byte
		for _, k := range benchKeySet {
			arena = append(arena, k...)
		}
		for i, off := 0, 0; i < len(benchKeySet); i++ {
			n := len(benchKeySet[i])
			benchKeySet[i] = arena[off : off+n : off+n]
			off += n
		}
	})
	return benchKeySet
}

// benchMembers are n members "node-<i>" of weight 1.
func benchMembers(n int) []Change {
	changes := make([]Change, n)
	for i := range changes {
		changes[i] = AddChange(Member{ID: []byte("node-" + strconv.Itoa(i)), Weight: 1, Tag: uint64(i)})
	}
	return changes
}

// fixture is a ring of n members, its snapshot and the C reference.
type fixture struct {
	ring *Ring
	snap *Snapshot
	c    *cRef
	keys [][]byte
}

func newFixture(b testing.TB, n int) *fixture {
	r, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	mustOK(b, r.Apply(benchMembers(n)))
	snap, err := r.Snapshot()
	mustOK(b, err)
	keys := benchKeys()
	f := &fixture{ring: r, snap: snap, c: newCRef(keys), keys: keys}
	// Warm: the node tables are built on first use, outside every timing.
	_, err = snap.Lookup(keys[0])
	mustOK(b, err)
	_, err = r.Lookup(keys[0])
	mustOK(b, err)
	b.Cleanup(func() { snap.Close(); r.Close(); f.c.free() })
	return f
}

// counting is set by count_instructions.sh: each benchmark loop switches
// callgrind's counting on for its thread at the start and off at the end.
var counting = os.Getenv("CHRING_COUNT_INSTRUCTIONS") != ""

// counted runs loop with callgrind counting it when counting is set; the
// goroutine stays on its thread in between (no blocking, and
// count_instructions.sh turns asynchronous preemption off).
func counted(b *testing.B, loop func()) {
	if !counting {
		loop()
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if !countToggle() {
		b.Fatal("CHRING_COUNT_INSTRUCTIONS: built without valgrind/callgrind.h")
	}
	loop()
	countToggle()
}

// benchCase is one benchmark of a fixture; b.N counts keys.
type benchCase struct {
	name string
	ref  string // the case it is compared with ("" for the references)
	run  func(b *testing.B, f *fixture)
}

func single(lookup func(f *fixture, key []byte) error) func(*testing.B, *fixture) {
	return func(b *testing.B, f *fixture) {
		counted(b, func() {
			for i := 0; i < b.N; i++ {
				if err := lookup(f, f.keys[i&(benchKeyCount-1)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// batched calls lookup on consecutive batches of keys covering b.N keys.
func batched(lookup func(f *fixture, from, count int) error) func(*testing.B, *fixture) {
	return func(b *testing.B, f *fixture) {
		counted(b, func() { batchLoop(b, f, lookup) })
	}
}

func batchLoop(b *testing.B, f *fixture, lookup func(f *fixture, from, count int) error) {
	for done := 0; done < b.N; {
		from := done & (benchKeyCount - 1)
		count := benchBatch
		if count > b.N-done {
			count = b.N - done
		}
		if count > benchKeyCount-from {
			count = benchKeyCount - from
		}
		if err := lookup(f, from, count); err != nil {
			b.Fatal(err)
		}
		done += count
	}
}

var (
	sinkIndices []uint32
	sinkNodes   []Node
	sinkKeys    Keys
)

var lookupCases = []benchCase{
	{"C snapshot_lookup", "", single(func(f *fixture, k []byte) error { f.c.snapshotLookup(f.snap, k); return nil })},
	{"Snapshot.LookupIndex", "C snapshot_lookup", single(func(f *fixture, k []byte) error { _, err := f.snap.LookupIndex(k); return err })},
	{"Snapshot.Lookup", "C snapshot_lookup", single(func(f *fixture, k []byte) error { _, err := f.snap.Lookup(k); return err })},
	{"C ring_lookup", "", single(func(f *fixture, k []byte) error { f.c.ringLookup(f.ring, k); return nil })},
	{"Ring.Lookup", "C ring_lookup", single(func(f *fixture, k []byte) error { _, err := f.ring.Lookup(k); return err })},
	{"C snapshot_lookup_batch", "", batched(func(f *fixture, from, count int) error { f.c.batch(f.snap, from, count); return nil })},
	{"Snapshot.LookupKeys", "C snapshot_lookup_batch", batched(func(f *fixture, from, count int) (err error) {
		sinkKeys.Reset()
		for _, k := range f.keys[from : from+count] {
			sinkKeys.Add(k)
		}
		sinkIndices, err = f.snap.LookupKeys(&sinkKeys, sinkIndices)
		return err
	})},
	{"Snapshot.LookupBatch", "C snapshot_lookup_batch", batched(func(f *fixture, from, count int) (err error) {
		sinkIndices, err = f.snap.LookupBatch(f.keys[from:from+count], sinkIndices)
		return err
	})},
	{"Snapshot.LookupNodes", "C snapshot_lookup_batch", batched(func(f *fixture, from, count int) (err error) {
		sinkNodes, err = f.snap.LookupNodes(f.keys[from:from+count], sinkNodes)
		return err
	})},
}

var benchSizes = []int{10, 100, 1000}

func BenchmarkLookup(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			f := newFixture(b, n)
			for _, c := range lookupCases {
				c := c
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					c.run(b, f)
				})
			}
		})
	}
}

func BenchmarkEmptyCgoCall(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		emptyCall()
	}
}

func BenchmarkSnapshotLookupParallel(b *testing.B) {
	f := newFixture(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := f.snap.Lookup(f.keys[i&(benchKeyCount-1)]); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

func BenchmarkReplicas3(b *testing.B) {
	f := newFixture(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ring.Replicas(f.keys[i&(benchKeyCount-1)], 3); err != nil {
			b.Fatal(err)
		}
	}
}

// Building 1,000 members: one Add per member against one Apply of all,
// and one Add to a ring of 1,000 (timed; the Remove that undoes it is not).
const buildMembers = 1000

func benchBuildAdds(b *testing.B) {
	members := benchMembers(buildMembers)
	for i := 0; i < b.N; i++ {
		r, err := New(nil)
		mustOK(b, err)
		for _, m := range members {
			mustOK(b, r.Add(Member{ID: m.ID, Weight: m.Weight, Tag: m.Tag}))
		}
		r.Close()
	}
}

func benchBuildApply(b *testing.B) {
	members := benchMembers(buildMembers)
	for i := 0; i < b.N; i++ {
		r, err := New(nil)
		mustOK(b, err)
		mustOK(b, r.Apply(members))
		r.Close()
	}
}

func benchAddAt1000(b *testing.B) { addAt1000(b, false) }

// addAt1000 times b.N Adds to a ring of 1,000 members, each undone by a
// Remove outside the timer; with threadCPU, the Removes run on another
// goroutine's thread, so that the caller's thread CPU time is the Adds'.
func addAt1000(b *testing.B, threadCPU bool) {
	r, err := New(nil)
	mustOK(b, err)
	defer r.Close()
	mustOK(b, r.Apply(benchMembers(buildMembers)))
	extra := Member{ID: []byte("node-extra"), Weight: 1}
	undo := func() { mustOK(b, r.Remove(extra.ID)) }
	if threadCPU {
		undo = func() {
			done := make(chan error)
			go func() { done <- r.Remove(extra.ID) }()
			mustOK(b, <-done)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mustOK(b, r.Add(extra))
		b.StopTimer()
		undo()
		b.StartTimer()
	}
}

func BenchmarkBuild(b *testing.B) {
	b.Run("Add x1000", benchBuildAdds)
	b.Run("Apply 1000", benchBuildApply)
	b.Run("Add at 1000", benchAddAt1000)
}

// TestBenchmarkRatios runs every benchmark above in CHRING_BENCH_ROUNDS
// interleaved rounds (default 5) and prints a Markdown table of medians of
// thread CPU time with each binding call's ratio to its C call; skipped unless
// CHRING_BENCH_RATIOS is set. Never a pass/fail on times.
func TestBenchmarkRatios(t *testing.T) {
	if os.Getenv("CHRING_BENCH_RATIOS") == "" {
		t.Skip("set CHRING_BENCH_RATIOS=1 to run the benchmarks and print their ratios")
	}
	rounds := 5
	if s := os.Getenv("CHRING_BENCH_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("CHRING_BENCH_ROUNDS=%q", s)
		}
	}
	fixtures := map[int]*fixture{}
	for _, n := range benchSizes {
		fixtures[n] = newFixture(t, n)
	}
	type sample struct{ ns, allocs []float64 }
	samples := map[string]*sample{}
	// record runs fn as a benchmark and keeps its CPU time per op, of
	// the thread that ran it, for the largest b.N (wall time would charge
	// the benchmark for every other process on a busy host).
	record := func(key string, fn func(*testing.B)) {
		var n int
		var cpu time.Duration
		r := testing.Benchmark(func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			start := threadCPUTime()
			fn(b)
			n, cpu = b.N, threadCPUTime()-start
		})
		s := samples[key]
		if s == nil {
			s = &sample{}
			samples[key] = s
		}
		s.ns = append(s.ns, float64(cpu.Nanoseconds())/float64(n))
		s.allocs = append(s.allocs, float64(r.MemAllocs)/float64(r.N))
	}
	for round := 0; round < rounds; round++ {
		for ci := range lookupCases {
			c := lookupCases[(ci+round)%len(lookupCases)] // rotate the order each round
			for _, n := range benchSizes {
				f := fixtures[n]
				record(fmt.Sprintf("%s/%d", c.name, n), func(b *testing.B) { c.run(b, f) })
			}
		}
		record("empty", BenchmarkEmptyCgoCall)
		record("adds", benchBuildAdds)
		record("apply", benchBuildApply)
		record("add1000", func(b *testing.B) { addAt1000(b, true) })
	}
	med := func(key string) float64 { return median(samples[key].ns) }
	var out strings.Builder
	fmt.Fprintf(&out, "\nGo %s, %d rounds, medians of thread CPU time; ns per key\n\n", strings.TrimPrefix(runtime.Version(), "go"), rounds)
	out.WriteString("| call | 10 nodes | 100 | 1,000 | allocs/key | vs the C call |\n|---|---|---|---|---|---|\n")
	for _, c := range lookupCases {
		fmt.Fprintf(&out, "| `%s` |", c.name)
		for _, n := range benchSizes {
			fmt.Fprintf(&out, " %.1f |", med(fmt.Sprintf("%s/%d", c.name, n)))
		}
		fmt.Fprintf(&out, " %.3g |", median(samples[fmt.Sprintf("%s/%d", c.name, 100)].allocs))
		if c.ref == "" {
			out.WriteString(" (reference) |\n")
			continue
		}
		var cells []string
		for _, n := range benchSizes {
			a, r := med(fmt.Sprintf("%s/%d", c.name, n)), med(fmt.Sprintf("%s/%d", c.ref, n))
			cells = append(cells, fmt.Sprintf("%.2fx (%+.1f ns)", a/r, a-r))
		}
		fmt.Fprintf(&out, " %s |\n", strings.Join(cells, ", "))
	}
	fmt.Fprintf(&out, "| an empty cgo call | %.1f | | | | |\n", med("empty"))
	adds, apply, add1000 := med("adds"), med("apply"), med("add1000")
	fmt.Fprintf(&out, "\nBuilding %d members: %d single Add %.1f ms, one Apply %.2f ms (%.1fx); one Add at %d members %.0f µs\n",
		buildMembers, buildMembers, adds/1e6, apply/1e6, adds/apply, buildMembers, add1000/1e3)
	t.Log(out.String())
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
