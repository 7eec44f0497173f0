// The Go side of the cross-language test (see ../gen_data.c for the input
// and ../route_c.c for the output format). The membership goes in as one
// Apply batch; owners come from a Snapshot, replica lists from the Ring.
//
// Usage: route-go DATA OUTPUT
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"chring"
)

func unhex(s string) []byte {
	if s == "-" {
		return nil
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		fail(err)
	}
	return b
}

func hexOf(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "route-go:", err)
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		fail(err)
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "ringfile" {
		ringfileMain(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "availability" {
		availabilityMain(os.Args[2:])
		return
	}
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: route-go DATA OUTPUT")
		os.Exit(2)
	}
	in, err := os.Open(os.Args[1])
	must(err)
	defer in.Close()
	scan := bufio.NewScanner(in)
	scan.Buffer(make([]byte, 4096), 1<<20)
	line := func() []string {
		if !scan.Scan() {
			fail(fmt.Errorf("truncated input: %v", scan.Err()))
		}
		return strings.Fields(scan.Text())
	}
	number := func(s string, base int) uint64 {
		v, err := strconv.ParseUint(s, base, 64)
		must(err)
		return v
	}

	line() // chring-crosslang 1
	opts := line()
	replicas := int(number(line()[1], 10))
	nodes := int(number(line()[1], 10))
	changes := make([]chring.Change, nodes)
	for i := range changes {
		f := line()
		changes[i] = chring.AddChange(chring.Member{
			ID: unhex(f[0]), Weight: uint32(number(f[1], 10)), Zone: unhex(f[2]), Tag: number(f[3], 10),
		})
	}
	ring, err := chring.New(&chring.Options{
		TokensPerWeight: uint32(number(opts[1], 10)),
		Seed:            number(opts[2], 16),
	})
	must(err)
	defer ring.Close()
	must(ring.Apply(changes))

	outFile, err := os.Create(os.Args[2])
	must(err)
	out := bufio.NewWriterSize(outFile, 1<<16)
	fp, err := ring.Fingerprint()
	must(err)
	nodeCount, err := ring.NodeCount()
	must(err)
	tokenCount, err := ring.TokenCount()
	must(err)
	fmt.Fprintf(out, "fingerprint %016x\ncounts %d %d\n", fp, nodeCount, tokenCount)

	snap, err := ring.Snapshot()
	must(err)
	defer snap.Close()
	keys := int(number(line()[1], 10))
	for k := 0; k < keys; k++ {
		key := unhex(line()[0])
		owner, err := snap.Lookup(key)
		must(err)
		reps, err := ring.Replicas(key, replicas)
		must(err)
		writeRoute(out, owner.ID, reps)
	}
	must(out.Flush())
	must(outFile.Close())
}

// writeRoute writes one key's line: its owner's id, then its replicas' ids.
func writeRoute(out *bufio.Writer, owner []byte, reps []chring.Node) {
	out.WriteString(hexOf(owner))
	for r, n := range reps {
		if r == 0 {
			out.WriteByte(' ')
		} else {
			out.WriteByte(',')
		}
		out.WriteString(hexOf(n.ID))
	}
	out.WriteByte('\n')
}
