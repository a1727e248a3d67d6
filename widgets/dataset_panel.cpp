// DatasetPanel: source selection, synthetic preview (make_synthetic + QCustomPlot), IDX
// thumbnails (read from the test split only, which keeps a folder check well under the 0.5 s a
// click may take) and CSV loading.
#include "widgets/dataset_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
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

#include "widgets/plots/plot_widget.h"

#include "core/data/csv_reader.h"
#include "core/data/idx_reader.h"
#include "core/data/synthetic.h"

namespace mpwb {

namespace {

struct Source {
    const char* kind;
    const char* label;
    int page;  // 0 synthetic, 1 IDX, 2 CSV
};

const Source kSources[] = {
    {"spiral", "Spiral (synthetic)", 0},   {"circles", "Circles (synthetic)", 0},
    {"xor", "XOR (synthetic)", 0},         {"gauss", "Gaussian blobs (synthetic)", 0},
    {"moons", "Moons (synthetic)", 0},     {"fashion-mnist", "Fashion-MNIST (IDX folder)", 1},
    {"mnist", "MNIST (IDX folder)", 1},    {"csv", "CSV file", 2},
};

const QColor kClassColors[] = {QColor(31, 119, 180), QColor(255, 127, 14), QColor(44, 160, 44),
                               QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75),
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

    // --- synthetic page ---
    samples_ = new QSpinBox;
    samples_->setObjectName("samplesSpin");
    samples_->setRange(20, 1000000);
    samples_->setSingleStep(100);
    samples_->setValue(1000);
    noise_ = new QDoubleSpinBox;
    noise_->setObjectName("noiseSpin");
    noise_->setRange(0.0, 1.0);
    noise_->setSingleStep(0.05);
    noise_->setDecimals(2);
    classes_ = new QSpinBox;
    classes_->setObjectName("classesSpin");
    classes_->setRange(2, 8);
    classes_->setValue(2);
    classes_->setToolTip(tr("Spiral arms; the other synthetic sets have two classes"));
    plot_ = new QCustomPlot;
    plot_->setObjectName("previewPlot");
    plot_->setMinimumSize(240, 240);
    plot_->xAxis->setRange(-1.25, 1.25);
    plot_->yAxis->setRange(-1.25, 1.25);
    plot_->xAxis->setTickLabels(false);
    plot_->yAxis->setTickLabels(false);
    plot_->setNoAntialiasingOnDrag(true);
    auto* syn_form = new QFormLayout;
    syn_form->addRow(tr("Samples"), samples_);
    syn_form->addRow(tr("Noise"), noise_);
    syn_form->addRow(tr("Classes"), classes_);
    auto* syn_page = new QWidget;
    auto* syn_box = new QVBoxLayout(syn_page);
    syn_box->setContentsMargins(0, 0, 0, 0);
    syn_box->addLayout(syn_form);
    syn_box->addWidget(plot_, 1);

    // --- IDX page ---
    folder_ = new QLineEdit(QString::fromLatin1(kDebianFashionMnistDir));
    folder_->setObjectName("folderEdit");
    auto* browse = new QPushButton(tr("Browse…"));
    browse->setObjectName("browseFolderButton");
    connect(browse, &QPushButton::clicked, this, &DatasetPanel::browseFolder);
    auto* folder_row = new QHBoxLayout;
    folder_row->addWidget(folder_, 1);
    folder_row->addWidget(browse);
    idx_status_ = new QLabel;
    idx_status_->setObjectName("idxStatus");
    idx_status_->setWordWrap(true);
    thumb_host_ = new QWidget;
    thumb_grid_ = new QGridLayout(thumb_host_);
    thumb_grid_->setSpacing(2);
    thumb_grid_->setContentsMargins(0, 0, 0, 0);
    auto* idx_page = new QWidget;
    auto* idx_box = new QVBoxLayout(idx_page);
    idx_box->setContentsMargins(0, 0, 0, 0);
    idx_box->addWidget(new QLabel(tr("Folder with train-/t10k- images and labels (raw or .gz):")));
    idx_box->addLayout(folder_row);
    idx_box->addWidget(idx_status_);
    idx_box->addWidget(thumb_host_);
    idx_box->addStretch(1);
    connect(folder_, &QLineEdit::editingFinished, this, [this] {
        loadIdxFolder();
        onSettingChanged();
    });

