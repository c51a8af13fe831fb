package pernamespace

import (
	"slices"
	"testing"
)

func TestAllNamespaces(t *testing.T) {
	var w View[string]
	w.Set("", "all")
	for _, ns := range []string{"", "a", "b"} {
		if got, ok := w.For(ns); !ok || got != "all" {
			t.Errorf("For(%q) = %q, %v; want all, true", ns, got, ok)
		}
	}
	if got := slices.Collect(w.Each()); !slices.Equal(got, []string{"all"}) {
		t.Errorf("Each = %v, want [all]", got)
	}
}

func TestListedNamespaces(t *testing.T) {
	var w View[*int]
	one, two := 1, 2
	w.Set("a", &one)
	w.Set("b", &two)
	if got, ok := w.For("a"); !ok || got != &one {
		t.Errorf("For(a) = %v, %v; want &1, true", got, ok)
	}
	if got, ok := w.For("c"); ok || got != nil {
		t.Errorf("For(c) = %v, %v; want nil, false", got, ok)
	}
	got := slices.Collect(w.Each())
	slices.SortFunc(got, func(x, y *int) int { return *x - *y })
	if len(got) != 2 || got[0] != &one || got[1] != &two {
		t.Errorf("Each = %v, want &1 and &2", got)
	}
	for range w.Each() {
		break // an early stop is honoured
	}
}

func TestZeroViewWatchesNothing(t *testing.T) {
	var w View[int]
	if _, ok := w.For(""); ok {
		t.Error("zero View watches the namespace \"\"")
	}
	if got := slices.Collect(w.Each()); len(got) != 0 {
		t.Errorf("Each = %v, want nothing", got)
	}
}
