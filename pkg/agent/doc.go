// Package agent holds the controllers of Canopy's agent on a managed cluster,
// one package each: specsync (hub replica → local Policy), templatesync
// (Policy → templates, in dependency order), configpolicy (ConfigurationPolicy
// evaluation), syncer (HierarchyPolicy) and statussync (compliance events →
// Policy status, locally and on the hub).
package agent
