// libFuzzer harness: the sbatch script of `mpwb-cli sweep slurm` (app/cli/sweep_cluster.cpp,
// slurm_array_script) for any folder name, program path, partition, gres, time and sweep uuid.
// Either the writer refuses with its Error exactly when a value cannot be written (a control
// character anywhere, a backslash in the folder, "hetjob" or "packjob" in an #SBATCH value, a
// uuid that is not one), or the script has the lines of the script for plain values, line for
// line: each #SBATCH line gives sbatch (read as Slurm's _get_argument reads it,
// tests/cluster/script_words.h) exactly the option with its value, the folder's '%' doubled; each
// shell line that holds a value is one word with nothing expanded whose text is NAME=value; every
// other line is the plain script's, byte for byte. An input is a flags byte (which optional
// settings are given), five lengths (program, partition, gres, time, uuid; a uuid of length 0
// is a fixed valid one), then the texts, the folder last.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/sweep_cluster.h"
#include "core/common/error.h"
#include "tests/cluster/script_words.h"

namespace {

using mpwb::cli::SlurmArraySettings;

[[noreturn]] void finding(const std::string& what, const std::string& script) {
    std::fprintf(stderr, "finding: %s\n--- script ---\n%s\n", what.c_str(), script.c_str());
    std::abort();
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

std::string lower(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

bool has_control(const std::string& text) {
    return std::any_of(text.begin(), text.end(), [](unsigned char c) { return c < 0x20 || c == 0x7F; });
}

bool splits_the_job(const std::string& text) {
    const std::string l = lower(text);
    return l.find("hetjob") != std::string::npos || l.find("packjob") != std::string::npos;
}

bool is_uuid(const std::string& text) {
    if (text.size() != 36) return false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        const char c = text[i];
        if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

// Whether the writer must refuse these settings, decided independently of it.
bool must_refuse(const SlurmArraySettings& s) {
    if (has_control(s.mpwb_cli) || has_control(s.out_dir)) return true;
    if (s.out_dir.find('\\') != std::string::npos || splits_the_job(s.out_dir)) return true;
    for (const std::string* v : {&s.partition, &s.gres, &s.time})
        if (has_control(*v) || splits_the_job(*v)) return true;
    return !is_uuid(s.sweep_uuid);
}

// The value an #SBATCH line of the plain script stands for, in the fuzzed settings.
std::string sbatch_value(const std::string& option, const SlurmArraySettings& s) {
    if (option == "--output") {
        std::string pattern;
        for (char c : s.out_dir) pattern += c == '%' ? std::string("%%") : std::string(1, c);
        return pattern + "/task_%a.log";
    }
    if (option == "--partition") return s.partition;
    if (option == "--gres") return s.gres;
    return s.time;
}

void check_line(const std::string& got, const std::string& want, const SlurmArraySettings& s,
                const std::string& script) {
    if (want.rfind("#SBATCH ", 0) == 0) {
        const auto want_args = mpwb::test::sbatch_arguments(want.substr(7));
        const auto got_args = mpwb::test::sbatch_arguments(got.substr(std::min<std::size_t>(7, got.size())));
        if (!want_args || want_args->size() != 1) finding("the plain #SBATCH line is not one argument", want);
        const std::string option = want_args->front().substr(0, want_args->front().find('='));
        std::vector<std::string> expected = *want_args;
        if (option == "--output" || option == "--partition" || option == "--gres" || option == "--time")
            expected = {option + "=" + sbatch_value(option, s)};
        if (got.rfind("#SBATCH ", 0) != 0 || !got_args || *got_args != expected)
            finding("sbatch reads another argument from: " + got, script);
        if (splits_the_job(got)) finding("an #SBATCH line that starts another job: " + got, script);
        return;
    }
    for (const std::string name : {"MPWB_CLI", "SWEEP_DIR"}) {
        if (want.rfind(name + "=", 0) != 0) continue;
        const mpwb::test::ShellLine line = mpwb::test::shell_words(got);
        const std::string value = name == "MPWB_CLI" ? s.mpwb_cli : s.out_dir;
        if (!line.complete || line.has_operator || line.words.size() != 1 || line.words[0].expands ||
            line.words[0].text != name + "=" + value)
            finding("bash does not read " + name + " as one word holding the value: " + got, script);
        return;
    }
    // The first comment names the folder; the shell skips it, and sbatch only reads #SBATCH lines.
    const bool comment = want.rfind("# Written by", 0) == 0 && got.rfind("# Written by", 0) == 0;
    if (!comment && got != want) finding("a line of the script differs from the plain one: " + got, script);
}

void check(const SlurmArraySettings& s) {
    std::string script;
    try {
        script = mpwb::cli::slurm_array_script(s);
    } catch (const mpwb::Error& e) {
        if (!must_refuse(s)) finding(std::string("refused settings it can write: ") + e.what(), {});
        return;
    }
    if (must_refuse(s)) finding("wrote a script for settings it must refuse", script);
    SlurmArraySettings plain = s;
    plain.mpwb_cli = "/plain/mpwb-cli";
    plain.out_dir = "/plain/folder";
    if (!plain.partition.empty()) plain.partition = "part";
    if (!plain.gres.empty()) plain.gres = "gpu:1";
    if (!plain.time.empty()) plain.time = "1:00:00";
    const std::vector<std::string> got = lines_of(script);
    const std::vector<std::string> want = lines_of(mpwb::cli::slurm_array_script(plain));
    if (got.size() != want.size())
        finding("the script has another number of lines than the plain one", script);
    for (std::size_t i = 0; i < got.size(); ++i) check_line(got[i], want[i], s, script);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    constexpr std::size_t kHeader = 6;
    if (size < kHeader) return 0;
    std::string_view rest(reinterpret_cast<const char*>(data) + kHeader, size - kHeader);
    const auto take = [&](std::size_t length) {
        const std::string text(rest.substr(0, std::min(length, rest.size())));
        rest.remove_prefix(text.size());
        return text;
    };
    const std::uint8_t flags = data[0];
    SlurmArraySettings s;
    s.mpwb_cli = take(data[1]);
    s.partition = take(data[2]);
    s.gres = take(data[3]);
    s.time = take(data[4]);
    s.sweep_uuid = data[5] == 0 ? "0b7e9a4c-2f5d-4c1e-9a3b-5d6e7f8a9b0c" : take(data[5]);
    s.out_dir = std::string(rest);
    s.run_count = 1 + flags % 7;
    if (flags & 0x08) s.cpus_per_task = 4;
    if (flags & 0x10) s.checkpoint_every = 50;
    if (flags & 0x20) {
        s.hold_index = 0;
        s.hold_step = 3;
    }
    try {
        check(s);
    } catch (const std::exception& e) {
        finding(std::string("an exception that is not the writer's Error: ") + e.what(), {});
    }
    return 0;
}
