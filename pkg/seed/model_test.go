package seed

import "testing"

// Every row count plans to exactly that many rows, whatever the seed: the
// plan is cheap, so many sizes are checked without writing any catalog.
func TestPlanIsExact(t *testing.T) {
	sizes := []int{}
	for n := 0; n <= 300; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 1000, 4321, 25000)
	for _, n := range sizes {
		for s := int64(0); s < 3; s++ {
			m := newModel(n, s)
			m.plan()
			total := 0
			for _, c := range m.rows {
				if c < 0 {
					t.Fatalf("rows %d seed %d: negative count %v", n, s, m.rows)
				}
				total += c
			}
			if total != n || m.left != 0 {
				t.Fatalf("rows %d seed %d: planned %d (left %d)", n, s, total, m.left)
			}
		}
	}
}
