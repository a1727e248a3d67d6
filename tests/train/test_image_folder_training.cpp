// An image folder made here (tests/data/image_folder_fixture.h: three classes told apart only by
// the arrangement of their bright pixels, not by brightness) loads through load_dataset and
// trains through the Trainer for a bounded number of steps: an MLP on 10x10 grayscale images and
// a small conv net on RGB images of mixed sizes resized to 12x12 must both reach a test accuracy
// far above chance (1/3).
#include "core/backend/backend.h"
#include "core/train/dataset_source.h"
#include "core/train/trainer.h"

#include <QTemporaryDir>
#include <QtTest/QtTest>

#include "tests/data/image_folder_fixture.h"

using namespace mpwb;

namespace {

DatasetSpec image_folder_spec(const std::string& root, int size, int channels) {
    DatasetSpec spec = test::image_folder_dataset(root, size, channels);
    spec.test_ratio = 0.3;
    spec.seed = 3;
    return spec;
}

RunSummary train(const nlohmann::json& network, const DatasetSpec& spec) {
    TrainConfig config;
    config.dataset = spec;
    config.epochs = 1000;
    config.max_steps = 150;  // bounded work: the result never depends on the machine's speed
    config.batch_size = 16;
    config.lr = 0.01f;
    config.threads = 1;
    const Dataset data = load_dataset(spec);
    Network net = Network::from_json(network);
    auto backend = make_cpu_backend();
    Trainer trainer(net, data, config, *backend);
    return trainer.run();
}

void verify_far_above_chance(const RunSummary& s) {
    qInfo("%lld steps, test accuracy %.3f", static_cast<long long>(s.steps), s.test_accuracy);
    QCOMPARE(s.steps, int64_t{150});
    QVERIFY2(s.test_accuracy >= 0.9,
             qPrintable(QString("test accuracy %1, chance is 0.33").arg(s.test_accuracy)));
}

}  // namespace

class TestImageFolderTraining : public QObject {
    Q_OBJECT

private slots:
    void mlpLearnsGrayscaleImages() {
        QTemporaryDir dir;
        test::ImageFolderSpec folder;
        folder.per_class = 30;
        QVERIFY(test::write_image_folder(dir.path().toStdString(), folder));
        const nlohmann::json mlp = {{"name", "image-mlp"},
                                    {"loss", "cross_entropy"},
                                    {"layers",
                                     {{{"type", "Flatten"}},
                                      {{"type", "Linear"}, {"out", 32}},
                                      {{"type", "ReLU"}},
                                      {{"type", "Linear"}, {"out", 3}}}}};
        verify_far_above_chance(train(mlp, image_folder_spec(dir.path().toStdString(), 10, 1)));
    }

    void convNetLearnsResizedRgbImages() {
        QTemporaryDir dir;
        const std::string root = dir.path().toStdString();
        test::ImageFolderSpec folder;
        folder.per_class = 20;
        folder.channels = 3;
        folder.height = folder.width = 12;
        QVERIFY(test::write_image_folder(root + "/small", folder));
        folder.height = folder.width = 24;  // the same patterns at twice the size
        QVERIFY(test::write_image_folder(root + "/large", folder));
        // One folder of both sizes: the large images are resized to 12x12.
        for (const auto& cls : folder.classes)
            for (int i = 0; i < folder.per_class; ++i)
                for (const char* ext : {".png", ".jpg"}) {
                    const std::string name = std::to_string(i) + ext;
                    if (QFile::exists(QString::fromStdString(root + "/large/" + cls + "/" + name)))
                        QVERIFY(
                            QFile::rename(QString::fromStdString(root + "/large/" + cls + "/" + name),
                                          QString::fromStdString(root + "/small/" + cls + "/big_" + name)));
                }
        const nlohmann::json conv = {
            {"name", "image-conv"},
            {"loss", "cross_entropy"},
            {"layers",
             {{{"type", "Conv2d"}, {"out_channels", 8}, {"kernel", 3}, {"padding", 1}},
              {{"type", "ReLU"}},
              {{"type", "MaxPool2d"}, {"kernel", 2}},
              {{"type", "Flatten"}},
              {{"type", "Linear"}, {"out", 3}}}}};
        verify_far_above_chance(train(conv, image_folder_spec(root + "/small", 12, 3)));
    }
};

QTEST_GUILESS_MAIN(TestImageFolderTraining)
#include "test_image_folder_training.moc"
