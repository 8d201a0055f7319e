package rootfs

import (
	"math/rand/v2"
	"testing"
)

// modelTable is wazero's descriptor table as its FSContext keeps it: the
// lowest free number for a new descriptor, fd_renumber refusing to move or
// replace a preopen (ENOTSUP), fd_close closing anything.
type modelTable struct {
	ents map[uint32]modelEnt
	ids  int
}

type modelEnt struct {
	id      int
	preopen bool
}

func (m *modelTable) insert(preopen bool) (uint32, int) {
	h := uint32(0)
	for ; ; h++ {
		if _, ok := m.ents[h]; !ok {
			break
		}
	}
	m.ids++
	m.ents[h] = modelEnt{m.ids, preopen}
	return h, m.ids
}

func (m *modelTable) isOpen(h uint32) bool { _, ok := m.ents[h]; return ok }

func (m *modelTable) renumber(from, to uint32) uint64 {
	e, ok := m.ents[from]
	if !ok {
		return errnoBadf
	}
	if e.preopen {
		return errnoNotsup
	}
	if t, ok := m.ents[to]; ok {
		if t.preopen {
			return errnoNotsup
		}
	}
	delete(m.ents, from)
	m.ents[to] = e
	return errnoSuccess
}

func (m *modelTable) close(h uint32) uint64 {
	if _, ok := m.ents[h]; !ok {
		return errnoBadf
	}
	delete(m.ents, h)
	return errnoSuccess
}

// TestNumbering drives a run's numbering (files) over a model of wazero's
// table, by random opens, closes and renumberings of standard input,
// output and error, two preopens and the files opened, and checks after
// every step that each number names what it would in a POSIX process
// (renumber as dup2 then close, open at the lowest number free), whatever
// wazero refused to move.
func TestNumbering(t *testing.T) {
	t.Parallel()
	const maxFD = 12
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 1))
		m := &modelTable{ents: map[uint32]modelEnt{}}
		posix := map[uint32]int{} // the guest's number -> what it names
		for range 5 {
			h, id := m.insert(true)
			posix[h] = id
		}
		f := &NewRun().files
		for step := range 200 {
			var what string
			switch op := r.IntN(10); {
			case op < 3:
				what = "open"
				h, id := m.insert(false)
				g := f.opened(m, h)
				want := uint32(0)
				for ; ; want++ {
					if _, ok := posix[want]; !ok {
						break
					}
				}
				posix[want] = id
				if g != want {
					t.Fatalf("seed %d step %d: opened at %d, want %d", seed, step, g, want)
				}
			case op < 5:
				g := uint32(r.IntN(maxFD))
				what = "close"
				want := uint64(errnoBadf)
				if _, ok := posix[g]; ok {
					want = errnoSuccess
					delete(posix, g)
				}
				if e := f.close(m, g); e != want {
					t.Fatalf("seed %d step %d: close(%d) = %d, want %d", seed, step, g, e, want)
				}
			default:
				from, to := uint32(r.IntN(maxFD)), uint32(r.IntN(maxFD))
				what = "renumber"
				want := uint64(errnoBadf)
				_, okFrom := posix[from]
				_, okTo := posix[to]
				if okFrom && okTo {
					want = errnoSuccess
					if from != to {
						posix[to] = posix[from]
						delete(posix, from)
					}
				}
				if e := f.renumber(m, from, to); e != want {
					t.Fatalf("seed %d step %d: renumber(%d, %d) = %d, want %d", seed, step, from, to, e, want)
				}
			}
			for g := range uint32(maxFD + 8) {
				id := 0
				if e, ok := m.ents[f.host(g)]; ok {
					id = e.id
				}
				if id != posix[g] {
					t.Fatalf("seed %d step %d (%s): %d names %d, want %d (alias %v, moved %v)", seed, step, what, g, id, posix[g], f.alias, f.moved)
				}
			}
			if len(f.alias) != len(f.moved) || f.renumbered.Load() != (len(f.alias) > 0) {
				t.Fatalf("seed %d step %d: alias %v, moved %v, renumbered %v", seed, step, f.alias, f.moved, f.renumbered.Load())
			}
		}
	}
}
