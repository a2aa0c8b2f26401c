// Package history records compliance history on the hub: every compliance
// event an agent reports on a replica's status.details[].history is written
// once to a pkg/history store (embedded SQLite or PostgreSQL).
//
// Recorder reconciles replicas (Policies carrying the root-policy label) on
// the hub and writes nothing to the API server. It reads each changed
// replica through the API reader, since the hub's cache trims replica
// histories, and hands the transitions it has not stored yet to one writer
// that stores them in batches. Writes are idempotent by content, so a hub
// restart or a leader change that reads a history again stores nothing
// twice.
//
// The database is never on the policy path: while it is down the other hub
// controllers go on as before, the recorder's requests fail and back off
// (at most controllerdefaults.MaxHubRetryDelay apart), and when it answers
// again they store what the replicas' histories still hold. A replica keeps
// HistoryLimit events per template; when a full history begins after the
// newest event stored, events may have been lost in between and the
// recorder stores a Gap from the one to the other, which every view shows
// as "history incomplete".
//
// Retention deletes what is older than Retention at start and every hour
// (on PostgreSQL: whole daily partitions).
//
// Metrics: canopy_history_rows_written_total,
// canopy_history_gaps_total, canopy_history_errors_total{op} and
// canopy_history_lag_seconds (how long the oldest replica change not yet
// stored has waited; 0 when caught up).
package history
