// DatasetPanel's per-source behaviour, which the panel builds from its table of sources and
// settings: each source's page, classes and test-split field, each setting's range and default,
// and the spec a fresh panel reports; the image-folder page's settings, classes and errors. The
// round trip, the preview and the IDX folder checks are in test_widgets.
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>

#include "core/data/idx_reader.h"
#include "tests/data/image_folder_fixture.h"
#include "widgets/dataset_panel.h"
#include "widget_test_support.h"

using namespace mpwb;

namespace {

void choose(DatasetPanel& p, const QString& kind) {
    auto* source = child<QComboBox>(&p, "sourceCombo");
    const int index = source->findData(kind);
    QVERIFY2(index >= 0, qPrintable(kind));
    source->setCurrentIndex(index);
}

}  // namespace

class TestDatasetPanel : public QObject {
    Q_OBJECT

private slots:
    void freshPanelReportsTheDefaults() {
        DatasetPanel p;
        const DatasetSpec s = p.datasetSpec();
        QCOMPARE(s.kind, std::string("spiral"));
        QCOMPARE(s.samples, int64_t(1000));
        QCOMPARE(s.noise, 0.0f);
        QCOMPARE(s.test_ratio, 0.2);
        QCOMPARE(s.seed, uint64_t(1));
        QCOMPARE(s.normalize, true);
        QCOMPARE(s.classes, 2);
        QCOMPARE(p.sampleShape(), (Shape{2}));
        QVERIFY(p.isValid());
    }

    void settingsHaveTheirRanges() {
        DatasetPanel p;
        auto* samples = child<QSpinBox>(&p, "samplesSpin");
        QCOMPARE(samples->minimum(), 20);
        QCOMPARE(samples->maximum(), 1000000);
        QCOMPARE(samples->singleStep(), 100);
        auto* noise = child<QDoubleSpinBox>(&p, "noiseSpin");
        QCOMPARE(noise->minimum(), 0.0);
        QCOMPARE(noise->maximum(), 1.0);
        QCOMPARE(noise->singleStep(), 0.05);
        QCOMPARE(noise->decimals(), 2);
        auto* classes = child<QSpinBox>(&p, "classesSpin");
        QCOMPARE(classes->minimum(), 2);
        QCOMPARE(classes->maximum(), 8);
        auto* ratio = child<QDoubleSpinBox>(&p, "testRatioSpin");
        QCOMPARE(ratio->minimum(), 0.01);
        QCOMPARE(ratio->maximum(), 0.99);
        QCOMPARE(ratio->singleStep(), 0.05);
        auto* seed = child<QSpinBox>(&p, "seedSpin");
        QCOMPARE(seed->minimum(), 0);
        QCOMPARE(seed->maximum(), 2147483647);
        QVERIFY(child<QCheckBox>(&p, "normalizeCheck")->isChecked());
        QCOMPARE(child<QLineEdit>(&p, "folderEdit")->text(), QString::fromLatin1(kDebianFashionMnistDir));
        child<QPushButton>(&p, "browseFolderButton");
        child<QPushButton>(&p, "browseCsvButton");
    }

    // The sources in the combo's order, and what each one shows and reports.
    void eachSourceHasItsPageAndClasses() {
        DatasetPanel p;
        p.show();
        auto* source = child<QComboBox>(&p, "sourceCombo");
        QStringList kinds;
        for (int i = 0; i < source->count(); ++i) kinds << source->itemData(i).toString();
        QCOMPARE(kinds, QStringList({"spiral", "circles", "xor", "gauss", "moons", "fashion-mnist", "mnist",
                                     "csv", "image-folder", "text", "fortunes"}));
        auto* classes = child<QSpinBox>(&p, "classesSpin");
        auto* ratio = child<QDoubleSpinBox>(&p, "testRatioSpin");
        auto* folder = child<QLineEdit>(&p, "folderEdit");
        auto* csv = child<QLineEdit>(&p, "csvEdit");
        classes->setValue(5);
        for (const QString& kind : kinds) {
            choose(p, kind);
            const bool idx = kind == "fashion-mnist" || kind == "mnist";
            QCOMPARE(p.datasetSpec().kind, kind.toStdString());
            QCOMPARE(classes->isEnabled(), kind == "spiral");
            QCOMPARE(ratio->isVisible(), !idx);
            QCOMPARE(folder->isVisible(), idx);
            QCOMPARE(csv->isVisible(), kind == "csv");
            const bool text = kind == "text" || kind == "fortunes";
            QCOMPARE(child<QLineEdit>(&p, "textPathEdit")->isVisible(), text);
            QCOMPARE(child<QCheckBox>(&p, "normalizeCheck")->isVisible(), !text);
            const bool from_file = kind == "csv" || kind == "image-folder" || kind == "text";
            // The fortunes corpus has its characters when Debian's package is installed.
            const int expected = kind == "spiral"     ? 5
                                 : idx                ? (p.isValid() ? 10 : 0)
                                 : kind == "fortunes" ? (p.isValid() ? p.classCount() : 0)
                                 : from_file          ? 0
                                                      : 2;
            QCOMPARE(p.classCount(), expected);
            if (!idx) QCOMPARE(p.datasetSpec().classes, expected);
            if (kind == "image-folder")
                QCOMPARE(p.errorText(),
                         QString("Choose an image folder: one sub-folder of PNG or JPEG images per class."));
            if (kind == "text") QCOMPARE(p.errorText(), QString("Choose a text file."));
        }
    }

