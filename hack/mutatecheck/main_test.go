package main

import "testing"

func TestMutateLine(t *testing.T) {
	for _, tc := range []struct {
		text string
		col  int
		kind string
		want string
	}{
		{"if a < b {", 6, "CONDITIONALS_BOUNDARY", "if a <= b {"},
		{"if a <= b {", 6, "CONDITIONALS_NEGATION", "if a > b {"},
		{"if a == b {", 6, "CONDITIONALS_NEGATION", "if a != b {"},
		{"x := 2 * time.Second", 8, "ARITHMETIC_BASE", "x := 2 / time.Second"},
		{"i++", 2, "INCREMENT_DECREMENT", "i--"},
		{"if a > b {", 6, "CONDITIONALS_BOUNDARY", "if a >= b {"},
	} {
		got, err := mutateLine(tc.text, tc.col, tc.kind)
		if err != nil || got != tc.want {
			t.Errorf("mutateLine(%q, %d, %s) = %q, %v; want %q", tc.text, tc.col, tc.kind, got, err, tc.want)
		}
	}
	if _, err := mutateLine("x := y", 3, "CONDITIONALS_BOUNDARY"); err == nil {
		t.Error("no operator at the column: want an error")
	}
}
