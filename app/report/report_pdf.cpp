// The report's PDF (report_pdf.h): blocks built from ReportContent, measured on the PDF writer,
// packed into A4 pages and painted.
#include "app/report/report_pdf.h"

#include "app/report/report.h"
#include "app/report/report_sections.h"

#include <QAbstractTextDocumentLayout>
#include <QBuffer>
#include <QFile>
#include <QFileInfo>
#include <QPainter>
#include <QPdfWriter>
#include <QTextDocument>
#include <optional>

namespace mpwb::report_detail {
namespace {

constexpr int kResolution = 300;
constexpr int kFigureWidth = 620;  // CSS pixels (96 per inch); the text is 642 wide
constexpr int kGridColumns = 3;
constexpr int kImageDpi = 150;  // plots on paper: sharp enough, and the PDF stays small
const QString kNoteStyle = QStringLiteral("color:#555555; font-size:7.5pt");

void set_up_writer(QPdfWriter& pdf, const QString& title) {
    pdf.setPageSize(QPageSize(QPageSize::A4));
    pdf.setPageMargins(QMarginsF(20, 20, 20, 20), QPageLayout::Millimeter);
    pdf.setResolution(kResolution);
    pdf.setTitle(title);
    pdf.setCreator(QStringLiteral("MP Workbench"));
}

QString table_attrs(double font_pt) {
    return QStringLiteral(
               "border=\"1\" cellspacing=\"0\" cellpadding=\"2\" width=\"100%\" "
               "style=\"border-color:#bbbbbb; "
               "font-size:%1pt\"")
        .arg(font_pt);
}
const QString kHeadAttrs = QStringLiteral("bgcolor=\"#e8edf3\" align=\"left\"");

// A unit of the report before pagination: markup that never splits, or a table that splits
// between rows.
struct Block {
    QString html;
    std::optional<Table> table;
    bool heading = false;
    bool figure = false;
    bool keep = false;  // kept on the page of the block after it (headings always are)
};

class Measurer {
public:
    Measurer(QPagedPaintDevice* device, const std::vector<QImage>* images)
        : device_(device), images_(images) {
        font_ = QFont(QStringLiteral("DejaVu Sans"));
        font_.setPointSizeF(8.5);
    }
    double text_width() const { return device_->width(); }

    // The document a piece is measured and painted with.
    void prepare(QTextDocument& doc, const QString& html) const {
        doc.documentLayout()->setPaintDevice(device_);
        doc.setDefaultFont(font_);
        doc.setDocumentMargin(0);
        for (std::size_t i = 0; i < images_->size(); ++i)
            doc.addResource(QTextDocument::ImageResource, QUrl(QStringLiteral("img:%1").arg(i)),
                            (*images_)[i]);
        doc.setHtml(html);
        doc.setTextWidth(text_width());
    }
    PdfPiece measure(const QString& html) const {
        QTextDocument doc;
        prepare(doc, html);
        return PdfPiece{html, doc.size().height(), doc.idealWidth()};
    }
    // A table at the largest font that keeps it inside the margins.
    PdfPiece table(const Table& t) const {
        PdfPiece p;
        for (double pt : {7.5, 6.8, 6.0, 5.4}) {
            p = measure(table_html(t, table_attrs(pt), kHeadAttrs));
            if (p.width <= text_width() + 0.5) break;
        }
        return p;
    }

private:
    QPagedPaintDevice* device_;
    const std::vector<QImage>* images_;
    QFont font_;
};

class BlockBuilder {
public:
    std::vector<Block> blocks;
    std::vector<QImage> images;

