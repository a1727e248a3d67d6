// mpwb-report: `mpwb-report --runs 3,4 --out report.html` — the report command without the GUI
// executable, for headless machines and scripts.
#include "app/report/report.h"

int main(int argc, char** argv) {
    return mpwb::run_report_command(argc, argv);
}
