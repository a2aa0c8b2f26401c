// Package badinput holds Canopy's bad-input corpus and the test that applies
// it to a real hub and managed cluster with the controllers running.
//
// Each case is a YAML file under testdata/ whose header says what the user
// should see, and where:
//
//	# expect: replica <policy>: <regexp>
//
// The places are rejected (the API server refuses the objects; the regexp
// matches its error), root <policy>, replica <policy>, policyset <name>
// (objects on the hub, in the case's namespace or the cluster namespace),
// configurationpolicy <name> and hierarchypolicy <name> (on the managed
// cluster, in the cluster namespace). The regexp is matched against every
// string of the object's status, one per line. Objects annotated
// badinput.canopy.io/after: settled are late input, applied once every case
// has settled; the case's expectations must keep holding after it. See
// testdata/README.md.
package badinput
