package gateway

import "container/heap"

// reclaimable reports whether m may be reclaimed early for room: it has no
// conntrack sessions and is not Active.
func reclaimable(m *Mapping) bool { return m.Sessions == 0 && m.State != Active }

// lruBefore is the reclaim order: least recently referenced first, ties
// by virtual address.
func lruBefore(a, b *Mapping) bool {
	return a.LastReferenced.Before(b.LastReferenced) ||
		(a.LastReferenced.Equal(b.LastReferenced) && a.VirtualIP.Less(b.VirtualIP))
}

// lruHeap is a min-heap of reclaimable mappings in reclaim order: the
// pool keeps one of all of them and one per client of that client's, so
// choosing the mapping to reclaim costs O(log n), not a scan. Each mapping
// records its index in each heap (-1: not in it).
type lruHeap struct {
	ms     []*Mapping
	client bool // the index field used: Mapping.clientIdx, else poolIdx
}

func (h *lruHeap) idx(m *Mapping) *int {
	if h.client {
		return &m.clientIdx
	}
	return &m.poolIdx
}

func (h *lruHeap) Len() int           { return len(h.ms) }
func (h *lruHeap) Less(i, j int) bool { return lruBefore(h.ms[i], h.ms[j]) }
func (h *lruHeap) Swap(i, j int) {
	h.ms[i], h.ms[j] = h.ms[j], h.ms[i]
	*h.idx(h.ms[i]), *h.idx(h.ms[j]) = i, j
}
func (h *lruHeap) Push(x any) {
	m := x.(*Mapping)
	*h.idx(m) = len(h.ms)
	h.ms = append(h.ms, m)
}
func (h *lruHeap) Pop() any {
	m := h.ms[len(h.ms)-1]
	h.ms[len(h.ms)-1] = nil
	h.ms = h.ms[:len(h.ms)-1]
	*h.idx(m) = -1
	return m
}

// sync puts m where its reclaimability and last reference say: in h in
// order when want, out of it otherwise.
func (h *lruHeap) sync(m *Mapping, want bool) {
	switch i := *h.idx(m); {
	case want && i < 0:
		heap.Push(h, m)
	case want:
		heap.Fix(h, i)
	case i >= 0:
		heap.Remove(h, i)
	}
}

// oldest is the first mapping to reclaim, nil when none.
func (h *lruHeap) oldest() *Mapping {
	if len(h.ms) == 0 {
		return nil
	}
	return h.ms[0]
}

// reindex updates the reclaim heaps after m's sessions, state, last
// reference or client changed, or before it is freed (gone).
func (p *Pool) reindex(m *Mapping, gone bool) {
	want := !gone && reclaimable(m)
	p.lru.sync(m, want)
	if !m.Client.IsValid() {
		return
	}
	h := p.clientLRU[m.Client]
	if h == nil {
		if !want {
			return
		}
		h = &lruHeap{client: true}
		p.clientLRU[m.Client] = h
	}
	h.sync(m, want)
	if h.Len() == 0 {
		delete(p.clientLRU, m.Client)
	}
}
