// Internal to mpwb_report: the A4 PDF of a report, laid out here instead of by QTextDocument's
// own pagination (which leaves pages mostly empty after forced breaks, parts a figure from its
// caption and lets wide tables run past the margin). The report becomes a list of blocks
// (heading, paragraph, figure with its caption, table rows), each measured with QTextDocument at
// the text width; blocks never split (a table splits between rows, its header repeated), a
// heading stays with what follows it, and a page ends only when the next block does not fit.
#pragma once
#include "app/report/report.h"
#include "app/report/report_html.h"

#include <QImage>
#include <QString>
#include <vector>

namespace mpwb::report_detail {

// Lengths are in the PDF's device pixels (300 dpi): QTextDocument lays the pieces out on the
// PDF writer itself, so fonts and images are measured as they are printed.
struct PdfPiece {
    QString html;          // QTextDocument markup, images as "img:<index>"
    double height = 0;     // at the text width
    double width = 0;      // the widest line or table (idealWidth): at most text_width when it fits
    bool figure = false;   // an image with its caption
    bool heading = false;  // kept with the piece after it
};

struct PdfLayout {
    double text_width = 0;       // A4 less 2 cm margins: 170 mm
    double page_height = 0;      // 257 mm
    std::vector<QImage> images;  // "img:<index>"
    std::vector<std::vector<PdfPiece>> pages;
};

PdfLayout layout_pdf(const ReportContent& content);
// The layout of the report a request describes, without writing it (report.cpp; tests check it).
PdfLayout layout_report_pdf(const ReportRequest& request);
// Paints the layout onto A4 pages; throws ReportError when the file cannot be written.
void write_pdf(const QString& path, const ReportContent& content);

}  // namespace mpwb::report_detail