    // A text file shows its size, its vocabulary and the start of its text; the tokenizer, the
    // context and the test fraction make the spec, the classes and the sample shape; a file that
    // cannot be read as asked is explained.
    void textPageShowsSizeVocabularyAndSample() {
        QTemporaryDir dir;
        const QString path = dir.filePath("story.txt");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        for (int i = 0; i < 40; ++i) f.write("Once upon a time, a fox met a crow.\n");
        f.close();
        DatasetPanel p;
        DatasetSpec s;
        s.kind = "text";
        s.path = path.toStdString();
        s.context = 16;
        s.test_ratio = 0.1;
        QSignalSpy changed(&p, &DatasetPanel::datasetChanged);
        p.setDatasetSpec(s);
        QCOMPARE(changed.count(), 1);
        QVERIFY2(p.isValid(), qPrintable(p.errorText()));
        QCOMPARE(p.classCount(), 19);  // "\n ,.Oacefimnoprtuwx"
        QCOMPARE(p.sampleShape(), (Shape{16}));
        const QString status = child<QLabel>(&p, "textStatus")->text();
        QVERIFY2(status.contains("1,440 bytes") && status.contains("vocabulary of 19 tokens"),
                 qPrintable(status));
        QVERIFY(
            child<QLabel>(&p, "textSample")->text().startsWith("Once upon a time, a fox met a crow.\nOnce"));
        const DatasetSpec back = p.datasetSpec();
        QCOMPARE(back.kind, std::string("text"));
        QCOMPARE(back.path, path.toStdString());
        QCOMPARE(back.tokenizer, std::string("char"));
        QCOMPARE(back.context, int64_t{16});

        auto* tokenizer = child<QComboBox>(&p, "tokenizerCombo");
        tokenizer->setCurrentIndex(tokenizer->findData(QStringLiteral("byte")));
        QCOMPARE(p.classCount(), 256);
        QCOMPARE(p.datasetSpec().tokenizer, std::string("byte"));
        child<QSpinBox>(&p, "contextSpin")->setValue(2000);
        QCOMPARE(p.sampleShape(), (Shape{2000}));
        QVERIFY2(p.errorText().contains("shorter than context + 1"), qPrintable(p.errorText()));
        QCOMPARE(p.classCount(), 0);
        child<QSpinBox>(&p, "contextSpin")->setValue(32);
        QVERIFY2(p.isValid(), qPrintable(p.errorText()));

        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(100, 'a') + "caf\xe9" + QByteArray(100, 'b'));
        f.close();
        tokenizer->setCurrentIndex(tokenizer->findData(QStringLiteral("char")));
        QVERIFY2(p.errorText().contains("offset 103"), qPrintable(p.errorText()));
    }

    // A CSV source has the classes and features its file holds.
    void csvClassesComeFromTheFile() {
        QTemporaryDir dir;
        const QString path = dir.filePath("three.csv");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("a,b,c,label\n");
        for (int i = 0; i < 30; ++i)
            f.write(QByteArray::number(i) + ",1,2," + QByteArray::number(i % 3) + "\n");
        f.close();
        DatasetPanel p;
        DatasetSpec s;
        s.kind = "csv";
        s.path = path.toStdString();
        p.setDatasetSpec(s);
        QVERIFY2(p.isValid(), qPrintable(p.errorText()));
        QCOMPARE(p.classCount(), 3);
        QCOMPARE(p.datasetSpec().classes, 3);
        QCOMPARE(p.sampleShape(), (Shape{3}));
        QCOMPARE(p.datasetSpec().path, path.toStdString());
    }

    // An image folder's classes and counts are shown once it is chosen; its settings make the
    // spec and the sample shape; a folder that does not qualify is explained.
    void imageFolderShowsClassesAndSettings() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        QVERIFY(test::write_image_folder(root, {}));
        DatasetPanel p;
        DatasetSpec s = test::image_folder_dataset(root, 12, 3);
        s.image_width = 16;
        s.size_mismatch = "error";
        s.test_ratio = 0.3;
        p.setDatasetSpec(s);
        QVERIFY2(p.isValid(), qPrintable(p.errorText()));
        QCOMPARE(p.classCount(), 3);
        QCOMPARE(p.sampleShape(), (Shape{3, 12, 16}));
        const QString status = child<QLabel>(&p, "imageFolderStatus")->text();
        QVERIFY2(status.contains("3 classes, 18 images") && status.contains("b_columns 6"),
                 qPrintable(status));
        const DatasetSpec back = p.datasetSpec();
        QCOMPARE(back.path, root);
        QCOMPARE(back.image_height, 12);
        QCOMPARE(back.image_width, 16);
        QCOMPARE(back.channels, 3);
        QCOMPARE(back.size_mismatch, std::string("error"));
        QCOMPARE(back.test_ratio, 0.3);
        QCOMPARE(back.classes, 3);

        QSignalSpy changed(&p, &DatasetPanel::datasetChanged);
        auto* channels = child<QComboBox>(&p, "channelsCombo");
        channels->setCurrentIndex(channels->findData(1));
        QCOMPARE(changed.count(), 1);
        QCOMPARE(p.sampleShape(), (Shape{1, 12, 16}));
        child<QSpinBox>(&p, "imageHeightSpin")->setValue(20);
        QCOMPARE(p.datasetSpec().image_height, 20);

        auto* folder = child<QLineEdit>(&p, "imageFolderEdit");
        folder->setText(QString::fromStdString(root + "/a_rows"));  // one folder of images, no classes
        QMetaObject::invokeMethod(folder, "editingFinished");
        QVERIFY(!p.isValid());
        QVERIFY2(p.errorText().contains("0 class folders"), qPrintable(p.errorText()));
        QCOMPARE(p.classCount(), 0);
        child<QPushButton>(&p, "browseImageFolderButton");
    }
};

QTEST_MAIN(TestDatasetPanel)
#include "test_dataset_panel.moc"
