// Rows of the checkpoints table (store schema 7): writing one checkpoint and keeping only a run's
// newest ones, and reading one back. Shared by RunStore::save_checkpoint (its own transaction) and
// the RunWriter (inside the transaction that also commits the metrics up to the checkpoint's step,
// so a stored checkpoint never runs ahead of the rows it continues).
#pragma once
#include <cstdint>
#include <string>

#include "core/train/checkpoint.h"
#include "sessions/sqlite_db.h"

namespace mpwb {

// Inserts the checkpoint and deletes all but the run's newest `keep` (by step; at least 1). The
// caller holds a write transaction.
void insert_checkpoint_row(sqlite::Db& db, std::int64_t run_id, const TrainingCheckpoint& checkpoint,
                           int keep);

// The checkpoint of a row selected as "step, epoch, batch, wall_seconds, state". A position that
// cannot be (a negative step, epoch or batch, a non-finite time) is a StoreError(Corrupt) naming
// `what` (the file, the table and the row); the state itself is checked by the Trainer on load.
TrainingCheckpoint read_checkpoint_row(const sqlite::Stmt& row, const std::string& what);

}  // namespace mpwb
