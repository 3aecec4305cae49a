// Package golden reads and rewrites the sections of the txtar golden files
// that loom's tests keep under testdata/.
package golden

import "golang.org/x/tools/txtar"

// Section returns the contents of the file called name in ar.
func Section(ar *txtar.Archive, name string) (string, bool) {
	for _, f := range ar.Files {
		if f.Name == name {
			return string(f.Data), true
		}
	}
	return "", false
}

// SetSection replaces the file called name in ar, or appends it.
func SetSection(ar *txtar.Archive, name, data string) {
	for i := range ar.Files {
		if ar.Files[i].Name == name {
			ar.Files[i].Data = []byte(data)
			return
		}
	}
	ar.Files = append(ar.Files, txtar.File{Name: name, Data: []byte(data)})
}
