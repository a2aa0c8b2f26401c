// Package imports holds the test of the import rule of docs/architecture.md
// ("The import rule"): every import between the module's packages runs
// from a higher layer to a lower one, never between two controllers and
// never into a test-only package from production code; and kubectl-canopy
// links no hub package. The layers are the table in imports_test.go.
package imports
