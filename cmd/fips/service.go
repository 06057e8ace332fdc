package main

// serviceFlags are upstream's Windows service flags. They parse on every
// platform so that a script written for Windows gets a clear error
// elsewhere instead of "flag provided but not defined".
type serviceFlags struct {
	install, uninstall, run bool
}

func (f serviceFlags) any() bool { return f.install || f.uninstall || f.run }
