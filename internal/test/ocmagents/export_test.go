package ocmagents

// Processes returns the pids of the live OCM processes started for the Env
// whose Dir is dir.
var Processes = processes