    void heading(int level, const QString& text) {
        blocks.push_back({QStringLiteral("<h%1 style=\"margin-top:10px; margin-bottom:4px\">%2</h%1>")
                              .arg(level)
                              .arg(text),
                          {},
                          true,
                          false});
    }
    void paragraph(const QString& escaped, const QString& style = {}) {
        blocks.push_back({QStringLiteral("<p style=\"%1\">%2</p>").arg(style, escaped), {}, false, false});
    }
    // A note introduces what follows: it stays on its page.
    void note(const QString& text) {
        paragraph(html_escape(text), kNoteStyle);
        blocks.back().keep = true;
    }
    void table(Table t) { blocks.push_back({{}, std::move(t), false, false}); }
    void figure(const Figure& f) {
        const int h = f.height * kFigureWidth / std::max(1, f.width);
        blocks.push_back({QStringLiteral("<p><img src=\"img:%1\" width=\"%2\" height=\"%3\"><br>"
                                         "<span style=\"%4\"><b>%5.</b> %6</span></p>")
                              .arg(add_image(f, kFigureWidth))
                              .arg(kFigureWidth)
                              .arg(h)
                              .arg(kNoteStyle, html_escape(f.title), html_escape(breakable(f.caption))),
                          {},
                          false,
                          true});
    }
    // Small figures side by side, `columns` a row, each row one block; captions under each cell.
    void grid(const std::vector<Figure>& cells, int columns, bool captions) {
        const int cell_width = (kFigureWidth - 6 * columns) / columns;
        for (std::size_t i = 0; i < cells.size(); i += columns) {
            QString row = QStringLiteral("<table width=\"100%\" cellspacing=\"0\" cellpadding=\"4\"><tr>");
            for (std::size_t j = i; j < std::min(cells.size(), i + columns); ++j) {
                const Figure& f = cells[j];
                row += QStringLiteral("<td width=\"%1%\"><img src=\"img:%2\" width=\"%3\" height=\"%4\">")
                           .arg(100 / columns)
                           .arg(add_image(f, cell_width))
                           .arg(cell_width)
                           .arg(f.height * cell_width / std::max(1, f.width));
                if (captions)
                    row += QStringLiteral("<br><span style=\"%1\"><b>%2.</b> %3</span>")
                               .arg(kNoteStyle, html_escape(f.title), html_escape(f.caption));
                row += QStringLiteral("</td>");
            }
            blocks.push_back({row + QStringLiteral("</tr></table>"), {}, false, true});
        }
    }

private:
    // The PNG at the pixels it fills on paper at kImageDpi, opaque, so that the PDF writer stores
    // it as JPEG: a plot at 300 dpi in deflated pixels made a report of a few plots megabytes.
    int add_image(const Figure& f, int css_width) {
        QImage image;
        image.loadFromData(f.png, "PNG");
        const int pixels = css_width * kImageDpi / 96;
        if (image.width() > pixels) image = image.scaledToWidth(pixels, Qt::SmoothTransformation);
        images.push_back(
            image.convertToFormat(QImage::Format_Indexed8, Qt::ThresholdDither | Qt::AvoidDither));
        return static_cast<int>(images.size()) - 1;
    }
};

// Where an image run's report would show inputs, a text run shows what its model wrote.
void add_text_samples(BlockBuilder& b, const ReportContent& c) {
    for (const TextSamples& s : c.text_samples) {
        b.heading(3, QStringLiteral("Text samples · ") + html_escape(s.run_label));
        if (!s.error.isEmpty()) b.paragraph(html_escape(s.error));
        if (s.shown.empty()) continue;
        b.note(text_samples_note(s));
        for (const TextSample& sample : s.shown)
            // A block's first margin is dropped on paper: a small empty line parts the samples.
            b.blocks.push_back(
                {QStringLiteral("<p style=\"font-size:4pt\">&nbsp;</p>") + text_sample_html(sample),
                 {},
                 false,
                 false});
    }
}

void add_test_windows(BlockBuilder& b, const ReportContent& c) {
    for (const TextSamples& s : c.text_samples) {
        b.heading(3, QStringLiteral("Test windows · ") + html_escape(s.run_label));
        if (!s.windows_error.isEmpty()) b.paragraph(html_escape(breakable(s.windows_error)));
        if (s.windows.empty()) continue;
        b.note(test_windows_note(s));
        for (const TestWindow& w : s.windows)
            b.blocks.push_back({QStringLiteral("<p style=\"font-size:4pt\">&nbsp;</p>") + test_window_html(w),
                                {},
                                false,
                                false});
    }
}

// The scaling section: per run, its precision per GEMM, its advisor (coloured in the browser,
// plain here), the SQNR table of its own rows, its plots and its what-if rows.
void add_scaling(BlockBuilder& b, const ReportContent& c) {
    if (c.scaling.empty()) return;
    b.heading(3, QStringLiteral("Scaling"));
    b.note(kScalingNote);
    for (const ScalingSection& section : c.scaling) {
        b.heading(4, html_escape(section.run_label));
        if (!section.gemm_precisions.isEmpty()) {
            b.note(kGemmPrecisionNote);
            b.table(gemm_precision_table(section));
        }
        if (section.advisor.columns.size() > 1) {
            b.note(kAdvisorNote);
            b.table(advisor_table(section.advisor));
        }
        if (!section.summary.empty()) b.table(sqnr_table(section.summary));
        for (const Figure& f : section.figures) b.figure(f);
        if (!section.what_if_summary.empty()) {
            b.note(kWhatIfNote);
            b.table(sqnr_table(section.what_if_summary));
        }
    }
}

std::vector<Block> build_blocks(const ReportContent& c, PdfLayout* layout) {
    BlockBuilder b;
    b.blocks.push_back(
        {QStringLiteral("<h2 style=\"margin-bottom:2px\">") + html_escape(c.title) +
             QStringLiteral("</h2><p style=\"color:#666666\">Generated %1 by MP Workbench from %2</p>")
                 .arg(html_escape(c.generated), html_escape(breakable(c.database))),
         {},
         false,
         false});
    b.heading(3, QStringLiteral("Runs"));
    b.table(runs_table(c));
    b.heading(4, QStringLiteral("Tags and notes"));
    b.table(notes_table(c));
    b.heading(3, QStringLiteral("Summary"));
    b.table(summary_table(c));
    b.note(target_note(c));
    b.heading(3, QStringLiteral("Configuration differences"));
    if (c.rows.size() < 2)
        b.paragraph(QStringLiteral("One run: nothing to compare."));
    else if (c.diff.empty())
        b.paragraph(QStringLiteral("The runs have the same configuration."));
    else
        b.table(diff_table(c));
    b.heading(3, QStringLiteral("Training curves"));
    b.note(QString::fromStdString(smoothing_statement(c.smoothing)));
    if (c.curves.empty()) b.paragraph(QStringLiteral("No metrics stored."));
    for (const Figure& f : c.curves) b.figure(f);
    add_text_samples(b, c);
    add_test_windows(b, c);
    if (!c.boundaries.empty()) {
        b.heading(3, QStringLiteral("Decision boundaries"));
        b.grid(c.boundaries, kGridColumns, true);
    }
    b.heading(3, QStringLiteral("Gradient exponent histograms"));
    if (c.gradient_grids.empty()) b.paragraph(QStringLiteral("No gradient statistics stored."));
    for (const HistogramGrid& g : c.gradient_grids) {
        b.heading(4, html_escape(g.run_label) + QStringLiteral(" · every layer at step %1").arg(g.step));
        b.note(grid_note(g));
        b.grid(g.cells, kGridColumns, false);
    }
    for (const Figure& f : c.histograms) b.figure(f);
    add_scaling(b, c);
    if (!c.stability.latest.empty()) {
        b.heading(3, QStringLiteral("Stability"));
        b.note(kStabilityNote);
        b.table(stability_table(c.stability));
        for (const Figure& f : c.stability.figures) b.figure(f);
    }
    b.heading(3, QStringLiteral("Network architecture"));
    for (const Architecture& a : c.architectures) {
        b.heading(4, architecture_heading(a));
        if (a.error.isEmpty())
            b.table(architecture_table(a));
        else
            b.paragraph(html_escape(breakable(a.error)));
    }
    b.heading(3, QStringLiteral("Events"));
    for (const RunEvents& e : c.events) {
        b.heading(4, html_escape(e.run_label));
        if (e.shown.empty())
            b.paragraph(QStringLiteral("No events."));
        else
            b.table(events_table(e));
    }
    b.heading(3, QStringLiteral("Configuration"));
    b.note(QStringLiteral("Every setting of each run; values that differ between the runs in bold."));
    b.table(config_table(c));
    b.heading(3, QStringLiteral("Machine and versions"));
    b.table(machine_table(c));
    layout->images = std::move(b.images);
    return std::move(b.blocks);
}

Table rows_of(const Table& t, int first, int count) {
    Table part = t;
    part.rows = t.rows.mid(first, count);
    return part;
}

class Paginator {
public:
    Paginator(const Measurer& m, double page_height) : m_(m), page_height_(page_height) {
        pages_.emplace_back();
    }

