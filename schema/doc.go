// Package schema holds the published JSON Schemas (draft 2020-12) of
// ccrun's files, for editors and other validators:
//
//   - ccrun.schema.json: a settings file (ccrun.json, ccrun.local.json,
//     the user config, the managed policy), as permission.ParseSettings
//     and the project allowlist read it;
//   - capability.schema.json: a capability's capability.json, the very
//     schema package capabilities embeds and validates manifests with
//     (capabilities.Schema; a test keeps the two files identical).
//
// A file names its schema with a "$schema" member, which ccrun ignores.
package schema
