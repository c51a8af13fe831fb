package operator

import "testing"

func TestEnabledControllers(t *testing.T) {
	all, err := enabledControllers(nil)
	if err != nil || !all["flinkstatesnapshot"] || !all["flinkdeployment"] {
		t.Fatalf("default: %v %v", all, err)
	}
	if star, _ := enabledControllers([]string{"*"}); len(star) != len(ControllerNames) {
		t.Fatalf("*: %v", star)
	}
	only, err := enabledControllers([]string{"flinkstatesnapshot"})
	if err != nil || !only["flinkstatesnapshot"] || only["flinkdeployment"] {
		t.Fatalf("one: %v %v", only, err)
	}
	if _, err := enabledControllers([]string{"nope"}); err == nil {
		t.Fatal("unknown controller accepted")
	}
}