    void add(const std::vector<Block>& blocks) {
        for (std::size_t i = 0; i < blocks.size(); ++i) {
            const Block& b = blocks[i];
            if (b.table) {
                add_table(*b.table);
                continue;
            }
            PdfPiece p = m_.measure(b.html);
            p.figure = b.figure;
            p.heading = b.heading;
            // A heading starts a page rather than end one: it needs room for the start of
            // what follows (through any headings below it).
            const double need = p.height + (b.heading || b.keep ? following_height(blocks, i + 1) : 0);
            place(p, need);
        }
    }
    std::vector<std::vector<PdfPiece>> pages() && { return std::move(pages_); }

private:
    double room() const { return page_height_ - used_; }
    void new_page() {
        pages_.emplace_back();
        used_ = 0;
    }
    void place(const PdfPiece& p, double need) {
        if (used_ > 0 && need > room()) new_page();
        pages_.back().push_back(p);
        used_ += p.height;
    }
    // The least that must share the page with the heading before blocks[i]: further headings,
    // then the first block after them (a table's header and first two rows).
    double following_height(const std::vector<Block>& blocks, std::size_t i) const {
        double h = 0;
        for (; i < blocks.size(); ++i) {
            const Block& b = blocks[i];
            if (b.table) {
                const int rows = std::min<int>(2, static_cast<int>(b.table->rows.size()));
                return h + m_.table(rows_of(*b.table, 0, rows)).height;
            }
            h += m_.measure(b.html).height;
            if (!b.heading && !b.keep) break;
        }
        return h;
    }
    // As many rows as fit on each page, the header repeated on each.
    void add_table(const Table& t) {
        int first = 0;
        const int n = static_cast<int>(t.rows.size());
        while (first < n || (n == 0 && first == 0)) {
            int count = std::max(1, n - first);
            PdfPiece p = m_.table(rows_of(t, first, count));
            while (count > 1 && p.height > room()) {
                // Shrink in proportion first, then row by row.
                const int guess = std::max(1, static_cast<int>(count * room() / p.height));
                count = guess < count ? guess : count - 1;
                p = m_.table(rows_of(t, first, count));
            }
            const int rest = n - first;
            // Neither part of a split table is a lone row: a row alone goes with its neighbours.
            const bool lone_first = count < rest && count < 2 && used_ > 0;
            if ((p.height > room() || lone_first) && used_ > 0) {
                new_page();
                continue;  // the whole page for the rest
            }
            if (count == rest - 1 && count >= 3) p = m_.table(rows_of(t, first, --count));
            pages_.back().push_back(p);
            used_ += p.height;
            first += count;
            if (n == 0) break;
        }
    }

