// Package historyview holds what the hub's dashboard answers about
// compliance history (/api/history, /api/fleet) and what the history store
// keeps of a transition or a gap: plain types with their JSON form, shared
// by the store (pkg/history), the dashboard and kubectl canopy, which
// decodes the answers without linking the store or the hub.
package historyview
