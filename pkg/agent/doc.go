// Package agent assembles Canopy's agent on a managed cluster: the managed
// cluster's manager with its controllers, and the hub connection with its
// own.
//
// The controllers live one package each below it: specsync (hub replica →
// local Policy), templatesync (Policy → templates, in dependency order),
// configpolicy (ConfigurationPolicy evaluation), syncer (HierarchyPolicy),
// statussync (compliance events → Policy status, locally and on the hub),
// secretsync (the encryption key) and lease; hubconn runs the hub side.
//
// cmd/agent, test/inproc and the e2e suite all build their agent with
// ManagerOptions and Setup, so every test runs the agent that ships. The
// package sits above the controllers; no controller imports it, so a
// controller's test that needs the whole agent is an external test package.
package agent
