// Package history is the durable store of compliance transitions: every
// compliance event an agent reported on a replica (cluster, root policy,
// template, state, message, the agent's timestamp), written once by the hub
// that saw it, and the gaps where more happened than a replica's status
// history held between two reads.
//
// Two implementations share one interface, Store: embedded SQLite
// (modernc.org/sqlite, pure Go) in a file, the default, and PostgreSQL
// (github.com/jackc/pgx/v5), where the transitions table is partitioned by
// day and retention drops whole partitions. Both are created and migrated by
// Open, which refuses a database of another schema version. Writes are
// idempotent by content: a row's Key hashes everything it says, and a row
// already stored is skipped, so a hub restart or a leader change that reads
// the same replica history again writes nothing twice. LatestAll gives a
// starting hub the newest event stored of every replica in one query.
package history
