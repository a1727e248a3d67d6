// DatasetPanel: chooses the data a run trains on. Synthetic 2-D sets (spiral, circles, xor,
// gauss, moons) with a live scatter preview, Fashion-MNIST / MNIST from a folder with a grid of
// test-split thumbnails, a CSV table with a label column, or an image folder (one sub-folder of
// PNG/JPEG files per class) with the classes and counts it holds, or text (a file, or the
// built-in fortunes corpus) with its size, vocabulary and a sample. It reports the DatasetSpec the
// trainer loads and the per-sample shape the network editor infers from; a folder or file that
// does not load is explained inside the panel, never by a crash.
#pragma once
#include <QString>
#include <QWidget>

#include "core/tensor/shape.h"
#include "core/train/train_config.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QGridLayout;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;
class QCustomPlot;

namespace mpwb {

struct TextCorpus;

class DatasetPanel : public QWidget {
    Q_OBJECT
public:
    explicit DatasetPanel(QWidget* parent = nullptr);

    DatasetSpec datasetSpec() const;
    void setDatasetSpec(const DatasetSpec& spec);
    // {2} for the synthetic sets, {1, rows, cols} for IDX images, {features} for CSV,
    // {channels, height, width} for an image folder, {context} for text.
    Shape sampleShape() const;
    // Classes of the current source (0 when unknown, e.g. a CSV that did not load).
    int classCount() const;
    // Empty when the current source loads; else the message shown in the panel.
    QString errorText() const { return error_; }
    bool isValid() const { return error_.isEmpty(); }
    // Points drawn in the synthetic preview (train + test).
    int previewPointCount() const { return preview_points_; }
    // Thumbnails shown for an IDX folder.
    int thumbnailCount() const { return thumbnails_; }

signals:
    void datasetChanged();

private:
    // The constructor's parts, one per page of the source's stack and one for the shared settings.
    void buildSyntheticPage();
    void buildIdxPage();
    void buildCsvPage();
    void buildImageFolderPage();
    void buildTextPage();
    QFormLayout* buildSharedSettings();
    // A setting whose every change goes through onSettingChanged.
    template <class Spin>
    Spin* watched(Spin* setting);
    // A path field with its "Browse…" button.
    QHBoxLayout* pathRow(QLineEdit* edit, const char* button_name, void (DatasetPanel::*browse)());
    // The classes the chosen source has: fixed by the kind, the Classes box, or the CSV file.
    int sourceClasses() const;
    void onSourceChanged();
    void onSettingChanged();
    void regeneratePreview();
    void loadIdxFolder();
    void loadCsvFile();
    void loadImageFolder();
    void loadTextCorpus();
    void showTextCorpus(const TextCorpus& corpus);
    void setError(const QString& message);
    void browseFolder();
    void browseCsv();
    void browseImageFolder();
    void browseText();
    // Lets the user pick a folder for edit; a chosen one is loaded with `load`.
    void browseFolderFor(QLineEdit* edit, const QString& title, void (DatasetPanel::*load)());

    bool updating_ = false;  // setDatasetSpec in progress: one datasetChanged at the end
    QString error_;
    int preview_points_ = 0;
    int thumbnails_ = 0;
    Shape idx_shape_{1, 28, 28};
    Shape csv_shape_;
    int csv_classes_ = 0;
    int image_classes_ = 0;
    int text_classes_ = 0;

    QComboBox* source_ = nullptr;
    QStackedWidget* pages_ = nullptr;
    // synthetic
    QSpinBox* samples_ = nullptr;
    QDoubleSpinBox* noise_ = nullptr;
    QSpinBox* classes_ = nullptr;
    QCustomPlot* plot_ = nullptr;
    // IDX
    QLineEdit* folder_ = nullptr;
    QLabel* idx_status_ = nullptr;
    QWidget* thumb_host_ = nullptr;
    QGridLayout* thumb_grid_ = nullptr;
    // CSV
    QLineEdit* csv_path_ = nullptr;
    QLineEdit* label_column_ = nullptr;
    QLabel* csv_status_ = nullptr;
    // image folder
    QLineEdit* image_folder_ = nullptr;
    QSpinBox* image_height_ = nullptr;
    QSpinBox* image_width_ = nullptr;
    QComboBox* channels_ = nullptr;
    QComboBox* size_mismatch_ = nullptr;
    QLabel* image_status_ = nullptr;
    // text
    QLineEdit* text_path_ = nullptr;
    QComboBox* tokenizer_ = nullptr;
    QSpinBox* context_ = nullptr;
    QLabel* text_status_ = nullptr;
    QLabel* text_sample_ = nullptr;
    // shared
    QDoubleSpinBox* test_ratio_ = nullptr;
    QLabel* test_ratio_label_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QLabel* seed_label_ = nullptr;
    QCheckBox* normalize_ = nullptr;
    QLabel* error_label_ = nullptr;
};

}  // namespace mpwb
