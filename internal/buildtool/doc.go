// Package buildtool runs the programs that build loom's C output (the C
// compiler, the linker) and makes their failure one line: the first
// error they printed and the file that holds all of it. A compiler's
// output runs to dozens of lines, which buried the message a user needs.
package buildtool
