// Package history records compliance history on the hub: every compliance
// event an agent reports on a replica's status.details[].history is written
// once to a pkg/history store (embedded SQLite or PostgreSQL).
//
// Recorder reconciles replicas (Policies carrying the root-policy label) on
// the hub. It reads each changed replica through the API reader, since the
// hub's cache trims replica histories, plans what it has not stored yet
// against the newest event stored per template (read for all replicas in
// one query when it starts), and hands that to one writer that stores the
// requests of all reconciles in batches. Writes are idempotent by content,
// so a hub restart or a leader change that reads a history again stores
// nothing twice.
//
// The database is never on the policy path. While it fails, the other hub
// controllers go on as before; the recorder keeps what it read of each
// changed replica in memory (at most HistoryLimit events per template), so
// that a replica deleted meanwhile is still recorded, and instead of
// retrying replica by replica it probes the database every
// controllerdefaults.MaxHubRetryDelay and queues the waiting replicas again
// once it answers. A replica keeps HistoryLimit events per template; when
// a full history begins after the newest event known, events may have been
// lost in between and the recorder stores a Gap from the one to the other,
// which every view shows as "history incomplete". So does a replica that
// changed after its last read and was deleted before the next: a Gap from
// the newest event known to the deletion.
//
// Health: the recorder sets ConditionHistoryRecording on the hub's
// Deployment (Recorder.Deployment): True while the last open, read, write
// and retention of the database succeeded, False with a reason
// (InvalidDatabaseURL, SchemaVersionMismatch, DatabaseError) and the
// database's error otherwise, with a Warning Event when it turns False and
// a Normal one when it turns True again. A malformed URL or a database of
// another schema version does not stop the hub.
//
// Retention deletes what is older than Retention at start and every hour
// (on PostgreSQL: whole daily partitions), sooner again after a failure.
//
// Metrics: canopy_history_rows_written_total,
// canopy_history_gaps_total, canopy_history_errors_total{op} and
// canopy_history_lag_seconds (how long the oldest replica change not yet
// stored has waited; 0 when caught up).
//
// The package's tests take about two minutes on 2 cores: they run the
// recorder against embedded SQLite and a real PostgreSQL, and
// TestOutageCatchUp keeps the database down for 30 seconds while six
// changes arrive, as an outage long enough to outlast the recorder's
// retries.
package history
