package main

// The Go side of the availability cross-language test (availability.py):
// the same output as availability_c.c, the ring following the file with a
// Follower; owners from the Ring (checked against a Snapshot's batch),
// replica lists from the Snapshot.

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"chring"
)

func availabilityMain(args []string) {
	if len(args) != 3 {
		fail(fmt.Errorf("usage: route-go availability RINGFILE KEYS OUTPUT"))
	}
	ring, err := chring.New(nil)
	must(err)
	defer ring.Close()
	f, err := chring.NewFollower(ring, args[0])
	must(err)
	defer f.Close()
	if o, _, err := f.Check(); err != nil || o != chring.FollowApplied {
		fail(fmt.Errorf("%s: the first check: %v %v", args[0], o, err))
	}
	avail, err := ring.Availability()
	must(err)
	fp, err := ring.Fingerprint()
	must(err)
	members, err := ring.NodeCount()
	must(err)

	text, err := os.ReadFile(args[1])
	must(err)
	var keys [][]byte
	for _, line := range strings.Fields(string(text)) {
		keys = append(keys, unhex(line))
	}
	snap, err := ring.Snapshot()
	must(err)
	defer snap.Close()
	batch, err := snap.LookupBatch(keys, nil)
	must(err)

	outFile, err := os.Create(args[2])
	must(err)
	out := bufio.NewWriter(outFile)
	panicked := 0
	if avail.Panic {
		panicked = 1
	}
	fmt.Fprintf(out, "fingerprint %016x availability %016x panic %d down %d applied %016x\n",
		fp, avail.Digest, panicked, avail.Down, f.State().AppliedAvailability)
	for k, key := range keys {
		owner, err := ring.Lookup(key)
		must(err)
		if owner.Index != int(batch[k]) {
			fail(fmt.Errorf("key %d: the batch says node %d, the lookup %d", k, batch[k], owner.Index))
		}
		reps, err := snap.Replicas(key, members)
		must(err)
		writeRoute(out, owner.ID, reps)
	}
	must(out.Flush())
	must(outFile.Close())
}
