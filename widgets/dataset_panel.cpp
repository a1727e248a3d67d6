// DatasetPanel: source selection, synthetic preview (make_synthetic + QCustomPlot), IDX
// thumbnails (read from the test split only, which keeps a folder check well under the 0.5 s a
// click may take), CSV loading, image folders (listed, not decoded, for the same reason) and text
// (tokenized whole: the 2.5 MB fortunes corpus takes a fraction of that). The sources
// (kind, page, classes) and the number settings (range, step, default) are tables; the constructor only
// assembles the pages from them.
#include "widgets/dataset_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QImage>
#include <QLabel>
#include <QLineEdit>
#include <QPixmap>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QVBoxLayout>
#include <qcustomplot.h>

#include <type_traits>

#include "widgets/plots/plot_widget.h"

#include "core/common/checked_arith.h"
#include "core/common/utf8.h"
#include "core/data/csv_reader.h"
#include "core/data/idx_reader.h"
#include "core/data/image_folder.h"
#include "core/data/synthetic.h"
#include "core/data/text_corpus.h"

namespace mpwb {

namespace {

// The stacked page each source fills in, in the order the pages are added.
enum Page { kSyntheticPage, kIdxPage, kCsvPage, kImageFolderPage, kTextPage };
// Source::classes when the count is not fixed by the kind.
constexpr int kChosenClasses = -1;   // the Classes spin box (spiral arms)
constexpr int kClassesFromFile = 0;  // what the CSV file, the image folder or the text holds

struct Source {
    const char* kind;
    const char* label;
    Page page;
    int classes;
};

const Source kSources[] = {
    {"spiral", "Spiral (synthetic)", kSyntheticPage, kChosenClasses},
    {"circles", "Circles (synthetic)", kSyntheticPage, 2},
    {"xor", "XOR (synthetic)", kSyntheticPage, 2},
    {"gauss", "Gaussian blobs (synthetic)", kSyntheticPage, 2},
    {"moons", "Moons (synthetic)", kSyntheticPage, 2},
    {"fashion-mnist", "Fashion-MNIST (IDX folder)", kIdxPage, 10},
    {"mnist", "MNIST (IDX folder)", kIdxPage, 10},
    {"csv", "CSV file", kCsvPage, kClassesFromFile},
    {"image-folder", "Image folder (PNG/JPEG)", kImageFolderPage, kClassesFromFile},
    {"text", "Text file", kTextPage, kClassesFromFile},
    {"fortunes", "Fortunes (built-in text)", kTextPage, kClassesFromFile},
};

// The panel's number settings: object name, range, step, default and (QDoubleSpinBox) decimals.
struct SpinField {
    const char* name;
    double min, max, step, value;
    int decimals;
};

constexpr SpinField kSamplesField{"samplesSpin", 20, 1000000, 100, 1000, 0};
constexpr SpinField kNoiseField{"noiseSpin", 0.0, 1.0, 0.05, 0.0, 2};
constexpr SpinField kClassesField{"classesSpin", 2, 8, 1, 2, 0};
constexpr SpinField kTestRatioField{"testRatioSpin", 0.01, 0.99, 0.05, 0.2, 2};
constexpr SpinField kSeedField{"seedSpin", 0, 2147483647, 1, 1, 0};
constexpr SpinField kImageHeightField{"imageHeightSpin", 1, kImageMaxSide, 1, 28, 0};
constexpr SpinField kImageWidthField{"imageWidthSpin", 1, kImageMaxSide, 1, 28, 0};
constexpr SpinField kContextField{"contextSpin", 1, kTextMaxContext, 8, 64, 0};
// How much of a text the Text page shows.
constexpr int64_t kTextSampleTokens = 400;

// A combo box of (label, value) items.
QComboBox* make_combo(const char* name, std::initializer_list<std::pair<QString, QVariant>> items) {
    auto* combo = new QComboBox;
    combo->setObjectName(QString::fromLatin1(name));
    for (const auto& [label, value] : items) combo->addItem(label, value);
    return combo;
}

template <class Spin>
Spin* make_spin(const SpinField& f) {
    auto* spin = new Spin;
    spin->setObjectName(QString::fromLatin1(f.name));
    if constexpr (std::is_same_v<Spin, QDoubleSpinBox>) {
        spin->setRange(f.min, f.max);
        spin->setDecimals(f.decimals);
    } else {
        spin->setRange(int(f.min), int(f.max));
    }
    spin->setSingleStep(f.step);
    spin->setValue(f.value);
    return spin;
}

QLabel* make_status_label(const char* name) {
    auto* label = new QLabel;
    label->setObjectName(QString::fromLatin1(name));
    label->setWordWrap(true);
    return label;
}

// A page's widget with its box layout, flush with the panel's edges.
template <class Box>
Box* make_page(QStackedWidget* pages) {
    auto* page = new QWidget;
    auto* box = new Box(page);
    box->setContentsMargins(0, 0, 0, 0);
    pages->addWidget(page);
    return box;
}

// The source the combo box shows (its items are kSources, in order).
const Source& chosen_source(const QComboBox* combo) { return kSources[std::max(0, combo->currentIndex())]; }

const QColor kClassColors[] = {QColor(31, 119, 180),  QColor(255, 127, 14),  QColor(44, 160, 44),
                               QColor(214, 39, 40),   QColor(148, 103, 189), QColor(140, 86, 75),
                               QColor(227, 119, 194), QColor(127, 127, 127)};

// The file of one IDX part, raw or gzipped; empty when neither exists.
QString idx_file(const QString& folder, const QString& base) {
    for (const QString& name : {base, base + ".gz"}) {
        const QString p = QDir(folder).filePath(name);
        if (QFileInfo::exists(p)) return p;
    }
    return {};
}

}  // namespace

DatasetPanel::DatasetPanel(QWidget* parent) : QWidget(parent) {
    source_ = new QComboBox;
    source_->setObjectName("sourceCombo");
    for (const auto& s : kSources) source_->addItem(tr(s.label), QString::fromLatin1(s.kind));
    pages_ = new QStackedWidget;
    buildSyntheticPage();
    buildIdxPage();
    buildCsvPage();
    buildImageFolderPage();
    buildTextPage();

    error_label_ = make_status_label("errorLabel");
    error_label_->setStyleSheet("color: #b00000;");
    error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_label_->hide();

    auto* top = new QVBoxLayout(this);
    auto* src_row = new QFormLayout;
    src_row->addRow(tr("Source"), source_);
    top->addLayout(src_row);
    top->addWidget(pages_, 1);
    top->addLayout(buildSharedSettings());
    top->addWidget(error_label_);
    connect(source_, &QComboBox::currentIndexChanged, this, &DatasetPanel::onSourceChanged);
    onSourceChanged();
}

template <class Spin>
Spin* DatasetPanel::watched(Spin* setting) {
    connect(setting, &Spin::valueChanged, this, &DatasetPanel::onSettingChanged);
    return setting;
}

QHBoxLayout* DatasetPanel::pathRow(QLineEdit* edit, const char* button_name, void (DatasetPanel::*browse)()) {
    auto* button = new QPushButton(tr("Browse…"));
    button->setObjectName(QString::fromLatin1(button_name));
    connect(button, &QPushButton::clicked, this, browse);
    auto* row = new QHBoxLayout;
    row->addWidget(edit, 1);
    row->addWidget(button);
    return row;
}

void DatasetPanel::buildSyntheticPage() {
    samples_ = watched(make_spin<QSpinBox>(kSamplesField));
    noise_ = watched(make_spin<QDoubleSpinBox>(kNoiseField));
    classes_ = watched(make_spin<QSpinBox>(kClassesField));
    classes_->setToolTip(tr("Spiral arms; the other synthetic sets have two classes"));
    plot_ = new QCustomPlot;
    plot_->setObjectName("previewPlot");
    plot_->setMinimumSize(240, 240);
    for (QCPAxis* axis : {plot_->xAxis, plot_->yAxis}) {
        axis->setRange(-1.25, 1.25);
        axis->setTickLabels(false);
    }
    plot_->setNoAntialiasingOnDrag(true);
    auto* form = new QFormLayout;
    form->addRow(tr("Samples"), samples_);
    form->addRow(tr("Noise"), noise_);
    form->addRow(tr("Classes"), classes_);
    auto* box = make_page<QVBoxLayout>(pages_);
    box->addLayout(form);
    box->addWidget(plot_, 1);
}

void DatasetPanel::buildIdxPage() {
    folder_ = new QLineEdit(QString::fromLatin1(kDebianFashionMnistDir));
    folder_->setObjectName("folderEdit");
    idx_status_ = make_status_label("idxStatus");
    thumb_host_ = new QWidget;
    thumb_grid_ = new QGridLayout(thumb_host_);
    thumb_grid_->setSpacing(2);
    thumb_grid_->setContentsMargins(0, 0, 0, 0);
    auto* box = make_page<QVBoxLayout>(pages_);
    box->addWidget(new QLabel(tr("Folder with train-/t10k- images and labels (raw or .gz):")));
    box->addLayout(pathRow(folder_, "browseFolderButton", &DatasetPanel::browseFolder));
    box->addWidget(idx_status_);
    box->addWidget(thumb_host_);
    box->addStretch(1);
    connect(folder_, &QLineEdit::editingFinished, this, [this] {
        loadIdxFolder();
        onSettingChanged();
    });
}

void DatasetPanel::buildCsvPage() {
    csv_path_ = new QLineEdit;
    csv_path_->setObjectName("csvEdit");
    csv_path_->setPlaceholderText(tr("table.csv"));
    label_column_ = new QLineEdit;
    label_column_->setObjectName("labelColumnEdit");
    label_column_->setPlaceholderText(tr("last column"));
    label_column_->setToolTip(tr("Column name (with a header row) or index; negative counts from the end"));
    csv_status_ = make_status_label("csvStatus");
    auto* form = make_page<QFormLayout>(pages_);
    form->addRow(tr("File"), pathRow(csv_path_, "browseCsvButton", &DatasetPanel::browseCsv));
    form->addRow(tr("Label column"), label_column_);
    form->addRow(csv_status_);
    for (QLineEdit* e : {csv_path_, label_column_})
        connect(e, &QLineEdit::editingFinished, this, [this] {
            loadCsvFile();
            onSettingChanged();
        });
}

void DatasetPanel::buildImageFolderPage() {
    image_folder_ = new QLineEdit;
    image_folder_->setObjectName("imageFolderEdit");
    image_folder_->setPlaceholderText(tr("folder with one sub-folder per class"));
    image_height_ = watched(make_spin<QSpinBox>(kImageHeightField));
    image_width_ = watched(make_spin<QSpinBox>(kImageWidthField));
    channels_ = make_combo("channelsCombo", {{tr("Grayscale (1)"), 1}, {tr("RGB (3)"), 3}});
    size_mismatch_ =
        make_combo("sizeMismatchCombo", {{tr("Resize to the chosen size"), QStringLiteral("resize")},
                                         {tr("Refuse the dataset"), QStringLiteral("error")}});
    size_mismatch_->setToolTip(tr("What to do with an image of another size than the chosen one"));
    for (QComboBox* combo : {channels_, size_mismatch_})
        connect(combo, &QComboBox::currentIndexChanged, this, &DatasetPanel::onSettingChanged);
    image_status_ = make_status_label("imageFolderStatus");
    auto* size = new QHBoxLayout;
    size->addWidget(image_height_);
    size->addWidget(new QLabel(QStringLiteral("×")));
    size->addWidget(image_width_);
    auto* form = make_page<QFormLayout>(pages_);
    form->addRow(tr("Folder"),
                 pathRow(image_folder_, "browseImageFolderButton", &DatasetPanel::browseImageFolder));
    form->addRow(tr("Size (height × width)"), size);
    form->addRow(tr("Channels"), channels_);
    form->addRow(tr("Other sizes"), size_mismatch_);
    form->addRow(image_status_);
    connect(image_folder_, &QLineEdit::editingFinished, this, [this] {
        loadImageFolder();
        onSettingChanged();
    });
}

void DatasetPanel::buildTextPage() {
    text_path_ = new QLineEdit;
    text_path_->setObjectName("textPathEdit");
    tokenizer_ = make_combo("tokenizerCombo", {{tr("Characters (the text's own)"), QStringLiteral("char")},
                                               {tr("Bytes (256)"), QStringLiteral("byte")}});
    tokenizer_->setToolTip(
        tr("Character tokens are the distinct characters of the training part; byte "
           "tokens read any file"));
    context_ = watched(make_spin<QSpinBox>(kContextField));
    context_->setToolTip(tr("Tokens per window: each window's next-token targets train the network"));
    text_status_ = make_status_label("textStatus");
    text_sample_ = make_status_label("textSample");
    text_sample_->setTextFormat(Qt::PlainText);
    text_sample_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    text_sample_->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    auto* form = make_page<QFormLayout>(pages_);
    form->addRow(tr("File"), pathRow(text_path_, "browseTextButton", &DatasetPanel::browseText));
    form->addRow(tr("Tokens"), tokenizer_);
    form->addRow(tr("Context"), context_);
    form->addRow(text_status_);
    form->addRow(text_sample_);
    connect(text_path_, &QLineEdit::editingFinished, this, [this] {
        loadTextCorpus();
        onSettingChanged();
    });
    connect(tokenizer_, &QComboBox::currentIndexChanged, this, [this] {
        loadTextCorpus();
        onSettingChanged();
    });
}

QFormLayout* DatasetPanel::buildSharedSettings() {
    test_ratio_ = watched(make_spin<QDoubleSpinBox>(kTestRatioField));
    seed_ = watched(make_spin<QSpinBox>(kSeedField));
    normalize_ = new QCheckBox(tr("Normalise features (mean/std of the train split)"));
    normalize_->setObjectName("normalizeCheck");
    normalize_->setChecked(true);
    connect(normalize_, &QCheckBox::toggled, this, &DatasetPanel::onSettingChanged);
    auto* form = new QFormLayout;
    test_ratio_label_ = new QLabel(tr("Test fraction"));
    form->addRow(test_ratio_label_, test_ratio_);
    seed_label_ = new QLabel(tr("Data seed"));
    form->addRow(seed_label_, seed_);
    form->addRow(normalize_);
    return form;
}

DatasetSpec DatasetPanel::datasetSpec() const {
    DatasetSpec s;
    s.kind = source_->currentData().toString().toStdString();
    const int page = pages_->currentIndex();
    if (page == kIdxPage) s.path = folder_->text().trimmed().toStdString();
    if (page == kCsvPage) {
        s.path = csv_path_->text().trimmed().toStdString();
        s.label_column = label_column_->text().trimmed().toStdString();
    }
    if (page == kImageFolderPage) {
        s.path = image_folder_->text().trimmed().toStdString();
        s.image_height = image_height_->value();
        s.image_width = image_width_->value();
        s.channels = channels_->currentData().toInt();
        s.size_mismatch = size_mismatch_->currentData().toString().toStdString();
    }
    if (page == kTextPage) {
        s.path = text_path_->text().trimmed().toStdString();
        s.tokenizer = tokenizer_->currentData().toString().toStdString();
        s.context = context_->value();
    }
    s.samples = samples_->value();
    s.noise = float(noise_->value());
    s.test_ratio = test_ratio_->value();
    s.classes = sourceClasses();
    s.seed = uint64_t(seed_->value());
    s.normalize = normalize_->isChecked();
    return s;
}

void DatasetPanel::setDatasetSpec(const DatasetSpec& spec) {
    updating_ = true;
    int index = source_->findData(QString::fromStdString(spec.kind));
    if (index < 0) index = 0;
    if (spec.kind == "fashion-mnist" || spec.kind == "mnist")
        folder_->setText(spec.path.empty() ? QString::fromLatin1(kDebianFashionMnistDir)
                                           : QString::fromStdString(spec.path));
    if (spec.kind == "csv") {
        csv_path_->setText(QString::fromStdString(spec.path));
        label_column_->setText(QString::fromStdString(spec.label_column));
    }
    if (spec.kind == "image-folder") {
        image_folder_->setText(QString::fromStdString(spec.path));
        image_height_->setValue(spec.image_height);
        image_width_->setValue(spec.image_width);
        channels_->setCurrentIndex(std::max(0, channels_->findData(spec.channels)));
        size_mismatch_->setCurrentIndex(
            std::max(0, size_mismatch_->findData(QString::fromStdString(spec.size_mismatch))));
    }
    if (spec.is_text()) {
        text_path_->setText(QString::fromStdString(spec.path));
        tokenizer_->setCurrentIndex(
            std::max(0, tokenizer_->findData(QString::fromStdString(spec.tokenizer))));
        context_->setValue(int(std::clamp<int64_t>(spec.context, context_->minimum(), context_->maximum())));
    }
    samples_->setValue(int(std::clamp<int64_t>(spec.samples, samples_->minimum(), samples_->maximum())));
    noise_->setValue(spec.noise);
    classes_->setValue(std::clamp(spec.classes, 2, 8));
    test_ratio_->setValue(spec.test_ratio);
    seed_->setValue(int(std::min<uint64_t>(spec.seed, uint64_t(seed_->maximum()))));
    normalize_->setChecked(spec.normalize);
    if (source_->currentIndex() != index)
        source_->setCurrentIndex(index);  // reloads through onSourceChanged
    else
        onSourceChanged();
    updating_ = false;
    emit datasetChanged();
}

Shape DatasetPanel::sampleShape() const {
    switch (pages_->currentIndex()) {
        case kSyntheticPage:
            return {2};
        case kIdxPage:
            return idx_shape_;
        case kImageFolderPage:
            return {channels_->currentData().toInt(), image_height_->value(), image_width_->value()};
        case kTextPage:
            return {context_->value()};
        default:
            return csv_shape_;
    }
}

int DatasetPanel::sourceClasses() const {
    const Source& source = chosen_source(source_);
    if (source.classes == kChosenClasses) return classes_->value();
    if (source.classes == kClassesFromFile)
        return source.page == kCsvPage    ? csv_classes_
               : source.page == kTextPage ? text_classes_
                                          : image_classes_;
    return source.classes;
}

int DatasetPanel::classCount() const {
    // An IDX folder that does not load has no classes yet.
    if (pages_->currentIndex() == kIdxPage && !error_.isEmpty()) return 0;
    return sourceClasses();
}

void DatasetPanel::onSourceChanged() {
    const Source& source = chosen_source(source_);
    pages_->setCurrentIndex(source.page);
    classes_->setEnabled(source.classes == kChosenClasses);
    // IDX sets come with their own test split.
    test_ratio_->setVisible(source.page != kIdxPage);
    test_ratio_label_->setVisible(source.page != kIdxPage);
    // Text: the inputs are token ids, and the windows are drawn with the run's seed.
    normalize_->setVisible(source.page != kTextPage);
    seed_->setVisible(source.page != kTextPage);
    seed_label_->setVisible(source.page != kTextPage);
    text_path_->setPlaceholderText(
        QString::fromLatin1(source.kind) == "fortunes"
            ? tr("%1 (Debian's fortunes)").arg(QString::fromLatin1(kFortunesFolder))
            : tr("story.txt"));
    if (source.page == kSyntheticPage) regeneratePreview();
    if (source.page == kIdxPage) loadIdxFolder();
    if (source.page == kCsvPage) loadCsvFile();
    if (source.page == kImageFolderPage) loadImageFolder();
    if (source.page == kTextPage) loadTextCorpus();
    if (!updating_) emit datasetChanged();
}

void DatasetPanel::onSettingChanged() {
    if (pages_->currentIndex() == kSyntheticPage) regeneratePreview();
    if (pages_->currentIndex() == kCsvPage && sender() == test_ratio_) loadCsvFile();
    if (pages_->currentIndex() == kTextPage && (sender() == test_ratio_ || sender() == context_))
        loadTextCorpus();
    if (!updating_) emit datasetChanged();
}

void DatasetPanel::setError(const QString& message) {
    error_ = message;
    error_label_->setText(message);
    error_label_->setVisible(!message.isEmpty());
}

void DatasetPanel::regeneratePreview() {
    plot_->clearGraphs();
    preview_points_ = 0;
    SyntheticConfig c;
    try {
        c.kind = parse_synthetic_kind(source_->currentData().toString().toStdString());
        c.samples = samples_->value();
        c.noise = float(noise_->value());
        c.test_ratio = test_ratio_->value();
        c.seed = uint64_t(seed_->value());
        c.classes = c.kind == SyntheticKind::Spiral ? classes_->value() : 2;
        const Dataset d = make_synthetic(c);
        // One graph per class and split: train filled, test hollow.
        const int k = std::max(1, d.num_classes);
        std::vector<QVector<double>> xs(size_t(2 * k)), ys(size_t(2 * k));
        auto add = [&](const Tensor& x, const Tensor& y, int split) {
            const int64_t n = x.rank() ? x.dim(0) : 0;
            const float* px = x.data();
            const float* py = y.data();
            for (int64_t i = 0; i < n; ++i) {
                const int cls = std::clamp(int(py[i]), 0, k - 1);
                xs[size_t(split * k + cls)].push_back(px[2 * i]);
                ys[size_t(split * k + cls)].push_back(px[2 * i + 1]);
            }
            preview_points_ += int(n);
        };
        add(d.train_x, d.train_y, 0);
        add(d.test_x, d.test_y, 1);
        // Big sets would take longer to draw than to generate: show a sample.
        const int marker = samples_->value() > 4000 ? 2 : 4;
        for (int split = 0; split < 2; ++split) {
            for (int cls = 0; cls < k; ++cls) {
                auto* g = plot_->addGraph();
                g->setLineStyle(QCPGraph::lsNone);
                const QColor col = kClassColors[cls % 8];
                g->setScatterStyle(
                    split == 0
                        ? circle_marker(QPen(col), col, marker, plot_->devicePixelRatioF())
                        : circle_marker(QPen(col), Qt::NoBrush, marker + 1, plot_->devicePixelRatioF()));
                g->setData(xs[size_t(split * k + cls)], ys[size_t(split * k + cls)]);
            }
        }
        setError({});
    } catch (const std::exception& e) {
        setError(QString::fromUtf8(e.what()));
    }
    plot_->replot(QCustomPlot::rpQueuedReplot);
}

void DatasetPanel::loadIdxFolder() {
    // Clear the old grid.
    while (QLayoutItem* item = thumb_grid_->takeAt(0)) {
        delete item->widget();
        delete item;
    }
    thumbnails_ = 0;
    const QString folder = folder_->text().trimmed();
    QStringList missing;
    for (const char* base : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                             "t10k-labels-idx1-ubyte"}) {
        if (idx_file(folder, QString::fromLatin1(base)).isEmpty()) missing << QString::fromLatin1(base);
    }
    if (!QFileInfo(folder).isDir()) {
        setError(tr("The folder %1 does not exist.").arg(folder));
        idx_status_->setText({});
        return;
    }
    if (!missing.isEmpty()) {
        setError(
            tr("%1 lacks %2 (raw or .gz). For Fashion-MNIST on Debian: apt install dataset-fashion-mnist.")
                .arg(folder, missing.join(", ")));
        idx_status_->setText({});
        return;
    }
    try {
        const IdxImages images = read_idx_images(idx_file(folder, "t10k-images-idx3-ubyte").toStdString());
        const std::vector<uint8_t> labels =
            read_idx_labels(idx_file(folder, "t10k-labels-idx1-ubyte").toStdString());
        if (int64_t(labels.size()) != images.count)
            throw std::runtime_error("the test split has " + std::to_string(images.count) + " images but " +
                                     std::to_string(labels.size()) + " labels");
        idx_shape_ = {1, images.rows, images.cols};
        static const char* fashion[] = {"T-shirt", "Trouser", "Pullover", "Dress", "Coat",
                                        "Sandal",  "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
        const bool is_fashion = source_->currentData().toString() == "fashion-mnist";
        const int cols = 8, rows = 2;
        const int64_t n = std::min<int64_t>(images.count, rows * cols);
        const int64_t px = images.rows * images.cols;
        for (int64_t i = 0; i < n; ++i) {
            QImage img(images.pixels.data() + i * px, int(images.cols), int(images.rows), int(images.cols),
                       QImage::Format_Grayscale8);
            auto* lab = new QLabel;
            lab->setPixmap(QPixmap::fromImage(img.scaled(int(images.cols) * 2, int(images.rows) * 2)));
            const int y = labels[size_t(i)];
            lab->setToolTip(is_fashion && y < 10 ? QString::fromLatin1(fashion[y]) : QString::number(y));
            thumb_grid_->addWidget(lab, int(i / cols), int(i % cols));
            ++thumbnails_;
        }
        idx_status_->setText(
            tr("Test split: %1 images of %2 × %3 pixels, 10 classes. Hover a thumbnail for its label.")
                .arg(images.count)
                .arg(images.rows)
                .arg(images.cols));
        setError({});
    } catch (const std::exception& e) {
        idx_status_->setText({});
        setError(tr("Cannot read the images in %1: %2").arg(folder, QString::fromUtf8(e.what())));
    }
}

void DatasetPanel::loadCsvFile() {
    csv_shape_.clear();
    csv_classes_ = 0;
    const QString path = csv_path_->text().trimmed();
    if (path.isEmpty()) {
        csv_status_->setText({});
        setError(tr("Choose a CSV file."));
        return;
    }
    CsvOptions o;
    const QString label = label_column_->text().trimmed();
    bool is_int = false;
    const int idx = label.toInt(&is_int);
    if (!label.isEmpty()) {
        if (is_int)
            o.label_index = idx;
        else
            o.label_name = label.toStdString();
    }
    o.test_ratio = test_ratio_->value();
    o.seed = uint64_t(seed_->value());
    try {
        const Dataset d = load_csv_dataset(path.toStdString(), o);
        csv_shape_ = d.sample_shape;
        csv_classes_ = d.num_classes;
        csv_status_->setText(
            tr("%1 rows (%2 train, %3 test), %4 features, %5")
                .arg(d.train_size() + d.test_size())
                .arg(d.train_size())
                .arg(d.test_size())
                .arg(shape_numel(d.sample_shape))
                .arg(d.num_classes > 0 ? tr("%1 classes").arg(d.num_classes) : tr("regression")));
        setError({});
    } catch (const std::exception& e) {
        csv_status_->setText({});
        setError(QString::fromUtf8(e.what()));
    }
}

void DatasetPanel::loadImageFolder() {
    image_classes_ = 0;
    const QString folder = image_folder_->text().trimmed();
    image_status_->setText({});
    if (folder.isEmpty()) {
        setError(tr("Choose an image folder: one sub-folder of PNG or JPEG images per class."));
        return;
    }
    try {
        // Listed, not decoded: the sizes and pixels are read when training starts.
        const ImageFolderScan scan = scan_image_folder(folder.toStdString());
        QStringList counts;
        for (size_t k = 0; k < scan.class_names.size(); ++k)
            counts << QStringLiteral("%1 %2")
                          .arg(QString::fromStdString(scan.class_names[k]))
                          .arg(scan.files[k].size());
        QString text = tr("%1 classes, %2 images: %3.")
                           .arg(scan.class_names.size())
                           .arg(scan.image_count())
                           .arg(counts.join(QStringLiteral(", ")));
        if (scan.ignored_files > 0)
            text += QLatin1Char(' ') + tr("%n other file(s) ignored.", nullptr, int(scan.ignored_files));
        image_status_->setText(text);
        image_classes_ = int(scan.class_names.size());
        setError({});
    } catch (const std::exception& e) {
        setError(QString::fromUtf8(e.what()));
    }
}

void DatasetPanel::loadTextCorpus() {
    text_classes_ = 0;
    text_status_->setText({});
    text_sample_->setText({});
    const bool fortunes = source_->currentData().toString() == "fortunes";
    const QString path = text_path_->text().trimmed();
    if (path.isEmpty() && !fortunes) {
        setError(tr("Choose a text file."));
        return;
    }
    try {
        const TextCorpusOptions options{
            .tokenizer = parse_tokenizer(tokenizer_->currentData().toString().toStdString(), "tokenizer"),
            .context = context_->value(),
            .test_ratio = test_ratio_->value()};
        const TextCorpus corpus =
            fortunes ? load_fortunes_corpus(path.isEmpty() ? kFortunesFolder : path.toStdString(), options)
                     : load_text_corpus(path.toStdString(), options);
        showTextCorpus(corpus);
        setError({});
    } catch (const std::exception& e) {
        setError(QString::fromUtf8(e.what()));
    }
}

void DatasetPanel::showTextCorpus(const TextCorpus& corpus) {
    const Dataset& d = corpus.data;
    const TextCorpusFacts& f = corpus.facts;
    text_classes_ = d.num_classes;
    const auto count = [](int64_t n) { return QString::fromStdString(size_text(n)); };
    QString status = tr("%1 bytes: %2 training and %3 test tokens, a vocabulary of %4 tokens; %5 training "
                        "and %6 test windows.")
                         .arg(count(f.bytes), count(f.train_tokens), count(f.test_tokens),
                              count(d.num_classes), count(d.train_size()), count(d.test_size()));
    if (f.dropped_test_windows > 0)
        status +=
            QLatin1Char(' ') + tr("%n test window(s) left out: they hold characters the training part lacks.",
                                  nullptr, int(f.dropped_test_windows));
    text_status_->setText(status);
    // The start of the training part, as the windows hold it.
    std::vector<int32_t> ids;
    const int64_t context = d.sample_shape[0];
    for (int64_t i = 0; i < d.train_x.numel() && int64_t(ids.size()) < kTextSampleTokens; i += context)
        for (int64_t k = 0; k < context && int64_t(ids.size()) < kTextSampleTokens; ++k)
            ids.push_back(int32_t(d.train_x.data()[i + k]));
    text_sample_->setText(QString::fromStdString(replace_invalid_utf8(d.vocabulary->decode(ids))));
}

void DatasetPanel::browseText() {
    if (source_->currentData().toString() == "fortunes") {
        browseFolderFor(text_path_, tr("Fortunes folder"), &DatasetPanel::loadTextCorpus);
        return;
    }
    const QString file = QFileDialog::getOpenFileName(this, tr("Text file"), text_path_->text(),
                                                      tr("Text (*.txt *.md);;All files (*)"));
    if (file.isEmpty()) return;
    text_path_->setText(file);
    loadTextCorpus();
    onSettingChanged();
}

void DatasetPanel::browseFolderFor(QLineEdit* edit, const QString& title, void (DatasetPanel::*load)()) {
    const QString dir = QFileDialog::getExistingDirectory(this, title, edit->text());
    if (dir.isEmpty()) return;
    edit->setText(dir);
    (this->*load)();
    onSettingChanged();
}

void DatasetPanel::browseImageFolder() {
    browseFolderFor(image_folder_, tr("Image folder"), &DatasetPanel::loadImageFolder);
}

void DatasetPanel::browseFolder() {
    browseFolderFor(folder_, tr("IDX dataset folder"), &DatasetPanel::loadIdxFolder);
}

void DatasetPanel::browseCsv() {
    const QString file = QFileDialog::getOpenFileName(this, tr("CSV table"), csv_path_->text(),
                                                      tr("CSV (*.csv *.txt);;All files (*)"));
    if (file.isEmpty()) return;
    csv_path_->setText(file);
    loadCsvFile();
    onSettingChanged();
}

}  // namespace mpwb
