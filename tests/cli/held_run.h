// Waiting on a run held by the hidden --hold-after-step of `mpwb-cli train`: shared by the tests
// that interrupt or inspect a run at a known step. Bounded by polls, never by the clock's reading.
#pragma once
#include <QProcess>
#include <QString>

#include <cstdint>
#include <optional>

#include "sessions/run_store.h"

inline mpwb::RunStore read_only_store(const QString& db) {
    mpwb::RunStore::Options o;
    o.read_only = true;
    o.create = false;
    return mpwb::RunStore(db.toStdString(), o);
}

// The one run of the database once it holds after `step` steps: its "paused" event and an
// earlier checkpoint are committed (the trainer holds before it takes the step's own). Polls the
// file a bounded number of times; nullopt when that never happened (or the program ended first).
inline std::optional<std::int64_t> wait_until_held(const QString& db, QProcess& program, std::int64_t step) {
    for (int poll = 0; poll < 1200; ++poll) {
        // The pause between polls, which also notices a program that ended (and then returns
        // false at once, so the state is checked too).
        if (program.waitForFinished(100) || program.state() == QProcess::NotRunning) break;
        try {
            auto store = read_only_store(db);
            const auto runs = store.list_runs();
            if (runs.size() != 1) continue;
            const auto paused = store.events(runs[0].id, "paused");
            if (!paused.empty() && paused.back().step == step && store.latest_checkpoint(runs[0].id))
                return runs[0].id;
        } catch (const mpwb::StoreError&) {
            // Not created yet, or busy: poll again.
        }
    }
    return std::nullopt;
}