    const Measurer& m_;
    double page_height_;
    double used_ = 0;
    std::vector<std::vector<PdfPiece>> pages_;
};

PdfLayout layout_on(QPdfWriter& pdf, const ReportContent& content) {
    PdfLayout layout;
    const std::vector<Block> blocks = build_blocks(content, &layout);
    const Measurer m(&pdf, &layout.images);
    layout.text_width = m.text_width();
    layout.page_height = pdf.height();
    Paginator paginator(m, layout.page_height);
    paginator.add(blocks);
    layout.pages = std::move(paginator).pages();
    return layout;
}

}  // namespace

PdfLayout layout_pdf(const ReportContent& content) {
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter pdf(&buffer);
    set_up_writer(pdf, content.title);
    return layout_on(pdf, content);
}

void write_pdf(const QString& path, const ReportContent& content) {
    // Written to a temporary name first, so a failure never leaves half a PDF under the name.
    const QString tmp = path + QStringLiteral(".part");
    {
        QPdfWriter pdf(tmp);
        set_up_writer(pdf, content.title);
        const PdfLayout layout = layout_on(pdf, content);
        const Measurer m(&pdf, &layout.images);
        QPainter painter;
        if (!painter.begin(&pdf)) throw ReportError("cannot write " + path.toStdString());
        painter.setRenderHint(QPainter::LosslessImageRendering);
        for (std::size_t page = 0; page < layout.pages.size(); ++page) {
            if (page > 0) pdf.newPage();
            double y = 0;
            for (const PdfPiece& piece : layout.pages[page]) {
                QTextDocument doc;
                m.prepare(doc, piece.html);
                painter.save();
                painter.translate(0, y);
                doc.drawContents(&painter);
                painter.restore();
                y += piece.height;
            }
        }
        painter.end();
    }
    QFile::remove(path);
    if (!QFileInfo(tmp).exists() || QFileInfo(tmp).size() == 0 || !QFile::rename(tmp, path)) {
        QFile::remove(tmp);
        throw ReportError("cannot write " + path.toStdString());
    }
}

}  // namespace mpwb::report_detail
