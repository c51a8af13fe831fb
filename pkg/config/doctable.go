package config

import (
	"strings"
)

// DocTable renders every registered key as a Markdown table (key, type,
// default, whether a resource may override it, its status against upstream's
// configuration reference, description), sorted by name. It is generated
// from the registry so the documentation cannot drift from the code;
// deprecated names are listed with the key they belong to.
func DocTable() string {
	var b strings.Builder
	b.WriteString("| Key | Type | Default | Per resource | Status | Description |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- |\n")
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
		writeRow(&b, name, typ, def, override, registeredStatus(k), k.Description)
	}
	return b.String()
}

// registeredStatus is a registered key's Status cell: upstream's status
// when the key is upstream's (the reasons are in ParityTable), "ours" for
// the operator's own keys, "Flink" for Flink's options.
func registeredStatus(k Key) string {
	if u, ok := upstreamByKey[k.Name]; ok {
		if u.Status == StatusImplemented {
			return "upstream"
		}
		return u.statusText()
	}
	if _, ok := upstreamOutsideReference[k.Name]; ok {
		return "upstream"
	}
	if k.Flink {
		return "Flink"
	}
	return "ours"
}