    // --- CSV page ---
    csv_path_ = new QLineEdit;
    csv_path_->setObjectName("csvEdit");
    csv_path_->setPlaceholderText(tr("table.csv"));
    auto* browse_csv = new QPushButton(tr("Browse…"));
    browse_csv->setObjectName("browseCsvButton");
    connect(browse_csv, &QPushButton::clicked, this, &DatasetPanel::browseCsv);
    auto* csv_row = new QHBoxLayout;
    csv_row->addWidget(csv_path_, 1);
    csv_row->addWidget(browse_csv);
    label_column_ = new QLineEdit;
    label_column_->setObjectName("labelColumnEdit");
    label_column_->setPlaceholderText(tr("last column"));
    label_column_->setToolTip(tr("Column name (with a header row) or index; negative counts from the end"));
    csv_status_ = new QLabel;
    csv_status_->setObjectName("csvStatus");
    csv_status_->setWordWrap(true);
    auto* csv_page = new QWidget;
    auto* csv_form = new QFormLayout(csv_page);
    csv_form->setContentsMargins(0, 0, 0, 0);
    csv_form->addRow(tr("File"), csv_row);
    csv_form->addRow(tr("Label column"), label_column_);
    csv_form->addRow(csv_status_);
    for (QLineEdit* e : {csv_path_, label_column_})
        connect(e, &QLineEdit::editingFinished, this, [this] {
            loadCsvFile();
            onSettingChanged();
        });

    pages_ = new QStackedWidget;
    pages_->addWidget(syn_page);
    pages_->addWidget(idx_page);
    pages_->addWidget(csv_page);

    // --- shared settings ---
    test_ratio_ = new QDoubleSpinBox;
    test_ratio_->setObjectName("testRatioSpin");
    test_ratio_->setRange(0.01, 0.99);
    test_ratio_->setSingleStep(0.05);
    test_ratio_->setValue(0.2);
    seed_ = new QSpinBox;
    seed_->setObjectName("seedSpin");
    seed_->setRange(0, 2147483647);
    seed_->setValue(1);
    normalize_ = new QCheckBox(tr("Normalise features (mean/std of the train split)"));
    normalize_->setObjectName("normalizeCheck");
    normalize_->setChecked(true);
    auto* shared = new QFormLayout;
    test_ratio_label_ = new QLabel(tr("Test fraction"));
    shared->addRow(test_ratio_label_, test_ratio_);
    shared->addRow(tr("Data seed"), seed_);
    shared->addRow(normalize_);

    error_label_ = new QLabel;
    error_label_->setObjectName("errorLabel");
    error_label_->setWordWrap(true);
    error_label_->setStyleSheet("color: #b00000;");
    error_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error_label_->hide();

    auto* top = new QVBoxLayout(this);
    auto* src_row = new QFormLayout;
    src_row->addRow(tr("Source"), source_);
    top->addLayout(src_row);
    top->addWidget(pages_, 1);
    top->addLayout(shared);
    top->addWidget(error_label_);

    connect(source_, &QComboBox::currentIndexChanged, this, &DatasetPanel::onSourceChanged);
    connect(samples_, &QSpinBox::valueChanged, this, &DatasetPanel::onSettingChanged);
    connect(noise_, &QDoubleSpinBox::valueChanged, this, &DatasetPanel::onSettingChanged);
    connect(classes_, &QSpinBox::valueChanged, this, &DatasetPanel::onSettingChanged);
    connect(test_ratio_, &QDoubleSpinBox::valueChanged, this, &DatasetPanel::onSettingChanged);
    connect(seed_, &QSpinBox::valueChanged, this, &DatasetPanel::onSettingChanged);
    connect(normalize_, &QCheckBox::toggled, this, &DatasetPanel::onSettingChanged);

