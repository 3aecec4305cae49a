package ast

// bailout carries an error from deep inside a recursive walk (the parser,
// the verifier, the interpreter) up to the walk's entry point, where catch
// turns it back into a returned error. This keeps the recursive code free of
// error plumbing. Any other panic is a bug in loom and goes on unchanged.
type bailout struct{ err error }

// catch runs run and returns the error of a bailout it panics with.
func catch(run func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bailout)
			if !ok {
				panic(r)
			}
			err = b.err
		}
	}()
	run()
	return nil
}
