package main

// The Go side of the ring-file cross-language test (ringfile.py): the
// same two modes as ringfile_c.c.

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"chring"
)

func ringfileMain(args []string) {
	switch {
	case len(args) == 4 && args[0] == "build":
		ringfileBuild(args[1], args[2], args[3])
	case len(args) >= 1 && args[0] == "load":
		for _, path := range args[1:] {
			r, _, err := chring.NewRingFromFile(path, nil)
			must(err)
			fp, err := r.Fingerprint()
			must(err)
			text, err := r.Export(chring.ExportOptions{})
			must(err)
			file, err := os.ReadFile(path)
			must(err)
			same := "differs"
			if bytes.Equal(text, file) {
				same = "same"
			}
			fmt.Printf("%016x %s\n", fp, same)
			r.Close()
		}
	default:
		fail(fmt.Errorf("usage: route-go ringfile build SPEC OUTDIR LANG | ringfile load FILE..."))
	}
}

func ringfileBuild(spec, dir, lang string) {
	in, err := os.Open(spec)
	must(err)
	defer in.Close()
	var ring *chring.Ring
	rings, tag := 0, uint64(0)
	finish := func() {
		if ring == nil {
			return
		}
		for _, json := range []bool{false, true} {
			out, err := ring.Export(chring.ExportOptions{JSON: json})
			must(err)
			ext := ".txt"
			if json {
				ext = ".json"
			}
			must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d%s", lang, rings, ext)), out, 0o644))
		}
		ring.Close()
		rings++
	}
	num := func(s string) uint64 {
		v, err := strconv.ParseUint(s, 10, 64)
		must(err)
		return v
	}
	scan := bufio.NewScanner(in)
	for scan.Scan() {
		f := strings.Fields(scan.Text())
		switch {
		case len(f) == 4 && f[0] == "ring":
			finish()
			ring, err = chring.New(&chring.Options{Placement: chring.Placement(num(f[1])),
				TokensPerWeight: uint32(num(f[2])), Seed: num(f[3])})
			must(err)
			tag = 0
		case len(f) == 4 && f[0] == "node":
			must(ring.Add(chring.Member{ID: unhex(f[1]), Weight: uint32(num(f[2])), Zone: unhex(f[3]), Tag: tag}))
			tag++
		}
	}
	must(scan.Err())
	finish()
}
