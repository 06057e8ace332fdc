// Package layering holds the test that keeps the import rules of
// docs/architecture.md true: which packages may import which.
package layering
