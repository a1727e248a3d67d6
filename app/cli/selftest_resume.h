// The resume checks of `mpwb-cli selftest --backend cuda`: a device run that takes a checkpoint
// and one resumed from it in a fresh trainer and engine end with the same weights, bit for bit,
// as a run never interrupted; and a checkpoint of one engine resumes on the other.
#pragma once
#include <functional>
#include <string>

#include "core/backend/backend.h"

namespace mpwb::cli {

struct ResumeCheckLine {
    bool passed = false;
    std::string name;
    std::string detail;
};

// `device`: the CUDA backend. One line per check.
void run_resume_checks(Backend& device, const std::function<void(const ResumeCheckLine&)>& report);

}  // namespace mpwb::cli
