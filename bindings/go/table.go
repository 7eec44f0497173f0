package chring

// nodeTable is a copy of a node table in Go memory: the Nodes that
// lookups return, their ID and Zone slices pointing into one arena.
type nodeTable struct {
	nodes []Node
	arena []byte
	gen   uint64 // Ring.gen when the table was read (Ring only)
}

// newNodeTable builds a table of count nodes; node(i) returns node i's
// fields (ID and Zone unset) and its id and zone bytes, which are copied.
func newNodeTable(count int, node func(i int) (Node, []byte, []byte)) *nodeTable {
	size := 0
	for i := 0; i < count; i++ {
		_, id, zone := node(i)
		size += len(id) + len(zone)
	}
	t := &nodeTable{
		nodes: make([]Node, count),
		arena: make([]byte, 0, size), // every id and zone in one allocation
	}
	for i := range t.nodes {
		n, id, zone := node(i)
		n.ID = t.add(id)
		if len(zone) > 0 {
			n.Zone = t.add(zone)
		}
		t.nodes[i] = n
	}
	return t
}

// add appends b to the arena (sized for every id and zone: it never
// grows) and returns its copy there.
func (t *nodeTable) add(b []byte) []byte {
	start := len(t.arena)
	t.arena = append(t.arena, b...)
	return t.arena[start:len(t.arena):len(t.arena)]
}