    onSourceChanged();
}

DatasetSpec DatasetPanel::datasetSpec() const {
    DatasetSpec s;
    s.kind = source_->currentData().toString().toStdString();
    const int page = pages_->currentIndex();
    if (page == 1) s.path = folder_->text().trimmed().toStdString();
    if (page == 2) {
        s.path = csv_path_->text().trimmed().toStdString();
        s.label_column = label_column_->text().trimmed().toStdString();
    }
    s.samples = samples_->value();
    s.noise = float(noise_->value());
    s.test_ratio = test_ratio_->value();
    s.classes = page == 0 ? (s.kind == "spiral" ? classes_->value() : 2) : (page == 1 ? 10 : csv_classes_);
    s.seed = uint64_t(seed_->value());
    s.normalize = normalize_->isChecked();
    return s;
}

void DatasetPanel::setDatasetSpec(const DatasetSpec& spec) {
    updating_ = true;
    int index = source_->findData(QString::fromStdString(spec.kind));
    if (index < 0) index = 0;
    if (spec.kind == "fashion-mnist" || spec.kind == "mnist")
        folder_->setText(spec.path.empty() ? QString::fromLatin1(kDebianFashionMnistDir) : QString::fromStdString(spec.path));
    if (spec.kind == "csv") {
        csv_path_->setText(QString::fromStdString(spec.path));
        label_column_->setText(QString::fromStdString(spec.label_column));
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
    case 0: return {2};
    case 1: return idx_shape_;
    default: return csv_shape_;
    }
}

int DatasetPanel::classCount() const {
    switch (pages_->currentIndex()) {
    case 0: return source_->currentData().toString() == "spiral" ? classes_->value() : 2;
    case 1: return error_.isEmpty() ? 10 : 0;
    default: return csv_classes_;
    }
}

void DatasetPanel::onSourceChanged() {
    const int page = kSources[std::max(0, source_->currentIndex())].page;
    pages_->setCurrentIndex(page);
    classes_->setEnabled(source_->currentData().toString() == "spiral");
    // IDX sets come with their own test split.
    test_ratio_->setVisible(page != 1);
    test_ratio_label_->setVisible(page != 1);
    if (page == 0) regeneratePreview();
    if (page == 1) loadIdxFolder();
    if (page == 2) loadCsvFile();
    if (!updating_) emit datasetChanged();
}

void DatasetPanel::onSettingChanged() {
    if (pages_->currentIndex() == 0) regeneratePreview();
    if (pages_->currentIndex() == 2 && sender() == test_ratio_) loadCsvFile();
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
                g->setScatterStyle(split == 0 ? circle_marker(QPen(col), col, marker, plot_->devicePixelRatioF())
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
        setError(tr("%1 lacks %2 (raw or .gz). For Fashion-MNIST on Debian: apt install dataset-fashion-mnist.")
                     .arg(folder, missing.join(", ")));
        idx_status_->setText({});
        return;
    }
    try {
        const IdxImages images = read_idx_images(idx_file(folder, "t10k-images-idx3-ubyte").toStdString());
        const std::vector<uint8_t> labels = read_idx_labels(idx_file(folder, "t10k-labels-idx1-ubyte").toStdString());
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
        idx_status_->setText(tr("Test split: %1 images of %2 × %3 pixels, 10 classes. Hover a thumbnail for its label.")
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
        csv_status_->setText(tr("%1 rows (%2 train, %3 test), %4 features, %5")
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

void DatasetPanel::browseFolder() {
    const QString dir = QFileDialog::getExistingDirectory(this, tr("IDX dataset folder"), folder_->text());
    if (dir.isEmpty()) return;
    folder_->setText(dir);
    loadIdxFolder();
    onSettingChanged();
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
