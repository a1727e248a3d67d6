// mpwb-report: the `report` subcommand of the workbench as a small executable of its own, so
// reports can be written headless without building the GUI (docs/examples/make_examples.sh uses
// it). Same options as `mpwb report`.
#include "app/report/report.h"

int main(int argc, char** argv) { return mpwb::run_report_command(argc, argv); }
