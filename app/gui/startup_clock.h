// Startup timing: seconds since this process started (the kernel's start time, so dynamic
// loading, the BLAS re-exec and static initialisers count), for "the main window appears within
// 1 s of launch". Linux only; elsewhere it falls back to the time since the first call.
#pragma once

namespace mpwb {

// Seconds since the process started; 10 ms resolution (the kernel's clock ticks).
double seconds_since_process_start();

}  // namespace mpwb
