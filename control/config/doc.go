// Package config owns fips.yaml: where configuration files live, loading,
// defaults and validation, with upstream FIPS's keys and our additions.
//
// Load reads one file (fips -c FILE); LoadSearchPaths reads and deep-merges
// every file of SearchPaths that exists; LoadBytes parses a buffer. Each
// returns the configuration with upstream's defaults applied to every key
// the files leave out, plus warnings (ignored keys, the deprecated
// node.discovery block) for the caller to log. Failures are *Error values,
// joined when there are several, each with file, line, key path and one of
// the Err* classes.
//
// Config.Validate applies upstream's startup checks with upstream's
// messages, reporting all of them; Config.Lint reports what upstream
// accepts but is probably a mistake. KeyDir says where fips.key lives.
//
// docs/configuration.md is the operator's reference, including where
// fips-go deliberately differs from upstream.
package config
