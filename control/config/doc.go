// Package config owns fips.yaml: where configuration files live, loading,
// defaults and validation, with upstream FIPS's keys and our additions.
package config
