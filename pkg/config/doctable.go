package config

import (
	"strings"
)

// DocTable renders every registered key as a Markdown table (key, type,
// default, whether a resource may override it, description), sorted by
// name. It is generated from the registry so the documentation cannot drift
// from the code; deprecated names are listed with the key they belong to.
func DocTable() string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Per resource | Description |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, k := range Keys() {
		name := "`" + k.Name + "`"
		if len(k.Deprecated) > 0 {
			name += " (deprecated: `" + strings.Join(k.Deprecated, "`, `") + "`)"
		}
		typ := k.Type.String()
		if k.Type == TypeEnum {
			typ += " (" + strings.Join(k.Enum, ", ") + ")"
		}
		def := k.DefaultDoc
		if def == "" {
			def = "unset"
			if k.Default != "" {
				def = "`" + k.Default + "`"
			}
		}
		override := "no"
		switch {
		case k.Flink:
			override = "yes (Flink option)"
		case k.Overridable:
			override = "yes"
		}
		cells := []string{name, typ, def, override, k.Description}
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}
